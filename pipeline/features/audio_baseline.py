"""A machine's healthy sound, learned from its own first clips: what a clip's tones and impacts are read against.

After gain normalisation a healthy machine's 1x tone spans about 12 dB across a fleet, so one
clip cannot say whether a loud 1x is an imbalance or the machine's normal sound (docs/models.md,
"Audio imbalance"). Against the *same machine's* earlier clips it can: the six shaft-harmonic
levels (``shaft.{1..6}x.level_db``, dB over the clip's RMS) of a clip minus their median over the
machine's commissioning clips took an imbalance detector on held-out machines from 0.34 to 0.98
recall at 1 % healthy false alarms (``bench/bench_audio_baseline.py``). The same holds for bearing
wear on a machine that knocks in step with its shaft (a piston compressor's valves, a cam): its
impulsiveness and envelope combs are its normal sound, and only their change says bearing
(features v5: on a fleet where a third of the machines knock, 0.56 -> 0.85 recall past moderate
at 1 % healthy false alarms, ``bench/bench_audio_sync_impacts.py``). So the baseline learns
:data:`BASELINE_INPUT_NAMES`: the six levels and the clip's bearing values (envelope, combs,
spectral kurtosis, kurtogram, waveform; not the values that name an order or a band).

:class:`AudioBaseline` learns them per asset, the way the job learns a missing nominal
pressure (:mod:`pipeline.features.plc_baseline`): the median over ``clips`` accepted clips, at
most one per ``min_gap_ms`` (so that they span the machine's operating points). Every clip that
could be featurised counts, as in the bench above: a rule on the speed estimate's confidence
(``speed.confidence`` >= 0.05) would have refused 28 % of 180 domain-randomised clips (presses
47 %) and left such machines without a baseline. Once learned it is **frozen**: a fault that
develops later is read against it, not absorbed into it. A baseline learnt while the machine was already faulty gives
little (0.41 recall, the bench), so it must be learnt at commissioning or after a repair; the job
resets an asset whose entry in ``flink.audio_baseline_relearn`` differs from the generation it
learnt under. A state learnt by an earlier features version (other values) is learnt again.

:func:`baseline_values` gives the values the audio vector ends with (``AUDIO_BASELINE_NAMES``):
the deltas and ``baseline.available`` (0 and all deltas 0 before the baseline is learnt, and
for single files scored by ``linewatch inspect`` without ``--healthy-audio``).

>>> import numpy as np
>>> b = AudioBaseline(AudioBaselineRules(clips=3, min_gap_ms=1_000))
>>> values = np.zeros(N_BASELINE_INPUTS); values[:2] = (6.0, 1.0)
>>> [b.observe(values + k, event_ms=1_000 * k) for k in range(3)]
[False, False, True]
>>> b.healthy[:3]
(7.0, 2.0, 1.0)
>>> clip = np.ones(N_BASELINE_INPUTS); clip[0] = 10.0
>>> baseline_values(clip, b.healthy)[[0, 1, -1]].tolist()
[3.0, -1.0, 1.0]
>>> AudioBaseline.from_state(b.to_state()).healthy == b.healthy
True
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

N_LEVELS = 6
CLIP_LEVEL_NAMES: tuple[str, ...] = tuple(f"shaft.{k}x.level_db" for k in range(1, N_LEVELS + 1))
#: The clip's bearing values read against the machine's own (features v5).
BEARING_BASELINE_NAMES: tuple[str, ...] = (
    *(f"sk.band{i}" for i in range(6)),
    *(f"env.band{i}.{s}" for i in range(4) for s in ("modulation", "kurtosis")),
    *(f"env.{o}.h{h}" for o in ("bpfo", "bpfi", "bsf2", "ftf", "shaft") for h in range(1, 4)),
    "env.bpfi_sidebands.h1", "env.bpfi_sidebands.h2", "env.nonsync.prom", "env.nonsync.h2", "env.nonsync.h3",
    "wave.crest_log", "wave.kurtosis_log", "kurtogram.kurtosis_log",
    "comb.bpfo", "comb.bpfi", "comb.bsf2", "comb.max", "comb.blind", "comb.sync",
)
#: What :class:`AudioBaseline` learns, in this order (names of the clip vector).
BASELINE_INPUT_NAMES: tuple[str, ...] = CLIP_LEVEL_NAMES + BEARING_BASELINE_NAMES
N_BASELINE_INPUTS = len(BASELINE_INPUT_NAMES)
AUDIO_BASELINE_NAMES: tuple[str, ...] = (
    *(f"baseline.shaft.{k}x.delta_db" for k in range(1, N_LEVELS + 1)),
    *(f"baseline.{name}.delta" for name in BEARING_BASELINE_NAMES), "baseline.available")


def baseline_values(inputs: np.ndarray, healthy: tuple[float, ...] | np.ndarray | None) -> np.ndarray:
    """``float32 (N_BASELINE_INPUTS + 1,)``: the clip's :data:`BASELINE_INPUT_NAMES` values minus the
    machine's healthy ones, and 1.0; zeros without a baseline."""
    if healthy is None:
        return np.zeros(N_BASELINE_INPUTS + 1, np.float32)
    delta = np.asarray(inputs, np.float64)[:N_BASELINE_INPUTS] - np.asarray(healthy, np.float64)
    return np.nan_to_num(np.r_[delta, 1.0], nan=0.0, posinf=0.0, neginf=0.0).astype(np.float32)


