"""ONNX export: dynamic batch axis, ORT-vs-torch parity within the stated tolerance, and a
parity check that does fail when the ONNX file is not the model."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
import torch

from models.config import StudentConfig, TeacherConfig
from models.export.onnx_export import (
    OnnxParityError,
    check_parity,
    export_onnx,
    ort_logits,
    ort_session,
)
from models.families import family, image_family
from models.specs import INPUT_NAME, OUTPUT_NAME

torch.set_num_threads(1)
CLASSES = ("normal", "bearing_wear", "electrical_overheating", "cooling_failure", "imbalance", "cavitation")
SHAPES = {"plc": (37,), "thermal": (120, 160), "audio": (64, 101)}


def fam_of(modality: str):
    """PLC: the vector family (every shipped model); thermal/audio: the image families (ViT/AST
    teachers, CNN students: the ablation and users' own ViT/AST checkpoints)."""
    return family("plc") if modality == "plc" else image_family(modality)


def _stats(modality: str) -> tuple[np.ndarray, np.ndarray]:
    shape = SHAPES[modality] if fam_of(modality).per_feature_standardization else (1,) * len(SHAPES[modality])
    return np.full(shape, 0.5, np.float32), np.full(shape, 2.0, np.float32)


@pytest.mark.parametrize("modality", ["plc", "thermal", "audio"])
@pytest.mark.parametrize("kind", ["student", "teacher"])
def test_export_has_dynamic_batch_and_matches_torch(modality: str, kind: str, tmp_path) -> None:
    torch.manual_seed(0)
    fam = fam_of(modality)
    if kind == "student":
        model = fam.build_student(StudentConfig(width=4, hidden=16), len(CLASSES), SHAPES[modality], _stats(modality))
    else:
        small = TeacherConfig(hidden_size=16, num_layers=1, num_heads=2, intermediate_size=32)
        model = fam.build_teacher(small, CLASSES, SHAPES[modality], _stats(modality))
    path = export_onnx(model, SHAPES[modality], tmp_path / f"{kind}.onnx")
    graph = onnx.load(str(path)).graph
    assert [i.name for i in graph.input] == [INPUT_NAME] and [o.name for o in graph.output] == [OUTPUT_NAME]
    assert not graph.input[0].type.tensor_type.shape.dim[0].HasField("dim_value"), "batch axis must be symbolic"
    x = np.random.default_rng(0).normal(size=(7, *SHAPES[modality])).astype(np.float32)
    report = check_parity(model, path, x, atol=1e-4)
    assert report.max_abs_diff <= 1e-4 + 1e-3 * 10 and report.argmax_agreement == 1.0
    session = ort_session(path)
    for batch in (1, 3, 7):
        assert ort_logits(session, x[:batch], batch).shape == (batch, len(CLASSES))


def test_plc_nan_feature_is_handled_in_the_graph(tmp_path) -> None:
    model = family("plc").build_student(StudentConfig(hidden=16), len(CLASSES), (37,), _stats("plc"))
    path = export_onnx(model, (37,), tmp_path / "s.onnx")
    x = np.random.default_rng(1).normal(size=(2, 37)).astype(np.float32)
    x_nan = x.copy()
    x_nan[0, 3] = np.nan
    x_mean = x.copy()
    x_mean[0, 3] = 0.5  # the training mean: what a missing value stands for
    out = ort_logits(ort_session(path), x_nan)
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out, ort_logits(ort_session(path), x_mean), atol=1e-5)


def test_parity_check_fails_when_the_onnx_is_not_the_model(tmp_path) -> None:
    torch.manual_seed(0)
    model = family("plc").build_student(StudentConfig(hidden=16), len(CLASSES), (37,), _stats("plc"))
    path = export_onnx(model, (37,), tmp_path / "s.onnx")
    with torch.no_grad():
        model.classifier.bias += 0.5  # the torch model drifts away from its export
    x = np.random.default_rng(0).normal(size=(8, 37)).astype(np.float32)
    with pytest.raises(OnnxParityError, match="differ from torch"):
        check_parity(model, path, x, atol=1e-4)
