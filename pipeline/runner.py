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

from linewatch.contract import StreamNames
from linewatch.redis_connection import redis_client
from linewatch.settings import Settings
from pipeline.job_spec import JobSpec

log = logging.getLogger(__name__)

PROJECT_ROOT = Path(__file__).resolve().parent.parent


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


class IngestJob:
    """The ingestion job in an embedded MiniCluster, run by a child process."""

    def __init__(self, spec: JobSpec, work_dir: Path | None = None, python: str | None = None) -> None:
        self.spec = spec
        self.python = python or sys.executable
        self.work_dir = Path(work_dir) if work_dir else Path(tempfile.mkdtemp(prefix="lw-ingest-"))
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.process: subprocess.Popen[bytes] | None = None
        self.job_id: str | None = None
        self.log_path = self.work_dir / "ingest-job.log"

    @classmethod
    def from_settings(cls, settings: Settings, redis_url: str, resume: bool = True) -> IngestJob:
        """Job for linewatch ``Settings``; ``resume`` restores the newest checkpoint if any."""
        checkpoints = settings.flink.resolved_checkpoint_dir(settings.data_dir)
        spec = JobSpec.from_settings(settings, redis_url, latest_checkpoint(checkpoints) if resume else None)
        return cls(spec, work_dir=Path(settings.data_dir) / "flink" / "run")

    def start(self, timeout_s: float = 120.0) -> str:
        """Launch the job; returns its job id once it is RUNNING (the source scans from then on)."""
        spec_path = self.work_dir / "spec.json"
        spec_path.write_text(self.spec.to_json(self.python))
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "JVM_ARGS": f"-Xmx{self.spec.flink.jvm_heap}",
               **self.spec.flink.thread_env(), **self.spec.redis.secret_env()}  # the password: env, not spec.json
        log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [self.python, "-m", "pipeline.ingest_job", "--spec", str(spec_path)],
            cwd=PROJECT_ROOT, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
        )
        self._log = log
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise IngestJobError(f"ingest job exited with {self.process.returncode}: {self.log_tail()}")
            for line in self.log_path.read_text(errors="replace").splitlines():
                if line.startswith("JOB_RUNNING "):
                    self.job_id = line.split()[1]
                    return self.job_id
            time.sleep(0.1)
        self.kill()
        raise IngestJobError(f"ingest job did not reach RUNNING within {timeout_s:.0f}s: {self.log_tail()}")

    def wait_ready(self, timeout_s: float = 60.0) -> float:
        """Drop a probe manifest and wait until the job has acknowledged it in Redis.

        Returns the seconds it took. Proves the source scans and the Python worker runs.
        """
        import uuid

        from pipeline.landing import STAGING_DIR, atomic_write

        token = uuid.uuid4().hex
        cfg = self.spec
        t0 = time.monotonic()
        atomic_write(cfg.zone().manifests / f"probe-{token}.jsonl", json.dumps({"probe": token}).encode() + b"\n",
                     staging=cfg.landing / STAGING_DIR)
        client = redis_client(cfg.redis, cfg.redis_url)
        try:
            while time.monotonic() - t0 < timeout_s:
                if client.hexists(cfg.probe_key, token):
                    return time.monotonic() - t0
                if not self.alive:
                    raise IngestJobError(f"ingest job died: {self.log_tail()}")
                time.sleep(0.02)
        finally:
            client.close()
        raise IngestJobError(f"ingest job did not answer a probe within {timeout_s:.0f}s: {self.log_tail()}")

    def log_tail(self, n: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n:]
        except FileNotFoundError:
            return "(no log)"

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout_s: float = 60.0) -> None:
        """Cancel the job (SIGTERM to the child, which cancels and exits)."""
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

    def stats(self) -> dict[str, str]:
        """Counters and latency the job publishes (hash ``<prefix>:ingest:stats``)."""
        client = redis_client(self.spec.redis, self.spec.redis_url, decode_responses=True)
        try:
            return client.hgetall(self.spec.stats_key)
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

    def __init__(self, settings: Settings, redis_url: str, resume: bool = True, work_dir: Path | None = None) -> None:
        self.settings = settings
        self.redis_url = redis_url
        self.flink = settings.flink
        self.resume = resume
        self.work_dir = work_dir
        self.job: IngestJob | None = None
        self.rollovers = 0
        self._archived_at_start = 0

    @property
    def rollover_after(self) -> int:
        return self.flink.source_rollover_manifests if self.flink.checkpoint_interval_ms > 0 else 0

    def _new_job(self, resume: bool) -> IngestJob:
        job = IngestJob.from_settings(self.settings, self.redis_url, resume=resume)
        if self.work_dir is not None:
            job = IngestJob(job.spec, work_dir=self.work_dir)
        return job

    def archived(self) -> int:
        """Manifests the janitor has archived so far (all generations)."""
        client = redis_client(self.settings.redis, self.redis_url)
        try:
            stats = StreamNames(self.settings.streams.prefix, self.settings.streams.shards).ingest_stats()
            return int(client.hget(stats, "manifests_archived") or 0)
        finally:
            client.close()

    def start(self) -> IngestJob:
        self.job = self._new_job(self.resume)
        self.job.start()
        self.job.wait_ready()
        self._archived_at_start = self.archived()
        return self.job

    def check(self) -> bool:
        """Call periodically: raises if the job died; rolls over when due (returns True then)."""
        if self.job is None or not self.job.alive:
            tail = self.job.log_tail() if self.job is not None else "(never started)"
            raise IngestJobError(f"ingest job stopped unexpectedly: {tail}")
        if self.job.job_id is not None and self.flink.checkpoint_interval_ms > 0:
            prune_checkpoints(self.job.spec.checkpoint_dir, self.job.job_id)
        if self.rollover_after and self.archived() - self._archived_at_start >= self.rollover_after:
            self.rollover()
            return True
        return False

    def rollover(self) -> IngestJob:
        """Stop the job and start it again from its newest checkpoint, with a fresh source."""
        assert self.job is not None
        self.job.stop()
        log.info("rolling the ingest job over to a fresh manifest source (rollover %d)", self.rollovers + 1)
        self.job = self._new_job(resume=True)
        self.job.start()
        self.job.wait_ready()
        self.rollovers += 1
        self._archived_at_start = self.archived()
        return self.job

    def stop(self) -> None:
        if self.job is not None:
            self.job.stop()


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
