"""A frame or clip that repeats its asset's previous one bit for bit: a frozen sensor.

A live camera's temporal noise (NETD 30–100 mK against a 10 mK step) and a microphone's noise make
every frame and clip differ from the one before, somewhere. One that does not is the last image
again: a camera whose firmware hung, an exporter that rewrites its cached file, a gateway that
resends it under a new name. Scored, it would repeat the machine's last state as if it were now.
The job keeps an 8-byte digest of the last accepted frame and clip per asset (``AssetState``'s
``last_digest``) and refuses a repeat as ``duplicate``.

>>> import numpy as np
>>> frame = np.arange(12, dtype=np.uint16).reshape(3, 4)
>>> first = content_digest(frame)
>>> check_repeat(first, None, "thermal", 1_000, "b.tiff", "PMP-01", 2_000) is None
True
>>> check_repeat(first, first, "thermal", 1_000, "b.tiff", "PMP-01", 2_000).reason.value
'duplicate'
>>> nudged = frame.copy(); nudged[1, 1] += 1                # one pixel one step warmer: a new frame
>>> check_repeat(content_digest(nudged), first, "thermal", 1_000, "b.tiff", "PMP-01", 2_000) is None
True
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import numpy.typing as npt

from linewatch.contract import DeadLetterReason
from pipeline.decoders.timestamps import format_timestamp_ms
from pipeline.validation.errors import InvalidRecord

WHAT = {"thermal": ("frame", "camera"), "audio": ("clip", "microphone")}


def content_digest(samples: npt.NDArray[Any]) -> str:
    """An 8-byte digest (hex) of an array's values, shape and dtype."""
    h = hashlib.blake2b(digest_size=8)
    h.update(f"{samples.dtype.str}{samples.shape}".encode())
    h.update(np.ascontiguousarray(samples).tobytes())
    return h.hexdigest()


def check_repeat(digest: str, last_digest: str | None, modality: str, last_ms: int | None, raw_ref: str,
                 asset_id: str, event_time_ms: int) -> InvalidRecord | None:
    """``duplicate`` when ``digest`` is the asset's last accepted record's of this modality."""
    if last_digest is None or digest != last_digest:
        return None
    thing, sensor = WHAT.get(modality, ("record", "sensor"))
    when = format_timestamp_ms(last_ms) if last_ms is not None else "before the job's restart"
    return InvalidRecord(
        DeadLetterReason.DUPLICATE,
        f"the {thing} is bit for bit the last accepted {modality} {thing} of {asset_id} ({when}): "
        f"a live {sensor}'s noise makes every {thing} differ, so the {sensor}, its exporter or the gateway repeats "
        f"a frozen {thing}; check that the {sensor} updates",
        raw_ref, asset_id=asset_id, event_time_ms=event_time_ms)
