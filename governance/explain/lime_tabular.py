"""LIME on a model-input vector, run once per seed, with a stability score.

Every shipped model reads its modality's physics-normalised vector (``models/inputs.py``), so the
honest explanation is in those features: :class:`VectorLime` runs ``lime`` with the model card's
reference sample (its healthy rows as the baseline a hidden feature takes, or the whole sample as
``LimeTabularExplainer`` training data) and the deployed runtime as a batched ``classifier_fn``
(one ``predict`` call per LIME run).

LIME is random: :meth:`VectorLime.explain` runs it once per seed, averages the weights and reports
the **stability**: the mean pairwise Jaccard overlap of the runs' top-k feature sets (1.0: every
seed names the same top-k features). The same seeds give the same result (reproducible).

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> ref = rng.normal(size=(200, 4)).astype(np.float32)
>>> def predict(x):  # class 1 grows with feature 2
...     p1 = 1.0 / (1.0 + np.exp(-3.0 * x[:, 2]))
...     return np.stack([1.0 - p1, p1], axis=1)
>>> lime = VectorLime(ref, ["a", "b", "c", "d"], ["normal", "fault"], predict)
>>> lime.baseline.shape
(4,)
>>> r = lime.explain(np.array([0.1, 0.0, 2.0, 0.0], np.float32), 1, num_samples=300, seeds=(0, 1, 2), top_k=1)
>>> r.top(1)[0][0], r.stability
('c', 1.0)
"""

from __future__ import annotations

from typing import Any

import itertools
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

PredictFn = Callable[[NDArray[Any]], NDArray[Any]]


def jaccard(a: set[str] | set[int], b: set[str] | set[int]) -> float:
    """``|a ∩ b| / |a ∪ b|`` (1.0 for two empty sets).

    >>> jaccard({1, 2, 3}, {2, 3, 4})
    0.5
    """
    union = a | b
    return len(a & b) / len(union) if union else 1.0


def topk_stability(weights: Sequence[NDArray[Any]], k: int) -> float:
    """Mean pairwise Jaccard overlap of the top-``k`` (by |weight|) index sets of several runs.

    >>> topk_stability([np.array([3.0, 0.1, -2.0]), np.array([2.5, 0.2, -2.1])], 2)
    1.0
    """
    sets = [set(np.argsort(-np.abs(w), kind="stable")[:k].tolist()) for w in weights]
    pairs = list(itertools.combinations(sets, 2))
    if not pairs:
        return 1.0
    return float(np.mean([jaccard(a, b) for a, b in pairs]))


@dataclass(frozen=True)
class LimeResult:
    """Weights of every feature towards ``label`` (mean over seeds) and the stability of the top-k."""

    names: tuple[str, ...]
    values: NDArray[Any]  #: the explained input
    weights: NDArray[Any]  #: mean LIME weight per feature (signed, towards the explained class)
    per_seed: tuple[NDArray[Any], ...]
    label_index: int
    probability: float  #: the model's probability of the explained class for the input
    stability: float
    num_samples: int
    seeds: tuple[int, ...]
    seconds: float

    def top(self, k: int) -> list[tuple[str, float, float]]:
        """``(name, weight, value)`` of the ``k`` largest |weight|, largest first."""
        order = np.argsort(-np.abs(self.weights), kind="stable")[:k]
        return [(self.names[i], float(self.weights[i]), float(self.values[i])) for i in order]


def _kernel(d: NDArray[Any], width: float = 0.25) -> NDArray[Any]:
    """lime_image's kernel on cosine distances of the binary masks."""
    return np.asarray(np.sqrt(np.exp(-(d**2) / width**2)))


