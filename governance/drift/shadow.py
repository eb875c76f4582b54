"""Label-free error stream: the distilled student against its own teacher.

A configurable fraction of the inputs the student predicted is scored again by the teacher it was
distilled from (``teacher.fp32.onnx`` in the same registry version; ONNX Runtime in-process or
Triton through :mod:`models.runtime`). Where the two disagree (argmax), the student is wrong at
least as often as the teacher is right there: the disagreement stream is an error stream that
needs no operator label. :class:`ShadowMonitor` watches it two ways:

* **level**: each window of ``window`` scored inputs is tested against the disagreement the card
  measured on the test split (``teacher.shadow.student_vs_teacher.test.disagreement``), one-sided
  :func:`scipy.stats.binomtest` at ``alpha``; hysteresis as for feature drift. This catches a
  student that is wrong from the first input (a bad deployment, a corrupted file);
* **change**: river detectors (:mod:`governance.drift.error_detectors`) on the same 0/1 stream
  catch a student that goes stale under drift part-way.

Sampling is by a hash of the features entry id (``crc32(id) < fraction * 2**32``): every replica
and every restart samples the same entries.

>>> s = ShadowSampler(0.25)
>>> picked = sum(s.sampled(f"{1700000000000 + i}-0") for i in range(4000))
>>> 850 < picked < 1150
True
>>> m = ShadowMonitor(expected=0.05, window=100, alpha=0.01, raise_after=1, clear_after=1)
>>> events = [m.update(i % 10 == 0) for i in range(100)]  # 10 % vs 5 % expected: not significant
>>> [e for e in events if e is not None][0].drifted
False
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from pathlib import Path

from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from governance.drift.error_detectors import ErrorStreamMonitor
from governance.drift.window import AlarmEvent, Hysteresis
from models.registry.card import ModelCard
from models.runtime import Runtime, RuntimeSettings, load_runtime

TEACHER_ROLE = "teacher_fp32"


class TeacherMissing(RuntimeError):
    """The registry version has no teacher to shadow-score with."""


class ShadowSampler:
    """Deterministic sampling of a fraction of entry ids."""

    def __init__(self, fraction: float) -> None:
        if not 0.0 <= fraction <= 1.0:
            raise ValueError("shadow fraction must be within [0, 1]")
        self.threshold = int(fraction * 2**32)

    def sampled(self, entry_id: str) -> bool:
        return zlib.crc32(entry_id.encode()) < self.threshold


def expected_disagreement(card: ModelCard, split: str = "test") -> float:
    """The student-vs-teacher disagreement the card measured (``scripts/ship_teacher.py``)."""
    try:
        return float(card.teacher["shadow"]["student_vs_teacher"][split]["disagreement"])
    except (KeyError, TypeError):
        raise TeacherMissing(f"{card.name} {card.version}: the card records no student-vs-teacher disagreement; "
                             "ship the teacher with scripts/ship_teacher.py") from None


def load_teacher(model_dir: Path, card: ModelCard, settings: RuntimeSettings | None = None) -> Runtime:
    """The teacher of the registry version in ``model_dir`` (ONNX Runtime, or Triton per ``settings``)."""
    if TEACHER_ROLE not in card.files:
        raise TeacherMissing(f"{model_dir}: no {TEACHER_ROLE} in the card; the shadow monitor needs the student's "
                             "teacher (scripts/ship_teacher.py ships it)")
    return load_runtime(model_dir, flavour="teacher_fp32", settings=settings)


@dataclass(frozen=True)
class ShadowWindow:
    """The decision of one full window of scored inputs."""

    n: int
    disagreements: int
    rate: float
    expected: float
    p_value: float
    drifted: bool
    event: AlarmEvent
    detectors: tuple[str, ...]  #: river detectors that fired inside the window


class ShadowMonitor:
    """Level test per window + river change detectors on the disagreement stream."""

    def __init__(self, expected: float, window: int = 200, alpha: float = 0.001, detectors: tuple[str, ...] = ("ADWIN",),
                 raise_after: int = 1, clear_after: int = 2, cooldown: int = 0) -> None:
        if not 0.0 <= expected < 1.0:
            raise ValueError("expected disagreement must be within [0, 1)")
        self.expected = expected
        self.window = window
        self.alpha = alpha
        self.errors = ErrorStreamMonitor(detectors, rate_window=window)
        self.hysteresis = Hysteresis(raise_after, clear_after, cooldown)
        self._n = self._k = 0
        self._fired: set[str] = set()

    def update(self, disagree: bool) -> ShadowWindow | None:
        """Feed one scored input; a :class:`ShadowWindow` when a window completes."""
        self._fired.update(self.errors.update(disagree))
        self._n += 1
        self._k += int(disagree)
        if self._n < self.window:
            return None
        n, k = self._n, self._k
        p = float(stats.binomtest(k, n, max(self.expected, 1e-6), alternative="greater").pvalue)
        fired = tuple(sorted(self._fired))
        drifted = p <= self.alpha or bool(fired and k / n > self.expected)
        event = self.hysteresis.update(drifted)
        self._n = self._k = 0
        self._fired = set()
        return ShadowWindow(n, k, k / n, self.expected, p, drifted, event, fired)


def disagreement(student_label: str, teacher_probs: NDArray[Any], classes: list[str]) -> bool:
    """True when the teacher's top class differs from the student's label."""
    return classes[int(np.argmax(teacher_probs))] != student_label
