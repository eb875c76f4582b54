"""The janitor's scan gate in a process of its own: :class:`GateProcess`.

:class:`~pipeline.landing.scan_gate.ScanGate` can place a quiet window only if its thread runs within
a few milliseconds of each scan. In the ingestion job it used to run on the housekeeping thread,
inside the interpreter that decodes frames; that thread then waits for the GIL after every wake-up
and after every ``os.replace`` (the decoding thread takes the GIL whenever it is released, and gives
it back only after the 5 ms switch interval). On a loaded two-core machine the wake-ups came more
than one scan period late, so nearly every pass saw several scans at once and found no window
(2026-12-07: 4 to 17 of 1,201 archives gated, 61 to 102 failed scans; a gate in an idle process
beside the same job gated 1,000 of 1,000).

Here the gate runs in a child process with nothing else to do: the janitor computes each
manifest's archive path and sends the ``(source, target)`` pairs; the child waits for quiet windows,
moves them, and answers which moved and how many inside a window. The protocol is one JSON line
each way per pass on the child's stdin/stdout (no pickle). The child exits at end of input, so it
never outlives the job, even one killed with SIGKILL.

If the child cannot start or stops answering (no interpreter at ``python`` on a remote worker, a
crash, no answer within ``max_wait_s`` + ``reply_slack_s``), the pass moves its pairs with an
in-process gate, as before this module, and logs why; the child is started again after
``retry_s``, doubled after each failure in a row up to an hour (an interpreter that is not there stays
away, and its warning with it). Pairs the child had already moved count as moved.

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as d:
...     (Path(d) / "m.jsonl").write_text("{}")
...     gate = GateProcess(Path(d), period_s=0.01, max_wait_s=0.05)
...     moved = gate.move([(Path(d) / "m.jsonl", Path(d) / "a.jsonl"), (Path(d) / "gone", Path(d) / "b")], listed=1)
...     gate.close()
...     moved, gate.gated + gate.ungated, gate.failures   # nobody scans here: moved ungated
2
([True, False], 2, 0)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import select
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pipeline.landing.scan_gate import ScanGate

log = logging.getLogger(__name__)

PROJECT_ROOT = Path(__file__).resolve().parents[2]


class GateProcess:
    """Move files between the scans of ``directory``, observed by a :class:`ScanGate` in a child
    process (see the module docstring). ``gated``/``ungated`` count as :class:`ScanGate`'s do."""

    def __init__(self, directory: Path, period_s: float, python: str = sys.executable, max_wait_s: float = 0.5,
                 start_timeout_s: float = 30.0, reply_slack_s: float = 10.0, retry_s: float = 60.0) -> None:
        self.directory = directory
        self.period_s = period_s
        self.python = python
        self.max_wait_s = max_wait_s
        self.start_timeout_s = start_timeout_s
        self.reply_slack_s = reply_slack_s
        self.retry_s = retry_s
        self.gated = 0
        self.ungated = 0
        self.failures = 0  # child starts or answers that failed (each such pass moved in-process)
        self._proc: subprocess.Popen[bytes] | None = None
        self._buffer = b""
        self._retry_at = 0.0
        self._failed_in_a_row = 0
        self._local: ScanGate | None = None

    def move(self, pairs: Sequence[tuple[Path, Path]], listed: int) -> list[bool]:
        """``os.replace`` every ``(source, target)`` pair between scans where possible; False where
        the source was already gone. ``listed``: names in the directory (as :meth:`ScanGate.run`)."""
        if not pairs:
            return []
        proc = self._child()
        if proc is not None:
            try:
                return self._ask(proc, pairs, listed)
            except (OSError, ValueError, TimeoutError) as exc:
                self._failed(f"the scan gate's process failed ({exc})")
        return self._move_here(pairs, listed)

    # ---- the child
    def _child(self) -> subprocess.Popen[bytes] | None:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        if self._proc is not None:
            self._failed(f"the scan gate's process exited with code {self._proc.returncode}")
        if not sys.platform.startswith("linux") or time.monotonic() < self._retry_at:
            return None  # no inotify off Linux: the in-process gate moves ungated, as it always did
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PROJECT_ROOT), env.get("PYTHONPATH", "")) if p)
        command = [self.python, "-m", "pipeline.landing.gate_process", str(self.directory),
                   "--period-s", repr(self.period_s), "--max-wait-s", repr(self.max_wait_s)]
        try:
            self._proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                                          bufsize=0, close_fds=True)
            self._buffer = b""
            ready = self._line(self._proc, time.monotonic() + self.start_timeout_s)
            if not ready.get("ready"):
                raise ValueError(f"unexpected first line {ready!r}")
            self._failed_in_a_row = 0
        except (OSError, ValueError, TimeoutError) as exc:
            self._failed(f"the scan gate's process did not start ({' '.join(command)}: {exc}); is {self.python} "
                         "this project's interpreter on this machine?")
            return None
        if not ready.get("watching"):
            log.warning("the scan gate's process cannot watch %s: manifests move without waiting for quiet windows",
                        self.directory)
        return self._proc

    def _ask(self, proc: subprocess.Popen[bytes], pairs: Sequence[tuple[Path, Path]], listed: int) -> list[bool]:
        assert proc.stdin is not None
        request = {"pairs": [[str(s), str(t)] for s, t in pairs], "listed": int(listed)}
        proc.stdin.write(json.dumps(request).encode() + b"\n")
        deadline = time.monotonic() + self.max_wait_s + self.reply_slack_s + 0.001 * len(pairs)
        reply = self._line(proc, deadline)
        moved = reply.get("moved")
        if not isinstance(moved, list) or len(moved) != len(pairs):
            raise ValueError(f"answer for {len(pairs)} pairs: {reply!r}")
        self.gated += int(reply["gated"])
        self.ungated += int(reply["ungated"])
        return [bool(m) for m in moved]

    def _line(self, proc: subprocess.Popen[bytes], deadline: float) -> dict[str, Any]:
        """The child's next JSON line, read before ``deadline`` (monotonic)."""
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError("no answer in time")
            chunk = os.read(fd, 65536)
            if not chunk:
                raise OSError(f"end of output (exit code {proc.poll()})")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        value = json.loads(line)
        if not isinstance(value, dict):
            raise ValueError(f"not an object: {line!r}")
        return value

    def _failed(self, why: str) -> None:
        self.failures += 1
        wait_s = min(self.retry_s * 2 ** self._failed_in_a_row, 3600.0)
        self._failed_in_a_row += 1
        self._retry_at = time.monotonic() + wait_s
        log.warning("%s: moving manifests with an in-process gate (more failed scans on a loaded machine); "
                    "trying the process again in %.0f s", why, wait_s)
        self._stop()

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()  # end of input: the child exits
        try:
            proc.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()

    # ---- the fallback: the gate on the caller's thread
    def _move_here(self, pairs: Sequence[tuple[Path, Path]], listed: int) -> list[bool]:
        if self._local is None:
            self._local = ScanGate(self.directory, period_s=self.period_s, max_wait_s=self.max_wait_s)
        gated, ungated = self._local.gated, self._local.ungated
        moved = self._local.move(pairs, listed)
        self.gated += self._local.gated - gated
        self.ungated += self._local.ungated - ungated
        # a child that failed mid-pass may have moved some already: they are archived all the same
        return [m or (not s.exists() and t.exists()) for m, (s, t) in zip(moved, pairs, strict=True)]

    def close(self) -> None:
        self._stop()
        if self._local is not None:
            self._local.close()
            self._local = None


