"""Teachers: built from HF configs, saved with save_pretrained, loaded back from a local
checkpoint directory (the path a user's own checkpoint takes)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import (
    ASTConfig,
    ASTForAudioClassification,
    ViTConfig,
    ViTForImageClassification,
)

from models.config import TeacherConfig
from models.families import family, image_family

torch.set_num_threads(1)
CLASSES = ("normal", "bearing_wear", "electrical_overheating", "cooling_failure", "imbalance", "cavitation")
SHAPES = {"plc": (37,), "thermal": (120, 160), "audio": (64, 101)}


def fam_of(modality: str):
    """PLC: the vector family (every shipped model); thermal/audio: the image families (ViT/AST
    teachers, CNN students: the ablation and users' own ViT/AST checkpoints)."""
    return family("plc") if modality == "plc" else image_family(modality)
SMALL = TeacherConfig(hidden_size=16, num_layers=1, num_heads=2, intermediate_size=32, epochs=1)


def _stats(modality: str) -> tuple[np.ndarray, np.ndarray]:
    shape = SHAPES[modality] if fam_of(modality).per_feature_standardization else (1,) * len(SHAPES[modality])
    rng = np.random.default_rng(1)
    return rng.normal(size=shape).astype(np.float32), rng.uniform(0.5, 2, size=shape).astype(np.float32)


@pytest.mark.parametrize("modality", ["plc", "thermal", "audio"])
def test_saved_teacher_loads_back_with_identical_outputs(modality: str, tmp_path) -> None:
    torch.manual_seed(0)
    fam = fam_of(modality)
    teacher = fam.build_teacher(SMALL, CLASSES, SHAPES[modality], _stats(modality)).eval()
    x = torch.randn(3, *SHAPES[modality])
    saved = teacher.save(tmp_path / "ckpt")
    assert (saved / "config.json").is_file() and (saved / "model.safetensors").is_file()
    # Different fallback statistics: the saved standardiser must win over them.
    other = (np.zeros_like(_stats(modality)[0]), np.ones_like(_stats(modality)[1]))
    loaded = fam.build_teacher(SMALL.model_copy(update={"checkpoint": saved}), CLASSES, SHAPES[modality], other).eval()
    with torch.no_grad():
        np.testing.assert_allclose(loaded(x).numpy(), teacher(x).numpy(), atol=1e-5)
    assert loaded.hf_model.config.id2label[1] == "bearing_wear"


def test_user_vit_checkpoint_with_rgb_and_other_size_and_labels(tmp_path) -> None:
    """A checkpoint made elsewhere (3 channels, 32x32 images, 2 labels) still serves 6 classes."""
    cfg = ViTConfig(image_size=32, patch_size=8, num_channels=3, hidden_size=16, num_hidden_layers=1,
                    num_attention_heads=2, intermediate_size=32, num_labels=2)
    ViTForImageClassification(cfg).save_pretrained(tmp_path / "user-vit")
    teacher = image_family("thermal").build_teacher(
        TeacherConfig(checkpoint=tmp_path / "user-vit"), CLASSES, SHAPES["thermal"], _stats("thermal")
    ).eval()
    with torch.no_grad():
        out = teacher(torch.randn(2, 120, 160))
    assert out.shape == (2, len(CLASSES))
    assert teacher.hf_model.config.num_channels == 3


def test_user_ast_checkpoint_with_other_spectrogram_size(tmp_path) -> None:
    cfg = ASTConfig(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
                    num_mel_bins=32, max_length=64, num_labels=3)
    ASTForAudioClassification(cfg).save_pretrained(tmp_path / "user-ast")
    teacher = image_family("audio").build_teacher(
        TeacherConfig(checkpoint=tmp_path / "user-ast"), CLASSES, SHAPES["audio"], _stats("audio")
    ).eval()
    with torch.no_grad():
        assert teacher(torch.randn(2, 64, 101)).shape == (2, len(CLASSES))


def test_plc_checkpoint_with_wrong_feature_count_is_refused(tmp_path) -> None:
    saved = family("plc").build_teacher(SMALL, CLASSES, (12,), (np.zeros(12), np.ones(12))).save(tmp_path / "p")
    with pytest.raises(ValueError, match="expects 12 PLC features"):
        family("plc").build_teacher(SMALL.model_copy(update={"checkpoint": saved}), CLASSES, (37,), _stats("plc"))


def test_checkpoint_dir_without_config_says_what_to_do(tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match="save_pretrained"):
        image_family("thermal").build_teacher(TeacherConfig(checkpoint=tmp_path), CLASSES, SHAPES["thermal"], _stats("thermal"))
