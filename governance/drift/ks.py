"""Two-sample Kolmogorov–Smirnov test against a presorted reference.

The statistic is computed exactly as :func:`scipy.stats.ks_2samp` computes it (the largest gap
between the two empirical CDFs, evaluated at every point of both samples with
``searchsorted(..., side="right")``, so ties are handled the same way), but the reference is sorted
once, and its own CDF at its own points is cached: a window costs one sort of the live sample and
two ``searchsorted`` calls. The two-sided p-value is scipy's asymptotic one
(``scipy.stats.kstwo.sf(D, round(n1 n2 / (n1 + n2)))``, what ``ks_2samp(method="asymp")`` returns);
``method="exact"`` calls ``ks_2samp`` itself for the p-value (slow: ~2 ms at 256 vs 500). The
asymptotic p-value is cached per (D, effective n): the same number, computed once.

>>> import numpy as np
>>> from scipy import stats
>>> rng = np.random.default_rng(0)
>>> ref, live = rng.normal(size=300), rng.normal(0.5, 1.0, size=200)
>>> r = PresortedKS(ref).test(live)
>>> s = stats.ks_2samp(ref, live, method="asymp")
>>> bool(r.statistic == s.statistic and r.p_value == s.pvalue)
True
>>> r.p_value < 1e-4 and r.effect_size > 0.3
True

**Serially dependent samples** (consecutive feature vectors of one machine: overlapping PLC windows,
thermal lags, load episodes): the KS null distribution assumes independent draws, so its p-values are
far too small for autocorrelated series. With ``dependent=True`` (for the reference, at construction;
for the live sample, per call) each sample's size in the p-value is its *effective* size
``n_eff = n / tau``, ``tau`` the integrated autocorrelation time (:func:`autocorrelation_time`, Sokal's
automatic window; the larger of the live sample's and a time-ordered reference's estimate, since a short
window underestimates it), the standard correction for autocorrelated samples (D is unchanged).
For an AR(1) series ``tau = (1 + rho) / (1 - rho)``:

>>> x = np.zeros(2000); e = rng.normal(size=2000)
>>> for i in range(1, 2000): x[i] = 0.9 * x[i - 1] + e[i]
>>> 15 < autocorrelation_time(x) < 25  # (1 + 0.9) / (1 - 0.9) = 19
True
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from scipy import stats

KSMethod = Literal["asymp", "exact"]


@dataclass(frozen=True)
class KSResult:
    """One feature's KS test of a live window against the reference."""

    statistic: float  #: D, the largest gap between the empirical CDFs (0..1)
    p_value: float  #: two-sided
    effect_size: float  #: shift of the live median in reference standard deviations (signed; 0 when flat)
    n_reference: int
    n_live: int
    n_eff_reference: float = 0.0  #: effective sizes used in the p-value (= the sizes for independent samples)
    n_eff_live: float = 0.0


def autocorrelation_time(x: NDArray[Any], c: float = 5.0) -> float:
    """Integrated autocorrelation time ``tau = 1 + 2 sum_k rho_k`` of a series (finite values, in order),
    summed up to Sokal's automatic window (the first lag ``k >= c tau``); at least 1 (a series with no
    positive correlation, or a constant one, counts as independent)."""
    y = np.asarray(x, dtype=np.float64).ravel()
    y = y[np.isfinite(y)]
    n = y.size
    if n < 4:
        return 1.0
    y = y - y.mean()
    var = float(y @ y)
    if var <= 0.0:
        return 1.0
    f = np.fft.rfft(y, 2 * n)
    acf = np.fft.irfft(f * np.conj(f))[:n] / var
    taus = 1.0 + 2.0 * np.cumsum(acf[1:])
    lags = np.arange(1, n)
    stop = np.nonzero(lags >= c * taus)[0]
    tau = float(taus[stop[0]] if stop.size else taus[-1])
    return max(1.0, tau)


def effective_size(x: NDArray[Any]) -> float:
    """``n / tau``: how many independent draws an autocorrelated series is worth (finite values)."""
    n = int(np.isfinite(np.asarray(x, dtype=np.float64)).sum())
    return n / autocorrelation_time(x) if n else 0.0


