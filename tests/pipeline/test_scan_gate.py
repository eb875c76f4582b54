"""The janitor's scan gate (``pipeline.landing.scan_gate``) on a real directory and real inotify:
blind where no one scans, and gating again once a paused enumerator scans anew."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest

from pipeline.landing.scan_gate import ScanGate

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux only")


def test_a_gate_that_went_blind_looks_again_and_gates_once_scans_return(tmp_path: Path) -> None:
    gate = ScanGate(tmp_path, period_s=0.01, max_wait_s=0.05, reprobe_passes=3)
    moved: list[str] = []
    for i in range(3):  # no one scans: three blind waits, each item moved after max_wait_s
        gate.run([f"a{i}"], moved.append, listed=1)
    assert (gate.blind_waits, gate.gated, gate.ungated) == (3, 0, 3)
    gate.run(["b"], moved.append, listed=1)  # blind now: moved at once, without a wait
    assert (gate.ungated, gate._skipped) == (4, 1)
    stop = threading.Event()

    def enumerator() -> None:
        """Lists the directory every ~10 ms, holding it open ~2 ms, as Flink's enumerator does."""
        while not stop.is_set():
            with os.scandir(tmp_path) as it:
                list(it)
                stop.wait(0.002)
            stop.wait(0.008)

    thread = threading.Thread(target=enumerator)
    thread.start()
    try:
        passes = 0
        while gate.gated == 0 and passes < 30:  # the re-probe comes every 3rd pass; a window may be missed
            gate.run([f"c{passes}"], moved.append, listed=1)
            passes += 1
    finally:
        stop.set()
        thread.join()
    assert gate.gated >= 1 and gate.blind_waits == 0, (passes, gate.gated, gate.ungated)
    assert len(moved) == 4 + passes and gate.gated + gate.ungated == len(moved)  # every item moved once
    gate.close()
