"""Archive manifests only in the quiet part of the FileSource's scan cycle: :class:`ScanGate`.

Flink's enumerator scans ``manifests/`` every ``scan_interval_ms``: it lists the directory
(``opendir``/``readdir``/``closedir``) and then ``stat``s every listed name; a manifest the janitor
moves away between the listing and its ``stat`` fails the whole scan ("Failed to enumerate
files", ``FileNotFoundException``; the next scan, one interval later, succeeds). The listing is
observable: on Linux, ``inotify`` reports every ``opendir`` of the watched directory as
``IN_OPEN`` and its ``closedir`` as ``IN_CLOSE_NOWRITE``. The gate waits for one scan's open and
close, lets its ``stat`` phase pass (``settle``: 3 ms + 10 µs per listed name), and moves manifests
only until shortly before the next scan is due (``period`` after the open, less ``margin``),
stopping at once if the directory is opened again.

The gate learns of an open only when its thread wakes up, which can be late: Flink's listing
takes ~30 µs, often less than the wake-up, so open and close usually arrive together. The close
has then happened, so the ``stat`` phase is measured from the wake-up; the open is placed by the
scans' rhythm: the enumerator scans at a fixed rate (measured: the wake-ups least late keep one
phase within 0.1 ms over a run), so a wake-up's lateness is how far its phase lies behind the
earliest phase among the recent wake-ups (:func:`lateness_s`). Before session 32 such a wake-up
was not trusted at all; on a machine whose wake-ups were always late the gate then found no
window and moved nearly everything ungated (a fresh-clone CI run: 1,017 of 1,201, 110 failed scans).
A wake-up so late that the next scan has begun too (two opens in one read) is placed the same way once
half of :data:`RECENT_WAKEUPS` wake-ups are known; before session 54 it was dropped, and a gate that
always woke that late found no window at all.

Where nothing is observed (not Linux, a remote enumerator on a Flink cluster, a directory no one
scans), no quiet window comes within ``max_wait_s``, or none can fit (a directory so long that
its scan's ``stat`` phase fills the interval: with the 10 ms default, above ~500 manifests), the
gate moves what is left at once and counts it (``ungated``): those archives can fail a scan as
before. It never holds the housekeeping thread (and so the index refreshes) longer than
``max_wait_s`` per pass. After three waits in a row that saw no scan at all it stops waiting, and
looks again every ``reprobe_passes``-th pass: an enumerator that was only paused (a JVM stall, a
restart) is gated again as soon as it scans. Both cases are in docs/ingestion.md, "Directory scans".

The ingestion job runs it in a process of its own (:mod:`pipeline.landing.gate_process`): on a thread
of the interpreter that decodes frames, each wake-up also waits for the GIL, and on a loaded machine
that made every wake-up too late for a window.

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as d:
...     gate = ScanGate(Path(d), period_s=0.01, max_wait_s=0.05)
...     done = gate.run(["a", "b"], lambda name: None, listed=2)
...     gate.close()
...     done, gate.ungated   # nobody scans this directory: moved after max_wait_s, counted
(2, 2)
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import select
import struct
import sys
import time
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

log = logging.getLogger(__name__)

IN_OPEN = 0x00000020
IN_CLOSE_NOWRITE = 0x00000010
IN_Q_OVERFLOW = 0x00004000
IN_ONLYDIR = 0x01000000
IN_NONBLOCK = 0o4000
IN_CLOEXEC = 0o2000000
_EVENT = struct.Struct("iIII")

T = TypeVar("T")
RECENT_WAKEUPS = 16  # the wake-ups a lateness is measured against (~160 ms of scans at 10 ms)


def lateness_s(woke: float, recent: Sequence[float], period_s: float) -> float:
    """How late a wake-up at ``woke`` is behind the earliest phase among ``recent`` wake-ups, for
    events of a fixed-rate schedule with ``period_s`` (phases compared within half a period).

    >>> round(lateness_s(1.0237, [0.9931, 1.0030, 1.0142], 0.01) * 1000, 1)  # earliest phase: 0.0030
    0.7
    >>> lateness_s(1.0230, [1.0142], 0.01)  # earlier than every recent one: taken as on time
    0.0
    """
    late = 0.0
    for t in recent:
        late = max(late, (woke - t + period_s / 2) % period_s - period_s / 2)
    return late


def replace_pair(source: Path, target: Path) -> bool:
    """``os.replace(source, target)``; False where ``source`` was already gone."""
    try:
        os.replace(source, target)
    except FileNotFoundError:
        return False
    return True


class ScanGate:
    """Observe the scans of ``directory`` with inotify and run actions between them."""

    def __init__(self, directory: Path, period_s: float, margin_s: float = 0.002, max_wait_s: float = 0.5,
                 settle_s: float = 0.003, settle_per_name_s: float = 10e-6, reprobe_passes: int = 10) -> None:
        self.directory = directory
        self.period_s = period_s
        self.margin_s = margin_s
        self.max_wait_s = max_wait_s
        self.settle_s = settle_s
        self.settle_per_name_s = settle_per_name_s
        self.gated = 0  # actions run inside an observed quiet window
        self.ungated = 0  # actions run without one (may fail a concurrent scan)
        self.blind_waits = 0  # waits in a row in which no scan at all was seen (after 3, stop waiting ...)
        self.reprobe_passes = max(int(reprobe_passes), 1)  # ... but wait again on every n-th pass
        self._skipped = 0
        self._opens = 0
        self._wakeups: deque[float] = deque(maxlen=RECENT_WAKEUPS)  # when opens were seen (monotonic)
        self.fd = -1
        if sys.platform.startswith("linux"):
            try:
                self._watch()
            except OSError as exc:
                log.warning("no inotify on %s (%s): the janitor cannot see the source's scans", directory, exc)

    def _watch(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        fd = int(libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC))
        if fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        wd = int(libc.inotify_add_watch(fd, os.fsencode(self.directory), IN_OPEN | IN_CLOSE_NOWRITE | IN_ONLYDIR))
        if wd < 0:
            os.close(fd)
            raise OSError(ctypes.get_errno(), f"inotify_add_watch {self.directory}")
        self.fd = fd

    # ---- events of the directory itself (opens and closes of files inside it are ignored)
    def _wait(self, timeout_s: float) -> bool:
        """Block until an event is queued (True) or ``timeout_s`` passed (False)."""
        ready, _, _ = select.select([self.fd], [], [], timeout_s)
        return bool(ready)

    def _read(self, timeout_s: float) -> list[int]:
        """Masks of the directory's own events, waiting at most ``timeout_s`` for the first."""
        if timeout_s > 0 and not self._wait(timeout_s):
            return []
        try:
            data = os.read(self.fd, 65536)
        except BlockingIOError:
            return []
        masks = []
        offset = 0
        while offset + _EVENT.size <= len(data):
            _wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
            offset += _EVENT.size + length
            if length == 0 or mask & IN_Q_OVERFLOW:  # no name: the directory itself
                masks.append(mask)
        return masks

    def _quiet_window(self, until: float, listed: int) -> tuple[float, float] | None:
        """Wait for a scan's open and close; returns ``(start, stop)`` of the quiet part after it."""
        self._read(0)  # drop what queued up (our own listing, scans long past): their times are unknown
        while time.monotonic() < until:
            masks = self._read(until - time.monotonic())
            if not any(m & IN_OPEN for m in masks):
                continue
            woke = time.monotonic()
            self._opens += 1
            if any(m & IN_Q_OVERFLOW for m in masks):
                continue
            late = lateness_s(woke, self._wakeups, self.period_s)
            self._wakeups.append(woke)
            if sum(1 for m in masks if m & IN_OPEN) > 1 and len(self._wakeups) < RECENT_WAKEUPS // 2:
                continue  # several scans since we last looked, and too few wake-ups yet to know the scans' phase
            opened = woke - late  # the latest scan, placed by the scans' phase
            if not masks[-1] & IN_CLOSE_NOWRITE:  # listing still open: wait for its close
                closed = self._read(min(0.5, max(0.0, until - time.monotonic())))
                if not any(m & IN_CLOSE_NOWRITE for m in closed) or any(m & IN_OPEN for m in closed):
                    continue
            start = time.monotonic() + self.settle_s + self.settle_per_name_s * listed
            stop = opened + self.period_s - self.margin_s
            if start < stop:
                return start, stop
        return None

    def run(self, items: Sequence[T], action: Callable[[T], object], listed: int) -> int:
        """Run ``action`` on every item, inside quiet windows where possible; returns how many ran.
        ``listed``: names in the directory (the scans' ``stat`` phase grows with it)."""
        pending = list(items)
        fits = self.settle_s + self.settle_per_name_s * listed < self.period_s - self.margin_s
        if self.fd >= 0 and pending and fits and self._may_wait():
            deadline = time.monotonic() + self.max_wait_s
            self._opens = 0
            while pending:
                window = self._quiet_window(deadline, listed)
                if window is None:
                    self.blind_waits = self.blind_waits + 1 if self._opens == 0 else 0
                    break
                self.blind_waits = 0
                start, stop = window
                time.sleep(max(0.0, start - time.monotonic()))
                while pending and time.monotonic() < stop:
                    if any(m & IN_OPEN for m in self._read(0)):
                        break  # the next scan began early
                    action(pending.pop(0))
                    self.gated += 1
        for item in pending:
            action(item)
            self.ungated += 1
        return len(items)

    def move(self, pairs: Sequence[tuple[Path, Path]], listed: int) -> list[bool]:
        """``os.replace`` every ``(source, target)`` pair, inside quiet windows where possible;
        False where the source was already gone (another attempt was first)."""
        moved = [False] * len(pairs)

        def replace(i: int) -> None:
            moved[i] = replace_pair(*pairs[i])

        self.run(range(len(pairs)), replace, listed)
        return moved

    def _may_wait(self) -> bool:
        """Wait for a quiet window on this pass? Not after three blind waits in a row, except on
        every ``reprobe_passes``-th pass since (a paused enumerator comes back)."""
        if self.blind_waits < 3:
            return True
        self._skipped += 1
        if self._skipped >= self.reprobe_passes:
            self._skipped = 0
            return True
        return False

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
