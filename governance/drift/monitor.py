"""Feature drift of one modality: per-asset and fleet windows, KS per feature, correction, hysteresis, cause.

Pure computation (no Redis): :mod:`governance.drift.service` feeds it the ``vector`` of every
features entry and turns its :class:`WindowDecision` values into ``DriftReport`` / ``AlertRequest``
entries.

* **Fleet scope**: the vectors of every asset pooled into windows of ``fleet_window`` and tested
  against the model card's reference sample (the training data the deployed model saw;
  ``fleet_reference="card"``, the default) or against the line's first fleet window (``"baseline"``).
* **Asset scope**: each asset's windows of ``window`` vectors, tested against the asset's own
  ``baseline`` (its first ``baseline_size`` vectors; ``asset_reference="baseline"``, the default:
  one machine is never distributed like a whole training fleet) or against the card's reference
  (``asset_reference="card"``).
* Each window: a two-sample KS test per feature (:mod:`~governance.drift.ks`), Bonferroni or
  Benjamini–Hochberg across the features (:mod:`~governance.drift.correction`) at ``alpha``, then
  :class:`~governance.drift.window.Hysteresis` (raise after k drifted windows, clear after m clean,
  cooldown) and a suspected cause (:mod:`~governance.drift.cause`).

What a live line needs on top of the tests (measured on a freshly started simulated line, docs/drift.md
"Live lines"):

* **Warm-up** (``warmup_ms``): an asset's first vectors are not what it produces later: PLC windows
  of 10 s sliding by 1 s hold 1..9 s of samples until the first full window, the thermal running
  baseline exists only after its first frames (``baseline.*`` = 0 before). Vectors from the first
  ``warmup_ms`` (event time since the asset's first vector) enter no baseline and no window.
* **Availability flags** (``gates``): features whose value exists only when a flag is 1 (thermal
  ``baseline.*`` behind ``baseline.baseline_available``) are tested on the rows where the flag is 1
  on both sides; the flag itself is not tested (the card's training sample mixes rows with and
  without a baseline; a warmed-up line always has one).
* **Practical significance** (``min_effect``): vectors of one asset are serially dependent (PLC
  windows overlap by 9/10, temperatures follow thermal lags of minutes, loads change in episodes),
  so a KS test of a few minutes of one machine against another few minutes rejects on natural
  wander that is statistically real but not drift. A feature counts as drifted only when its
  corrected p-value is at most ``alpha`` *and* its live median moved at least ``min_effect``
  standard deviations of the card's reference sample (the training fleet's spread: a fixed scale
  that does not shrink with a short, quiet baseline).
* **Serial dependence** (``serial``, ``min_n_eff``): the KS p-value of an asset window and of its
  baseline (both in time order) uses their effective sizes ``n / tau`` (``tau`` the integrated
  autocorrelation time per feature, :func:`~governance.drift.ks.autocorrelation_time`) instead of their
  lengths; a fleet window is ordered by asset first (one machine's vectors in a row), so ``tau`` is
  the machines' own. The card's reference rows are independent draws (n_eff = n). A feature whose
  window or baseline is worth fewer than ``min_n_eff`` independent draws is not tested in that
  window (a temperature with a thermal lag of minutes, in a window of a few minutes: there is no
  honest test of its distribution there); the report lists what was tested.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from governance.drift.cause import CauseHint, CauseRules
from governance.drift.correction import Correction, adjust
from governance.drift.ks import PresortedKS
from governance.drift.window import AlarmEvent, Hysteresis, VectorWindow, WindowData


@dataclass(frozen=True)
class FeatureTest:
    name: str
    statistic: float
    p_value: float
    p_adjusted: float
    effect_size: float
    drifted: bool


SkipReason = Literal["n_eff", "no_live_values", "no_reference", "availability_flag"]
SKIP_REASONS: dict[str, str] = {
    "n_eff": "worth fewer independent draws than min_n_eff (serial dependence): no honest test in this window",
    "no_live_values": "no finite live value (or none where its availability flag is 1) in this window",
    "no_reference": "no finite or varying reference value to test against",
    "availability_flag": "an availability flag: its gated features are tested where it is 1",
}


@dataclass(frozen=True)
class SkippedFeature:
    """A feature not tested in a window, and why (:data:`SKIP_REASONS`)."""

    name: str
    reason: SkipReason
    n_eff_live: float | None = None  #: with reason n_eff: the effective sizes of both sides
    n_eff_reference: float | None = None


@dataclass(frozen=True)
class WindowTests:
    tested: list[FeatureTest]  #: drifted first, then by p-value
    skipped: list[SkippedFeature]


@dataclass(frozen=True)
class WindowDecision:
    scope: Literal["asset", "fleet"]
    asset_id: str  #: the asset, or "fleet"
    start_ms: int
    end_ms: int
    n_live: int
    n_reference: int
    features: list[FeatureTest]  #: drifted first, then by p-value
    drifted: bool
    event: AlarmEvent
    raised: bool  #: the alarm state after this window
    cause: CauseHint | None
    skipped: list[SkippedFeature] = field(default_factory=list)  #: features not tested in this window

    @property
    def drifted_names(self) -> list[str]:
        return [f.name for f in self.features if f.drifted]


@dataclass(frozen=True)
class DriftParams:
    window: int = 200
    fleet_window: int = 500
    baseline_size: int = 300
    asset_reference: Literal["baseline", "card"] = "baseline"
    fleet_reference: Literal["card", "baseline"] = "card"  #: baseline: the first fleet window of the line
    alpha: float = 0.01
    correction: Correction = "bonferroni"
    raise_after: int = 2
    clear_after: int = 3
    cooldown: int = 2
    fleet_horizon_ms: int = 600_000
    rules: CauseRules = field(default_factory=CauseRules)
    single_device: str | None = None  #: "thermal camera" / "microphone": the modality is one sensor
    warmup_ms: int = 0  #: an asset's first vectors (event time since its first) count nowhere
    asset_windows: bool = True  #: False: no asset windows (fleet windows only) for this modality
    min_effect: float = 0.0  #: |median shift| in card-reference standard deviations needed to drift
    gates: tuple[tuple[str, str], ...] = ()  #: (feature prefix, availability flag): test only where flag == 1
    serial: bool = False  #: p-values from effective sizes n / tau of the (time-ordered) windows and baselines
    min_n_eff: float = 0.0  #: with ``serial``: a feature worth fewer independent draws is not tested


class DriftBoard:
    """Which modalities of which asset drifted lately, shared by the modalities' monitors (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: dict[tuple[str, str], int] = {}

    def record(self, asset_id: str, modality: str, drifted: bool, time_ms: int) -> None:
        with self._lock:
            if drifted:
                self._last[(asset_id, modality)] = time_ms
            else:
                self._last.pop((asset_id, modality), None)

    def others(self, asset_id: str, modality: str, now_ms: int, horizon_ms: int) -> set[str]:
        with self._lock:
            return {m for (a, m), t in self._last.items()
                    if a == asset_id and m != modality and abs(now_ms - t) <= horizon_ms}


