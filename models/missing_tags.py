"""Inputs a reading cannot support, read at the model's healthy median: a PLC export without some tags
or whose historian rounds its temperatures, and a single audio recording's 1x tone level.

The PLC vector marks a tag the machine's historian lacks with ``missing.*`` = 1 and leaves that tag's
statistics at 0 (:mod:`pipeline.features.plc_physics`). The shipped PLC models learnt from machines
that report every tag, so a ``missing.pressure`` of 1 with a pressure ratio of 0 is nothing they have
seen: their output on it is a guess, which ``linewatch inspect`` flags as an extrapolation and
flattens in the fused verdict. A fan without a pressure transmitter, a small motor without a winding
RTD, a fixed-speed machine without a speed encoder are the rule on real lines, not the exception.

:class:`HealthyFill` gives the model what it knows instead: each missing tag's inputs
(:data:`TAG_INPUTS`) are set to the median of the model's own healthy reference windows (the
``normal`` rows of its ``reference.npz``, among machines on a drive or not as this one is), and the
``missing.*`` flag to 0. The model then reads the tags that are there, as it learnt them. What a
missing tag would show stays unsaid: the classes it shows are withheld
(:mod:`models.withheld_classes` reads the vector as the features job wrote it, before the fill).

>>> names = ("pressure.mean_over_nominal", "vib.mean_log", "missing.pressure", "flag.vfd")
>>> ref = np.array([[1.0, 0.2, 0, 0], [0.9, 0.4, 0, 0], [0.8, 0.3, 0, 1], [2.0, 2.0, 0, 0]], np.float32)
>>> fill = HealthyFill.from_reference(ref, np.array([0, 0, 0, 4]), names, min_group=1)
>>> fill.apply(np.array([0.0, 1.5, 1.0, 0.0], np.float32)).tolist()  # no pressure tag, fixed speed
[0.949999988079071, 1.5, 0.0, 0.0]
>>> fill.apply(np.array([0.0, 1.5, 1.0, 1.0], np.float32)).tolist()[0]  # on a drive: the drives' median
0.800000011920929
>>> fill.apply(np.array([0.7, 1.5, 0.0, 0.0], np.float32)).tolist()  # every tag there: unchanged
[0.699999988079071, 1.5, 0.0, 0.0]

**Temperatures a historian rounds.** A temperature's standard deviation over a window is its RTD's
noise: a bearing or a winding warms and cools over minutes, not seconds. The shipped PLC models
learnt from one simulated RTD noise, so they read that noise as evidence. A historian that rounds to
1 K, or stores a value only when it moves past a deadband, gives a standard deviation of about 0 (or,
rounding a reading that sits at a step, of half a step), and the model's output then moves with the
historian's settings (docs/models.md, "PLC: temperatures a historian rounds";
``bench/bench_plc_rounded_temps.py``). So:

- the bearing temperature's (:data:`NOISE_ONLY_INPUTS`) is always read at the healthy median: in what
  the model learnt it is the same for every class (the reference sample's per-class medians
  0.153-0.159 K), so no value of it is evidence;
- the winding temperature's (:data:`NOISE_INPUTS`) is read at the healthy median where it lies below
  half the least value of the healthy reference windows (:attr:`HealthyFill.noise_floor`): rounded
  away. Above that it stays as it is, since a winding that heats within the window raises it.

>>> names = ("temp.bearing_std", "temp.winding_std", "missing.winding_temp")
>>> ref = np.array([[0.15, 0.20, 0], [0.13, 0.18, 0], [0.17, 0.30, 0]], np.float32)
>>> fill = HealthyFill.from_reference(ref, np.array([0, 0, 0]), names, min_group=1)
>>> fill.noise_floor.astype(float).round(3).tolist()  # half the steadiest healthy RTD (0 where no noise input)
[0.065, 0.09, 0.0]
>>> fill.apply(np.array([0.0, 0.0, 0.0], np.float32)).astype(float).round(3).tolist()  # a historian rounded both away
[0.15, 0.2, 0.0]
>>> fill.apply(np.array([0.5, 0.6, 0.0], np.float32)).astype(float).round(3).tolist()  # the bearing's noise is never evidence
[0.15, 0.6, 0.0]
>>> [fill.steadied(np.array(x, np.float32)) for x in ([0.0, 0.0, 0.0], [0.5, 0.6, 0.0], [0.0, 0.0, 1.0])]
[('temp.bearing_std', 'temp.winding_std'), (), ('temp.bearing_std',)]

**A recording without the machine's healthy levels.** The shaft's 1x tone over a clip's broadband
sound (``shaft.1x.level_db``) depends on where the microphone stands and what else the machine and
the room sound with: the audio model's healthy reference clips lie at -15 ... +10 dB, the fleet
written blind (``bench/bench_blind_fleet.py``) has 540 of its 753 clips far below -29 dB. It is why
audio withholds imbalance without the machine's learned healthy levels (:mod:`models.withheld_classes`).
Where they are not there (``baseline.available`` 0: :data:`UNBASELINED_INPUTS`) it is read at the healthy median,
no evidence either way; against its own healthy levels (``baseline.*``) it stays as measured
(docs/models.md, "Audio: one recording's 1x level is no evidence").

>>> names = ("shaft.1x.level_db", "shaft.2x.level_db", "baseline.available")
>>> ref = np.array([[-3.0, -9.0, 1], [-5.0, -8.0, 1], [-4.0, -7.0, 0]], np.float32)
>>> fill = HealthyFill.from_reference(ref, np.array([0, 0, 0]), names, min_group=1)
>>> fill.apply(np.array([-40.0, -30.0, 0.0], np.float32)).tolist()  # one clip: its 1x read as a healthy one's
[-4.0, -30.0, 0.0]
>>> fill.apply(np.array([-40.0, -30.0, 1.0], np.float32)).tolist()  # against its healthy levels: as measured
[-40.0, -30.0, 1.0]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: The PLC inputs each tag feeds (``pipeline.features.plc_physics.PLC_VECTOR_NAMES``), by its flag.
TAG_INPUTS: dict[str, tuple[str, ...]] = {
    "missing.current": ("current.mean_over_rated", "current.std_over_rated", "current.max_over_rated",
                        "current.slope_over_rated"),
    "missing.speed": ("speed.mean_over_nominal", "speed.std_over_nominal", "speed.slope_over_nominal",
                      "pressure.affinity_ratio"),
    "missing.bearing_temp": ("temp.winding_minus_bearing", "temp.bearing_c_over_100", "temp.bearing_std",
                             "temp.bearing_slope_k_per_min"),
    "missing.winding_temp": ("temp.winding_minus_bearing", "temp.winding_c_over_100", "temp.winding_std",
                             "temp.winding_slope_k_per_min"),
    "missing.vibration": ("vib.mean_log", "vib.std_over_mean", "vib.max_over_mean", "vib.slope_over_mean"),
    "missing.pressure": ("pressure.mean_over_nominal", "pressure.std_over_mean", "pressure.max_over_mean",
                         "pressure.slope_over_nominal", "pressure.affinity_ratio"),
}
#: Inputs that are a transmitter's noise, by the ``missing.*`` flag of their tag: a temperature's standard
#: deviation over a window. Below :attr:`HealthyFill.noise_floor` (a historian that rounds or stores on a
#: change) they are read at the healthy median, and ``linewatch inspect`` says so.
NOISE_INPUTS: dict[str, str] = {"temp.bearing_std": "missing.bearing_temp", "temp.winding_std": "missing.winding_temp"}
#: Noise inputs that carry no class information in what the model learnt (the same distribution for every
#: class): always read at the healthy median.
NOISE_ONLY_INPUTS: tuple[str, ...] = ("temp.bearing_std",)
#: A noise input reads as rounded away below this share of the least value among the healthy reference
#: windows that have its tag.
NOISE_FLOOR_SHARE = 0.5
#: Inputs one recording cannot judge without the machine's own healthy levels, by the input that says
#: whether those levels are there: the shaft's 1x tone over the clip's broadband sound depends on where
#: the microphone stands and what else the machine and the room sound with (the healthy reference clips
#: at -15 ... +10 dB, the blind fleet's far below -29 dB on 540 of 753 clips), which is why audio withholds
#: imbalance without a baseline (:mod:`models.withheld_classes`). Where that input is below 0.5 they are
#: read at the healthy median: no evidence either way.
UNBASELINED_INPUTS: dict[str, str] = {"shaft.1x.level_db": "baseline.available"}
#: The input that says whether the machine runs on a drive (its healthy speed and pressure differ).
DRIVE_FLAG = "flag.vfd"
#: The fewest healthy reference windows a group (drive or not) needs for its own median; fewer: all of them.
MIN_GROUP = 5


@dataclass(frozen=True)
class HealthyFill:
    """The values a missing tag's inputs take (medians of healthy reference windows), by drive or not."""

    names: tuple[str, ...]
    fixed_speed: np.ndarray
    drive: np.ndarray
    #: per input, the value below which a noise input (:data:`NOISE_INPUTS`) reads as rounded away; 0 elsewhere
    noise_floor: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))
    #: ``(flag index, indices of the inputs it feeds)`` per ``missing.*`` input, read once here: ``apply``
    #: runs on every PLC message the inference service scores.
    _tags: tuple[tuple[int, np.ndarray], ...] = field(init=False, repr=False, compare=False)
    _drive_flag: int | None = field(init=False, repr=False, compare=False)
    #: ``(index, index of its tag's missing.* flag or -1, floor)`` of each noise input with a floor above 0;
    #: plain ints and floats, as ``apply`` runs per message and numpy's overhead on two values is larger
    _noise: tuple[tuple[int, int, float], ...] = field(init=False, repr=False, compare=False)
    #: indices of :data:`NOISE_ONLY_INPUTS`
    _noise_only: tuple[int, ...] = field(init=False, repr=False, compare=False)
    #: ``(index of the input that says the baseline is there, indices read without it)``: :data:`UNBASELINED_INPUTS`
    _unbaselined: tuple[tuple[int, tuple[int, ...]], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        index = {n: i for i, n in enumerate(self.names)}
        tags = tuple((index[flag], np.array([index[n] for n in inputs if n in index], np.int64))
                     for flag, inputs in TAG_INPUTS.items() if flag in index)
        object.__setattr__(self, "_tags", tags)
        object.__setattr__(self, "_drive_flag", index.get(DRIVE_FLAG))
        floor = self.noise_floor if self.noise_floor.shape == (len(self.names),) else np.zeros(len(self.names), np.float32)
        object.__setattr__(self, "noise_floor", floor)
        object.__setattr__(self, "_noise", tuple(
            (int(i), index.get(NOISE_INPUTS.get(self.names[i], ""), -1), float(floor[i])) for i in np.flatnonzero(floor > 0)))
        object.__setattr__(self, "_noise_only", tuple(index[n] for n in NOISE_ONLY_INPUTS if n in index))
        flags: dict[str, list[int]] = {}
        for name, flag in UNBASELINED_INPUTS.items():
            if name in index and flag in index:
                flags.setdefault(flag, []).append(index[name])
        object.__setattr__(self, "_unbaselined", tuple((index[f], tuple(i)) for f, i in flags.items()))

    @classmethod
    def from_reference(cls, features: np.ndarray, labels: np.ndarray, names: Sequence[str],
                       normal_index: int = 0, min_group: int = MIN_GROUP) -> HealthyFill | None:
        """From a model's reference sample (its rows, class indices and input names); None where it
        has no ``missing.*`` input nor one of :data:`UNBASELINED_INPUTS`, or no healthy rows. A group
        (drive or not) with fewer than ``min_group`` healthy rows takes the median of all of them."""
        names = tuple(str(n) for n in names)
        x = np.asarray(features, np.float64)
        readable = any(n in names for n in (*TAG_INPUTS, *UNBASELINED_INPUTS))
        if not readable or x.ndim != 2 or x.shape[1] != len(names):
            return None
        healthy = x[np.asarray(labels) == normal_index]
        if len(healthy) == 0:
            return None
        overall = np.nanmedian(healthy, axis=0)
        if DRIVE_FLAG in names:
            on_drive = healthy[:, names.index(DRIVE_FLAG)] >= 0.5
            groups = [np.nanmedian(healthy[g], axis=0) if g.sum() >= min_group else overall
                      for g in (~on_drive, on_drive)]
        else:
            groups = [overall, overall]
        floor = np.zeros(len(names), np.float32)
        for noise, flag in NOISE_INPUTS.items():
            if noise not in names:
                continue
            values = healthy[:, names.index(noise)]
            if flag in names:
                values = values[healthy[:, names.index(flag)] < 0.5]
            values = values[np.isfinite(values)]
            if len(values):
                floor[names.index(noise)] = NOISE_FLOOR_SHARE * float(values.min())
        return cls(names, groups[0].astype(np.float32), groups[1].astype(np.float32), floor)

    @classmethod
    def of_model(cls, model: Any) -> HealthyFill | None:
        """From a registered model (``models.registry``): its ``reference`` file and classes; None where it
        has none, it cannot be read or it gives none (a model without ``missing.*`` inputs)."""
        classes = list(model.card.classes)
        if "normal" not in classes:
            return None
        try:
            ref = np.load(model.path("reference"), allow_pickle=False)
            features, labels, names = ref["features"], ref["labels"], ref["names"]
        except (KeyError, OSError, ValueError):
            return None
        return cls.from_reference(features, labels, [str(n) for n in names], classes.index("normal"))

    def _rounded(self, x: np.ndarray) -> list[int]:
        """Indices of the noise inputs of ``x`` below their floor, their tag present (a missing tag's inputs
        are filled as such)."""
        return [i for i, flag, floor in self._noise if x[i] < floor and (flag < 0 or x[flag] < 0.5)]

    def steadied(self, x: np.ndarray) -> tuple[str, ...]:
        """The noise inputs of vector ``x`` that read as rounded away (below :attr:`noise_floor`)."""
        if x.shape != (len(self.names),):
            return ()
        return tuple(self.names[i] for i in self._rounded(x))

    def apply(self, x: np.ndarray) -> np.ndarray:
        """The model input for vector ``x``: each missing tag's inputs at the healthy median, its flag 0; a
        noise input rounded away by the historian, one that is no evidence, and one a recording cannot judge
        without the machine's healthy levels, at the healthy median."""
        if x.shape != (len(self.names),):
            return x
        missing = [(flag, inputs) for flag, inputs in self._tags if x[flag] >= 0.5]
        noise = [*self._noise_only, *self._rounded(x)]
        for flag, unjudged in self._unbaselined:
            if x[flag] < 0.5:
                noise += unjudged
        if not missing and not noise:
            return x
        on_drive = self._drive_flag is not None and x[self._drive_flag] >= 0.5
        fill = self.drive if on_drive else self.fixed_speed
        out = x.copy()
        out[noise] = fill[noise]
        for flag, inputs in missing:
            out[flag] = 0.0
            out[inputs] = fill[inputs]
        return out
