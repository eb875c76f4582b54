"""Decoders: raw landing-zone bytes → typed records, or a :class:`DecodeError` with a
dead-letter reason. Pure Python (no Flink); see docs/features.md. Manifest lines are parsed by
the landing-zone contract (``pipeline.landing.contract``), the one manifest parser.
"""

from pipeline.decoders.alarms import AlarmEvent, AlarmFileResult, decode_alarm_file, decode_alarm_line
from pipeline.decoders.audio import DEFAULT_CLIP_SPEC, ClipSpec, decode_wav
from pipeline.decoders.errors import DecodeError, RejectedInput, printable_excerpt
from pipeline.decoders.plc import (
    PLC_COLUMNS,
    PlcFileResult,
    TagSample,
    decode_plc_csv_line,
    decode_plc_file,
    decode_plc_jsonl_line,
)
from pipeline.decoders.thermal import FRAME_SHAPE, decode_thermal_tiff
from pipeline.decoders.timestamps import TimestampError, format_timestamp_ms, parse_timestamp_ms

__all__ = [
    "AlarmEvent", "AlarmFileResult", "ClipSpec", "DEFAULT_CLIP_SPEC", "DecodeError", "FRAME_SHAPE",
    "PLC_COLUMNS", "PlcFileResult", "RejectedInput", "TagSample", "TimestampError",
    "decode_alarm_file", "decode_alarm_line", "decode_plc_csv_line",
    "decode_plc_file", "decode_plc_jsonl_line", "decode_thermal_tiff", "decode_wav", "format_timestamp_ms",
    "parse_timestamp_ms", "printable_excerpt",
]