def gate_columns(names: list[str], gates: tuple[tuple[str, str], ...]) -> dict[int, int]:
    """Feature column -> the column of the availability flag it depends on (flags themselves excluded).

    >>> gate_columns(["a.x", "baseline.available", "baseline.delta"], (("baseline.", "baseline.available"),))
    {2: 1}
    """
    out: dict[int, int] = {}
    for prefix, flag in gates:
        if flag not in names:
            continue
        g = names.index(flag)
        out.update({j: g for j, n in enumerate(names) if n.startswith(prefix) and j != g})
    return out


class ReferenceTests:
    """One :class:`PresortedKS` per feature of a reference matrix (n, n_features).

    ``gates`` (see :func:`gate_columns`): a gated feature is tested on the reference rows and live rows
    whose flag is 1; the flags are not tested. ``scale``: per-feature standard deviations that
    ``min_effect`` is measured in (the card's reference spread), else the reference's own.
    """

    def __init__(self, names: list[str], reference: NDArray[Any], gates: tuple[tuple[str, str], ...] = (),
                 scale: NDArray[Any] | None = None, dependent: bool = False) -> None:
        ref = np.asarray(reference, dtype=np.float64)
        if ref.ndim != 2 or ref.shape[1] != len(names):
            raise ValueError(f"reference of shape {ref.shape} does not match {len(names)} feature names")
        self.names = names
        self.n = ref.shape[0]
        self.gated = gate_columns(names, gates)
        flags = set(self.gated.values())
        self.tests: list[PresortedKS | None] = []
        for j in range(len(names)):
            col = ref[:, j] if j not in self.gated else ref[ref[:, self.gated[j]] >= 0.5, j]
            self.tests.append(PresortedKS(col, dependent=dependent)
                              if j not in flags and np.isfinite(col).any() else None)
        self.medians = np.array([t._median if t is not None else np.nan for t in self.tests])
        sd = np.nanstd(ref, axis=0) if scale is None else np.asarray(scale, dtype=np.float64)
        self.scale = np.where(np.isfinite(sd) & (sd > 0), sd, np.inf)

    def evaluate(self, window: NDArray[Any], alpha: float, correction: Correction,
                 min_effect: float = 0.0, dependent: bool = False, min_n_eff: float = 0.0) -> list[FeatureTest]:
        """The tested features of :meth:`evaluate_window` (drifted first, then by p-value)."""
        return self.evaluate_window(window, alpha, correction, min_effect, dependent, min_n_eff).tested

    def evaluate_window(self, window: NDArray[Any], alpha: float, correction: Correction,
                        min_effect: float = 0.0, dependent: bool = False, min_n_eff: float = 0.0) -> WindowTests:
        """Test each feature of ``window`` (rows in time order when ``dependent``); features worth fewer
        than ``min_n_eff`` independent draws on either side are not tested, and are listed with the others
        left out and why (see the module docstring)."""
        rows: list[tuple[str, float, float, float, float]] = []
        skipped: list[SkippedFeature] = []
        flags = set(self.gated.values())
        for j, (name, test) in enumerate(zip(self.names, self.tests)):
            if test is None:
                skipped.append(SkippedFeature(name, "availability_flag" if j in flags else "no_reference"))
                continue
            col = window[:, j] if j not in self.gated else window[window[:, self.gated[j]] >= 0.5, j]
            if not np.isfinite(col).any():
                skipped.append(SkippedFeature(name, "no_live_values"))
                continue
            r = test.test(col, dependent=dependent)
            if min(r.n_eff_reference, r.n_eff_live) < min_n_eff:
                skipped.append(SkippedFeature(name, "n_eff", round(float(r.n_eff_live), 1),
                                              round(float(r.n_eff_reference), 1)))
                continue
            practical = abs(float(np.nanmedian(col)) - float(self.medians[j])) / float(self.scale[j])
            rows.append((name, r.statistic, r.p_value, r.effect_size, practical))
        adjusted = adjust([p for _, _, p, _, _ in rows], correction)
        out = [FeatureTest(n, d, p, pa, e, pa <= alpha and shift >= min_effect)
               for (n, d, p, e, shift), pa in zip(rows, adjusted)]
        return WindowTests(sorted(out, key=lambda f: (not f.drifted, f.p_value)), skipped)


