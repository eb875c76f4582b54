"""Audio teacher: a Hugging Face Audio Spectrogram Transformer (AST) built from a config, or
loaded from a local checkpoint.

AST expects ``input_values`` shaped ``(B, max_length, num_mel_bins)`` (time first); the
log-mel arrives as ``(B, n_mels, T)``. A checkpoint made for other sizes (e.g. AudioSet's
1024 x 128) gets the spectrogram resized bilinearly to its ``(max_length, num_mel_bins)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch
import torch.nn.functional as F
from transformers import ASTConfig, ASTForAudioClassification

if TYPE_CHECKING:  # pydantic is not needed to build a teacher
    from models.config import TeacherConfig

from models.common.hf_teacher import HFTeacher, class_labels, load_or_build, load_standardizer


class AudioTeacher(HFTeacher):
    """AST over log-mel spectrograms ``(B, n_mels, T)`` → logits."""

    def __init__(self, hf_model: ASTForAudioClassification, standardizer, mel_t: tuple[int, int]) -> None:
        super().__init__(hf_model, standardizer)
        cfg = hf_model.config
        self.target = (int(cfg.max_length), int(cfg.num_mel_bins))
        self.resize = self.target != (mel_t[1], mel_t[0])

    def adapt(self, x: torch.Tensor) -> torch.Tensor:
        x = x.transpose(1, 2)  # (B, T, n_mels)
        if self.resize:
            x = F.interpolate(x.unsqueeze(1), size=self.target, mode="bilinear", align_corners=False).squeeze(1)
        return x

    def call_hf(self, x: torch.Tensor) -> torch.Tensor:
        return self.hf_model(input_values=x).logits


def ast_config(cfg: TeacherConfig, mel_t: tuple[int, int], classes: tuple[str, ...]) -> ASTConfig:
    """A small AST for ``(n_mels, T)`` spectrograms."""
    return ASTConfig(
        hidden_size=cfg.hidden_size,
        num_hidden_layers=cfg.num_layers,
        num_attention_heads=cfg.num_heads,
        intermediate_size=cfg.intermediate_size,
        hidden_dropout_prob=cfg.dropout,
        attention_probs_dropout_prob=cfg.dropout,
        patch_size=cfg.audio_patch,
        frequency_stride=cfg.audio_stride,
        time_stride=cfg.audio_stride,
        num_mel_bins=mel_t[0],
        max_length=mel_t[1],
        **class_labels(classes),
    )


def build_audio_teacher(
    cfg: TeacherConfig,
    classes: tuple[str, ...],
    sample_shape: tuple[int, ...],
    standardizer_stats: tuple[np.ndarray, np.ndarray],
) -> AudioTeacher:
    """From ``cfg.checkpoint`` when set (classifier head resized to ``classes``), else from a config."""
    mel_t = (int(sample_shape[-2]), int(sample_shape[-1]))
    hf, path = load_or_build(ASTForAudioClassification, cfg.checkpoint, classes, lambda: ast_config(cfg, mel_t, classes))
    return AudioTeacher(hf, load_standardizer(path, standardizer_stats, sample_shape), mel_t)
