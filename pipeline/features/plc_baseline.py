"""A machine's running pressure and normal vibration, learned from its own healthy-looking PLC windows.

The PLC model reads a window's pressure over the machine's nominal pressure
(:mod:`pipeline.features.plc_physics`). When ``assets.json`` has no ``pressure_nominal_bar`` the
vector falls back to the window's own mean (ratio 1, flag 0), so a cavitation pressure drop cannot
be told from the machine's normal level, and the model raises most of its healthy false alarms on
such machines (docs/models.md, "Healthy false-alarm budget, held out"). :class:`PlcBaseline`
learns that level per asset, the way thermal keeps a running baseline per asset, and the job feeds
it to the feature code as the nominal pressure, flagged as learned
(:meth:`~pipeline.features.asset_profile.AssetProfile.with_learned_pressure`).

It learns the machine's normal vibration level the same way (:meth:`PlcBaseline.observe_vibration`)
when ``assets.json`` has no ``vibration_normal_mm_s``: the model reads vibration as a level, and a
machine that runs above the training fleet's normal levels when healthy (a piston compressor) is
read relative to its own (:func:`pipeline.features.plc_physics.vibration_scale`,
:meth:`~pipeline.features.asset_profile.AssetProfile.with_normal_vibration`).

Which windows it learns from (:meth:`BaselineRules.classify`), by rules that do not need the
missing value:

* the machine runs (``run_state`` mean >= 0.99) at a steady speed (speed std / mean <= 2 %) and,
  when the nameplate speed is known, at it (within 10 %): a pump's nominal pressure is its pressure
  at rated speed, and vibration grows with speed;
* no alarm activation in the window other than ``A9xx`` (communication / nuisance), at most 20 %
  of its rows with Bad-quality values (those are left out of the statistics anyway), a pressure
  reading present and positive;
* the pressure is either *steady* (std / mean <= 2 %: a pump's discharge, a gearbox's lube oil;
  healthy pumps 0.5-1.6 %, cavitation past moderate 2.3-7.9 % on the simulator's fleets: cavitation
  makes the discharge pressure fluctuate, so a cavitating window is not learnt as normal) or
  *cyclic* (std / mean >= 30 %: a press's or compressor's pressure follows its stroke, 0.7-1.4);
  anything between is rejected. A steady machine's level is the window mean, a cyclic one's the
  window maximum (the pressure its stroke reaches: max / nameplate 1.00-1.02 on presses and
  compressors, while their mean is 0.24-0.61 of it);
* for the vibration (:meth:`BaselineRules.vibration_level`): the same running, speed, alarm and
  quality rules (no pressure needed) and a vibration reading present and positive; the level is the
  window mean;
* at most one window per ``min_gap_ms`` (the job's windows slide by 1 s and overlap: one in ten
  is independent data).

After ``windows`` accepted windows the level is the median of the majority kind's values,
provided the windows agree (at least 80 % of one kind, interquartile range <= ``max_spread`` x
median; ``max_vibration_spread`` for the vibration); if they do not (the machine changed state during
the learning period), the older half is dropped and learning continues. Once learned the value is kept (the state survives checkpoints
and restores) until :meth:`PlcBaseline.reset` (the job resets an asset whose entry in
``flink.plc_pressure_baseline_relearn`` differs from the generation it learnt under). A machine that starts faulty: cavitating
windows fail the steadiness rule, so it learns nothing until it runs steadily (behaviour as
today); a fault mild enough to pass the rules is learnt as the machine's level (measured in
``bench/bench_plc_baseline.py``, docs/models.md). An imbalance present while the vibration is learnt
is learnt as normal where it lifts the level above the fleet's normal range: read relative to it,
it is not found until the baseline is learnt again.

>>> from pipeline.features.plc_window import plc_feature_names
>>> names = plc_feature_names()
>>> def window(p: float) -> np.ndarray:
...     w = np.zeros(len(names)); w[names.index("run_state.mean")] = 1.0
...     w[names.index("speed_rpm.mean")] = 1480.0; w[names.index("pressure_bar.mean")] = p
...     w[names.index("pressure_bar.std")] = 0.01 * p; return w
>>> b = PlcBaseline(BaselineRules(windows=3))
>>> [b.observe(window(p), end_ms=10_000 * i) for i, p in enumerate([4.0, 4.2, 4.1])], b.learned_bar
([False, False, True], 4.1)
>>> PlcBaseline.from_state(b.to_state()).learned_bar
4.1
"""

from __future__ import annotations

from dataclasses import dataclass, field

import math

import numpy as np

