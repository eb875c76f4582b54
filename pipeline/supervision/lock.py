"""One ingest per landing zone: an exclusive ``flock`` on ``<landing>/.linewatch-ingest.lock``.

The lock is taken by the supervisor (``linewatch ingest``) and its file descriptor is inherited by
the job process, so it is held until *both* are gone: a supervisor killed while its job still
cancels does not let a second job in. The kernel drops the lock with the last descriptor, so a
crash never leaves a stale lock behind. The holder writes ``pid``, ``host`` and the start time
into the file; a refused second ingest names them.

Local file systems: reliable. NFSv4: Linux (≥ 2.6.12) emulates ``flock`` with a whole-file POSIX
byte-range lock that the server arbitrates, so two hosts exclude each other when the server
implements NFSv4 locking (most do; some NAS firmware and NFSv3 mounts with ``nolock`` do not).
That is why :mod:`pipeline.supervision.lease` adds a Redis lease (docs/supervision.md).

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as d:
...     first = FileLock.acquire(Path(d) / "x.lock", "landing zone")
...     try:
...         FileLock.acquire(Path(d) / "x.lock", "landing zone")
...     except LockHeld as exc:
...         exc.holder.pid == os.getpid()
...     first.release()
True
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

LANDING_LOCK_NAME = ".linewatch-ingest.lock"  # hidden: the FileSource and the janitor skip it


@dataclass(frozen=True)
class Holder:
    """Who holds a lock (as written into the lock file)."""

    pid: int
    host: str
    since_ms: int
    what: str = ""
    job_pid: int = 0  # the job process the supervisor ``pid`` started, once it runs

    def describe(self) -> str:
        since = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.since_ms / 1000))
        job = f", job PID {self.job_pid}" if self.job_pid else ""
        return f"PID {self.pid} on host {self.host} (since {since}{job})"

    @classmethod
    def me(cls, what: str = "") -> Holder:
        return cls(os.getpid(), socket.gethostname(), int(time.time() * 1000), what)

    @classmethod
    def parse(cls, text: str) -> Holder | None:
        try:
            data = json.loads(text)
            return cls(int(data["pid"]), str(data["host"]), int(data["since_ms"]), str(data.get("what", "")),
                       int(data.get("job_pid", 0)))
        except (ValueError, KeyError, TypeError):
            return None


class LockHeld(RuntimeError):
    """The lock is held by another process; ``holder`` says which (None if it wrote nothing yet)."""

    def __init__(self, path: Path, what: str, holder: Holder | None) -> None:
        self.path = path
        self.holder = holder
        who = holder.describe() if holder is not None else "another process (no holder recorded yet)"
        super().__init__(f"{what} {path.parent} is already being ingested by {who}; lock {path}. "
                         "Stop that `linewatch ingest` first, or give this one its own landing zone / data dir.")


class FileLock:
    """An exclusive, non-blocking ``flock`` with the holder recorded in the file."""

    def __init__(self, path: Path, fd: int, holder: Holder) -> None:
        self.path = path
        self.fd = fd
        self.holder = holder

    @classmethod
    def acquire(cls, path: Path, what: str = "landing zone", wait_orphan_s: float = 0.0) -> FileLock:
        """Take the lock or raise :class:`LockHeld` naming the holder. Waits only (up to ``wait_orphan_s``)
        while the holder is a job on this host whose supervisor is dead: it is exiting (a restart right
        after a crash of the CLI must not be refused)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        deadline = time.monotonic() + wait_orphan_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                holder = read_holder(path)
                if holder is not None and _orphaned(holder) and time.monotonic() < deadline:
                    time.sleep(0.1)  # its supervisor is gone: the job is cancelling and will exit (lifeline)
                    continue
                os.close(fd)
                raise LockHeld(path, what, holder) from None
        holder = Holder.me(what)
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(holder.__dict__).encode() + b"\n", 0)
        return cls(path, fd, holder)

    def record_job(self, job_pid: int) -> None:
        """Record the job process the holder started (it inherits the lock)."""
        self.holder = Holder(self.holder.pid, self.holder.host, self.holder.since_ms, self.holder.what, job_pid)
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, json.dumps(self.holder.__dict__).encode() + b"\n", 0)

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # the job's inherited copy, if any, keeps it until the job exits
            self.fd = -1


def _orphaned(holder: Holder) -> bool:
    """A holder on this host whose supervisor PID is gone (its job, which inherited the lock, is exiting)."""
    if holder.host != socket.gethostname():
        return False
    try:
        os.kill(holder.pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def read_holder(path: Path) -> Holder | None:
    """The holder recorded in a lock file (None: none, or unreadable)."""
    try:
        return Holder.parse(path.read_text())
    except OSError:
        return None


def is_locked(path: Path) -> bool:
    """Is the lock held by anyone right now (by a process other than this one's open descriptions)?"""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
