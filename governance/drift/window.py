"""Windows of live feature vectors (per asset and per fleet) and the raise/clear state of a drift alarm.

:class:`VectorWindow` collects vectors until ``size`` have arrived (a tumbling window: each window's
test uses new data only, so windows are independent under no drift and the false-alarm rate per
window is the test's level). :class:`Hysteresis` turns per-window decisions into alarm states:
raise after ``raise_after`` consecutive drifted windows, clear after ``clear_after`` consecutive
clean ones, and no new raise for ``cooldown`` windows after a clear.

>>> w = VectorWindow(size=3)
>>> [w.add(np.array([float(i)]), i * 1000) for i in range(3)][-1]
True
>>> w.take().values.ravel().tolist(), w.count
([0.0, 1.0, 2.0], 0)
>>> h = Hysteresis(raise_after=2, clear_after=2, cooldown=1)
>>> [h.update(d) for d in (True, True, True, False, False, True, True, True)]
['normal', 'raised', 'normal', 'normal', 'cleared', 'normal', 'normal', 'raised']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

AlarmEvent = Literal["normal", "raised", "cleared"]


@dataclass(frozen=True)
class WindowData:
    values: NDArray[Any]  #: (n, n_features) float64
    start_ms: int
    end_ms: int


@dataclass
class VectorWindow:
    """A tumbling window of ``size`` vectors."""

    size: int
    _rows: list[NDArray[Any]] = field(default_factory=list)
    _start_ms: int | None = None
    _end_ms: int = 0

    def __post_init__(self) -> None:
        if self.size < 2:
            raise ValueError("a drift window needs at least 2 vectors")

    @property
    def count(self) -> int:
        return len(self._rows)

    def add(self, vector: NDArray[Any], time_ms: int) -> bool:
        """Add one vector; True when the window is full (call :meth:`take`)."""
        self._rows.append(np.asarray(vector, dtype=np.float64))
        self._start_ms = time_ms if self._start_ms is None else min(self._start_ms, time_ms)
        self._end_ms = max(self._end_ms, time_ms)
        return len(self._rows) >= self.size

    def take(self) -> WindowData:
        """The window's vectors; the window starts over empty."""
        data = WindowData(np.vstack(self._rows), int(self._start_ms or 0), self._end_ms)
        self._rows, self._start_ms, self._end_ms = [], None, 0
        return data


@dataclass
class Hysteresis:
    """Alarm state from a sequence of per-window drift decisions (see the module docstring)."""

    raise_after: int = 2
    clear_after: int = 3
    cooldown: int = 0
    raised: bool = False
    _drifted_run: int = 0
    _clean_run: int = 0
    _cooldown_left: int = 0

    def update(self, drifted: bool) -> AlarmEvent:
        """Feed one window's decision; returns ``raised`` / ``cleared`` on a state change, else ``normal``."""
        if drifted:
            self._drifted_run, self._clean_run = self._drifted_run + 1, 0
        else:
            self._clean_run, self._drifted_run = self._clean_run + 1, 0
        if self.raised:
            if self._clean_run >= self.clear_after:
                self.raised, self._cooldown_left, self._drifted_run = False, self.cooldown, 0
                return "cleared"
            return "normal"
        if self._cooldown_left > 0:
            self._cooldown_left -= 1
            if drifted:
                self._drifted_run = 0  # drift seen during the cooldown does not count towards a raise
            return "normal"
        if self._drifted_run >= self.raise_after:
            self.raised = True
            return "raised"
        return "normal"