@dataclass
class _AssetState:
    window: VectorWindow
    hysteresis: Hysteresis
    baseline: list[NDArray[Any]] = field(default_factory=list)
    tests: ReferenceTests | None = None
    last_drifted: frozenset[str] = frozenset()
    last_end_ms: int = 0
    first_ms: int | None = None  #: event time of the asset's first vector (warm-up)


class FeatureDriftMonitor:
    """Windows, tests and alarm state of one modality (see the module docstring)."""

    def __init__(self, names: list[str], reference: NDArray[Any], params: DriftParams | None = None,
                 modality: str = "", board: DriftBoard | None = None) -> None:
        self.names = list(names)
        self.params = params or DriftParams()
        self.modality = modality
        self.board = board
        p = self.params
        ref = np.asarray(reference, dtype=np.float64)
        self.card_scale = np.nanstd(ref, axis=0) if ref.ndim == 2 else None
        self.card_tests = ReferenceTests(self.names, ref, p.gates)
        self.fleet_window = VectorWindow(p.fleet_window)
        self._fleet_assets: list[str] = []  #: the asset of each vector in the fleet window
        self.fleet_tests: ReferenceTests | None = self.card_tests if p.fleet_reference == "card" else None
        self.fleet_hysteresis = Hysteresis(p.raise_after, p.clear_after, p.cooldown)
        self.assets: dict[str, _AssetState] = {}

    def _asset(self, asset_id: str) -> _AssetState:
        st = self.assets.get(asset_id)
        if st is None:
            p = self.params
            st = _AssetState(VectorWindow(p.window), Hysteresis(p.raise_after, p.clear_after, p.cooldown),
                             tests=self.card_tests if p.asset_reference == "card" else None)
            self.assets[asset_id] = st
        return st

    def add(self, asset_id: str, vector: NDArray[Any], time_ms: int) -> list[WindowDecision]:
        """Add one live vector (the ``vector`` of a features entry); the decisions of windows it completed."""
        v = np.asarray(vector, dtype=np.float64).ravel()
        if v.size != len(self.names):
            raise ValueError(f"vector of {v.size} values, the model input has {len(self.names)} "
                             "(features version mismatch: upgrade the pipeline or the model)")
        out: list[WindowDecision] = []
        st = self._asset(asset_id)
        st.first_ms = time_ms if st.first_ms is None else min(st.first_ms, time_ms)
        if time_ms - st.first_ms < self.params.warmup_ms:  # the asset's features are still warming up
            return out
        if not self.params.asset_windows:
            pass
        elif st.tests is None:  # still collecting the asset's baseline
            st.baseline.append(v)
            if len(st.baseline) >= self.params.baseline_size:
                st.tests = ReferenceTests(self.names, np.vstack(st.baseline), self.params.gates, self.card_scale,
                                          dependent=self.params.serial)
                st.baseline = []
        elif st.window.add(v, time_ms):
            out.append(self._asset_decision(asset_id, st, st.window.take()))
        self._fleet_assets.append(asset_id)
        if self.fleet_window.add(v, time_ms):
            data = self.fleet_window.take()
            by_asset = np.argsort(np.asarray(self._fleet_assets), kind="stable")  # each machine's series in a row
            self._fleet_assets = []
            data = WindowData(data.values[by_asset], data.start_ms, data.end_ms)
            if self.fleet_tests is None:  # the line's first fleet window is its baseline
                self.fleet_tests = ReferenceTests(self.names, data.values, self.params.gates, self.card_scale,
                                                  dependent=self.params.serial)
            else:
                out.append(self._fleet_decision(data, self.fleet_tests))
        return out

    def _recent_drift(self, now_ms: int) -> dict[str, frozenset[str]]:
        horizon = self.params.fleet_horizon_ms
        return {a: s.last_drifted for a, s in self.assets.items()
                if s.last_end_ms and now_ms - s.last_end_ms <= horizon}

    def _asset_decision(self, asset_id: str, st: _AssetState, data: WindowData) -> WindowDecision:
        p = self.params
        assert st.tests is not None
        tests = st.tests.evaluate_window(data.values, p.alpha, p.correction, p.min_effect, p.serial, p.min_n_eff)
        feats = tests.tested
        drifted = any(f.drifted for f in feats)
        st.last_drifted = frozenset(f.name for f in feats if f.drifted)
        st.last_end_ms = data.end_ms
        event = st.hysteresis.update(drifted)
        others: set[str] = set()
        if self.board is not None:
            self.board.record(asset_id, self.modality, drifted, data.end_ms)
            others = self.board.others(asset_id, self.modality, data.end_ms, p.fleet_horizon_ms)
        cause = (p.rules.cause(asset_id, self._recent_drift(data.end_ms), p.single_device, others)
                 if drifted or st.hysteresis.raised else None)
        return WindowDecision("asset", asset_id, data.start_ms, data.end_ms, len(data.values), st.tests.n, feats,
                              drifted, event, st.hysteresis.raised, cause, tests.skipped)

    def _fleet_decision(self, data: WindowData, tests: ReferenceTests) -> WindowDecision:
        p = self.params
        window = tests.evaluate_window(data.values, p.alpha, p.correction, p.min_effect, p.serial, p.min_n_eff)
        feats = window.tested
        drifted = any(f.drifted for f in feats)
        event = self.fleet_hysteresis.update(drifted)
        cause = None
        if drifted or self.fleet_hysteresis.raised:
            fleet, k, n = p.rules.fleet_drifted(self._recent_drift(data.end_ms))
            cause = CauseHint("fleet", f"the pooled fleet window left the model's training reference; {k} of {n} "
                                       "assets drifted against their own baselines")
        return WindowDecision("fleet", "fleet", data.start_ms, data.end_ms, len(data.values), tests.n,
                              feats, drifted, event, self.fleet_hysteresis.raised, cause, window.skipped)
