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
    # the seqs listed per (asset, sequence, epoch), for the (min, max) above when a manifest leaves
    seqs: dict[tuple[str, str, int], frozenset[int]] = field(default_factory=dict)
    # line texts / order keys announced by more than one listed manifest: which one the maps point
    # at depends on the order the manifests were indexed, so a manifest that holds one of them leaves
    # through a full rebuild (rare: a gateway that re-announces a line)
    shared: set[str | OrderKey] = field(default_factory=set)


def _manifest_keys(lines: list[ManifestLine]) -> list[tuple[ManifestLine, OrderKey | None]]:
    out: list[tuple[ManifestLine, OrderKey | None]] = []
    for line in lines:
        parsed = line.parsed
        key = parsed.order_key if isinstance(parsed, ManifestEntry) else None
        out.append((line, key))
    return out


def _build(files: dict[str, list[ManifestLine]]) -> _Snapshot:
    """The snapshot of ``files`` from scratch; where two manifests announce the same line, the one
    later in ``files`` (the listing's name order) is where the index says it is."""
    snap = _Snapshot(files=files)
    seqs: dict[tuple[str, str, int], set[int]] = {}
    for name, lines in files.items():
        _add(snap, name, lines, seqs)
    snap.seqs = {k: frozenset(v) for k, v in seqs.items()}
    return snap


def _add(snap: _Snapshot, name: str, lines: list[ManifestLine],
         seqs: dict[tuple[str, str, int], set[int]] | None = None) -> bool:
    """Index one manifest into ``snap`` (whose maps the caller owns). ``seqs``: mutable per-epoch
    sets while building from scratch; None: copy-on-write into ``snap.seqs``. True when one of
    its lines was already indexed."""
    repeated = False
    for line, key in _manifest_keys(lines):
        if line.text in snap.where:
            snap.shared.add(line.text)
            repeated = True
        snap.where[line.text] = LineLocation(name, line.lineno, line.last_unterminated)
        if key is None:
            continue
        if key in snap.keys:
            snap.shared.add(key)
            repeated = True
        snap.keys[key] = (name, line.text)
        per_epoch = snap.epochs.setdefault(key[:2], {})
        low, high = per_epoch.get(key[2], (key[3], key[3]))
        per_epoch[key[2]] = (min(low, key[3]), max(high, key[3]))
        if seqs is not None:
            seqs.setdefault(key[:3], set()).add(key[3])
        else:
            snap.seqs[key[:3]] = snap.seqs.get(key[:3], frozenset()) | {key[3]}
    return repeated


def _remove(snap: _Snapshot, lines: list[ManifestLine]) -> None:
    """Drop one manifest (none of whose lines is in ``snap.shared``) from ``snap``."""
    for line, key in _manifest_keys(lines):
        snap.where.pop(line.text, None)
        if key is None:
            continue
        snap.keys.pop(key, None)
        left = snap.seqs.get(key[:3], frozenset()) - {key[3]}
        per_epoch = snap.epochs.get(key[:2])
        if per_epoch is None:
            continue
        if left:
            snap.seqs[key[:3]] = left
            per_epoch[key[2]] = (min(left), max(left))
        else:
            snap.seqs.pop(key[:3], None)
            per_epoch.pop(key[2], None)
            if not per_epoch:
                del snap.epochs[key[:2]]


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
        snap = self._next_snapshot(old, names)
        files = snap.files
        with self._lock:
            self._snap = snap
            self.listings += 1
        return [n for n in names if n in files]

    def _next_snapshot(self, old: _Snapshot, names: list[str]) -> _Snapshot:
        """The snapshot for this listing, built from ``old`` by indexing only the manifests that
        arrived and dropping those that left (a job behind on its backlog keeps every unfinished
        manifest listed: rebuilding all of them on every refresh cost 24 ms at 1,000 manifests,
        on the handlers' interpreter lock). Copy-on-write: readers keep the old snapshot. Where a
        manifest that arrives or leaves shares a line with another, it rebuilds from scratch, so
        the result is always what :func:`_build` gives for the listing in name order (tested)."""
        listed = set(names)
        left = [n for n in old.files if n not in listed]
        arrived: dict[str, list[ManifestLine]] = {}
        for name in names:
            if name not in old.files:
                lines = read_manifest(self.zone.manifests / name)
                if lines is not None:
                    arrived[name] = lines
        files = {n: old.files[n] if n in old.files else arrived[n] for n in names if n in old.files or n in arrived}
        if any(line.text in old.shared or key in old.shared
               for n in left for line, key in _manifest_keys(old.files[n])):
            return _build(files)
        snap = _Snapshot(files=files, keys=dict(old.keys), where=dict(old.where),
                         epochs={k: dict(v) for k, v in old.epochs.items()}, seqs=dict(old.seqs),
                         shared=set(old.shared))
        for name in left:
            _remove(snap, old.files[name])
        for name, lines in arrived.items():
            if _add(snap, name, lines):  # an arrival repeats a listed line: name order decides
                return _build(files)
        return snap

    def request_refresh(self) -> None:
        """Ask for a fresh listing: at once (synchronous) or on the background thread."""
        if self.synchronous:
            self.refresh()
        else:
            self.wanted.set()

    # ---- the reader side (the job's per-record path: memory only)
    def saw(self, text: str) -> None:
        """The operator was delivered this line (recorded while manifests present at start remain).

        A line delivered before the first listing is recorded as it is: which manifest it came from
        is known only once listed, and dropping it would leave its manifest "not read since the
        start" for good (the janitor would never archive it)."""
        if self.initial is None:
            self._seen.add(text)
        elif self.initial:
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
