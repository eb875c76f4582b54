"""Splitting a text file's bytes into numbered lines, and the checks shared by line formats.

>>> lines = split_lines(b"a\\nb\\r\\n\\nc")
>>> [(l.lineno, l.raw, l.terminated) for l in lines]
[(1, b'a', True), (2, b'b', True), (4, b'c', False)]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from linewatch.contract import DeadLetterReason
from pipeline.decoders.errors import DecodeError

SNIFF_BYTES = 4096
T = TypeVar("T")


@dataclass(frozen=True)
class RawLine:
    """One non-empty line: 1-based line number, bytes without the line ending, and
    whether a newline followed it (an unterminated last line may be half-written)."""

    lineno: int
    raw: bytes
    terminated: bool


def split_lines(data: bytes) -> list[RawLine]:
    """Non-blank lines of ``data`` (``\\n`` or ``\\r\\n`` endings), numbered from 1."""
    parts = data.split(b"\n")
    out: list[RawLine] = []
    last = len(parts) - 1
    for index, part in enumerate(parts):
        line = part[:-1] if part.endswith(b"\r") else part
        if not line.strip():
            continue
        out.append(RawLine(lineno=index + 1, raw=line, terminated=index < last))
    return out


def looks_binary(data: bytes) -> str | None:
    """Why ``data`` is not a text file (NUL bytes or invalid UTF-8 near the start), or None.

    Only the first line (at most :data:`SNIFF_BYTES`) is checked strictly, so that one bad
    line deep in a large file costs that line, not the file.

    >>> looks_binary(b"timestamp,tag\\n") is None
    True
    >>> looks_binary(b"\\x89PNG\\r\\n\\x1a\\n\\x00\\x00")
    'contains NUL bytes'
    """
    head = data[:SNIFF_BYTES]
    if b"\x00" in head:
        return "contains NUL bytes"
    first = head.split(b"\n", 1)[0]
    try:
        first.decode("utf-8")
    except UnicodeDecodeError as exc:
        if len(first) == len(head) and exc.start >= len(head) - 3:
            return None  # a multi-byte character cut by the sniff window, not garbage
        return f"first line is not UTF-8 text (invalid byte at offset {exc.start})"
    return None


def file_level_problem(data: bytes, ref: str, what: str) -> DecodeError | None:
    """The one error for a whole text file that is empty (``truncated``) or binary
    (``decode_error``), else None."""
    if not data.strip():
        return DecodeError(DeadLetterReason.TRUNCATED, f"{what} is empty (writer cut off before the first line?)", ref)
    why = looks_binary(data)
    if why is not None:
        return DecodeError(DeadLetterReason.DECODE_ERROR, f"{what} is not text: {why}", ref, data[:64])
    return None


def decode_lines(
    data: bytes, decode_one: Callable[[bytes, str], T], ref: str, skip_header: bool = False
) -> tuple[list[T], list[DecodeError]]:
    """Decode every non-blank line with ``decode_one(raw, raw_ref)`` (``raw_ref`` is
    ``f"{ref}:{lineno}"``). A failing unterminated last line is re-labelled ``truncated``
    (the writer was cut off mid-line). Returns (records, errors)."""
    lines = split_lines(data)
    records: list[T] = []
    errors: list[DecodeError] = []
    for line in lines[1:] if skip_header else lines:
        raw_ref = f"{ref}:{line.lineno}"
        try:
            records.append(decode_one(line.raw, raw_ref))
        except DecodeError as exc:
            if not line.terminated:
                exc = DecodeError(DeadLetterReason.TRUNCATED,
                                  f"last line has no newline and does not parse (half-written?): {exc.detail}",
                                  raw_ref, line.raw)
            errors.append(exc)
    return records, errors