from pipeline.features.plc_window import WINDOW_MS, plc_feature_names

_INDEX = {name: i for i, name in enumerate(plc_feature_names())}
_SERIOUS_ALARMS = ("A1xx", "A2xx", "A3xx", "A4xx", "A5xx", "other")
STEADY, CYCLIC = "steady", "cyclic"


@dataclass(frozen=True)
class BaselineRules:
    """How :class:`PlcBaseline` learns (``windows``: the learning period, in accepted windows)."""

    windows: int = 60
    min_gap_ms: int = WINDOW_MS
    min_run: float = 0.99
    max_speed_cv: float = 0.02
    speed_tolerance: float = 0.10
    max_bad_frac: float = 0.2
    max_pressure_cv: float = 0.02
    min_cyclic_cv: float = 0.30
    min_agreement: float = 0.8
    max_spread: float = 0.10
    max_vibration_spread: float = 0.25

    def _operating(self, raw: np.ndarray, nominal_rpm: float | None) -> str | None:
        """Why a window does not show the machine in its normal operation (None: it does)."""

        def g(name: str) -> float:
            return float(raw[_INDEX[name]])

        run = g("run_state.mean")
        if not (np.isfinite(run) and run >= self.min_run):
            return "not_running"
        s, s_std = g("speed_rpm.mean"), g("speed_rpm.std")
        if not (np.isfinite(s) and s > 0 and np.isfinite(s_std)) or s_std / s > self.max_speed_cv:
            return "speed_not_steady"
        if nominal_rpm and abs(s / nominal_rpm - 1.0) > self.speed_tolerance:
            return "not_at_rated_speed"
        if any(g(f"alarms.{f}") > 0 for f in _SERIOUS_ALARMS):
            return "alarm"
        if not g("bad_quality_frac") <= self.max_bad_frac:
            return "bad_quality"
        return None

    def vibration_level(self, raw: np.ndarray, nominal_rpm: float | None = None) -> tuple[str, float]:
        """``("steady", level)`` of a window whose vibration can be learnt, else ``(reason, nan)``."""
        v = float(raw[_INDEX["vibration_rms_mm_s.mean"]])
        if not (np.isfinite(v) and v > 1e-3):
            return "no_vibration", math.nan
        reason = self._operating(raw, nominal_rpm)
        return (reason, math.nan) if reason is not None else (STEADY, v)

    def classify(self, raw: np.ndarray, nominal_rpm: float | None = None) -> tuple[str, float]:
        """``("steady" | "cyclic", level)`` of an eligible window (raw features,
        :func:`~pipeline.features.plc_window.plc_feature_names`), else ``(reason, nan)``."""

        def g(name: str) -> float:
            return float(raw[_INDEX[name]])

        p, p_std, p_max = g("pressure_bar.mean"), g("pressure_bar.std"), g("pressure_bar.max")
        if not (np.isfinite(p) and p > 1e-3 and np.isfinite(p_std) and np.isfinite(p_max)):
            return "no_pressure", math.nan
        reason = self._operating(raw, nominal_rpm)
        if reason is not None:
            return reason, math.nan
        cv = p_std / p
        if cv <= self.max_pressure_cv:
            return STEADY, p
        if cv >= self.min_cyclic_cv:
            return CYCLIC, p_max
        return "pressure_not_steady", math.nan


