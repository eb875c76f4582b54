"""A temp directory per run, under the data dir; stale ones removed at start; the total bounded.

Without this every SIGKILLed run left a full set of Flink's temp files in ``/tmp`` (a 24 MB
``flink-rpc-akka*.jar``, ``minicluster_*``, blob and netty-shuffle directories, ``python-dist-*``):
511 MB after 22 crashes, never removed (issue 13). Now the runner points every temp location of
the job at ``<data>/flink/tmp/run-<time>-<pid>/``: ``TMPDIR`` (Python's ``tempfile``, PyFlink's
gateway handshake), ``-Djava.io.tmpdir`` (the RPC jar, the MiniCluster's directories) and Flink's
``io.tmp.dirs``. The job process holds an ``flock`` on ``<run dir>/.owner`` for its whole life (an
inherited descriptor), so "stale" is exact: the lock is free, whatever PID was reused meanwhile.

At every start, :meth:`TempRoot.new_run` removes every stale run directory, so what remains is
live: with one ingest per data dir (the run directory's lock refuses a second one) that is at most
the run starting now, plus one still exiting. Crash loops therefore leave at most one run's temp
files (tens of MB) however many times they crash; more than ``keep`` live directories or
``max_bytes`` are reported (a second job on the data dir, or a job that fills its temp dir).
A clean exit removes its own directory (:meth:`RunTempDir.remove`).

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as d:
...     root = TempRoot(Path(d))
...     run = root.new_run()
...     crashed = Path(d) / "run-0-1"; crashed.mkdir(); _ = (crashed / "x").write_bytes(b"1" * 10)
...     sorted(p.name for p in root.runs()) == sorted([run.path.name, "run-0-1"])
...     removed = root.remove_stale(); [p.name for p in removed], run.path.is_dir()
True
(['run-0-1'], True)
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from pipeline.supervision.lock import is_locked

log = logging.getLogger(__name__)

OWNER = ".owner"


def dir_bytes(path: Path) -> int:
    """Bytes of the regular files under ``path`` (not following symlinks)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                continue
    return total


@dataclass
class RunTempDir:
    """One run's temp directory and the locked owner file that marks it live."""

    path: Path
    fd: int

    def env(self) -> dict[str, str]:
        """Environment of the job process: Python and every child honour ``TMPDIR``."""
        return {"TMPDIR": str(self.path), "TMP": str(self.path), "TEMP": str(self.path)}

    def jvm_args(self) -> list[str]:
        return [f"-Djava.io.tmpdir={self.path}"]

    def record_pid(self, pid: int) -> None:
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, f"{pid}\n".encode(), 0)

    def release(self) -> None:
        """Close this process's descriptor (the job's inherited copy keeps the directory live)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def remove(self) -> None:
        """Remove the directory (after the job exited cleanly)."""
        self.release()
        shutil.rmtree(self.path, ignore_errors=True)


class TempRoot:
    """``<data>/flink/tmp``: run directories, at most ``keep`` of them and ``max_bytes`` in all."""

    def __init__(self, root: Path, keep: int = 3, max_bytes: int = 512 << 20) -> None:
        self.root = root
        self.keep = keep
        self.max_bytes = max_bytes

    def runs(self) -> list[Path]:
        """Run directories, oldest first."""
        if not self.root.is_dir():
            return []
        return sorted((p for p in self.root.iterdir() if p.is_dir() and p.name.startswith("run-")),
                      key=lambda p: p.stat().st_mtime)

    @staticmethod
    def is_live(run: Path) -> bool:
        """Does a live process hold the run's owner lock? (No owner file: it crashed while being created,
        or it is being removed.)"""
        return is_locked(run / OWNER)

    def remove_stale(self) -> list[Path]:
        """Remove every run directory no live process owns; returns them."""
        removed = []
        for run in self.runs():
            if not self.is_live(run):
                shutil.rmtree(run, ignore_errors=True)
                removed.append(run)
        if removed:
            log.info("removed %d stale temp dir(s) of crashed runs under %s", len(removed), self.root)
        return removed

    def usage(self) -> tuple[int, int]:
        """``(run directories, bytes)`` under the root."""
        runs = self.runs()
        return len(runs), sum(dir_bytes(r) for r in runs)

    def new_run(self) -> RunTempDir:
        """Clean up, check the bound, then create and lock this run's directory."""
        self.remove_stale()
        count, used = self.usage()
        if count >= self.keep or used >= self.max_bytes:
            log.warning("%d live run temp dirs (%d bytes) under %s: more ingest jobs on one data dir than expected",
                        count, used, self.root)
        path = self.root / f"run-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{os.getpid()}-{os.urandom(3).hex()}"
        path.mkdir(parents=True)
        fd = os.open(path / OWNER, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return RunTempDir(path, fd)
