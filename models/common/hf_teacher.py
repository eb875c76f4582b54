"""Shared plumbing of the Hugging Face teachers: standardiser + HF model, save/load.

A saved teacher is a plain ``save_pretrained`` directory plus ``linewatch_input.json``
(the input standardiser). A user's own checkpoint directory (no ``linewatch_input.json``)
loads the same way; its standardiser is then fitted on the training split.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from transformers import PretrainedConfig, PreTrainedModel

from models.common.normalization import InputStandardizer

STANDARDIZER_FILE = "linewatch_input.json"


class HFTeacher(nn.Module):
    """``input -> standardiser -> adapt(input) -> hf_model -> logits``.

    Subclasses implement :meth:`adapt` (layout changes between the feature array and what
    the HF architecture expects) and :meth:`call_hf`.
    """

    def __init__(self, hf_model: nn.Module, standardizer: InputStandardizer) -> None:
        super().__init__()
        self.hf_model = hf_model
        self.standardizer = standardizer

    def adapt(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def call_hf(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return self.call_hf(self.adapt(self.standardizer(input)))

    def save(self, directory: Path) -> Path:
        """``save_pretrained`` the HF model and write the standardiser next to it."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self.hf_model.save_pretrained(directory)
        (directory / STANDARDIZER_FILE).write_text(json.dumps(self.standardizer.stats()))
        return directory


def load_standardizer(
    directory: Path | None, fallback: tuple[np.ndarray, np.ndarray], sample_shape: tuple[int, ...]
) -> InputStandardizer:
    """The standardiser saved in ``directory`` if any (reshaped to ``fallback``), else ``fallback``."""
    nan_to_zero = len(sample_shape) == 1  # vectors may carry NaN for a missing value; images never do
    mean, std = fallback
    if directory is not None and (Path(directory) / STANDARDIZER_FILE).is_file():
        stats = json.loads((Path(directory) / STANDARDIZER_FILE).read_text())
        mean = np.asarray(stats["mean"], np.float32).reshape(np.shape(fallback[0]))
        std = np.asarray(stats["std"], np.float32).reshape(np.shape(fallback[1]))
    # vectors are clamped like the students' (models.plc.student.VECTOR_CLIP)
    return InputStandardizer(mean, std, nan_to_zero=nan_to_zero, clip=10.0 if nan_to_zero else None)


def class_labels(classes: tuple[str, ...]) -> dict[str, Any]:
    """``num_labels`` / ``id2label`` / ``label2id`` for a transformers config.

    >>> class_labels(("normal", "cavitation"))["label2id"]
    {'normal': 0, 'cavitation': 1}
    """
    return {"num_labels": len(classes), "id2label": dict(enumerate(classes)), "label2id": {c: i for i, c in enumerate(classes)}}


def load_or_build(
    model_cls: type[PreTrainedModel],
    checkpoint: Path | None,
    classes: tuple[str, ...],
    config: Callable[[], PretrainedConfig],
) -> tuple[PreTrainedModel, Path | None]:
    """The user's ``save_pretrained`` checkpoint (classifier head resized to ``classes``), else a
    model built from ``config()``; returns the model and the checkpoint directory (or None)."""
    if checkpoint is None:
        return model_cls(config()), None
    path = check_checkpoint_dir(checkpoint)
    return model_cls.from_pretrained(path, ignore_mismatched_sizes=True, **class_labels(classes)), path


def check_checkpoint_dir(directory: Path) -> Path:
    """Raise a helpful error unless ``directory`` looks like a save_pretrained checkpoint."""
    directory = Path(directory).expanduser()
    if not (directory / "config.json").is_file():
        raise FileNotFoundError(
            f"teacher checkpoint {directory} has no config.json: point teacher.checkpoint at a "
            "directory written by save_pretrained() (config.json + model.safetensors)"
        )
    return directory
