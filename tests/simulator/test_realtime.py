"""Real-time mode: files appear atomically, manifests only reference closed files."""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pandas as pd
import soundfile as sf
import tifffile

from linewatch.simulator import Factory, GroundTruth, SimulatorConfig
from pipeline.landing import MODALITY_OF_KIND, LandingZone, ManifestEntry, read_manifest


class Watcher:
    """Repeatedly scans the landing directory and checks every visible file.

    A manifest is checked the first time it is seen: every blob it names must already be
    there, complete (size and SHA-256 of the line), read through the ingestion decoders.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.checked: set[Path] = set()
        self.problems: list[str] = []
        self.manifest_lines: list[tuple[str, dict]] = []  # (manifest name, line) in order of appearance
        self.plc_files = 0

    def scan(self) -> None:
        for p in sorted(self.root.rglob("*")):
            if not p.is_file():
                continue
            if p.parent.name == "manifests" and p.name.startswith("."):
                self.problems.append(f"temporary file inside manifests/: {p}")
            if p.name.startswith("."):
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
        elif p.parent.name == "manifests":
            data = p.read_bytes()
            lines = read_manifest(p) or []
            assert all(isinstance(line.parsed, ManifestEntry) for line in lines), lines
            for line in lines:
                LandingZone(self.root).read(line.parsed)  # type: ignore[arg-type]  # missing/truncated if not closed yet
            self.manifest_lines += [(p.name, json.loads(line)) for line in data.decode().splitlines()]
        elif p.suffix == ".csv" and p.parent.name == "plc":
            self.plc_files += 1
            df = pd.read_csv(p)
            assert list(df.columns) == ["timestamp", "tag", "value", "quality", "unit"]
            assert len(df) % 7 == 0 and len(df) > 0 and df.notna().all().all()
        elif p.suffix == ".log":
            assert p.read_text().endswith("\n")

    def announced(self, kind: str) -> int:
        return sum(line["kind"] == kind for _, line in self.manifest_lines)


def test_realtime_never_exposes_partial_files_or_early_manifests(tmp_path: Path) -> None:
    cfg = SimulatorConfig(seed=3, roll_seconds=0.5, thermal_fps=5.0, fault_fraction=1.0)
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
    # Scan continuously (no sleep) until >= 2 s of clips and 8 PLC files were announced.
    while time.monotonic() < deadline and "error" not in result:
        watcher.scan()
        if watcher.announced("audio") >= 4 and watcher.announced("plc") >= 8:
            break
    stop.set()
    th.join(timeout=30.0)
    assert not th.is_alive()
    assert "error" not in result, result.get("error")
    watcher.scan()
    assert watcher.problems == []
    assert watcher.announced("audio") >= 4 and watcher.announced("plc") >= 8
    assert not [p for p in tmp_path.rglob(".*.tmp")], "temp files left behind"

    # Every closed blob is announced once; seq counts each asset and modality in order of appearance.
    paths = [line["path"] for _, line in watcher.manifest_lines]
    on_disk = {p.relative_to(tmp_path).as_posix() for sub in ("plc", "alarms", "thermal", "audio")
               for p in (tmp_path / sub).rglob("*") if p.is_file()}
    assert len(paths) == len(set(paths)) and set(paths) == on_disk
    seqs: dict[tuple[str, str], list[int]] = defaultdict(list)
    for _, line in watcher.manifest_lines:
        seqs[(line["asset_id"], MODALITY_OF_KIND[line["kind"]])].append(line["seq"])
    assert all(got == list(range(len(got))) for got in seqs.values()), seqs

    # Frames are published within a tick of closing them, not held back to the roll: some
    # manifests announce frames and no rolling file.
    per_manifest: dict[str, set[str]] = defaultdict(set)
    for name, line in watcher.manifest_lines:
        per_manifest[name].add(line["kind"])
    assert any("thermal" in kinds and not kinds & {"plc", "alarms"} for kinds in per_manifest.values())

    # Every blob was closed (and announced to on_file) before the manifest that references it.
    order = {p: i for i, (p, _) in enumerate(notified)}
    manifests = [p for p, kind in notified if kind == "manifest"]
    assert len(manifests) == len(per_manifest)
    for p in manifests:
        for line in p.read_text().splitlines():
            assert order[tmp_path / json.loads(line)["path"]] < order[p]

    # Timestamps are wall-clock UTC.
    s = result["summary"]
    assert abs(s.start_time - t_start) < timedelta(seconds=5)
    first = pd.read_csv(sorted((tmp_path / "plc").glob("*.csv"))[0])["timestamp"].iloc[0]
    assert abs(pd.Timestamp(first).to_pydatetime() - t_start) < timedelta(seconds=5)
    assert s.audio_clips >= 2 * 2 and s.thermal_frames >= 2 * 8
    assert s.manifest_files == len(manifests)


def test_realtime_duration_and_ground_truth(tmp_path: Path) -> None:
    cfg = SimulatorConfig(seed=4, roll_seconds=0.5, sensor_clocks="synchronised")  # counts at a shared clock
    s = Factory(cfg, n_assets=1).run_realtime(tmp_path, duration_s=1.5)
    assert 1.5 <= s.wall_seconds < 10.0
    assert s.sim_seconds == 1.5
    assert s.plc_rows == 15 * 7
    assert s.audio_clips == 1 and s.thermal_frames == 3
    gt = GroundTruth.read_csv(tmp_path / "ground_truth.csv")
    ends = [r.end for r in gt]
    assert max(ends) - s.start_time == timedelta(milliseconds=1500)
    assert 2 <= len(list((tmp_path / "plc").glob("plc-PMP-01-*.csv"))) <= 3


def test_realtime_manifest_max_delay(tmp_path: Path) -> None:
    """``manifest_max_delay_ms`` 0: the gateway announces each blob as it closes (one line per
    manifest, every blob before its manifest); 1000: once per tick (several blobs share one: the
    assets' files close at the same instants with synchronised sensor clocks)."""
    lines_per_manifest: dict[float, list[int]] = {}
    for delay in (0.0, 1000.0):
        out = tmp_path / str(delay)
        seen: list[tuple[Path, str]] = []
        cfg = SimulatorConfig(seed=5, manifest_max_delay_ms=delay, sensor_clocks="synchronised")
        s = Factory(cfg, n_assets=2).run_realtime(out, duration_s=1.2, on_file=lambda p, k: seen.append((p, k)))
        manifests = sorted((out / "manifests").glob("*.jsonl"))
        lines_per_manifest[delay] = [len(m.read_text().splitlines()) for m in manifests]
        assert s.manifest_files == len(manifests)
        order = {p: i for i, (p, _) in enumerate(seen)}
        for m in manifests:
            for line in m.read_text().splitlines():
                assert order[out / json.loads(line)["path"]] < order[m]
    assert set(lines_per_manifest[0.0]) == {1}
    assert max(lines_per_manifest[1000.0]) > 1
    assert sum(lines_per_manifest[0.0]) == sum(lines_per_manifest[1000.0])
