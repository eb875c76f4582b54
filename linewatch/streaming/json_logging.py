"""Structured JSON logs: one object per line with time, level, logger, message and any extras.

>>> import io, logging
>>> buf = io.StringIO()
>>> log = configure_json_logging("INFO", stream=buf, logger_name="linewatch.doctest")
>>> log.info("dead letter", extra={"entry_ids": ["1-0"], "reason": "bad_shape"})
>>> rec = json.loads(buf.getvalue())
>>> rec["msg"], rec["entry_ids"], rec["reason"], rec["level"]
('dead letter', ['1-0'], 'bad_shape', 'INFO')
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import IO

_STANDARD = set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime", "taskName"}


class JsonFormatter(logging.Formatter):
    """Formats a record as one JSON object; ``extra={...}`` keys become top-level fields."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, object] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                out[key] = value
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


def configure_json_logging(level: str = "INFO", stream: IO[str] | None = None,
                           logger_name: str = "linewatch") -> logging.Logger:
    """Send ``logger_name``'s records as JSON lines to ``stream`` (default stderr)."""
    logger = logging.getLogger(logger_name)
    for h in list(logger.handlers):
        if getattr(h, "_linewatch_json", False):
            logger.removeHandler(h)
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    handler._linewatch_json = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
    return logger
