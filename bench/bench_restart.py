"""Restart time of `linewatch ingest` after a power cut: kill -9 of the CLI's process group → first new
feature entry in Redis, and where that time goes (issue 13, item 5).

A gateway thread publishes one-frame thermal manifests (4 assets, ``--rate`` frames/s) all along.
Each iteration starts ``linewatch ingest`` (a real CLI process, checkpoints every second), waits
for a completed checkpoint, SIGKILLs the CLI's process group, waits until the old job and JVM
are gone (they follow their CLI: docs/supervision.md), starts the CLI again at once (no
RestartSec) and polls Redis every 5 ms for the first entry added after the kill. Phases come from
the ``PHASE <name> <unix time>`` lines of the new job's log (``pipeline.ingest_job``,
``pipeline.job``)::

    cli        CLI start → job process started (CLI imports, settings, locks, lease, temp cleanup)
    imports    job process → its imports done (pipeline.job and what it pulls in)
    jvm        → PyFlink gateway JVM up (StreamExecutionEnvironment)
    graph      → job graph built (FileSource, key_by, the Python function)
    submit     → submitted to the MiniCluster (execute_async)
    running    → job RUNNING (tasks deployed, checkpoint restored)
    worker     → operator open() (thread-mode Python worker: unpickling the function, imports)
    first      → first new entry in Redis (source scan, a manifest read, frame decoded, XADD)

    .venv/bin/python bench/bench_restart.py --iterations 3 --out /tmp/restart.json
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import numpy as np
import redis
import tifffile

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from linewatch.contract import StreamNames
from linewatch.redis_connection import RedisConnectionSettings, redis_client
from pipeline.landing import ManifestWriter

PROJECT = Path(__file__).resolve().parent.parent
REDIS_URL = "redis://127.0.0.1:6379/0"
PHASES = ("process", "imports", "jvm", "graph", "submitted", "running", "operator_open")
LABELS = ("cli", "imports", "jvm", "graph", "submit", "running", "worker", "first")


def frame(value: int) -> bytes:
    buf = io.BytesIO()
    frame = np.full((120, 160), 29315 + value % 500, np.uint16)
    frame[50:80, 60:110] += 1_500  # a machine 15 K over its hall: a frame of one value is refused (no_signal)
    tifffile.imwrite(buf, frame)
    return buf.getvalue()


def gateway(landing: Path, rate: float, stop: threading.Event) -> None:
    writer = ManifestWriter(landing, epoch=1)
    t0, n = time.monotonic(), 0
    while not stop.is_set():
        asset = f"R{n % 4}"
        writer.publish([writer.write_blob(f"thermal/frames/{asset}/{asset}-{n}.tiff", frame(n), asset,
                                          int(time.time() * 1000) - 2000)])
        n += 1
        stop.wait(max(0.0, t0 + n / rate - time.monotonic()))


def start_cli(landing: Path, data: Path, prefix: str, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "LINEWATCH_DATA_DIR": str(data), "LINEWATCH_REDIS__URL": REDIS_URL,
           "LINEWATCH_STREAMS__PREFIX": prefix, "LINEWATCH_STREAMS__SHARDS": "2",
           "LINEWATCH_FLINK__CHECKPOINT_INTERVAL_MS": "1000", "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([str(Path(sys.executable).parent / "linewatch"), "ingest", "--landing", str(landing)],
                            cwd=PROJECT, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT,
                            start_new_session=True)


def newest_entry_ms(client: redis.Redis, names: StreamNames) -> int:
    best = 0
    for shard in range(names.shards):
        last = client.xrevrange(names.features_shard("thermal", shard), count=1)
        if last:
            best = max(best, int(last[0][0].split(b"-")[0]))
    return best


def wait(condition, timeout_s: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.005)
    raise TimeoutError(what)


def phases(job_log: Path) -> dict[str, float]:
    out: dict[str, float] = {}
    for match in re.finditer(r"^PHASE (\w+) ([0-9.]+)$", job_log.read_text(errors="replace"), re.M):
        out.setdefault(match.group(1), float(match.group(2)))
    return out


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--rate", type=float, default=8.0, help="frames/s the gateway publishes")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="lw-bench-restart-"))
    landing, data = base / "landing", base / "data"
    (landing / "manifests").mkdir(parents=True)
    tags = [{"name": "motor_current_a", "unit": "A", "valid_min": 0, "valid_max": 500}]
    (landing / "assets.json").write_text(json.dumps(
        {"assets": [{"asset_id": f"R{i}", "asset_type": "pump", "regions": {}, "region_fit": False, "tags": tags} for i in range(4)]}))
    prefix = f"br{uuid.uuid4().hex[:8]}"
    names = StreamNames(prefix=prefix, shards=2)
    client = redis_client(RedisConnectionSettings(url=REDIS_URL))
    stop = threading.Event()
    thread = threading.Thread(target=gateway, args=(landing, args.rate, stop), daemon=True)
    thread.start()
    rows = []
    ok = False
    try:
        cli = start_cli(landing, data, prefix, base / "cli-0.log")
        for i in range(args.iterations + 1):
            wait(lambda: newest_entry_ms(client, names) > 0 and any(data.glob("flink/checkpoints/*/chk-*/_metadata")),
                 180, "entries and a checkpoint")
            time.sleep(2.0)  # let it run: a later checkpoint, steady state (not a race: nothing is asserted)
            if i == args.iterations:
                break
            job_pid = int(json.loads((landing / ".linewatch-ingest.lock").read_text())["job_pid"])
            t_kill = time.time()
            os.killpg(cli.pid, signal.SIGKILL)
            cli.wait()
            wait(lambda: not group_alive(job_pid), 60, "the old job to exit")
            t_gone = time.time()
            t_spawn = time.time()
            cli = start_cli(landing, data, prefix, base / f"cli-{i + 1}.log")
            wait(lambda: newest_entry_ms(client, names) > t_gone * 1000, 180, "the first new entry")
            t_first = newest_entry_ms(client, names) / 1000
            p = phases(data / "flink" / "run" / "ingest-job.log")
            stamps = [t_spawn] + [p[name] for name in PHASES] + [t_first]
            row = {"kill_to_gone_s": round(t_gone - t_kill, 3), "spawn_to_first_s": round(t_first - t_spawn, 3)}
            row.update({label: round(b - a, 3) for label, a, b in zip(LABELS, stamps[:-1], stamps[1:], strict=True)})
            rows.append(row)
            print(json.dumps(row), flush=True)
        ok = True
    finally:
        stop.set()
        if cli.poll() is None:
            cli.send_signal(signal.SIGTERM)
            cli.wait(timeout=90)
        for key in client.scan_iter(f"{prefix}:*", count=1000):
            client.delete(key)
        if ok:
            shutil.rmtree(base, ignore_errors=True)
        else:
            print(f"failed: logs kept in {base}", file=sys.stderr)
    summary = {k: round(statistics.median(r[k] for r in rows), 3) for k in rows[0]}
    print("median", json.dumps(summary))
    if args.out:
        args.out.write_text(json.dumps({"rows": rows, "median": summary}, indent=2))


if __name__ == "__main__":
    main()
