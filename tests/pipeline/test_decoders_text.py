"""PLC historian and alarm-log decoders: good lines kept, every bad line or file exactly one error."""

from __future__ import annotations

import math

import pytest

from linewatch.contract import DeadLetterReason as R
from pipeline.decoders import (
    AlarmEvent,
    DecodeError,
    TagSample,
    decode_alarm_file,
    decode_alarm_line,
    decode_plc_csv_line,
    decode_plc_file,
    decode_plc_jsonl_line,
    parse_timestamp_ms,
)

HEADER = b"timestamp,tag,value,quality,unit\n"
ROW1 = b"2026-11-29T14:00:00.100Z,PMP-01.motor_current_a,12.41,Good,A\n"
ROW2 = b"2026-11-29T14:00:00.200Z,PMP-01.speed_rpm,1478.5,Uncertain,rpm\n"
T0 = parse_timestamp_ms("2026-11-29T14:00:00.000Z")


def reasons(errors: list[DecodeError]) -> list[str]:
    return [e.reason.value for e in errors]


def test_timestamp_is_exact_epoch_milliseconds() -> None:
    assert parse_timestamp_ms("1970-01-01T00:00:00.001Z") == 1
    assert parse_timestamp_ms("2026-11-29T14:00:00.100Z") - T0 == 100


def test_valid_csv_file_decodes_every_row() -> None:
    result = decode_plc_file(HEADER + ROW1 + ROW2, "plc/a.csv", "csv")
    assert result.errors == []
    assert result.samples == [
        TagSample("PMP-01", "motor_current_a", T0 + 100, 12.41, "Good", "A"),
        TagSample("PMP-01", "speed_rpm", T0 + 200, 1478.5, "Uncertain", "rpm"),
    ]


def test_csv_columns_may_come_in_another_order() -> None:
    data = b"tag,timestamp,unit,quality,value\nPMP-01.speed_rpm,2026-11-29T14:00:00.000Z,rpm,Good,1500\n"
    result = decode_plc_file(data, "a.csv", "csv")
    assert result.errors == [] and result.samples[0].value == 1500.0 and result.samples[0].timestamp_ms == T0


def test_csv_missing_column_is_one_schema_error_for_the_file() -> None:
    data = b"timestamp,tag,value,unit\n" + b"2026-11-29T14:00:00.100Z,PMP-01.motor_current_a,12.41,A\n" * 50
    result = decode_plc_file(data, "plc/a.csv", "csv")
    assert result.samples == []
    assert reasons(result.errors) == ["schema_error"]
    assert "quality" in result.errors[0].detail and result.errors[0].raw_ref == "plc/a.csv:1"


def test_csv_renamed_column_is_one_schema_error() -> None:
    result = decode_plc_file(b"time,tag,value,quality,unit\n" + ROW1, "a.csv", "csv")
    assert reasons(result.errors) == ["schema_error"] and "timestamp" in result.errors[0].detail


@pytest.mark.parametrize(
    ("bad_row", "reason"),
    [
        (b"2026-11-29T14:00:00.300Z,PMP-01.motor_current_a,twelve,Good,A\n", "decode_error"),
        (b"yesterday,PMP-01.motor_current_a,12.4,Good,A\n", "decode_error"),
        (b"2026-11-29T14:00:00.300,PMP-01.motor_current_a,12.4,Good,A\n", "decode_error"),  # no zone
        (b"2026-11-29T14:00:00.300Z,PMP-01.motor_current_a,12.4,Good\n", "schema_error"),
        (b"2026-11-29T14:00:00.300Z,motor_current_a,12.4,Good,A\n", "schema_error"),
        (b"2026-11-29T14:00:00.300Z,PMP-01.motor_current_a,12.4,Excellent,A\n", "schema_error"),
        (b"2026-11-29T14:00:00.300Z,PMP-01.motor_current_a,inf,Good,A\n", "decode_error"),
        (b"2026-11-29T14:00:00.300Z,PMP-01.motor\xff_current_a,12.4,Good,A\n", "decode_error"),
    ],
)
def test_bad_csv_line_is_one_error_and_good_lines_are_kept(bad_row: bytes, reason: str) -> None:
    result = decode_plc_file(HEADER + ROW1 + bad_row + ROW2, "plc/a.csv", "csv")
    assert len(result.samples) == 2
    assert reasons(result.errors) == [reason]
    assert result.errors[0].raw_ref == "plc/a.csv:3"
    assert result.errors[0].excerpt  # the bad line is quoted for the operator


def test_half_written_last_line_is_truncated() -> None:
    data = HEADER + ROW1 + ROW2 + b"2026-11-29T14:00:00.300Z,PMP-01.bearing_te"
    result = decode_plc_file(data, "plc/a.csv", "csv")
    assert len(result.samples) == 2
    assert reasons(result.errors) == ["truncated"] and result.errors[0].raw_ref == "plc/a.csv:4"


def test_last_line_without_newline_that_parses_is_kept() -> None:
    result = decode_plc_file(HEADER + ROW1 + ROW2.rstrip(b"\n"), "a.csv", "csv")
    assert result.errors == [] and len(result.samples) == 2


