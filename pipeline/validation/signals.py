"""Checks of decoded thermal frames and audio clips (arrays from decoders or the simulator).

>>> import numpy as np
>>> scene = np.full((120, 160), 29500, np.uint16)  # a hall at 21.9 °C
>>> scene[40:80, 30:120] = 30500                    # a machine 10 K over it
>>> check_frame(scene, "f.tiff") is None
True
>>> check_frame(np.full((120, 160), 100, np.uint16), "f.tiff").reason.value
'out_of_range'
>>> check_frame(np.full((120, 160), 29500, np.uint16), "f.tiff").reason.value  # a covered lens
'no_signal'
>>> dead = scene.copy(); dead[5, 5] = 0  # one dead pixel: repaired, not refused
>>> check_frame(dead, "f.tiff") is None, int(repair_frame(dead)[1]), int(repair_frame(dead)[0][5, 5])
(True, 1, 29500)
>>> check_clip(np.zeros(8000, np.float32), 16000, "a.wav").detail
'expected 16000 Hz mono of 16000 frames, got 16000 Hz mono of 8000 frames'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from linewatch.contract import DeadLetterReason
from pipeline.features.audio_physics import SILENT_DETAIL, SILENT_RMS, rms_above_20hz
from pipeline.features.dead_pixels import MAX_DEAD_SHARE, fill_pixels
from pipeline.features.frame_contrast import no_contrast_detail
from pipeline.validation.errors import InvalidRecord


@dataclass(frozen=True)
class FrameLimits:
    """Accepted frames: shape, dtype and a plausible centikelvin range (default 20000–50000 =
    −73…227 °C; a pixel outside is a sensor fault, not a machine temperature). Up to
    ``max_dead_share`` of the pixels may lie outside (dead or stuck pixels: :func:`repair_frame`
    reads them from their neighbours); a frame with more is refused (a wrong unit, a broken camera)."""

    shape: tuple[int, int] = (120, 160)
    dtype: str = "uint16"
    min_ck: int = 20_000
    max_ck: int = 50_000
    max_dead_share: float = MAX_DEAD_SHARE

    def dead(self, frame: npt.NDArray[Any]) -> npt.NDArray[np.bool_]:
        """Pixels outside the plausible range."""
        return (frame < self.min_ck) | (frame > self.max_ck)


@dataclass(frozen=True)
class ClipLimits:
    """Accepted clips: rate, channels, length and the highest share of clipped samples."""

    sample_rate: int = 16_000
    channels: int = 1
    frames: int = 16_000
    clip_level: float = 0.999
    max_clipping_frac: float = 0.01


def check_frame(frame: npt.NDArray[Any], raw_ref: str, limits: FrameLimits = FrameLimits(), *,
                asset_id: str | None = None, event_time_ms: int | None = None) -> InvalidRecord | None:
    """``bad_shape`` for a wrong shape/dtype, ``out_of_range`` when more than ``max_dead_share`` of
    the pixels leave the plausible range (fewer are dead pixels: :func:`repair_frame`), ``no_signal``
    for a frame without contrast (:mod:`pipeline.features.frame_contrast`: a covered lens ...)."""
    where: dict[str, Any] = dict(asset_id=asset_id, event_time_ms=event_time_ms)
    if frame.shape != limits.shape or frame.dtype.name != limits.dtype:
        return InvalidRecord(DeadLetterReason.BAD_SHAPE,
                             f"expected frame {limits.dtype}{list(limits.shape)}, got {frame.dtype.name}{list(frame.shape)}",
                             raw_ref, **where)
    dead_mask = limits.dead(frame)
    dead = int(np.count_nonzero(dead_mask))
    if dead > limits.max_dead_share * frame.size:
        lo, hi = int(frame.min()), int(frame.max())
        return InvalidRecord(
            DeadLetterReason.OUT_OF_RANGE,
            f"{dead} of {frame.size} pixels ({dead / frame.size:.1%}) leave the plausible range "
            f"{limits.min_ck}..{limits.max_ck} cK (values {lo}..{hi} cK, {lo / 100 - 273.15:.1f}..{hi / 100 - 273.15:.1f} °C); "
            f"up to {limits.max_dead_share:.0%} are read as dead pixels: check the camera's unit and its health",
            raw_ref, **where)
    kelvin = frame.astype(np.float64) / 100.0
    if dead:  # dead pixels are no contrast: read at the frame's median (repair_frame fills them later)
        kelvin[dead_mask] = float(np.median(kelvin[~dead_mask]))
    detail = no_contrast_detail(kelvin - 273.15)
    if detail is not None:
        return InvalidRecord(DeadLetterReason.NO_SIGNAL, detail, raw_ref, **where)
    return None


def repair_frame(frame: npt.NDArray[Any], limits: FrameLimits = FrameLimits()) -> tuple[npt.NDArray[Any], int]:
    """The frame with its pixels outside the plausible range read from their neighbours
    (:func:`~pipeline.features.dead_pixels.fill_pixels`), and how many there were (0: the frame
    itself). Call it on a frame that :func:`check_frame` accepted."""
    dead = limits.dead(frame)
    n = int(np.count_nonzero(dead))
    if n == 0:
        return frame, 0
    return np.rint(fill_pixels(frame, dead)).astype(frame.dtype), n  # valid pixels' medians: in range


def check_clip(samples: npt.NDArray[Any], sample_rate: int, raw_ref: str, limits: ClipLimits = ClipLimits(), *,
               asset_id: str | None = None, event_time_ms: int | None = None) -> InvalidRecord | None:
    """``bad_shape`` for a wrong rate/channels/length, ``out_of_range`` for non-finite samples
    or more than ``max_clipping_frac`` clipped samples, ``no_signal`` for a silent clip (RMS above
    20 Hz below :data:`~pipeline.features.audio_physics.SILENT_RMS` of full scale)."""
    where: dict[str, Any] = dict(asset_id=asset_id, event_time_ms=event_time_ms)
    channels = 1 if samples.ndim == 1 else samples.shape[1]
    frames = samples.shape[0]
    if (sample_rate, channels, frames) != (limits.sample_rate, limits.channels, limits.frames) or samples.ndim > 2:
        def desc(rate: int, ch: int, n: int) -> str:
            return f"{rate} Hz {'mono' if ch == 1 else f'{ch}-channel'} of {n} frames"
        return InvalidRecord(
            DeadLetterReason.BAD_SHAPE,
            f"expected {desc(limits.sample_rate, limits.channels, limits.frames)}, got {desc(sample_rate, channels, frames)}",
            raw_ref, **where)
    if not np.all(np.isfinite(samples)):
        return InvalidRecord(DeadLetterReason.OUT_OF_RANGE, "clip holds NaN or infinite samples", raw_ref, **where)
    clipped = float(np.count_nonzero(np.abs(samples) >= limits.clip_level)) / max(samples.size, 1)
    if clipped > limits.max_clipping_frac:
        return InvalidRecord(
            DeadLetterReason.OUT_OF_RANGE,
            f"{clipped:.1%} of samples are clipped (limit {limits.max_clipping_frac:.1%}); lower the microphone gain",
            raw_ref, **where)
    mono = samples if samples.ndim == 1 else samples[:, 0]
    if rms_above_20hz(mono, sample_rate) < SILENT_RMS:
        return InvalidRecord(DeadLetterReason.NO_SIGNAL, SILENT_DETAIL, raw_ref, **where)
    return None
