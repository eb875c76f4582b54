"""End-to-end training on tiny simulated data: card, files, honest metrics, gates that stop
registration, datasets from a directory equal to the in-memory ones, and training that
starts from a saved teacher checkpoint."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from linewatch.simulator.config import SimulatorConfig
from models.config import QuantizeConfig, StudentConfig, TeacherConfig, TrainConfig
from models.data.directory import DatasetDirectoryError, load_directory
from models.data.simulated import simulated_samples
from models.registry import ModelRegistry
from models.training import AccuracyGateError, train_modality
from models.training.train import FILES

torch.set_num_threads(1)
TINY = TeacherConfig(hidden_size=16, num_layers=1, num_heads=2, intermediate_size=32, epochs=2, thermal_patch=20)


def tiny_config(**gates: float) -> TrainConfig:
    cfg = TrainConfig(teacher=TINY, student=StudentConfig(width=4, hidden=16, epochs=2), progress=False,
                      latency_runs=3, quantize=QuantizeConfig(calibration_samples=16), reference_samples=16,
                      batch_size=16)
    cfg.gates = cfg.gates.model_copy(update={"student_max_drop": 1.0, "int8_max_drop": 1.0, **gates})
    return cfg


@pytest.fixture(scope="module")
def tiny_data():
    return simulated_samples(6)


@pytest.mark.parametrize("modality", ["plc", "thermal"])
def test_train_registers_a_complete_version(modality: str, tiny_data, tmp_path) -> None:
    card = train_modality(modality, tiny_data[modality], tmp_path / "reg", tiny_config())
    reg = ModelRegistry(tmp_path / "reg")
    reg.verify(modality)
    model = reg.latest(modality)
    assert model.version == card.version == "v1"
    for role in ("student_fp32", "student_int8_cpu", "student_int8_tensorrt", "teacher_fp32", "reference"):
        assert model.path(role).name == FILES[role]
    assert (model.directory / "teacher" / "config.json").is_file()
    assert (model.directory / "confusion.int8_cpu.png").read_bytes()[:4] == b"\x89PNG"
    assert set(card.metrics) == {"teacher", "student", "int8_cpu", "int8_tensorrt"}
    n_test = card.dataset["n_test"]
    for report in card.metrics.values():
        assert 0.0 <= report["macro_f1"] <= 1.0
        assert np.asarray(report["confusion"]).sum() == n_test == report["n_samples"]
    assert [c["name"] for c in card.gates["checks"]] == ["student_vs_teacher", "int8_cpu_vs_fp32", "int8_tensorrt_vs_fp32"]
    assert card.input["shape"] == list(tiny_data[modality].sample_shape)
    assert card.quantization["tensorrt"]["extra_options"]["ActivationSymmetric"] is True
    assert len(card.calibration["digest"]) == 64 and card.calibration["n_samples"] == 16
    assert {l.batch for l in card.latency_ms} == {1, 32}
    ref = np.load(model.path("reference"), allow_pickle=False)
    assert ref["features"].shape == (16, len(card.reference["names"]))
    assert json.loads((model.directory / "card.json").read_text())["version"] == "v1"


def test_failed_gate_raises_and_registers_nothing(tiny_data, tmp_path) -> None:
    # A negative tolerance demands INT8 beat FP32 by 50 points: impossible, so the gate must fail.
    with pytest.raises(AccuracyGateError, match="INT8 cpu macro-F1") as err:
        train_modality("plc", tiny_data["plc"], tmp_path / "reg", tiny_config(int8_max_drop=-0.5))
    assert "Nothing was registered" in str(err.value)
    assert ModelRegistry(tmp_path / "reg").versions("plc") == []
    assert not [p for p in (tmp_path / "reg").iterdir() if p.name.startswith(".staging")]


def test_training_from_a_saved_teacher_checkpoint(tiny_data, tmp_path) -> None:
    train_modality("plc", tiny_data["plc"], tmp_path / "reg", tiny_config())
    saved = ModelRegistry(tmp_path / "reg").latest("plc").directory / "teacher"
    cfg = tiny_config()
    cfg.teacher = TINY.model_copy(update={"checkpoint": saved, "epochs": 0})
    first = ModelRegistry(tmp_path / "reg").load_card("plc")
    card = train_modality("plc", tiny_data["plc"], tmp_path / "reg", cfg)
    assert card.version == "v2" and card.teacher["source"] == str(saved)
    # Same data, same split, teacher used as-is: the teacher's test metrics are reproduced.
    assert card.metrics["teacher"]["macro_f1"] == pytest.approx(first.metrics["teacher"]["macro_f1"])


def test_directory_dataset_equals_in_memory_dataset(tmp_path) -> None:
    from linewatch.simulator.dataset import generate_dataset

    cfg = SimulatorConfig(seed=3)
    generate_dataset(tmp_path / "ds", 2, cfg, progress=False)
    memory = simulated_samples(2, cfg)
    for modality in ("plc", "thermal", "audio"):
        disk = load_directory(tmp_path / "ds", modality)
        assert disk.labels.tolist() == memory[modality].labels.tolist()
        np.testing.assert_allclose(disk.inputs, memory[modality].inputs, rtol=1e-5, atol=1e-5, err_msg=modality)


def test_directory_errors_say_what_to_fix(tmp_path) -> None:
    with pytest.raises(DatasetDirectoryError, match="labels.csv"):
        load_directory(tmp_path, "thermal")
    (tmp_path / "labels.csv").write_text("sample_id,fault,thermal_path\nS1,overheated,thermal/S1.tiff\n")
    with pytest.raises(DatasetDirectoryError, match="not one of"):
        load_directory(tmp_path, "thermal")
