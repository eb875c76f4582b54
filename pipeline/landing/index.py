"""What the manifests still in ``manifests/`` announce: :class:`ManifestIndex`.

The FileSource hands out the files of one scan in directory order (no particular order), so
after a restart or any backlog an asset's seq N+1 can arrive long before seq N. The index
tells the job whether a missing seq is still on its way (listed: wait) or lost (not listed:
skip the gap), where a sequence starts, which older gateway epochs still have lines coming,
and which file and line a bad line came from (Flink's text-line source does not say).

Listing and parsing happen in :meth:`ManifestIndex.refresh`, which the job runs on a
background thread (``pipeline.landing.housekeeping``), never on the per-record path; the job
only reads the in-memory result. Each file is parsed once (manifests are immutable once
visible). Correctness never depends on the directory's mtime: a refresh always lists. The
job trusts a "not listed" answer only from a listing that already shows a *later* line of the
same sequence (:meth:`ManifestIndex.present`): a listing that contains a manifest contains
every manifest renamed in before it, whatever the file system's timestamp granularity or
attribute caching (NFS).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field

from pipeline.landing.contract import HIDDEN_PREFIXES, ManifestEntry, ManifestError, ManifestLine, read_manifest
from pipeline.landing.zone import LandingZone

OrderKey = tuple[str, str, int, int]  # (asset, sequence, epoch, seq)


@dataclass(frozen=True, slots=True)
class LineLocation:
    """Where a line is: manifest file name, 1-based line, and whether it is the file's last line
    with no line break after it (what a half-written manifest looks like)."""

    manifest: str
    lineno: int
    last_unterminated: bool = False

    def ref(self, manifest_dir: str) -> str:
        return f"{manifest_dir}/{self.manifest}:{self.lineno}"


@dataclass
class _Snapshot:
    files: dict[str, list[ManifestLine]] = field(default_factory=dict)
    keys: dict[OrderKey, tuple[str, str]] = field(default_factory=dict)  # key -> (file, line text)
    where: dict[str, LineLocation] = field(default_factory=dict)  # line text -> location
    epochs: dict[tuple[str, str], dict[int, tuple[int, int]]] = field(default_factory=dict)  # (min, max) seq


class ManifestIndex:
    """Lines announced by the manifests now in the directory (thread-safe; see module docstring).

    ``synchronous=True`` (tests, tools): :meth:`request_refresh` refreshes at once. In the job a
    background thread refreshes and the request only wakes it (:attr:`wanted`).
    """

    def __init__(self, zone: LandingZone, synchronous: bool = True) -> None:
        self.zone = zone
        self.synchronous = synchronous
        self.wanted = threading.Event()
        self.listings = 0
        # manifests in the directory at the first listing, and which of their lines the operator has
        # been delivered since (this job's source reads them again; see Janitor.wait_for_source)
        self.initial: frozenset[str] | None = None
        self._seen: set[str] = set()
        self._lock = threading.Lock()
        self._snap = _Snapshot()

    # ---- the writer side (background thread, or the caller in synchronous mode)
    def refresh(self) -> list[str]:
        """List the directory, parse files not seen before, forget files that left; returns the
        visible manifest names (the janitor works on the same listing)."""
        self.wanted.clear()
        try:
            names = sorted(n for n in os.listdir(self.zone.manifests) if not n.startswith(HIDDEN_PREFIXES))
        except FileNotFoundError:
            names = []
        if self.initial is None:
            self.initial = frozenset(names)
        elif self.initial and self.initial.isdisjoint(names):  # all archived: nothing to remember any more
            self.initial, self._seen = frozenset(), set()
        old = self._snap
        if set(names) == set(old.files):
            self.listings += 1
            return names
        files = {n: old.files[n] for n in names if n in old.files}
        for name in names:
            if name not in files:
                lines = read_manifest(self.zone.manifests / name)
                if lines is not None:
                    files[name] = lines
        snap = _Snapshot(files=files)
        for name, lines in files.items():
            for line in lines:
                snap.where[line.text] = LineLocation(name, line.lineno, line.last_unterminated)
                parsed = line.parsed
                if isinstance(parsed, ManifestEntry) and parsed.order_key is not None:
                    key = parsed.order_key
                    snap.keys[key] = (name, line.text)
                    per_epoch = snap.epochs.setdefault(key[:2], {})
                    low, high = per_epoch.get(key[2], (key[3], key[3]))
                    per_epoch[key[2]] = (min(low, key[3]), max(high, key[3]))
        with self._lock:
            self._snap = snap
            self.listings += 1
        return [n for n in names if n in files]

    def request_refresh(self) -> None:
        """Ask for a fresh listing: at once (synchronous) or on the background thread."""
        if self.synchronous:
            self.refresh()
        else:
            self.wanted.set()

    # ---- the reader side (the job's per-record path: memory only)
    def saw(self, text: str) -> None:
        """The operator was delivered this line (recorded while manifests present at start remain)."""
        if self.initial:
            where = self.location(text)
            if where is not None and where.manifest in self.initial:
                self._seen.add(text)

    def read_since_start(self, name: str) -> bool:
        """Has every line of manifest ``name`` been delivered since the job started? Always true for a
        manifest that appeared later (the source reads a file before it is done, see Janitor)."""
        if not self.initial or name not in self.initial:
            return True
        lines = self.lines_of(name)
        return lines is not None and all(line.text in self._seen for line in lines if line.text.strip())

    def present(self, key: OrderKey) -> bool:
        """Is that line in a manifest still in the directory (as of the last listing)?"""
        return key in self._snap.keys

    def line(self, key: OrderKey) -> str | None:
        """The text of a listed line (to process a line the source never delivers)."""
        found = self._snap.keys.get(key)
        return None if found is None else found[1]

    def location(self, text: str) -> LineLocation | None:
        """Manifest file and line number of a line with this text, if listed."""
        return self._snap.where.get(text)

    def lowest(self, asset: str, sequence: str, epoch: int) -> int | None:
        """Lowest seq of that asset's sequence and epoch listed (None: none listed)."""
        found = self._snap.epochs.get((asset, sequence), {}).get(epoch)
        return None if found is None else found[0]

    def epochs(self, asset: str, sequence: str) -> dict[int, tuple[int, int]]:
        """``epoch -> (lowest, highest listed seq)`` of an asset's sequence."""
        return dict(self._snap.epochs.get((asset, sequence), {}))

    def lines_of(self, name: str) -> list[ManifestLine] | None:
        """The parsed lines of a listed manifest (the janitor reads them from here)."""
        return self._snap.files.get(name)

    def blobs_of(self, name: str) -> list[str] | None:
        """Landing-relative blob paths a listed manifest announces (lines that fail to parse block nothing)."""
        lines = self.lines_of(name)
        if lines is None:
            return None
        out = []
        for line in lines:
            if isinstance(line.parsed, ManifestEntry):
                out.append(line.parsed.path)
        return out

    def __len__(self) -> int:
        return len(self._snap.files)


__all__ = ["LineLocation", "ManifestError", "ManifestIndex", "OrderKey"]
