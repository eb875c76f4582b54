"""Feature message → model input: the one place that decides what a model of a modality reads.

The inference service, ``linewatch inspect`` and the training code all call :func:`input_array`,
so a change of model input (a new feature array, another normalisation) is made here once.

>>> import numpy as np
>>> from linewatch.contract.messages import PlcFeatures
>>> msg = PlcFeatures(asset_id="PMP-01", asset_type="pump", window_start_ms=0, window_end_ms=1000,
...                   event_time_ms=1000, features_version=1, feature_names=["a", "b"],
...                   values=np.array([1.0, 2.0], np.float32), n_samples=10, alarm_counts={})
>>> input_array("plc", msg).tolist()
[1.0, 2.0]
"""

from __future__ import annotations

import numpy as np

from linewatch.contract.messages import AudioFeatures, Message, PlcFeatures, ThermalFeatures
from models.specs import check_modality

_MESSAGE_TYPES: dict[str, type[Message]] = {"plc": PlcFeatures, "thermal": ThermalFeatures, "audio": AudioFeatures}


class InputMismatchError(ValueError):
    """The message is not the features message the modality's model reads."""


def input_array(modality: str, message: Message) -> np.ndarray:
    """The per-sample model input (float32, no batch axis) of one features message."""
    check_modality(modality)
    expected = _MESSAGE_TYPES[modality]
    if not isinstance(message, expected):
        raise InputMismatchError(f"{modality} model reads {expected.SCHEMA!r} entries, got {message.SCHEMA!r}")
    if isinstance(message, PlcFeatures):
        array = message.values
    elif isinstance(message, ThermalFeatures):
        array = message.frame
    else:
        assert isinstance(message, AudioFeatures)
        array = message.logmel
    out = np.asarray(array, dtype=np.float32)
    if not np.all(np.isfinite(out)):
        raise InputMismatchError(f"{modality} input of {message.asset_id} has NaN or infinite values")
    return out
