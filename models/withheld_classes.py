"""Classes one model input cannot show: what a prediction withholds, and how a reader honours it.

A modality's visible classes (``fusion.json`` ``visible``) say what its model is built to see at
all. Some of them need context a given input may lack. Audio names ``imbalance`` from the clip's
shaft-harmonic levels *against the machine's learned healthy levels* (features v4): without that
baseline (``baseline.available`` 0: before the job has learnt it, or a single file in
``linewatch inspect`` without ``--healthy-audio``) one clip finds 0.35-0.41 of the imbalances and
calls healthy, tone-dominated machines of other generators imbalanced (docs/models.md, "Audio
without a baseline withholds imbalance"). Such a prediction **withholds** ``imbalance``. The PLC
model names a class only from the tag that shows it: cooling failure from the winding temperature,
imbalance from the vibration, cavitation from the pressure; a machine whose historian lacks that
tag (``missing.*`` 1: a fan without a pressure transmitter) withholds the class. Audio withholds
``bearing_wear`` on a **reciprocating** machine (the message's ``stats["reciprocating"]``, from
``assets.json``: :attr:`pipeline.features.asset_profile.AssetProfile.reciprocating`): its valves or
crank knock in step with the shaft and ring the structure where bearing impacts ring, so one clip
calls its healthy running bearing wear (docs/models.md, "Audio: reciprocating machines withhold
bearing wear"). Audio recorded **below 16 kHz** (``stats["band_limited"]``) withholds bearing wear
and cavitation: such a clip holds nothing above half its rate, where they ring, and read so the
model calls nearly every worn bearing and cavitating pump normal (docs/models.md, "Audio recorded
below 16 kHz"). Audio withholds ``bearing_wear`` where the bearing's lowest fault frequency at the
clip's speed lies **above the envelope spectrum** it reads (``stats["bearing_orders_above_envelope"]``,
:func:`pipeline.features.audio_physics.bearing_orders_above_envelope`: a motor spindle at 100-400 Hz),
where no defect line can show (docs/models.md, "Audio: a bearing too fast for the envelope spectrum").
Thermal withholds every fault it names on a frame read through **proposed**
region boxes (``stats["regions_proposed"]``: ``assets.json`` gives the machine no ``regions``):
read in boxes placed by a guess at the layout, healthy frames are called faulty at 5-43 % (docs/
models.md, "Thermal: no fault named on proposed boxes"); the boxes are reported for the user to
check and copy into ``assets.json``. One fault is named there all the same (:data:`STATS_RELEASE`):
electrical overheating, where the proposed terminal box holds a hot spot that stands out of the
box by at least :data:`PROPOSED_TERMINAL_EXCESS` x the motor body's rise (+2 K;
``ratio.terminal_excess_over_body``): a loose lug's spot, which a box a few pixels off still holds, and
which no healthy frame of our fleets reached (a hot pipe crossing the proposed box can; docs/models.md,
"Thermal: an unmistakable hot connection on proposed boxes"); so is cooling failure where the drive end of
the proposed boxes was declared or read from the machine's shape and the motor body is clearly warmer at its
fan end (:data:`STATS_RELEASE`, :func:`models.ruled_out.fan_end_warmer`; docs/models.md, "Thermal: a body
warmer at its fan end, on fitted boxes"). Thermal withholds ``bearing_wear`` where a bearing housing's box
is narrower than the **measurement spot**, 3 pixels (``stats["bearing_below_spot"]``,
:mod:`pipeline.features.measurement_spot`: an 80 x 60 camera's bearing hub of 1-2 pixels reads a blend of
the housing and its surroundings; docs/models.md, "Thermal: bearing housings below the measurement
spot"). Thermal withholds ``electrical_overheating`` where something hot runs **through the terminal box**
and on past it on two opposite sides (``stats["terminal_box_crossed"]``,
:mod:`pipeline.features.terminal_crossing`: a pipe or a cable run behind the machine, which reads inside the
box as a loose lug's hot spot does; docs/models.md, "Thermal: a hot line through the terminal box"). The
PLC model withholds every fault on a window in which the
machine stood still for a while or had started less than ``flink.plc_run_up_s`` (20 s) before
(``stats["not_running"]``, from the run-state tag: a run-down or run-up is not an operating point
it learnt; :mod:`pipeline.features.plc_running`). The PLC model withholds ``imbalance`` on a
**reciprocating** machine whose normal vibration level is not known (``stats["reciprocating_level_
unknown"]``: no ``vibration_normal_mm_s`` in ``assets.json``, none learnt by the job or given with
``inspect --healthy-plc``): a piston compressor runs at 4-8 mm/s when healthy (ISO 10816-6), above
every healthy machine the model learnt from, and one window of it reads as imbalance (docs/models.md,
"PLC: a reciprocating machine withholds imbalance until its level is known").
A withheld class:

* its probability is dropped and the rest renormalised, as for a class the modality cannot see at
  all (``fusion.json`` ``visible``): :func:`drop_withheld`;
* the fusion reads the modality as neutral on it: its term for the withheld class equals its
  term for ``normal``, so it neither raises nor vetoes what the other modalities say
  (:func:`models.fusion.fuse`, :func:`models.fusion.fit.fuse_arrays`).

>>> import numpy as np
>>> from pipeline.features.audio_physics import AUDIO_VECTOR_NAMES, BAND_LIMITED_STAT
>>> x = np.zeros(len(AUDIO_VECTOR_NAMES), np.float32)
>>> withheld_classes("audio", x), withheld_classes("plc", np.zeros(3, np.float32))
(('imbalance',), ())
>>> x[AUDIO_VECTOR_NAMES.index("baseline.available")] = 1.0
>>> withheld_classes("audio", x)
()
>>> from pipeline.features.plc_physics import PLC_VECTOR_NAMES
>>> p = np.zeros(len(PLC_VECTOR_NAMES), np.float32); p[PLC_VECTOR_NAMES.index("missing.pressure")] = 1.0
>>> withheld_classes("plc", p)
('cavitation',)
>>> withheld_classes("audio", x, {"reciprocating": 1.0})
('bearing_wear',)
>>> withheld_classes("audio", x, {"reciprocating": 0.0, "band_limited": 1.0})
('bearing_wear', 'cavitation')
>>> withheld_classes("audio", x, {"bearing_orders_above_envelope": 1.0})
('bearing_wear',)
>>> withheld_classes("thermal", np.zeros(3, np.float32), {"regions_proposed": 1.0, "regions_registered": 0.0})
('bearing_wear', 'electrical_overheating', 'cooling_failure')
>>> from pipeline.features.thermal_regions import THERMAL_VECTOR_NAMES
>>> t = np.zeros(len(THERMAL_VECTOR_NAMES), np.float32)
>>> t[THERMAL_VECTOR_NAMES.index("ratio.terminal_excess_over_body")] = 1.2  # a lug far hotter than its box
>>> withheld_classes("thermal", t, {"regions_proposed": 1.0})
('bearing_wear', 'cooling_failure')
>>> withheld_classes("thermal", t, {"regions_proposed": 0.0})
()
>>> t[THERMAL_VECTOR_NAMES.index("motor_body.mean_rise")] = 30.0          # the body 5 K warmer at its fan end
>>> withheld_classes("thermal", t, {"regions_proposed": 1.0, "regions_proposed_ends_known": 1.0, "body_mid_axial_k": -5.0})
('bearing_wear',)
>>> withheld_classes("thermal", t, {"regions_proposed": 1.0, "terminal_box_crossed": 1.0})  # the hot spot is a pipe's
('bearing_wear', 'cooling_failure', 'electrical_overheating')
>>> withheld_classes("plc", np.zeros(3, np.float32), {"reciprocating_level_unknown": 1.0})
('imbalance',)
>>> withheld_classes("plc", p, {"not_running": 1.0})
('cavitation', 'bearing_wear', 'imbalance', 'electrical_overheating', 'cooling_failure')
>>> drop_withheld({"normal": 0.2, "imbalance": 0.6, "bearing_wear": 0.2}, ("imbalance",),
...               ("normal", "bearing_wear", "imbalance"))
{'normal': 0.5, 'bearing_wear': 0.5, 'imbalance': 0.0}
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence

import numpy as np

from models.ruled_out import fan_end_warmer
from pipeline.features.asset_profile import RECIPROCATING_LEVEL_UNKNOWN_STAT, RECIPROCATING_STAT
from pipeline.features.audio_physics import AUDIO_VECTOR_NAMES, BAND_LIMITED_STAT, ORDERS_ABOVE_ENVELOPE_STAT
from pipeline.features.measurement_spot import BEARING_BELOW_SPOT_STAT
from pipeline.features.plc_physics import PLC_VECTOR_NAMES
from pipeline.features.plc_running import NOT_RUNNING_STAT
from pipeline.features.terminal_crossing import TERMINAL_CROSSED_STAT
from pipeline.features.thermal_regions import THERMAL_VECTOR_NAMES

#: ``{modality: (input width, {class: (index of an input value, True: the class needs it >= 0.5 /
#: False: the class is withheld when it is >= 0.5)})}``: audio names imbalance only with
#: ``baseline.available`` (the machine's learned healthy sound); the PLC model withholds a class
#: whose tag the machine's historian lacks.
REQUIRES: dict[str, tuple[int, dict[str, tuple[int, bool]]]] = {
    "audio": (len(AUDIO_VECTOR_NAMES), {"imbalance": (AUDIO_VECTOR_NAMES.index("baseline.available"), True)}),
    "plc": (len(PLC_VECTOR_NAMES), {"cooling_failure": (PLC_VECTOR_NAMES.index("missing.winding_temp"), False),
                                    "imbalance": (PLC_VECTOR_NAMES.index("missing.vibration"), False),
                                    "cavitation": (PLC_VECTOR_NAMES.index("missing.pressure"), False)}),
}


#: ``{modality: {stats key: classes withheld when the features message's stats value is >= 0.5}}``:
#: what is known beside the model input: audio of a reciprocating machine (its knocks read as bearing
#: wear), recorded below 16 kHz (no band where bearings and cavitation ring) or of a machine so fast that
#: its bearing's fault frequencies lie above the envelope spectrum the model reads, a thermal frame read
#: through proposed region boxes, whose bearing boxes are narrower than the camera's measurement spot or whose
#: terminal box a hot line runs through, a PLC
#: window in which the machine stood still or ran up, or of a
#: reciprocating machine whose normal vibration is not known
#: (``pipeline.features.messages``, ``pipeline.handlers.plc``).
STATS_WITHHOLD: dict[str, dict[str, tuple[str, ...]]] = {
    "audio": {RECIPROCATING_STAT: ("bearing_wear",), BAND_LIMITED_STAT: ("bearing_wear", "cavitation"),
              ORDERS_ABOVE_ENVELOPE_STAT: ("bearing_wear",)},
    "thermal": {"regions_proposed": ("bearing_wear", "electrical_overheating", "cooling_failure"),
                BEARING_BELOW_SPOT_STAT: ("bearing_wear",), TERMINAL_CROSSED_STAT: ("electrical_overheating",)},
    "plc": {NOT_RUNNING_STAT: ("bearing_wear", "imbalance", "cavitation", "electrical_overheating", "cooling_failure"),
            RECIPROCATING_LEVEL_UNKNOWN_STAT: ("imbalance",)},
}


#: On a frame read through proposed boxes, the proposed terminal box's hot spot over the box's own
#: level, as a share of the motor body's rise over ambient + 2 K (``ratio.terminal_excess_over_body``),
#: from which thermal still names electrical overheating. Chosen on two fleets of our simulator
#: (seeds 5151 and 3102, 400 healthy frames read through proposed boxes: none above 0.59; at 0.6 no
#: healthy frame and no frame of another fault is called electrical overheating, and 0.41 / 0.47 of
#: the electrical overheatings past moderate are), checked on a third and on the other generator's
#: fleets (docs/models.md, "Thermal: an unmistakable hot connection on proposed boxes").
PROPOSED_TERMINAL_EXCESS = 0.6

_TERMINAL_EXCESS = THERMAL_VECTOR_NAMES.index("ratio.terminal_excess_over_body")


def hot_connection(x: np.ndarray, stats: Mapping[str, float] | None = None) -> bool:
    """Whether a thermal frame read through proposed boxes still shows an unmistakable hot connection:
    ``ratio.terminal_excess_over_body`` >= :data:`PROPOSED_TERMINAL_EXCESS` (an input of another width
    shows nothing)."""
    return x.shape[-1] == len(THERMAL_VECTOR_NAMES) and float(x[_TERMINAL_EXCESS]) >= PROPOSED_TERMINAL_EXCESS


#: ``{modality: {stats key: {class: rule}}}``: a class that a :data:`STATS_WITHHOLD` flag withholds and
#: that the input and its statistics still show unmistakably, where ``rule(x, stats)`` is true: on
#: proposed boxes a hot connection names electrical overheating (:func:`hot_connection`), and a motor body
#: clearly warmer at its fan end, where the drive end is known, cooling failure
#: (:func:`models.ruled_out.fan_end_warmer`).
STATS_RELEASE: dict[str, dict[str, dict[str, Callable[[np.ndarray, Mapping[str, float] | None], bool]]]] = {
    "thermal": {"regions_proposed": {"electrical_overheating": hot_connection, "cooling_failure": fan_end_warmer}},
}


def withheld_classes(modality: str, x: np.ndarray, stats: Mapping[str, float] | None = None) -> tuple[str, ...]:
    """The classes ``x`` (one model input of ``modality``, no batch axis) cannot show; ``stats``: the
    features message's statistics (:data:`STATS_WITHHOLD`, less what :data:`STATS_RELEASE` finds)."""
    width, needs = REQUIRES.get(modality, (-1, {}))
    out = [cls for cls, (i, needed) in needs.items() if (float(x[i]) < 0.5) == needed] if x.shape[-1] == width else []
    for key, classes in STATS_WITHHOLD.get(modality, {}).items():
        if float((stats or {}).get(key, 0.0)) >= 0.5:
            shown = STATS_RELEASE.get(modality, {}).get(key, {})
            out += [c for c in classes if c not in out and not (c in shown and shown[c](x, stats))]
    return tuple(out)


