"""What the ingestion job's Python functions need (plain values: it travels in the job graph)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from linewatch.contract import StreamNames


@dataclass(frozen=True)
class IngestConfig:
    """Configuration of one ingestion job (built from ``FlinkSettings`` by ``pipeline.runner``)."""

    landing: str
    redis_url: str
    prefix: str = "lw"
    shards: int = 4
    maxlen: int = 100_000
    manifest_dir: str = "manifests"
    archive_dir: str = "archive"
    archive_processed: bool = True
    archive_retention_s: float = 3600.0
    janitor_interval_ms: int = 1000
    janitor_settle_s: float = 11.0
    reorder_timeout_ms: int = 30_000
    reorder_give_up_ms: int = 600_000
    dedup_ttl_s: int = 86_400
    metrics_interval_ms: int = 1000
    checkpoint_dir: str | None = None  # the janitor archives a manifest only after later checkpoints

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> IngestConfig:
        return cls(**json.loads(text))

    @property
    def names(self) -> StreamNames:
        return StreamNames(prefix=self.prefix, shards=self.shards)

    @property
    def stats_key(self) -> str:
        """Hash of the job's counters and latency (read by ``linewatch demo``)."""
        return f"{self.prefix}:ingest:stats"

    @property
    def probe_key(self) -> str:
        """Hash where the job acknowledges readiness probes (token -> ms)."""
        return f"{self.prefix}:ingest:probe"

    def hwm_key(self, modality: str) -> str:
        return f"{self.prefix}:ingest:hwm:{modality}"
