"""What one ingestion job runs with: the settings sections themselves, no copies with defaults of their own.

``Settings`` (``streams``, ``flink``, ``validation``) → :class:`JobSpec` → ``spec.json`` → the job
process (``pipeline.ingest_job``) → every Flink function (``pipeline.job``). The sections travel
as they are (pydantic models, JSON on the way), so a default exists in exactly one place.

>>> from linewatch.settings import Settings
>>> spec = JobSpec.from_settings(Settings(data_dir="/tmp/lw-doc", landing_dir="/tmp/lw-doc/landing"), "redis://x")
>>> spec.flink.reorder_timeout_ms, spec.validation.future_tolerance_ms, spec.janitor_settle_s
(30000, 60000, 0.0)
>>> JobSpec.model_validate_json(spec.to_json()) == spec
True
"""

from __future__ import annotations

import sys
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, computed_field, field_validator

from linewatch.contract import StreamNames
from linewatch.flink_settings import FlinkSettings, ValidationSettings
from linewatch.redis_connection import RedisConnectionSettings, split_password
from linewatch.settings import Settings, StreamSettings
from pipeline.landing.zone import LandingZone

PROBE_TTL_S = 3600
"""The probe hash expires this long after the last probe the job answered (crashed runners' tokens)."""


class JobSpec(BaseModel):
    """Everything the job process and its functions need (written as ``spec.json``)."""

    model_config = ConfigDict(frozen=True, extra="ignore", hide_input_in_errors=True)  # inputs may hold secrets

    landing: Path
    redis_url: str  # never with a password: it travels in ``redis.password`` (excluded) / the job's env
    redis: RedisConnectionSettings = Field(default_factory=RedisConnectionSettings)
    checkpoint_dir: Path
    streams: StreamSettings = Field(default_factory=StreamSettings)
    flink: FlinkSettings = Field(default_factory=FlinkSettings)
    validation: ValidationSettings = Field(default_factory=ValidationSettings)
    restore_from: Path | None = None
    python: str = Field(default_factory=lambda: sys.executable, description="Interpreter of the job's Python.")
    job_name: str = "linewatch-ingest"
    tmp_dir: Path | None = Field(default=None, description="This run's temp dir (Flink io.tmp.dirs); embedded runs only.")

    @classmethod
    def from_settings(cls, settings: Settings, redis_url: str, restore_from: Path | None = None) -> JobSpec:
        flink = settings.flink
        redis = settings.redis.for_url(redis_url)  # a password in redis_url moves into redis.password
        return cls(
            landing=Path(settings.landing).resolve(), redis_url=redis.url or redis_url, redis=redis,
            checkpoint_dir=flink.resolved_checkpoint_dir(settings.data_dir).resolve(), streams=settings.streams,
            flink=flink, validation=settings.validation, restore_from=restore_from,
        )

    @field_validator("redis_url")
    @classmethod
    def _no_password(cls, url: str) -> str:
        if split_password(url)[1] is not None:
            raise ValueError("JobSpec.redis_url must not hold a password (spec.json is a file): "
                             "build the spec with JobSpec.from_settings, which moves it to redis.password")
        return url

    # ---- derived values (no second copy of any setting)
    @property
    def checkpoints(self) -> bool:
        return self.flink.checkpoint_interval_ms > 0

    @property
    def janitor_checkpoint_dir(self) -> Path | None:
        """With checkpoints the janitor waits for two triggered after a manifest was done."""
        return self.checkpoint_dir if self.checkpoints else None

    @property
    def janitor_settle_s(self) -> float:
        """Without checkpoints a short grace period is all the janitor can wait."""
        return 0.0 if self.checkpoints else 1.0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def source_generation(self) -> int:
        """Generation of the manifest source (``pipeline.job.source_uid``): the id of the checkpoint
        restored from, so every restore starts a fresh FileSource (0 for a fresh start).

        Dropping the source's state on a restore is safe: the new source lists ``manifests/`` again
        and re-reads what is still there; lines the restored per-asset state has handled are
        skipped (``already_handled``) and the high-water marks drop any replayed entry. The janitor
        archives a manifest only after two checkpoints triggered after its blobs were handled
        (``pipeline.landing.janitor``), so nothing it moved away is missing from the restored
        state. What it buys: the FileSource keeps the path of every file it ever read, in memory
        and in every checkpoint; a restore is how that set is emptied (docs/ingestion.md).

        >>> JobSpec(landing="/l", redis_url="redis://x", checkpoint_dir="/c",
        ...         restore_from="/c/0123abcd/chk-42").source_generation
        42
        """
        if self.restore_from is None:
            return 0
        name = Path(self.restore_from).name
        return int(name[4:]) if name.startswith("chk-") and name[4:].isdigit() else 1

    def flink_conf(self) -> dict[str, str]:
        """Flink configuration of the job: the tuned settings, checkpoint and restore paths, ``extra`` last."""
        conf = self.flink.flink_configuration(self.python)
        if self.checkpoints:
            conf["execution.checkpointing.dir"] = self.checkpoint_dir.resolve().as_uri()
        if self.restore_from is not None:
            conf["execution.state-recovery.path"] = self.restore_from.resolve().as_uri()
            conf.setdefault("execution.state-recovery.ignore-unclaimed-state", "true")
        if self.tmp_dir is not None:
            conf["io.tmp.dirs"] = str(self.tmp_dir)
        conf.update(self.flink.extra)
        return conf

    def zone(self) -> LandingZone:
        return LandingZone(self.landing, self.flink.manifest_dir, self.flink.archive_dir)

    @property
    def names(self) -> StreamNames:
        return StreamNames(prefix=self.streams.prefix, shards=self.streams.shards)

    @property
    def stats_key(self) -> str:
        """Hash of the job's counters and latency (read by ``linewatch demo``)."""
        return self.names.ingest_stats()

    @property
    def probe_key(self) -> str:
        """Hash where the job acknowledges readiness probes (token -> ms). Bounded: the runner deletes
        each token once it has seen the answer, and the hash expires :data:`PROBE_TTL_S` after the last one."""
        return self.names.ingest_probe()

    @property
    def health_key(self) -> str:
        """Hash where the supervisor records its last answered probe (``linewatch ingest --health``)."""
        return self.names.ingest_health()

    def lease_key(self, zone_id: str) -> str:
        """Key of the landing zone's lease (``pipeline.supervision.lease``)."""
        return self.names.ingest_lease(zone_id)

    def to_json(self, python: str | None = None) -> str:
        """``spec.json``; ``python``: the interpreter the job will run with, if not :attr:`python`."""
        spec = self if python is None else self.model_copy(update={"python": python})
        return spec.model_dump_json(indent=2)
