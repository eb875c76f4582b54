"""What every model of a modality consumes and predicts.

Model inputs are exactly what the shared feature functions in :mod:`pipeline.features`
return (the messages' ``vector``, features v2), so training and serving never disagree:

========  ===========================================================  ==================
modality  producer                                                     per-sample shape
========  ===========================================================  ==================
plc       ``pipeline.features.plc_physics.plc_vector``                 ``(43,)``
thermal   ``pipeline.features.thermal_regions.thermal_vector``         ``(69,)``
audio     ``pipeline.features.audio_physics.audio_vector``             ``(70,)``
========  ===========================================================  ==================

Any scaling beyond that (standardisation with training-set statistics) is baked into the models
as buffers, so an ONNX file is fed the feature function's output as-is.

>>> MODALITIES
('plc', 'thermal', 'audio')
>>> PREPROCESSING_VERSION >= 1
True
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

Modality = Literal["plc", "thermal", "audio"]
MODALITIES: tuple[Modality, ...] = ("plc", "thermal", "audio")

#: Bumped whenever the model-side handling of inputs changes (normalisation buffers, layout).
#: 2: standardised vectors clamped to ±10; outputs are calibrated logits (shifts + temperature).
PREPROCESSING_VERSION = 2

INPUT_NAME = "input"
OUTPUT_NAME = "logits"

PRODUCERS: dict[str, str] = {
    "plc": "pipeline.features.plc_physics.plc_vector",
    "thermal": "pipeline.features.thermal_regions.thermal_vector",
    "audio": "pipeline.features.audio_physics.audio_vector",
}


@dataclass(frozen=True)
class InputSpec:
    """Name, per-sample shape and dtype of a model's single input (batch axis is dynamic)."""

    modality: str
    name: str
    shape: tuple[int, ...]
    dtype: str
    producer: str
    features_version: int
    preprocessing_version: int
    output_name: str
    output: str

    def to_dict(self) -> dict[str, object]:
        data = asdict(self)
        data["shape"] = list(self.shape)
        return data


def fault_classes() -> tuple[str, ...]:
    """The simulator's fault types (``normal`` first): the classes every model predicts."""
    from linewatch.simulator.health import FAULT_CLASSES

    return tuple(FAULT_CLASSES)


def check_modality(modality: str) -> Modality:
    """Return ``modality`` if known, else raise with the list of valid names.

    >>> check_modality("thermal")
    'thermal'
    """
    if modality not in MODALITIES:
        raise ValueError(f"unknown modality {modality!r}: use one of {', '.join(MODALITIES)}")
    return modality  # type: ignore[return-value]


def input_spec(modality: str, sample_shape: tuple[int, ...], features_version: int) -> InputSpec:
    """The :class:`InputSpec` of ``modality`` for samples of ``sample_shape``."""
    check_modality(modality)
    return InputSpec(
        modality=modality,
        name=INPUT_NAME,
        shape=tuple(int(s) for s in sample_shape),
        dtype="float32",
        producer=PRODUCERS[modality],
        features_version=features_version,
        preprocessing_version=PREPROCESSING_VERSION,
        output_name=OUTPUT_NAME,
        output="float32 (batch, n_classes) calibrated logits (class prior shifts and temperature baked in); "
               "softmax gives class probabilities",
    )
