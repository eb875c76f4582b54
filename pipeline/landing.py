"""The landing-zone contract: manifests, claim-check paths, archiving (docs/ingestion.md).

A gateway writes each closed data file ("blob": a rolling PLC CSV, an alarm log, a thermal
frame, an audio clip) under a hidden name (``.name.tmp``) and renames it into place, then
publishes one JSON manifest line per blob in a new file under ``manifests/`` (again hidden,
then renamed). The Flink job only ever lists ``manifests/``; it reads each blob by the path in
its manifest line (claim-check), so every dead letter names ``path`` (and ``:line``).

>>> entry = parse_manifest_line(
...     '{"asset_id":"PMP-01","timestamp":"2026-11-29T14:00:00.000Z",'
...     '"path":"thermal/frames/PMP-01/PMP-01-1.tiff","bytes":38528,"seq":3,"epoch":7}')
>>> entry.kind, entry.event_time_ms, entry.seq
('thermal', 1795960800000, 3)
>>> parse_manifest_line('{"asset_id": "PMP-01"')
Traceback (most recent call last):
...
pipeline.landing.ManifestError: manifest line is not valid JSON (truncated or half-written?): ...
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath

from linewatch.contract import DeadLetterReason

#: Top-level landing directory -> kind of blob. The kind picks the decoder.
KIND_BY_DIR: dict[str, str] = {"plc": "plc", "alarms": "alarms", "thermal": "thermal", "audio": "audio"}
KINDS: tuple[str, ...] = ("plc", "alarms", "thermal", "audio")
#: Kind -> the contract modality whose stream it feeds (alarms feed the PLC windows).
MODALITY_OF_KIND: dict[str, str] = {"plc": "plc", "alarms": "plc", "thermal": "thermal", "audio": "audio"}
HIDDEN_PREFIXES: tuple[str, ...] = (".", "_")  # names Flink's FileSource skips


class ManifestError(ValueError):
    """A manifest line or the blob it references violates the landing-zone contract."""

    def __init__(self, reason: DeadLetterReason, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def parse_time_ms(text: str) -> int:
    """ISO-8601 UTC (``2026-11-29T14:00:00.100Z``) or epoch milliseconds -> epoch ms.

    >>> parse_time_ms("2026-11-29T14:00:00.100Z")
    1795960800100
    >>> parse_time_ms("1795960800100")
    1795960800100
    """
    text = text.strip()
    if text.isdigit():
        return int(text)
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(round(moment.timestamp() * 1000))


def format_time_ms(ms: int) -> str:
    """Epoch ms -> ``2026-11-29T14:00:00.100Z``.

    >>> format_time_ms(1795960800100)
    '2026-11-29T14:00:00.100Z'
    """
    moment = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


@dataclass(frozen=True)
class ManifestEntry:
    """One manifest line: a closed blob of one asset.

    ``seq`` counts an asset's blobs of one modality (0, 1, 2, ...; alarm logs and PLC files
    share one sequence because they feed the same windows) within a gateway ``epoch``
    (any integer that grows when the gateway restarts, e.g. its start time in ms); the job
    uses them to restore per-asset order when several manifests arrive in one scan.
    ``end_ms`` (optional) is the exclusive end of the event time a rolling file covers: it
    lets PLC windows close as soon as the file is read.
    """

    asset_id: str
    event_time_ms: int
    path: str
    kind: str
    nbytes: int | None = None
    sha256: str | None = None
    seq: int | None = None
    epoch: int = 0
    end_ms: int | None = None

    def to_json(self) -> str:
        data: dict[str, object] = {
            "asset_id": self.asset_id,
            "timestamp": format_time_ms(self.event_time_ms),
            "path": self.path,
        }
        if self.nbytes is not None:
            data["bytes"] = self.nbytes
        if self.sha256 is not None:
            data["sha256"] = self.sha256
        if self.seq is not None:
            data["seq"] = self.seq
            data["epoch"] = self.epoch
        if self.end_ms is not None:
            data["end"] = format_time_ms(self.end_ms)
        return json.dumps(data, separators=(",", ":"))


def kind_of_path(path: str) -> str | None:
    """Kind of a landing-relative blob path from its first directory (None if unknown)."""
    first = PurePosixPath(path).parts[0] if path else ""
    return KIND_BY_DIR.get(first)


def parse_manifest_line(line: str) -> ManifestEntry:
    """Validate one manifest line; raises :class:`ManifestError` with a dead-letter reason."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ManifestError(
            DeadLetterReason.TRUNCATED if line.lstrip().startswith("{") else DeadLetterReason.DECODE_ERROR,
            f"manifest line is not valid JSON (truncated or half-written?): {exc}; gateways must write "
            "manifests under a hidden name and rename them when complete",
        ) from exc
    if not isinstance(data, dict):
        raise ManifestError(DeadLetterReason.SCHEMA_ERROR, "manifest line must be a JSON object")
    missing = [k for k in ("asset_id", "timestamp", "path") if k not in data]
    if missing:
        raise ManifestError(DeadLetterReason.SCHEMA_ERROR, f"manifest line lacks {missing}")
    asset_id, path = data["asset_id"], data["path"]
    if not isinstance(asset_id, str) or not asset_id or not isinstance(path, str) or not path:
        raise ManifestError(DeadLetterReason.SCHEMA_ERROR, "asset_id and path must be non-empty strings")
    kind = data.get("kind") or kind_of_path(path)
    if kind not in KINDS:
        raise ManifestError(
            DeadLetterReason.SCHEMA_ERROR,
            f"cannot tell the kind of {path!r}: put it under one of {sorted(KIND_BY_DIR)}/ or add \"kind\"",
        )
    try:
        event_time_ms = parse_time_ms(str(data["timestamp"]))
        end_ms = parse_time_ms(str(data["end"])) if data.get("end") is not None else None
    except ValueError as exc:
        raise ManifestError(DeadLetterReason.SCHEMA_ERROR, f"bad timestamp in manifest line: {exc}") from exc
    seq, epoch, nbytes = data.get("seq"), data.get("epoch", 0), data.get("bytes")
    for name, value in (("seq", seq), ("bytes", nbytes)):
        if value is not None and (not isinstance(value, int) or value < 0):
            raise ManifestError(DeadLetterReason.SCHEMA_ERROR, f"{name} must be a non-negative integer")
    if not isinstance(epoch, int):
        raise ManifestError(DeadLetterReason.SCHEMA_ERROR, "epoch must be an integer")
    sha = data.get("sha256")
    return ManifestEntry(
        asset_id=asset_id, event_time_ms=event_time_ms, path=path, kind=kind, nbytes=nbytes,
        sha256=sha if isinstance(sha, str) else None, seq=seq, epoch=epoch, end_ms=end_ms,
    )


