"""Registry: versions, latest, paths by role, SHA-256 verification, cards as JSON and
Markdown, and the models shipped in models/default."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from models.registry import DEFAULT_ROOT, IntegrityError, ModelCard, ModelRegistry, default_registry
from models.registry.store import file_entry


def _staged_version(tmp: Path, name: str, f1: float) -> Path:
    staging = tmp / name
    staging.mkdir()
    (staging / "student.int8.cpu.onnx").write_bytes(b"int8 " + name.encode())
    (staging / "student.fp32.onnx").write_bytes(b"fp32 " + name.encode())
    report = {"macro_f1": f1, "accuracy": f1, "n_samples": 10, "per_class": {"normal": {"f1": f1}}, "confusion": [[1]]}
    card = ModelCard(
        name="thermal-student", modality="thermal", version="staging", created_at="2026-11-29T15:00:00Z",
        classes=["normal"], input={"name": "input", "shape": [120, 160], "producer": "p", "output_name": "logits",
                                   "output": "logits"},
        features_version=1, preprocessing_version=1,
        teacher={"architecture": "vit", "parameters": 1, "source": "config"},
        student={"architecture": "cnn", "parameters": 1},
        metrics={"teacher": report, "student": report}, gates={"passed": True, "checks": []},
        parity={"max_abs_diff": 0.0, "atol": 1e-3}, quantization={}, calibration={"n_samples": 1, "digest": "x"},
        dataset={"source": "test"}, reference={"path": "reference.npz", "n_samples": 0, "kind": "none"},
        files={"student_int8_cpu": file_entry(staging, "student.int8.cpu.onnx"),
               "student_fp32": file_entry(staging, "student.fp32.onnx")},
    )
    card.save(staging)
    return staging


def test_publish_latest_paths_and_cards(tmp_path) -> None:
    reg = ModelRegistry(tmp_path / "reg")
    with pytest.raises(LookupError, match="linewatch train"):
        reg.latest("thermal")
    v1, _ = reg.publish("thermal", _staged_version(tmp_path, "a", 0.5))
    v2, d2 = reg.publish("thermal", _staged_version(tmp_path, "b", 0.6))
    assert (v1, v2) == ("v1", "v2") and reg.versions("thermal") == ["v1", "v2"]
    latest = reg.latest("thermal")
    assert latest.version == "v2" and latest.card.version == "v2"  # card rewritten on publish
    assert reg.path_of("thermal") == d2 / "student.int8.cpu.onnx"  # default role: serving_role
    assert reg.path_of("thermal", "student_fp32", "v1").read_bytes() == b"fp32 a"
    assert reg.load_card("thermal", "v1").macro_f1("student") == 0.5
    assert "# thermal-student v2" in (d2 / "card.md").read_text()
    assert json.loads((d2 / "card.json").read_text())["modality"] == "thermal"
    assert reg.modalities() == ["thermal"]
    with pytest.raises(KeyError, match="roles"):
        latest.path("teacher_fp32")
    with pytest.raises(LookupError, match="available"):
        reg.get("thermal", "v9")


def test_verify_detects_a_modified_file(tmp_path) -> None:
    reg = ModelRegistry(tmp_path / "reg")
    _, d = reg.publish("thermal", _staged_version(tmp_path, "a", 0.5))
    reg.verify("thermal")
    (d / "student.int8.cpu.onnx").write_bytes(b"tampered")
    with pytest.raises(IntegrityError, match="modified after registration"):
        reg.verify("thermal")
    (d / "student.int8.cpu.onnx").unlink()
    with pytest.raises(IntegrityError, match="missing"):
        reg.verify("thermal")


def test_half_written_versions_are_invisible(tmp_path) -> None:
    reg = ModelRegistry(tmp_path / "reg")
    (tmp_path / "reg" / "thermal" / "v1").mkdir(parents=True)  # no card.json yet
    assert reg.versions("thermal") == []
    v, _ = reg.publish("thermal", _staged_version(tmp_path, "a", 0.5))
    assert v == "v2"


@pytest.mark.skipif(not (DEFAULT_ROOT / "thermal").is_dir(), reason="shipped models not generated yet")
@pytest.mark.parametrize("modality", ["plc", "thermal", "audio"])
def test_shipped_default_models_verify_and_run(modality: str) -> None:
    import onnxruntime as ort

    reg = default_registry()
    model = reg.latest(modality)
    reg.verify(modality)
    card = model.card
    assert card.classes[0] == "normal" and len(card.classes) == 6
    assert card.gates["passed"]
    # every gate passed, except a no-regression check the release overrode (--force, recorded)
    assert all(c["passed"] or (c["name"] == "no_regression" and card.gates["forced"]) for c in card.gates["checks"])
    for role in ("student_int8_cpu", "student_int8_tensorrt", "student_fp32"):
        session = ort.InferenceSession(str(model.path(role)), providers=["CPUExecutionProvider"])
        x = np.zeros((2, *card.input["shape"]), np.float32)
        assert session.run(["logits"], {"input": x})[0].shape == (2, 6)
    ref = np.load(model.directory / card.reference["path"], allow_pickle=False)
    assert ref["features"].shape == (card.reference["n_samples"], len(card.reference["names"]))
    files = [p for p in DEFAULT_ROOT.rglob("*") if p.is_file()]
    teachers = [p for p in files if p.name == "teacher.fp32.onnx"]  # the shadow teachers (governance drift)
    total = sum(p.stat().st_size for p in files if p not in teachers)
    assert total < 9 * 1024 * 1024, f"shipped models are {total / 1e6:.1f} MB; keep them under 9 MB"
    assert all(p.stat().st_size < 10 * 1024 * 1024 for p in teachers), "keep each shipped teacher under 10 MB"
