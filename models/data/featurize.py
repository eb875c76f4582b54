"""Raw sensor data → model inputs, through the shared :mod:`pipeline.features` functions only.

Every modality's model reads its physics-normalised vector (features v2): the same functions
build it in the Flink job (``pipeline.features.messages``), in ``linewatch inspect`` and here.
PLC windows are turned into the *long* rows the streaming window buffer sees (one row per
historian value, NaN in the other tag columns, Bad quality flagged per row), so ``n_samples`` and
``bad_quality_frac`` mean exactly what they mean at serving time.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pipeline.features import FEATURES_VERSION
from pipeline.features.audio_physics import AUDIO_VECTOR_NAMES, audio_vector
from pipeline.features.plc_physics import PLC_VECTOR_NAMES, plc_vector
from pipeline.features.plc_window import PLC_TAGS, plc_window_features
from pipeline.features.thermal_regions import THERMAL_VECTOR_NAMES, thermal_vector


def long_rows(
    timestamps_ms: np.ndarray, wide: np.ndarray, bad: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Wide ``(T, n_tags)`` tick rows → long rows ``(T*n_tags, n_tags)`` with one value each.

    >>> t, v, b = long_rows(np.array([0, 100]), np.array([[1.0, 2.0], [3.0, 4.0]]), None)
    >>> t.tolist(), v.tolist()
    ([0, 0, 100, 100], [[1.0, nan], [nan, 2.0], [3.0, nan], [nan, 4.0]])
    """
    n_ticks, n_tags = wide.shape
    ts = np.repeat(np.asarray(timestamps_ms, np.int64), n_tags)
    cols = np.tile(np.arange(n_tags), n_ticks)
    values = np.full((n_ticks * n_tags, n_tags), np.nan)
    values[np.arange(n_ticks * n_tags), cols] = np.asarray(wide, np.float64).reshape(-1)
    bad_rows = np.asarray(bad, bool).reshape(-1) if bad is not None else np.zeros(n_ticks * n_tags, bool)
    present = ~np.isnan(np.asarray(wide, np.float64).reshape(-1))  # a missing value is no historian row
    return ts[present], values[present], bad_rows[present]


def plc_input(
    timestamps_ms: np.ndarray, wide: np.ndarray, bad: np.ndarray | None = None, alarm_codes: Sequence[str] = ()
) -> np.ndarray:
    """Raw window features (37) of one PLC window given as wide tick rows (tag order ``PLC_TAGS``)."""
    if wide.shape[1] != len(PLC_TAGS):
        raise ValueError(f"PLC window must have {len(PLC_TAGS)} tag columns ({PLC_TAGS}), got {wide.shape[1]}")
    ts, values, bad_rows = long_rows(timestamps_ms, wide, bad)
    return plc_window_features(ts, values, alarm_codes, bad_mask=bad_rows)


def plc_inputs(
    timestamps_ms: np.ndarray, windows: np.ndarray, bad: np.ndarray | None, assets: Sequence[object] | None = None,
    alarm_codes: Sequence[Sequence[str]] | None = None,
) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """``(model inputs (N, F), reference rows (N, F), names)`` for ``windows`` ``(N, T, n_tags)``."""
    rows = []
    for i in range(len(windows)):
        raw = plc_input(timestamps_ms, windows[i], None if bad is None else bad[i], alarm_codes[i] if alarm_codes else ())
        rows.append(plc_vector(raw, assets[i] if assets else None))
    x = np.stack(rows).astype(np.float32) if rows else np.zeros((0, len(PLC_VECTOR_NAMES)), np.float32)
    return x, x.copy(), PLC_VECTOR_NAMES


def thermal_inputs(frames: Sequence[np.ndarray] | np.ndarray, assets: Sequence[object] | None = None
                   ) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """``(thermal_vector rows (N, F), the same as reference rows, names)``; frames in any unit
    (centikelvin uint16 from the simulator)."""
    x = np.stack([thermal_vector(f, assets[i] if assets else None) for i, f in enumerate(frames)]).astype(np.float32)
    return x, x.copy(), THERMAL_VECTOR_NAMES


def audio_inputs(
    clips: Sequence[np.ndarray] | np.ndarray, sample_rate: int, assets: Sequence[object] | None = None,
    shaft_hz: Sequence[float | None] | None = None,
) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """``(audio_vector rows (N, F), the same as reference rows, names)``; int16 clips are scaled
    to [-1, 1) as the WAV decoder does."""
    rows = []
    for i, clip in enumerate(clips):
        samples = clip.astype(np.float32) / 32768.0 if clip.dtype == np.int16 else clip.astype(np.float32)
        rows.append(audio_vector(samples, sample_rate, assets[i] if assets else None, shaft_hz[i] if shaft_hz else None))
    x = np.stack(rows).astype(np.float32)
    return x, x.copy(), AUDIO_VECTOR_NAMES


__all__ = ["FEATURES_VERSION", "audio_inputs", "long_rows", "plc_input", "plc_inputs", "thermal_inputs"]
