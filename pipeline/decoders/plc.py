"""PLC historian exports: long-format CSV (``timestamp,tag,value,quality,unit``) and JSON lines.

A file decodes into the good samples plus one :class:`DecodeError` per bad line; the file
as a whole fails (one error, no samples) only when it is not text at all (``decode_error``),
is empty (``truncated``) or its CSV header lacks a column (``schema_error``). An
unterminated last line that does not parse is reported as ``truncated``: the writer was
cut off mid-line.

>>> data = b"timestamp,tag,value,quality,unit\\n2026-11-29T14:00:00.100Z,PMP-01.motor_current_a,12.41,Good,A\\n"
>>> result = decode_plc_file(data, "plc/plc-PMP-01.csv", "csv")
>>> result.samples[0]
TagSample(asset_id='PMP-01', tag='motor_current_a', timestamp_ms=1795960800100, value=12.41, quality='Good', unit='A')
>>> result.errors
[]
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from typing import Literal

from linewatch.contract import DeadLetterReason
from pipeline.decoders.errors import DecodeError
from pipeline.decoders.text_lines import RawLine, decode_lines, file_level_problem, split_lines
from pipeline.decoders.timestamps import TimestampError, parse_timestamp_ms

PLC_COLUMNS: tuple[str, ...] = ("timestamp", "tag", "value", "quality", "unit")
QUALITIES: frozenset[str] = frozenset({"Good", "Uncertain", "Bad"})

PlcFormat = Literal["csv", "jsonl"]


@dataclass(frozen=True, slots=True)
class TagSample:
    """One historian value. ``tag`` is the part after the asset prefix
    (``PMP-01.motor_current_a`` → asset ``PMP-01``, tag ``motor_current_a``).
    ``value`` is NaN when the historian wrote no value (empty cell / JSON null)."""

    asset_id: str
    tag: str
    timestamp_ms: int
    value: float
    quality: str
    unit: str
    ref: str = field(default="", repr=False, compare=False)  # "<file>:<line>" it was read from

    @property
    def full_tag(self) -> str:
        return f"{self.asset_id}.{self.tag}"


@dataclass
class PlcFileResult:
    """What one file decoded into: the good samples and one error per rejected line/file."""

    samples: list[TagSample] = field(default_factory=list)
    errors: list[DecodeError] = field(default_factory=list)


class _LineProblem(Exception):
    def __init__(self, reason: DeadLetterReason, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def split_tag(full_tag: str) -> tuple[str, str]:
    """``"PMP-01.motor_current_a"`` → ``("PMP-01", "motor_current_a")``; the asset id is the
    part before the first dot."""
    asset, dot, tag = full_tag.partition(".")
    if not dot or not asset or not tag:
        raise _LineProblem(
            DeadLetterReason.SCHEMA_ERROR, f"tag {full_tag!r} is not '<asset>.<tag>' (e.g. 'PMP-01.motor_current_a')"
        )
    return asset, tag


def _sample(timestamp: object, tag: object, value: object, quality: object, unit: object,
            ref: str = "") -> TagSample:
    for name, item in (("timestamp", timestamp), ("tag", tag), ("quality", quality), ("unit", unit)):
        if not isinstance(item, str):
            raise _LineProblem(DeadLetterReason.SCHEMA_ERROR, f"field {name!r} must be a string, got {item!r}")
    assert isinstance(timestamp, str) and isinstance(tag, str) and isinstance(quality, str) and isinstance(unit, str)
    try:
        ts = parse_timestamp_ms(timestamp.strip())
    except TimestampError as exc:
        raise _LineProblem(DeadLetterReason.DECODE_ERROR, str(exc)) from None
    asset, short_tag = split_tag(tag.strip())
    if quality.strip() not in QUALITIES:
        raise _LineProblem(
            DeadLetterReason.SCHEMA_ERROR, f"quality {quality!r} is not one of {sorted(QUALITIES)}"
        )
    number = _value(value)
    return TagSample(asset, short_tag, ts, number, quality.strip(), unit.strip(), ref)


def _value(value: object) -> float:
    if value is None:
        return math.nan
    if isinstance(value, bool):
        raise _LineProblem(DeadLetterReason.SCHEMA_ERROR, f"value must be a number, got {value!r}")
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        text = value.strip()
        if text == "" or text.lower() == "nan":
            return math.nan
        try:
            number = float(text)
        except ValueError:
            raise _LineProblem(DeadLetterReason.DECODE_ERROR, f"value {value!r} is not a number") from None
    else:
        raise _LineProblem(DeadLetterReason.SCHEMA_ERROR, f"value must be a number, got {type(value).__name__}")
    if math.isinf(number):
        raise _LineProblem(DeadLetterReason.DECODE_ERROR, f"value {value!r} is infinite")
    return number


def _csv_fields(text: str) -> list[str]:
    rows = list(csv.reader([text]))
    return rows[0] if rows else []


def decode_plc_csv_line(line: bytes | str, columns: tuple[str, ...] = PLC_COLUMNS, raw_ref: str = "") -> TagSample:
    """Decode one CSV data row whose columns are ordered as ``columns`` (the file's header)."""
    try:
        text = line.decode("utf-8") if isinstance(line, bytes) else line
        fields = _csv_fields(text.rstrip("\r\n"))
        if len(fields) != len(columns):
            raise _LineProblem(
                DeadLetterReason.SCHEMA_ERROR,
                f"row has {len(fields)} fields, header has {len(columns)} ({','.join(columns)})",
            )
        row = dict(zip(columns, fields, strict=True))
        return _sample(row["timestamp"], row["tag"], row["value"], row["quality"], row["unit"], raw_ref)
    except UnicodeDecodeError as exc:
        raise DecodeError(DeadLetterReason.DECODE_ERROR, f"line is not UTF-8 text ({exc.reason} at byte {exc.start})",
                          raw_ref, line) from None
    except _LineProblem as exc:
        raise DecodeError(exc.reason, exc.detail, raw_ref, line) from None


def decode_plc_jsonl_line(line: bytes | str, raw_ref: str = "") -> TagSample:
    """Decode one JSON object ``{"timestamp","tag","value","quality","unit"}``."""
    try:
        obj = json.loads(line)
    except UnicodeDecodeError as exc:
        raise DecodeError(DeadLetterReason.DECODE_ERROR, f"line is not UTF-8 text ({exc.reason})", raw_ref, line) from None
    except json.JSONDecodeError as exc:
        raise DecodeError(DeadLetterReason.DECODE_ERROR, f"line is not JSON: {exc.msg} at column {exc.colno}",
                          raw_ref, line) from None
    if not isinstance(obj, dict):
        raise DecodeError(DeadLetterReason.SCHEMA_ERROR, f"line must be a JSON object, got {type(obj).__name__}",
                          raw_ref, line)
    missing = [name for name in PLC_COLUMNS if name not in obj]
    if missing:
        raise DecodeError(DeadLetterReason.SCHEMA_ERROR,
                          f"missing field(s) {missing}; each line needs {list(PLC_COLUMNS)}", raw_ref, line)
    try:
        return _sample(obj["timestamp"], obj["tag"], obj["value"], obj["quality"], obj["unit"], raw_ref)
    except _LineProblem as exc:
        raise DecodeError(exc.reason, exc.detail, raw_ref, line) from None


def read_csv_header(line: RawLine, ref: str) -> tuple[str, ...]:
    """Column names of a historian CSV header; one ``schema_error`` if a column is missing."""
    try:
        names = tuple(name.strip().lower() for name in _csv_fields(line.raw.decode("utf-8").lstrip("\ufeff")))
    except UnicodeDecodeError:
        raise DecodeError(DeadLetterReason.DECODE_ERROR, "CSV header is not UTF-8 text", f"{ref}:{line.lineno}",
                          line.raw) from None
    missing = [name for name in PLC_COLUMNS if name not in names]
    if missing:
        raise DecodeError(
            DeadLetterReason.SCHEMA_ERROR,
            f"CSV header lacks column(s) {missing}: got {list(names)}, expected {','.join(PLC_COLUMNS)}; "
            "export the historian in long format",
            f"{ref}:{line.lineno}",
            line.raw,
        )
    return names


def decode_plc_file(data: bytes, ref: str, fmt: PlcFormat) -> PlcFileResult:
    """Decode a whole historian file (``fmt`` ``"csv"`` or ``"jsonl"``); never raises for bad data.

    ``ref`` names the file in dead letters; a bad line's ``raw_ref`` is ``f"{ref}:{lineno}"``.
    """
    if fmt not in ("csv", "jsonl"):
        raise ValueError(f"fmt must be 'csv' or 'jsonl', got {fmt!r}")
    problem = file_level_problem(data, ref, f"PLC {fmt} file")
    if problem is not None:
        return PlcFileResult(errors=[problem])
    if fmt == "jsonl":
        samples, errors = decode_lines(data, decode_plc_jsonl_line, ref)
        return PlcFileResult(samples=samples, errors=errors)
    lines = split_lines(data)
    try:
        columns = read_csv_header(lines[0], ref)
    except DecodeError as exc:
        if not lines[0].terminated:
            exc = DecodeError(DeadLetterReason.TRUNCATED, f"file ends inside its header: {exc.detail}", exc.raw_ref,
                              lines[0].raw)
        return PlcFileResult(errors=[exc])

    def one(raw: bytes, raw_ref: str) -> TagSample:
        return decode_plc_csv_line(raw, columns, raw_ref)

    samples, errors = decode_lines(data, one, ref, skip_header=True)
    return PlcFileResult(samples=samples, errors=errors)