def proposed_hot_connection_note(x: np.ndarray) -> str:
    """What ``inspect`` tells a user whose frame, read through proposed boxes, does not withhold
    electrical overheating (:data:`STATS_RELEASE`): the hot spot's size, that the model decides, and
    where to check it.

    >>> t = np.zeros(len(THERMAL_VECTOR_NAMES), np.float32)
    >>> t[THERMAL_VECTOR_NAMES.index("terminal_box.hotspot_excess")] = 24.0
    >>> t[THERMAL_VECTOR_NAMES.index("ratio.terminal_excess_over_body")] = 1.2
    >>> proposed_hot_connection_note(t)[:74]
    'the proposed terminal box holds a hot spot 24.0 K above the box (1.20 x th'
    """
    excess = float(x[THERMAL_VECTOR_NAMES.index("terminal_box.hotspot_excess")])
    ratio = float(x[THERMAL_VECTOR_NAMES.index("ratio.terminal_excess_over_body")])
    return (f"the proposed terminal box holds a hot spot {excess:.1f} K above the box ({ratio:.2f} x the motor "
            f"body's rise + 2 K, from {PROPOSED_TERMINAL_EXCESS}): thermal does not withhold electrical overheating "
            "on this frame and names it where its model finds it likelier than normal (the class above says which); "
            "check where the hot spot is on the frame and give the machine's regions")


