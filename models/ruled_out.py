"""What an input rules out on physics alone: a motor body warmer at its fan end, or a shaft tone far
over the machine's own healthy level, is not a healthy machine.

A totally enclosed fan-cooled motor is coolest at its fan end while its fan blows
(:mod:`pipeline.features.body_axial`). A frame whose motor body, read in the middle half of a box the
user gave and the frame confirmed (not registered, not proposed), is warmer at the fan end than at
the drive end rules ``normal`` out: thermal names the fault its model finds likeliest among the
rest (in practice cooling failure). The model weighs that reversal against everything else in the
frame and, where the machine runs hot anyway, calls such a frame normal; on the other generator's
fleets it did so for 12 of 57 and 21 of 41 cooling failures at severity 0.5 or more read through
given boxes, while none of its 585 healthy frames read so had a body warmer at its fan end, nor any of
our fleets' healthy frames read through exact, inset, rotated or low-resolution boxes; through boxes
drawn 10-25 % off the parts and kept as given, 1 of 13 and 1 of 22 until the body box was cut back at
its housings (session 35), none since (docs/models.md, "Thermal: a motor warmer at its fan end is not
healthy").

Since session 35 a frame read through boxes fitted to the frame rules ``normal`` out too, by a
clearer margin (:data:`FITTED_FAN_END_WARMER_RATIO`, within :data:`BODY_REVERSAL_LIMIT`, on a body at
least :data:`FITTED_MIN_BODY_RISE_K` above ambient): given boxes registered onto the machine, and
**proposed** boxes where the drive end was declared (``fan_side``) or read from the machine's shape;
there thermal names cooling failure although it names no other fault on proposed boxes but a hot
connection (:data:`models.withheld_classes.STATS_RELEASE`; docs/models.md, "Thermal: a body warmer at
its fan end, on fitted boxes").

Since session 38 an **audio** clip rules ``normal`` out where it is read against the machine's own
healthy levels (learnt by the job, or ``inspect --healthy-audio``), the machine is not on a drive, and
its 1x tone stands :data:`AUDIO_1X_RISE_DB` or more over them (:func:`raised_one_x`): audio names
the likeliest fault (in practice imbalance). The model reads that rise beside everything else in the
clip; on the other generator's fleet 1 it called 12 of 60 imbalances on fixed-speed machines normal
whose 1x had risen 6.4-10.8 dB over the commissioning recording's, where no healthy recording of that
fleet rose more than 5.7 dB (docs/models.md, "Audio: a 1x risen over the machine's own healthy level").

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
>>> registered = {"regions_registered": 1.0}   # boxes moved onto the machine: a clearer margin
>>> ruled_out("thermal", x, {**registered, "body_mid_axial_k": -3.0}), ruled_out("thermal", x, {**registered, "body_mid_axial_k": -5.0})
((), ('normal',))
>>> x[THERMAL_VECTOR_NAMES.index("motor_body.mean_rise")] = 10.0           # a cool body: its fitted box may lie off it
>>> ruled_out("thermal", x, {**registered, "body_mid_axial_k": -5.0}), ruled_out("audio", x, {})
((), ())
>>> x[THERMAL_VECTOR_NAMES.index("motor_body.mean_rise")] = 40.0
>>> proposed = {"regions_proposed": 1.0, "regions_proposed_ends_known": 1.0}
>>> ruled_out("thermal", x, {**proposed, "body_mid_axial_k": -3.0}), ruled_out("thermal", x, {**proposed, "body_mid_axial_k": -5.0})
((), ('normal',))
>>> ruled_out("thermal", x, {**proposed, "body_mid_axial_k": -5.0, "regions_proposed_ends_known": 0.0})
()
>>> ruled_out("thermal", x, {**proposed, "body_mid_axial_k": -90.0})   # steeper than a body can be: not on it
()
>>> rule_out({"normal": 0.5, "bearing_wear": 0.1, "cooling_failure": 0.4}, ("normal",),
...          ("normal", "bearing_wear", "cooling_failure"))
{'normal': 0.0, 'bearing_wear': 0.2, 'cooling_failure': 0.8}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from pipeline.features.audio_physics import AUDIO_VECTOR_NAMES
from pipeline.features.body_axial import MID_AXIAL_STAT
from pipeline.features.thermal_fit import PROPOSED_ENDS_KNOWN_STAT
from pipeline.features.thermal_regions import THERMAL_VECTOR_NAMES

#: The body's drive end minus its fan end (``body_mid_axial_k``) over the body's mean rise + 2 K,
#: below which a frame read through given boxes rules ``normal`` out: a body warmer at its fan end.
FAN_END_WARMER_RATIO = 0.0
#: The same on a frame read through boxes fitted to the frame: proposed boxes whose drive end was
#: declared or read from the machine's shape (``regions_proposed_ends_known``), or given boxes registered
#: onto the machine: a clearer reversal, a tenth of the body's rise. Chosen on two fleets of our
#: simulator (seeds 5151 and 3102, 400 healthy frames through proposed boxes: at 0 two healthy frames
#: ruled on, at -0.05 one, at -0.1 none), checked on a third and on the other generator's fleets
#: (docs/models.md, "Thermal: a body warmer at its fan end, on fitted boxes").
FITTED_FAN_END_WARMER_RATIO = -0.1
#: On fitted boxes, the least rise of the motor body over ambient (K, ``motor_body.mean_rise``) at which
#: a reversal is read: a box fitted partly off a cool body reads the background's edge as a gradient
#: of several kelvin. Chosen on the same two fleets among 0 / 10 / 12 / 15 / 18 K as the lowest at which
#: no healthy frame and no frame of another fault read through registered boxes (cases ``c_perturbed``,
#: ``e_camera_shift`` of ``bench_thermal_layouts.py``) was ruled on: their healthy frames that read a
#: reversal ran 2.8-14.6 K above ambient, the cooling failures that did 11-95 K.
FITTED_MIN_BODY_RISE_K = 15.0
#: A body whose drive end stays above ambient cannot fall from its fan end to its drive end by more than
#: twice its mean rise (a straight profile: mean = drive end - slope / 2); a fitted body box that reads
#: a steeper reversal holds something else (background and the edge of a hot part: five frames of
#: healthy, imbalanced and cavitating machines of seed 4711 read through proposed boxes -2.1 ... -4.7
#: so, with bodies 4-10 K above ambient; its cooling failures read -0.15 ... -0.98) and rules nothing.
BODY_REVERSAL_LIMIT = -2.0
_BODY_RISE = THERMAL_VECTOR_NAMES.index("motor_body.mean_rise")


def fan_end_warmer(x: np.ndarray, stats: Mapping[str, float] | None) -> bool:
    """Whether a thermal frame (``x``: its model input; ``stats``: its message's statistics) shows a
    motor body warmer at its fan end, read where its ends are sure: through given boxes (not moved),
    below :data:`FAN_END_WARMER_RATIO`; through boxes fitted to the frame (registered, or proposed with
    the drive end not taken from the warmer end), below :data:`FITTED_FAN_END_WARMER_RATIO`, not below
    :data:`BODY_REVERSAL_LIMIT`, on a body at least :data:`FITTED_MIN_BODY_RISE_K` above ambient."""
    stats = stats or {}
    if x.shape[-1] != len(THERMAL_VECTOR_NAMES) or MID_AXIAL_STAT not in stats:
        return False
    rise = float(x[_BODY_RISE])
    ratio = float(stats[MID_AXIAL_STAT]) / (abs(rise) + 2.0)
    proposed = float(stats.get("regions_proposed", 0.0)) >= 0.5
    if not proposed and float(stats.get("regions_registered", 0.0)) < 0.5:
        return ratio < FAN_END_WARMER_RATIO  # boxes as given
    if proposed and float(stats.get(PROPOSED_ENDS_KNOWN_STAT, 0.0)) < 0.5:
        return False  # the drive end was taken to be the warmer end: no reversal can show
    return BODY_REVERSAL_LIMIT <= ratio < FITTED_FAN_END_WARMER_RATIO and rise >= FITTED_MIN_BODY_RISE_K


#: How far (dB) a clip's 1x tone may rise over the machine's own healthy level
#: (``baseline.shaft.1x.delta_db``: the job's learnt levels, or ``inspect --healthy-audio``) before
#: audio rules ``normal`` out: an out-of-balance rotor's 1x force is its unbalance (mass x eccentricity)
#: times the square of its speed, so at a fixed speed the 1x grows with the unbalance alone; healthy
#: fixed-speed clips of our fleets rose at most 6.2 dB over their levels (one healthy pump of the other
#: generator's seed-7 fleet 7.6 dB, one fan there 9.0 dB: docs/models.md). Chosen on two fleets
#: of our simulator (``bench/bench_audio_imbalance_rise.py``, seeds 5151 and 3102, each clip read against
#: the job's learnt levels and against one commissioning recording) as the smallest 0.5 dB step at which
#: the rule changes no verdict but of an imbalance or of a cooling failure by a broken fan blade (a rotor
#: imbalance itself); checked on the other generator's fleets (docs/models.md, "Audio: a 1x risen over
#: the machine's own healthy level").
AUDIO_1X_RISE_DB = 7.5
_AUDIO_WIDTH = len(AUDIO_VECTOR_NAMES)
_ONE_X_RISE = AUDIO_VECTOR_NAMES.index("baseline.shaft.1x.delta_db")
_AUDIO_BASELINE = AUDIO_VECTOR_NAMES.index("baseline.available")
_ON_A_DRIVE = AUDIO_VECTOR_NAMES.index("flag.vfd")


def raised_one_x(x: np.ndarray, rise_db: float = AUDIO_1X_RISE_DB) -> bool:
    """Whether an audio clip (``x``: its model input) of a machine not on a drive (``flag.vfd`` 0) is
    read against the machine's healthy levels (``baseline.available``: learnt, and covering the clip's
    speed) and its 1x tone stands at least ``rise_db`` over them. On a drive the 1x level over the clip's
    own moves with the speed (structural resonances pass by, the other sounds grow at other rates), and
    levels learnt over several speeds are a median of them: the rise is not read there."""
    return (x.shape[-1] == _AUDIO_WIDTH and float(x[_AUDIO_BASELINE]) >= 0.5 and float(x[_ON_A_DRIVE]) < 0.5
            and float(x[_ONE_X_RISE]) >= rise_db)


def ruled_out(modality: str, x: np.ndarray, stats: Mapping[str, float] | None = None) -> tuple[str, ...]:
    """The classes the features message rules out on physics (``x``: its model input, no batch axis;
    ``stats``: its statistics): ``normal`` on a thermal frame warmer at its fan end
    (:func:`fan_end_warmer`) and on an audio clip whose 1x rose far over the machine's healthy level
    (:func:`raised_one_x`)."""
    if modality == "thermal" and fan_end_warmer(x, stats):
        return ("normal",)
    if modality == "audio" and raised_one_x(x):
        return ("normal",)
    return ()


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
            "and the fins (and " + ("that fan_side in assets.json, or the proposed boxes, put the fan end where it is)"
                                    if float(stats.get("regions_proposed", 0.0)) >= 0.5 else
                                    "that the regions in assets.json have the fan end on the right side)"))


def raised_one_x_note(x: np.ndarray) -> str:
    """The warning an audio clip that rules ``normal`` out gets in ``linewatch inspect``.

    >>> x = np.zeros(len(AUDIO_VECTOR_NAMES), np.float32)
    >>> x[_ONE_X_RISE], x[_AUDIO_BASELINE] = 11.5, 1.0
    >>> raised_one_x_note(x)[:62]
    "the shaft's 1x tone stands 11.5 dB over the machine's healthy "
    """
    return (f"the shaft's 1x tone stands {float(x[_ONE_X_RISE]):.1f} dB over the machine's healthy level (from "
            f"{AUDIO_1X_RISE_DB:.1f} dB audio does not call a clip healthy): check the rotor's balance (fan or "
            "impeller deposits, a lost balance weight, a broken blade) and the coupling's alignment")


def ruled_out_note(modality: str, x: np.ndarray, stats: Mapping[str, float] | None) -> str:
    """What ``linewatch inspect`` tells a user whose file rules ``normal`` out (:func:`ruled_out`)."""
    return raised_one_x_note(x) if modality == "audio" else fan_end_warmer_note(stats or {}, x)

