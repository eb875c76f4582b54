"""Side effects of the ingestion job: Redis writes and blob archiving on the record path;
index refreshes, the janitor, archive pruning and metrics on the housekeeping thread."""

from __future__ import annotations

import logging
import time
from collections import deque

import numpy as np

from pipeline.job_spec import PROBE_TTL_S, JobSpec
from pipeline.landing.gate_process import GateProcess
from pipeline.landing.housekeeping import Housekeeper
from pipeline.landing.index import ManifestIndex
from pipeline.landing.janitor import Janitor
from pipeline.redis_sink import RedisStreamWriter, connect
from pipeline.stage_times import StageTimesLog
from pipeline.step import StepOutput

log = logging.getLogger(__name__)


class IngestEffects:
    """Redis writes, archiving, janitor and metrics of one task (one per Flink subtask).

    :meth:`start` starts the housekeeping thread (the job does; unit tests may call
    :meth:`housekeeping` instead).
    """

    def __init__(self, spec: JobSpec, subtask: int = 0, index: ManifestIndex | None = None) -> None:
        self.spec = spec
        self.subtask = subtask
        self.writer = RedisStreamWriter.open(spec.redis_url, spec.flink.dedup_ttl_s, spec.redis)
        self.zone = spec.zone()
        self.index = index if index is not None else ManifestIndex(self.zone)
        # in a process of its own: on this thread it waits for the decoder's GIL and misses the scans
        self.gate = GateProcess(self.zone.manifests, period_s=spec.flink.scan_interval_ms / 1000, python=spec.python)
        self.janitor = Janitor(self.zone, self.index, spec.janitor_settle_s, spec.janitor_checkpoint_dir,
                               wait_for_source=spec.flink.parallelism == 1, gate=self.gate)
        self.housekeeper = Housekeeper(self.zone, self.index, self.janitor, spec.flink.janitor_interval_ms / 1000,
                                       spec.flink.archive_retention_s, on_pass=self._after_pass)
        self._stats = connect(spec.redis_url, spec.redis, socket_timeout=10, socket_connect_timeout=5)
        self._next_metrics = 0.0
        self._latencies: deque[float] = deque(maxlen=2000)
        path = spec.flink.stage_times_file
        self._stage_log = StageTimesLog(path if subtask == 0 else path.with_name(f"{path.name}.{subtask}")) \
            if path is not None else None

    def start(self) -> None:
        self.housekeeper.start()

    def commit(self, out: StepOutput) -> None:
        """Write the entries (one round trip), then archive the handled blobs."""
        if out.probe is not None:  # bounded: the runner deletes the token it waits for; leftovers expire
            pipe = self.writer.client.pipeline(transaction=False)
            pipe.hset(self.spec.probe_key, out.probe, str(int(time.time() * 1000)))
            pipe.expire(self.spec.probe_key, PROBE_TTL_S)
            pipe.execute()
        result = self.writer.write(out.entries, {**out.counters}, self.spec.stats_key)
        written_ms = time.time() * 1000
        if result.duplicates:
            self.writer.client.hincrby(self.spec.stats_key, "duplicates_skipped", result.duplicates)
        if out.closed_ms and result.entry_ids:
            now_ms = time.time() * 1000
            for _, closed in out.closed_ms:
                self._latencies.append(now_ms - closed)
        for path in out.archive:
            self.zone.archive_file(path)
        if self._stage_log is not None:
            self._stage_log.write(out.times, written_ms, time.time() * 1000)

    def housekeeping(self) -> None:
        """One housekeeping pass on the caller's thread (what the thread does every interval)."""
        self.housekeeper.run_pass()

    def _after_pass(self, archived: int) -> None:
        """After each janitor pass (housekeeping thread): count archived manifests (the embedded runner
        rolls the source over after so many, ``pipeline.runner``) and publish the latency."""
        if archived:
            pipe = self._stats.pipeline(transaction=False)
            pipe.hincrby(self.spec.stats_key, "manifests_archived", archived)
            # archives moved outside an observed quiet window of the source's scans (may fail a scan)
            pipe.hset(self.spec.stats_key, mapping={f"janitor_gated.{self.subtask}": str(self.gate.gated),
                                                    f"janitor_ungated.{self.subtask}": str(self.gate.ungated),
                                                    f"janitor_gate_failures.{self.subtask}": str(self.gate.failures)})
            pipe.execute()
        now = time.monotonic()
        if now < self._next_metrics or not self._latencies:
            return
        self._next_metrics = now + self.spec.flink.metrics_interval_ms / 1000
        values = np.asarray(list(self._latencies), dtype=np.float64)
        self._stats.hset(self.spec.stats_key, mapping={
            f"latency_p50_ms.{self.subtask}": f"{np.percentile(values, 50):.1f}",
            f"latency_p99_ms.{self.subtask}": f"{np.percentile(values, 99):.1f}",
            f"latency_n.{self.subtask}": str(values.size),
            f"updated_ms.{self.subtask}": str(int(time.time() * 1000)),
        })

    def close(self) -> None:
        self.housekeeper.stop()
        self.gate.close()
        self.writer.close()
        self._stats.close()
        if self._stage_log is not None:
            self._stage_log.close()
