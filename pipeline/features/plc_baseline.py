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
machine that runs above the training fleet's normal levels when healthy (a piston compressor), or well
below a typical machine's (a smooth fan, where a doubling would still look healthy), is read relative to
its own (:func:`pipeline.features.plc_physics.vibration_scale`,
:meth:`~pipeline.features.asset_profile.AssetProfile.with_normal_vibration`).

Which windows it learns from (:meth:`BaselineRules.classify`), by rules that do not need the
missing value:

* the machine runs (``run_state`` mean >= 0.99; a historian without a run-state tag: the speed
  says it) at a steady speed (speed std / mean <= 2 %; without a speed tag nothing is learnt,
  ``no_speed``, except on a machine on the mains with a nameplate speed and a run state: it runs at
  that speed, :func:`with_nameplate_speed`) and, when the nameplate speed is known, at it (within 10 %): a pump's nominal
  pressure is its pressure at rated speed, and vibration grows with speed;
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

It learns how warm the machine's winding runs when healthy (:meth:`PlcBaseline.observe_winding`):
the winding-over-bearing temperature per unit of the winding's load heat,
``(T_winding - T_bearing) / (0.2 + 0.8 (I / I_rated)^2)`` (:func:`winding_ratio`, in K at rated
current; the hall temperature cancels in the difference). One window cannot tell a healthy motor that
runs hot from a cool-running one whose fan has failed; read against the machine's own level it can
(:func:`pipeline.features.plc_physics.winding_scale`). The rated current must be known (nameplate or
estimated from the rated power); the same running, speed, alarm and quality rules as the vibration
(a drive that shows no window at nameplate speed gives it from its slower windows, down to
``min_winding_speed``, read as at nameplate speed: :meth:`BaselineRules.winding_level`; in the job after
``below_speed_wait_ms`` of such windows, :meth:`PlcBaseline.observe_winding`; from a healthy export given
to ``linewatch inspect``, :func:`healthy_levels`); and the machine must have run for
``winding_settle_ms`` since the last standstill the learner saw (a winding heats with a time constant
of tens of minutes after a start: learnt while it warms, the level would be too low). The windows must agree: interquartile range at most ``max_winding_spread`` x the
median or ``min_winding_spread_k``, whichever is larger, else the older half is dropped. A cooling
failure present while the level is learnt is learnt as the machine's normal: the level is too high,
so the machine is read less keenly than with a true level, and never below one window's reading (the
reading only ever scales a winding up, never down); that failure itself then reads as normal, as one
window of a hot motor does.

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

from collections.abc import Mapping
from dataclasses import dataclass, field

import math

import numpy as np

from pipeline.features.asset_profile import AssetProfile
from pipeline.features.plc_physics import load_heat, ventilation_share
from pipeline.features.plc_window import WINDOW_MS, plc_feature_names

_INDEX = {name: i for i, name in enumerate(plc_feature_names())}
_SERIOUS_ALARMS = ("A1xx", "A2xx", "A3xx", "A4xx", "A5xx", "other")
STEADY, CYCLIC = "steady", "cyclic"


def winding_ratio(raw: np.ndarray, rated_current_a: float) -> float:
    """A window's winding-over-bearing temperature per unit of the winding's load heat, in K at rated
    current: ``(T_winding - T_bearing) / (0.2 + 0.8 (I / I_rated)^2)`` (the copper losses grow with the
    square of the current; a fifth of the rise at rated current is there at no load). NaN without a winding
    or bearing temperature or a current.

    >>> from pipeline.features.plc_window import plc_feature_names
    >>> names = plc_feature_names(); w = np.zeros(len(names))
    >>> w[names.index("winding_temp_c.mean")], w[names.index("bearing_temp_c.mean")] = 75.0, 45.0
    >>> w[names.index("motor_current_a.mean")] = 10.0
    >>> round(winding_ratio(w, 20.0), 2), round(winding_ratio(w, 10.0), 2)
    (75.0, 30.0)
    """
    w, b, i = (float(raw[_INDEX[n]]) for n in ("winding_temp_c.mean", "bearing_temp_c.mean", "motor_current_a.mean"))
    if not (np.isfinite(w) and np.isfinite(b) and np.isfinite(i) and i > 0 and rated_current_a > 0):
        return math.nan
    return (w - b) / load_heat(i, rated_current_a)


