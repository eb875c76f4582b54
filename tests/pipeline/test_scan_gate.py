"""The janitor's scan gate (``pipeline.landing.scan_gate``) on a real directory and real inotify:
blind where no one scans, and gating again once a paused enumerator scans anew."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
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


class SlowWakingGate(ScanGate):
    """A gate whose thread wakes ``delay_s`` (0.5 ms) after each event, as on a machine that schedules it late."""

    delay_s = 0.0005

    def _wait(self, timeout_s: float) -> bool:
        ready = super()._wait(timeout_s)
        if ready:
            time.sleep(self.delay_s)
        return ready


def test_a_listing_shorter_than_the_wake_up_still_opens_a_window(tmp_path: Path) -> None:
    """Flink's listing takes ~30 µs, so the gate often wakes after its close (open and close in one
    read; on some machines always: a fresh-clone CI run moved 1,017 of 1,201 manifests ungated).
    Those scans still give windows (the open is placed by the scans' fixed rate), and the items
    move while no scan's listing or ``stat`` phase is under way: a fixed-rate enumerator that
    lists and stats every name, as Flink's does, sees every listed name still there."""
    watched = tmp_path / "manifests"
    watched.mkdir()
    archive = tmp_path / "archive"
    archive.mkdir()
    names = [f"m{i:03d}.json" for i in range(60)]
    for name in names:
        (watched / name).write_text("{}")
    stop = threading.Event()
    scans, failed = [0], [0]

    def enumerator() -> None:
        t0 = time.monotonic()
        while not stop.is_set():
            listed = os.listdir(watched)  # opendir / readdir / closedir
            try:
                for name in listed:
                    os.stat(watched / name)
            except FileNotFoundError:
                failed[0] += 1
            scans[0] += 1
            stop.wait(max(0.0, t0 + scans[0] * 0.01 - time.monotonic()))  # fixed rate, 10 ms

    gate = SlowWakingGate(watched, period_s=0.01, max_wait_s=2.0)
    thread = threading.Thread(target=enumerator)
    thread.start()
    try:
        for i in range(0, len(names), 6):  # ten janitor passes of six manifests
            gate.run(names[i:i + 6], lambda n: os.replace(watched / n, archive / n), listed=len(names) - i)
    finally:
        stop.set()
        thread.join()
        gate.close()
    assert sorted(os.listdir(archive)) == names  # every item moved once
    assert gate.gated == len(names) and gate.ungated == 0, (gate.gated, gate.ungated, scans[0])
    assert failed[0] <= 1, f"{failed[0]} of {scans[0]} scans saw a listed name vanish"


class LateWakingGate(SlowWakingGate):
    """A gate whose thread wakes 12 ms after each event: every read holds two scans' opens."""

    delay_s = 0.012


def test_wake_ups_later_than_a_scan_period_still_open_windows(tmp_path: Path) -> None:
    """On a loaded machine the gate can wake after the next scan has begun too. The latest scan is
    then placed by the scans' phase, learnt over the recent wake-ups (before session 54 such a wake-up
    was dropped, and a gate that always woke this late moved everything ungated: 0 of 762 gated in a
    probe like this test, 762 of 762 now, no scan failed in either)."""
    from tests.pipeline.test_gate_process import ENUMERATOR, manifests

    watched, archive = tmp_path / "manifests", tmp_path / "archive"
    watched.mkdir()
    archive.mkdir()
    enumerator = subprocess.Popen([sys.executable, "-c", ENUMERATOR, str(watched), "6"], stdout=subprocess.PIPE,
                                  text=True)
    gate = LateWakingGate(watched, period_s=0.01, max_wait_s=2.0)
    try:
        for k in range(10):
            names = manifests(watched, 6 * k, 6)
            assert gate.move([(watched / n, archive / n) for n in names], listed=len(names)) == [True] * 6
    finally:
        gate.close()
    scans, failed = map(int, enumerator.communicate(timeout=30)[0].split())
    assert (gate.gated, gate.ungated) == (60, 0), (gate.gated, gate.ungated, scans)
    assert failed <= 1, f"{failed} of {scans} scans saw a listed name vanish"
