"""The manifest line: the one parser of the landing-zone contract (docs/ingestion.md).

Every reader of a manifest (the job, the janitor, the manifest index, tests and benchmarks)
goes through :func:`parse_manifest_line`, so a line the job rejects is a line the janitor
does not wait for, and the other way round. A line parses into a typed :class:`ManifestEntry`
(a blob announcement), a :class:`Probe` (the runner's readiness probe), ``None`` (a blank or
whitespace-only line: ignored) or raises :class:`ManifestError` with a dead-letter reason.

>>> line = ('{"asset_id":"PMP-01","timestamp":"2026-11-29T14:00:00.000Z",'
...         '"path":"thermal/frames/PMP-01/PMP-01-1.tiff","bytes":38528,"sha256":"' + "a" * 64 + '","seq":3,"epoch":7}')
>>> entry = parse_manifest_line(line)
>>> entry.kind, entry.event_time_ms, entry.seq, entry.sequence
('thermal', 1795960800000, 3, 'thermal')
>>> parse_manifest_line("  \\r") is None
True
>>> parse_manifest_line('{"asset_id":"PMP-01","timestamp":1795960800000}')
Traceback (most recent call last):
...
pipeline.landing.contract.ManifestError: schema_error: manifest line lacks ['path', 'bytes', 'sha256']; ...
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from linewatch.contract import DeadLetterReason
from pipeline.decoders.errors import DecodeError
from pipeline.decoders.timestamps import TimestampError, format_timestamp_ms, parse_timestamp_ms

#: Top-level landing directory -> kind of blob. The kind picks the handler.
KIND_BY_DIR: dict[str, str] = {"plc": "plc", "alarms": "alarms", "thermal": "thermal", "audio": "audio"}
KINDS: tuple[str, ...] = ("plc", "alarms", "thermal", "audio")
#: Kind -> the contract modality whose stream it feeds (alarms feed the PLC windows) and
#: whose ``seq`` sequence it belongs to.
MODALITY_OF_KIND: dict[str, str] = {"plc": "plc", "alarms": "plc", "thermal": "thermal", "audio": "audio"}
HIDDEN_PREFIXES: tuple[str, ...] = (".", "_")  # names Flink's FileSource skips
REQUIRED_FIELDS: tuple[str, ...] = ("asset_id", "timestamp", "path", "bytes", "sha256")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class ManifestError(DecodeError):
    """A manifest line (or the blob it names) violates the landing-zone contract."""


def kind_of_path(path: str) -> str | None:
    """Kind of a landing-relative blob path from its first directory (None if unknown).

    >>> kind_of_path("audio/clips/A/a.wav"), kind_of_path("other/x")
    ('audio', None)
    """
    first = PurePosixPath(path).parts[0] if path else ""
    return KIND_BY_DIR.get(first)


def format_time_ms(ms: int) -> str:
    """Epoch ms -> ``2026-11-29T14:00:00.100Z`` (the contract's timestamp form)."""
    return format_timestamp_ms(ms)


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    """One manifest line: a closed blob of one asset, announced by a gateway.

    ``seq`` counts an asset's blobs of one sequence (:attr:`sequence`: the modality; alarm logs
    share PLC's) within a gateway ``epoch`` (an integer the gateway changes when it restarts);
    the job uses them to restore per-asset order. ``end_ms`` (optional) is the exclusive end of
    the event time a rolling file covers. ``raw`` is the line as read (empty when built in code).
    """

    asset_id: str
    event_time_ms: int
    path: str
    kind: str
    nbytes: int
    sha256: str
    seq: int | None = None
    epoch: int = 0
    end_ms: int | None = None
    raw: str = field(default="", compare=False, repr=False)

    @property
    def sequence(self) -> str:
        """The ``seq`` sequence this line belongs to (its modality)."""
        return MODALITY_OF_KIND[self.kind]

    @property
    def order_key(self) -> tuple[str, str, int, int] | None:
        """``(asset, sequence, epoch, seq)``, None for a line without ``seq``."""
        return None if self.seq is None else (self.asset_id, self.sequence, self.epoch, self.seq)

    @property
    def text(self) -> str:
        """The line's text: as read, or serialized for one built in code."""
        return self.raw or self.to_json()

    def to_json(self) -> str:
        data: dict[str, object] = {
            "asset_id": self.asset_id, "timestamp": format_time_ms(self.event_time_ms), "path": self.path,
            "bytes": self.nbytes, "sha256": self.sha256,
        }
        if self.seq is not None:
            data["seq"] = self.seq
            data["epoch"] = self.epoch
        if self.end_ms is not None:
            data["end"] = format_time_ms(self.end_ms)
        return json.dumps(data, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class Probe:
    """``{"probe": "<token>"}``: the runner's readiness probe (``IngestJob.wait_ready``)."""

    token: str


ParsedLine = ManifestEntry | Probe | None


def line_ref(text: str) -> str:
    """Dead-letter reference of a line whose manifest file is unknown: a hash of the line.

    >>> line_ref("garbage")
    'manifest-line:sha1:78c67c126575c20c'
    """
    return "manifest-line:sha1:" + hashlib.sha1(text.encode("utf-8", "replace")).hexdigest()[:16]


def _time(data: dict[str, object], name: str, text: str) -> int:
    value = data[name]
    if not isinstance(value, str):
        raise ManifestError(DeadLetterReason.SCHEMA_ERROR,
                            f"'{name}' must be an ISO-8601 string with a zone (e.g. 2026-11-29T14:00:00.000Z), "
                            f"got {value!r}", line_ref(text), text)
    try:
        return parse_timestamp_ms(value)
    except TimestampError as exc:
        raise ManifestError(DeadLetterReason.SCHEMA_ERROR, f"bad '{name}' in manifest line: {exc}", line_ref(text),
                            text) from None


def _count(data: dict[str, object], name: str, text: str) -> int | None:
    value = data.get(name)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ManifestError(DeadLetterReason.SCHEMA_ERROR, f"'{name}' must be a non-negative integer, got {value!r}",
                            line_ref(text), text)
    return value


def parse_manifest_line(text: str) -> ParsedLine:
    """The one parser of a manifest line; raises :class:`ManifestError` with a dead-letter reason.

    Rejected: not JSON (``decode_error``), not an object, a missing or mistyped field, a
    timestamp without a zone or as epoch milliseconds, ``bytes``/``seq`` not a non-negative
    integer, ``sha256`` not 64 hex digits, an unknown kind (``schema_error``), an absolute path
    or one with ``..`` (``path_outside_landing``). Where a relative path resolves (symlinks,
    ``manifests/``) is the landing zone's check (:meth:`pipeline.landing.LandingZone.resolve`).
    """
    if not text.strip():
        return None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ManifestError(DeadLetterReason.DECODE_ERROR, f"manifest line is not valid JSON: {exc}", line_ref(text),
                            text) from None
    if not isinstance(data, dict):
        raise ManifestError(DeadLetterReason.SCHEMA_ERROR, "manifest line must be a JSON object", line_ref(text), text)
    if set(data) == {"probe"} and isinstance(data["probe"], str):
        return Probe(data["probe"])
    missing = [k for k in REQUIRED_FIELDS if k not in data]
    if missing:
        raise ManifestError(DeadLetterReason.SCHEMA_ERROR,
                            f"manifest line lacks {missing}; every line needs {list(REQUIRED_FIELDS)}",
                            line_ref(text), text)
    asset_id, path, sha = data["asset_id"], data["path"], data["sha256"]
    ref = path if isinstance(path, str) and path else line_ref(text)
    if not isinstance(asset_id, str) or not asset_id or not isinstance(path, str) or not path or "\x00" in path:
        raise ManifestError(DeadLetterReason.SCHEMA_ERROR, "asset_id and path must be non-empty strings (no NUL)",
                            ref, text)
    pure = PurePosixPath(path)
    if pure.is_absolute() or ".." in pure.parts or path.startswith("~") or "\\" in path:
        raise ManifestError(DeadLetterReason.PATH_OUTSIDE_LANDING,
                            f"manifest path {path!r} is absolute or climbs out with '..': use a path relative to the "
                            "landing zone", ref, text)
    kind = data.get("kind") or kind_of_path(path)
    if kind not in KINDS:
        raise ManifestError(DeadLetterReason.SCHEMA_ERROR,
                            f"cannot tell the kind of {path!r}: put it under one of {sorted(KIND_BY_DIR)}/ or add "
                            f"\"kind\" (one of {list(KINDS)})", ref, text)
    assert isinstance(kind, str)
    if not isinstance(sha, str) or not _SHA256.match(sha.lower()):
        raise ManifestError(DeadLetterReason.SCHEMA_ERROR, f"'sha256' must be 64 hex digits, got {sha!r}", ref, text)
    nbytes = _count(data, "bytes", text)
    seq = _count(data, "seq", text)
    epoch = data.get("epoch", 0)
    if not isinstance(epoch, int) or isinstance(epoch, bool):
        raise ManifestError(DeadLetterReason.SCHEMA_ERROR, f"'epoch' must be an integer, got {epoch!r}", ref, text)
    event_time_ms = _time(data, "timestamp", text)
    end_ms = _time(data, "end", text) if data.get("end") is not None else None
    assert nbytes is not None
    return ManifestEntry(asset_id=asset_id, event_time_ms=event_time_ms, path=path, kind=kind, nbytes=nbytes,
                         sha256=sha.lower(), seq=seq, epoch=epoch, end_ms=end_ms, raw=text)


def manifest_asset(text: str) -> str:
    """Key of a line for ``key_by`` (the routing parse before Flink's shuffle): its ``asset_id``,
    ``""`` if it names none (the job dead-letters it under that key)."""
    try:
        data = json.loads(text)
    except ValueError:
        return ""
    asset = data.get("asset_id") if isinstance(data, dict) else None
    return asset if isinstance(asset, str) else ""


@dataclass(frozen=True, slots=True)
class ManifestLine:
    """One line of a manifest file as read from disk: 1-based number, text, what it parsed into."""

    lineno: int
    text: str
    parsed: ParsedLine | ManifestError
    last_unterminated: bool = False  # the file's last line, with no line break after it


def split_manifest_text(text: str) -> Iterator[tuple[int, str, bool]]:
    """``(lineno, line, unterminated_last)`` the way Flink's text-line format splits a file
    (``\\n``, ``\\r\\n`` or ``\\r``); a final line break yields no empty line.

    >>> list(split_manifest_text("a\\r\\nb\\n\\nc"))
    [(1, 'a', False), (2, 'b', False), (3, '', False), (4, 'c', True)]
    """
    parts = _LINE_BREAK.split(text)
    last = len(parts) - 1
    for i, part in enumerate(parts):
        if i == last and part == "":
            return
        yield i + 1, part, i == last


def read_manifest(path: Path) -> list[ManifestLine] | None:
    """Every line of a manifest file parsed (None if the file is gone)."""
    try:
        text = path.read_bytes().decode("utf-8", errors="replace")
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
    out: list[ManifestLine] = []
    for lineno, line, unterminated in split_manifest_text(text):
        try:
            parsed: ParsedLine | ManifestError = parse_manifest_line(line)
        except ManifestError as exc:
            parsed = exc
        out.append(ManifestLine(lineno, line, parsed, unterminated))
    return out
