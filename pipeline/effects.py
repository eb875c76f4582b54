"""Side effects of the ingestion job: Redis writes, archiving, janitor and metrics."""

from __future__ import annotations

import logging
import time
from collections import deque
from pathlib import Path

import numpy as np

from pipeline.ingest_config import IngestConfig
from pipeline.ingestor import StepOutput
from pipeline.landing import Janitor, LandingZone
from pipeline.redis_sink import RedisStreamWriter

log = logging.getLogger(__name__)


class IngestEffects:
    """Redis writes, archiving, janitor and metrics of one task (one per Flink subtask)."""

    def __init__(self, config: IngestConfig, subtask: int = 0) -> None:
        self.config = config
        self.subtask = subtask
        self.writer = RedisStreamWriter(config.redis_url, config.maxlen, config.dedup_ttl_s)
        self.zone = LandingZone(Path(config.landing), config.manifest_dir, config.archive_dir)
        self.janitor = Janitor(self.zone, config.janitor_settle_s, config.archive_retention_s,
                               Path(config.checkpoint_dir) if config.checkpoint_dir else None)
        self._next_janitor = 0.0
        self._next_metrics = 0.0
        self._latencies: deque[float] = deque(maxlen=2000)

    def commit(self, out: StepOutput) -> None:
        """Write the entries (one round trip), then archive the handled blobs; then housekeeping."""
        if out.probe is not None:
            self.writer.client.hset(self.config.probe_key, out.probe, str(int(time.time() * 1000)))
        result = self.writer.write(out.entries, {**out.counters}, self.config.stats_key)
        if result.duplicates:
            self.writer.client.hincrby(self.config.stats_key, "duplicates_skipped", result.duplicates)
        if out.closed_ms and result.entry_ids:
            now_ms = time.time() * 1000
            for _, closed in out.closed_ms:
                self._latencies.append(now_ms - closed)
        for path in out.archive:
            self.zone.archive_file(path)
        self.housekeeping()

    def housekeeping(self, force: bool = False) -> int:
        """Janitor pass (archive finished manifests, prune the archive) and metrics, rate-limited.

        Returns how many manifests are still in the directory (0: no more work for the janitor).
        """
        now = time.monotonic()
        left = -1
        if force or now >= self._next_janitor:
            self._next_janitor = now + self.config.janitor_interval_ms / 1000
            try:
                archived = self.janitor.run_once()
                if archived:  # the embedded runner rolls the source over after so many (pipeline.runner)
                    self.writer.client.hincrby(self.config.stats_key, "manifests_archived", archived)
                left = self.janitor.waiting
            except OSError as exc:  # a racing janitor of another subtask; try again next time
                log.warning("janitor pass failed: %s", exc)
        if now >= self._next_metrics and self._latencies:
            self._next_metrics = now + self.config.metrics_interval_ms / 1000
            values = np.fromiter(self._latencies, dtype=np.float64)
            self.writer.client.hset(self.config.stats_key, mapping={
                f"latency_p50_ms.{self.subtask}": f"{np.percentile(values, 50):.1f}",
                f"latency_p99_ms.{self.subtask}": f"{np.percentile(values, 99):.1f}",
                f"latency_n.{self.subtask}": str(values.size),
                f"updated_ms.{self.subtask}": str(int(time.time() * 1000)),
            })
        return left

    def close(self) -> None:
        self.writer.close()


