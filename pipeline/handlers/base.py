"""What every modality handler gets: the blob (read and checked) and the shared tools."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Protocol

from linewatch.contract import Message
from pipeline.asset_state import AssetState
from pipeline.job_spec import JobSpec
from pipeline.landing.contract import ManifestEntry
from pipeline.redis_sink import PendingEntry
from pipeline.step import DeadLetters, StepOutput
from pipeline.validation import AssetInfo, ClipLimits, EventTimePolicy, FrameLimits, InvalidRecord
from pipeline.validation.registry import RegistryCache
from pipeline.validation.repeats import check_repeat


@dataclass(frozen=True)
class Blob:
    """A blob read from the landing zone (size and SHA-256 checked) with what is known about it."""

    entry: ManifestEntry
    data: bytes
    info: AssetInfo | None
    now_ms: int = field(default_factory=lambda: int(time.time() * 1000))

    @property
    def ref(self) -> str:
        return self.entry.path

    @property
    def asset_id(self) -> str:
        return self.entry.asset_id

    @property
    def asset_type(self) -> str:
        return str(self.info.asset_type) if self.info is not None else "unknown"


@dataclass
class HandlerContext:
    """Tools shared by the handlers of one job (one per Flink subtask)."""

    spec: JobSpec
    dead: DeadLetters
    registry: RegistryCache
    policy: EventTimePolicy
    frame_limits: FrameLimits
    clip_limits: ClipLimits

    @classmethod
    def from_spec(cls, spec: JobSpec) -> HandlerContext:
        v = spec.validation
        return cls(
            spec=spec, dead=DeadLetters(spec.names),
            registry=RegistryCache(spec.landing), policy=EventTimePolicy(v.future_tolerance_ms),
            frame_limits=FrameLimits(min_ck=v.frame_min_ck, max_ck=v.frame_max_ck,
                                     max_dead_share=v.frame_max_dead_share),
            clip_limits=ClipLimits(max_clipping_frac=v.audio_max_clipping_frac),
        )

    def new_record(self, blob: Blob, state: AssetState, modality: str) -> InvalidRecord | None:
        """A frame or clip must be newer than the asset's last accepted one and not in the future."""
        entry = blob.entry
        return (self.policy.after_last(entry.event_time_ms, state.last_ms.get(modality), modality, blob.ref,
                                       blob.asset_id)
                or self.policy.future(entry.event_time_ms, blob.now_ms, blob.ref, blob.asset_id))

    def repeated(self, blob: Blob, state: AssetState, modality: str, digest: str) -> InvalidRecord | None:
        """A frame or clip whose content is the asset's last accepted one's (a frozen sensor)."""
        return check_repeat(digest, state.last_digest.get(modality), modality, state.last_ms.get(modality), blob.ref,
                            blob.asset_id, blob.entry.event_time_ms)

    def features_entry(self, modality: str, asset_id: str, event_ms: int, msg: Message) -> PendingEntry:
        """A feature entry, written only if newer than the asset's high-water mark (idempotent)."""
        return PendingEntry(stream=self.spec.names.features(modality, asset_id), message=msg,
                            hwm_key=self.spec.names.ingest_marks_of(modality, asset_id), hwm_field=asset_id, hwm_value=event_ms)


class Handler(Protocol):
    """A modality's handler: decode, validate, compute features, append entries and dead letters."""

    def __call__(self, ctx: HandlerContext, blob: Blob, state: AssetState, out: StepOutput) -> None: ...
