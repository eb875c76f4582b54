"""The model-input vector's names in each features version, so that a model of an earlier version
can be re-scored on a newer vector by picking its own columns.

Add the old names here when a version changes a vector (``pipeline.features.FEATURES_VERSION``).

The no-regression gate (``models.training.train``) compares a new model with the registered one
on the same test split. When the features version moved, the registered model cannot read the new
vector as it is; where every value it reads is still in the new vector under the same name (the
values were added, not changed), its columns are picked by name and it is re-scored on the same
samples instead of compared with a number recorded on other data.

>>> old, new = vector_names("audio", 3), vector_names("audio", 4)
>>> len(old), len(new), set(old) <= set(new)
(79, 86, True)
>>> vector_names("thermal", 3) == vector_names("thermal", 4)
True
>>> vector_names("audio", 2) is None
True
"""

from __future__ import annotations

from pipeline.features import FEATURES_VERSION
from pipeline.features.audio_physics import AUDIO_CLIP_NAMES, AUDIO_VECTOR_NAMES
from pipeline.features.plc_physics import PLC_VECTOR_NAMES
from pipeline.features.thermal_regions import THERMAL_VECTOR_NAMES

#: The audio vector of features v3 (79 values): the clip values; v4 added the baseline values.
_AUDIO_V3 = AUDIO_CLIP_NAMES


def vector_names(modality: str, features_version: int) -> tuple[str, ...] | None:
    """Names of ``modality``'s model-input vector in ``features_version`` (3 up to the current one;
    None for versions before 3, whose values were not kept under these names)."""
    if features_version < 3 or features_version > FEATURES_VERSION:
        return None
    if modality == "plc":
        return PLC_VECTOR_NAMES
    if modality == "thermal":
        return THERMAL_VECTOR_NAMES
    if modality == "audio":
        return _AUDIO_V3 if features_version == 3 else AUDIO_VECTOR_NAMES
    return None


def columns_of(modality: str, old_version: int, new_version: int) -> list[int] | None:
    """Column indices of the ``old_version`` vector inside the ``new_version`` one (by name), or
    None when a value of the old vector is not in the new one.

    >>> cols = columns_of("audio", 3, 4)
    >>> len(cols), cols[:2], cols[-1]
    (79, [0, 1], 78)
    >>> columns_of("audio", 4, 3) is None   # the v4 baseline values are not in v3
    True
    """
    old, new = vector_names(modality, old_version), vector_names(modality, new_version)
    if old is None or new is None or not set(old) <= set(new):
        return None
    index = {name: i for i, name in enumerate(new)}
    return [index[name] for name in old]