def manifest_asset(line: str) -> str:
    """Cheap key for ``key_by``: the asset id of a manifest line, ``""`` if unreadable."""
    try:
        data = json.loads(line)
        asset = data.get("asset_id") if isinstance(data, dict) else None
        return asset if isinstance(asset, str) else ""
    except (json.JSONDecodeError, ValueError):
        return ""


def archive_bucket(now_s: float) -> str:
    """Hour bucket of the archive (``2026112914``): retention removes whole buckets."""
    return time.strftime("%Y%m%d%H", time.gmtime(now_s))


@dataclass(frozen=True)
class LandingZone:
    """Paths of one landing zone and the safe operations the job performs on it."""

    root: Path
    manifest_dir: str = "manifests"
    archive_dir: str = "archive"

    def _root_resolved(self) -> Path:
        cached = self.__dict__.get("_root_cache")
        if cached is None:
            cached = self.root.resolve()
            object.__setattr__(self, "_root_cache", cached)
        return cached

    @property
    def manifests(self) -> Path:
        return self.root / self.manifest_dir

    @property
    def archive(self) -> Path:
        return self.root / self.archive_dir

    def resolve(self, rel: str) -> Path:
        """Absolute path of a blob named in a manifest, refusing anything outside the zone."""
        pure = PurePosixPath(rel)
        if pure.is_absolute() or ".." in pure.parts or rel.startswith("~"):
            raise ManifestError(
                DeadLetterReason.PATH_OUTSIDE_LANDING,
                f"manifest path {rel!r} is absolute or climbs out with '..': use a path relative to the landing zone",
            )
        if pure.parts and pure.parts[0] in (self.manifest_dir, self.archive_dir):
            raise ManifestError(
                DeadLetterReason.PATH_OUTSIDE_LANDING, f"manifest path {rel!r} points into {pure.parts[0]}/, not at a blob"
            )
        root = self.root.resolve()
        full = (root / pure).resolve()
        if full != root and root not in full.parents:
            raise ManifestError(
                DeadLetterReason.PATH_OUTSIDE_LANDING, f"manifest path {rel!r} resolves outside the landing zone (symlink?)"
            )
        return full

    def locate(self, rel: str, now_s: float | None = None, buckets: int = 3) -> Path:
        """The blob in the landing zone, else its archived copy (a replay after a restart).

        Raises :class:`ManifestError` (MISSING_FILE) if neither exists.
        """
        full = self.resolve(rel)
        if full.is_file():
            return full
        now_s = time.time() if now_s is None else now_s
        for back in range(buckets):
            candidate = self.archive / archive_bucket(now_s - 3600 * back) / rel
            if candidate.is_file():
                return candidate
        if self.archive.is_dir():  # an older replay: look in every bucket, newest first
            for bucket in sorted(self.archive.iterdir(), reverse=True):
                candidate = bucket / rel
                if candidate.is_file():
                    return candidate
        raise ManifestError(
            DeadLetterReason.MISSING_FILE,
            f"{rel} is named in a manifest but exists neither in the landing zone nor in {self.archive_dir}/",
        )

    def archive_file(self, path: Path, now_s: float | None = None) -> Path | None:
        """Move a processed blob (or manifest) under ``archive/<hour>/<same relative path>``.

        Returns the new path, or None if it was already moved (another attempt or a replay).
        """
        root = self._root_resolved()
        try:
            rel = path.relative_to(root) if path.is_absolute() else path.resolve().relative_to(root)
        except ValueError:
            try:
                rel = path.resolve().relative_to(root)
            except ValueError:
                return None
        if rel.parts and rel.parts[0] == self.archive_dir:
            return None
        target = self.archive / archive_bucket(time.time() if now_s is None else now_s) / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.replace(path, target)
        except FileNotFoundError:
            return None
        return target

    def prune_archive(self, retention_s: float, now_s: float | None = None) -> int:
        """Delete archive hour-buckets older than ``retention_s``; returns how many were removed."""
        if retention_s <= 0 or not self.archive.is_dir():
            return 0
        now_s = time.time() if now_s is None else now_s
        oldest_kept = archive_bucket(now_s - retention_s)
        removed = 0
        for bucket in self.archive.iterdir():
            if bucket.is_dir() and bucket.name.isdigit() and bucket.name < oldest_kept:
                shutil.rmtree(bucket, ignore_errors=True)
                removed += 1
        return removed

    def manifest_blobs(self, manifest: Path) -> list[Path] | None:
        """Blobs a manifest names (lines that name none are skipped), None if the file is gone."""
        try:
            text = manifest.read_text(errors="replace")
        except FileNotFoundError:
            return None
        blobs: list[Path] = []
        for line in text.splitlines():
            try:
                blobs.append(self.resolve(parse_manifest_line(line).path))
            except ManifestError:
                continue  # a bad line is dead-lettered by the job and blocks nothing
        return blobs

    def manifest_done(self, manifest: Path) -> bool:
        """True when no blob the manifest names is still in the landing zone (all handled)."""
        blobs = self.manifest_blobs(manifest)
        return blobs is not None and not any(b.exists() for b in blobs)