class VectorLime:
    """LIME for one model over its input vector (see the module docstring).

    ``method="mask"`` (default): the interpretable representation is one bit per feature, kept (the
    input's value) or replaced by the *healthy baseline* (the median of the reference rows of class
    ``normal``), the way ``lime_image`` hides superpixels; ``lime.lime_base.LimeBase`` fits the
    weighted ridge model. A weight says how much this feature's departure from a healthy machine
    pushes the model towards the explained class. ``method="tabular"``: ``lime``'s
    ``LimeTabularExplainer`` (quartile-discretised samples from the reference distribution); it
    needs ~3x the samples for the same stability on these models (bench/bench_explain.py).
    """

    def __init__(self, reference: NDArray[Any], names: Sequence[str], classes: Sequence[str],
                 predict: PredictFn, reference_labels: NDArray[Any] | None = None,
                 method: str = "mask") -> None:
        ref = np.asarray(reference, dtype=np.float64)
        if ref.ndim != 2 or ref.shape[1] != len(names):
            raise ValueError(f"reference sample must be (n, {len(names)}), got {ref.shape}")
        if ref.shape[0] < 10:
            raise ValueError(f"reference sample has {ref.shape[0]} rows; LIME needs at least 10 to learn the spread")
        if method not in ("mask", "tabular"):
            raise ValueError(f"unknown LIME method {method!r}: use 'mask' or 'tabular'")
        self.reference = ref
        self.names = tuple(names)
        self.classes = tuple(classes)
        self.predict = predict
        self.method = method
        healthy = ref
        if reference_labels is not None and "normal" in self.classes:
            rows = ref[np.asarray(reference_labels) == self.classes.index("normal")]
            if rows.shape[0] >= 5:
                healthy = rows
        self.baseline = np.median(healthy, axis=0)

    def _predict64(self, x: NDArray[Any]) -> NDArray[Any]:
        return np.asarray(self.predict(np.asarray(x, dtype=np.float32)), dtype=np.float64)

    def explain(self, x: NDArray[Any], label_index: int, num_samples: int, seeds: Sequence[int],
                top_k: int) -> LimeResult:
        """Explain ``x`` towards class ``label_index`` once per seed (see the module docstring)."""
        row = np.asarray(x, dtype=np.float64).reshape(-1)
        if row.shape[0] != len(self.names):
            raise ValueError(f"input has {row.shape[0]} values, the model reads {len(self.names)}")
        if not seeds:
            raise ValueError("at least one seed is needed")
        if not 0 <= label_index < len(self.classes):
            raise ValueError(f"class index {label_index} out of range for {len(self.classes)} classes")
        t0 = time.perf_counter()
        run = self._mask_run if self.method == "mask" else self._tabular_run
        runs = [run(row, label_index, int(num_samples), int(seed)) for seed in seeds]
        proba = float(self._predict64(row[None, :])[0, label_index])
        return LimeResult(
            names=self.names, values=row.astype(np.float32), weights=np.mean(runs, axis=0),
            per_seed=tuple(runs), label_index=label_index, probability=min(max(proba, 0.0), 1.0),
            stability=topk_stability(runs, top_k), num_samples=int(num_samples), seeds=tuple(int(s) for s in seeds),
            seconds=time.perf_counter() - t0)

    def _mask_run(self, row: NDArray[Any], label: int, n: int, seed: int) -> NDArray[Any]:
        from lime.lime_base import LimeBase
        from sklearn.metrics import pairwise_distances

        rs = np.random.RandomState(seed)
        masks = rs.randint(0, 2, (n, row.shape[0]))
        masks[0] = 1
        inputs = np.where(masks > 0, row[None, :], self.baseline[None, :])
        preds = self._predict64(inputs)
        distances = pairwise_distances(masks, masks[:1], metric="cosine").ravel()
        base = LimeBase(_kernel, random_state=rs)
        _, weights, _, _ = base.explain_instance_with_data(masks, preds, distances, label, row.shape[0],
                                                           feature_selection="none")
        w = np.zeros(row.shape[0])
        for idx, weight in weights:
            w[int(idx)] = float(weight)
        return w

    def _tabular_run(self, row: NDArray[Any], label: int, n: int, seed: int) -> NDArray[Any]:
        from lime.lime_tabular import LimeTabularExplainer

        explainer = LimeTabularExplainer(
            self.reference, mode="classification", feature_names=list(self.names), class_names=list(self.classes),
            discretize_continuous=True, discretizer="quartile", feature_selection="none", random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # float32 softmax sums to 1 within 1e-7, LIME warns at 1e-8
            exp = explainer.explain_instance(row, self._predict64, labels=(label,), num_features=len(self.names),
                                             num_samples=n)
        w = np.zeros(row.shape[0])
        for idx, weight in exp.local_exp[label]:
            w[int(idx)] = float(weight)
        return w
