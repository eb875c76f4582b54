"""Start and stop the ingestion job: embedded MiniCluster (a child process) or a Flink cluster.

The CLI and the demo use::

    job = IngestJob.from_settings(settings, redis_url)   # the settings flow down as they are (JobSpec)
    job.start()            # returns once the job runs (resumes from the last checkpoint)
    job.stats()            # counters + latency the job publishes in Redis
    job.stop()             # cancel; the last checkpoint is kept

or, blocking until ``stop_event`` is set::

    run_ingest(settings, stop_event)

The job runs in a child Python process (``python -m pipeline.ingest_job``) so that its JVM,
its py4j gateway and its threads never share a process with the caller; a stop is a clean
cancel, a crash of the job is a crash of the child only.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, cast

import redis

from linewatch.contract import StreamNames
from linewatch.redis_connection import redis_client
from linewatch.settings import Settings
from pipeline.job_spec import JobSpec
from pipeline.supervision.guard import IngestBusy, LandingGuard
from pipeline.supervision.lifeline import open_lifeline
from pipeline.supervision.tempdirs import RunTempDir, TempRoot

log = logging.getLogger(__name__)

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SCAN_FAILURE = b"Failed to enumerate files"


class IngestJobError(RuntimeError):
    """The job did not start or died; the message carries the tail of its log."""


def latest_checkpoint(checkpoint_dir: Path) -> Path | None:
    """Newest completed checkpoint (``<dir>/<job id>/chk-N`` with ``_metadata``), or None.

    >>> latest_checkpoint(Path("/nonexistent")) is None
    True
    """
    if not checkpoint_dir.is_dir():
        return None
    best: tuple[float, Path] | None = None
    for job_dir in checkpoint_dir.iterdir():
        if not job_dir.is_dir():
            continue
        for chk in job_dir.glob("chk-*"):
            try:  # Flink deletes checkpoints beyond num-retained while we look
                mtime = (chk / "_metadata").stat().st_mtime
            except FileNotFoundError:
                continue
            if best is None or mtime > best[0]:
                best = (mtime, chk)
    return best[1] if best else None


def prune_checkpoints(checkpoint_dir: Path, current_job_id: str) -> list[Path]:
    """Delete the retained checkpoints of earlier jobs once the current job has completed one.

    Every start (and rollover) is a new Flink job with its own ``<dir>/<job id>/``, and retained
    checkpoints of cancelled jobs are never removed by Flink; a restore only ever uses the newest.
    Nothing is deleted until the newest completed checkpoint is the current job's, so a crash
    before the new job's first checkpoint still finds the old one. Returns what was removed.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     for job, n in (("old", 7), ("new", 8)):
    ...         (Path(d) / job / f"chk-{n}").mkdir(parents=True)
    ...     prune_checkpoints(Path(d), "new")  # the new job has no completed checkpoint yet
    ...     _ = (Path(d) / "new" / "chk-8" / "_metadata").write_bytes(b"m")
    ...     [p.name for p in prune_checkpoints(Path(d), "new")]
    []
    ['old']
    """
    newest = latest_checkpoint(checkpoint_dir)
    if newest is None or newest.parent.name != current_job_id:
        return []
    removed = []
    for job_dir in checkpoint_dir.iterdir():
        if job_dir.is_dir() and job_dir.name != current_job_id:
            shutil.rmtree(job_dir, ignore_errors=True)
            removed.append(job_dir)
    return removed


def job_jvm_args(heap: str, tmp_args: list[str], log_dir: Path) -> str:
    """``JVM_ARGS`` of the job's JVM: its heap, this run's temp dir, and its fatal-error log
    (``hs_err_pid<pid>.log``, written if the JVM itself crashes) beside Flink's log instead of the
    process's working directory, the project root.

    >>> job_jvm_args("1g", ["-Djava.io.tmpdir=/t"], Path("/run/log"))
    '-Xmx1g -Djava.io.tmpdir=/t -XX:ErrorFile=/run/log/hs_err_pid%p.log'
    """
    return " ".join([f"-Xmx{heap}", *tmp_args, f"-XX:ErrorFile={log_dir / 'hs_err_pid%p.log'}"])


class IngestJob:
    """The ingestion job in an embedded MiniCluster, run by a child process."""

    def __init__(self, spec: JobSpec, work_dir: Path | None = None, python: str | None = None,
                 guard: LandingGuard | None = None, stop_grace_s: float = 30.0) -> None:
        self.spec = spec
        self.python = python or sys.executable
        self.work_dir = Path(work_dir) if work_dir else Path(tempfile.mkdtemp(prefix="lw-ingest-"))
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.process: subprocess.Popen[bytes] | None = None
        self.job_id: str | None = None
        self.log_path = self.work_dir / "ingest-job.log"
        self.flink_log_dir = self.work_dir / "log"  # Flink's own log (FLINK_LOG_DIR), one file per run
        self.tmp_root = TempRoot(self.work_dir.parent / "tmp")
        self.run_tmp: RunTempDir | None = None
        self.guard = guard  # given by IngestSupervisor (held across rollovers); else taken per start
        self._own_guard = False
        self._lifeline: int | None = None  # write end of the liveness pipe (never written)
        self.stop_grace_s = stop_grace_s
        self._scan_log_offset = 0
        self._scan_failures = 0

    @classmethod
    def from_settings(cls, settings: Settings, redis_url: str, resume: bool = True) -> IngestJob:
        """Job for linewatch ``Settings``; ``resume`` restores the newest checkpoint if any."""
        checkpoints = settings.flink.resolved_checkpoint_dir(settings.data_dir)
        spec = JobSpec.from_settings(settings, redis_url, latest_checkpoint(checkpoints) if resume else None)
        return cls(spec, work_dir=Path(settings.data_dir) / "flink" / "run")

    def acquire_guard(self) -> LandingGuard:
        """Lock the landing zone and the run dir, take the Redis lease (raises ``IngestBusy``)."""
        return LandingGuard.acquire(self.spec.landing, self.work_dir, self.spec.redis_url, self.spec.lease_key,
                                    connection=self.spec.redis)

    def start(self, timeout_s: float = 120.0) -> str:
        """Launch the job; returns its job id once it is RUNNING (the source scans from then on).

        Raises :class:`~pipeline.supervision.guard.IngestBusy` if another ingest holds the landing zone.
        The job process gets its own session and process group (its JVM is in it), a parent-death
        signal and the read end of a liveness pipe (``pipeline.supervision.lifeline``), the lock
        descriptors, and this run's temp dir (``pipeline.supervision.tempdirs``) as ``TMPDIR``,
        ``java.io.tmpdir`` and ``io.tmp.dirs``.
        """
        if self.guard is None:
            self.guard = self.acquire_guard()
            self._own_guard = True
        self.run_tmp = self.tmp_root.new_run()
        spec_path = self.work_dir / "spec.json"
        spec_path.write_text(self.spec.model_copy(update={"tmp_dir": self.run_tmp.path}).to_json(self.python))
        self.flink_log_dir.mkdir(parents=True, exist_ok=True)
        for old in self.flink_log_dir.glob("*.log"):  # Flink overwrites it: keep the previous run's as .log.1
            old.replace(old.with_name(old.name + ".1"))
        jvm_args = job_jvm_args(self.spec.flink.jvm_heap, self.run_tmp.jvm_args(), self.flink_log_dir)
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "JVM_ARGS": jvm_args, "FLINK_LOG_DIR": str(self.flink_log_dir),
               **self.run_tmp.env(), **self.spec.flink.thread_env(),
               **self.spec.redis.secret_env()}  # the password: env, not spec.json
        log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        read_end, self._lifeline = open_lifeline()
        try:
            self.process = subprocess.Popen(
                [self.python, "-m", "pipeline.ingest_job", "--spec", str(spec_path), "--lifeline", str(read_end),
                 "--parent-pid", str(os.getpid()), "--stop-grace-s", str(self.stop_grace_s)],
                cwd=PROJECT_ROOT, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
                pass_fds=(read_end, self.run_tmp.fd, *self.guard.fds),
            )
        finally:
            os.close(read_end)
        self.run_tmp.record_pid(self.process.pid)
        self.guard.record_job(self.process.pid)
        self._log: IO[bytes] | None = log
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self._close()
                raise IngestJobError(f"ingest job exited with {self.process.returncode}: {self.log_tail()}")
            for line in self.log_path.read_text(errors="replace").splitlines():
                if line.startswith("JOB_RUNNING "):
                    self.job_id = line.split()[1]
                    return self.job_id
            time.sleep(0.1)
        self.kill()
        raise IngestJobError(f"ingest job did not reach RUNNING within {timeout_s:.0f}s: {self.log_tail()}")

    def send_probe(self) -> str:
        """Drop a probe manifest (``{"probe": token}``); returns the token the job will acknowledge."""
        import uuid

        from pipeline.landing import STAGING_DIR, atomic_write

        token = uuid.uuid4().hex
        atomic_write(self.spec.zone().manifests / f"probe-{token}.jsonl", json.dumps({"probe": token}).encode() + b"\n",
                     staging=self.spec.landing / STAGING_DIR)
        return token

    def probe_answered(self, token: str, client: redis.Redis | None = None) -> bool:
        """Has the job acknowledged ``token``? The acknowledgement is removed when seen: the hash stays bounded."""
        own = client is None
        client = client or redis_client(self.spec.redis, self.spec.redis_url)
        try:
            return bool(client.hdel(self.spec.probe_key, token))
        finally:
            if own:
                client.close()

    def wait_ready(self, timeout_s: float = 60.0) -> float:
        """Drop a probe manifest and wait until the job has acknowledged it in Redis.

        Returns the seconds it took. Proves the source scans and the Python worker runs.
        """
        t0 = time.monotonic()
        token = self.send_probe()
        client = redis_client(self.spec.redis, self.spec.redis_url)
        try:
            while time.monotonic() - t0 < timeout_s:
                if self.probe_answered(token, client):
                    return time.monotonic() - t0
                if not self.alive:
                    raise IngestJobError(f"ingest job died: {self.log_tail()}")
                time.sleep(0.02)
        finally:
            client.close()
        raise IngestJobError(f"ingest job did not answer a probe within {timeout_s:.0f}s: {self.log_tail()}")

    def scan_failures(self) -> int:
        """Directory scans of this run's FileSource that failed ("Failed to enumerate files" in Flink's
        log; docs/ingestion.md, "Directory scans"), read incrementally."""
        for path in sorted(self.flink_log_dir.glob("*.log")):
            try:
                with open(path, "rb") as handle:
                    handle.seek(self._scan_log_offset)
                    chunk = handle.read()
            except OSError:
                continue
            cut = chunk.rfind(b"\n") + 1  # whole lines only
            self._scan_failures += chunk[:cut].count(SCAN_FAILURE)
            self._scan_log_offset += cut
            break  # one log file per run (Flink's log of the embedded gateway)
        return self._scan_failures

    def log_tail(self, n: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n:]
        except FileNotFoundError:
            return "(no log)"

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout_s: float = 60.0) -> None:
        """Cancel the job (SIGTERM to the child, which cancels and exits); a clean exit removes its temp dir."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.kill()
        self._close()

    def kill(self) -> None:
        """Kill the child and its JVM at once (what a power cut does)."""
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)
        self._close()

    def _close(self) -> None:
        log = getattr(self, "_log", None)
        if log is not None:
            log.close()
            self._log = None
        if self._lifeline is not None:
            os.close(self._lifeline)
            self._lifeline = None
        if self.run_tmp is not None and self.process is not None and self.process.poll() is not None:
            # our process group is gone (the JVM exits on the job's EOF); a clean exit removes its temp dir,
            # a crash's is removed by the next start (it is stale then)
            if self.process.returncode == 0:
                _wait_group_gone(self.process.pid, 10.0)
                self.run_tmp.remove()
            else:
                self.run_tmp.release()
            self.run_tmp = None
        if self._own_guard and self.guard is not None:
            self.guard.release()
            self.guard = None
            self._own_guard = False

    def stats(self) -> dict[str, str]:
        """Counters and latency the job publishes (hash ``<prefix>:ingest:stats``)."""
        client = redis_client(self.spec.redis, self.spec.redis_url, decode_responses=True)
        try:
            return cast(dict[str, str], client.hgetall(self.spec.stats_key))
        finally:
            client.close()

    def __enter__(self) -> IngestJob:
        self.start()
        self.wait_ready()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class IngestSupervisor:
    """Keeps the embedded job running and rolls it over to a fresh manifest source now and then.

    Flink's FileSource remembers the path of every file it has read, in memory and in every
    checkpoint, for the life of the job (≈ 2.25 KB of used heap per manifest measured here). After the
    janitor has archived ``source_rollover_manifests`` manifests, the supervisor stops the job
    (its checkpoint is retained) and starts it again from that checkpoint; every restore starts a
    fresh source (:attr:`JobSpec.source_generation`) while the per-asset state is restored as is,
    so memory stays bounded and nothing is lost or duplicated (``tests/pipeline/test_rollover_flink.py``).
    The cost is one restart (docs/benchmarks.md, "Bounded memory"); without checkpoints
    (``checkpoint_interval_ms`` = 0) there is nothing to resume from and it never rolls over.
    """

    def __init__(self, settings: Settings, redis_url: str, resume: bool = True, work_dir: Path | None = None,
                 probe_interval_s: float = 30.0) -> None:
        self.settings = settings
        self.redis_url = redis_url
        self.flink = settings.flink
        self.resume = resume
        self.work_dir = work_dir
        self.job: IngestJob | None = None
        self.guard: LandingGuard | None = None  # held from start() to stop(), across rollovers
        self.rollovers = 0
        self._archived_at_start = 0
        self.probe_interval_s = probe_interval_s
        self._next_probe = 0.0
        self._scan_failures_before = 0  # of the runs before the current one (rollovers)
        self._pending_probe: tuple[str, float] | None = None  # (token, sent at) of the periodic probe

    @property
    def rollover_after(self) -> int:
        return self.flink.source_rollover_manifests if self.flink.checkpoint_interval_ms > 0 else 0

    def _new_job(self, resume: bool) -> IngestJob:
        job = IngestJob.from_settings(self.settings, self.redis_url, resume=resume)
        if self.work_dir is not None:
            job = IngestJob(job.spec, work_dir=self.work_dir)
        if self.guard is None:
            self.guard = job.acquire_guard()  # raises IngestBusy naming the holder
        job.guard = self.guard
        return job

    def _probe(self) -> None:
        """Every ``probe_interval_s`` send a probe; record it in the health hash once answered (checked on
        the next calls, never waited for: behind a backlog an answer can take minutes, and a slow answer
        only makes ``linewatch ingest --health`` report the age)."""
        assert self.job is not None
        now = time.monotonic()
        if self._pending_probe is not None:
            token, sent = self._pending_probe
            if self.job.probe_answered(token):
                self.record_health(now - sent)
                self._pending_probe = None
        if self._pending_probe is None and self.probe_interval_s > 0 and now >= self._next_probe:
            self._pending_probe = (self.job.send_probe(), now)
            self._next_probe = now + self.probe_interval_s

    def publish_scan_failures(self) -> int:
        """``scan_failures`` in the stats hash: failed directory scans of this supervisor's runs so far."""
        assert self.job is not None
        total = self._scan_failures_before + self.job.scan_failures()
        client = redis_client(self.settings.redis, self.redis_url)
        try:
            client.hset(self.job.spec.stats_key, "scan_failures", str(total))
        finally:
            client.close()
        return total

    def record_health(self, probe_s: float) -> None:
        """Record an answered probe (``linewatch ingest --health`` reads it)."""
        assert self.job is not None
        client = redis_client(self.settings.redis, self.redis_url)
        try:
            key = self.job.spec.health_key
            client.hset(key, mapping={"probe_ok_ms": str(int(time.time() * 1000)), "probe_s": f"{probe_s:.3f}",
                                      "supervisor_pid": str(os.getpid()), "job_pid": str(self.job.process.pid
                                      if self.job.process else 0), "landing": str(self.job.spec.landing)})
            client.expire(key, max(60, int(self.probe_interval_s * 10)))
        finally:
            client.close()

    def archived(self) -> int:
        """Manifests the janitor has archived so far (all generations)."""
        client = redis_client(self.settings.redis, self.redis_url)
        try:
            stats = StreamNames(self.settings.streams.prefix, self.settings.streams.shards).ingest_stats()
            raw = cast(bytes | None, client.hget(stats, "manifests_archived"))
            return int(raw or 0)
        finally:
            client.close()

    def start(self) -> IngestJob:
        self.job = self._new_job(self.resume)
        try:
            self.job.start()
            self.record_health(self.job.wait_ready())
        except BaseException:
            self.stop()
            raise
        self._next_probe = time.monotonic() + self.probe_interval_s
        self._archived_at_start = self.archived()
        return self.job

    def check(self) -> bool:
        """Call periodically: raises if the job died; rolls over when due (returns True then)."""
        if self.job is None or not self.job.alive:
            tail = self.job.log_tail() if self.job is not None else "(never started)"
            raise IngestJobError(f"ingest job stopped unexpectedly: {tail}")
        if self.guard is not None and self.guard.lost:
            raise IngestJobError(f"{self.guard.lost}: another host ingests this landing zone; stopping")
        self._probe()
        if self.job.job_id is not None and self.flink.checkpoint_interval_ms > 0:
            prune_checkpoints(self.job.spec.checkpoint_dir, self.job.job_id)
        self.publish_scan_failures()
        if self.rollover_after and self.archived() - self._archived_at_start >= self.rollover_after:
            self.rollover()
            return True
        return False

    def rollover(self) -> IngestJob:
        """Stop the job and start it again from its newest checkpoint, with a fresh source."""
        assert self.job is not None
        self.job.stop()
        self._scan_failures_before += self.job.scan_failures()
        log.info("rolling the ingest job over to a fresh manifest source (rollover %d)", self.rollovers + 1)
        self.job = self._new_job(resume=True)
        self._pending_probe = None
        self.job.start()
        self.record_health(self.job.wait_ready())
        self.rollovers += 1
        self._archived_at_start = self.archived()
        return self.job

    def stop(self) -> None:
        if self.job is not None:
            self.job.stop()
            with contextlib.suppress(redis.RedisError):
                self.publish_scan_failures()
        if self.guard is not None:
            self.guard.release()
            self.guard = None


def run_ingest(settings: Settings, stop_event: threading.Event, redis_url: str | None = None, resume: bool = True) -> None:
    """Run the job until ``stop_event`` is set (``linewatch ingest``); raises if the job dies."""
    from linewatch.embedded_redis import redis_url as configured_redis

    with contextlib.ExitStack() as stack:
        url = redis_url or stack.enter_context(configured_redis(settings))
        supervisor = IngestSupervisor(settings, url, resume=resume)
        stack.callback(supervisor.stop)
        supervisor.start()
        while not stop_event.wait(0.5):
            supervisor.check()


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _wait_group_gone(pgid: int, timeout_s: float) -> bool:
    """Wait until no process of the job's group (its JVM) is left; True if none is."""
    deadline = time.monotonic() + timeout_s
    while _group_alive(pgid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


__all__ = ["IngestBusy", "IngestJob", "IngestJobError", "IngestSupervisor", "latest_checkpoint", "prune_checkpoints",
           "run_ingest"]
