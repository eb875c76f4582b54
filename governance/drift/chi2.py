"""Chi-squared test of category counts (predicted labels, alarm classes) against a reference.

A 2 x K contingency table (reference counts, live counts) tested with
:func:`scipy.stats.chi2_contingency` (no Yates correction: K > 2 in general); categories empty in
both rows are dropped. The effect size is Cramér's V (0: same mix, 1: disjoint).

>>> r = chi2_counts({"normal": 90, "bearing_wear": 10}, {"normal": 50, "bearing_wear": 50})
>>> r.p_value < 1e-6, round(r.effect_size, 3)
(True, 0.436)
>>> chi2_counts({"normal": 90, "imbalance": 10}, {"normal": 45, "imbalance": 5}).p_value
1.0
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class Chi2Result:
    statistic: float
    p_value: float
    effect_size: float  #: Cramér's V
    dof: int
    categories: tuple[str, ...]
    reference_share: tuple[float, ...]
    live_share: tuple[float, ...]


def chi2_counts(reference: Mapping[str, int], live: Mapping[str, int]) -> Chi2Result:
    cats = tuple(sorted(c for c in set(reference) | set(live) if reference.get(c, 0) + live.get(c, 0) > 0))
    ref = np.array([reference.get(c, 0) for c in cats], dtype=np.float64)
    cur = np.array([live.get(c, 0) for c in cats], dtype=np.float64)
    if ref.sum() == 0 or cur.sum() == 0:
        raise ValueError("chi-squared needs counts in both the reference and the live window")
    share_r, share_l = tuple(float(v) for v in ref / ref.sum()), tuple(float(v) for v in cur / cur.sum())
    if len(cats) < 2:
        return Chi2Result(0.0, 1.0, 0.0, 0, cats, share_r, share_l)
    res = stats.chi2_contingency(np.vstack([ref, cur]), correction=False)
    n = ref.sum() + cur.sum()
    v = float(np.sqrt(res.statistic / n))  # min(rows, cols) - 1 == 1
    return Chi2Result(float(res.statistic), float(res.pvalue), v, int(res.dof), cats, share_r, share_l)
