"""What a model saw in training, and the inputs of one sample that lie far outside it.

A registered model carries a reference sample of its training inputs (``reference.npz``: ``features``
and ``names``). An input value more than a quarter of that sample's span beyond its min or max is
*far outside the training range*: there the model extrapolates. With :data:`OUT_OF_RANGE_WARN` or
more such inputs the prediction is flagged as an extrapolation and enters a fused verdict flattened
(``models.fusion.temper`` at :data:`EXTRAPOLATION_POWER`): a confident guess may not outvote the
other modalities. ``linewatch inspect`` and the live fusion service apply the same rule
(docs/models.md, "Evidence beyond the training range" and "The live line's extrapolation guard").

An input beyond its range on the side of the fault the model names is evidence of that fault, not a
guess (:mod:`models.fault_evidence`), and is not counted.

>>> rng = TrainingRange(np.zeros(4), np.ones(4), ("a", "b", "terminal_box.hotspot_excess", "d"))
>>> rng.beyond(np.array([0.5, 1.2, 1.3, -0.3]))    # b: 1.2 is inside the widened range [-0.25, 1.25]
{'terminal_box.hotspot_excess': 1, 'd': -1}
>>> far = {"a": 1, "b": -1, "terminal_box.hotspot_excess": 1}
>>> guess = extrapolation("thermal", "normal", far)
>>> guess.counted, guess.extrapolating
(['a', 'b', 'terminal_box.hotspot_excess'], True)
>>> lug = extrapolation("thermal", "electrical_overheating", far)   # the hot lug is the named fault
>>> lug.evidence, lug.counted, lug.extrapolating
(['terminal_box.hotspot_excess'], ['a', 'b'], False)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from models.fault_evidence import evidence_beyond_training

#: A prediction with at least this many model inputs far outside the training range extrapolates.
OUT_OF_RANGE_WARN = 3
#: An extrapolating modality enters a fused verdict as ``p ** EXTRAPOLATION_POWER``, renormalised.
EXTRAPOLATION_POWER = 0.3
#: How far past the reference sample's min/max an input is "far outside", as a share of its span.
MARGIN = 0.25


@dataclass(frozen=True)
class TrainingRange:
    """Per-input min and max of a model's reference sample of training inputs."""

    lo: np.ndarray
    hi: np.ndarray
    names: tuple[str, ...]

    @classmethod
    def of_model(cls, registered) -> TrainingRange | None:  # type: ignore[no-untyped-def]
        """The range of a registered model (:class:`models.registry.RegisteredModel`); None when it has no
        usable reference sample (no file, fewer than 10 rows, names that do not match)."""
        try:
            ref = np.load(registered.path("reference"), allow_pickle=False)
        except (KeyError, OSError, ValueError):
            return None
        x = np.asarray(ref["features"], np.float64)
        names = tuple(str(n) for n in ref["names"])
        if x.ndim != 2 or x.shape[1] != len(names) or len(x) < 10:
            return None
        return cls(np.nanmin(x, axis=0), np.nanmax(x, axis=0), names)

    def outside(self, x: np.ndarray) -> np.ndarray:
        """Which values of ``x`` (one input vector, or rows of them) lie far outside the range: a boolean
        array of ``x``'s shape."""
        margin = MARGIN * np.maximum(self.hi - self.lo, 1e-6)
        return (x < self.lo - margin) | (x > self.hi + margin)

    def beyond(self, x: np.ndarray) -> dict[str, int]:
        """The inputs of one sample ``x`` (the model's input vector) far outside the range:
        ``{input name: +1 above it, -1 below it}``; none when ``x`` is not a vector of these inputs."""
        v = np.asarray(x, np.float64).reshape(-1)
        if v.size != len(self.names):
            return {}
        return {self.names[i]: 1 if v[i] > self.hi[i] else -1 for i in np.flatnonzero(self.outside(v))}


@dataclass(frozen=True)
class Extrapolation:
    """How one prediction stands to its model's training range."""

    outside: list[str]  #: inputs far outside the range, sorted
    evidence: list[str]  #: of those, the ones that show more of the named fault (not counted)

    @property
    def counted(self) -> list[str]:
        """The inputs that make the prediction a guess."""
        return [n for n in self.outside if n not in self.evidence]

    @property
    def extrapolating(self) -> bool:
        return len(self.counted) >= OUT_OF_RANGE_WARN


def extrapolation(modality: str, label: str | None, beyond: Mapping[str, int]) -> Extrapolation:
    """Judge ``beyond`` (:meth:`TrainingRange.beyond`) for a ``modality`` prediction that names ``label``."""
    return Extrapolation(sorted(beyond), evidence_beyond_training(modality, label, beyond))