@dataclass(frozen=True)
class AudioBaselineRules:
    """How :class:`AudioBaseline` learns (``clips``: the learning period, in accepted clips)."""

    clips: int = 8
    min_gap_ms: int = 30_000


@dataclass
class AudioBaseline:
    """Per-asset learner of the healthy :data:`BASELINE_INPUT_NAMES` values (JSON state via :meth:`to_state`)."""

    rules: AudioBaselineRules = field(default_factory=AudioBaselineRules)
    values: list[list[float]] = field(default_factory=list)
    last_ms: int | None = None
    healthy: tuple[float, ...] | None = None
    learned_at_ms: int | None = None
    seen: int = 0
    rejected: int = 0
    generation: int = 0  #: bumped by the operator to learn again (``flink.audio_baseline_relearn``)

    @property
    def learned(self) -> bool:
        return self.healthy is not None

    def observe(self, inputs: np.ndarray, event_ms: int) -> bool:
        """Offer one clip's :data:`BASELINE_INPUT_NAMES` values (event time in ms); True when this clip
        completed the learning."""
        if self.healthy is not None:
            return False
        self.seen += 1
        if self.last_ms is not None and event_ms - self.last_ms < self.rules.min_gap_ms:
            return False
        values = np.asarray(inputs, np.float64)
        if values.shape != (N_BASELINE_INPUTS,) or not np.all(np.isfinite(values)):
            self.rejected += 1
            return False
        self.last_ms = int(event_ms)
        self.values.append([round(float(v), 4) for v in values])
        if len(self.values) < self.rules.clips:
            return False
        self.healthy = tuple(round(float(v), 4) for v in np.median(np.asarray(self.values), axis=0))
        self.learned_at_ms, self.values = int(event_ms), []
        return True

    def reset(self) -> None:
        """Forget the learned values and learn again (e.g. after the machine was repaired)."""
        self.values, self.last_ms, self.healthy, self.learned_at_ms = [], None, None, None
        self.seen, self.rejected = 0, 0

    def to_state(self) -> dict[str, object]:
        return {"clips": self.rules.clips, "min_gap_ms": self.rules.min_gap_ms, "values": self.values,
                "last_ms": self.last_ms,
                "healthy": None if self.healthy is None else list(self.healthy),
                "learned_at_ms": self.learned_at_ms, "seen": self.seen, "rejected": self.rejected,
                "generation": self.generation}

    @classmethod
    def from_state(cls, state: dict[str, object], rules: AudioBaselineRules | None = None) -> AudioBaseline:
        """Rebuild from :meth:`to_state`; ``rules`` (the job's current setting) override the stored ones.
        A state of an earlier features version (``levels_db``, or values of another length) starts
        learning again, keeping its generation."""
        rules = rules or AudioBaselineRules(clips=int(state.get("clips", AudioBaselineRules.clips)),  # type: ignore[call-overload]
                                            min_gap_ms=int(state.get("min_gap_ms", AudioBaselineRules.min_gap_ms)))  # type: ignore[call-overload]
        generation = int(state.get("generation", 0))  # type: ignore[call-overload]
        healthy, at, last = state.get("healthy"), state.get("learned_at_ms"), state.get("last_ms")
        rows = [[float(v) for v in row] for row in state.get("values", [])]  # type: ignore[attr-defined]
        if (healthy is None and at is not None) or (healthy is not None and len(healthy) != N_BASELINE_INPUTS) \
                or any(len(row) != N_BASELINE_INPUTS for row in rows):  # type: ignore[arg-type]
            return cls(rules=rules, generation=generation)
        return cls(rules=rules, values=rows, last_ms=None if last is None else int(last),  # type: ignore[call-overload]
                   healthy=None if healthy is None else tuple(float(v) for v in healthy),  # type: ignore[attr-defined]
                   learned_at_ms=None if at is None else int(at),  # type: ignore[call-overload]
                   seen=int(state.get("seen", 0)), rejected=int(state.get("rejected", 0)),  # type: ignore[call-overload]
                   generation=generation)
