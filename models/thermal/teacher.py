"""Thermal teacher: a Hugging Face ViT built from a config, or loaded from a local checkpoint.

Frames are single-channel; a checkpoint trained on RGB (``num_channels=3``) gets the channel
repeated, and one trained at another resolution gets its position embeddings interpolated.
"""

from __future__ import annotations

from typing import TYPE_CHECKING


import numpy as np
import torch
from transformers import ViTConfig, ViTForImageClassification

if TYPE_CHECKING:  # pydantic is not needed to build a teacher
    from models.config import TeacherConfig

from models.common.hf_teacher import HFTeacher, class_labels, load_or_build, load_standardizer


class ThermalTeacher(HFTeacher):
    """ViT over normalised frames ``(B, H, W)`` → logits."""

    def __init__(self, hf_model: ViTForImageClassification, standardizer, frame_hw: tuple[int, int]) -> None:
        super().__init__(hf_model, standardizer)
        cfg = hf_model.config
        size = cfg.image_size if isinstance(cfg.image_size, (tuple, list)) else (cfg.image_size, cfg.image_size)
        self.channels = int(cfg.num_channels)
        self.interpolate = tuple(size) != tuple(frame_hw)

    def adapt(self, x: torch.Tensor) -> torch.Tensor:
        x = x.unsqueeze(1)  # (B, H, W) -> (B, 1, H, W)
        return x.repeat(1, self.channels, 1, 1) if self.channels != 1 else x

    def call_hf(self, x: torch.Tensor) -> torch.Tensor:
        return self.hf_model(pixel_values=x, interpolate_pos_encoding=self.interpolate).logits


def vit_config(cfg: TeacherConfig, frame_hw: tuple[int, int], classes: tuple[str, ...]) -> ViTConfig:
    """A small ViT for ``frame_hw`` frames (patches of ``cfg.thermal_patch`` pixels)."""
    return ViTConfig(
        image_size=list(frame_hw),
        patch_size=cfg.thermal_patch,
        num_channels=1,
        hidden_size=cfg.hidden_size,
        num_hidden_layers=cfg.num_layers,
        num_attention_heads=cfg.num_heads,
        intermediate_size=cfg.intermediate_size,
        hidden_dropout_prob=cfg.dropout,
        attention_probs_dropout_prob=cfg.dropout,
        **class_labels(classes),
    )


def build_thermal_teacher(
    cfg: TeacherConfig,
    classes: tuple[str, ...],
    sample_shape: tuple[int, ...],
    standardizer_stats: tuple[np.ndarray, np.ndarray],
) -> ThermalTeacher:
    """From ``cfg.checkpoint`` when set (classifier head resized to ``classes``), else from a config."""
    frame_hw = (int(sample_shape[-2]), int(sample_shape[-1]))
    hf, path = load_or_build(ViTForImageClassification, cfg.checkpoint, classes, lambda: vit_config(cfg, frame_hw, classes))
    return ThermalTeacher(hf, load_standardizer(path, standardizer_stats, sample_shape), frame_hw)
