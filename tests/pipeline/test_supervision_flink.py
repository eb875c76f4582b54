"""Supervision of ``linewatch ingest`` with real processes (issue 13): the job dies with its CLI,
one ingest per landing zone, crash loops leave bounded temp files, the probe hash stays bounded.

One CLI start serves several assertions; times are polled, never slept.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from linewatch.contract import StreamNames
from pipeline.supervision.lifeline import child_pids
from pipeline.supervision.lock import LANDING_LOCK_NAME, read_holder
from pipeline.supervision.tempdirs import TempRoot, dir_bytes

pytestmark = [pytest.mark.flink, pytest.mark.slow]

PROJECT = Path(__file__).resolve().parents[2]
RUNNING = re.compile(r"^job [0-9a-f]{32} running", re.M)  # what the CLI prints once its job answered a probe
GONE_WITHIN_S = 30.0  # stated bound: job + JVM gone this long after the CLI is SIGKILLed


def cli_env(data: Path, prefix: str, redis_url: str, tmp: Path) -> dict[str, str]:
    tmp.mkdir(parents=True, exist_ok=True)
    return {**os.environ, "LINEWATCH_DATA_DIR": str(data), "LINEWATCH_REDIS__URL": redis_url,
            "LINEWATCH_STREAMS__PREFIX": prefix, "LINEWATCH_STREAMS__SHARDS": "2",
            "LINEWATCH_FLINK__CHECKPOINT_INTERVAL_MS": "1000", "PYTHONUNBUFFERED": "1", "TMPDIR": str(tmp)}


def start_cli(landing: Path, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([str(Path(sys.executable).parent / "linewatch"), "ingest", "--landing", str(landing)],
                            cwd=PROJECT, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT,
                            start_new_session=True)


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def poll(condition, timeout_s: float, what: str, log: Path | None = None) -> float:  # type: ignore[no-untyped-def]
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        if condition():
            return time.monotonic() - t0
        time.sleep(0.05)
    tail = log.read_text(errors="replace")[-3000:] if log is not None and log.exists() else ""
    pytest.fail(f"timed out after {timeout_s}s waiting for {what}\n{tail}")


def wait_running(cli: subprocess.Popen[bytes], landing: Path, log: Path) -> tuple[int, int]:
    """Wait until the CLI's job runs; returns (job pid, JVM pid)."""
    poll(lambda: cli.poll() is not None or RUNNING.search(log.read_text(errors="replace")) is not None, 150,
         "the job", log)
    assert cli.poll() is None, log.read_text()[-3000:]
    holder = read_holder(landing / LANDING_LOCK_NAME)
    assert holder is not None and holder.pid == cli.pid and holder.job_pid, holder
    jvms = child_pids(holder.job_pid)
    assert len(jvms) == 1, f"the job process should have exactly its JVM as child, has {jvms}"
    return holder.job_pid, jvms[0]