@dataclass
class Janitor:
    """Archives finished manifests (so the FileSource's scans stay cheap) and prunes the archive.

    A manifest is archived once every blob it names has left the landing zone *and* at least
    ``settle_s`` has passed since that was first seen *and* (with ``checkpoint_dir``) two
    checkpoints were *triggered* after that moment and have completed. Triggered, not merely
    completed: a checkpoint that completes after the blobs left may have taken its snapshot
    before they were handled (barrier first, ``_metadata`` later), and a restore from it would
    roll the source back behind a manifest that is no longer there to re-read (the cause of
    the intermittent loss after SIGKILL seen on 2026-11-29). Flink creates ``chk-N`` when it
    triggers checkpoint N, so "N greater than every ``chk-*`` present when the manifest was
    done" means "triggered after". The second checkpoint is a margin for the source reader,
    which may report its finished split one fetch after the split's last line.

    Each manifest is parsed once (they are immutable once visible); a pass then stats only
    the blobs not yet seen gone, so a backlog of thousands of manifests costs one ``stat`` per
    waiting manifest per pass, not a read and parse of every file.
    """

    zone: LandingZone
    settle_s: float
    retention_s: float
    checkpoint_dir: Path | None = None
    checkpoints_after: int = 2
    _remaining: dict[str, list[Path]] = field(default_factory=dict)  # blobs not yet seen gone
    _done_since: dict[str, tuple[float, int]] = field(default_factory=dict)  # (when, newest chk id then)
    waiting: int = 0  # manifests left in the directory after the last pass (done or not)

    def _is_done(self, name: str, path: Path) -> bool:
        remaining = self._remaining.get(name)
        if remaining is None:
            blobs = self.zone.manifest_blobs(path)
            if blobs is None:
                return False
            remaining = self._remaining[name] = blobs
        while remaining and not remaining[0].exists():  # blobs leave roughly in manifest order
            remaining.pop(0)
        return not remaining

    def run_once(self, now_s: float | None = None) -> int:
        """One pass; returns the number of manifests archived."""
        now_s = time.time() if now_s is None else now_s
        archived = 0
        progress = checkpoint_progress(self.checkpoint_dir) if self.checkpoint_dir is not None else None
        try:
            names = [n for n in os.listdir(self.zone.manifests) if not n.startswith(HIDDEN_PREFIXES)]
        except FileNotFoundError:
            return 0
        seen = set(names)
        for name in names:
            path = self.zone.manifests / name
            done = self._done_since.get(name)
            if done is None:
                if not self._is_done(name, path):
                    continue
                done = self._done_since[name] = (now_s, progress.started if progress is not None else 0)
            since, started_then = done
            if now_s - since >= self.settle_s and (
                progress is None or progress.completed >= started_then + self.checkpoints_after
            ):
                if self.zone.archive_file(path, now_s) is not None:  # None: another subtask's janitor was first
                    archived += 1
                self._done_since.pop(name, None)
                self._remaining.pop(name, None)
        for table in (self._done_since, self._remaining):
            for name in [n for n in table if n not in seen]:
                del table[name]
        self.waiting = len(names) - archived
        self.zone.prune_archive(self.retention_s, now_s)
        return archived


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

    def write_blob(
        self, rel: str, data: bytes, asset_id: str, event_time_ms: int, end_ms: int | None = None, checksum: bool = True
    ) -> ManifestEntry:
        """Write one blob atomically and return its manifest entry (not yet published)."""
        atomic_write(self.landing / rel, data)
        kind = kind_of_path(rel)
        if kind is None:
            raise ValueError(f"{rel!r} is not under one of {sorted(KIND_BY_DIR)}/")
        return ManifestEntry(
            asset_id=asset_id, event_time_ms=event_time_ms, path=rel, kind=kind, nbytes=len(data),
            sha256=hashlib.sha256(data).hexdigest() if checksum else None,
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
    moment = datetime.strptime(stamp[:15], "%Y%m%dT%H%M%S").replace(tzinfo=timezone.utc)
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
