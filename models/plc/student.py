"""PLC student: a two-hidden-layer MLP over the standardised window features."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import nn

from models.common.normalization import InputStandardizer

#: Standardised vector inputs are clamped to ±this (students and teachers alike).
VECTOR_CLIP = 10.0

if TYPE_CHECKING:  # pydantic is not needed to build a student (GPU bench hosts may lack it)
    from models.config import StudentConfig


class PlcStudent(nn.Module):
    """``(B, F)`` (NaN allowed) → logits."""

    def __init__(self, cfg: StudentConfig, n_classes: int, n_features: int, standardizer: InputStandardizer) -> None:
        super().__init__()
        h = cfg.hidden
        self.standardizer = standardizer
        self.body = nn.Sequential(
            nn.Linear(n_features, h), nn.ReLU(), nn.Dropout(cfg.dropout), nn.Linear(h, h // 2), nn.ReLU()
        )
        self.classifier = nn.Linear(h // 2, n_classes)

    def forward(self, input: torch.Tensor) -> torch.Tensor:  # noqa: A002 - ONNX input name
        return self.classifier(self.body(self.standardizer(input)))


def build_plc_student(
    cfg: StudentConfig, n_classes: int, sample_shape: tuple[int, ...], standardizer_stats: tuple[np.ndarray, np.ndarray]
) -> PlcStudent:
    return PlcStudent(cfg, n_classes, int(sample_shape[-1]), InputStandardizer(*standardizer_stats, clip=VECTOR_CLIP))
