"""The job dies with its supervisor, however the supervisor dies.

Two independent mechanisms, both set up by :class:`pipeline.runner.IngestJob`:

* **Parent-death signal** (Linux ``prctl(PR_SET_PDEATHSIG)``): the job process asks the kernel to
  send it ``SIGTERM`` when its parent dies (``kill -9`` of the CLI, of its process group, an OOM
  kill). The signal is tied to the parent *thread* that forked the job: start the job from a thread
  that lives as long as the job (the CLI's main thread does).
* **Liveness pipe**: the supervisor keeps the write end of a pipe open and never writes; the job
  holds the read end and a thread blocks on it. EOF means every copy of the write end is closed,
  i.e. the supervisor is gone (any OS, any thread, and also when PID 1 adopted the job before the
  ``prctl``). Either way the job cancels its Flink job (checkpoint retained) and exits; its JVM
  (the PyFlink gateway, a child reading the job's stdin) exits on that EOF in turn.

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


def watch_lifeline(read_fd: int, on_eof: threading.Event | None = None) -> threading.Event:
    """Start a daemon thread that sets (and returns) ``on_eof`` when the pipe's writers are gone."""
    event = on_eof if on_eof is not None else threading.Event()

    def watch() -> None:
        try:
            while os.read(read_fd, 4096):
                pass  # the supervisor never writes; tolerate it anyway
        except OSError:
            pass
        event.set()

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
