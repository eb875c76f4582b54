"""A machine's healthy sound, learned from its own first clips: what a raised shaft tone is raised against.

After gain normalisation a healthy machine's 1x tone spans about 12 dB across a fleet, so one
clip cannot say whether a loud 1x is an imbalance or the machine's normal sound (docs/models.md,
"Audio imbalance"). Against the *same machine's* earlier clips it can: the six shaft-harmonic
levels (``shaft.{1..6}x.level_db``, dB over the clip's RMS) of a clip minus their median over the
machine's commissioning clips took an imbalance detector on held-out machines from 0.34 to 0.98
recall at 1 % healthy false alarms (``bench/bench_audio_baseline.py``).

:class:`AudioBaseline` learns those six levels per asset, the way the job learns a missing nominal
pressure (:mod:`pipeline.features.plc_baseline`): the median over ``clips`` accepted clips, at
most one per ``min_gap_ms`` (so that they span the machine's operating points). Every clip that
could be featurised counts, as in the bench above: a rule on the speed estimate's confidence
(``speed.confidence`` >= 0.05) would have refused 28 % of 180 domain-randomised clips (presses
47 %) and left such machines without a baseline. Once learned it is **frozen**: a fault that
develops later is read against it, not absorbed into it. A baseline learnt while the machine was already faulty gives
little (0.41 recall, the bench), so it must be learnt at commissioning or after a repair; the job
resets an asset whose entry in ``flink.audio_baseline_relearn`` differs from the generation it
learnt under.

:func:`baseline_values` gives the seven values the audio vector ends with (``AUDIO_BASELINE_NAMES``):
the six deltas and ``baseline.available`` (0 and all deltas 0 before the baseline is learnt, and
for single files scored by ``linewatch inspect``).

**A baseline holds at the speeds it was learnt at.** The shaft-harmonic levels move with speed
(the imbalance force grows with its square, resonances pass by), so a clip of a variable-speed
machine read against levels learnt at another speed shows deltas that are speed, not fault: a
commissioning recording made at one drive speed raised another generator's audio false alarms on
drive machines from 9.2 to 19.2 % (docs/models.md, "A foreign fleet"). :class:`HealthyLevels`
keeps the range of shaft speeds its clips were learnt at; a clip whose estimated speed
(``speed.shaft_hz``) lies more than :data:`SPEED_TOLERANCE` outside it is read as if there were
no baseline (``baseline.available`` 0: audio withholds imbalance, :mod:`models.withheld_classes`).
A machine learnt over several speeds (a drive in normal service) covers them all; levels given
without speeds (the training data's baselines, states written before 2026-12-02) hold at any speed.

>>> import numpy as np
>>> b = AudioBaseline(AudioBaselineRules(clips=3, min_gap_ms=1_000))
>>> [b.observe(np.array([6.0, 1.0, 0, 0, 0, 0]) + k, event_ms=1_000 * k) for k in range(3)]
[False, False, True]
>>> b.levels_db
(7.0, 2.0, 1.0, 1.0, 1.0, 1.0)
>>> baseline_values(np.array([10.0, 2.0, 1.0, 1.0, 1.0, 1.0]), b.levels_db).tolist()
[3.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]
>>> AudioBaseline.from_state(b.to_state()).levels_db == b.levels_db
True
>>> h = HealthyLevels((7.0, 2.0, 1.0, 1.0, 1.0, 1.0), shaft_hz=(24.0, 25.0))
>>> h.covers(26.0), h.covers(30.0)
(True, False)
>>> baseline_values(np.array([10.0, 2.0, 1.0, 1.0, 1.0, 1.0]), h, shaft_hz=30.0).tolist()
[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

N_LEVELS = 6
CLIP_LEVEL_NAMES: tuple[str, ...] = tuple(f"shaft.{k}x.level_db" for k in range(1, N_LEVELS + 1))
AUDIO_BASELINE_NAMES: tuple[str, ...] = (
    *(f"baseline.shaft.{k}x.delta_db" for k in range(1, N_LEVELS + 1)), "baseline.available")


#: How far (relative) a clip's shaft speed may lie outside the speeds a baseline was learnt at and
#: still be read against it: ±10 % moves the imbalance force (∝ speed²) by ±1.7 dB. On our fleets
#: 1.7 % of the clips read against a baseline learnt over their machine's operating points fall
#: outside (docs/models.md, "A baseline holds at its speeds").
SPEED_TOLERANCE = 0.10


@dataclass(frozen=True)
class HealthyLevels:
    """A machine's learned healthy shaft-harmonic levels and the shaft speeds (Hz, lowest and
    highest of its learning clips) they hold at; ``shaft_hz`` None: any speed."""

    levels_db: tuple[float, ...]
    shaft_hz: tuple[float, float] | None = None

    def covers(self, shaft_hz: float | None) -> bool:
        """Whether a clip running at ``shaft_hz`` (its estimate; None: unknown) may be read against these levels."""
        if self.shaft_hz is None:
            return True
        if shaft_hz is None or not np.isfinite(shaft_hz) or shaft_hz <= 0:
            return False
        low, high = self.shaft_hz
        return low / (1 + SPEED_TOLERANCE) <= shaft_hz <= high * (1 + SPEED_TOLERANCE)

    def describe(self) -> str:
        """The speeds in words (for warnings)."""
        if self.shaft_hz is None:
            return "any speed"
        low, high = self.shaft_hz
        return f"{low:.1f} Hz" if abs(high - low) < 0.05 else f"{low:.1f}-{high:.1f} Hz"


Baseline = tuple[float, ...] | np.ndarray | HealthyLevels


def baseline_values(levels_db: np.ndarray, baseline_db: Baseline | None, shaft_hz: float | None = None) -> np.ndarray:
    """``float32 (7,)``: the clip's shaft-harmonic levels minus the baseline's, and 1.0; zeros without
    a baseline, or when the clip's speed ``shaft_hz`` lies outside what a :class:`HealthyLevels` covers."""
    if isinstance(baseline_db, HealthyLevels):
        if not baseline_db.covers(shaft_hz):
            return np.zeros(N_LEVELS + 1, np.float32)
        baseline_db = baseline_db.levels_db
    if baseline_db is None:
        return np.zeros(N_LEVELS + 1, np.float32)
    delta = np.asarray(levels_db, np.float64)[:N_LEVELS] - np.asarray(baseline_db, np.float64)
    return np.nan_to_num(np.r_[delta, 1.0], nan=0.0, posinf=0.0, neginf=0.0).astype(np.float32)


