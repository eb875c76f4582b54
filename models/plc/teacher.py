"""PLC teacher: :class:`FeatureTokenTransformerForClassification` built from a config, or loaded
from a local checkpoint directory."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch

if TYPE_CHECKING:  # pydantic is not needed to build a teacher
    from models.config import TeacherConfig

from models.common.hf_teacher import HFTeacher, class_labels, load_or_build, load_standardizer
from models.plc.feature_transformer import FeatureTokenTransformerConfig, FeatureTokenTransformerForClassification


class PlcTeacher(HFTeacher):
    """Feature-token transformer over raw window features ``(B, F)`` (NaN allowed) → logits."""

    def call_hf(self, x: torch.Tensor) -> torch.Tensor:
        return self.hf_model(input_values=x).logits


def build_plc_teacher(
    cfg: TeacherConfig,
    classes: tuple[str, ...],
    sample_shape: tuple[int, ...],
    standardizer_stats: tuple[np.ndarray, np.ndarray],
) -> PlcTeacher:
    """From ``cfg.checkpoint`` when set (feature count must match), else from a config."""
    hf, path = load_or_build(
        FeatureTokenTransformerForClassification, cfg.checkpoint, classes,
        lambda: FeatureTokenTransformerConfig(
            num_features=int(sample_shape[-1]),
            hidden_size=cfg.hidden_size,
            num_hidden_layers=cfg.num_layers,
            num_attention_heads=cfg.num_heads,
            intermediate_size=cfg.intermediate_size,
            hidden_dropout_prob=cfg.dropout,
            value_embedding=cfg.value_embedding,
            **class_labels(classes),
        ),
    )
    if hf.config.num_features != sample_shape[-1]:
        raise ValueError(
            f"teacher checkpoint {path} expects {hf.config.num_features} PLC features but the data has "
            f"{sample_shape[-1]} (features version changed?): retrain without teacher.checkpoint"
        )
    return PlcTeacher(hf, load_standardizer(path, standardizer_stats, sample_shape))
