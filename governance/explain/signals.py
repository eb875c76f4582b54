"""Where each model-input feature comes from: its physical signal group, the thermal regions it
reads and the audio frequencies it draws on. Used to map LIME weights back onto the frame and the
log-mel, and to decide whether LIME and a rule point at the same signals (agreement).

>>> signal_group("audio", "comb.bpfo"), signal_group("thermal", "rel.de_minus_body")
('bearing_envelope', 'bearing_heat')
>>> signal_group("audio", "baseline.shaft.1x.delta_db")   # a value against the machine's own: its value's group
'shaft_orders'
>>> thermal_regions_of("rel.de_minus_body")
('de_bearing', 'motor_body')
>>> [round(lo) for lo, hi in audio_bands_hz("shape.band0.db", np.zeros(79, np.float32))]
[40]
"""

from __future__ import annotations

from typing import Any

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from pipeline.features.asset_profile import AssetProfile
from pipeline.features.audio_physics import (
    AUDIO_VECTOR_NAMES,
    ENV_BANDS_HZ,
    SHAPE_EDGES_HZ,
    SK_BANDS_HZ,
)
from pipeline.features.thermal_regions import REGIONS

#: Signal groups a fault class is seen in (the "bearing signals" of a bearing fault, ...).
FAULT_SIGNALS: dict[str, frozenset[str]] = {
    "bearing_wear": frozenset({"bearing_envelope", "bearing_heat", "impulsiveness"}),
    "electrical_overheating": frozenset({"electrical"}),
    "cooling_failure": frozenset({"motor_heat"}),
    "imbalance": frozenset({"shaft_orders"}),
    "cavitation": frozenset({"flow", "impulsiveness"}),
}

_THERMAL_REL: dict[str, tuple[str, ...]] = {
    "de_minus_nde": ("de_bearing", "nde_bearing"), "de_minus_body": ("de_bearing", "motor_body"),
    "nde_minus_body": ("nde_bearing", "motor_body"), "coupling_minus_body": ("coupling", "motor_body"),
    "terminal_minus_body": ("terminal_box", "motor_body"), "body_axial_gradient": ("motor_body",),
    "inlet_minus_driven": ("pump_inlet", "driven"), "driven_minus_body": ("driven", "motor_body"),
    "de_over_body": ("de_bearing", "motor_body"), "nde_over_body": ("nde_bearing", "motor_body"),
    "terminal_excess_over_body": ("terminal_box", "motor_body"), "coupling_over_body": ("coupling", "motor_body"),
    "axial_over_body": ("motor_body",), "delta_body_mean": ("motor_body",), "delta_de_max": ("de_bearing",),
    "delta_nde_max": ("nde_bearing",), "delta_terminal_max": ("terminal_box",), "delta_coupling_mean": ("coupling",),
    "delta_inlet_mean": ("pump_inlet",),
}
_REGION_GROUP = {"motor_body": "motor_heat", "de_bearing": "bearing_heat", "nde_bearing": "bearing_heat",
                 "terminal_box": "electrical", "coupling": "shaft_orders", "driven": "flow", "pump_inlet": "flow"}


def thermal_regions_of(feature: str) -> tuple[str, ...]:
    """The ``assets.json`` regions a thermal vector feature reads (empty: the whole frame / context)."""
    head, _, tail = feature.partition(".")
    if head in REGIONS:
        return (head,)
    return _THERMAL_REL.get(tail, ())


def signal_group(modality: str, feature: str) -> str:
    """The physical signal group of a model-input feature (``context`` for speed, flags, quality ...)."""
    if modality == "thermal":
        regions = thermal_regions_of(feature)
        return _REGION_GROUP[regions[0]] if regions else "context"
    if modality == "audio":
        if feature.startswith("baseline.") and feature.endswith((".delta", ".delta_db")):
            feature = feature.removeprefix("baseline.").rsplit(".", 1)[0]  # a value against the machine's own
        if feature.startswith(("env.shaft.", "shaft.")):
            return "shaft_orders"
        if feature.startswith(("env.", "comb.")):
            return "bearing_envelope"
        if feature.startswith(("sk.", "kurtogram.", "wave.")):
            return "impulsiveness"
        if feature.startswith("hum."):
            return "electrical"
        if feature.startswith("shape."):
            return "spectrum_shape"
        return "context"
    if modality == "derived":
        return "motor_heat"
    if modality == "plc":
        if feature.startswith(("temp.bearing", "temp.winding_minus_bearing")):
            return "bearing_heat"
        if feature.startswith("temp.winding"):
            return "motor_heat"
        if feature.startswith("vib."):
            return "shaft_orders"
        if feature.startswith("current."):
            return "electrical"
        if feature.startswith("pressure."):
            return "flow"
        if feature.startswith("alarms."):
            return "alarms"
        return "context"
    raise ValueError(f"unknown modality {modality!r}")


