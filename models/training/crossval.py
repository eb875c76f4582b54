"""An honest false-alarm budget: the healthy FPR a calibration *spends* on validation, measured out of sample.

A class-prior shift fitted to keep the validation FPR within a budget meets that budget on the
very machines it was fitted on; on machines it has not seen the FPR comes out higher (a few
healthy machines that look off-nominal decide it). This module estimates the held-out FPR of a
fitting *procedure* with grouped cross-validation over the validation machines: the procedure is
fitted on k−1 folds of machines and predicts the held-out fold, repeated over several shuffles,
and the out-of-fold predictions are scored like a test split (healthy FPR, recall past moderate
severity, macro-F1 past moderate). :func:`choose_budget` then picks the largest validation budget
whose *held-out* FPR stays below the target with a margin; the final model is fitted on the whole
validation split with that budget.

>>> folds = machine_folds(np.array(["a", "a", "b", "c", "c", "d"]), k=2, seed=0)
>>> sorted(set(folds.tolist())), bool(folds[0] == folds[1]), bool(folds[3] == folds[4])
([0, 1], True, True)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from models.training.calibration import fit_class_bias, masked
from models.training.evaluation import SEVERITY_THRESHOLD

#: Validation budgets tried by :func:`choose_budget`, largest first.
BUDGET_GRID: tuple[float, ...] = (0.005, 0.004, 0.003, 0.002, 0.0015, 0.001, 0.0005, 0.0)

FitPredict = Callable[[np.ndarray, np.ndarray], np.ndarray]


def machine_folds(groups: np.ndarray, k: int, seed: int) -> np.ndarray:
    """Fold index (0..k-1) of every sample; a machine's samples share one fold. Machines are
    shuffled (``seed``) and dealt to the fold with the fewest samples so far."""
    groups = np.asarray(groups)
    names, inverse, counts = np.unique(groups, return_inverse=True, return_counts=True)
    if len(names) < k:
        raise ValueError(f"{len(names)} machines cannot fill {k} folds")
    order = np.random.default_rng(seed).permutation(len(names))
    load = np.zeros(k, np.int64)
    fold_of = np.empty(len(names), np.int64)
    for i in order:
        f = int(np.argmin(load))
        fold_of[i] = f
        load[f] += counts[i]
    return fold_of[inverse]


def out_of_fold(fit_predict: FitPredict, groups: np.ndarray, k: int = 5, repeats: int = 3, seed: int = 0
                ) -> np.ndarray:
    """(repeats, N) predictions, each row from models that never saw that sample's machine.
    ``fit_predict(train_idx, heldout_idx)`` fits on ``train_idx`` and returns the predicted classes
    of ``heldout_idx``."""
    n = len(groups)
    out = np.empty((repeats, n), np.int64)
    for r in range(repeats):
        folds = machine_folds(groups, k, seed + 1000 * r)
        for f in range(k):
            held = np.flatnonzero(folds == f)
            out[r, held] = fit_predict(np.flatnonzero(folds != f), held)
    return out


@dataclass(frozen=True)
class HeldOut:
    """Out-of-fold scores of one fitting procedure (pooled over repeats)."""

    budget: float
    fpr: float  #: healthy false-positive rate on held-out machines
    fpr_repeats: tuple[float, ...]
    machines_with_false_alarms: float  #: mean over repeats
    macro_f1_past_moderate: float
    recall_past_moderate: dict[str, float]

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def score_heldout(preds: np.ndarray, labels: np.ndarray, severity: np.ndarray | None, groups: np.ndarray,
                  classes: Sequence[str], budget: float, normal: int = 0) -> HeldOut:
    """Healthy FPR, recall and macro-F1 past moderate severity of (repeats, N) predictions."""
    from models.training.calibration import _macro_f1

    y = np.asarray(labels)
    sev = np.where(y == normal, 0.0, 1.0) if severity is None else np.asarray(severity, np.float64)
    healthy = y == normal
    strong = healthy | (sev >= SEVERITY_THRESHOLD)
    fprs = [float(np.mean(p[healthy] != normal)) for p in preds]
    flagged = [len(set(np.asarray(groups)[healthy & (p != normal)].tolist())) for p in preds]
    recall = {}
    for i, c in enumerate(classes):
        sel = (y == i) & (sev >= SEVERITY_THRESHOLD)
        if i != normal and np.any(sel):
            recall[c] = float(np.mean(preds[:, sel] == i))
    f1 = float(np.mean([_macro_f1(y[strong], p[strong], len(classes)) for p in preds]))
    return HeldOut(budget, float(np.mean(fprs)), tuple(fprs), float(np.mean(flagged)), f1, recall)


def served_prediction(logits: np.ndarray, possible: np.ndarray | None, allowed: np.ndarray | None) -> np.ndarray:
    """Argmax as served: impossible classes masked, and (``allowed``, (C,) bool) only the classes
    the modality may name (``normal`` plus its visible faults)."""
    z = masked(logits, possible)
    if allowed is not None:
        z = np.where(np.asarray(allowed, bool)[None, :], z, -np.inf)
    return z.argmax(1)


def calibration_fit_predict(logits: np.ndarray, labels: np.ndarray, budget: float, severity: np.ndarray | None,
                            possible: np.ndarray | None, allowed: np.ndarray | None = None) -> FitPredict:
    """The modality procedure (the class shifts of :func:`models.training.calibration.calibrate`
    at ``budget``; the temperature does not move the argmax) as a ``fit_predict`` for
    :func:`out_of_fold`."""
    z = np.asarray(logits, np.float64)

    def run(tr: np.ndarray, te: np.ndarray) -> np.ndarray:
        bias = fit_class_bias(z[tr], labels[tr], budget, None if severity is None else severity[tr],
                              None if possible is None else possible[tr])
        return served_prediction(z[te] + bias, None if possible is None else possible[te], allowed)

    return run


def choose_budget(heldout_at: Callable[[float], HeldOut], target: float, margin: float,
                  grid: Sequence[float] = BUDGET_GRID) -> tuple[float, list[HeldOut]]:
    """The largest budget of ``grid`` whose held-out FPR is ≤ ``target − margin`` (the smallest
    budget of the grid if none is), with every budget tried (largest first)."""
    tried: list[HeldOut] = []
    for b in sorted(grid, reverse=True):
        h = heldout_at(b)
        tried.append(h)
        if h.fpr <= target - margin:
            return b, tried
    return min(grid), tried
