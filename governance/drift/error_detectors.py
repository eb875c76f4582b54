"""Change detectors on 0/1 error streams (river): EDDM, ADWIN, Page–Hinkley.

An error stream is 1 where the model was wrong and 0 where it was right: operator feedback
(``rejected`` = a false alarm = 1, ``confirmed`` = 0) or, label-free, the student disagreeing with
its teacher (:mod:`governance.drift.shadow`). :class:`ErrorStreamMonitor` feeds every configured
river detector the same stream and reports, per update, which of them detected a change; the
decisions are river's own (the detectors are river's classes, reset after a detection exactly as
river resets itself), plus the running error rate for the report.

>>> m = ErrorStreamMonitor(("ADWIN",))
>>> hits = [i for i, e in enumerate([0] * 300 + [1] * 100) if m.update(e)]
>>> hits[0] > 300
True
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

from river import drift
from river.base import DriftDetector
from river.drift import binary

DETECTORS: dict[str, type] = {"EDDM": binary.EDDM, "ADWIN": drift.ADWIN, "PageHinkley": drift.PageHinkley}


def make_detector(name: str, params: dict[str, Any] | None = None) -> DriftDetector:
    """A river detector by name (``EDDM``, ``ADWIN``, ``PageHinkley``) with river's parameters."""
    try:
        cls = DETECTORS[name]
    except KeyError:
        raise ValueError(f"unknown error-stream detector {name!r}: use one of {sorted(DETECTORS)}") from None
    return cls(**(params or {}))  # type: ignore[no-any-return]


class ErrorStreamMonitor:
    """Several river detectors on one 0/1 error stream, plus the recent error rate."""

    def __init__(self, detectors: Sequence[str], params: dict[str, dict[str, Any]] | None = None,
                 rate_window: int = 200) -> None:
        self.detectors = {name: make_detector(name, (params or {}).get(name)) for name in detectors}
        self.recent: deque[int] = deque(maxlen=rate_window)
        self.n = 0
        self.errors = 0

    def update(self, error: int | bool) -> list[str]:
        """Feed one outcome (1 = wrong); the names of the detectors that detected a change now."""
        e = int(bool(error))
        self.n += 1
        self.errors += e
        self.recent.append(e)
        hits = []
        for name, det in self.detectors.items():
            det.update(e)
            if det.drift_detected:
                hits.append(name)
        return hits

    @property
    def error_rate(self) -> float:
        """Error rate over the last ``rate_window`` outcomes (0 before any)."""
        return sum(self.recent) / len(self.recent) if self.recent else 0.0
