"""The job dies with its supervisor, however the supervisor dies.

Two independent mechanisms, both set up by :class:`pipeline.runner.IngestJob`:

* **Parent-death signal** (Linux ``prctl(PR_SET_PDEATHSIG)``): the job process asks the kernel to
  send it ``SIGTERM`` when its parent dies (``kill -9`` of the CLI, of its process group, an OOM
  kill). The signal is tied to the parent *thread* that forked the job: start the job from a thread
  that lives as long as the job (the CLI's main thread does).
* **Liveness pipe**: the supervisor keeps the write end of a pipe open and never writes; the job
  holds the read end and a thread blocks on it. EOF means every copy of the write end is closed,
  i.e. the supervisor is gone (any OS, any thread, and also when PID 1 adopted the job before the
  ``prctl``). Either way the job cancels its Flink job (checkpoint retained) and exits.

The job's exit is bounded from the moment the stop is asked (:func:`deadline_on_stop`), whatever its
main thread is blocked in at that moment (a status call to a JVM busy on a loaded machine), and the
job reaps its JVM (the PyFlink gateway, its child) before it exits (:func:`end_children`), so that a
job that is gone has no JVM left behind, also when nobody waits for it (an orphan).

>>> r, w = open_lifeline()
>>> os.close(w); watch_lifeline(r).wait(5)
True
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
import threading
from collections.abc import Callable

PR_SET_PDEATHSIG = 1


def set_parent_death_signal(sig: int = signal.SIGTERM, expected_parent: int | None = None) -> bool:
    """Ask Linux to send ``sig`` to this process when its parent dies; False where unsupported.

    ``expected_parent``: the supervisor's PID. If the parent already died before the ``prctl``
    (this process was adopted), the signal is raised at once, as the kernel would have.
    """
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, ctypes.c_ulong(sig), 0, 0, 0) != 0:
        return False
    if expected_parent is not None and os.getppid() != expected_parent:
        os.kill(os.getpid(), sig)
    return True


def open_lifeline() -> tuple[int, int]:
    """``(read_fd, write_fd)`` of a new liveness pipe; both non-inheritable (pass the read end with
    ``pass_fds``, keep the write end in the supervisor only)."""
    return os.pipe()


def watch_lifeline(read_fd: int, on_eof: threading.Event | None = None, *also: threading.Event) -> threading.Event:
    """Start a daemon thread that sets (and returns) ``on_eof``, and every event of ``also``, when
    the pipe's writers are gone."""
    event = on_eof if on_eof is not None else threading.Event()

    def watch() -> None:
        try:
            while os.read(read_fd, 4096):
                pass  # the supervisor never writes; tolerate it anyway
        except OSError:
            pass
        event.set()
        for other in also:
            other.set()

    threading.Thread(target=watch, name="linewatch-lifeline", daemon=True).start()
    return event


def exit_deadline(seconds: float) -> threading.Timer:
    """Kill this process's group (the job and its JVM) if it is still alive after ``seconds``:
    the backstop when a clean cancel hangs. The job process leads its own group."""

    def kill_group() -> None:
        print(f"lifeline: no clean exit within {seconds:.0f}s, killing the process group", file=sys.stderr,
              flush=True)
        os.killpg(os.getpgrp(), signal.SIGKILL)

    timer = threading.Timer(seconds, kill_group)
    timer.daemon = True
    timer.start()
    return timer


def deadline_on_stop(stop: threading.Event, seconds: Callable[[], float]) -> threading.Thread:
    """Arm :func:`exit_deadline` (``seconds()``, evaluated then) as soon as ``stop`` is set, from a
    daemon thread: the bound on the exit runs from the stop request, not from when the main thread
    gets round to it."""

    def arm() -> None:
        stop.wait()
        exit_deadline(seconds())

    thread = threading.Thread(target=arm, name="linewatch-deadline", daemon=True)
    thread.start()
    return thread


def child_pids(pid: int | None = None) -> list[int]:
    """The PIDs whose parent is ``pid`` (default: this process), from ``/proc`` (Linux; [] elsewhere).

    >>> import subprocess, sys
    >>> child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    >>> child.pid in child_pids()
    True
    >>> child.stdin.close(); child.wait()
    0
    """
    parent = os.getpid() if pid is None else pid
    found = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                if int(handle.read().rsplit(")", 1)[1].split()[1]) == parent:
                    found.append(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    return found


def end_children(sig: int = signal.SIGTERM, pids: list[int] | None = None) -> list[int]:
    """Send ``sig`` to every child of this process (``pids``: these only), i.e. the job's JVM
    (SIGTERM runs its shutdown hooks as the EOF of its stdin would), and reap them; returns their
    PIDs. Blocks until they are gone: :func:`exit_deadline` is the backstop for one that hangs.

    >>> import subprocess, sys
    >>> child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    >>> end_children(pids=[child.pid]) == [child.pid] and child.pid not in child_pids()
    True
    """
    pids = child_pids() if pids is None else pids
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            continue
    for pid in pids:
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:  # reaped elsewhere already
            continue
    return pids
