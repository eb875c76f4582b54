"""Stop on a signal without a deadlock: :func:`call_on_signals`.

Python runs a signal handler in the main thread between two bytecodes, also in the middle of a
``threading.Event`` method that holds the event's lock. A handler that calls ``event.set()`` takes
that lock again. When a second signal arrives while the first handler is inside ``set()`` (a
parent-death ``SIGTERM`` and a supervisor's ``SIGTERM``, a user pressing Ctrl-C twice), the second
handler waits for the lock its own thread holds, and so does every thread that waits on the event.
The ingestion job was seen hung so, orphaned, for minutes after its CLI had been killed. It still
held the landing zone's lock (a fresh-clone CI run of
``tests/pipeline/test_supervision_flink.py::test_crash_restart_cycles_keep_temp_bounded``, 2026-12-07).

Here the handler takes no lock: it writes one byte to a pipe (the self-pipe pattern). A daemon
thread reads the pipe and runs the stop (``event.set``, a worker's ``stop``, a log line), outside
any handler.

>>> import signal, threading
>>> stop = threading.Event()
>>> previous = call_on_signals(stop.set, (signal.SIGUSR1,))
>>> os.kill(os.getpid(), signal.SIGUSR1); stop.wait(5)
True
>>> _ = signal.signal(signal.SIGUSR1, previous[signal.SIGUSR1])
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Sequence
from typing import Any


def call_on_signals(action: Callable[[], object], signals: Sequence[int] = (signal.SIGTERM,)) -> dict[int, Any]:
    """Call ``action`` from a thread of its own when one of ``signals`` arrives (again on a later one);
    call from the main thread. Returns the handlers it replaced, by signal."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)

    def handler(signum: int, frame: object) -> None:
        try:
            os.write(write_fd, b"\0")
        except OSError:  # the pipe is full: a wake-up is already pending
            pass

    def relay() -> None:
        while os.read(read_fd, 64):
            action()

    threading.Thread(target=relay, name="linewatch-signals", daemon=True).start()
    return {sig: signal.signal(sig, handler) for sig in signals}
