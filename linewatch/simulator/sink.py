"""Landing-directory layout, rolling files and the landing-zone manifests.

:class:`LandingSink` receives :class:`~.engine.StreamOutput` objects and lays
them out as an edge gateway would (docs/ingestion.md, "The landing-zone contract")::

    assets.json, ground_truth.csv
    plc/plc-<ASSET>-<stamp>.csv|jsonl          rolling, one per asset and roll
    alarms/alarms-<ASSET>-<stamp>.log          rolling, only rolls with events
    thermal/frames/<ASSET>/<ASSET>-<stamp>.tiff   one file per frame
    audio/clips/<ASSET>/<ASSET>-<stamp>.wav       one file per clip
    manifests/sim-<epoch>-<counter>.jsonl      one line per closed blob (all four kinds)
    .staging/                                  manifests are written here, then renamed in

Blobs are closed (atomically renamed into place) as soon as they are rendered
and announced to the :class:`~.manifests.ManifestPublisher`; rolling files are
closed by :meth:`LandingSink.roll` (an asset's alarm log announced before its
PLC file).  :meth:`LandingSink.publish` makes everything announced so far
visible in one manifest - so every visible manifest line references an
existing, complete file.  Rolling files are named after the start of their roll.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np

from .assets import Asset, asset_registry_json
from .config import SimulatorConfig
from .engine import StreamOutput
from .ground_truth import GroundTruth
from .manifests import ManifestPublisher, epoch_ms
from .plc import format_lines, plc_file_text
from .timefmt import file_stamp, iso_at_ms, iso_ms, iso_ms_one, offset_ms
from .writer import atomic_write_bytes, atomic_write_text, encode_tiff, encode_wav

FileCallback = Callable[[Path, str], None]
#: ``kind`` values passed to ``on_file`` callbacks.
FILE_KINDS: tuple[str, ...] = ("assets", "ground_truth", "plc", "alarms", "thermal", "audio", "manifest")


@dataclass
class SinkCounts:
    """Running totals of what was written."""

    plc_rows: int = 0
    plc_files: int = 0
    alarm_lines: int = 0
    alarm_files: int = 0
    thermal_frames: int = 0
    audio_clips: int = 0
    manifest_files: int = 0


class LandingSink:
    """Writes stream outputs into a landing directory (see module docstring).

    With ``config.write_manifests`` off no manifest (and no ``.staging/``) is written: the
    blobs only, for callers that publish manifests themselves.
    """

    def __init__(self, out_dir: str | Path, config: SimulatorConfig, start_time: datetime,
                 on_file: FileCallback | None = None) -> None:
        self.root = Path(out_dir)
        self.config = config
        self.start_time = start_time
        self.on_file = on_file
        self.counts = SinkCounts()
        for d in ("plc", "alarms", "thermal/frames", "audio/clips"):
            (self.root / d).mkdir(parents=True, exist_ok=True)
        self._plc: dict[str, list[str]] = {}
        self._alarms: dict[str, list[str]] = {}
        self._last_ms: dict[str, int] = {}  # newest PLC/alarm offset (ms) per asset in the open roll
        self.publisher: ManifestPublisher | None = (
            ManifestPublisher(self.root, epoch=epoch_ms(start_time)) if config.write_manifests else None)
        #: Real-time gateways publish as blobs close: once the oldest pending line is this old (seconds,
        #: checked at each close). None (batch mode): only :meth:`publish` does (deterministic output).
        self.publish_after_s: float | None = None
        self._oldest_pending: float | None = None  # time.monotonic() of the oldest unpublished line

    def _notify(self, path: Path, kind: str) -> None:
        if self.on_file is not None:
            self.on_file(path, kind)

    def write_assets(self, fleet: list[Asset]) -> Path:
        """Write ``assets.json``."""
        p = atomic_write_text(self.root / "assets.json",
                              json.dumps(asset_registry_json(fleet, self.config), indent=2) + "\n")
        self._notify(p, "assets")
        return p

    def write_ground_truth(self, gt: GroundTruth) -> Path:
        """(Re)write ``ground_truth.csv``."""
        p = atomic_write_text(self.root / "ground_truth.csv", gt.to_csv_text())
        self._notify(p, "ground_truth")
        return p

    def _close(self, rel: str, data: bytes, kind: str, aid: str, timestamp: str, end: str | None = None) -> Path:
        """Close one blob (atomic rename), tell ``on_file``, announce it for the next manifest."""
        path = atomic_write_bytes(self.root / rel, data)
        self._notify(path, kind)
        if self.publisher is not None:
            self.publisher.announce(aid, kind, rel, data, timestamp, end)
            now = time.monotonic()
            if self._oldest_pending is None:
                self._oldest_pending = now
            if self.publish_after_s is not None and now - self._oldest_pending >= self.publish_after_s:
                self.publish()
        return path

    def _blob(self, kind: str, aid: str, t: float, data: bytes, ext: str) -> None:
        sub = "frames" if kind == "thermal" else "clips"
        rel = f"{kind}/{sub}/{aid}/{aid}-{file_stamp(self.start_time, t)}.{ext}"
        self._close(rel, data, kind, aid, iso_ms_one(self.start_time, t))

    def _touch(self, aid: str, newest_s: float) -> None:
        self._last_ms[aid] = max(self._last_ms.get(aid, offset_ms(newest_s)), offset_ms(newest_s))

    def add(self, out: StreamOutput) -> None:
        """Accept one asset's output: write blobs now, buffer rows/lines until :meth:`roll`."""
        aid = out.asset_id
        if out.plc is not None and len(out.plc):
            ts = iso_ms(self.start_time, out.plc.t)
            self._plc.setdefault(aid, []).extend(format_lines(out.plc, ts, self.config.plc_format))
            self.counts.plc_rows += len(out.plc) * out.plc.values.shape[1]
            self._touch(aid, float(np.max(out.plc.t)))
        if out.alarms:
            ts = iso_ms(self.start_time, np.array([e.t for e in out.alarms]))
            self._alarms.setdefault(aid, []).extend(e.line(s) for e, s in zip(out.alarms, ts, strict=True))
            self.counts.alarm_lines += len(out.alarms)
            self._touch(aid, max(e.t for e in out.alarms))
        for t, frame in out.frames:
            self._blob("thermal", aid, t, encode_tiff(frame), "tiff")
            self.counts.thermal_frames += 1
        for t, clip in out.clips:
            self._blob("audio", aid, t, encode_wav(clip, self.config.audio_rate_hz), "wav")
            self.counts.audio_clips += 1

    def roll(self, window_start_s: float, window_end_s: float, assets: Iterable[str] | None = None) -> list[Path]:
        """Atomically close the rolling files of the roll ``[window_start_s, window_end_s)``.

        Per asset the alarm log (if the roll has events) is closed and announced before the PLC
        file, both with ``timestamp`` = roll start and ``end`` = roll end (exclusive, and later
        than every row in the file).  Nothing becomes visible in ``manifests/`` before
        :meth:`publish`.  ``assets``: only these assets' rolling files (historians on their own
        clocks roll at different instants); None: every asset's.
        """
        stamp = file_stamp(self.start_time, window_start_s)
        timestamp = iso_ms_one(self.start_time, window_start_s)
        end_ms = offset_ms(window_end_s)
        closed: list[Path] = []
        ext = self.config.plc_format
        pending = list(dict.fromkeys([*self._alarms, *self._plc]))
        if assets is not None:
            chosen = set(assets)
            pending = [aid for aid in pending if aid in chosen]
        for aid in pending:
            # rows are strictly before window_end_s; keep them strictly before `end` after rounding too
            end = iso_at_ms(self.start_time, max(end_ms, self._last_ms.pop(aid, end_ms - 1) + 1))
            alarm_lines = self._alarms.pop(aid, None)
            if alarm_lines:
                closed.append(self._close(f"alarms/alarms-{aid}-{stamp}.log", ("\n".join(alarm_lines) + "\n").encode(),
                                          "alarms", aid, timestamp, end))
                self.counts.alarm_files += 1
            plc_lines = self._plc.pop(aid, None)
            if plc_lines:
                closed.append(self._close(f"plc/plc-{aid}-{stamp}.{ext}", plc_file_text(plc_lines, ext).encode(),
                                          "plc", aid, timestamp, end))
                self.counts.plc_files += 1
        return closed

    def publish(self) -> Path | None:
        """Make every blob announced since the last call visible in one new manifest.

        Returns the manifest's path; None when nothing is pending or manifests are off.
        """
        if self.publisher is None:
            return None
        self._oldest_pending = None
        path = self.publisher.publish()
        if path is not None:
            self.counts.manifest_files += 1
            self._notify(path, "manifest")
        return path