def withheld_rows(modality: str, x: np.ndarray, classes: Sequence[str]) -> np.ndarray:
    """(N, C) bool: which of ``classes`` each row of ``x`` (N, D) withholds."""
    out = np.zeros((x.shape[0], len(classes)), bool)
    width, needs = REQUIRES.get(modality, (-1, {}))
    if x.shape[-1] == width:
        for cls, (i, needed) in needs.items():
            if cls in classes:
                out[:, list(classes).index(cls)] = (x[:, i] < 0.5) == needed
    return out


def drop_withheld(probabilities: Mapping[str, float], withheld: Collection[str],
                  classes: Sequence[str]) -> dict[str, float]:
    """``probabilities`` without the ``withheld`` classes, renormalised over the rest (all on
    ``classes[0]`` when nothing is left)."""
    out = {c: (0.0 if c in withheld and c != classes[0] else max(float(probabilities.get(c, 0.0)), 0.0))
           for c in classes}
    total = sum(out.values())
    if total <= 0.0:
        return {c: float(c == classes[0]) for c in classes}
    return {c: v / total for c, v in out.items()}


def drop_withheld_rows(p: np.ndarray, withheld: np.ndarray) -> np.ndarray:
    """:func:`drop_withheld` for (N, C) arrays (class 0 is ``normal``, never withheld)."""
    q = np.where(withheld, 0.0, np.maximum(p, 0.0))
    q[:, 0] = np.maximum(p[:, 0], 0.0)
    total = q.sum(axis=1, keepdims=True)
    empty = total[:, 0] <= 0.0
    q[empty, 0], total[empty] = 1.0, 1.0
    return q / total
