"""How far a motor's body rises over its surroundings at one operating point compared with another: what
a healthy reference frame taken at another load would have shown at this frame's.

A motor's surface rises over the hall with the heat it sheds: its copper losses, which grow with the
square of the current, and the losses that do not (iron, friction, windage), over the cooling its fan
gives, which falls with the speed of a self-ventilated motor on a drive. The PLC reads the winding the same
way (:func:`pipeline.features.plc_baseline.winding_ratio`: ``0.2 + 0.8 (I / I_rated)^2``;
:func:`pipeline.features.plc_physics.ventilation_share`). So a healthy frame of the machine at 90 %
load read against a frame at 60 % load shows a body about 40 % cooler than the reference: a cooling
failure that raises the body's rise by half reads as no change, and a healthy frame at full load read
against one at 60 % as a cooling failure. Scaled by :func:`body_rise_ratio`, the reference's motor body
and terminal box are read as they would have been at this frame's operating point
(:func:`pipeline.features.thermal_reference.vector_against_references`).

The bearing housings, the coupling and the driven machine are not scaled: their heat is friction and
process, which follow the speed and the process rather than the current.

>>> from pipeline.features.asset_profile import AssetProfile
>>> motor = AssetProfile(rated_current_a=50.0)
>>> round(body_rise_ratio(OperatingPoint(30.0), OperatingPoint(45.0), motor), 3)   # 60 % current against 90 %
0.575
>>> body_rise_ratio(OperatingPoint(30.0), OperatingPoint(45.0), AssetProfile()) is None   # no rated current
True
>>> drive = AssetProfile(rated_current_a=50.0, nominal_rpm=1500.0, vfd=True)
>>> round(body_rise_ratio(OperatingPoint(45.0, 750.0), OperatingPoint(45.0, 1500.0), drive), 3)   # its fan at half speed
1.396
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pipeline.features.asset_profile import AssetProfile
from pipeline.features.plc_physics import load_heat, ventilation_share
from pipeline.features.plc_window import plc_feature_names

_NAMES = plc_feature_names()
_CURRENT, _SPEED, _RUN = (_NAMES.index(n) for n in ("motor_current_a.mean", "speed_rpm.mean", "run_state.mean"))

#: The operating points a reference is read at, as a rise ratio (:func:`body_rise_ratio`). Outside it the
#: reference was taken at another kind of running (half the heat, or twice it: a machine idling against one
#: at full load), where the two-term loss model is least sure, and the frame is read without it.
RISE_RATIO_RANGE = (0.5, 2.0)


@dataclass(frozen=True)
class OperatingPoint:
    """A motor's running current (A) and, where known, its shaft speed (rpm)."""

    current_a: float
    speed_rpm: float | None = None

    def describe(self) -> str:
        speed = f", {self.speed_rpm:.0f} rpm" if self.speed_rpm else ""
        return f"{self.current_a:.1f} A{speed}"


def operating_point(windows: Sequence[np.ndarray]) -> OperatingPoint | None:
    """The median current and speed over PLC windows (raw feature vectors,
    :func:`pipeline.features.plc_window.plc_feature_names`) in which the machine ran: a run state of at
    least one half where there is one, a current above zero; None without such a window.

    >>> w = np.full(len(_NAMES), np.nan); w[_CURRENT], w[_SPEED] = 40.0, 1480.0
    >>> operating_point([w, w * 1.1])
    OperatingPoint(current_a=42.0, speed_rpm=1554.0)
    >>> w[_RUN] = 0.0; operating_point([w]) is None
    True
    """
    rows = [np.asarray(w, dtype=np.float64) for w in windows]
    running = [w for w in rows if np.isfinite(w[_CURRENT]) and w[_CURRENT] > 0.0
               and not (np.isfinite(w[_RUN]) and w[_RUN] < 0.5)]
    if not running:
        return None
    speeds = [float(w[_SPEED]) for w in running if np.isfinite(w[_SPEED]) and w[_SPEED] > 0.0]
    return OperatingPoint(float(np.median([w[_CURRENT] for w in running])),
                          float(np.median(speeds)) if speeds else None)


def _heat_over_cooling(point: OperatingPoint, profile: AssetProfile) -> float:
    cooling = 1.0
    if point.speed_rpm and profile.nominal_rpm:
        cooling = ventilation_share(point.speed_rpm / profile.nominal_rpm, profile)
    return load_heat(point.current_a, float(profile.rated_current_a or 0.0)) / cooling


def body_rise_ratio(now: OperatingPoint, then: OperatingPoint, profile: AssetProfile) -> float | None:
    """The motor body's rise over the hall at ``now`` over its rise at ``then``, for the same healthy
    motor: the load heat (:func:`~pipeline.features.plc_physics.load_heat`) over the cooling
    (:func:`~pipeline.features.plc_physics.ventilation_share`) of each. None without the rated current
    (the loss model needs the current's share of it) or a current."""
    if not profile.rated_current_a or profile.rated_current_a <= 0.0 or now.current_a <= 0.0 or then.current_a <= 0.0:
        return None
    return _heat_over_cooling(now, profile) / _heat_over_cooling(then, profile)


def usable_rise_ratio(ratio: float | None) -> bool:
    """Whether a reference may be read at a frame's operating point with ``ratio``
    (:data:`RISE_RATIO_RANGE`)."""
    return ratio is not None and RISE_RATIO_RANGE[0] <= ratio <= RISE_RATIO_RANGE[1]