def _named(vector: NDArray[Any], name: str) -> float:
    return float(vector[AUDIO_VECTOR_NAMES.index(name)]) if vector.size == len(AUDIO_VECTOR_NAMES) else 0.0


def audio_bands_hz(feature: str, vector: NDArray[Any], profile: AssetProfile | None = None
                   ) -> list[tuple[float, float]]:
    """Frequency ranges (Hz) of the 16 kHz clip a feature of ``pipeline.features.audio_physics`` is
    computed from: tones at shaft orders, band shares, spectral-kurtosis bands, and for envelope
    features the demodulation (carrier) bands; a ``baseline.<value>.delta`` those of its value. Empty
    for speed estimates and flags."""
    if feature.startswith("baseline.") and feature.endswith((".delta", ".delta_db")):
        feature = feature.removeprefix("baseline.").rsplit(".", 1)[0]
    shaft_hz = _named(vector, "speed.shaft_hz") * 60.0
    tol = max(0.5, 0.015 * shaft_hz)
    if feature.startswith("shaft.") and shaft_hz > 0:
        k = int(feature.split(".")[1].rstrip("x"))
        return [(k * shaft_hz - tol * k, k * shaft_hz + tol * k)]
    if feature.startswith("hum."):
        line = profile.line_frequency_hz if profile is not None and profile.line_frequency_hz else None
        return [(2 * line - 1, 2 * line + 1)] if line else [(99.0, 101.0), (119.0, 121.0)]
    if feature.startswith("shape.band"):
        i = int(feature.split(".")[1][4:])
        return [(float(SHAPE_EDGES_HZ[i]), float(SHAPE_EDGES_HZ[i + 1]))]
    if feature.startswith("sk.band"):
        return [SK_BANDS_HZ[int(feature.split(".")[1][4:])]]
    env_bands = [*ENV_BANDS_HZ, _fourth_band(vector, profile)]
    if feature.startswith("env.band"):
        return [env_bands[int(feature.split(".")[1][4:])]]
    kurto = _kurtogram_band(vector)
    if feature.startswith("kurtogram."):
        return [kurto]
    if feature.startswith(("env.", "comb.")):
        return [*env_bands, kurto]
    if feature.startswith("wave."):
        return [(20.0, 8_000.0)]
    return []


def _fourth_band(vector: NDArray[Any], profile: AssetProfile | None) -> tuple[float, float]:
    """The fourth envelope band: the asset's resonance band, else the most impulsive SK band above 1 kHz."""
    if profile is not None and profile.resonance_band_hz is not None:
        lo, hi = profile.resonance_band_hz
        if hi - lo >= 200:
            return max(lo, 300.0), min(hi, 7_800.0)
    sk = [_named(vector, f"sk.band{i}") for i in range(1, len(SK_BANDS_HZ))]
    return SK_BANDS_HZ[int(np.argmax(sk)) + 1]


def _kurtogram_band(vector: NDArray[Any]) -> tuple[float, float]:
    center = _named(vector, "kurtogram.center") * 16_000.0
    width = 2.0 ** _named(vector, "kurtogram.log2_bandwidth") * 1_000.0
    if center <= 0:
        return ENV_BANDS_HZ[0][0], ENV_BANDS_HZ[-1][1]
    return max(center - width / 2, 0.0), min(center + width / 2, 8_000.0)


def groups_of(modality: str, names: Sequence[str]) -> list[str]:
    return [signal_group(modality, n) for n in names]
