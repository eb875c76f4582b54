"""The ensemble student (``StudentConfig.members``): each member learns with its own loss, the
ensemble serves the mean of their logits, and it survives what a single MLP goes through (bundle
save/load, ONNX export with parity, INT8, gates, registration)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from models.config import StudentConfig
from models.export.onnx_export import check_parity, export_onnx
from models.families import family
from models.plc.student import PlcStudent, StudentEnsemble
from models.registry import ModelRegistry
from models.training import train_modality
from models.training.fitting import FitBundle, fit_models
from models.training.loop import fit, predict_logits
from tests.models.test_train import tiny_config

torch.set_num_threads(1)
CLASSES = ("a", "b", "c")


def _blobs(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Three Gaussian blobs in 6 dimensions (separable: every member can learn them alone)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    centres = np.eye(3, 6, dtype=np.float32) * 3.0
    return (centres[y] + rng.normal(0, 0.5, (n, 6))).astype(np.float32), y


def _ensemble(members: int) -> StudentEnsemble:
    stats = (np.zeros(6, np.float32), np.ones(6, np.float32))
    model = family("plc").build_student(StudentConfig(hidden=16, members=members), len(CLASSES), (6,), stats)
    assert isinstance(model, StudentEnsemble)
    return model


def test_members_start_apart_and_the_ensemble_serves_their_mean() -> None:
    torch.manual_seed(0)
    model = _ensemble(3)
    first = [m.classifier.weight.detach().clone() for m in model.members]
    assert not torch.allclose(first[0], first[1]), "members must not share their initial weights"
    x, y = _blobs(600, 0)
    xv, yv = _blobs(300, 1)
    fit(model, x, y, xv, yv, CLASSES, epochs=5, lr=3e-3, weight_decay=1e-4, batch_size=64, patience=5, seed=0,
        desc="ensemble", progress=False)
    with torch.no_grad():
        member_logits = model.member_logits(torch.from_numpy(xv))
    np.testing.assert_allclose(predict_logits(model, xv), member_logits.mean(0).numpy(), rtol=1e-5, atol=1e-5)
    assert not torch.allclose(member_logits[0], member_logits[1])
    assert float((predict_logits(model, xv).argmax(1) == yv).mean()) > 0.95


def test_each_member_learns_exactly_as_it_would_alone() -> None:
    """Own losses: a member's updates depend on its own logits only, so one epoch in the ensemble
    leaves it where the same MLP trained alone on the same batches ends (a loss on the mean
    logits would couple the members and move it elsewhere)."""
    torch.manual_seed(0)
    cfg = StudentConfig(hidden=16, members=2, dropout=0.0)
    stats = (np.zeros(6, np.float32), np.ones(6, np.float32))
    model = family("plc").build_student(cfg, len(CLASSES), (6,), stats)
    alone = family("plc").build_student(cfg.model_copy(update={"members": 1}), len(CLASSES), (6,), stats)
    alone.body.load_state_dict(model.members[0].body.state_dict())
    alone.classifier.load_state_dict(model.members[0].classifier.state_dict())
    x, y = _blobs(256, 0)
    xv, yv = _blobs(64, 1)
    for m in (model, alone):
        fit(m, x, y, xv, yv, CLASSES, epochs=1, lr=1e-2, weight_decay=1e-4, batch_size=32, patience=1, seed=3,
            desc="one epoch", progress=False)
    moved = (alone.classifier.weight - model.members[1].classifier.weight).abs().max().detach()
    assert float(moved) > 1e-2  # the other member is another model
    torch.testing.assert_close(model.members[0].classifier.weight, alone.classifier.weight, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(model.members[0].body[0].weight, alone.body[0].weight, rtol=1e-4, atol=1e-5)


def test_one_member_is_the_single_mlp_of_earlier_bundles() -> None:
    stats = (np.zeros(6, np.float32), np.ones(6, np.float32))
    model = family("plc").build_student(StudentConfig(hidden=16), len(CLASSES), (6,), stats)
    assert isinstance(model, PlcStudent) and "members" not in " ".join(model.state_dict())


def test_ensemble_exports_to_one_onnx_graph_with_parity(tmp_path) -> None:
    torch.manual_seed(0)
    model = _ensemble(4).eval()
    x = np.random.default_rng(0).normal(size=(9, 6)).astype(np.float32)
    x[0, 2] = np.nan  # a missing value goes through the shared standardiser once
    report = check_parity(model, export_onnx(model, (6,), tmp_path / "ensemble.onnx"), x, atol=1e-4)
    assert report.argmax_agreement == 1.0 and report.max_abs_diff < 1e-4


@pytest.fixture(scope="module")
def ensemble_bundle(tmp_path_factory):
    from models.data.domain_data import build_domain_dataset

    data = build_domain_dataset(8, n_assets=24, seed=5).samples("thermal")
    cfg = tiny_config()
    cfg.student = cfg.student.model_copy(update={"members": 3})
    return data, cfg, fit_models("thermal", data, cfg)


def test_a_bundle_of_ensembles_saves_and_loads_the_same_models(ensemble_bundle, tmp_path) -> None:
    data, _, bundle = ensemble_bundle
    loaded = FitBundle.load(bundle.save(tmp_path / "bundle"))
    for role in ("student_label_only", "student_distilled"):
        assert isinstance(loaded.models[role], StudentEnsemble) and len(loaded.models[role].members) == 3
        np.testing.assert_allclose(predict_logits(loaded.models[role], data.inputs),
                                   predict_logits(bundle.models[role], data.inputs), rtol=1e-5, atol=1e-5)


def test_an_ensemble_is_packaged_like_a_single_student(ensemble_bundle, tmp_path) -> None:
    data, cfg, _ = ensemble_bundle
    card = train_modality("thermal", data, tmp_path / "reg", cfg)
    single = StudentConfig(hidden=16)
    one = family("thermal").build_student(single, len(data.classes), data.sample_shape,
                                          (np.zeros(data.sample_shape, np.float32), np.ones(data.sample_shape, np.float32)))
    assert card.student["config"]["members"] == 3
    assert card.student["parameters"] == 3 * sum(p.numel() for p in one.parameters())
    assert {c["name"] for c in card.gates["checks"]} >= {"int8_cpu_vs_fp32", "int8_tensorrt_vs_fp32"}
    assert ModelRegistry(tmp_path / "reg").latest("thermal").version == card.version
