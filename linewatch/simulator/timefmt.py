"""Timestamp formatting shared by all writers (vectorised with numpy datetime64).

* record timestamps: ISO-8601 UTC with milliseconds and ``Z``,
  e.g. ``2026-11-29T14:00:00.100Z``;
* file-name stamps: ``YYYYmmddTHHMMSSfff``, e.g. ``20261129T140000100``.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np


def _base(start: datetime) -> np.datetime64:
    return np.datetime64(start.astimezone(timezone.utc).replace(tzinfo=None), "ms")


def iso_ms(start: datetime, t_s: np.ndarray | float) -> np.ndarray:
    """ISO-8601 strings (``...T14:00:00.100Z``) for offsets ``t_s`` seconds after ``start``."""
    off = np.round(np.asarray(t_s, dtype=np.float64) * 1000.0).astype(np.int64).astype("timedelta64[ms]")
    s = np.datetime_as_string(_base(start) + off, unit="ms")
    return np.char.add(s, "Z")


def iso_ms_one(start: datetime, t_s: float) -> str:
    """Single ISO-8601 timestamp string."""
    return str(iso_ms(start, np.array([t_s]))[0])


def offset_ms(t_s: float) -> int:
    """Offset ``t_s`` seconds in whole milliseconds, rounded as :func:`iso_ms` rounds.

    >>> offset_ms(1.0004), offset_ms(0.1 + 0.2)
    (1000, 300)
    """
    return int(np.round(np.float64(t_s) * 1000.0))


def iso_at_ms(start: datetime, off_ms: int) -> str:
    """ISO-8601 timestamp of ``start`` plus ``off_ms`` milliseconds (exact integer offset)."""
    moment = start.astimezone(timezone.utc) + timedelta(milliseconds=off_ms)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def file_stamp(start: datetime, t_s: float) -> str:
    """File-name stamp ``YYYYmmddTHHMMSSfff`` for ``start + t_s``."""
    dt = to_datetime(start, t_s)
    return dt.strftime("%Y%m%dT%H%M%S") + f"{dt.microsecond // 1000:03d}"


def to_datetime(start: datetime, t_s: float) -> datetime:
    """``start + t_s`` rounded to the millisecond (UTC)."""
    return start.astimezone(timezone.utc) + timedelta(milliseconds=round(t_s * 1000.0))


def parse_iso(ts: str) -> datetime:
    """Parse an ISO-8601 string written by the simulator (``Z`` or offset) to aware UTC."""
    return datetime.fromisoformat(ts.replace("Z", "+00:00")).astimezone(timezone.utc)


def now_utc_ms() -> datetime:
    """Current UTC time truncated to milliseconds."""
    now = datetime.now(timezone.utc)
    return now.replace(microsecond=(now.microsecond // 1000) * 1000)