def test_job_dies_with_its_cli_and_a_second_ingest_is_refused(
    tmp_path: Path, prefix: str, redis_url: str, ingest_redis: redis.Redis
) -> None:
    landing, data = tmp_path / "landing", tmp_path / "data"
    landing.mkdir()
    env = cli_env(data, prefix, redis_url, tmp_path / "systmp")
    log = tmp_path / "cli.log"
    cli = start_cli(landing, env, log)
    try:
        job_pid, jvm_pid = wait_running(cli, landing, log)
        # the readiness probe's token is gone again: the probe hash does not grow per start
        assert ingest_redis.hlen(StreamNames(prefix).ingest_probe()) == 0
        assert ingest_redis.hget(StreamNames(prefix).ingest_health(), "probe_ok_ms")
        lease = [k for k in ingest_redis.scan_iter(StreamNames(prefix).ingest_lease("*"))]
        assert len(lease) == 1 and str(cli.pid).encode() in (ingest_redis.get(lease[0]) or b"")
        with open(f"/proc/{jvm_pid}/cmdline", "rb") as handle:
            assert f"-Djava.io.tmpdir={data / 'flink' / 'tmp'}".encode() in handle.read(), "JVM temp outside data dir"

        # a second ingest on the same landing zone (own data dir): refused, naming the holder
        second = subprocess.run([str(Path(sys.executable).parent / "linewatch"), "ingest", "--landing", str(landing)],
                                cwd=PROJECT, env={**env, "LINEWATCH_DATA_DIR": str(tmp_path / "data2")},
                                capture_output=True, text=True, timeout=120)
        assert second.returncode == 3, second.stdout[-2000:] + second.stderr[-2000:]
        assert f"PID {cli.pid}" in second.stdout and "already being ingested" in second.stdout, second.stdout
        health = subprocess.run([str(Path(sys.executable).parent / "linewatch"), "ingest", "--landing", str(landing),
                                 "--health"], cwd=PROJECT, env=env, capture_output=True, text=True, timeout=60)
        assert health.returncode == 0, health.stdout + health.stderr

        os.kill(cli.pid, signal.SIGKILL)  # the CLI alone
        cli.wait()
        took = poll(lambda: not alive(job_pid) and not alive(jvm_pid), GONE_WITHIN_S, "job and JVM to exit", log)
        print(f"job + JVM gone {took:.1f}s after kill -9 of the CLI")
    finally:
        if cli.poll() is None:
            os.killpg(cli.pid, signal.SIGKILL)
    health = subprocess.run([str(Path(sys.executable).parent / "linewatch"), "ingest", "--landing", str(landing),
                             "--health"], cwd=PROJECT, env=env, capture_output=True, text=True, timeout=60)
    assert health.returncode == 1 and "unhealthy" in health.stdout, health.stdout


def test_crash_restart_cycles_keep_temp_bounded(
    tmp_path: Path, prefix: str, redis_url: str, ingest_redis: redis.Redis
) -> None:
    """kill -9 of the CLI's whole process group and an immediate restart, 3 times: the old job and JVM
    are gone every time, the restart waits for them instead of being refused, stale temp dirs are
    removed at start, nothing lands in TMPDIR, and a clean stop at the end removes its own temp dir."""
    landing, data = tmp_path / "landing", tmp_path / "data"
    landing.mkdir()
    systmp = tmp_path / "systmp"
    env = cli_env(data, prefix + "c", redis_url, systmp)
    root = TempRoot(data / "flink" / "tmp")
    usage = []
    gone_s: list[float] = []
    cli = start_cli(landing, env, tmp_path / "cli-0.log")
    try:
        for cycle in range(3):
            log = tmp_path / f"cli-{cycle}.log"
            job_pid, jvm_pid = wait_running(cli, landing, log)
            usage.append(root.usage())
            os.killpg(cli.pid, signal.SIGKILL)  # the CLI's process group, as in issue 13
            cli.wait()
            # restart at once, while the old job may still be cancelling: the start waits for it, never refuses
            cli = start_cli(landing, env, tmp_path / f"cli-{cycle + 1}.log")
            gone_s.append(poll(lambda: not alive(job_pid) and not alive(jvm_pid), GONE_WITHIN_S,
                               "job and JVM to exit", log))
        wait_running(cli, landing, tmp_path / "cli-3.log")
    except BaseException:  # stop the CLI in hand without hiding why the test failed
        if cli.poll() is None:
            os.killpg(cli.pid, signal.SIGKILL)
            cli.wait()
        raise
    cli.send_signal(signal.SIGTERM)
    code = cli.wait(timeout=90)
    assert code == 0, f"exit {code} on SIGTERM:\n{(tmp_path / 'cli-3.log').read_text(errors='replace')[-3000:]}"
    runs, used = root.usage()
    print(f"temp after {len(usage)} crash cycles: {runs} run dirs, {used / 1e6:.1f} MB; during runs {usage}; "
          f"job + JVM gone {', '.join(f'{s:.1f}' for s in gone_s)} s after each kill -9")
    assert all(n <= 1 for n, _ in usage), f"stale run temp dirs were not removed at start: {usage}"
    assert runs == 0 and used == 0, f"a clean stop must remove its temp dir: {runs} dirs, {used} bytes"
    assert dir_bytes(systmp) == 0, f"files left in TMPDIR: {list(systmp.rglob('*'))}"
