"""What a frame rules out on physics alone: a motor body warmer at its fan end is not a healthy motor.

A totally enclosed fan-cooled motor is coolest at its fan end while its fan blows
(:mod:`pipeline.features.body_axial`). A frame whose motor body, read in the middle half of a box the
user gave and the frame confirmed (not registered, not proposed), is warmer at the fan end than at
the drive end rules ``normal`` out: thermal names the fault its model finds likeliest among the
rest (in practice cooling failure). The model weighs that reversal against everything else in the
frame and, where the machine runs hot anyway, calls such a frame normal; on the other generator's
fleets it did so for 12 of 57 and 21 of 41 cooling failures at severity 0.5 or more read through
given boxes, while none of its 585 healthy frames read so had a body warmer at its fan end, nor any of
our fleets' healthy frames read through exact, inset, rotated or low-resolution boxes; through boxes
drawn 10-25 % off the parts and kept as given, 1 of 13 and 1 of 22 (docs/models.md, "Thermal: a motor
warmer at its fan end is not healthy").

A ruled-out class:

* its probability is set to 0 and the rest renormalised (:func:`rule_out`): the prediction's label
  is the likeliest fault;
* the fusion then reads the modality as saying the machine is not healthy (its ``normal`` term sits
  at the probability floor), and its fault probabilities as they are.

>>> import numpy as np
>>> from pipeline.features.thermal_regions import THERMAL_VECTOR_NAMES
>>> x = np.zeros(len(THERMAL_VECTOR_NAMES), np.float32)
>>> x[THERMAL_VECTOR_NAMES.index("motor_body.mean_rise")] = 40.0
>>> ruled_out("thermal", x, {"body_mid_axial_k": -3.0}), ruled_out("thermal", x, {"body_mid_axial_k": 4.0})
(('normal',), ())
>>> ruled_out("thermal", x, {"body_mid_axial_k": -3.0, "regions_registered": 1.0}), ruled_out("audio", x, {})
((), ())
>>> rule_out({"normal": 0.5, "bearing_wear": 0.1, "cooling_failure": 0.4}, ("normal",),
...          ("normal", "bearing_wear", "cooling_failure"))
{'normal': 0.0, 'bearing_wear': 0.2, 'cooling_failure': 0.8}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from pipeline.features.body_axial import MID_AXIAL_STAT
from pipeline.features.thermal_regions import THERMAL_VECTOR_NAMES

#: The body's drive end minus its fan end (``body_mid_axial_k``) over the body's mean rise + 2 K,
#: below which a frame read through given boxes rules ``normal`` out: a body warmer at its fan end.
FAN_END_WARMER_RATIO = 0.0
_BODY_RISE = THERMAL_VECTOR_NAMES.index("motor_body.mean_rise")


def ruled_out(modality: str, x: np.ndarray, stats: Mapping[str, float] | None = None) -> tuple[str, ...]:
    """The classes the features message rules out on physics (``x``: its model input, no batch axis;
    ``stats``: its statistics)."""
    stats = stats or {}
    if modality != "thermal" or x.shape[-1] != len(THERMAL_VECTOR_NAMES) or MID_AXIAL_STAT not in stats:
        return ()
    if float(stats.get("regions_registered", 0.0)) >= 0.5 or float(stats.get("regions_proposed", 0.0)) >= 0.5:
        return ()  # boxes moved or guessed: which end is which, and where the body is, are less sure
    ratio = float(stats[MID_AXIAL_STAT]) / (abs(float(x[_BODY_RISE])) + 2.0)
    return ("normal",) if ratio < FAN_END_WARMER_RATIO else ()


def rule_out(probabilities: Mapping[str, float], ruled: Sequence[str], classes: Sequence[str]) -> dict[str, float]:
    """``probabilities`` with the ``ruled`` classes at 0 and the rest renormalised (unchanged where
    nothing would be left)."""
    kept = {c: (0.0 if c in ruled else max(float(probabilities.get(c, 0.0)), 0.0)) for c in classes}
    total = sum(kept.values())
    if not ruled or total <= 0:
        return {c: float(probabilities.get(c, 0.0)) for c in classes}
    return {c: v / total for c, v in kept.items()}


def fan_end_warmer_note(stats: Mapping[str, float], x: np.ndarray) -> str:
    """The warning a frame that rules ``normal`` out gets in ``linewatch inspect``."""
    return (f"the motor body is {-float(stats.get(MID_AXIAL_STAT, 0.0)):.1f} K warmer towards its fan end than towards "
            f"its drive end (body {float(x[_BODY_RISE]):.0f} K above ambient): a fan-cooled motor is coolest at its "
            "fan end while the fan blows, so thermal does not call this frame healthy; check the fan, the cowl "
            "and the fins (and that the regions in assets.json have the fan end on the right side)")
