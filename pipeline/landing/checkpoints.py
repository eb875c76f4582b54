"""Flink's checkpoint directory layout, as the janitor reads it (``<dir>/<job id>/chk-N``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class CheckpointProgress:
    """Highest checkpoint id Flink has triggered (``chk-N`` exists) and completed (has ``_metadata``)."""

    started: int
    completed: int


def checkpoint_progress(checkpoint_dir: Path) -> CheckpointProgress:
    """Scan ``<dir>/<job id>/chk-N`` of every job (ids continue across a restore).

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     (Path(d) / "job" / "chk-3").mkdir(parents=True)
    ...     (Path(d) / "job" / "chk-4").mkdir()
    ...     _ = (Path(d) / "job" / "chk-3" / "_metadata").write_bytes(b"x")
    ...     checkpoint_progress(Path(d))
    CheckpointProgress(started=4, completed=3)
    """
    started = completed = 0
    try:
        jobs = list(os.scandir(checkpoint_dir))
    except FileNotFoundError:
        return CheckpointProgress(0, 0)
    for job in jobs:
        if not job.is_dir():
            continue
        try:
            entries = list(os.scandir(job.path))
        except FileNotFoundError:
            continue
        for chk in entries:
            if not chk.name.startswith("chk-") or not chk.name[4:].isdigit():
                continue
            n = int(chk.name[4:])
            started = max(started, n)
            if n > completed and os.path.exists(os.path.join(chk.path, "_metadata")):
                completed = n
    return CheckpointProgress(started, completed)
