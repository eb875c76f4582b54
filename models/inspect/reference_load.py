"""At which load a healthy reference frame (``--healthy-thermal``) is read: the frame's own, where the PLC
exports of both times say it (:mod:`pipeline.features.thermal_load`).

A reference is a healthy frame of the machine, often from its commissioning survey, and a frame scored
later shows the machine at whatever load it runs then. A motor body warms with the square of its current,
so against a reference at another load a healthy body reads warmer or cooler by as much as a cooling
failure changes it. Where the machine's PLC export of the scored frame's visit and its healthy export
(``--healthy-plc``) both give a running current (and ``assets.json`` the rated current), the reference's
motor body and terminal box are read as they would have been at the frame's operating point; where the two
operating points are too far apart for that (:data:`~pipeline.features.thermal_load.RISE_RATIO_RANGE`),
the frame is read without the reference.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pipeline.features.asset_profile import AssetProfile
from pipeline.features.thermal_load import (
    RISE_RATIO_RANGE,
    OperatingPoint,
    body_rise_ratio,
    usable_rise_ratio,
)

#: PLC files of one machine in one call whose currents differ by more than this (relative to their median)
#: were made at different loads, and which of them a frame was taken at is not known (the live job reads a
#: learned reference at currents within 15 % of a frame's: ``flink.thermal_reference_current_tolerance``).
SAME_LOAD_TOLERANCE = 0.15
#: A ratio this close to 1 is still applied, without a warning: the two loads were alike.
ALIKE_RATIO = 0.05


def common_point(points: Sequence[OperatingPoint]) -> OperatingPoint | None:
    """The operating point of a machine's PLC files in one call: their median where their currents agree
    within :data:`SAME_LOAD_TOLERANCE`, else None.

    >>> common_point([OperatingPoint(40.0, 1480.0), OperatingPoint(42.0, 1482.0)])
    OperatingPoint(current_a=41.0, speed_rpm=1481.0)
    >>> common_point([OperatingPoint(40.0), OperatingPoint(60.0)]) is None, common_point([]) is None
    (True, True)
    """
    if not points:
        return None
    current = float(np.median([p.current_a for p in points]))
    if any(abs(p.current_a - current) > SAME_LOAD_TOLERANCE * current for p in points):
        return None
    speeds = [p.speed_rpm for p in points if p.speed_rpm]
    return OperatingPoint(current, float(np.median(speeds)) if speeds else None)


@dataclass(frozen=True)
class ReferenceLoad:
    """How a frame reads its references: ``use`` them or not, at ``rise_ratio`` (None: as they are), and
    the line its file's warnings get (None: nothing to say)."""

    use: bool
    rise_ratio: float | None
    note: str | None


def reference_load(now: OperatingPoint | None, then: OperatingPoint | None, profile: AssetProfile
                   ) -> ReferenceLoad:
    """How a frame whose machine runs at ``now`` (its PLC file in the same call) reads healthy references
    taken at ``then`` (the machine's healthy export, ``--healthy-plc``).

    >>> motor = AssetProfile(rated_current_a=50.0)
    >>> r = reference_load(OperatingPoint(30.0), OperatingPoint(45.0), motor); r.use, round(r.rise_ratio, 3)
    (True, 0.575)
    >>> r = reference_load(OperatingPoint(15.0), OperatingPoint(45.0), motor); r.use, r.note[:50]
    (False, 'read without its healthy frame (--healthy-thermal)')
    >>> reference_load(None, OperatingPoint(45.0), motor)
    ReferenceLoad(use=True, rise_ratio=None, note=None)
    """
    if now is None or then is None:
        return ReferenceLoad(True, None, None)
    ratio = body_rise_ratio(now, then, profile)
    if ratio is None:
        return ReferenceLoad(True, None, None)
    if not usable_rise_ratio(ratio):
        return ReferenceLoad(False, ratio, (
            f"read without its healthy frame (--healthy-thermal): the machine ran at {now.describe()} here and at "
            f"{then.describe()} in its healthy PLC export (--healthy-plc), where its motor body rises x{ratio:.2f} as "
            f"far over the hall; a frame is read against one at another load only within "
            f"x{RISE_RATIO_RANGE[0]:g}-{RISE_RATIO_RANGE[1]:g} (give a healthy frame at a load nearer this one)"))
    if abs(ratio - 1.0) < ALIKE_RATIO:
        return ReferenceLoad(True, ratio, None)
    return ReferenceLoad(True, ratio, (
        f"its healthy frame read at this frame's load: the machine ran at {now.describe()} here and at "
        f"{then.describe()} in its healthy PLC export (--healthy-plc), so the healthy frame's motor body and terminal "
        f"box are read with their rise over the hall x{ratio:.2f} (copper losses grow with the square of the "
        "current; a self-ventilated motor on a drive cools less at low speed)"))
