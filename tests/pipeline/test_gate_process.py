"""The scan gate in a process of its own (``pipeline.landing.gate_process``), on a real directory,
real inotify and a real child process: it finds quiet windows while the caller's interpreter is busy,
and a child that cannot start or dies loses no move."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from pipeline.landing.gate_process import GateProcess

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux only")

ENUMERATOR = """
import os, sys, time
watched, seconds = sys.argv[1], float(sys.argv[2])
t0 = time.monotonic(); scans = failed = 0
while time.monotonic() - t0 < seconds:   # lists, then stats every name, at a fixed rate: as Flink's enumerator
    names = os.listdir(watched)
    try:
        for name in names:
            os.stat(os.path.join(watched, name))
    except FileNotFoundError:
        failed += 1
    scans += 1
    time.sleep(max(0.0, t0 + scans * 0.01 - time.monotonic()))
print(scans, failed)
"""


def manifests(watched: Path, first: int, count: int) -> list[str]:
    names = [f"m{first + i:05d}.jsonl" for i in range(count)]
    for name in names:
        (watched / name).write_text("{}")
    return names


def test_the_gate_finds_windows_while_this_interpreter_is_busy(tmp_path: Path) -> None:
    """In the job the janitor's interpreter also decodes frames. A thread that holds the GIL made an
    in-process gate miss every scan (here, with `ScanGate` in its place: 0 of 120 moves gated, 2026-12-08); the gate's own
    process does not wait for this interpreter."""
    watched, archive = tmp_path / "manifests", tmp_path / "archive"
    watched.mkdir()
    archive.mkdir()
    enumerator = subprocess.Popen([sys.executable, "-c", ENUMERATOR, str(watched), "8"], stdout=subprocess.PIPE,
                                  text=True)
    stop = threading.Event()

    def busy() -> None:
        total = 0
        while not stop.is_set():
            for i in range(1000):  # pure Python: holds the GIL but for the switch interval
                total += i * i

    gate = GateProcess(watched, period_s=0.01, max_wait_s=2.0)
    hog = threading.Thread(target=busy)
    hog.start()
    moved: list[bool] = []
    try:
        for k in range(20):
            names = manifests(watched, 6 * k, 6)
            moved += gate.move([(watched / n, archive / n) for n in names], listed=len(names))
    finally:
        stop.set()
        hog.join()
        gate.close()
    scans, failed = map(int, enumerator.communicate(timeout=30)[0].split())
    assert all(moved) and len(os.listdir(archive)) == 120 and not os.listdir(watched)
    assert (gate.gated, gate.ungated, gate.failures) == (120, 0, 0), (gate.gated, gate.ungated, scans)
    assert failed <= 1, f"{failed} of {scans} scans saw a listed name vanish"


def test_a_child_that_cannot_start_or_dies_loses_no_move(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    watched, archive = tmp_path / "manifests", tmp_path / "archive"
    watched.mkdir()
    archive.mkdir()
    gate = GateProcess(watched, period_s=0.01, max_wait_s=0.05, python=str(tmp_path / "no-python"))
    names = manifests(watched, 0, 3)
    assert gate.move([(watched / n, archive / n) for n in names], listed=3) == [True] * 3
    assert gate.failures == 1 and gate.ungated == 3  # moved in-process; nobody scans here
    assert "did not start" in caplog.text and "no-python" in caplog.text
    names = manifests(watched, 3, 1)  # within retry_s: no new start, no new warning
    assert gate.move([(watched / n, archive / n) for n in names], listed=1) == [True]
    assert gate.failures == 1 and caplog.text.count("did not start") == 1

    gate = GateProcess(watched, period_s=0.01, max_wait_s=0.05, retry_s=0.0)
    names = manifests(watched, 4, 2)
    assert gate.move([(watched / n, archive / n) for n in names], listed=2) == [True, True]
    assert gate._proc is not None
    gate._proc.kill()
    gate._proc.wait()
    names = manifests(watched, 6, 2)  # the dead child is noticed, this pass moves in-process ...
    assert gate.move([(watched / n, archive / n) for n in names], listed=2) == [True, True]
    assert gate.failures == 1 and "exited with code" in caplog.text
    names = manifests(watched, 8, 2)  # ... and the next one starts a new child
    assert gate.move([(watched / n, archive / n) for n in names], listed=2) == [True, True]
    assert gate._proc is not None and gate._proc.poll() is None and gate.failures == 1
    gate.close()
    assert sorted(os.listdir(archive)) == [f"m{i:05d}.jsonl" for i in range(10)] and not os.listdir(watched)
