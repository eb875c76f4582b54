"""Vector student: a two-hidden-layer MLP over the standardised model-input vector (every
modality's shipped student since features v2), alone or as an ensemble of ``members`` MLPs.

An ensemble's members start from different random weights, learn from the same batches with a
loss each (:meth:`StudentEnsemble.member_logits`, used by :func:`models.training.loop.fit`) and
serve the mean of their logits: one ONNX graph, one standardiser. Measured on the thermal
vectors (docs/models.md, ``bench/bench_student_members.py``), one MLP's recall and false-alarm
rate on machines of another generator swing with nothing but its initial weights; the mean of
eight swings less.

>>> from models.config import StudentConfig
>>> stats = (np.zeros(6, np.float32), np.ones(6, np.float32))
>>> one = build_plc_student(StudentConfig(hidden=8), 3, (6,), stats)
>>> four = build_plc_student(StudentConfig(hidden=8, members=4), 3, (6,), stats)
>>> type(one).__name__, type(four).__name__, tuple(four.member_logits(torch.zeros(2, 6)).shape)
('PlcStudent', 'StudentEnsemble', (4, 2, 3))
>>> sum(p.numel() for p in four.parameters()) == 4 * sum(p.numel() for p in one.parameters())
True
"""

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

    def __init__(self, cfg: StudentConfig, n_classes: int, n_features: int, standardizer: nn.Module) -> None:
        super().__init__()
        h = cfg.hidden
        self.standardizer = standardizer
        self.body = nn.Sequential(
            nn.Linear(n_features, h), nn.ReLU(), nn.Dropout(cfg.dropout), nn.Linear(h, h // 2), nn.ReLU()
        )
        self.classifier = nn.Linear(h // 2, n_classes)

    def forward(self, input: torch.Tensor) -> torch.Tensor:  # noqa: A002 - ONNX input name
        return self.classifier(self.body(self.standardizer(input)))


class StudentEnsemble(nn.Module):
    """``(B, F)`` (NaN allowed) → the mean logits of ``cfg.members`` :class:`PlcStudent` MLPs
    behind one shared standardiser."""

    def __init__(self, cfg: StudentConfig, n_classes: int, n_features: int, standardizer: InputStandardizer) -> None:
        super().__init__()
        self.standardizer = standardizer
        self.members = nn.ModuleList(
            PlcStudent(cfg, n_classes, n_features, nn.Identity()) for _ in range(cfg.members)
        )

    def member_logits(self, input: torch.Tensor) -> torch.Tensor:  # noqa: A002 - ONNX input name
        """``(members, B, classes)``: each member's logits (training gives each its own loss)."""
        z = self.standardizer(input)
        return torch.stack([m(z) for m in self.members])

    def forward(self, input: torch.Tensor) -> torch.Tensor:  # noqa: A002 - ONNX input name
        return self.member_logits(input).mean(0)


def build_plc_student(
    cfg: StudentConfig, n_classes: int, sample_shape: tuple[int, ...], standardizer_stats: tuple[np.ndarray, np.ndarray]
) -> PlcStudent | StudentEnsemble:
    """One MLP (``cfg.members == 1``, what every bundle before the field was) or an ensemble."""
    standardizer = InputStandardizer(*standardizer_stats, clip=VECTOR_CLIP)
    if cfg.members == 1:
        return PlcStudent(cfg, n_classes, int(sample_shape[-1]), standardizer)
    return StudentEnsemble(cfg, n_classes, int(sample_shape[-1]), standardizer)
