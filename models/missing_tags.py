"""A PLC export without some tags, read by the PLC model as a machine whose missing tags look healthy.

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
    #: ``(flag index, indices of the inputs it feeds)`` per ``missing.*`` input, read once here: ``apply``
    #: runs on every PLC message the inference service scores.
    _tags: tuple[tuple[int, np.ndarray], ...] = field(init=False, repr=False, compare=False)
    _drive_flag: int | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        index = {n: i for i, n in enumerate(self.names)}
        tags = tuple((index[flag], np.array([index[n] for n in inputs if n in index], np.int64))
                     for flag, inputs in TAG_INPUTS.items() if flag in index)
        object.__setattr__(self, "_tags", tags)
        object.__setattr__(self, "_drive_flag", index.get(DRIVE_FLAG))

    @classmethod
    def from_reference(cls, features: np.ndarray, labels: np.ndarray, names: Sequence[str],
                       normal_index: int = 0, min_group: int = MIN_GROUP) -> HealthyFill | None:
        """From a model's reference sample (its rows, class indices and input names); None where it
        has no ``missing.*`` input or no healthy rows. A group (drive or not) with fewer than
        ``min_group`` healthy rows takes the median of all of them."""
        names = tuple(str(n) for n in names)
        x = np.asarray(features, np.float64)
        if not any(n in names for n in TAG_INPUTS) or x.ndim != 2 or x.shape[1] != len(names):
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
        return cls(names, groups[0].astype(np.float32), groups[1].astype(np.float32))

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

    def apply(self, x: np.ndarray) -> np.ndarray:
        """The model input for vector ``x``: each missing tag's inputs at the healthy median, its flag 0."""
        if x.shape != (len(self.names),):
            return x
        missing = [(flag, inputs) for flag, inputs in self._tags if x[flag] >= 0.5]
        if not missing:
            return x
        on_drive = self._drive_flag is not None and x[self._drive_flag] >= 0.5
        fill = self.drive if on_drive else self.fixed_speed
        out = x.copy()
        for flag, inputs in missing:
            out[flag] = 0.0
            out[inputs] = fill[inputs]
        return out
