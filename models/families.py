"""Per-modality builders: which teacher and student classes a modality uses.

>>> family("audio").per_feature_standardization, image_family("audio").per_feature_standardization
(True, False)
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

    def build_teacher(self, *args, **kwargs):
        return self._resolve(self.teacher_builder)(*args, **kwargs)

    def build_student(self, *args, **kwargs):
        return self._resolve(self.student_builder)(*args, **kwargs)


VECTOR_TEACHER = "FeatureTokenTransformerForClassification (transformers PreTrainedModel, from config)"
VECTOR_STUDENT = "MLP over the standardised model-input vector (2 hidden layers)"

#: What the shipped models are (features v2): every modality reads its physics-normalised vector.
FAMILIES: dict[str, ModelFamily] = {
    m: ModelFamily(m, "models.plc.teacher:build_plc_teacher", "models.plc.student:build_plc_student",
                   VECTOR_TEACHER, VECTOR_STUDENT, per_feature_standardization=True)
    for m in ("plc", "thermal", "audio")
}

#: The image models of features v1 (normalised 120x160 frame, 64-band log-mel), kept for the
#: ablation that measures what the physics-normalised vectors buy (docs/models.md) and for users
#: who bring a ViT / AST checkpoint of their own.
IMAGE_FAMILIES: dict[str, ModelFamily] = {
    "thermal": ModelFamily(
        "thermal",
        "models.thermal.teacher:build_thermal_teacher",
        "models.thermal.student:build_thermal_student",
        "ViTForImageClassification (transformers, from config)",
        "CNN: 4x4 patchify stem + 2 conv blocks + 3x4 spatial pooling + linear",
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
}


def family(modality: str) -> ModelFamily:
    """The :class:`ModelFamily` of ``modality`` (vector input)."""
    return FAMILIES[check_modality(modality)]


def image_family(modality: str) -> ModelFamily:
    """The image-input family of ``thermal`` or ``audio`` (ablation, user ViT/AST checkpoints)."""
    if modality not in IMAGE_FAMILIES:
        raise ValueError(f"no image family for {modality!r}: use thermal or audio")
    return IMAGE_FAMILIES[modality]
