"""Feature message → model input: the one place that decides what a model of a modality reads.

The inference service, ``linewatch inspect`` and the training code all call :func:`input_array`,
so a change of model input is made here once. Since features v2 every modality's model reads the
message's ``vector``: the physics-normalised input computed by :mod:`pipeline.features`
(``PLC_VECTOR_NAMES``, ``THERMAL_VECTOR_NAMES``, ``AUDIO_VECTOR_NAMES``). An entry written by an
older pipeline (features v1, no ``vector``) is refused with :class:`InputMismatchError`, which a
consumer turns into a dead letter that says to upgrade the ingestion job.

>>> import numpy as np
>>> from linewatch.contract.messages import PlcFeatures
>>> msg = PlcFeatures(asset_id="PMP-01", asset_type="pump", window_start_ms=0, window_end_ms=1000,
...                   event_time_ms=1000, features_version=2, feature_names=["a", "b"],
...                   values=np.array([1.0, 2.0], np.float32), n_samples=10, alarm_counts={},
...                   vector=np.array([0.5, 1.5], np.float32))
>>> input_array("plc", msg).tolist()
[0.5, 1.5]
"""

from __future__ import annotations

import numpy as np

from linewatch.contract.messages import (
    AudioFeatures,
    Message,
    PlcFeatures,
    ThermalFeatures,
)
from models.specs import check_modality

_MESSAGE_TYPES: dict[str, type[Message]] = {"plc": PlcFeatures, "thermal": ThermalFeatures, "audio": AudioFeatures}
#: First features version whose messages carry the model-input ``vector``.
VECTOR_FEATURES_VERSION = 2


class InputMismatchError(ValueError):
    """The message is not the features message the modality's model reads."""


def input_array(modality: str, message: Message) -> np.ndarray:
    """The per-sample model input (float32, no batch axis) of one features message."""
    check_modality(modality)
    expected = _MESSAGE_TYPES[modality]
    if not isinstance(message, expected):
        raise InputMismatchError(f"{modality} model reads {expected.SCHEMA!r} entries, got {message.SCHEMA!r}")
    assert isinstance(message, PlcFeatures | ThermalFeatures | AudioFeatures)
    vector = message.vector
    if message.features_version < VECTOR_FEATURES_VERSION or vector.size == 0:
        raise InputMismatchError(
            f"{modality} entry of {message.asset_id} is features v{message.features_version} without a model-input "
            f"vector; the models read features v{VECTOR_FEATURES_VERSION}+: upgrade and restart the ingestion job")
    out = np.asarray(vector, dtype=np.float32)
    if not np.all(np.isfinite(out)):
        raise InputMismatchError(f"{modality} input of {message.asset_id} has NaN or infinite values")
    return out