def _agreeing_median(values: list[float], max_spread: float, min_spread: float) -> float | None:
    """The median of ``values`` when they agree (interquartile range at most ``max_spread`` x |median| or
    ``min_spread``, whichever is larger), else None.

    >>> _agreeing_median([6.0, 6.1, 5.9, 6.2], 0.25, 0.0), _agreeing_median([2.0, 2.1, 6.0, 6.2], 0.25, 0.0)
    (6.05, None)
    """
    median = float(np.median(values))
    q25, q75 = np.percentile(values, [25, 75])
    return median if q75 - q25 <= max(max_spread * abs(median), min_spread) else None


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
    winding_settle_ms: int = 3_600_000
    max_winding_spread: float = 0.25
    min_winding_spread_k: float = 5.0
    #: The slowest a drive may run (speed over nameplate speed) for a window to give its winding level.
    min_winding_speed: float = 0.3
    #: How long after its first window below nameplate speed a drive with no window at it learnt yet learns its
    #: winding level from its slower windows (:meth:`PlcBaseline.observe_winding`).
    below_speed_wait_ms: int = 3_600_000

    def _operating(self, raw: np.ndarray, nominal_rpm: float | None, slowest: float | None = None) -> str | None:
        """Why a window does not show the machine in its normal operation (None: it does). ``slowest``: the
        least speed over nameplate speed accepted (default: within ``speed_tolerance`` of it)."""

        def g(name: str) -> float:
            return float(raw[_INDEX[name]])

        run = g("run_state.mean")
        if np.isfinite(run) and run < self.min_run:
            return "not_running"
        s, s_std = g("speed_rpm.mean"), g("speed_rpm.std")
        if not np.isfinite(s):  # without a run state either, nothing says the machine ran
            return "no_speed"
        if not (s > 0 and np.isfinite(s_std)) or s_std / s > self.max_speed_cv:
            return "speed_not_steady"
        low = 1.0 - self.speed_tolerance if slowest is None else slowest
        if nominal_rpm and not low <= s / nominal_rpm <= 1.0 + self.speed_tolerance:
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

    def winding_settled(self, raw: np.ndarray, end_ms: int | None, standstill_ms: int | None
                        ) -> tuple[int | None, str | None]:
        """The end of the machine's newest standstill after this window (in time order), and why the
        window does not show a settled winding (``"not_running"``, ``"settling"``: within
        ``winding_settle_ms`` after a standstill) or None. A machine whose standstill was never seen ran
        before the data began and counts as settled; without ``end_ms`` nothing is settling.

        >>> from pipeline.features.plc_window import plc_feature_names
        >>> w = np.zeros(len(plc_feature_names())); rules = BaselineRules(winding_settle_ms=60_000)
        >>> rules.winding_settled(w, 10_000, None)  # run_state 0: standing still
        (10000, 'not_running')
        >>> w[plc_feature_names().index("run_state.mean")] = 1.0
        >>> rules.winding_settled(w, 40_000, 10_000), rules.winding_settled(w, 70_000, 10_000)
        ((10000, 'settling'), (10000, None))
        """
        run = float(raw[_INDEX["run_state.mean"]])
        if np.isfinite(run) and run < self.min_run:  # the winding cools, and warms again after the start
            return end_ms, "not_running"
        if end_ms is not None and standstill_ms is not None and end_ms - standstill_ms < self.winding_settle_ms:
            return standstill_ms, "settling"
        return standstill_ms, None

    def winding_level(self, raw: np.ndarray, nominal_rpm: float | None = None,
                      rated_current_a: float | None = None, profile: AssetProfile | None = None
                      ) -> tuple[str, float]:
        """``("steady", ratio)`` of a window whose winding temperature can be learnt (:func:`winding_ratio`),
        else ``(reason, nan)``. The settling time after a start is the learner's (it needs the window order).

        With the machine's ``profile``, a machine on a drive gives its level below nameplate speed too, down to
        ``min_winding_speed``: a self-ventilated motor's ratio there is read times
        :func:`~pipeline.features.plc_physics.ventilation_share`, as its fan would cool it at nameplate speed
        (the level the model input reads the winding against); a motor cooled otherwise as measured.

        >>> from pipeline.features.plc_window import plc_feature_names
        >>> names = plc_feature_names(); w = np.zeros(len(names)); w[names.index("run_state.mean")] = 1.0
        >>> w[names.index("speed_rpm.mean")], w[names.index("motor_current_a.mean")] = 740.0, 20.0
        >>> w[names.index("winding_temp_c.mean")], w[names.index("bearing_temp_c.mean")] = 90.0, 40.0
        >>> rules, drive = BaselineRules(), AssetProfile(vfd=True)
        >>> rules.winding_level(w, 1480.0, 20.0), rules.winding_level(w, 1480.0, 20.0, AssetProfile())
        (('not_at_rated_speed', nan), ('not_at_rated_speed', nan))
        >>> kind, level = rules.winding_level(w, 1480.0, 20.0, drive); kind, round(level, 1)
        ('steady', 35.8)
        >>> round(rules.winding_level(w, 1480.0, 20.0, AssetProfile(vfd=True, self_ventilated=False))[1], 1)
        50.0
        """
        if rated_current_a is None or not (np.isfinite(rated_current_a) and rated_current_a > 0):
            return "no_rated_current", math.nan
        ratio = winding_ratio(raw, rated_current_a)
        if not np.isfinite(ratio):
            return "no_winding_temperature", math.nan
        drive = profile is not None and profile.vfd
        reason = self._operating(raw, nominal_rpm, self.min_winding_speed if drive else None)
        if reason is not None:
            return reason, math.nan
        if profile is not None and nominal_rpm:
            ratio *= ventilation_share(float(raw[_INDEX["speed_rpm.mean"]]) / nominal_rpm, profile)
        return STEADY, ratio

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
class LevelLearner:
    """One level of a machine learnt from its own windows (in time order): the median of a learning
    period's accepted values when they agree (:func:`_agreeing_median`); when they do not, the older
    half is dropped and learning goes on (``restarts``). The vibration and the winding learners of
    :class:`PlcBaseline` are two of these; the pressure learner keeps its own (steady or cyclic).

    >>> lv = LevelLearner()
    >>> [lv.offer(STEADY, v, 10_000 * i, BaselineRules(windows=3), 0.25, 0.0) for i, v in enumerate([6.1, 5.8, 6.4])]
    [False, False, True]
    >>> lv.learned, lv.offer("alarm", 9.0, 40_000, BaselineRules(windows=3), 0.25, 0.0), lv.rejected
    (6.1, False, {})
    """

    values: list[float] = field(default_factory=list)
    last_ms: int | None = None
    learned: float | None = None
    learned_at_ms: int | None = None
    rejected: dict[str, int] = field(default_factory=dict)
    restarts: int = 0

    def reject(self, why: str) -> None:
        self.rejected[why] = self.rejected.get(why, 0) + 1

    def offer(self, kind: str, level: float, end_ms: int, rules: BaselineRules, max_spread: float,
              min_spread: float, digits: int = 4) -> bool:
        """Offer one window's ``(kind, level)``; True when it completed the learning. Windows closer than
        ``rules.min_gap_ms`` to the last accepted one are skipped; a ``kind`` other than steady is counted
        as a rejection."""
        if self.learned is not None:
            return False
        if self.last_ms is not None and end_ms - self.last_ms < rules.min_gap_ms:
            return False
        if kind != STEADY:
            self.reject(kind)
            return False
        self.last_ms = int(end_ms)
        self.values.append(float(level))
        if len(self.values) < rules.windows:
            return False
        median = _agreeing_median(self.values, max_spread, min_spread)
        if median is None:
            self.values = self.values[len(self.values) // 2:]
            self.restarts += 1
            return False
        self.learned, self.learned_at_ms, self.values = round(median, digits), int(end_ms), []
        return True

    def to_state(self, learned_key: str) -> dict[str, object]:
        return {"values": self.values, "last_ms": self.last_ms, learned_key: self.learned,
                "learned_at_ms": self.learned_at_ms, "rejected": self.rejected, "restarts": self.restarts}

    @classmethod
    def from_state(cls, state: Mapping[str, object], learned_key: str) -> LevelLearner:
        """Rebuild from :meth:`to_state`; an empty mapping (a state written before this level was learnt)
        gives a learner with nothing learnt."""
        def opt_int(x: object) -> int | None:
            return None if x is None else int(x)  # type: ignore[call-overload]

        learned = state.get(learned_key)
        return cls(values=[float(x) for x in state.get("values", [])],  # type: ignore[attr-defined]
                   last_ms=opt_int(state.get("last_ms")),
                   learned=None if learned is None else float(learned),  # type: ignore[arg-type]
                   learned_at_ms=opt_int(state.get("learned_at_ms")),
                   rejected={str(k): int(v) for k, v in dict(state.get("rejected", {})).items()},  # type: ignore[call-overload]
                   restarts=int(state.get("restarts", 0)))  # type: ignore[call-overload]


@dataclass
class PlcBaseline:
    """Per-asset learner of the running pressure level, the normal vibration level and the healthy winding
    level (JSON state via :meth:`to_state`; a state written before the vibration or the winding was learnt
    loads with nothing of it learnt)."""

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
    vibration: LevelLearner = field(default_factory=LevelLearner)  #: mm/s RMS
    winding: LevelLearner = field(default_factory=LevelLearner)  #: K at rated current (:func:`winding_ratio`)
    win_standstill_ms: int | None = None  #: end of the newest window in which the machine stood still
    #: end of the first window of a drive below nameplate speed the winding learner saw, none at it learnt yet
    win_below_since_ms: int | None = None
    win_below: bool = False  #: the winding learner reads a drive's windows below nameplate speed too

    @property
    def learned(self) -> bool:
        return self.learned_bar is not None

    @property
    def learned_vib_mm_s(self) -> float | None:
        return self.vibration.learned

    @property
    def learned_winding_k(self) -> float | None:
        return self.winding.learned

    @property
    def winding_unavailable(self) -> bool:
        """True when a learning period of the machine's running windows had no winding or bearing temperature
        (or current) and none had: its historian has no such tags, and there is nothing to learn."""
        return not self.winding.values and self.winding.rejected.get("no_winding_temperature", 0) >= self.rules.windows

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
        if self.vibration.learned is not None:
            return False
        kind, level = self.rules.vibration_level(np.asarray(raw, dtype=np.float64), nominal_rpm)
        return self.vibration.offer(kind, level, int(end_ms), self.rules, self.rules.max_vibration_spread, 0.0)

    def observe_winding(self, raw: np.ndarray, end_ms: int, nominal_rpm: float | None = None,
                        rated_current_a: float | None = None, profile: AssetProfile | None = None) -> bool:
        """Offer one window (in time order) to the winding learner; True when this window completed the learning.

        It learns at nameplate speed: a drive's slower windows, read as at it, disagree with those at it more
        than the learner's spread rule allows (docs/models.md, "PLC: a drive's winding level below nameplate
        speed"). A drive (``profile.vfd``) that has run below it for
        ``rules.below_speed_wait_ms`` since its first such window, with no window at nameplate speed learnt
        in that time, learns from its slower windows from then on (:meth:`BaselineRules.winding_level`).

        >>> from pipeline.features.plc_window import plc_feature_names
        >>> names = plc_feature_names()
        >>> def window(run: float, w: float) -> np.ndarray:
        ...     x = np.zeros(len(names)); x[names.index("run_state.mean")] = run
        ...     x[names.index("speed_rpm.mean")] = 1480.0; x[names.index("motor_current_a.mean")] = 20.0
        ...     x[names.index("winding_temp_c.mean")], x[names.index("bearing_temp_c.mean")] = w, 40.0; return x
        >>> b = PlcBaseline(BaselineRules(windows=3, winding_settle_ms=30_000))
        >>> [b.observe_winding(window(r, w), 10_000 * i, 1480.0, 20.0)  # a stop at 10 s; settled from 40 s
        ...  for i, (r, w) in enumerate([(1, 80), (0, 40), (1, 50), (1, 60), (1, 79), (1, 81)])]
        [False, False, False, False, False, True]
        >>> b.learned_winding_k, b.winding.rejected
        (40.0, {'not_running': 1, 'settling': 2})
        """
        if self.winding.learned is not None:
            return False
        raw = np.asarray(raw, dtype=np.float64)
        self.win_standstill_ms, why = self.rules.winding_settled(raw, int(end_ms), self.win_standstill_ms)
        if why is not None:
            self.winding.reject(why)
            return False
        kind, level = self.rules.winding_level(raw, nominal_rpm, rated_current_a, profile if self.win_below else None)
        if kind == "not_at_rated_speed" and profile is not None and profile.vfd and not self.winding.values:
            slower = self.rules.winding_level(raw, nominal_rpm, rated_current_a, profile)
            if slower[0] == STEADY:  # below nameplate speed, not slower than the learner reads
                self.win_below_since_ms = int(end_ms) if self.win_below_since_ms is None else self.win_below_since_ms
                self.win_below = int(end_ms) - self.win_below_since_ms >= self.rules.below_speed_wait_ms
                kind, level = slower if self.win_below else (kind, level)
        return self.winding.offer(kind, level, int(end_ms), self.rules, self.rules.max_winding_spread,
                                  self.rules.min_winding_spread_k, digits=3)

    def reset(self) -> None:
        """Forget the learned levels and learn again (e.g. after the machine was serviced)."""
        self.values, self.cyclic, self.last_ms = [], [], None
        self.learned_bar, self.learned_at_ms, self.learned_kind = None, None, None
        self.seen, self.rejected, self.restarts = 0, {}, 0
        self.vibration, self.winding, self.win_standstill_ms = LevelLearner(), LevelLearner(), None
        self.win_below_since_ms, self.win_below = None, False

    def to_state(self) -> dict[str, object]:
        return {"windows": self.rules.windows, "winding_settle_ms": self.rules.winding_settle_ms, "values": self.values, "cyclic": self.cyclic,
                "last_ms": self.last_ms, "learned_kind": self.learned_kind,
                "learned_bar": self.learned_bar, "learned_at_ms": self.learned_at_ms, "seen": self.seen,
                "rejected": self.rejected, "restarts": self.restarts, "generation": self.generation,
                "vibration": self.vibration.to_state("learned_mm_s"),
                "winding": self.winding.to_state("learned_k") | {"standstill_ms": self.win_standstill_ms,
                                                                 "below_since_ms": self.win_below_since_ms,
                                                                 "below": self.win_below}}

    @classmethod
    def from_state(cls, state: dict[str, object], rules: BaselineRules | None = None) -> PlcBaseline:
        """Rebuild from :meth:`to_state`; ``rules`` (the job's current setting) override the stored period."""
        rules = rules or BaselineRules(
            windows=int(state.get("windows", BaselineRules.windows)),  # type: ignore[call-overload]
            winding_settle_ms=int(state.get("winding_settle_ms", BaselineRules.winding_settle_ms)))  # type: ignore[call-overload]
        learned, at, last = state.get("learned_bar"), state.get("learned_at_ms"), state.get("last_ms")
        kind = state.get("learned_kind")
        vib: dict[str, object] = dict(state.get("vibration") or {})  # type: ignore[call-overload]
        win: dict[str, object] = dict(state.get("winding") or {})  # type: ignore[call-overload]
        standstill, below_since = win.get("standstill_ms"), win.get("below_since_ms")
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
                   vibration=LevelLearner.from_state(vib, "learned_mm_s"),
                   winding=LevelLearner.from_state(win, "learned_k"),
                   win_standstill_ms=None if standstill is None else int(standstill),  # type: ignore[call-overload]
                   win_below_since_ms=None if below_since is None else int(below_since),  # type: ignore[call-overload]
                   win_below=bool(win.get("below", False)))