def test_garbage_bytes_are_one_decode_error() -> None:
    garbage = bytes(range(256)) * 20
    for fmt in ("csv", "jsonl"):
        result = decode_plc_file(garbage, "plc/x", fmt)  # type: ignore[arg-type]
        assert result.samples == [] and reasons(result.errors) == ["decode_error"], fmt


def test_empty_file_is_truncated() -> None:
    assert reasons(decode_plc_file(b"", "a.csv", "csv").errors) == ["truncated"]
    assert reasons(decode_plc_file(b"timestamp,tag,val", "a.csv", "csv").errors) == ["truncated"]


def test_jsonl_file_keeps_good_lines_and_reports_bad_ones() -> None:
    good = b'{"timestamp":"2026-11-29T14:00:00.100Z","tag":"PMP-01.pressure_bar","value":5.5,"quality":"Good","unit":"bar"}\n'
    null = b'{"timestamp":"2026-11-29T14:00:00.200Z","tag":"PMP-01.pressure_bar","value":null,"quality":"Bad","unit":"bar"}\n'
    missing = b'{"timestamp":"2026-11-29T14:00:00.300Z","tag":"PMP-01.pressure_bar","value":5.5,"unit":"bar"}\n'
    wrong_type = b'{"timestamp":"2026-11-29T14:00:00.400Z","tag":"PMP-01.pressure_bar","value":true,"quality":"Good","unit":"bar"}\n'
    cut = good[:40]
    result = decode_plc_file(good + null + b"[1,2]\n" + missing + wrong_type + cut, "plc/a.jsonl", "jsonl")
    assert [s.timestamp_ms - T0 for s in result.samples] == [100, 200]
    assert math.isnan(result.samples[1].value) and result.samples[1].quality == "Bad"
    assert [(e.reason.value, e.raw_ref) for e in result.errors] == [
        ("schema_error", "plc/a.jsonl:3"), ("schema_error", "plc/a.jsonl:4"),
        ("schema_error", "plc/a.jsonl:5"), ("truncated", "plc/a.jsonl:6")]


def test_single_line_decoders_raise_decode_error() -> None:
    assert decode_plc_csv_line(ROW1).value == 12.41
    line = b'{"timestamp":"2026-11-29T14:00:00.100Z","tag":"CNV-03.run_state","value":1,"quality":"Good","unit":"bool"}'
    assert decode_plc_jsonl_line(line) == TagSample("CNV-03", "run_state", T0 + 100, 1.0, "Good", "bool")
    with pytest.raises(DecodeError) as info:
        decode_plc_jsonl_line(b"{not json", "a.jsonl:7")
    assert info.value.reason is R.DECODE_ERROR and info.value.raw_ref == "a.jsonl:7"


def test_decode_error_becomes_a_dead_letter() -> None:
    error = decode_plc_file(HEADER + b"x,y\n", "plc/a.csv", "csv").errors[0]
    dead = error.to_dead_letter("pipeline.plc", failed_at_ms=123)
    assert (dead.reason, dead.raw_ref, dead.source, dead.failed_at_ms) == (R.SCHEMA_ERROR, "plc/a.csv:2", "pipeline.plc", 123)


def test_alarm_line_with_and_without_reading() -> None:
    line = b"2026-11-29T14:00:01.300Z PMP-01 A101 ACTIVE HIGH BEARING TEMP 82.4 degC"
    assert decode_alarm_line(line) == AlarmEvent("PMP-01", T0 + 1300, "A101", "ACTIVE", "HIGH BEARING TEMP", 82.4, "degC")
    ack = decode_alarm_line("2026-11-29T14:00:31.000Z PRS-02 A401 ACK MOTOR OVERLOAD")
    assert (ack.state, ack.text, ack.value, ack.unit) == ("ACK", "MOTOR OVERLOAD", None, None)
    low = decode_alarm_line("2026-11-29T14:00:31.000Z PMP-04 A301 CLEARED LOW DISCHARGE PRESSURE -0.5 bar")
    assert (low.text, low.value, low.unit) == ("LOW DISCHARGE PRESSURE", -0.5, "bar")


def test_alarm_file_keeps_good_lines() -> None:
    data = (b"2026-11-29T14:00:01.300Z PMP-01 A101 ACTIVE HIGH BEARING TEMP 82.4 degC\n"
            b"this is not an alarm\n"
            b"2026-11-29T14:00:09.300Z PMP-01 A101 CLEARED HIGH BEARING TEMP 65.0 degC\n"
            b"2026-11-29T14:00:10.000Z PMP-01 A9")
    result = decode_alarm_file(data, "alarms/a.log")
    assert [e.state for e in result.events] == ["ACTIVE", "CLEARED"]
    assert [(e.reason.value, e.raw_ref) for e in result.errors] == [("decode_error", "alarms/a.log:2"),
                                                                     ("truncated", "alarms/a.log:4")]
    assert reasons(decode_alarm_file(b"\x00\x01\x02garbage", "x.log").errors) == ["decode_error"]


def test_windows_line_endings_and_byte_order_mark_are_accepted() -> None:
    data = b"\xef\xbb\xbf" + (HEADER + ROW1 + ROW2).replace(b"\n", b"\r\n")
    result = decode_plc_file(data, "a.csv", "csv")
    assert result.errors == [] and [s.tag for s in result.samples] == ["motor_current_a", "speed_rpm"]
