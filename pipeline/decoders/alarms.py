"""Alarm log lines: ``<timestamp> <asset> <code> <state> <text...> [<value> <unit>]``.

>>> decode_alarm_line(b"2026-11-29T14:00:01.300Z PMP-01 A101 ACTIVE HIGH BEARING TEMP 82.4 degC")
AlarmEvent(asset_id='PMP-01', timestamp_ms=1795960801300, code='A101', state='ACTIVE', text='HIGH BEARING TEMP', value=82.4, unit='degC')
>>> decode_alarm_line("2026-11-29T14:00:09.000Z PMP-01 A101 CLEARED HIGH BEARING TEMP").value is None
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from linewatch.contract import DeadLetterReason
from pipeline.decoders.errors import DecodeError
from pipeline.decoders.text_lines import decode_lines, file_level_problem
from pipeline.decoders.timestamps import TimestampError, parse_timestamp_ms

_LINE = re.compile(
    r"^(?P<ts>\S+)\s+(?P<asset>[A-Za-z0-9_-]+)\s+(?P<code>[A-Za-z][A-Za-z0-9_-]*)\s+(?P<state>[A-Z][A-Z_]*)"
    r"(?:\s+(?P<rest>.*?))?\s*$"
)
_VALUE_UNIT = re.compile(r"^(?P<text>.*?)\s*(?P<value>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s+(?P<unit>\S+)$")


@dataclass(frozen=True, slots=True)
class AlarmEvent:
    """One alarm state change. ``value``/``unit`` are None when the line carries no reading."""

    asset_id: str
    timestamp_ms: int
    code: str
    state: str
    text: str
    value: float | None = None
    unit: str | None = None
    ref: str = field(default="", repr=False, compare=False)  # "<file>:<line>" it was read from


@dataclass
class AlarmFileResult:
    """The good events of an alarm log and one error per rejected line (or for the file)."""

    events: list[AlarmEvent] = field(default_factory=list)
    errors: list[DecodeError] = field(default_factory=list)


def decode_alarm_line(line: bytes | str, raw_ref: str = "") -> AlarmEvent:
    """Decode one alarm line; raises :class:`DecodeError` (``decode_error``) if it does not match."""
    try:
        text = line.decode("utf-8") if isinstance(line, bytes) else line
    except UnicodeDecodeError as exc:
        raise DecodeError(DeadLetterReason.DECODE_ERROR, f"line is not UTF-8 text ({exc.reason})", raw_ref, line) from None
    match = _LINE.match(text.strip())
    if match is None:
        raise DecodeError(
            DeadLetterReason.DECODE_ERROR,
            "alarm line must be '<ISO timestamp> <asset> <code> <STATE> <text> [<value> <unit>]'",
            raw_ref,
            line,
        )
    try:
        ts = parse_timestamp_ms(match["ts"])
    except TimestampError as exc:
        raise DecodeError(DeadLetterReason.DECODE_ERROR, str(exc), raw_ref, line) from None
    rest = match["rest"] or ""
    value: float | None = None
    unit: str | None = None
    tail = _VALUE_UNIT.match(rest)
    if tail is not None:
        rest, value, unit = tail["text"], float(tail["value"]), tail["unit"]
    return AlarmEvent(match["asset"], ts, match["code"], match["state"], rest.strip(), value, unit, raw_ref)


def decode_alarm_file(data: bytes, ref: str) -> AlarmFileResult:
    """Decode a whole alarm log; bad lines become errors with ``raw_ref=f"{ref}:{lineno}"``."""
    problem = file_level_problem(data, ref, "alarm log")
    if problem is not None:
        return AlarmFileResult(errors=[problem])
    events, errors = decode_lines(data, decode_alarm_line, ref)
    return AlarmFileResult(events=events, errors=errors)
