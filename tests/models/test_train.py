"""End-to-end training on tiny data (CPU smoke runs): card and files, the grouped split, gates
that stop registration (a failed INT8 gate, a regressed model without --force), the regression
check across a features version (the old model's columns picked by name), datasets from a
directory equal to the in-memory ones, training from a saved teacher checkpoint, the kept student
as the distillation rule asks."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
import torch

from linewatch.simulator.config import SimulatorConfig
from models.config import QuantizeConfig, StudentConfig, TeacherConfig, TrainConfig
from models.data.directory import DatasetDirectoryError, load_directory
from models.data.domain_data import build_domain_dataset
from models.data.simulated import simulated_samples
from models.registry import ModelRegistry
from models.training import AccuracyGateError, train_modality
from models.training.fitting import fit_models
from models.training.train import FILES, METRIC_ROLES, package
from pipeline.features.vector_history import vector_names

torch.set_num_threads(1)
TINY = TeacherConfig(hidden_size=16, num_layers=1, num_heads=2, intermediate_size=32, epochs=2)
LOOSE = {"min_macro_f1": 0.0, "min_visible_recall": 0.0, "max_healthy_fpr": 1.0, "student_max_drop": 1.0,
         "int8_max_drop": 1.0}


def tiny_config(**gates: float) -> TrainConfig:
    cfg = TrainConfig(teacher=TINY, student=StudentConfig(hidden=16, epochs=3), progress=False, latency_runs=3,
                      quantize=QuantizeConfig(calibration_samples=16), reference_samples=16, batch_size=16)
    cfg.gates = cfg.gates.model_copy(update={**LOOSE, **gates})
    return cfg


@pytest.fixture(scope="module")
def tiny():
    """Domain-randomised data: 48 samples on 24 machines, and 18 of 9 unseen-type machines."""
    return build_domain_dataset(8, n_assets=24, seed=5), build_domain_dataset(3, n_assets=9, seed=6, domain="unseen")


@pytest.mark.parametrize("modality", ["plc", "thermal", "audio"])
def test_train_registers_a_complete_version(modality: str, tiny, tmp_path) -> None:
    train, unseen = tiny
    card = train_modality(modality, train.samples(modality), tmp_path / "reg", tiny_config(),
                          unseen=unseen.samples(modality))
    reg = ModelRegistry(tmp_path / "reg")
    reg.verify(modality)
    model = reg.latest(modality)
    assert model.version == card.version == "v1"
    for role in ("student_fp32", "student_int8_cpu", "student_int8_tensorrt", "teacher_fp32", "reference"):
        assert model.path(role).name == FILES[role]
    assert (model.directory / "teacher" / "config.json").is_file()
    for png in ("confusion.int8_cpu.png", "recall_vs_severity.png", "reliability.int8_cpu.png",
                "reliability.uncalibrated.png"):
        assert (model.directory / png).read_bytes()[:4] == b"\x89PNG", png
    assert tuple(card.metrics) == METRIC_ROLES
    n_test = card.dataset["n_test"]
    for report in card.metrics.values():
        assert 0.0 <= report["macro_f1"] <= 1.0
        assert np.asarray(report["confusion"]).sum() == n_test == report["n_samples"]
    assert set(card.evaluation) == {"test", "unseen"}
    assert card.evaluation["unseen"]["int8_cpu"]["report"]["n_samples"] == unseen.n
    names = [c["name"] for c in card.gates["checks"]]
    assert names[:3] == ["student_vs_teacher", "int8_cpu_vs_fp32", "int8_tensorrt_vs_fp32"]
    assert "floor_macro_f1" in names and "floor_healthy_fpr" in names and "no_regression" not in names
    serving = card.probability_calibration["serving"]
    assert serving["temperature"] > 0 and len(serving["class_bias"]) == 6
    assert card.student["kept"] in ("student_label_only", "student_distilled")
    assert card.distillation["kept"] == card.student["kept"]
    assert card.teacher["trained_on"]["device"].startswith("cpu")
    assert card.input["shape"] == list(train.samples(modality).sample_shape)
    assert card.quantization["tensorrt"]["extra_options"]["ActivationSymmetric"] is True
    assert {l.batch for l in card.latency_ms} == {1, 32}
    ref = np.load(model.path("reference"), allow_pickle=False)
    assert ref["features"].shape == (16, len(card.reference["names"]))
    assert json.loads((model.directory / "card.json").read_text())["version"] == "v1"
    assert "Teacher, students, INT8 on the same splits" in (model.directory / "card.md").read_text()


def test_split_is_grouped_by_machine(tiny) -> None:
    """No machine in two splits: test metrics are on machines the models never saw."""
    train, _ = tiny
    data = train.samples("plc")
    bundle = fit_models("plc", data, tiny_config())
    machines = {k: set(data.groups[np.asarray(v)].tolist()) for k, v in bundle.split.items()}
    assert machines["train"] and machines["val"] and machines["test"]
    assert not machines["train"] & machines["test"]
    assert not machines["train"] & machines["val"]
    assert not machines["val"] & machines["test"]
    assert sum(len(v) for v in bundle.split.values()) == data.inputs.shape[0]


def test_the_kept_student_follows_the_distillation_rule(tiny) -> None:
    """``auto`` keeps the student with the better validation macro-F1; ``always`` / ``never`` keep the
    distilled / label-only one whatever validation says (docs/models.md, "Thermal v7's control runs":
    a label-only student that won on validation was the worst of five on another generator's machines)."""
    data = tiny[0].samples("plc")
    kept = {rule: fit_models("plc", data, tiny_config().model_copy(update={"distillation": rule}))
            for rule in ("auto", "always", "never")}
    assert kept["always"].chosen == "student_distilled"
    assert kept["never"].chosen == "student_label_only"
    f1 = kept["auto"].val_macro_f1
    assert kept["auto"].chosen == ("student_distilled" if f1["student_distilled"] > f1["student_label_only"]
                                   else "student_label_only")
    # the same seed, split and students under every rule: only the choice differs
    assert kept["always"].val_macro_f1 == f1 == kept["never"].val_macro_f1
    assert all(k.split == kept["auto"].split for k in kept.values())


def test_failed_gate_raises_and_registers_nothing(tiny, tmp_path) -> None:
    # A negative tolerance demands INT8 beat FP32 by 50 points: impossible, so the gate must fail.
    with pytest.raises(AccuracyGateError, match="INT8 cpu macro-F1") as err:
        train_modality("plc", tiny[0].samples("plc"), tmp_path / "reg", tiny_config(int8_max_drop=-0.5))
    assert "Nothing was registered" in str(err.value)
    assert ModelRegistry(tmp_path / "reg").versions("plc") == []
    assert not [p for p in (tmp_path / "reg").iterdir() if p.name.startswith(".staging")]


def test_gate_refuses_a_regressed_model_unless_forced(tmp_path) -> None:
    """The registered v1 is re-scored on the new test split; a v2 that calls everything healthy is
    refused, and registered only with force (recorded in its card)."""
    # enough windows and epochs that v1 has learnt something: a 3-epoch student scored on ~12
    # test windows of the shared tiny fleet can itself be no better than "all healthy"
    data = build_domain_dataset(25, n_assets=30, seed=5).samples("plc")
    cfg = tiny_config(regression_tolerance=0.0)
    cfg.student = cfg.student.model_copy(update={"epochs": 30})
    bundle = fit_models("plc", data, cfg.model_copy(update={"val_fpr_budget": 1.0}))
    raw = replace(bundle.calibrations[bundle.chosen], temperature=1.0, class_bias=(0.0,) * 6)
    bundle.calibrations[bundle.chosen] = raw
    good = package(bundle, data, tmp_path / "reg", cfg)
    assert good.version == "v1"
    # the same student with a prior that makes it call every machine healthy
    bundle.calibrations[bundle.chosen] = replace(raw, class_bias=(50.0, 0.0, 0.0, 0.0, 0.0, 0.0))
    with pytest.raises(AccuracyGateError, match="no_regression|registered v1") as err:
        package(bundle, data, tmp_path / "reg", cfg)
    assert "--force" in str(err.value)
    assert ModelRegistry(tmp_path / "reg").versions("plc") == ["v1"]
    forced = package(bundle, data, tmp_path / "reg", cfg, force=True)
    assert forced.version == "v2" and forced.gates["forced"] is True
    check = next(c for c in forced.gates["checks"] if c["name"] == "no_regression")
    assert not check["passed"] and "re-scored on this test split" in check["detail"]


def test_the_gate_re_scores_a_model_of_an_earlier_features_version_on_its_own_columns(tiny, tmp_path) -> None:
    """A registered audio model of features v3 (the 79 clip values) is re-scored on the v4 test
    split, its columns picked by name, instead of compared with a number recorded on other data."""
    data = tiny[0].samples("audio")
    n3 = len(vector_names("audio", 3) or ())
    assert 0 < n3 < data.inputs.shape[1]
    old = replace(data, inputs=data.inputs[:, :n3], features_version=3,
                  reference=None if data.reference is None else data.reference[:, :n3],
                  reference_names=data.reference_names[:n3])
    cfg = tiny_config()
    v1 = package(fit_models("audio", old, cfg), old, tmp_path / "reg", cfg)
    assert v1.features_version == 3 and v1.input["shape"] == [n3]
    v2 = package(fit_models("audio", data, cfg), data, tmp_path / "reg", cfg, force=True)
    check = next(c for c in v2.gates["checks"] if c["name"] == "no_regression")
    assert "re-scored on this test split" in check["detail"] and "picked from the new vector by name" in check["detail"]


def test_training_from_a_saved_teacher_checkpoint(tiny, tmp_path) -> None:
    data = tiny[0].samples("plc")
    train_modality("plc", data, tmp_path / "reg", tiny_config())
    saved = ModelRegistry(tmp_path / "reg").latest("plc").directory / "teacher"
    cfg = tiny_config()
    cfg.teacher = TINY.model_copy(update={"checkpoint": saved, "epochs": 0})
    first = ModelRegistry(tmp_path / "reg").load_card("plc")
    card = train_modality("plc", data, tmp_path / "reg", cfg, force=True)
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
        assert disk.groups is not None and disk.groups.tolist() == memory[modality].groups.tolist()
        np.testing.assert_allclose(disk.inputs, memory[modality].inputs, rtol=1e-4, atol=1e-4, err_msg=modality)


def test_directory_errors_say_what_to_fix(tmp_path) -> None:
    with pytest.raises(DatasetDirectoryError, match="labels.csv"):
        load_directory(tmp_path, "thermal")
    (tmp_path / "labels.csv").write_text("sample_id,fault,thermal_path\nS1,overheated,thermal/S1.tiff\n")
    with pytest.raises(DatasetDirectoryError, match="not one of"):
        load_directory(tmp_path, "thermal")
