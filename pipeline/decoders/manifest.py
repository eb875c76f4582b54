"""Blob manifests (claim checks): ``{"asset_id","timestamp","path","bytes","sha256"}`` lines
that point at frames/clips inside the landing directory.

The path is relative to the landing directory and must stay inside it after resolving
``..`` and symlinks; absolute paths are refused. Reading checks size and SHA-256:

* path escapes the landing dir (``..``, absolute, symlink pointing out) → ``path_outside_landing``
* file absent → ``missing_file``
* file shorter than the manifest says → ``truncated`` (half-written)
* longer, or same size but another SHA-256 → ``decode_error`` (not the file the manifest names)

>>> import tempfile, hashlib, pathlib
>>> landing = pathlib.Path(tempfile.mkdtemp())
>>> (landing / "f.bin").write_bytes(b"abc")
3
>>> line = ('{"asset_id":"PMP-01","timestamp":"2026-11-29T14:00:00.000Z","path":"f.bin","bytes":3,'
...         '"sha256":"' + hashlib.sha256(b"abc").hexdigest() + '"}')
>>> blob = decode_manifest_line(line, landing, "m.jsonl:1")
>>> blob.rel_path, read_blob(blob)
('f.bin', b'abc')
>>> decode_manifest_line(line.replace('"f.bin"', '"../../etc/passwd"'), landing, "m.jsonl:1")
Traceback (most recent call last):
pipeline.decoders.errors.DecodeError: path_outside_landing: manifest path '../../etc/passwd' resolves outside the landing directory; paths must be relative to it and stay inside [m.jsonl:1]
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from linewatch.contract import DeadLetterReason
from pipeline.decoders.errors import DecodeError
from pipeline.decoders.text_lines import decode_lines, file_level_problem
from pipeline.decoders.timestamps import TimestampError, parse_timestamp_ms

MANIFEST_FIELDS: tuple[str, ...] = ("asset_id", "timestamp", "path", "bytes", "sha256")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True, slots=True)
class BlobRef:
    """A manifest entry whose path was checked to lie inside the landing directory.

    ``path`` is absolute and fully resolved; ``rel_path`` is the manifest's text (for
    dead letters); ``raw_ref`` is where the entry came from (``manifest:lineno``)."""

    asset_id: str
    timestamp_ms: int
    path: Path
    rel_path: str
    nbytes: int
    sha256: str
    raw_ref: str = ""


@dataclass
class ManifestFileResult:
    blobs: list[BlobRef] = field(default_factory=list)
    errors: list[DecodeError] = field(default_factory=list)


def resolve_inside(landing_dir: Path, rel_path: str, raw_ref: str) -> Path:
    """``landing_dir / rel_path`` resolved (symlinks followed); ``path_outside_landing`` if it
    is absolute or ends up outside ``landing_dir``."""
    outside = DecodeError(
        DeadLetterReason.PATH_OUTSIDE_LANDING,
        f"manifest path {rel_path!r} resolves outside the landing directory; paths must be relative to it and stay inside",
        raw_ref, rel_path)
    if "\x00" in rel_path or rel_path.strip() == "":
        raise DecodeError(DeadLetterReason.SCHEMA_ERROR, f"manifest path {rel_path!r} is empty or contains NUL",
                          raw_ref, rel_path)
    if os.path.isabs(rel_path) or PurePosixPath(rel_path).is_absolute() or re.match(r"^[A-Za-z]:[\\/]", rel_path):
        raise DecodeError(DeadLetterReason.PATH_OUTSIDE_LANDING,
                          f"manifest path {rel_path!r} is absolute; write it relative to the landing directory",
                          raw_ref, rel_path)
    root = landing_dir.resolve()
    candidate = (root / rel_path).resolve(strict=False)
    if candidate == root or not candidate.is_relative_to(root):
        raise outside
    return candidate


def decode_manifest_line(line: bytes | str, landing_dir: Path, raw_ref: str = "") -> BlobRef:
    """Decode and path-check one manifest line (no file content is read here)."""
    try:
        obj = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DecodeError(DeadLetterReason.DECODE_ERROR, f"manifest line is not JSON: {exc}", raw_ref, line) from None
    if not isinstance(obj, dict):
        raise DecodeError(DeadLetterReason.SCHEMA_ERROR, "manifest line must be a JSON object", raw_ref, line)
    missing = [name for name in MANIFEST_FIELDS if name not in obj]
    if missing:
        raise DecodeError(DeadLetterReason.SCHEMA_ERROR,
                          f"manifest line lacks field(s) {missing}; needs {list(MANIFEST_FIELDS)}", raw_ref, line)
    asset_id, stamp, rel, nbytes, sha = (obj[name] for name in MANIFEST_FIELDS)
    if not (isinstance(asset_id, str) and asset_id and isinstance(stamp, str) and isinstance(rel, str)):
        raise DecodeError(DeadLetterReason.SCHEMA_ERROR, "asset_id, timestamp and path must be non-empty strings",
                          raw_ref, line)
    if not isinstance(nbytes, int) or isinstance(nbytes, bool) or nbytes < 0:
        raise DecodeError(DeadLetterReason.SCHEMA_ERROR, f"'bytes' must be a non-negative integer, got {nbytes!r}",
                          raw_ref, line)
    if not isinstance(sha, str) or not _SHA256.match(sha.lower()):
        raise DecodeError(DeadLetterReason.SCHEMA_ERROR, f"'sha256' must be 64 hex digits, got {sha!r}", raw_ref, line)
    try:
        ts = parse_timestamp_ms(stamp)
    except TimestampError as exc:
        raise DecodeError(DeadLetterReason.DECODE_ERROR, str(exc), raw_ref, line) from None
    path = resolve_inside(landing_dir, rel, raw_ref)
    return BlobRef(asset_id, ts, path, rel, nbytes, sha.lower(), raw_ref)


def read_blob(blob: BlobRef) -> bytes:
    """Read the file a manifest entry names and check its size and SHA-256.

    Opens with ``O_NOFOLLOW`` so a symlink swapped in after :func:`resolve_inside` is refused.
    Reads at most ``nbytes + 1`` bytes.
    """
    ref = blob.raw_ref or blob.rel_path
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(blob.path, flags)
    except FileNotFoundError:
        raise DecodeError(DeadLetterReason.MISSING_FILE,
                          f"manifest names {blob.rel_path!r} but it does not exist in the landing directory "
                          "(write the blob before its manifest line)", ref, blob.rel_path) from None
    except OSError as exc:  # ELOOP: a symlink appeared; EISDIR etc.
        raise DecodeError(DeadLetterReason.PATH_OUTSIDE_LANDING if exc.errno == getattr(os, "ELOOP", -1)
                          else DeadLetterReason.DECODE_ERROR,
                          f"cannot open {blob.rel_path!r}: {exc.strerror}", ref, blob.rel_path) from None
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(blob.nbytes + 1)
    if len(data) < blob.nbytes:
        raise DecodeError(DeadLetterReason.TRUNCATED,
                          f"{blob.rel_path!r} has {len(data)} bytes, manifest says {blob.nbytes} (half-written?)",
                          ref, data[:32])
    if len(data) > blob.nbytes:
        raise DecodeError(DeadLetterReason.DECODE_ERROR,
                          f"{blob.rel_path!r} is larger than the {blob.nbytes} bytes the manifest says "
                          "(overwritten after the manifest was written?)", ref, data[:32])
    digest = hashlib.sha256(data).hexdigest()
    if digest != blob.sha256:
        raise DecodeError(DeadLetterReason.DECODE_ERROR,
                          f"{blob.rel_path!r} SHA-256 is {digest[:12]}…, manifest says {blob.sha256[:12]}… "
                          "(corrupted or replaced)", ref, data[:32])
    return data


def decode_manifest_file(data: bytes, ref: str, landing_dir: Path) -> ManifestFileResult:
    """Decode every line of a manifest; bad lines become errors (``raw_ref=f"{ref}:{lineno}"``)."""
    problem = file_level_problem(data, ref, "manifest")
    if problem is not None:
        return ManifestFileResult(errors=[problem])

    def one(raw: bytes, raw_ref: str) -> BlobRef:
        return decode_manifest_line(raw, landing_dir, raw_ref)

    blobs, errors = decode_lines(data, one, ref)
    return ManifestFileResult(blobs=blobs, errors=errors)