@dataclass
class PlcBaseline:
    """Per-asset learner of the running pressure level and the normal vibration level (JSON state via
    :meth:`to_state`; a state written before the vibration was learnt loads with nothing of it learnt)."""

    rules: BaselineRules = field(default_factory=BaselineRules)
    values: list[float] = field(default_factory=list)
    cyclic: list[bool] = field(default_factory=list)
    last_ms: int | None = None
    learned_bar: float | None = None
    learned_at_ms: int | None = None
    learned_kind: str | None = None
    seen: int = 0
    rejected: dict[str, int] = field(default_factory=dict)
    restarts: int = 0
    generation: int = 0  #: bumped by the operator to learn again (``flink.plc_pressure_baseline_relearn``)
    vib_values: list[float] = field(default_factory=list)
    vib_last_ms: int | None = None
    learned_vib_mm_s: float | None = None
    learned_vib_at_ms: int | None = None
    vib_rejected: dict[str, int] = field(default_factory=dict)
    vib_restarts: int = 0

    @property
    def learned(self) -> bool:
        return self.learned_bar is not None

    def observe(self, raw: np.ndarray, end_ms: int, nominal_rpm: float | None = None) -> bool:
        """Offer one window (raw features, window end); True when this window completed the learning."""
        if self.learned_bar is not None:
            return False
        self.seen += 1
        if self.last_ms is not None and end_ms - self.last_ms < self.rules.min_gap_ms:
            return False
        kind, level = self.rules.classify(np.asarray(raw, dtype=np.float64), nominal_rpm)
        if kind not in (STEADY, CYCLIC):
            self.rejected[kind] = self.rejected.get(kind, 0) + 1
            return False
        self.last_ms = int(end_ms)
        self.values.append(float(level))
        self.cyclic.append(kind == CYCLIC)
        if len(self.values) < self.rules.windows:
            return False
        flags = np.asarray(self.cyclic)
        majority = bool(flags.mean() >= 0.5)
        v = np.asarray(self.values)[flags == majority]
        median = float(np.median(v))
        q25, q75 = np.percentile(v, [25, 75])
        if len(v) < self.rules.min_agreement * len(flags) or q75 - q25 > self.rules.max_spread * median:
            half = len(self.values) // 2
            self.values, self.cyclic = self.values[half:], self.cyclic[half:]
            self.restarts += 1
            return False
        self.learned_bar, self.learned_at_ms, self.learned_kind = round(median, 4), int(end_ms), CYCLIC if majority else STEADY
        self.values, self.cyclic = [], []
        return True

    def observe_vibration(self, raw: np.ndarray, end_ms: int, nominal_rpm: float | None = None) -> bool:
        """Offer one window to the vibration learner; True when this window completed the learning.

        >>> from pipeline.features.plc_window import plc_feature_names
        >>> names = plc_feature_names()
        >>> def window(v: float) -> np.ndarray:
        ...     w = np.zeros(len(names)); w[names.index("run_state.mean")] = 1.0
        ...     w[names.index("speed_rpm.mean")] = 990.0; w[names.index("vibration_rms_mm_s.mean")] = v; return w
        >>> b = PlcBaseline(BaselineRules(windows=3))
        >>> [b.observe_vibration(window(v), end_ms=10_000 * i) for i, v in enumerate([6.1, 5.8, 6.4])], b.learned_vib_mm_s
        ([False, False, True], 6.1)
        """
        if self.learned_vib_mm_s is not None:
            return False
        if self.vib_last_ms is not None and end_ms - self.vib_last_ms < self.rules.min_gap_ms:
            return False
        kind, level = self.rules.vibration_level(np.asarray(raw, dtype=np.float64), nominal_rpm)
        if kind != STEADY:
            self.vib_rejected[kind] = self.vib_rejected.get(kind, 0) + 1
            return False
        self.vib_last_ms = int(end_ms)
        self.vib_values.append(float(level))
        if len(self.vib_values) < self.rules.windows:
            return False
        v = np.asarray(self.vib_values)
        median = float(np.median(v))
        q25, q75 = np.percentile(v, [25, 75])
        if q75 - q25 > self.rules.max_vibration_spread * median:
            self.vib_values = self.vib_values[len(self.vib_values) // 2:]
            self.vib_restarts += 1
            return False
        self.learned_vib_mm_s, self.learned_vib_at_ms, self.vib_values = round(median, 4), int(end_ms), []
        return True

    def reset(self) -> None:
        """Forget the learned levels and learn again (e.g. after the machine was serviced)."""
        self.values, self.cyclic, self.last_ms = [], [], None
        self.learned_bar, self.learned_at_ms, self.learned_kind = None, None, None
        self.seen, self.rejected, self.restarts = 0, {}, 0
        self.vib_values, self.vib_last_ms, self.learned_vib_mm_s, self.learned_vib_at_ms = [], None, None, None
        self.vib_rejected, self.vib_restarts = {}, 0

    def to_state(self) -> dict[str, object]:
        return {"windows": self.rules.windows, "values": self.values, "cyclic": self.cyclic,
                "last_ms": self.last_ms, "learned_kind": self.learned_kind,
                "learned_bar": self.learned_bar, "learned_at_ms": self.learned_at_ms, "seen": self.seen,
                "rejected": self.rejected, "restarts": self.restarts, "generation": self.generation,
                "vibration": {"values": self.vib_values, "last_ms": self.vib_last_ms,
                              "learned_mm_s": self.learned_vib_mm_s, "learned_at_ms": self.learned_vib_at_ms,
                              "rejected": self.vib_rejected, "restarts": self.vib_restarts}}

    @classmethod
    def from_state(cls, state: dict[str, object], rules: BaselineRules | None = None) -> PlcBaseline:
        """Rebuild from :meth:`to_state`; ``rules`` (the job's current setting) override the stored period."""
        rules = rules or BaselineRules(windows=int(state.get("windows", BaselineRules.windows)))  # type: ignore[call-overload]
        learned, at, last = state.get("learned_bar"), state.get("learned_at_ms"), state.get("last_ms")
        kind = state.get("learned_kind")
        vib: dict[str, object] = dict(state.get("vibration") or {})  # type: ignore[call-overload]
        v_learned, v_at, v_last = vib.get("learned_mm_s"), vib.get("learned_at_ms"), vib.get("last_ms")
        return cls(rules=rules, values=[float(x) for x in state.get("values", [])],  # type: ignore[attr-defined]
                   cyclic=[bool(x) for x in state.get("cyclic", [])],  # type: ignore[attr-defined]
                   learned_kind=None if kind is None else str(kind),
                   last_ms=None if last is None else int(last),  # type: ignore[call-overload]
                   learned_bar=None if learned is None else float(learned),  # type: ignore[arg-type]
                   learned_at_ms=None if at is None else int(at),  # type: ignore[call-overload]
                   seen=int(state.get("seen", 0)),  # type: ignore[call-overload]
                   rejected={str(k): int(v) for k, v in dict(state.get("rejected", {})).items()},  # type: ignore[call-overload]
                   restarts=int(state.get("restarts", 0)),  # type: ignore[call-overload]
                   generation=int(state.get("generation", 0)),  # type: ignore[call-overload]
                   vib_values=[float(x) for x in vib.get("values", [])],  # type: ignore[attr-defined]
                   vib_last_ms=None if v_last is None else int(v_last),  # type: ignore[call-overload]
                   learned_vib_mm_s=None if v_learned is None else float(v_learned),  # type: ignore[arg-type]
                   learned_vib_at_ms=None if v_at is None else int(v_at),  # type: ignore[call-overload]
                   vib_rejected={str(k): int(v) for k, v in dict(vib.get("rejected", {})).items()},  # type: ignore[call-overload]
                   vib_restarts=int(vib.get("restarts", 0)))  # type: ignore[call-overload]


@dataclass(frozen=True)
class PlcHealthyLevels:
    """What a healthy recording of a machine says about its normal operation (None: no window showed it)."""

    pressure_bar: float | None
    vibration_mm_s: float | None
    windows: int  #: windows read
    rejected: dict[str, int] = field(default_factory=dict)  #: why windows were not used (either level)


def healthy_levels(raws: list[np.ndarray], nominal_rpm: float | None = None,
                   rules: BaselineRules | None = None) -> PlcHealthyLevels:
    """The running pressure and normal vibration of windows a user says are healthy (``linewatch inspect
    --healthy-plc``): the job's window rules (:class:`BaselineRules`), the median over the windows that
    pass (the pressure over its majority kind, steady or cyclic), without the job's learning period.

    >>> from pipeline.features.plc_window import plc_feature_names
    >>> names = plc_feature_names()
    >>> def window(p: float, v: float) -> np.ndarray:
    ...     w = np.zeros(len(names)); w[names.index("run_state.mean")] = 1.0
    ...     w[names.index("speed_rpm.mean")] = 1480.0; w[names.index("pressure_bar.mean")] = p
    ...     w[names.index("pressure_bar.std")] = 0.01 * p; w[names.index("vibration_rms_mm_s.mean")] = v; return w
    >>> healthy_levels([window(4.0, 6.0), window(4.2, 6.4), window(4.1, 5.0)], 1480.0)
    PlcHealthyLevels(pressure_bar=4.1, vibration_mm_s=6.0, windows=3, rejected={})
    """
    rules = rules or BaselineRules()
    pressures: list[tuple[bool, float]] = []
    vibrations: list[float] = []
    rejected: dict[str, int] = {}
    for raw in raws:
        raw = np.asarray(raw, dtype=np.float64)
        kind, level = rules.classify(raw, nominal_rpm)
        if kind in (STEADY, CYCLIC):
            pressures.append((kind == CYCLIC, level))
        kind, level = rules.vibration_level(raw, nominal_rpm)
        if kind == STEADY:
            vibrations.append(level)
        else:
            rejected[kind] = rejected.get(kind, 0) + 1
    pressure = None
    if pressures:
        cyclic = float(np.mean([c for c, _ in pressures])) >= 0.5
        pressure = round(float(np.median([v for c, v in pressures if c == cyclic])), 4)
    vibration = round(float(np.median(vibrations)), 4) if vibrations else None
    return PlcHealthyLevels(pressure, vibration, len(raws), rejected)
