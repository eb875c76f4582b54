"""ISO-8601 UTC timestamps (``2026-11-29T14:00:00.100Z``) to epoch milliseconds and back.

>>> parse_timestamp_ms("2026-11-29T14:00:00.100Z")
1795960800100
>>> format_timestamp_ms(1795960800100)
'2026-11-29T14:00:00.100Z'
>>> parse_timestamp_ms("2026-11-29T15:00:00.100+01:00")
1795960800100
"""

from __future__ import annotations

from datetime import UTC, datetime


class TimestampError(ValueError):
    """Text is not an ISO-8601 timestamp with a time zone."""


def parse_timestamp_ms(text: str) -> int:
    """Epoch milliseconds of an ISO-8601 timestamp that carries a zone (``Z`` or ``+hh:mm``).

    Raises :class:`TimestampError` for anything else, including naive timestamps (their
    zone would be a guess).
    """
    try:
        parsed = datetime.fromisoformat(text)
    except (ValueError, TypeError) as exc:
        raise TimestampError(f"not an ISO-8601 timestamp: {text!r}") from exc
    if parsed.tzinfo is None:
        raise TimestampError(f"timestamp {text!r} has no time zone; write it as UTC with a trailing 'Z'")
    # Integer arithmetic: float seconds would round some milliseconds the wrong way.
    delta = parsed - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def format_timestamp_ms(ms: int) -> str:
    """The UTC ISO-8601 rendering with milliseconds and ``Z`` (inverse of :func:`parse_timestamp_ms`)."""
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
