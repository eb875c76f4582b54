"""Path policy of the landing zone: where a manifest may point, reading a blob, the archive.

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as d:
...     zone = LandingZone(Path(d))
...     zone.resolve("thermal/../../etc/passwd")
Traceback (most recent call last):
...
pipeline.landing.contract.ManifestError: path_outside_landing: manifest path 'thermal/../../etc/passwd' is absolute or climbs out with '..': use a path relative to the landing zone [thermal/../../etc/passwd]
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from linewatch.contract import DeadLetterReason
from pipeline.landing.contract import ManifestEntry, ManifestError


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
        """Absolute path of a blob named in a manifest, refusing anything outside the zone
        (absolute, ``..``, a symlink escaping it) or into ``manifests/`` and ``archive/``."""
        pure = PurePosixPath(rel)
        if pure.is_absolute() or ".." in pure.parts or rel.startswith("~") or "\\" in rel or "\x00" in rel:
            raise ManifestError(
                DeadLetterReason.PATH_OUTSIDE_LANDING,
                f"manifest path {rel!r} is absolute or climbs out with '..': use a path relative to the landing zone",
                rel)
        if pure.parts and pure.parts[0] in (self.manifest_dir, self.archive_dir):
            raise ManifestError(DeadLetterReason.PATH_OUTSIDE_LANDING,
                                f"manifest path {rel!r} points into {pure.parts[0]}/, not at a blob", rel)
        root = self._root_resolved()
        full = (root / pure).resolve()
        if full == root or root not in full.parents:
            raise ManifestError(DeadLetterReason.PATH_OUTSIDE_LANDING,
                                f"manifest path {rel!r} resolves outside the landing zone (symlink?)", rel)
        return full

    def read(self, entry: ManifestEntry, max_bytes: int = 256 << 20) -> bytes:
        """The checked bytes of the blob a line names (:func:`read_blob` at the resolved path)."""
        return read_blob(entry, self.resolve(entry.path), max_bytes)

    def pending(self, entry: ManifestEntry) -> bool:
        """Is the blob still in the landing zone, i.e. not yet handled (the job moves every
        blob it handled to the archive before its state records the line)?"""
        try:
            return self.resolve(entry.path).exists()
        except ManifestError:
            return False

    def locate(self, rel: str, now_s: float | None = None, buckets: int = 3) -> Path:
        """The blob in the landing zone, else its archived copy (a replay after a restart).

        Raises :class:`ManifestError` (``missing_file``) if neither exists.
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
            f"{rel} is named in a manifest but exists neither in the landing zone nor in {self.archive_dir}/ "
            "(write the blob before announcing it)", rel)

    def archive_target(self, path: Path, now_s: float | None = None) -> Path | None:
        """Where :meth:`archive_file` moves ``path``: ``archive/<hour>/<same relative path>``, its folder
        created; None for a path outside the zone or already in the archive."""
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
        return target

    def archive_file(self, path: Path, now_s: float | None = None) -> Path | None:
        """Move a processed blob (or manifest) under ``archive/<hour>/<same relative path>``.

        Returns the new path, or None if it was already moved (another attempt or a replay).
        """
        target = self.archive_target(path, now_s)
        if target is None:
            return None
        try:
            os.replace(path, target)
        except FileNotFoundError:
            return None
        return target

    def expired_buckets(self, retention_s: float, now_s: float | None = None) -> list[Path]:
        """Archive hour-buckets older than ``retention_s`` (to delete; 0 keeps everything)."""
        if retention_s <= 0 or not self.archive.is_dir():
            return []
        now_s = time.time() if now_s is None else now_s
        oldest_kept = archive_bucket(now_s - retention_s)
        return [b for b in self.archive.iterdir() if b.is_dir() and b.name.isdigit() and b.name < oldest_kept]

    def prune_archive(self, retention_s: float, now_s: float | None = None) -> int:
        """Delete archive hour-buckets older than ``retention_s``; returns how many were removed."""
        buckets = self.expired_buckets(retention_s, now_s)
        for bucket in buckets:
            shutil.rmtree(bucket, ignore_errors=True)
        return len(buckets)


def read_blob(entry: ManifestEntry, path: Path, max_bytes: int) -> bytes:
    """Read the blob a manifest line names (at ``path``, resolved by the zone) and check it.

    * ``bytes`` above ``max_bytes`` (the kind's cap in settings) → ``out_of_range`` before reading
      anything: a 2 GB "frame" is a dead letter, not an out-of-memory;
    * shorter than ``bytes`` → ``truncated`` (half-written); longer, or another SHA-256 →
      ``decode_error``; gone → ``missing_file``; a symlink swapped in → ``path_outside_landing``.

    Opens with ``O_NOFOLLOW`` and reads at most ``bytes + 1`` bytes.
    """
    ref = entry.path
    if entry.nbytes > max_bytes:
        raise ManifestError(DeadLetterReason.OUT_OF_RANGE,
                            f"{entry.kind} blob {ref!r} is {entry.nbytes} bytes, above the {max_bytes}-byte limit for "
                            f"{entry.kind} (validation.max_blob_bytes)", ref)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise ManifestError(DeadLetterReason.MISSING_FILE,
                            f"manifest names {ref!r} but it does not exist in the landing zone "
                            "(write the blob before its manifest line)", ref) from None
    except OSError as exc:  # ELOOP: a symlink appeared; EISDIR etc.
        raise ManifestError(DeadLetterReason.PATH_OUTSIDE_LANDING if exc.errno == getattr(os, "ELOOP", -1)
                            else DeadLetterReason.DECODE_ERROR, f"cannot open {ref!r}: {exc.strerror}", ref) from None
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(entry.nbytes + 1)
    if len(data) < entry.nbytes:
        raise ManifestError(DeadLetterReason.TRUNCATED,
                            f"{ref!r} has {len(data)} bytes, manifest says {entry.nbytes} (half-written?)", ref, data[:32])
    if len(data) > entry.nbytes:
        raise ManifestError(DeadLetterReason.DECODE_ERROR,
                            f"{ref!r} is larger than the {entry.nbytes} bytes the manifest says "
                            "(overwritten after the manifest was written?)", ref, data[:32])
    digest = hashlib.sha256(data).hexdigest()
    if digest != entry.sha256:
        raise ManifestError(DeadLetterReason.DECODE_ERROR,
                            f"{ref!r} SHA-256 is {digest[:12]}…, manifest says {entry.sha256[:12]}… "
                            "(corrupted or replaced)", ref, data[:32])
    return data
