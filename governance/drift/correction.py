"""Multiple-testing correction across the features of one window: Bonferroni or Benjamini–Hochberg.

Bonferroni controls the family-wise error (any false alarm in the window) at ``alpha``;
Benjamini–Hochberg controls the expected share of false discoveries among the drifted features
(and, when no feature drifted, the family-wise error too). Adjusted p-values come from
:func:`scipy.stats.false_discovery_control` (BH) and ``min(1, m p)`` (Bonferroni).

>>> p = [0.001, 0.008, 0.039, 0.041, 0.042, 0.06, 0.074, 0.205]
>>> [round(v, 3) for v in adjust(p, "bh")]
[0.008, 0.032, 0.067, 0.067, 0.067, 0.08, 0.085, 0.205]
>>> reject(p, "bh", 0.05), reject(p, "bonferroni", 0.05)
([True, True, False, False, False, False, False, False], [True, False, False, False, False, False, False, False])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from scipy import stats

Correction = Literal["bonferroni", "bh"]


def adjust(p_values: Sequence[float] | NDArray[Any], method: Correction) -> list[float]:
    """Adjusted p-values (same order as given)."""
    p = np.asarray(p_values, dtype=np.float64)
    if p.size == 0:
        return []
    if np.any((p < 0) | (p > 1)) or not np.all(np.isfinite(p)):
        raise ValueError("p-values must be finite and within [0, 1]")
    if method == "bonferroni":
        return [float(v) for v in np.minimum(1.0, p * p.size)]
    if method == "bh":
        return [float(v) for v in stats.false_discovery_control(p, method="bh")]
    raise ValueError(f"unknown correction {method!r}: use 'bonferroni' or 'bh'")


def reject(p_values: Sequence[float] | NDArray[Any], method: Correction, alpha: float) -> list[bool]:
    """Which hypotheses (features) are rejected (drifted) at level ``alpha`` after correction."""
    return [v <= alpha for v in adjust(p_values, method)]
