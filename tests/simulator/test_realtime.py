"""Real-time mode: files appear atomically, manifests only reference closed files."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pandas as pd
import soundfile as sf
import tifffile

from linewatch.simulator import Factory, GroundTruth, SimulatorConfig


class Watcher:
    """Repeatedly scans the landing directory and checks every visible file."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.checked: set[Path] = set()
        self.problems: list[str] = []
        self.manifests = 0
        self.plc_files = 0

    def scan(self) -> None:
        for p in sorted(self.root.rglob("*")):
            if not p.is_file() or p.name.startswith("."):
                continue
            if p.suffix == ".tmp":
                self.problems.append(f"visible temp file {p}")
            if p in self.checked and "ground_truth" not in p.name:
                continue
            try:
                self._check(p)
            except Exception as exc:  # noqa: BLE001 - collect any failure
                self.problems.append(f"{p}: {exc!r}")
            self.checked.add(p)

    def _check(self, p: Path) -> None:
        if p.suffix == ".tiff":
            img = tifffile.imread(p)
            assert img.shape == (120, 160) and img.dtype == np.uint16
        elif p.suffix == ".wav":
            info = sf.info(p)
            assert info.frames == 16000 and info.samplerate == 16000
        elif p.name.startswith("manifest-"):
            self.manifests += 1
            for line in p.read_text().splitlines():
                r = json.loads(line)
                blob = self.root / r["path"]
                assert blob.is_file(), f"manifest references missing {r['path']}"
                data = blob.read_bytes()
                assert len(data) == r["bytes"] and hashlib.sha256(data).hexdigest() == r["sha256"]
        elif p.suffix == ".csv" and p.parent.name == "plc":
            self.plc_files += 1
            df = pd.read_csv(p)
            assert list(df.columns) == ["timestamp", "tag", "value", "quality", "unit"]
            assert len(df) % 7 == 0 and len(df) > 0 and df.notna().all().all()
        elif p.suffix == ".log":
            assert p.read_text().endswith("\n")


def test_realtime_never_exposes_partial_files(tmp_path: Path) -> None:
    cfg = SimulatorConfig(seed=3, roll_seconds=0.25, thermal_fps=4.0, fault_fraction=1.0)
    factory = Factory(cfg, n_assets=2)
    stop = threading.Event()
    notified: list[tuple[Path, str]] = []
    result: dict = {}
    t_start = datetime.now(timezone.utc)

    def run() -> None:
        try:
            result["summary"] = factory.run_realtime(tmp_path, stop=stop,
                                                     on_file=lambda p, k: notified.append((p, k)))
        except BaseException as exc:  # noqa: BLE001
            result["error"] = exc

    th = threading.Thread(target=run, daemon=True)
    th.start()
    watcher = Watcher(tmp_path)
    deadline = time.monotonic() + 30.0
    # Scan continuously until enough closed audio manifests (>= 2 s of clips) have been seen.
    while time.monotonic() < deadline and "error" not in result:
        watcher.scan()
        audio_manifests = list((tmp_path / "audio").glob("manifest-*.jsonl")) if (tmp_path / "audio").exists() else []
        if len(audio_manifests) >= 2 and watcher.plc_files >= 8:
            break
    stop.set()
    th.join(timeout=30.0)
    assert not th.is_alive()
    assert "error" not in result, result.get("error")
    watcher.scan()
    assert watcher.problems == []
    assert watcher.manifests >= 2
    assert not [p for p in tmp_path.rglob(".*.tmp")], "temp files left behind"

    # Every blob was announced before the manifest that references it.
    order = {p: i for i, (p, _) in enumerate(notified)}
    for p, kind in notified:
        if kind.endswith("_manifest"):
            for line in p.read_text().splitlines():
                assert order[tmp_path / json.loads(line)["path"]] < order[p]

    # Timestamps are wall-clock UTC.
    s = result["summary"]
    assert abs(s.start_time - t_start) < timedelta(seconds=5)
    first = pd.read_csv(sorted((tmp_path / "plc").glob("*.csv"))[0])["timestamp"].iloc[0]
    assert abs(pd.Timestamp(first).to_pydatetime() - t_start) < timedelta(seconds=5)
    assert s.audio_clips >= 2 * 2 and s.thermal_frames >= 2 * 8


def test_realtime_duration_and_ground_truth(tmp_path: Path) -> None:
    cfg = SimulatorConfig(seed=4, roll_seconds=0.5)
    s = Factory(cfg, n_assets=1).run_realtime(tmp_path, duration_s=1.5)
    assert 1.5 <= s.wall_seconds < 10.0
    assert s.sim_seconds == 1.5
    assert s.plc_rows == 15 * 7
    assert s.audio_clips == 1 and s.thermal_frames == 3
    gt = GroundTruth.read_csv(tmp_path / "ground_truth.csv")
    ends = [r.end for r in gt]
    assert max(ends) - s.start_time == timedelta(milliseconds=1500)
    assert 2 <= len(list((tmp_path / "plc").glob("plc-PMP-01-*.csv"))) <= 3
