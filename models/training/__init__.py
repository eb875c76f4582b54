"""Training API: ``train_modality`` / ``train_all`` (teacher → distilled student → ONNX →
INT8 → gates → registry), and ``train_command`` for the ``linewatch train`` CLI.

Heavy imports (torch, transformers) happen on first use of these functions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from models.training.gates import AccuracyGateError
    from models.training.run_all import train_all, train_command
    from models.training.train import train_modality

__all__ = ["AccuracyGateError", "train_all", "train_command", "train_modality"]


def __getattr__(name: str) -> Any:
    if name == "train_modality":
        from models.training.train import train_modality

        return train_modality
    if name in ("train_all", "train_command"):
        import importlib

        module = importlib.import_module("models.training.run_all")
        return getattr(module, name)
    if name == "AccuracyGateError":
        from models.training.gates import AccuracyGateError

        return AccuracyGateError
    raise AttributeError(name)
