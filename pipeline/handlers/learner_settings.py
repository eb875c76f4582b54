"""What the job's per-asset learners (the healthy audio levels, the healthy thermal frames) share:
they follow the operator's settings and forget what they learnt when asked to.

>>> from pipeline.step import StepOutput
>>> from pipeline.features.audio_baseline import AudioBaseline, AudioBaselineRules
>>> learner = AudioBaseline(AudioBaselineRules(clips=2, min_gap_ms=0))
>>> out = StepOutput()
>>> follow_settings(learner, AudioBaselineRules(clips=3, min_gap_ms=0), 0, out, "audio_baseline_reset")
True
>>> follow_settings(learner, learner.rules, 1, out, "audio_baseline_reset"), learner.generation, out.counters
(True, 1, {'audio_baseline_reset': 1})
>>> follow_settings(learner, learner.rules, 1, out, "audio_baseline_reset")
False
"""

from __future__ import annotations

from typing import Any, Protocol

from pipeline.step import StepOutput


class Learner(Protocol):
    """A per-asset learner: its rules, the relearn generation it learnt under, and a reset."""

    rules: Any
    generation: int

    def reset(self) -> None: ...


def follow_settings(learner: Learner, rules: object, generation: int, out: StepOutput, reset_counter: str) -> bool:
    """Bring ``learner`` to the current ``rules`` and the operator's relearn ``generation`` of its
    asset (forgetting what it learnt once when that changed, counted as ``reset_counter``); True
    when it changed, so that the caller saves it."""
    changed = False
    if learner.rules != rules:  # the setting changed since the state was written
        learner.rules = rules
        changed = True
    if learner.generation != generation:
        learner.reset()
        learner.generation = generation
        out.count(reset_counter)
        changed = True
    return changed
