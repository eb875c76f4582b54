"""Validation of decoded records: asset registry, event time, frame and clip checks.

Validators return an :class:`InvalidRecord` (a dead-letter reason + detail) or None.
"""

from pipeline.validation.errors import InvalidRecord
from pipeline.validation.event_time import EventTimePolicy
from pipeline.validation.registry import AssetInfo, AssetRegistry, TagRange, canonical_unit
from pipeline.validation.signals import ClipLimits, FrameLimits, check_clip, check_frame, repair_frame

__all__ = [
    "AssetInfo", "AssetRegistry", "ClipLimits", "EventTimePolicy", "FrameLimits", "InvalidRecord", "TagRange",
    "canonical_unit", "check_clip", "check_frame", "repair_frame",
]