@lru_cache(maxsize=1 << 16)
def asymptotic_p(d: float, en: float) -> float:
    """``kstwo.sf(d, en)`` clipped to [0, 1], as ``ks_2samp(method="asymp")``; cached, because D takes few
    distinct values (multiples of ``1 / lcm(n1, n2)``) and scipy's distribution call costs ~0.15 ms."""
    return float(np.clip(stats.kstwo.sf(d, en), 0.0, 1.0))


class PresortedKS:
    """KS tests of live samples against one fixed reference sample (NaNs dropped from both)."""

    def __init__(self, reference: NDArray[Any], method: KSMethod = "asymp", dependent: bool = False) -> None:
        ref = np.asarray(reference, dtype=np.float64).ravel()
        ref = ref[np.isfinite(ref)]
        #: integrated autocorrelation time of the reference (its vectors in time order when ``dependent``)
        self.tau = autocorrelation_time(ref) if dependent else 1.0
        self.dependent = dependent
        self.n_eff = ref.size / self.tau
        if ref.size == 0:
            raise ValueError("the reference sample has no finite values: fix the card's reference.npz")
        self.sorted = np.sort(ref)
        self.n = int(ref.size)
        self.method = method
        self._cdf_ref_at_ref = np.searchsorted(self.sorted, self.sorted, side="right") / self.n
        self._median = float(np.median(self.sorted))
        self._std = float(np.std(self.sorted))

    def statistic(self, live_sorted: NDArray[Any]) -> float:
        """D for an already sorted, finite live sample (the same arithmetic as ``ks_2samp``)."""
        m = live_sorted.size
        gap_at_ref = self._cdf_ref_at_ref - np.searchsorted(live_sorted, self.sorted, side="right") / m
        gap_at_live = np.searchsorted(self.sorted, live_sorted, side="right") / self.n - \
            np.searchsorted(live_sorted, live_sorted, side="right") / m
        max_s = max(float(gap_at_ref.max()), float(gap_at_live.max()))
        min_s = min(float(gap_at_ref.min()), float(gap_at_live.min()))
        min_s = float(np.clip(-min_s, 0, 1))
        return min_s if min_s > max_s else max_s

    def p_value(self, d: float, m: float, n: float | None = None) -> float:
        """Asymptotic p of D for sizes ``n`` (default: the reference's) and ``m`` (effective sizes allowed)."""
        big, small = sorted((float(self.n if n is None else n), float(m)), reverse=True)
        return asymptotic_p(d, float(max(1.0, np.round(big * small / (big + small)))))

    def test(self, live: NDArray[Any], dependent: bool = False) -> KSResult:
        """KS of ``live`` against the reference; ``dependent``: ``live`` is a time-ordered, autocorrelated
        series (its effective size enters the p-value, as the reference's does when it was built so)."""
        raw = np.asarray(live, dtype=np.float64).ravel()
        raw = raw[np.isfinite(raw)]
        x = np.sort(raw)
        if x.size == 0:
            raise ValueError("the live window has no finite values")
        d = self.statistic(x)
        # one dependence per feature: the larger of the two estimates (a short window alone underestimates
        # tau of a slowly wandering feature; the reference, when it is a time series too, is the longer one)
        tau = max(autocorrelation_time(raw), self.tau) if dependent else 1.0
        m_eff = x.size / tau
        n_eff = self.n / tau if self.dependent else float(self.n)
        if self.method == "exact" and tau == 1.0 and n_eff == self.n:
            p = float(stats.ks_2samp(self.sorted, x, method="exact").pvalue)
        elif tau == 1.0 and n_eff == self.n:
            p = self.p_value(d, x.size)
        else:
            p = self.p_value(d, m_eff, n_eff)
        shift = float(np.median(x)) - self._median
        effect = shift / self._std if self._std > 0 else (0.0 if shift == 0 else float(np.sign(shift)) * np.inf)
        return KSResult(float(d), p, float(effect), self.n, int(x.size), n_eff, m_eff)
