"""The janitor: archives finished manifests so that the FileSource's scans stay cheap.

A manifest is archived once every blob it names has left the landing zone *and* at least
``settle_s`` has passed since that was first seen *and* (with ``checkpoint_dir``) two
checkpoints were *triggered* after that moment and have completed. Triggered, not merely
completed: a checkpoint that completes after the blobs left may have taken its snapshot before
they were handled (barrier first, ``_metadata`` later), and a restore from it would roll the
source back behind a manifest that is no longer there to re-read (the intermittent loss after
SIGKILL seen on 2026-11-29). Flink creates ``chk-N`` when it triggers checkpoint N, so "N greater
than every ``chk-*`` present when the manifest was done" means "triggered after". The second
checkpoint is a margin for the source reader, which may report its finished split one fetch
after the split's last line.

A manifest that was already in the directory when the job started (a backlog, or everything a
restore finds: the restored job's fresh source reads them all again) is not archived before the
job's source has read it: with ``wait_for_source`` the janitor leaves those until the operator
has been delivered every line of them (``ManifestIndex.saw``/``read_since_start``). It is on at
parallelism 1 only: a subtask sees only its own assets' lines. Archiving one earlier let the reader
find its split's file gone: the task fails, and every restore from a checkpoint holding that
split fails again (the likely cause of a stuck job in 1 of 20 rollover runs). With parallelism
above 1 that case is not covered (docs/ingestion.md).

The janitor reads manifests through the :class:`~pipeline.landing.index.ManifestIndex` (one
parser, each file parsed once); a line that does not parse blocks nothing (the job dead-letters
it), and a pass stats only the blobs not yet seen gone. It runs on the housekeeping thread
(``pipeline.landing.housekeeping``), never inside the Flink operator.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from pipeline.landing.checkpoints import checkpoint_progress
from pipeline.landing.contract import ManifestError
from pipeline.landing.index import ManifestIndex
from pipeline.landing.scan_gate import replace_pair
from pipeline.landing.zone import LandingZone


class ArchiveGate(Protocol):
    """What moves the manifests: :class:`~pipeline.landing.scan_gate.ScanGate` (in-process) or
    :class:`~pipeline.landing.gate_process.GateProcess` (the job: a process of its own)."""

    def move(self, pairs: Sequence[tuple[Path, Path]], listed: int) -> list[bool]: ...


@dataclass
class Janitor:
    """Archives finished manifests (see the module docstring)."""

    zone: LandingZone
    index: ManifestIndex
    settle_s: float = 0.0
    checkpoint_dir: Path | None = None
    checkpoints_after: int = 2
    wait_for_source: bool = False  # the job: leave manifests present at start until the source read them
    gate: ArchiveGate | None = None  # the job: move manifests only between the source's scans (scan_gate)
    _remaining: dict[str, list[Path]] = field(default_factory=dict)  # blobs not yet seen gone
    _done_since: dict[str, tuple[float, int]] = field(default_factory=dict)  # (when, newest chk id then)
    waiting: int = 0  # manifests left in the directory after the last pass (done or not)

    def _blobs(self, name: str) -> list[Path] | None:
        rels = self.index.blobs_of(name)
        if rels is None:
            return None
        out = []
        for rel in rels:
            try:
                out.append(self.zone.resolve(rel))
            except ManifestError:
                continue  # the job dead-letters a path outside the zone; it blocks nothing
        return out

    def _is_done(self, name: str) -> bool:
        remaining = self._remaining.get(name)
        if remaining is None:
            blobs = self._blobs(name)
            if blobs is None:
                return False
            remaining = self._remaining[name] = blobs
        while remaining and not remaining[0].exists():  # blobs leave roughly in manifest order
            remaining.pop(0)
        return not remaining

    def run_once(self, names: list[str] | None = None, now_s: float | None = None) -> int:
        """One pass over ``names`` (default: a fresh listing); returns the manifests archived."""
        now_s = time.time() if now_s is None else now_s
        names = self.index.refresh() if names is None else names
        progress = checkpoint_progress(self.checkpoint_dir) if self.checkpoint_dir is not None else None
        due = []
        for name in names:
            if self.wait_for_source and not self.index.read_since_start(name):
                continue  # this job's source has not read it yet (a restore re-reads the directory)
            done = self._done_since.get(name)
            if done is None:
                if not self._is_done(name):
                    continue
                done = self._done_since[name] = (now_s, progress.started if progress is not None else 0)
            since, started_then = done
            if now_s - since >= self.settle_s and (
                progress is None or progress.completed >= started_then + self.checkpoints_after
            ):
                due.append(name)
        pairs = []
        for name in due:
            source = self.zone.manifests / name
            target = self.zone.archive_target(source, now_s)
            if target is not None:
                pairs.append((source, target))
            self._done_since.pop(name, None)
            self._remaining.pop(name, None)
        moved = self.gate.move(pairs, listed=len(names)) if self.gate is not None \
            else [replace_pair(s, t) for s, t in pairs]
        archived = sum(moved)  # a source already gone: another subtask's janitor was first
        seen = set(names)
        for table in (self._done_since, self._remaining):
            for name in [n for n in table if n not in seen]:
                del table[name]
        self.waiting = len(names) - archived
        return archived
