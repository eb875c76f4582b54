"""Landing-zone manifests, written the way an edge gateway writes them (docs/ingestion.md).

Every closed blob (rolling PLC file, alarm log, thermal frame, audio clip) is announced by one
JSON line in a manifest under ``<landing>/manifests/``, the only directory the ingestion job
lists.  A manifest file is written whole as ``.<name>.tmp`` in ``<landing>/.staging/`` (outside
``manifests/``: Flink's enumerator fails a scan when a listed file disappears) and then
``os.replace``-d into ``manifests/``.  Names are ``sim-<epoch>-<counter>.jsonl``: unique for a
gateway epoch (the run's start in ms) and a counter that only grows.

A line carries ``asset_id``, ``timestamp`` (event time of the blob; for rolling files the roll
start), ``path`` (relative to the landing zone), ``bytes``, ``sha256``, ``seq`` (0, 1, 2, ... per
asset and modality; alarm logs share the PLC sequence), ``epoch``, ``end`` (exclusive end of the
event time a rolling file covers; PLC and alarm files only) and ``kind``.

This module does not import ``pipeline`` (architecture rule); the ingestion side's
``pipeline.landing.read_manifest`` and ``pipeline.landing.parse_manifest_line`` (the one parser) read
these lines (tested in ``tests/simulator/test_manifests.py``).

>>> import tempfile, pathlib
>>> root = pathlib.Path(tempfile.mkdtemp())
>>> pub = ManifestPublisher(root, epoch=1795960800000)
>>> pub.announce("PMP-01", "thermal", "thermal/frames/PMP-01/a.tiff", b"xx", "2026-11-29T14:00:00.000Z").seq
0
>>> pub.announce("PMP-01", "alarms", "alarms/alarms-PMP-01-x.log", b"a", "2026-11-29T14:00:00.000Z",
...              end="2026-11-29T14:00:01.000Z").seq, pub.announce(
...     "PMP-01", "plc", "plc/plc-PMP-01-x.csv", b"p", "2026-11-29T14:00:00.000Z", end="2026-11-29T14:00:01.000Z").seq
(0, 1)
>>> path = pub.publish()
>>> path.relative_to(root).as_posix(), len(path.read_text().splitlines()), pub.publish()
('manifests/sim-1795960800000-000000001.jsonl', 3, None)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from .writer import atomic_write_bytes, sha256_hex

#: The directory the ingestion job lists, relative to the landing zone.
MANIFEST_DIR = "manifests"
#: Hidden directory where manifests are written before they are renamed into ``MANIFEST_DIR``.
STAGING_DIR = ".staging"
#: Blob kinds announced in manifests.
MANIFEST_KINDS: tuple[str, ...] = ("plc", "alarms", "thermal", "audio")
#: Kind -> the sequence its ``seq`` counts in (alarm logs feed the PLC windows).
SEQUENCE_OF_KIND: dict[str, str] = {"plc": "plc", "alarms": "plc", "thermal": "thermal", "audio": "audio"}

_EPOCH_ZERO = datetime(1970, 1, 1, tzinfo=timezone.utc)


def epoch_ms(moment: datetime) -> int:
    """Milliseconds since 1970 of an aware datetime (integer arithmetic, no float rounding).

    >>> epoch_ms(datetime(2026, 11, 29, 14, tzinfo=timezone.utc))
    1795960800000
    """
    delta = moment.astimezone(timezone.utc) - _EPOCH_ZERO
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


@dataclass(frozen=True)
class ManifestLine:
    """One announced blob (a line of a manifest file)."""

    asset_id: str
    kind: str
    path: str
    nbytes: int
    sha256: str
    timestamp: str
    seq: int
    epoch: int
    end: str | None = None

    def to_json(self) -> str:
        """The manifest line (compact JSON, fixed key order: deterministic bytes)."""
        data: dict[str, object] = {
            "asset_id": self.asset_id, "timestamp": self.timestamp, "path": self.path,
            "bytes": self.nbytes, "sha256": self.sha256, "seq": self.seq, "epoch": self.epoch,
        }
        if self.end is not None:
            data["end"] = self.end
        data["kind"] = self.kind
        return json.dumps(data, separators=(",", ":"))


@dataclass
class ManifestPublisher:
    """Numbers announced blobs per asset and modality and publishes them in manifest files.

    :meth:`announce` queues a line for a blob that is already closed (renamed into place);
    :meth:`publish` makes every queued line visible in one new manifest.  Lines are published
    in the order they were announced, so each asset's ``seq`` grows within and across files.
    """

    root: Path
    epoch: int
    name_prefix: str = "sim"
    _seq: dict[tuple[str, str], int] = field(default_factory=dict)
    _pending: list[ManifestLine] = field(default_factory=list)
    _count: int = 0

    def announce(self, asset_id: str, kind: str, rel_path: str, data: bytes, timestamp: str,
                 end: str | None = None) -> ManifestLine:
        """Queue the line of a closed blob whose content is ``data``; returns it (with its ``seq``)."""
        if kind not in SEQUENCE_OF_KIND:
            raise ValueError(f"kind {kind!r} is not one of {MANIFEST_KINDS}")
        key = (asset_id, SEQUENCE_OF_KIND[kind])
        seq = self._seq.get(key, 0)
        self._seq[key] = seq + 1
        line = ManifestLine(asset_id=asset_id, kind=kind, path=rel_path, nbytes=len(data), sha256=sha256_hex(data),
                            timestamp=timestamp, seq=seq, epoch=self.epoch, end=end)
        self._pending.append(line)
        return line

    @property
    def pending(self) -> int:
        """Lines announced but not yet published."""
        return len(self._pending)

    def publish(self) -> Path | None:
        """Write every queued line as one manifest (staged, then renamed in); None if none is queued."""
        if not self._pending:
            return None
        self._count += 1
        name = f"{self.name_prefix}-{self.epoch}-{self._count:09d}.jsonl"
        text = "".join(line.to_json() + "\n" for line in self._pending)
        path = atomic_write_bytes(self.root / MANIFEST_DIR / name, text.encode("utf-8"),
                                  staging=self.root / STAGING_DIR)
        self._pending = []
        return path
