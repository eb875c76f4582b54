"""Files written by the simulator read back with standard tools in the documented formats."""

from __future__ import annotations

import json
import re
import wave
from pathlib import Path

import numpy as np
import pandas as pd
import soundfile as sf
import tifffile

from linewatch.simulator import FAULT_CLASSES, GT_COLUMNS, PLC_TAGS, QUALITIES, Factory, GroundTruth, SimulatorConfig
from linewatch.simulator.alarms import ALARM_LINE_REGEX

STAMP = r"\d{8}T\d{9}"
ISO = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z"


def test_layout_and_no_hidden_files(batch_dir: Path) -> None:
    for name in ("assets.json", "ground_truth.csv", "plc", "alarms", "thermal/frames", "audio/clips"):
        assert (batch_dir / name).exists(), name
    hidden = [p for p in batch_dir.rglob("*") if p.name.startswith(".")]
    assert hidden == [batch_dir / ".staging"]  # where manifests were staged; no file left in it
    assert list((batch_dir / ".staging").iterdir()) == []


def test_thermal_frames_read_back(batch_dir: Path, batch_config: SimulatorConfig) -> None:
    frames = sorted((batch_dir / "thermal" / "frames").rglob("*.tiff"))
    assert len(frames) == 3 * 30 * int(batch_config.thermal_fps)
    for p in frames[:: max(1, len(frames) // 12)]:
        assert re.fullmatch(rf"(PMP|PRS|CNV)-\d\d-{STAMP}\.tiff", p.name)
        assert p.parent.name == p.name[:6]
        img = tifffile.imread(p)
        assert img.dtype == np.uint16 and img.shape == (120, 160)
        with tifffile.TiffFile(p) as tif:
            assert len(tif.pages) == 1
        # centikelvin: a factory hall scene lies between 0 and 150 degC
        assert 27_300 < int(img.min()) and int(img.max()) < 42_300
        assert abs(np.median(img) / 100.0 - 273.15 - 24.0) < 12.0


def test_audio_clips_read_back(batch_dir: Path) -> None:
    clips = sorted((batch_dir / "audio" / "clips").rglob("*.wav"))
    assert len(clips) == 3 * 30
    for p in clips[:: max(1, len(clips) // 8)]:
        assert re.fullmatch(rf"(PMP|PRS|CNV)-\d\d-{STAMP}\.wav", p.name)
        info = sf.info(p)
        assert (info.samplerate, info.channels, info.frames, info.subtype) == (16000, 1, 16000, "PCM_16")
        with wave.open(str(p)) as w:
            assert (w.getframerate(), w.getnchannels(), w.getsampwidth(), w.getnframes()) == (16000, 1, 2, 16000)
        data, rate = sf.read(p, dtype="int16")
        assert data.dtype == np.int16 and data.shape == (16000,) and rate == 16000
        assert 50 < np.std(data.astype(np.float64)) < 20000


def test_plc_csv_long_format(batch_dir: Path, batch_config: SimulatorConfig) -> None:
    files = sorted((batch_dir / "plc").glob("*.csv"))
    assert len(files) == 3 * 3  # 3 assets x 3 windows of 10 s
    for p in files:
        assert re.fullmatch(rf"plc-(PMP|PRS|CNV)-\d\d-{STAMP}\.csv", p.name)
    df = pd.concat([pd.read_csv(p) for p in files])
    assert list(df.columns) == ["timestamp", "tag", "value", "quality", "unit"]
    assert df["value"].dtype == np.float64
    assert df["timestamp"].str.fullmatch(ISO).all()
    assert set(df["quality"]) <= set(QUALITIES)
    assert set(df["tag"].str.split(".").str[1]) == set(PLC_TAGS)
    assert len(df) == 3 * 30 * int(batch_config.plc_rate_hz) * len(PLC_TAGS)
    units = df.groupby(df["tag"].str.split(".").str[1])["unit"].first().to_dict()
    assert units["bearing_temp_c"] == "degC" and units["vibration_rms_mm_s"] == "mm/s"
    ts = pd.to_datetime(df["timestamp"])
    assert ts.dt.tz is not None
    good = df[(df["quality"] == "Good") & df["tag"].str.endswith("speed_rpm")]
    assert good["value"].between(0, 3300).all()


def test_plc_jsonl_variant(tmp_path: Path) -> None:
    cfg = SimulatorConfig(seed=3, plc_format="jsonl", batch_roll_seconds=5.0)
    Factory(cfg, n_assets=1).run_batch(tmp_path, minutes=5 / 60, progress=False)
    files = sorted((tmp_path / "plc").glob("plc-PMP-01-*.jsonl"))
    assert files
    df = pd.read_json(files[0], lines=True)
    assert list(df.columns) == ["timestamp", "tag", "value", "quality", "unit"]
    assert len(df) == 5 * 10 * len(PLC_TAGS)


def test_alarm_lines_parse(batch_dir: Path) -> None:
    lines = [line for p in sorted((batch_dir / "alarms").glob("alarms-*.log"))
             for line in p.read_text().splitlines()]
    rx = re.compile(ALARM_LINE_REGEX)
    for line in lines:
        m = rx.match(line)
        assert m, line
        assert re.fullmatch(ISO, m.group(1))


def test_assets_json(batch_dir: Path) -> None:
    reg = json.loads((batch_dir / "assets.json").read_text())
    ids = [a["asset_id"] for a in reg["assets"]]
    assert ids == ["PMP-01", "PRS-02", "CNV-03"]
    for a in reg["assets"]:
        assert set(a["bearing_frequencies_hz"]) == {"ftf", "bpfo", "bpfi", "bsf"}
        assert {"motor_body", "de_bearing", "nde_bearing", "terminal_box", "coupling", "driven"} <= set(a["regions"])
        for x0, y0, x1, y1 in a["regions"].values():
            assert 0 <= x0 < x1 <= 160 and 0 <= y0 < y1 <= 120
        assert [t["name"] for t in a["tags"]] == list(PLC_TAGS)
        assert all(t["tag"].startswith(a["asset_id"] + ".") for t in a["tags"])
        assert all(t["valid_min"] < t["valid_max"] for t in a["tags"])


def test_ground_truth_csv(batch_dir: Path) -> None:
    df = pd.read_csv(batch_dir / "ground_truth.csv")
    assert list(df.columns) == list(GT_COLUMNS)
    assert set(df["fault"]) <= set(FAULT_CLASSES)
    assert (df["severity_end"] >= df["severity_start"] - 1e-9).all()
    for aid, g in df.groupby("asset_id"):
        start, end = pd.to_datetime(g["start"]), pd.to_datetime(g["end"])
        assert (end > start).all()
        assert (start.iloc[1:].to_numpy() == end.iloc[:-1].to_numpy()).all(), f"gaps in {aid}"
    gt = GroundTruth.read_csv(batch_dir / "ground_truth.csv")
    row = gt.intervals[0]
    assert gt.label_at(row.asset_id, row.start) == row.fault