def speed_range(speeds_hz: list[float] | np.ndarray) -> tuple[float, float] | None:
    """(lowest, highest) of the finite, positive speed estimates; None when there is none."""
    v = np.asarray(speeds_hz, np.float64)
    v = v[np.isfinite(v) & (v > 0)]
    return (round(float(v.min()), 3), round(float(v.max()), 3)) if v.size else None


@dataclass(frozen=True)
class AudioBaselineRules:
    """How :class:`AudioBaseline` learns (``clips``: the learning period, in accepted clips)."""

    clips: int = 8
    min_gap_ms: int = 30_000


@dataclass
class AudioBaseline:
    """Per-asset learner of the healthy shaft-harmonic levels (JSON state via :meth:`to_state`)."""

    rules: AudioBaselineRules = field(default_factory=AudioBaselineRules)
    values: list[list[float]] = field(default_factory=list)
    speeds: list[float] = field(default_factory=list)  #: the learning clips' shaft-speed estimates (Hz)
    last_ms: int | None = None
    levels_db: tuple[float, ...] | None = None
    shaft_hz: tuple[float, float] | None = None  #: the speeds the levels were learnt at (None: unknown, any)
    learned_at_ms: int | None = None
    seen: int = 0
    rejected: int = 0
    generation: int = 0  #: bumped by the operator to learn again (``flink.audio_baseline_relearn``)

    @property
    def learned(self) -> bool:
        return self.levels_db is not None

    @property
    def healthy(self) -> HealthyLevels | None:
        """The learned levels with the speeds they hold at (None while learning)."""
        return None if self.levels_db is None else HealthyLevels(self.levels_db, self.shaft_hz)

    def observe(self, levels_db: np.ndarray, event_ms: int, shaft_hz: float | None = None) -> bool:
        """Offer one clip's six levels (event time in ms) and its shaft-speed estimate (Hz; None:
        unknown); True when this clip completed the learning."""
        if self.levels_db is not None:
            return False
        self.seen += 1
        if self.last_ms is not None and event_ms - self.last_ms < self.rules.min_gap_ms:
            return False
        levels = np.asarray(levels_db, np.float64)[:N_LEVELS]
        if not np.all(np.isfinite(levels)):
            self.rejected += 1
            return False
        self.last_ms = int(event_ms)
        self.values.append([round(float(v), 4) for v in levels])
        if shaft_hz is not None and np.isfinite(shaft_hz) and shaft_hz > 0:
            self.speeds.append(round(float(shaft_hz), 3))
        if len(self.values) < self.rules.clips:
            return False
        self.levels_db = tuple(round(float(v), 4) for v in np.median(np.asarray(self.values), axis=0))
        self.shaft_hz = speed_range(self.speeds)
        self.learned_at_ms, self.values, self.speeds = int(event_ms), [], []
        return True

    def reset(self) -> None:
        """Forget the learned levels and learn again (e.g. after the machine was repaired)."""
        self.values, self.speeds, self.last_ms, self.levels_db, self.learned_at_ms = [], [], None, None, None
        self.shaft_hz = None
        self.seen, self.rejected = 0, 0

    def to_state(self) -> dict[str, object]:
        return {"clips": self.rules.clips, "min_gap_ms": self.rules.min_gap_ms, "values": self.values,
                "speeds": self.speeds, "last_ms": self.last_ms,
                "levels_db": None if self.levels_db is None else list(self.levels_db),
                "shaft_hz": None if self.shaft_hz is None else list(self.shaft_hz),
                "learned_at_ms": self.learned_at_ms, "seen": self.seen, "rejected": self.rejected,
                "generation": self.generation}

    @classmethod
    def from_state(cls, state: dict[str, object], rules: AudioBaselineRules | None = None) -> AudioBaseline:
        """Rebuild from :meth:`to_state`; ``rules`` (the job's current setting) override the stored ones."""
        rules = rules or AudioBaselineRules(clips=int(state.get("clips", AudioBaselineRules.clips)),  # type: ignore[call-overload]
                                            min_gap_ms=int(state.get("min_gap_ms", AudioBaselineRules.min_gap_ms)))  # type: ignore[call-overload]
        levels, at, last = state.get("levels_db"), state.get("learned_at_ms"), state.get("last_ms")
        speeds = state.get("shaft_hz")
        return cls(rules=rules, values=[[float(v) for v in row] for row in state.get("values", [])],  # type: ignore[attr-defined]
                   speeds=[float(v) for v in state.get("speeds", [])],  # type: ignore[attr-defined]
                   last_ms=None if last is None else int(last),  # type: ignore[call-overload]
                   levels_db=None if levels is None else tuple(float(v) for v in levels),  # type: ignore[attr-defined]
                   shaft_hz=None if speeds is None else (float(speeds[0]), float(speeds[1])),  # type: ignore[index]
                   learned_at_ms=None if at is None else int(at),  # type: ignore[call-overload]
                   seen=int(state.get("seen", 0)), rejected=int(state.get("rejected", 0)),  # type: ignore[call-overload]
                   generation=int(state.get("generation", 0)))  # type: ignore[call-overload]
