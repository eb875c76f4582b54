"""Raw sensor data → model inputs, through the shared :mod:`pipeline.features` functions only.

PLC windows are turned into the *long* rows the streaming window buffer sees (one row per
historian value, NaN in the other tag columns, Bad quality flagged per row), so
``n_samples`` and ``bad_quality_frac`` mean exactly what they mean at serving time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from pipeline.features import FEATURES_VERSION
from pipeline.features.audio_features import AUDIO_STAT_NAMES, audio_features
from pipeline.features.plc_window import PLC_TAGS, plc_feature_names, plc_window_features
from pipeline.features.thermal_features import thermal_features

#: thermal_stats keys without a baseline or region boxes (what every frame has).
THERMAL_REFERENCE_KEYS: tuple[str, ...] = (
    "max_c", "mean_c", "p99_c", "ambient_c", "max_above_ambient_k", "hotspot_area_frac", "hotspot_cx", "hotspot_cy",
)


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
    """Features of one PLC window given as wide tick rows (tag order ``PLC_TAGS``)."""
    if wide.shape[1] != len(PLC_TAGS):
        raise ValueError(f"PLC window must have {len(PLC_TAGS)} tag columns ({PLC_TAGS}), got {wide.shape[1]}")
    ts, values, bad_rows = long_rows(timestamps_ms, wide, bad)
    return plc_window_features(ts, values, alarm_codes, bad_mask=bad_rows)


def plc_inputs(
    timestamps_ms: np.ndarray, windows: np.ndarray, bad: np.ndarray | None, alarm_codes: Sequence[Sequence[str]] | None = None
) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """``(inputs (N, F), reference rows (N, F), names)`` for ``windows`` ``(N, T, n_tags)``."""
    rows = [
        plc_input(timestamps_ms, windows[i], None if bad is None else bad[i], alarm_codes[i] if alarm_codes else ())
        for i in range(len(windows))
    ]
    x = np.stack(rows).astype(np.float32) if rows else np.zeros((0, len(plc_feature_names())), np.float32)
    return x, x.copy(), tuple(plc_feature_names())


def thermal_inputs(frames_ck: np.ndarray) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """``(normalize_frame outputs (N, 120, 160) float32, thermal_stats rows, names)``."""
    inputs, stats = [], []
    for frame in frames_ck:
        s, norm = thermal_features(frame)
        inputs.append(norm.astype(np.float32))
        stats.append([s[k] for k in THERMAL_REFERENCE_KEYS])
    return np.stack(inputs), np.asarray(stats, np.float32), THERMAL_REFERENCE_KEYS


def audio_inputs(
    clips: np.ndarray, sample_rate: int, assets: Sequence[Mapping[str, object] | None] | None = None
) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """``(logmel outputs (N, 64, frames), audio_stats rows, names)``; int16 clips are scaled
    to [-1, 1) as the WAV decoder does."""
    inputs, stats = [], []
    for i, clip in enumerate(clips):
        samples = clip.astype(np.float32) / 32768.0 if clip.dtype == np.int16 else clip.astype(np.float32)
        mel, s = audio_features(samples, sample_rate, assets[i] if assets else None)
        inputs.append(mel)
        stats.append([s[k] for k in AUDIO_STAT_NAMES])
    return np.stack(inputs), np.asarray(stats, np.float32), tuple(AUDIO_STAT_NAMES)


__all__ = ["FEATURES_VERSION", "audio_inputs", "long_rows", "plc_input", "plc_inputs", "thermal_inputs"]
