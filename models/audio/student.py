"""Audio student: three strided conv blocks over the log-mel, a mean over time (so any clip
length works) that keeps the frequency axis (fault signatures sit in bands), one linear layer."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import nn

from models.common.normalization import InputStandardizer

if TYPE_CHECKING:  # pydantic is not needed to build a student (GPU bench hosts may lack it)
    from models.config import StudentConfig
from models.thermal.student import conv_block


class AudioStudent(nn.Module):
    """``(B, n_mels, T)`` → logits."""

    def __init__(self, cfg: StudentConfig, n_classes: int, n_mels: int, standardizer: InputStandardizer) -> None:
        super().__init__()
        w = cfg.width
        self.standardizer = standardizer
        self.features = nn.Sequential(
            conv_block(1, w, 2), conv_block(w, 2 * w, 2), conv_block(2 * w, 4 * w, 2), conv_block(4 * w, 4 * w, 1)
        )
        bands = -(-n_mels // 8)
        self.dropout = nn.Dropout(cfg.dropout)
        self.classifier = nn.Linear(4 * w * bands, n_classes)

    def forward(self, input: torch.Tensor) -> torch.Tensor:  # noqa: A002 - ONNX input name
        x = self.features(self.standardizer(input).unsqueeze(1)).mean(dim=3)  # (B, C, bands)
        return self.classifier(self.dropout(torch.flatten(x, 1)))


def build_audio_student(
    cfg: StudentConfig, n_classes: int, sample_shape: tuple[int, ...], standardizer_stats: tuple[np.ndarray, np.ndarray]
) -> AudioStudent:
    return AudioStudent(cfg, n_classes, int(sample_shape[-2]), InputStandardizer(*standardizer_stats, nan_to_zero=False))
