"""``linewatch audit export``: rows of a time range to CSV or Parquet.

>>> parse_when("2026-12-01T02:00:00Z", now_ms=0)
1796090400000
>>> parse_when("2h", now_ms=10_000_000)
2800000
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from governance.audit.store import EXPORT_COLUMNS

_RELATIVE = re.compile(r"^(\d+(?:\.\d+)?)\s*(s|m|h|d|w)$")
_UNIT_MS = {"s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}
INT_COLUMNS = ("seq", "recorded_at_ms", "event_time_ms")


class ExportError(ValueError):
    """The export cannot be written as asked (bad time, missing pyarrow)."""


def parse_when(text: str, now_ms: int) -> int:
    """Epoch ms of ``text``: ISO 8601 (UTC unless it names a zone), ``<n>s|m|h|d|w`` ago, or epoch ms."""
    text = text.strip()
    m = _RELATIVE.match(text)
    if m:
        return now_ms - int(float(m.group(1)) * _UNIT_MS[m.group(2)])
    if text.isdigit():
        return int(text)
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise ExportError(f"cannot read time {text!r}: give ISO 8601 (2026-12-01T02:00Z), a span ago (30m, 2h, "
                          "7d) or epoch milliseconds") from exc
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp() * 1000)


def write_csv(rows: Iterable[dict[str, Any]], out: Path) -> int:
    n = 0
    with out.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(EXPORT_COLUMNS))
        writer.writeheader()
        for row in rows:
            writer.writerow(row)
            n += 1
    return n


def write_parquet(rows: Iterable[dict[str, Any]], out: Path) -> int:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise ExportError("Parquet export needs pyarrow: `pip install pyarrow` (or linewatch[governance]), "
                          "or use --format csv") from exc
    schema = pa.schema([(c, pa.int64() if c in INT_COLUMNS else pa.string()) for c in EXPORT_COLUMNS])
    data = list(rows)
    table = pa.Table.from_pylist(data, schema=schema)
    pq.write_table(table, out)
    return len(data)


def export(rows: Iterable[dict[str, Any]], out: Path, fmt: Literal["csv", "parquet"]) -> int:
    """Write ``rows`` to ``out``; returns the row count."""
    out.parent.mkdir(parents=True, exist_ok=True)
    return write_csv(rows, out) if fmt == "csv" else write_parquet(rows, out)