@dataclass(frozen=True)
class PlcHealthyLevels:
    """What a healthy recording of a machine says about its normal operation (None: no window showed it)."""

    pressure_bar: float | None
    vibration_mm_s: float | None
    windows: int  #: windows read
    rejected: dict[str, int] = field(default_factory=dict)  #: why windows were not used (either level)
    winding_k: float | None = None  #: the healthy winding level (:func:`winding_ratio`), where it could be read
    #: whether the windows hold the tags a level is learnt from (the vibration, the pressure, or the winding and
    #: bearing temperatures and the current where the rated current is known): a historian without any has
    #: nothing to give
    has_level_tags: bool = True

    @property
    def empty(self) -> bool:
        """No level could be read."""
        return self.pressure_bar is None and self.vibration_mm_s is None and self.winding_k is None


def with_nameplate_speed(raw: np.ndarray, profile: AssetProfile | None) -> np.ndarray:
    """``raw`` (a window's raw features) with the speed of a machine on the mains filled in where its
    historian logs no speed: a motor without a drive turns at its nameplate speed (within its slip) while it
    runs, so the rules (:class:`BaselineRules`) read such a window at ``profile.nominal_rpm`` and judge it by
    its run state (before session 54: ``no_speed``, nothing learnt). Unchanged: a machine on a drive
    (``vfd``, a speed range), one without a nameplate speed, a window with a speed or without a run state.

    >>> from pipeline.features.plc_window import plc_feature_names
    >>> names = plc_feature_names(); w = np.full(len(names), np.nan); w[names.index("run_state.mean")] = 1.0
    >>> filled = with_nameplate_speed(w, AssetProfile(nominal_rpm=1480.0))
    >>> float(filled[names.index("speed_rpm.mean")]), float(filled[names.index("speed_rpm.std")])
    (1480.0, 0.0)
    >>> [bool(np.isnan(with_nameplate_speed(w, p)[names.index("speed_rpm.mean")]))
    ...  for p in (AssetProfile(nominal_rpm=1480.0, vfd=True), AssetProfile(), None)]
    [True, True, True]
    """
    if profile is None or profile.vfd or profile.speed_range_hz is not None or not profile.nominal_rpm:
        return raw
    speed, run = _INDEX["speed_rpm.mean"], _INDEX["run_state.mean"]
    if np.isfinite(raw[speed]) or not np.isfinite(raw[run]):
        return raw
    out = np.array(raw, dtype=np.float64)
    out[speed], out[_INDEX["speed_rpm.std"]] = profile.nominal_rpm, 0.0
    return out


