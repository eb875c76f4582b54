"""Thermal student: a 4x4 "patchify" stem (hot regions are tens of pixels wide, so full
resolution buys nothing but FLOPs), two conv blocks at 1/8 resolution, then a coarse 3x4
spatial pooling that keeps *where* on the asset the heat is (bearing vs winding region),
then one linear layer. ~6 MFLOPs per frame at width 16."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import nn

from models.common.normalization import InputStandardizer

if TYPE_CHECKING:  # pydantic is not needed to build a student (GPU bench hosts may lack it)
    from models.config import StudentConfig


def conv_block(c_in: int, c_out: int, stride: int) -> nn.Sequential:
    """Conv 3x3 + BatchNorm + ReLU (BN folds into the conv at export)."""
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU()
    )


class ThermalStudent(nn.Module):
    """``(B, H, W)`` → logits (the pooling grid is 3x4 cells of the 1/8-resolution map)."""

    def __init__(self, cfg: StudentConfig, n_classes: int, frame_hw: tuple[int, int], standardizer: InputStandardizer) -> None:
        super().__init__()
        w = cfg.width
        self.standardizer = standardizer
        self.features = nn.Sequential(
            nn.Conv2d(1, w, 4, stride=4, bias=False), nn.BatchNorm2d(w), nn.ReLU(),  # 1/4 resolution
            conv_block(w, 2 * w, 2),  # 1/8
            conv_block(2 * w, 3 * w, 1),
        )
        h8, w8 = frame_hw[0] // 4 // 2 + (frame_hw[0] // 4) % 2, frame_hw[1] // 4 // 2 + (frame_hw[1] // 4) % 2
        grid = (3, 4)
        kernel = (max(1, h8 // grid[0]), max(1, w8 // grid[1]))
        self.pool = nn.AvgPool2d(kernel, stride=kernel)
        n_cells = (h8 // kernel[0]) * (w8 // kernel[1])
        self.dropout = nn.Dropout(cfg.dropout)
        self.classifier = nn.Linear(3 * w * n_cells, n_classes)

    def forward(self, input: torch.Tensor) -> torch.Tensor:  # noqa: A002 - ONNX input name
        x = self.pool(self.features(self.standardizer(input).unsqueeze(1)))
        return self.classifier(self.dropout(torch.flatten(x, 1)))


def build_thermal_student(
    cfg: StudentConfig, n_classes: int, sample_shape: tuple[int, ...], standardizer_stats: tuple[np.ndarray, np.ndarray]
) -> ThermalStudent:
    return ThermalStudent(cfg, n_classes, (int(sample_shape[-2]), int(sample_shape[-1])), InputStandardizer(*standardizer_stats, nan_to_zero=False))
