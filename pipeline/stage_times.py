"""Where a blob's time goes inside the ingestion job: one wall-clock stamp per stage.

For every blob it handles the job notes (ms since 1970, ``time.time()``, the clock the simulator's
``on_file`` and the services use):

* ``seen_ms`` — the manifest line reached the ingest function (Flink's source listed the manifest,
  read the line and shuffled it by asset); for a line held back for a missing seq and released
  later, the time of the element (or timer) that released it, with ``held`` set;
* ``read_ms`` — gateway order decided, the blob read and its size and SHA-256 checked;
* ``handled_ms`` — decoded, validated, features computed (the handler returned);
* ``written_ms`` — the entries of the element are in Redis (one pipelined round trip);
* ``done_ms`` — the blob is archived and the element's processing returns.

With ``flink.stage_times_file`` set, :class:`StageTimesLog` appends one JSON line per blob to that
file (``bench/bench_e2e.py`` reads it); unset (the default) nothing is written.

>>> t = BlobTimes("thermal/frames/A/a.tiff", "thermal", seen_ms=1000.0, read_ms=1001.5, handled_ms=1009.0)
>>> sorted(t.record(written_ms=1011.0, done_ms=1011.2))
['done_ms', 'handled_ms', 'held', 'kind', 'path', 'read_ms', 'seen_ms', 'written_ms']
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO


@dataclass(frozen=True)
class BlobTimes:
    """Stage stamps of one blob up to the handler's return (the effects add the rest)."""

    path: str
    kind: str
    seen_ms: float
    read_ms: float
    handled_ms: float
    held: bool = False

    def record(self, written_ms: float, done_ms: float) -> dict[str, object]:
        """The JSON-ready record with the write and archive stamps."""
        return {**asdict(self), "written_ms": round(written_ms, 2), "done_ms": round(done_ms, 2)}


class StageTimesLog:
    """Appends :class:`BlobTimes` records as JSON lines to ``path`` (flushed per element)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] = path.open("a", encoding="utf-8")

    def write(self, times: list[BlobTimes], written_ms: float, done_ms: float) -> None:
        if not times:
            return
        self._file.write("".join(json.dumps(t.record(written_ms, done_ms)) + "\n" for t in times))
        self._file.flush()

    def close(self) -> None:
        self._file.close()