def serve(directory: Path, period_s: float, max_wait_s: float) -> int:
    """The child: answer each request line on stdin with one line on stdout, until end of input."""
    gate = ScanGate(directory, period_s=period_s, max_wait_s=max_wait_s)
    out = sys.stdout.buffer

    def answer(value: dict[str, Any]) -> None:
        out.write(json.dumps(value).encode() + b"\n")
        out.flush()

    answer({"ready": True, "watching": gate.fd >= 0})
    try:
        for line in sys.stdin.buffer:
            request = json.loads(line)
            gated, ungated = gate.gated, gate.ungated
            pairs = [(Path(s), Path(t)) for s, t in request["pairs"]]
            moved = gate.move(pairs, int(request["listed"]))
            answer({"moved": moved, "gated": gate.gated - gated, "ungated": gate.ungated - ungated})
    except BrokenPipeError:
        pass  # the job is gone
    finally:
        gate.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The janitor's scan gate process (pipeline.landing.gate_process); "
                                                 "started by the ingestion job, not by hand.")
    parser.add_argument("directory", type=Path)
    parser.add_argument("--period-s", type=float, required=True)
    parser.add_argument("--max-wait-s", type=float, default=0.5)
    args = parser.parse_args(argv)
    return serve(args.directory, args.period_s, args.max_wait_s)


if __name__ == "__main__":
    sys.exit(main())
