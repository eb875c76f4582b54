"""Validation of decoded records: asset registry, event time, frame and clip checks.

Validators return an :class:`InvalidRecord` (a dead-letter reason + detail) or None.
"""

from pipeline.validation.config import ValidationConfig
from pipeline.validation.errors import InvalidRecord
from pipeline.validation.event_time import EventTimeGuard
from pipeline.validation.registry import AssetInfo, AssetRegistry, TagRange, canonical_unit
from pipeline.validation.signals import ClipLimits, FrameLimits, check_clip, check_frame

__all__ = [
    "AssetInfo", "AssetRegistry", "ClipLimits", "EventTimeGuard", "FrameLimits", "InvalidRecord", "TagRange",
    "ValidationConfig", "canonical_unit", "check_clip", "check_frame",
]
