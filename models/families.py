"""Per-modality builders: which teacher and student classes a modality uses.

>>> family("plc").per_feature_standardization
True
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from models.specs import check_modality


@dataclass(frozen=True)
class ModelFamily:
    """Builders of one modality (imported lazily: torch/transformers are heavy)."""

    modality: str
    teacher_builder: str
    student_builder: str
    teacher_architecture: str
    student_architecture: str
    per_feature_standardization: bool

    def _resolve(self, dotted: str) -> Callable:
        import importlib

        module, name = dotted.rsplit(":", 1)
        return getattr(importlib.import_module(module), name)

    def build_teacher(self, *args, **kwargs):  # noqa: ANN002, ANN003, ANN201 - forwards to the builder
        return self._resolve(self.teacher_builder)(*args, **kwargs)

    def build_student(self, *args, **kwargs):  # noqa: ANN002, ANN003, ANN201 - forwards to the builder
        return self._resolve(self.student_builder)(*args, **kwargs)


FAMILIES: dict[str, ModelFamily] = {
    "thermal": ModelFamily(
        "thermal",
        "models.thermal.teacher:build_thermal_teacher",
        "models.thermal.student:build_thermal_student",
        "ViTForImageClassification (transformers, from config)",
        "CNN: 4x4 patchify stem + 2 conv blocks (16-32-48 ch) + 3x4 spatial pooling + linear",
        per_feature_standardization=False,
    ),
    "audio": ModelFamily(
        "audio",
        "models.audio.teacher:build_audio_teacher",
        "models.audio.student:build_audio_student",
        "ASTForAudioClassification (transformers, from config)",
        "CNN 4 conv blocks + mean over time + linear",
        per_feature_standardization=False,
    ),
    "plc": ModelFamily(
        "plc",
        "models.plc.teacher:build_plc_teacher",
        "models.plc.student:build_plc_student",
        "FeatureTokenTransformerForClassification (transformers PreTrainedModel)",
        "MLP 2 hidden layers",
        per_feature_standardization=True,
    ),
}


def family(modality: str) -> ModelFamily:
    """The :class:`ModelFamily` of ``modality``."""
    return FAMILIES[check_modality(modality)]
