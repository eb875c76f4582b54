"""Fitting the fusion weights on the validation split (never on test).

Given each modality's calibrated probabilities for the same validation samples (one machine at one
time, every modality present), find per-modality, per-class weights ``w[m, c] ∈ [0, 3]`` and
per-class log-priors ``b[c]`` minimising the negative log-likelihood of the fused distribution
(:func:`models.fusion.fuse`'s rule) plus a small pull of ``w`` toward 1; then shift ``b[normal]``
up until the fused healthy false-positive rate on validation is within the budget.

>>> rng = np.random.default_rng(0); y = rng.integers(0, 3, 600)
>>> good = np.eye(3)[y] * 0.8 + 0.2 / 3; noise = rng.dirichlet(np.ones(3), 600)
>>> w = fit_fusion({"a": good, "b": noise}, y, ("normal", "x", "y"), max_fpr=0.01)
>>> w.weight("a", "x") > w.weight("b", "x")
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from scipy.optimize import minimize

from models.fusion.log_linear import PROBABILITY_FLOOR, FusionWeights

L2 = 1e-3


def _log_probs(per_modality: Mapping[str, np.ndarray], possible: np.ndarray | None = None
               ) -> tuple[list[str], np.ndarray]:
    """Per-modality log-probabilities renormalised over each sample's possible classes and
    floored, exactly as :func:`models.fusion.fuse` does; (M, N, C)."""
    mods = sorted(per_modality)
    out = []
    for m in mods:
        p = np.maximum(np.asarray(per_modality[m], np.float64), 0.0)
        if possible is not None:
            p = np.where(possible, p, 0.0)
        p = p / np.maximum(p.sum(axis=1, keepdims=True), 1e-300)
        out.append(np.log(np.maximum(p, PROBABILITY_FLOOR)))
    return mods, np.stack(out)


def fused_scores(logs: np.ndarray, w: np.ndarray, b: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """``b + Σ_m w[m] * log p_m`` with impossible classes (``mask`` False) at -inf; (N, C)."""
    s = np.einsum("mnc,mc->nc", logs, w) + b[None, :]
    return np.where(mask, s, -np.inf) if mask is not None else s


def fit_fusion(per_modality: Mapping[str, np.ndarray], labels: np.ndarray, classes: Sequence[str],
               max_fpr: float, possible: np.ndarray | None = None,
               impossible: Mapping[str, Sequence[str]] | None = None) -> FusionWeights:
    """Weights and biases as described in the module docstring. ``possible`` (N, C) bool marks
    the classes each sample's machine can have (``impossible`` is stored for serving)."""
    y = np.asarray(labels)
    mask = None if possible is None else np.asarray(possible, bool)
    mods, logs = _log_probs(per_modality, mask)
    m_count, _, c_count = logs.shape
    if mask is None:
        mask = np.ones((len(y), c_count), bool)

    def unpack(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return theta[: m_count * c_count].reshape(m_count, c_count), theta[m_count * c_count:]

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w, b = unpack(theta)
        s = fused_scores(logs, w, b, mask)
        s = s - s.max(axis=1, keepdims=True)
        e = np.where(mask, np.exp(s), 0.0)
        p = e / e.sum(axis=1, keepdims=True)
        n = len(y)
        loss = -np.mean(np.log(np.maximum(p[np.arange(n), y], 1e-300))) + L2 * np.sum((w - 1.0) ** 2)
        g = p.copy()
        g[np.arange(n), y] -= 1.0
        g /= n
        grad_w = np.einsum("mnc,nc->mc", logs, g) + 2 * L2 * (w - 1.0)
        grad_b = g.sum(axis=0)
        return float(loss), np.concatenate([grad_w.ravel(), grad_b])

    theta0 = np.concatenate([np.ones(m_count * c_count), np.zeros(c_count)])
    bounds = [(0.0, 3.0)] * (m_count * c_count) + [(-15.0, 15.0)] * c_count
    res = minimize(objective, theta0, jac=True, method="L-BFGS-B", bounds=bounds)
    w, b = unpack(res.x)
    b = b - b[0]
    healthy = y == 0
    if np.any(healthy):
        def fpr(shift: float) -> float:
            bb = b.copy()
            bb[0] += shift
            return float(np.mean(fused_scores(logs, w, bb, mask)[healthy].argmax(1) != 0))

        shift, hi = 0.0, 20.0
        if fpr(0.0) > max_fpr:
            lo = 0.0
            for _ in range(40):
                mid = 0.5 * (lo + hi)
                lo, hi = (lo, mid) if fpr(mid) <= max_fpr else (mid, hi)
            shift = hi
        b[0] += shift
    return FusionWeights(weights={m: {c: round(float(w[i, j]), 4) for j, c in enumerate(classes)}
                                  for i, m in enumerate(mods)},
                         default=1.0, impossible=dict(impossible or {}),
                         bias={c: round(float(b[j]), 4) for j, c in enumerate(classes)})


def fuse_arrays(per_modality: Mapping[str, np.ndarray], weights: FusionWeights, classes: Sequence[str],
                possible: np.ndarray | None = None) -> np.ndarray:
    """Vectorised :func:`models.fusion.fuse` probabilities for many samples with every modality
    present, (N, C) (the same rule; used for offline evaluation)."""
    mods, logs = _log_probs(per_modality, possible)
    w = np.array([[weights.weight(m, c) for c in classes] for m in mods])
    b = np.array([float(weights.bias.get(c, 0.0)) for c in classes])
    s = fused_scores(logs, w, b, possible)
    s = s - s.max(axis=1, keepdims=True)
    e = np.exp(s) if possible is None else np.where(possible, np.exp(s), 0.0)
    return e / e.sum(axis=1, keepdims=True)
