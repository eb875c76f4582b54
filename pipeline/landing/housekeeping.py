"""The housekeeping thread: the landing zone's slow file-system work, off the Flink operator.

Listing and parsing manifests (:class:`~pipeline.landing.index.ManifestIndex`), the janitor's
pass (:class:`~pipeline.landing.janitor.Janitor`), deleting expired archive hours
(``shutil.rmtree`` of up to an hour of blobs) and publishing metrics run here, so a checkpoint
barrier never waits behind them: before, they ran inside ``process_element``/``on_timer`` and
an archive prune of 10,000 files stalled the barrier (docs/benchmarks.md, "Housekeeping").

The operator talks to the thread through one coalescing flag (``index.wanted``: "list again
soon") and reads the index's last snapshot; nothing else is queued, so nothing can pile up.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from collections.abc import Callable

from pipeline.landing.index import ManifestIndex
from pipeline.landing.janitor import Janitor
from pipeline.landing.zone import LandingZone

log = logging.getLogger(__name__)

MIN_LISTING_GAP_S = 0.02
"""At most one listing per 20 ms, however often the operator asks."""


class Housekeeper:
    """Runs the index refreshes, janitor passes, archive pruning and ``on_pass`` callbacks on a
    daemon thread: refresh when asked (``index.wanted``) and every ``interval_s``."""

    def __init__(self, zone: LandingZone, index: ManifestIndex, janitor: Janitor, interval_s: float,
                 retention_s: float, on_pass: Callable[[int], None] | None = None) -> None:
        self.zone = zone
        self.index = index
        self.janitor = janitor
        self.interval_s = interval_s
        self.retention_s = retention_s
        self.on_pass = on_pass
        self.passes = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """List the directory once on the caller's thread (the operator's ``open``, before it is
        handed any line: the manifests present at the start are then known), then start the thread."""
        self.index.refresh()
        self.index.synchronous = False
        self._thread = threading.Thread(target=self._run, name="linewatch-housekeeping", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stop.set()
        self.index.wanted.set()
        if self._thread is not None:
            self._thread.join(timeout_s)

    def run_pass(self, janitor: bool = True) -> None:
        """One refresh (and, when due, janitor pass, archive prune and ``on_pass``)."""
        names = self.index.refresh()
        if not janitor:
            return
        archived = self.janitor.run_once(names)
        for bucket in self.zone.expired_buckets(self.retention_s):  # lists archive/ (a few hour buckets)
            shutil.rmtree(bucket, ignore_errors=True)
        if self.on_pass is not None:
            self.on_pass(archived)
        self.passes += 1

    def _run(self) -> None:
        next_janitor = 0.0
        while not self._stop.is_set():
            self.index.wanted.wait(timeout=max(0.0, next_janitor - time.monotonic()))
            if self._stop.is_set():
                return
            due = time.monotonic() >= next_janitor
            try:
                self.run_pass(janitor=due)
            except Exception:  # a failing pass (racing janitor, Redis away) must not end the thread
                log.exception("housekeeping pass failed; trying again")
            if due:
                next_janitor = time.monotonic() + self.interval_s
            self._stop.wait(MIN_LISTING_GAP_S)