def healthy_levels(raws: list[np.ndarray], nominal_rpm: float | None = None,
                   rules: BaselineRules | None = None, rated_current_a: float | None = None,
                   ends_ms: list[int] | None = None, profile: AssetProfile | None = None) -> PlcHealthyLevels:
    """The running pressure, normal vibration and healthy winding level of windows a user says are healthy
    (``linewatch inspect --healthy-plc``): the job's window rules (:class:`BaselineRules`), the median over
    the windows that pass (the pressure over its majority kind, steady or cyclic), without the job's
    learning period. The winding needs the rated current; with the windows' ends (in time order) the
    windows within ``winding_settle_ms`` after a standstill are left out of it, as the job does. With the
    machine's ``profile``, an export of a drive with no window at nameplate speed gives it from its slower
    windows, read as at nameplate speed (:meth:`BaselineRules.winding_level`; the job does so after an hour
    without one, :meth:`PlcBaseline.observe_winding`).

    >>> from pipeline.features.plc_window import plc_feature_names
    >>> names = plc_feature_names()
    >>> def window(p: float, v: float) -> np.ndarray:
    ...     w = np.zeros(len(names)); w[names.index("run_state.mean")] = 1.0
    ...     w[names.index("speed_rpm.mean")] = 1480.0; w[names.index("pressure_bar.mean")] = p
    ...     w[names.index("pressure_bar.std")] = 0.01 * p; w[names.index("vibration_rms_mm_s.mean")] = v
    ...     w[names.index("motor_current_a.mean")] = 20.0; w[names.index("bearing_temp_c.mean")] = 40.0
    ...     w[names.index("winding_temp_c.mean")] = 40.0 + 6 * v; return w
    >>> healthy_levels([window(4.0, 6.0), window(4.2, 6.4), window(4.1, 5.0)], 1480.0)
    PlcHealthyLevels(pressure_bar=4.1, vibration_mm_s=6.0, windows=3, rejected={}, winding_k=None, has_level_tags=True)
    >>> healthy_levels([window(4.0, 6.0), window(4.2, 6.4), window(4.1, 5.0)], 1480.0, rated_current_a=20.0).winding_k
    36.0

    A historian without a run-state tag: the steady speed says the machine ran; without a speed either,
    nothing is learnt:

    >>> no_run = [window(4.0, 6.0), window(4.2, 6.4)]
    >>> for w in no_run: w[names.index("run_state.mean")] = np.nan
    >>> healthy_levels(no_run, 1480.0).vibration_mm_s
    6.2
    >>> for w in no_run: w[names.index("speed_rpm.mean")] = np.nan
    >>> healthy_levels(no_run, 1480.0).rejected
    {'no_speed': 2}

    A historian with none of the tags a level is learnt from gives nothing, and says so:

    >>> bare = [window(4.0, 6.0)]; bare[0][names.index("vibration_rms_mm_s.mean")] = np.nan
    >>> bare[0][names.index("pressure_bar.mean")] = np.nan
    >>> levels = healthy_levels(bare, 1480.0); levels.empty, levels.has_level_tags
    (True, False)

    A winding temperature without a bearing temperature gives no level either (a motor spindle's historian):

    >>> bare[0][names.index("bearing_temp_c.mean")] = np.nan
    >>> healthy_levels(bare, 1480.0, rated_current_a=20.0).has_level_tags
    False
    """
    rules = rules or BaselineRules()
    pressures: list[tuple[bool, float]] = []
    vibrations: list[float] = []
    windings: list[float] = []
    slower: list[float] = []  # a drive's windows below nameplate speed, read as at it: used only without others
    rejected: dict[str, int] = {}
    standstill: int | None = None
    for k, raw in enumerate(raws):
        raw = with_nameplate_speed(np.asarray(raw, dtype=np.float64), profile)
        kind, level = rules.classify(raw, nominal_rpm)
        if kind in (STEADY, CYCLIC):
            pressures.append((kind == CYCLIC, level))
        kind, level = rules.vibration_level(raw, nominal_rpm)
        if kind == STEADY:
            vibrations.append(level)
        else:
            rejected[kind] = rejected.get(kind, 0) + 1
        if rated_current_a is None:
            continue
        standstill, why = rules.winding_settled(raw, None if ends_ms is None else int(ends_ms[k]), standstill)
        if why == "settling":
            rejected["winding_settling"] = rejected.get("winding_settling", 0) + 1
        elif why is None:
            kind, level = rules.winding_level(raw, nominal_rpm, rated_current_a)
            if kind == STEADY:
                windings.append(level)
            elif kind == "not_at_rated_speed" and profile is not None:
                kind, level = rules.winding_level(raw, nominal_rpm, rated_current_a, profile)
                if kind == STEADY:
                    slower.append(level)
    pressure = None
    if pressures:
        cyclic = float(np.mean([c for c, _ in pressures])) >= 0.5
        pressure = round(float(np.median([v for c, v in pressures if c == cyclic])), 4)
    vibration = round(float(np.median(vibrations)), 4) if vibrations else None
    windings = windings or slower
    winding = round(float(np.median(windings)), 3) if windings else None
    level_tags = [("vibration_rms_mm_s.mean",), ("pressure_bar.mean",)]
    if rated_current_a:  # the winding level reads the winding over the bearing per unit of load heat
        level_tags.append(("winding_temp_c.mean", "bearing_temp_c.mean", "motor_current_a.mean"))
    has_tags = any(all(np.isfinite(float(np.asarray(raw)[_INDEX[c]])) for c in tags) for raw in raws for tags in level_tags)
    return PlcHealthyLevels(pressure, vibration, len(raws), rejected, winding, has_tags)
