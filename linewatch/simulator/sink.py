"""Landing-directory layout and rolling-file management.

:class:`LandingSink` receives :class:`~.engine.StreamOutput` objects and lays
them out as an edge gateway would::

    assets.json, ground_truth.csv
    plc/plc-<ASSET>-<stamp>.csv|jsonl          rolling, one per asset and window
    alarms/alarms-<ASSET>-<stamp>.log          rolling, only windows with events
    thermal/frames/<ASSET>/<ASSET>-<stamp>.tiff   one file per frame
    thermal/manifest-<stamp>.jsonl             rolling, all assets of the window
    audio/clips/<ASSET>/<ASSET>-<stamp>.wav       one file per clip
    audio/manifest-<stamp>.jsonl

Blobs are closed (atomically renamed into place) as soon as they are
rendered; their manifest lines are buffered and become visible only when
:meth:`LandingSink.roll` atomically closes the window's manifest - so every
visible manifest line references an existing, complete file.  Rolling files
are named after the start of their window.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np

from .assets import Asset, asset_registry_json
from .config import SimulatorConfig
from .engine import StreamOutput
from .ground_truth import GroundTruth
from .plc import format_lines, plc_file_text
from .timefmt import file_stamp, iso_ms, iso_ms_one
from .writer import atomic_write_bytes, atomic_write_text, encode_tiff, encode_wav, sha256_hex

FileCallback = Callable[[Path, str], None]
#: ``kind`` values passed to ``on_file`` callbacks.
FILE_KINDS: tuple[str, ...] = ("assets", "ground_truth", "plc", "alarms", "thermal", "audio",
                               "thermal_manifest", "audio_manifest")


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
    """Writes stream outputs into a landing directory (see module docstring)."""

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
        self._manifests: dict[str, list[str]] = {"thermal": [], "audio": []}

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

    def _blob(self, kind: str, aid: str, t: float, data: bytes, ext: str) -> None:
        sub = "frames" if kind == "thermal" else "clips"
        rel = f"{kind}/{sub}/{aid}/{aid}-{file_stamp(self.start_time, t)}.{ext}"
        path = atomic_write_bytes(self.root / rel, data)
        self._manifests[kind].append(json.dumps(
            {"asset_id": aid, "timestamp": iso_ms_one(self.start_time, t), "path": rel, "bytes": len(data),
             "sha256": sha256_hex(data)}))
        self._notify(path, kind)

    def add(self, out: StreamOutput) -> None:
        """Accept one asset's output: write blobs now, buffer rows/lines until :meth:`roll`."""
        aid = out.asset_id
        if out.plc is not None and len(out.plc):
            ts = iso_ms(self.start_time, out.plc.t)
            self._plc.setdefault(aid, []).extend(format_lines(out.plc, ts, self.config.plc_format))
            self.counts.plc_rows += len(out.plc) * out.plc.values.shape[1]
        if out.alarms:
            ts = iso_ms(self.start_time, np.array([e.t for e in out.alarms]))
            self._alarms.setdefault(aid, []).extend(e.line(s) for e, s in zip(out.alarms, ts, strict=True))
            self.counts.alarm_lines += len(out.alarms)
        for t, frame in out.frames:
            self._blob("thermal", aid, t, encode_tiff(frame), "tiff")
            self.counts.thermal_frames += 1
        for t, clip in out.clips:
            self._blob("audio", aid, t, encode_wav(clip, self.config.audio_rate_hz), "wav")
            self.counts.audio_clips += 1

    def roll(self, window_start_s: float) -> list[Path]:
        """Atomically close all rolling files of the window that started at ``window_start_s``."""
        stamp = file_stamp(self.start_time, window_start_s)
        closed: list[tuple[Path, str]] = []
        ext = self.config.plc_format
        for aid, lines in self._plc.items():
            if lines:
                p = atomic_write_text(self.root / "plc" / f"plc-{aid}-{stamp}.{ext}", plc_file_text(lines, ext))
                closed.append((p, "plc"))
                self.counts.plc_files += 1
        for aid, lines in self._alarms.items():
            if lines:
                p = atomic_write_text(self.root / "alarms" / f"alarms-{aid}-{stamp}.log", "\n".join(lines) + "\n")
                closed.append((p, "alarms"))
                self.counts.alarm_files += 1
        for kind, lines in self._manifests.items():
            if lines:
                p = atomic_write_text(self.root / kind / f"manifest-{stamp}.jsonl", "\n".join(lines) + "\n")
                closed.append((p, f"{kind}_manifest"))
                self.counts.manifest_files += 1
        self._plc = {}
        self._alarms = {}
        self._manifests = {"thermal": [], "audio": []}
        for p, kind in closed:
            self._notify(p, kind)
        return [p for p, _ in closed]
