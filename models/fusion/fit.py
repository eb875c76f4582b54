"""Fitting the fusion weights on the validation split (never on test).

Given each modality's calibrated probabilities for the same validation samples (one machine at one
time, every modality present), find per-modality, per-class weights ``w[m, c] ∈ [0, 3]`` and
per-class log-priors ``b[c]`` minimising the negative log-likelihood of the fused distribution
(:func:`models.fusion.fuse`'s rule) over every subset of the modalities (a machine often has only
some), plus a small pull of ``w`` toward 1; per-modality class offsets cancel the prior each
modality was calibrated with; then shift ``b[normal]`` up until the fused healthy false-positive
rate on validation (pooled over the subsets) is within the budget.

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
from models.withheld_classes import drop_withheld_rows

L2 = 1e-3


def restrict_arrays(per_modality: Mapping[str, np.ndarray], visible: Mapping[str, Sequence[str]],
                    classes: Sequence[str]) -> dict[str, np.ndarray]:
    """:meth:`FusionWeights.restrict` for (N, C) arrays."""
    out = {}
    for m, p in per_modality.items():
        p = np.asarray(p, np.float64)
        if m in visible:
            allowed = np.array([c == classes[0] or c in visible[m] for c in classes])
            q = np.where(allowed, p, 0.0)
            total = q.sum(axis=1, keepdims=True)
            p = np.where(total > 0, q / np.maximum(total, 1e-300), p)
        out[m] = p
    return out


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


def _subsets(m_count: int) -> np.ndarray:
    """Every non-empty subset of the modalities as a (S, M) 0/1 mask."""
    rows = [[(k >> i) & 1 for i in range(m_count)] for k in range(1, 1 << m_count)]
    return np.asarray(rows, np.float64)


def withheld_masks(mods: Sequence[str], n: int, classes: Sequence[str],
                   withheld: Mapping[str, np.ndarray] | None = None) -> np.ndarray:
    """(M, N, C) bool: where modality ``mods[i]``'s input withholds a class
    (:mod:`models.withheld_classes`), so that its term for it is its term for the first class; never
    the first class."""
    out = np.zeros((len(mods), n, len(classes)), bool)
    for i, m in enumerate(mods):
        if withheld is not None and m in withheld:
            out[i] |= np.asarray(withheld[m], bool)
    out[:, :, 0] = False
    return out


def fit_fusion(per_modality: Mapping[str, np.ndarray], labels: np.ndarray, classes: Sequence[str],
               max_fpr: float, possible: np.ndarray | None = None,
               impossible: Mapping[str, Sequence[str]] | None = None,
               visible: Mapping[str, Sequence[str]] | None = None,
               withheld: Mapping[str, np.ndarray] | None = None) -> FusionWeights:
    """Weights and biases as described in the module docstring, fitted on every non-empty subset
    of the modalities (a machine often has only some of them): each modality brings its weights
    *and* its own class offsets (``modality_bias``, cancelling the prior it was calibrated with),
    so a missing modality leaves nothing behind. ``possible`` (N, C) bool marks the classes each
    sample's machine can have (``impossible`` is stored for serving); ``visible`` restricts what
    each modality may name (stored too); ``withheld[m]`` (N, C) bool, the classes each sample's
    input of ``m`` cannot show, honoured as the services and ``linewatch inspect`` do (dropped, and
    the modality's term for them is its term for ``normal``), so the fit sees what is served."""
    per_modality = restrict_arrays(per_modality, visible or {}, classes)
    y = np.asarray(labels)
    mask = np.ones((len(y), len(classes)), bool) if possible is None else np.asarray(possible, bool)
    mods = sorted(per_modality)
    blind = withheld_masks(mods, len(y), classes, withheld) & mask[None]  # as fuse_arrays: possible classes only
    per_modality = {m: drop_withheld_rows(per_modality[m], blind[i]) if withheld and m in withheld else per_modality[m]
                    for i, m in enumerate(mods)}
    mods, logs = _log_probs(per_modality, None if possible is None else mask)
    m_count, n, c_count = logs.shape
    seen = ~blind  # (M, N, C): the terms a modality's own weight and offset make
    subsets = _subsets(m_count)
    rows = len(subsets) * n
    size = m_count * c_count

    def unpack(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return (theta[:size].reshape(m_count, c_count), theta[size:2 * size].reshape(m_count, c_count),
                theta[2 * size:])

    def scores(w: np.ndarray, beta: np.ndarray, b: np.ndarray, present: np.ndarray) -> np.ndarray:
        own = logs * w[:, None, :] + beta[:, None, :]  # (M, N, C)
        terms = np.where(blind, own[:, :, :1], own)
        s = np.einsum("m,mnc->nc", present, terms) + b[None, :]
        return np.where(mask, s, -np.inf)

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w, beta, b = unpack(theta)
        loss = L2 * np.sum((w - 1.0) ** 2) + L2 * np.sum(beta**2)
        grad_w, grad_beta, grad_b = 2 * L2 * (w - 1.0), 2 * L2 * beta, np.zeros(c_count)
        for present in subsets:
            s = scores(w, beta, b, present)
            s = s - s.max(axis=1, keepdims=True)
            e = np.where(mask, np.exp(s), 0.0)
            p = e / e.sum(axis=1, keepdims=True)
            loss += -np.sum(np.log(np.maximum(p[np.arange(n), y], 1e-300))) / rows
            g = p.copy()
            g[np.arange(n), y] -= 1.0
            g /= rows
            g_seen, g_blind = seen * g[None], (blind * g[None]).sum(axis=2)  # (M, N, C), (M, N)
            grad_w += present[:, None] * np.einsum("mnc,mnc->mc", logs, g_seen)
            grad_w[:, 0] += present * np.einsum("mn,mn->m", logs[:, :, 0], g_blind)
            grad_beta += present[:, None] * g_seen.sum(axis=1)
            grad_beta[:, 0] += present * g_blind.sum(axis=1)
            grad_b += g.sum(axis=0)
        return float(loss), np.concatenate([grad_w.ravel(), grad_beta.ravel(), grad_b])

    theta0 = np.concatenate([np.ones(size), np.zeros(size), np.zeros(c_count)])
    bounds = [(0.0, 3.0)] * size + [(-15.0, 15.0)] * size + [(-15.0, 15.0)] * c_count
    res = minimize(objective, theta0, jac=True, method="L-BFGS-B", bounds=bounds)
    w, beta, b = unpack(res.x)
    beta = beta - beta[:, :1]
    b = b - b[0]
    healthy = y == 0
    if np.any(healthy):
        def fpr(shift: float) -> float:  # pooled over every subset of modalities
            bb = b.copy()
            bb[0] += shift
            return float(np.mean([np.mean(scores(w, beta, bb, present)[healthy].argmax(1) != 0)
                                  for present in subsets]))

        shift, hi = 0.0, 30.0
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
                         bias={c: round(float(b[j]), 4) for j, c in enumerate(classes)},
                         visible={m: list(v) for m, v in (visible or {}).items()},
                         modality_bias={m: {c: round(float(beta[i, j]), 4) for j, c in enumerate(classes)}
                                        for i, m in enumerate(mods)})


def fuse_arrays(per_modality: Mapping[str, np.ndarray], weights: FusionWeights, classes: Sequence[str],
                possible: np.ndarray | None = None, withheld: Mapping[str, np.ndarray] | None = None) -> np.ndarray:
    """Vectorised :func:`models.fusion.fuse` probabilities for many samples with every modality
    present, (N, C) (the same rule; used for offline evaluation). ``withheld[m]``: (N, C) bool, the
    classes each sample's input of ``m`` cannot show (:mod:`models.withheld_classes`)."""
    restricted = restrict_arrays(per_modality, weights.visible, classes)
    blind = {m: np.asarray(v, bool) & (possible if possible is not None else True)
             for m, v in (withheld or {}).items() if m in restricted}
    for m, v in blind.items():
        v[:, 0] = False
        restricted[m] = drop_withheld_rows(restricted[m], v)
    mods, logs = _log_probs(restricted, possible)
    w = np.array([[weights.weight(m, c) for c in classes] for m in mods])
    b = np.array([float(weights.bias.get(c, 0.0)) for c in classes])
    offsets = np.array([[float(weights.modality_bias.get(m, {}).get(c, 0.0)) for c in classes] for m in mods])
    terms = logs * w[:, None, :] + offsets[:, None, :]  # (M, N, C)
    for i, m in enumerate(mods):  # a withheld class gets the modality's term for the first class (neutral on it)
        if m in blind:
            terms[i] = np.where(blind[m], terms[i][:, :1], terms[i])
    s = terms.sum(axis=0) + b[None, :]
    s = np.where(possible, s, -np.inf) if possible is not None else s
    s = (s - s.max(axis=1, keepdims=True)) / weights.temperature
    e = np.exp(s) if possible is None else np.where(possible, np.exp(s), 0.0)
    return e / e.sum(axis=1, keepdims=True)


def fit_fused_temperature(per_modality: Mapping[str, np.ndarray], weights: FusionWeights, labels: np.ndarray,
                          classes: Sequence[str], possible: np.ndarray | None = None,
                          withheld: Mapping[str, np.ndarray] | None = None) -> float:
    """The temperature minimising the validation NLL of the fused distribution, pooled over every
    subset of the modalities (as the weights are fitted: a machine often has only some); the
    weights' own ``temperature`` is ignored. Pooled experts that see the same fault are
    overconfident together, a single modality is overconfident about the classes it cannot see.

    >>> rng = np.random.default_rng(1); y = rng.integers(0, 3, 900)
    >>> seen = np.where(rng.random(900) < 0.7, y, rng.integers(0, 3, 900))  # right 80 % of the time
    >>> a = np.eye(3)[seen] * 0.9 + 0.1 / 3; b = np.eye(3)[seen] * 0.8 + 0.2 / 3  # two sure, correlated experts
    >>> fit_fused_temperature({"a": a, "b": b}, FusionWeights(), y, ("normal", "x", "y")) > 1.0
    True
    """
    from dataclasses import replace
    from itertools import combinations

    from models.training.calibration import fit_temperature

    mods = sorted(per_modality)
    neutral = replace(weights, temperature=1.0)
    logs, ys = [], []
    for k in range(1, len(mods) + 1):
        for subset in combinations(mods, k):
            p = fuse_arrays({m: per_modality[m] for m in subset}, neutral, classes, possible,
                            {m: v for m, v in (withheld or {}).items() if m in subset})
            logs.append(np.log(np.maximum(p, 1e-300)))
            ys.append(np.asarray(labels))
    return fit_temperature(np.concatenate(logs), np.concatenate(ys))
