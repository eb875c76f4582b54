"""The fused false-alarm budget chosen on held-out machines (grouped cross-validation over validation).

:func:`models.fusion.fit.fit_fusion` raises the normal prior until the fused healthy FPR on the
validation machines it was fitted on is within ``max_fpr``; on other machines it comes out higher.
:func:`heldout_fusion` fits the whole fusion (weights, offsets, priors, normal-prior step) on k−1
folds of validation machines and fuses the held-out fold (every modality present, and pooled
over every subset of modalities as the normal-prior step pools); :func:`choose_fusion_budget`
keeps the largest budget whose held-out FPR with every modality is ≤ ``target − margin``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from itertools import combinations

import numpy as np

from models.fusion.fit import fit_fusion, fuse_arrays
from models.training.crossval import BUDGET_GRID, HeldOut, machine_folds, score_heldout


@dataclass(frozen=True)
class FusionHeldOut:
    """Held-out scores of the fusion fitted at ``budget``: every modality present, and the mean
    healthy FPR over every non-empty subset of modalities."""

    budget: float
    all_modalities: HeldOut
    subsets_fpr: dict[str, float]

    @property
    def pooled_fpr(self) -> float:
        return float(np.mean(list(self.subsets_fpr.values())))

    def to_dict(self) -> dict[str, object]:
        out = asdict(self)
        out["all_modalities"] = self.all_modalities.to_dict()
        out["pooled_fpr"] = self.pooled_fpr
        return out


def heldout_fusion(per_modality: Mapping[str, np.ndarray], labels: np.ndarray, severity: np.ndarray | None,
                   groups: np.ndarray, classes: Sequence[str], budget: float, possible: np.ndarray | None,
                   impossible: Mapping[str, Sequence[str]], visible: Mapping[str, Sequence[str]], k: int = 5,
                   repeats: int = 2, seed: int = 0, withheld: Mapping[str, np.ndarray] | None = None) -> FusionHeldOut:
    """Out-of-fold fused predictions at ``budget`` (see module docstring); ``withheld[m]`` (N, C)
    bool: the classes each sample's input of ``m`` cannot show, honoured as served."""
    withheld = withheld or {}
    mods = sorted(per_modality)
    subsets = [s for r in range(1, len(mods) + 1) for s in combinations(mods, r)]
    preds = {s: np.empty((repeats, len(labels)), np.int64) for s in subsets}
    for r in range(repeats):
        folds = machine_folds(groups, k, seed + 1000 * r)
        for f in range(k):
            tr, te = np.flatnonzero(folds != f), np.flatnonzero(folds == f)
            w = fit_fusion({m: p[tr] for m, p in per_modality.items()}, labels[tr], classes, budget,
                           None if possible is None else possible[tr], impossible, visible,
                           {m: v[tr] for m, v in withheld.items()})
            for s in subsets:
                fused = fuse_arrays({m: per_modality[m][te] for m in s}, w, classes,
                                    None if possible is None else possible[te], {m: v[te] for m, v in withheld.items()})
                preds[s][r, te] = fused.argmax(1)
    every = score_heldout(preds[tuple(mods)], labels, severity, groups, classes, budget)
    healthy = np.asarray(labels) == 0
    subsets_fpr = {"+".join(s): float(np.mean(p[:, healthy] != 0)) for s, p in preds.items()}
    return FusionHeldOut(budget, every, subsets_fpr)


def choose_fusion_budget(per_modality: Mapping[str, np.ndarray], labels: np.ndarray, severity: np.ndarray | None,
                         groups: np.ndarray, classes: Sequence[str], possible: np.ndarray | None,
                         impossible: Mapping[str, Sequence[str]], visible: Mapping[str, Sequence[str]],
                         target: float, margin: float, grid: Sequence[float] = BUDGET_GRID, k: int = 5,
                         repeats: int = 2, seed: int = 0, withheld: Mapping[str, np.ndarray] | None = None
                         ) -> tuple[float, list[FusionHeldOut]]:
    """The largest budget of ``grid`` whose held-out FPR with every modality is ≤ ``target −
    margin`` (the smallest budget if none is), with every budget tried."""
    tried = []
    for b in sorted(grid, reverse=True):
        h = heldout_fusion(per_modality, labels, severity, groups, classes, b, possible, impossible, visible, k,
                           repeats, seed, withheld)
        tried.append(h)
        if h.all_modalities.fpr <= target - margin:
            return b, tried
    return min(grid), tried
