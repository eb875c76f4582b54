"""A storm of SIGTERMs stops a process through :func:`linewatch.stop_signals.call_on_signals` without a
deadlock. A handler that calls ``Event.set()`` itself hung in 1 of 6 and 1 of 8 such runs on this machine
(2026-12-07), as the ingestion job hung in CI; each run takes ~0.15 s, so at those rates 40 runs would
catch it with a probability of 0.995-0.999 (one check here: it hung on the third)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CHILD = """
import os, signal, threading
from linewatch.stop_signals import call_on_signals
stop = threading.Event()
call_on_signals(stop.set, (signal.SIGTERM,))
def storm():
    for _ in range(2000):
        os.kill(os.getpid(), signal.SIGTERM)
threading.Thread(target=storm, daemon=True).start()
while not stop.wait(0.0001):
    pass
for _ in range(20000):  # the stop event is waited on while signals keep coming
    stop.wait(0.0001)
print("stopped", stop.is_set())
"""


def test_a_storm_of_signals_stops_the_process_and_never_deadlocks() -> None:
    root = Path(__file__).resolve().parents[2]
    for run in range(40):
        try:
            done = subprocess.run([sys.executable, "-c", CHILD], cwd=root, capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:  # run() has killed the child
            raise AssertionError(f"run {run}: the process did not stop within 60 s (a deadlocked handler)") from None
        assert done.returncode == 0 and done.stdout.strip() == "stopped True", (run, done.returncode, done.stderr[-2000:])
