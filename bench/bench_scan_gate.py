"""The janitor's scan gate: quiet windows on a busy interpreter and with late wake-ups (docs/ingestion.md,
"Directory scans", session 54).

A fixed-rate enumerator in another process lists and stats a directory every 10 ms, as Flink's does
(``tests.pipeline.test_gate_process.ENUMERATOR``), and counts the scans that saw a listed name vanish.
The gate moves six manifests a pass, a pass every 50 ms, for ``--seconds``:

* ``busy``: the in-process :class:`~pipeline.landing.scan_gate.ScanGate` and the job's
  :class:`~pipeline.landing.gate_process.GateProcess`, each with and without a pure-Python thread that holds
  this interpreter's GIL (as the ingestion job's decoding does);
* ``late``: a ``ScanGate`` whose wake-ups are delayed on purpose (12 ms every time, more than a scan period;
  uniform 0-25 ms and 0-40 ms).

Reported per case: moves inside a quiet window (``gated``), without one (``ungated``), scans, failed scans.
Passes take longer when the GIL is held, so a case's total moves differ. ::

    .venv/bin/python bench/bench_scan_gate.py --out bench/results/scan_gate.json   # ~2 min
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline.landing.gate_process import GateProcess
from pipeline.landing.scan_gate import ScanGate
from tests.pipeline.test_gate_process import ENUMERATOR, manifests


class DelayedGate(ScanGate):
    """A gate whose wake-ups come ``delay_ms()`` late."""

    def __init__(self, directory: Path, delay_ms: float, uniform: bool, seed: int = 1) -> None:
        super().__init__(directory, period_s=0.01)
        self.delay_ms, self.uniform, self.rng = delay_ms, uniform, random.Random(seed)

    def _wait(self, timeout_s: float) -> bool:
        ready = super()._wait(timeout_s)
        if ready:
            time.sleep((self.rng.uniform(0.0, self.delay_ms) if self.uniform else self.delay_ms) / 1000.0)
        return ready


def run_case(gate_kind: str, busy: bool, seconds: float, delay: tuple[float, bool] | None = None) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        watched, archive = Path(tmp) / "manifests", Path(tmp) / "archive"
        watched.mkdir()
        archive.mkdir()
        enumerator = subprocess.Popen([sys.executable, "-c", ENUMERATOR, str(watched), str(seconds + 1.0)],
                                      stdout=subprocess.PIPE, text=True)
        gate: ScanGate | GateProcess
        if delay is not None:
            gate = DelayedGate(watched, *delay)
        elif gate_kind == "process":
            gate = GateProcess(watched, period_s=0.01)
        else:
            gate = ScanGate(watched, period_s=0.01)
        stop = threading.Event()

        def hold_the_gil() -> None:
            total = 0
            while not stop.is_set():
                for i in range(1000):
                    total += i * i

        hog = threading.Thread(target=hold_the_gil)
        if busy:
            hog.start()
        time.sleep(0.3)
        moved, t0 = 0, time.monotonic()
        try:
            while time.monotonic() - t0 < seconds:
                names = manifests(watched, moved, 6)
                moved += sum(gate.move([(watched / n, archive / n) for n in names], listed=len(names)))
                time.sleep(0.05)
        finally:
            stop.set()
            if busy:
                hog.join()
            gate.close()
        scans, failed = map(int, enumerator.communicate(timeout=60)[0].split())
    return {"gate": gate_kind, "busy_thread": busy, "delay_ms": None if delay is None else delay[0],
            "delay": None if delay is None else ("uniform 0..d" if delay[1] else "fixed"),
            "moved": moved, "gated": gate.gated, "ungated": gate.ungated, "scans": scans, "failed_scans": failed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    cases = [run_case(kind, busy, args.seconds) for kind in ("in-process", "process") for busy in (False, True)]
    cases += [run_case("in-process", False, args.seconds, delay) for delay in ((12.0, False), (25.0, True), (40.0, True))]
    for c in cases:
        what = f"{c['gate']}, busy thread" if c["busy_thread"] else str(c["gate"])
        if c["delay_ms"] is not None:
            what += f", wake-ups {c['delay_ms']:.0f} ms late ({c['delay']})"
        print(f"{what:52s} gated {c['gated']:4d} ungated {c['ungated']:4d} of {c['moved']:4d}; "
              f"{c['failed_scans']} of {c['scans']} scans failed")
    if args.out is not None:
        args.out.write_text(json.dumps({"command": " ".join(sys.argv), "seconds": args.seconds, "cases": cases},
                                       indent=1) + "\n")


if __name__ == "__main__":
    main()
