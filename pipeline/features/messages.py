"""Contract messages built from feature outputs, shared by the Flink job and the tests.

>>> import numpy as np
>>> msg = thermal_features_message("PMP-01", "pump", 1_000, np.full((120, 160), 30000, np.uint16),
...                                source="thermal/frames/PMP-01/a.tiff", ingest_time_ms=1_005)
>>> msg.features_version, msg.frame.dtype.name, msg.frame.shape, round(msg.stats["max_c"], 2)
(1, 'float16', (120, 160), 26.85)
"""

from __future__ import annotations

import numpy as np

from linewatch.contract import AudioFeatures, PlcFeatures, ThermalFeatures
from pipeline.features import FEATURES_VERSION
from pipeline.features.audio_features import audio_features
from pipeline.features.plc_window import PlcWindow, plc_feature_names
from pipeline.features.thermal_features import thermal_features


def plc_features_message(window: PlcWindow, asset_type: str, source: str = "",
                         ingest_time_ms: int = 0) -> PlcFeatures:
    """``PlcFeatures`` of one completed window (``event_time_ms`` = window end)."""
    return PlcFeatures(
        asset_id=window.asset_id, asset_type=asset_type, window_start_ms=window.start_ms,
        window_end_ms=window.end_ms, event_time_ms=window.end_ms, features_version=FEATURES_VERSION,
        feature_names=plc_feature_names(), values=np.asarray(window.values, dtype=np.float32),
        n_samples=window.n_samples, alarm_counts=dict(window.alarm_counts), source=source,
        ingest_time_ms=ingest_time_ms)


def thermal_features_message(asset_id: str, asset_type: str, event_time_ms: int, frame_ck: np.ndarray,
                             baseline_ck: np.ndarray | None = None,
                             regions: dict[str, tuple[int, int, int, int]] | None = None,
                             source: str = "", ingest_time_ms: int = 0) -> ThermalFeatures:
    """``ThermalFeatures`` of one frame: statistics plus the normalized float16 frame."""
    stats, frame = thermal_features(frame_ck, baseline_ck, regions)
    return ThermalFeatures(asset_id=asset_id, asset_type=asset_type, event_time_ms=event_time_ms,
                           features_version=FEATURES_VERSION, stats=stats, frame=frame, source=source,
                           ingest_time_ms=ingest_time_ms)


def audio_features_message(asset_id: str, asset_type: str, event_time_ms: int, samples: np.ndarray,
                           sample_rate: int = 16_000, asset: object = None, shaft_hz: float | None = None,
                           source: str = "", ingest_time_ms: int = 0) -> AudioFeatures:
    """``AudioFeatures`` of one clip: statistics plus the float32 log-mel spectrogram."""
    mel, stats = audio_features(samples, sample_rate, asset, shaft_hz)
    return AudioFeatures(asset_id=asset_id, asset_type=asset_type, event_time_ms=event_time_ms,
                         features_version=FEATURES_VERSION, stats=stats, logmel=mel, source=source,
                         ingest_time_ms=ingest_time_ms)
