"""A machine's healthy reference frames, as comparative thermography reads a frame: each region's
change since the machine was known to be healthy.

One frame cannot tell a cooling failure from a machine that runs hot anyway (its body's share of
the winding rise, its fins, its load): measured, a detector on one frame finds about half of the
cooling failures past moderate severity at 1 % healthy false alarms, and with a healthy frame of
the same machine at a similar load all of them (``bench/bench_thermal_limits.py``,
docs/models.md). The live line reads every frame against its running baseline
(:class:`~pipeline.features.thermal_features.ThermalBaseline`); a file scored alone
(``linewatch inspect``) can be given healthy frames of the same machine instead
(``--healthy-thermal``), e.g. from its commissioning survey. The reference need not come from the
same camera position or frame size: each reference is read in its own fitted region boxes. It
need not be taken at the same hall temperature either: it is brought to the frame's ambient first
(each frame's own estimate, the median outside its regions), so the baseline values are changes
of the parts' rises over ambient. A reference from another day is otherwise several kelvin off
on every part (measured on the foreign fleet: healthy frames read against a healthy frame of the
same machine at the same load, the hall ±5 °C apart, were called cooling failure at 10 %). Even
brought to the same ambient, a healthy machine differs from day to day by a few kelvin, so the
changes are read with a dead band (:func:`dead_band`, :data:`REFERENCE_DEAD_BAND_K`): on that
fleet, frames read against a healthy frame of another day at their load had 11.9 % false alarms
without it and 4.8 % with it (one frame alone: 5.4 %).

>>> frame = np.full((60, 80), 22.0, np.float32)
>>> frame[20:40, 20:50] = 32.0                                # motor body +10 K
>>> regions = {"motor_body": [20, 20, 50, 40], "de_bearing": [50, 25, 56, 35], "nde_bearing": [14, 25, 20, 35]}
>>> asset = {"asset_id": "M", "regions": regions, "frame": {"unit": "celsius"}}
>>> ref = reference_frame(frame, asset)
>>> hot = frame.copy(); hot[20:40, 20:50] += 6.0              # the same body 6 K hotter
>>> v = vector_against_references(hot, asset, [ref])[0]
>>> i = THERMAL_VECTOR_NAMES.index
>>> float(v[i("baseline.baseline_available")]), round(float(v[i("baseline.delta_body_mean")]), 1)   # 6 K less the dead band
(1.0, 3.0)
>>> warm_day = reference_frame(frame + 5.0, asset)            # the same healthy machine, hall 5 K warmer
>>> round(float(vector_against_references(hot, asset, [warm_day], band_k=0.0)[0][i("baseline.delta_body_mean")]), 1)
6.0
>>> moved = np.full((120, 160), 22.0, np.float32); moved[50:90, 30:90] = 32.0   # another camera: 2x, shifted
>>> far = reference_frame(moved, {**asset, "regions": {"motor_body": [30, 50, 90, 90]}, "frame": {"unit": "celsius"}})
>>> round(float(vector_against_references(hot, asset, [far], band_k=0.0)[0][i("baseline.delta_body_mean")]), 1)
6.0
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pipeline.features.asset_profile import FrameMeta
from pipeline.features.thermal_fit import RegionFit
from pipeline.features.thermal_regions import (
    THERMAL_VECTOR_NAMES,
    ambient_estimate,
    frame_to_celsius,
    thermal_vector_fit,
)

_CELSIUS = {"unit": "celsius"}
_BASELINE_COLUMNS = [i for i, n in enumerate(THERMAL_VECTOR_NAMES) if n.startswith("baseline.")]
_DELTA_COLUMNS = [i for i, n in enumerate(THERMAL_VECTOR_NAMES) if n.startswith("baseline.delta_")]

#: A part's change since a healthy reference of another time smaller than this (K) is read as no
#: change: a healthy machine differs from day to day by a few kelvin at the same load and hall
#: temperature (measured on another generator's fleet: -3.4 ... +2.4 K on the motor body, 10th-90th
#: percentile), and comparative thermography calls a difference of 1-3 K under similar load only a
#: possible deficiency. docs/models.md ("Thermal: the live line's learned healthy reference").
REFERENCE_DEAD_BAND_K = 3.0


def dead_band(vector: np.ndarray, band_k: float = REFERENCE_DEAD_BAND_K) -> np.ndarray:
    """``vector`` (one thermal vector or rows of them) with every ``baseline.delta_*`` value moved
    ``band_k`` towards 0 (and those within ``band_k`` of it set to 0); the others unchanged.

    >>> v = np.zeros(len(THERMAL_VECTOR_NAMES), np.float32)
    >>> body, de = THERMAL_VECTOR_NAMES.index("baseline.delta_body_mean"), THERMAL_VECTOR_NAMES.index("baseline.delta_de_max")
    >>> v[body], v[de] = 2.5, -10.0
    >>> out = dead_band(v, 3.0); float(out[body]), float(out[de])
    (0.0, -7.0)
    """
    out = np.array(vector, copy=True)
    delta = out[..., _DELTA_COLUMNS]
    out[..., _DELTA_COLUMNS] = np.sign(delta) * np.maximum(np.abs(delta) - band_k, 0.0)
    return out


@dataclass(frozen=True)
class ThermalReference:
    """One healthy frame of a machine in °C, the region boxes it is read in and its ambient (°C)."""

    frame_c: np.ndarray
    boxes: Mapping[str, tuple[int, int, int, int]]
    fit_status: str
    ambient_c: float


def reference_frame(frame: np.ndarray, asset: object = None,
                    frame_meta: FrameMeta | Mapping | None = None) -> ThermalReference:
    """A healthy frame (any unit the asset's ``frame`` metadata or the value range names), with
    the region boxes the pipeline's fitting gives it (given, registered or proposed)."""
    from pipeline.features.asset_profile import as_profile

    meta = frame_meta if frame_meta is not None else as_profile(asset).frame
    frame_c = frame_to_celsius(frame, meta)
    _, fit = thermal_vector_fit(frame_c, asset, None, frame_meta=_CELSIUS)
    return ThermalReference(frame_c=frame_c, boxes=dict(fit.boxes), fit_status=fit.status,
                            ambient_c=ambient_estimate(frame_c, fit.boxes))


def vector_against_references(frame_c: np.ndarray, asset: object, references: Sequence[ThermalReference],
                              band_k: float = REFERENCE_DEAD_BAND_K, rise_ratio: float | None = None
                              ) -> tuple[np.ndarray, RegionFit]:
    """The thermal vector of a frame in °C read against healthy references: the baseline values
    averaged over the references (each read in its own boxes, brought to the frame's ambient; the
    changes within ``band_k`` read as none: :func:`dead_band`), the others the frame's own. Without
    references, the frame's vector without a baseline.

    ``rise_ratio``: the motor body's rise at this frame's operating point over its rise at the
    references' (:func:`pipeline.features.thermal_load.body_rise_ratio`); the parts of
    :data:`~pipeline.features.thermal_regions.LOAD_SCALED_REGIONS` of each reference are read with their rise
    over its ambient times it, as the reference would have shown them at this frame's load.

    >>> frame = np.full((60, 80), 22.0, np.float32); frame[20:40, 20:50] = 32.0   # body +10 K
    >>> asset = {"asset_id": "M", "regions": {"motor_body": [20, 20, 50, 40]}, "frame": {"unit": "celsius"}}
    >>> ref = reference_frame(frame, asset)                     # the same healthy body, at another load
    >>> i = THERMAL_VECTOR_NAMES.index("baseline.delta_body_mean")
    >>> [round(float(vector_against_references(frame, asset, [ref], 0.0, k)[0][i]), 1) for k in (None, 1.0, 0.6)]
    [0.0, 0.0, 4.0]
    """
    vector, fit = thermal_vector_fit(frame_c, asset, None, frame_meta=_CELSIUS)
    if not references:
        return vector, fit
    ambient = ambient_estimate(frame_c, fit.boxes)
    against = [thermal_vector_fit(frame_c, asset, ref.frame_c + np.float32(ambient - ref.ambient_c),
                                  frame_meta=_CELSIUS, baseline_boxes=ref.boxes, baseline_rise_ratio=rise_ratio)[0]
               for ref in references]
    out = vector.copy()
    out[_BASELINE_COLUMNS] = np.mean(np.stack(against)[:, _BASELINE_COLUMNS], axis=0)
    return dead_band(out, band_k), fit
