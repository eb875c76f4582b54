"""generate_dataset / generate_arrays: balanced labelled samples in the documented formats."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import soundfile as sf
import tifffile

from linewatch.simulator import (
    FAULT_CLASSES,
    LABEL_COLUMNS,
    LABEL_THRESHOLD,
    PLC_TAGS,
    SimulatorConfig,
    generate_arrays,
    generate_dataset,
)


def test_generate_dataset_files(tmp_path: Path) -> None:
    cfg = SimulatorConfig(seed=6)
    summary = generate_dataset(tmp_path, 3, cfg, progress=False)
    assert summary.n_samples == 18 and set(summary.per_class.values()) == {3}
    labels = pd.read_csv(tmp_path / "labels.csv", keep_default_na=False)
    assert list(labels.columns) == list(LABEL_COLUMNS)
    assert labels["sample_id"].is_unique
    assert sorted(labels["fault"].unique()) == sorted(FAULT_CLASSES)
    assert (labels.loc[labels["fault"] == "cavitation", "asset_type"] == "pump").all()
    faulty = labels[labels["fault"] != "normal"]
    assert (faulty["severity"] >= LABEL_THRESHOLD).all()
    assert (labels.loc[labels["fault"] == "normal", "severity"] < LABEL_THRESHOLD).all()
    for _, row in labels.iterrows():
        plc = pd.read_csv(tmp_path / row["plc_path"])
        assert list(plc.columns) == ["timestamp", "tag", "value", "quality", "unit"]
        assert len(plc) == 100 * len(PLC_TAGS)
        assert (plc["tag"].str.split(".").str[0] == row["asset_id"]).all()
        img = tifffile.imread(tmp_path / row["thermal_path"])
        assert img.shape == (120, 160) and img.dtype == np.uint16
        clip, rate = sf.read(tmp_path / row["audio_path"], dtype="int16")
        assert rate == 16000 and clip.shape == (16000,)
    assert (tmp_path / "assets.json").is_file() and (tmp_path / "dataset.json").is_file()


def test_generate_dataset_single_modality(tmp_path: Path) -> None:
    generate_dataset(tmp_path, 1, SimulatorConfig(seed=6), modalities=("audio",), progress=False)
    labels = pd.read_csv(tmp_path / "labels.csv", keep_default_na=False)
    assert (labels["plc_path"] == "").all() and (labels["thermal_path"] == "").all()
    assert not (tmp_path / "thermal").exists()
    assert all((tmp_path / p).is_file() for p in labels["audio_path"])


def test_generate_arrays_shapes_and_labels() -> None:
    d = generate_arrays(2, SimulatorConfig(seed=6))
    n = 2 * len(FAULT_CLASSES)
    assert d.plc.shape == (n, 100, len(PLC_TAGS)) and d.plc.dtype == np.float32
    assert d.plc_quality.shape == d.plc.shape
    assert d.thermal.shape == (n, 120, 160) and d.thermal.dtype == np.uint16
    assert d.audio.shape == (n, 16000) and d.audio.dtype == np.int16
    assert sorted(np.bincount(d.y).tolist()) == [2] * len(FAULT_CLASSES)
    assert [FAULT_CLASSES[k] for k in d.y] == [s.fault for s in d.specs]
    # the PLC window's last tick is the frame/clip time
    assert all(abs(s.t_s * 10 - round(s.t_s * 10)) < 1e-6 for s in d.specs)
