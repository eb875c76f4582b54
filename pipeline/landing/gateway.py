"""Gateway side of the landing-zone contract: write blobs atomically, publish manifests.

The reference for gateways (tests and benchmarks use it; ``linewatch.simulator`` writes the
same lines itself, see ``linewatch/simulator/manifests.py``).
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from pipeline.landing.contract import HIDDEN_PREFIXES, KIND_BY_DIR, MODALITY_OF_KIND, ManifestEntry, kind_of_path

STAGING_DIR = ".staging"
"""Hidden directory at the landing root where manifests are written before they are renamed in."""


def atomic_write(path: Path, data: bytes, staging: Path | None = None) -> None:
    """Write ``data`` as ``.<name>.tmp`` (beside ``path``, or in ``staging``), then rename it into place.

    Manifests must be staged *outside* the watched directory: Flink's enumerator lists the
    directory and then stats every entry, and a temporary file renamed away in between makes
    the whole scan fail (measured: scans fail and discovery stalls under a steady stream of them).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    if staging is not None:
        staging.mkdir(parents=True, exist_ok=True)
    tmp = (staging or path.parent) / f".{path.name}.tmp"
    with open(tmp, "wb") as handle:
        handle.write(data)
    os.replace(tmp, path)


@dataclass
class ManifestWriter:
    """Gateway side of the contract: write blobs atomically and publish manifest lines.

    Used by tests and benchmarks, and the reference for gateways (``linewatch.simulator``
    writes the same lines itself, see ``linewatch/simulator/manifests.py``).

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     w = ManifestWriter(Path(d), epoch=1)
    ...     e = w.write_blob("thermal/frames/A/A-1.tiff", b"xx", "A", 1_000)
    ...     m = w.publish([e])
    ...     (e.seq, m.parent.name, m.read_text().count("\\n"))
    (0, 'manifests', 1)
    """

    landing: Path
    epoch: int = field(default_factory=lambda: time.time_ns() // 1_000_000)
    manifest_dir: str = "manifests"
    name_prefix: str = "gw"
    _seq: dict[tuple[str, str], int] = field(default_factory=dict)
    _count: int = 0

    def next_seq(self, asset_id: str, kind: str) -> int:
        """Next ``seq`` of an asset's sequence: one per modality (alarm logs share PLC's)."""
        key = (asset_id, MODALITY_OF_KIND.get(kind, kind))
        seq = self._seq.get(key, 0)
        self._seq[key] = seq + 1
        return seq

    def write_blob(self, rel: str, data: bytes, asset_id: str, event_time_ms: int,
                   end_ms: int | None = None) -> ManifestEntry:
        """Write one blob atomically and return its manifest entry (not yet published)."""
        atomic_write(self.landing / rel, data)
        kind = kind_of_path(rel)
        if kind is None:
            raise ValueError(f"{rel!r} is not under one of {sorted(KIND_BY_DIR)}/")
        return ManifestEntry(
            asset_id=asset_id, event_time_ms=event_time_ms, path=rel, kind=kind, nbytes=len(data),
            sha256=hashlib.sha256(data).hexdigest(),
            seq=self.next_seq(asset_id, kind), epoch=self.epoch, end_ms=end_ms,
        )

    def publish(self, entries: Iterable[ManifestEntry], raw_lines: Iterable[str] = ()) -> Path:
        """Write one manifest file with ``entries`` (plus ``raw_lines`` verbatim), atomically."""
        lines = [e.to_json() for e in entries] + list(raw_lines)
        self._count += 1
        name = f"{self.name_prefix}-{self.epoch}-{self._count:09d}.jsonl"
        path = self.landing / self.manifest_dir / name
        atomic_write(path, ("\n".join(lines) + "\n").encode(), staging=self.landing / STAGING_DIR)
        return path


def iter_manifest_lines(paths: Iterable[Path]) -> Iterator[str]:
    """All lines of the given manifests (tests: what the job should have seen)."""
    for path in paths:
        yield from path.read_text().splitlines()


def parse_file_stamp(stamp: str) -> int:
    """Simulator file-name stamp ``YYYYmmddTHHMMSSfff`` -> epoch ms.

    >>> parse_file_stamp("20261129T140000100")
    1795960800100
    """
    moment = datetime.strptime(stamp[:15], "%Y%m%dT%H%M%S").replace(tzinfo=UTC)
    return int(moment.timestamp()) * 1000 + int(stamp[15:18] or 0)


def blob_identity(rel: str) -> tuple[str, int] | None:
    """``(asset_id, event time ms)`` from a gateway/simulator blob name, None if it has none.

    >>> blob_identity("plc/plc-PMP-01-20261129T140000100.csv")
    ('PMP-01', 1795960800100)
    >>> blob_identity("thermal/frames/PMP-01/PMP-01-20261129T140000500.tiff")
    ('PMP-01', 1795960800500)
    """
    stem = PurePosixPath(rel).stem
    asset_and_stamp = stem.split("-", 1)[1] if stem.startswith(("plc-", "alarms-")) else stem
    asset, _, stamp = asset_and_stamp.rpartition("-")
    if not asset or len(stamp) < 18 or stamp[8] != "T":
        return None
    try:
        return asset, parse_file_stamp(stamp)
    except ValueError:
        return None


def existing_entry(writer: ManifestWriter, path: Path) -> ManifestEntry | None:
    """The manifest entry (next ``seq`` of ``writer``) of a closed blob, None if its name has no identity."""
    rel = path.resolve().relative_to(writer.landing.resolve()).as_posix()
    ident = blob_identity(rel)
    kind = kind_of_path(rel)
    if ident is None or kind is None:
        return None
    data = path.read_bytes()
    return ManifestEntry(
        asset_id=ident[0], event_time_ms=ident[1], path=rel, kind=kind, nbytes=len(data),
        sha256=hashlib.sha256(data).hexdigest(), seq=writer.next_seq(ident[0], kind), epoch=writer.epoch,
    )


def publish_existing(landing: Path, writer: ManifestWriter | None = None, lines_per_manifest: int = 200) -> list[ManifestEntry]:
    """Publish manifests for every blob already in ``landing`` (a simulator batch run with
    ``write_manifests=False``): for tests that publish in their own order or directory.

    Blobs are listed per asset in event-time order, an asset's alarm log before its PLC file of
    the same stamp, and get consecutive ``seq`` numbers; returns the entries in published order.
    """
    writer = writer or ManifestWriter(landing)
    found: list[tuple[int, int, str, Path]] = []
    order = {"alarms": 0, "plc": 1, "thermal": 2, "audio": 3}
    for sub in ("plc", "alarms", "thermal/frames", "audio/clips"):
        base = landing / sub
        if not base.is_dir():
            continue
        for path in base.rglob("*"):
            if path.is_file() and not path.name.startswith(HIDDEN_PREFIXES):
                rel = path.relative_to(landing).as_posix()
                ident = blob_identity(rel)
                kind = kind_of_path(rel)
                if ident is not None and kind is not None:
                    found.append((ident[1], order[kind], rel, path))
    found.sort()
    entries = [e for e in (existing_entry(writer, p) for *_, p in found) if e is not None]
    for start in range(0, len(entries), lines_per_manifest):
        writer.publish(entries[start:start + lines_per_manifest])
    return entries
