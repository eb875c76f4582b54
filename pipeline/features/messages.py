"""Contract messages built from feature outputs: the one place the Flink job, ``linewatch inspect``
and the tests turn decoded data into ``PlcFeatures`` / ``ThermalFeatures`` / ``AudioFeatures``.

Each message carries ``vector``, the physics-normalised model input of its modality
(:mod:`pipeline.features.plc_physics`, :mod:`~pipeline.features.thermal_regions`,
:mod:`~pipeline.features.audio_physics`), next to the statistics and arrays of features v1.
``asset`` is what the feature code knows about the machine: an ``assets.json`` entry, an
:class:`~pipeline.features.asset_profile.AssetProfile` or ``pipeline.validation.AssetInfo``.

>>> import numpy as np
>>> frame = np.full((120, 160), 30000, np.uint16)
>>> frame[50:80, 60:110] = 31500                                   # a machine 15 K over its hall
>>> msg = thermal_features_message("PMP-01", "pump", 1_000, frame,
...                                source="thermal/frames/PMP-01/a.tiff", ingest_time_ms=1_005)
>>> msg.features_version, msg.frame.dtype.name, msg.frame.shape, round(msg.stats["max_c"], 2), msg.vector.shape
(4, 'float16', (120, 160), 41.85, (69,))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from linewatch.contract import AudioFeatures, PlcFeatures, ThermalFeatures
from pipeline.features import FEATURES_VERSION
from pipeline.features.asset_profile import (
    RECIPROCATING_LEVEL_UNKNOWN_STAT,
    RECIPROCATING_STAT,
    AssetProfile,
    as_profile,
)
from pipeline.features.audio_baseline import Baseline
from pipeline.features.audio_features import audio_features
from pipeline.features.audio_physics import (
    BAND_LIMITED_STAT,
    ORDERS_ABOVE_ENVELOPE_STAT,
    SAMPLE_RATE,
    audio_vector,
    bearing_orders_above_envelope,
    clip_speed,
    resample_to_16k,
)
from pipeline.features.body_axial import MID_AXIAL_STAT, mid_axial_k
from pipeline.features.measurement_spot import BEARING_BELOW_SPOT_STAT, below_spot_note, parts_below_spot
from pipeline.features.plc_physics import plc_vector
from pipeline.features.plc_running import plc_running_stats
from pipeline.features.plc_window import PlcWindow, plc_feature_names
from pipeline.features.region_check import RegionCheck
from pipeline.features.terminal_crossing import TERMINAL_CROSSED_STAT, terminal_box_crossed
from pipeline.features.thermal_features import thermal_features
from pipeline.features.thermal_fit import PROPOSED_ENDS_KNOWN_STAT, RegionFit
from pipeline.features.thermal_reference import ThermalReference, dead_band, vector_against_references
from pipeline.features.thermal_regions import frame_to_celsius, thermal_vector_fit

KELVIN = 273.15


def _profile(asset: object, regions: Mapping[str, object] | None = None) -> AssetProfile:
    profile = as_profile(asset)
    if regions and not profile.regions:
        boxes = {str(k): tuple(float(v) for v in box) for k, box in regions.items()}  # type: ignore[union-attr]
        profile = AssetProfile(**{**profile.__dict__, "regions": boxes})
    return profile


def plc_features_message(window: PlcWindow, asset_type: str, source: str = "", ingest_time_ms: int = 0,
                         asset: object = None) -> PlcFeatures:
    """``PlcFeatures`` of one completed window (``event_time_ms`` = window end).

    ``stats[RECIPROCATING_LEVEL_UNKNOWN_STAT]`` is 1.0 for a reciprocating machine (``asset``'s
    :attr:`~pipeline.features.asset_profile.AssetProfile.reciprocating`) whose normal vibration level
    ``asset`` does not give (declared or learnt), absent otherwise: its readers withhold imbalance."""
    values = np.asarray(window.values, dtype=np.float32)
    stats = plc_running_stats(values, plc_feature_names())
    profile = as_profile(asset)
    if profile.reciprocating and profile.vibration_normal_mm_s is None:
        stats[RECIPROCATING_LEVEL_UNKNOWN_STAT] = 1.0
    return PlcFeatures(
        asset_id=window.asset_id, asset_type=asset_type, window_start_ms=window.start_ms,
        window_end_ms=window.end_ms, event_time_ms=window.end_ms, features_version=FEATURES_VERSION,
        feature_names=plc_feature_names(), values=values, n_samples=window.n_samples,
        alarm_counts=dict(window.alarm_counts), source=source, ingest_time_ms=ingest_time_ms,
        vector=plc_vector(values, profile), stats=stats)


def thermal_features_message(asset_id: str, asset_type: str, event_time_ms: int, frame_ck: np.ndarray,
                             baseline_ck: np.ndarray | None = None,
                             regions: Mapping[str, tuple[int, int, int, int]] | None = None,
                             source: str = "", ingest_time_ms: int = 0, asset: object = None,
                             warnings: list[str] | None = None, check: RegionCheck | None = None,
                             baseline_band_k: float = 0.0, baseline_rise_ratio: float | None = None
                             ) -> ThermalFeatures:
    """``ThermalFeatures`` of one frame: statistics, the normalized float16 frame and ``vector``.

    ``frame_ck`` is a frame in centikelvin (the pipeline's unit); frames in other units go through
    :func:`thermal_message_any_unit`. ``regions`` (``assets.json`` boxes) default to the asset's.
    Region boxes that were registered onto the frame or proposed add a line to ``warnings`` (the
    job logs it when an asset's fit changes, ``pipeline.handlers.thermal``). ``check``: the asset's
    :class:`~pipeline.features.region_check.RegionCheck` (the job's; None checks every frame).
    ``baseline_band_k``: changes since the baseline within this many kelvin read as none
    (:func:`~pipeline.features.thermal_reference.dead_band`; the job's learned healthy reference, a
    frame of another day, is read so; the running baseline, recent frames, is not).
    ``baseline_rise_ratio``: a baseline taken at another load, read at this frame's
    (:func:`~pipeline.features.thermal_regions.thermal_vector_fit`).
    """
    profile = _profile(asset, regions)
    boxes = regions if regions is not None else ({k: tuple(round(v) for v in b)
                                                  for k, b in profile.regions.items()} or None)
    skip = check is not None and check.skip(frame_ck.shape)
    vector, fit = thermal_vector_fit(frame_ck, profile, baseline_ck, frame_meta={"unit": "centikelvin"},
                                     fit=False if skip else None, baseline_rise_ratio=baseline_rise_ratio)
    if check is not None and not skip:
        check.record(fit.status, frame_ck.shape)
    if baseline_ck is not None and baseline_band_k > 0:
        vector = dead_band(vector, baseline_band_k)
    stats, frame = thermal_features(frame_ck, baseline_ck, fit.boxes if fit.changed else boxes)  # type: ignore[arg-type]
    _fit_stats(stats, fit)
    frame_c = frame_to_celsius(frame_ck, {"unit": "centikelvin"})
    _body_stats(stats, frame_c, fit, profile)
    _terminal_stats(stats, frame_c, fit)
    if warnings is not None and fit.changed and fit.describe():
        warnings.append(fit.describe())
    return ThermalFeatures(asset_id=asset_id, asset_type=asset_type, event_time_ms=event_time_ms,
                           features_version=FEATURES_VERSION, stats=stats, frame=frame, source=source,
                           ingest_time_ms=ingest_time_ms, vector=vector)


def thermal_message_any_unit(asset_id: str, asset_type: str, event_time_ms: int, frame: np.ndarray,
                             asset: object = None, source: str = "", ingest_time_ms: int = 0,
                             warnings: list[str] | None = None,
                             references: Sequence[ThermalReference] = (),
                             reference_rise_ratio: float | None = None) -> ThermalFeatures:
    """``ThermalFeatures`` of a frame of any size and unit (``linewatch inspect``): converted to °C
    with the asset's ``frame`` metadata, then to centikelvin for the v1 statistics. Region boxes
    registered onto the frame or proposed (:mod:`pipeline.features.thermal_fit`), and bearing boxes below
    the measurement spot (:mod:`pipeline.features.measurement_spot`), add a line to ``warnings``.
    ``references``: healthy frames of the same machine
    (:mod:`pipeline.features.thermal_reference`), read as its baseline; ``reference_rise_ratio``: the motor
    body's rise at this frame's operating point over its rise at theirs
    (:func:`pipeline.features.thermal_load.body_rise_ratio`), None to read them as they are."""
    profile = _profile(asset)
    frame_c = frame_to_celsius(frame, profile.frame, notes=warnings)
    frame_ck = np.clip(np.rint((frame_c + KELVIN) * 100.0), 0, 65535).astype(np.uint16)
    vector, fit = vector_against_references(frame_c, profile, references, rise_ratio=reference_rise_ratio)
    stats, normalized = thermal_features(frame_ck, None, fit.boxes or None)
    _fit_stats(stats, fit)
    _body_stats(stats, frame_c, fit, profile)
    _terminal_stats(stats, frame_c, fit)
    if warnings is not None and fit.describe():
        warnings.append(fit.describe())
    if warnings is not None and (note := below_spot_note(fit.boxes)):
        warnings.append(note)
    return ThermalFeatures(asset_id=asset_id, asset_type=asset_type, event_time_ms=event_time_ms,
                           features_version=FEATURES_VERSION, stats=stats, frame=normalized, source=source,
                           ingest_time_ms=ingest_time_ms, vector=vector)


def _fit_stats(stats: dict[str, float], fit: RegionFit) -> None:
    """``regions_registered`` / ``regions_proposed`` flags (1.0 when the boxes read were moved onto
    the machine / proposed without any in assets.json), ``regions_proposed_ends_known`` (proposed,
    with the drive end declared or read from the machine's shape: :attr:`RegionFit.ends_known`) and
    ``bearing_below_spot`` (a bearing housing's box narrower than the camera's measurement spot:
    :mod:`~pipeline.features.measurement_spot`)."""
    stats["regions_registered"] = float(fit.status == "registered")
    stats["regions_proposed"] = float(fit.status == "proposed")
    stats[PROPOSED_ENDS_KNOWN_STAT] = float(fit.ends_known)
    stats[BEARING_BELOW_SPOT_STAT] = float(bool(parts_below_spot(fit.boxes)))


def _body_stats(stats: dict[str, float], frame_c: np.ndarray, fit: RegionFit, profile: AssetProfile) -> None:
    """``body_mid_axial_k``: the motor body's drive end minus its fan end, read in the middle half of
    its box (:func:`~pipeline.features.body_axial.mid_axial_k`; absent where the body or its
    orientation is not known)."""
    mid = mid_axial_k(frame_c, fit.boxes, profile)
    if mid is not None:
        stats[MID_AXIAL_STAT] = mid


def _terminal_stats(stats: dict[str, float], frame_c: np.ndarray, fit: RegionFit) -> None:
    """``terminal_box_crossed``: 1.0 where a hot line runs through the terminal box read and on past it
    (:func:`~pipeline.features.terminal_crossing.terminal_box_crossed`), 0.0 where it does not or the box is unknown."""
    stats[TERMINAL_CROSSED_STAT] = float(terminal_box_crossed(frame_c, fit.boxes))


def audio_features_message(asset_id: str, asset_type: str, event_time_ms: int, samples: np.ndarray,
                           sample_rate: int = 16_000, asset: object = None, shaft_hz: float | None = None,
                           source: str = "", ingest_time_ms: int = 0,
                           baseline_db: Baseline | None = None) -> AudioFeatures:
    """``AudioFeatures`` of one clip: statistics, the float32 log-mel spectrogram and ``vector``.

    The log-mel and statistics describe the clip at 16 kHz (other rates are resampled);
    ``shaft_hz`` (a measured running speed, e.g. PLC ``speed_rpm`` / 60) narrows the speed search;
    ``baseline_db``: the machine's learned healthy shaft-harmonic levels
    (:mod:`pipeline.features.audio_baseline`; the job's), read into the vector's last seven values.
    ``stats["reciprocating"]`` is 1.0 for a machine that knocks in step with the shaft when healthy
    (:attr:`~pipeline.features.asset_profile.AssetProfile.reciprocating`): the model's readers
    withhold bearing wear there (:mod:`models.withheld_classes`). ``stats["band_limited"]`` is 1.0
    for a clip recorded below 16 kHz: its readers withhold bearing wear and cavitation.
    ``stats["bearing_orders_above_envelope"]`` is 1.0 where the bearing's lowest fault frequency at the
    clip's speed lies above the envelope spectrum the models read (a fast spindle,
    :func:`~pipeline.features.audio_physics.bearing_orders_above_envelope`): its readers withhold
    bearing wear.
    """
    x = resample_to_16k(samples, sample_rate)
    mel, stats = audio_features(x, 16_000, asset, shaft_hz)
    vector = audio_vector(x, 16_000, asset, shaft_hz, baseline_db)
    stats[RECIPROCATING_STAT] = float(as_profile(asset).reciprocating)
    stats[BAND_LIMITED_STAT] = float(sample_rate < SAMPLE_RATE)
    stats[ORDERS_ABOVE_ENVELOPE_STAT] = float(bearing_orders_above_envelope(clip_speed(vector), asset))
    return AudioFeatures(asset_id=asset_id, asset_type=asset_type, event_time_ms=event_time_ms,
                         features_version=FEATURES_VERSION, stats=stats, logmel=mel, source=source,
                         ingest_time_ms=ingest_time_ms, vector=vector)
