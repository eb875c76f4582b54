"""Validation settings as a pydantic model, for the lead to nest into ``linewatch.settings``
(e.g. ``Settings.validation``, env ``LINEWATCH_VALIDATION__ALLOWED_LATENESS_MS``).

>>> cfg = ValidationConfig(allowed_lateness_ms=2_000)
>>> cfg.event_time_guard("PMP-01").allowed_lateness_ms, cfg.frame_limits().max_ck
(2000, 50000)
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from pipeline.validation.event_time import EventTimeGuard
from pipeline.validation.signals import ClipLimits, FrameLimits


class ValidationConfig(BaseModel):
    """Limits of the ingestion checks (defaults match the simulator's plant)."""

    allowed_lateness_ms: int = Field(5_000, ge=0, description="Older than the newest accepted event time of an "
                                     "asset's modality by more than this → 'late'.")
    future_tolerance_ms: int = Field(60_000, ge=0, description="Ahead of the wall clock by more than this → 'future'.")
    dedup_max_keys: int = Field(100_000, ge=100, description="Record keys remembered per asset and modality.")
    dedup_max_blobs: int = Field(10_000, ge=10, description="Blob SHA-256 values remembered per asset and modality.")
    frame_min_ck: int = Field(20_000, ge=0, le=65_535, description="Lowest plausible pixel (centikelvin).")
    frame_max_ck: int = Field(50_000, ge=0, le=65_535, description="Highest plausible pixel (centikelvin).")
    audio_sample_rate_hz: int = Field(16_000, gt=0)
    audio_frames: int = Field(16_000, gt=0, description="Samples per clip.")
    audio_max_clipping_frac: float = Field(0.01, ge=0.0, le=1.0, description="Share of clipped samples allowed.")

    def event_time_guard(self, asset_id: str) -> EventTimeGuard:
        return EventTimeGuard(asset_id, self.allowed_lateness_ms, self.future_tolerance_ms, self.dedup_max_keys,
                              self.dedup_max_blobs)

    def frame_limits(self) -> FrameLimits:
        return FrameLimits(min_ck=self.frame_min_ck, max_ck=self.frame_max_ck)

    def clip_limits(self) -> ClipLimits:
        return ClipLimits(sample_rate=self.audio_sample_rate_hz, frames=self.audio_frames,
                          max_clipping_frac=self.audio_max_clipping_frac)
