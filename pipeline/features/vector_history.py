"""The model-input vector's names in each features version, so that a model of an earlier version
can be re-scored on a newer vector by picking its own columns.

The no-regression gate (``models.training.train``) compares a new model with the registered one
on the same test split. When the features version moved, the registered model cannot read the new
vector as it is; where every value it reads is still in the new vector under the same name (the
values were added, not changed), its columns are picked by name and it is re-scored on the same
samples instead of compared with a number recorded on other data.

>>> old, new = vector_names("audio", 4), vector_names("audio", 5)
>>> len(old), len(new), set(old) <= set(new)
(86, 131, True)
>>> vector_names("thermal", 3) == vector_names("thermal", 5)
True
>>> vector_names("audio", 2) is None
True
"""

from __future__ import annotations

from pipeline.features import FEATURES_VERSION
from pipeline.features.audio_baseline import CLIP_LEVEL_NAMES
from pipeline.features.audio_physics import AUDIO_CLIP_NAMES, AUDIO_VECTOR_NAMES
from pipeline.features.plc_physics import PLC_VECTOR_NAMES
from pipeline.features.thermal_regions import THERMAL_VECTOR_NAMES

#: The audio vector of features v3 (79 values): the clip values before ``comb.sync`` (v5).
_AUDIO_V3 = AUDIO_CLIP_NAMES[: AUDIO_CLIP_NAMES.index("comb.blind_order") + 1]
#: Features v4 added the six shaft-level deltas and the flag.
_AUDIO_V4 = (*_AUDIO_V3, *(f"baseline.{n.removesuffix('.level_db')}.delta_db" for n in CLIP_LEVEL_NAMES),
             "baseline.available")


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
        return {3: _AUDIO_V3, 4: _AUDIO_V4}.get(features_version, AUDIO_VECTOR_NAMES)
    return None


def columns_of(modality: str, old_version: int, new_version: int) -> list[int] | None:
    """Column indices of the ``old_version`` vector inside the ``new_version`` one (by name), or
    None when a value of the old vector is not in the new one.

    >>> cols = columns_of("audio", 4, 5)
    >>> len(cols), cols[:2], cols[-1]
    (86, [0, 1], 130)
    """
    old, new = vector_names(modality, old_version), vector_names(modality, new_version)
    if old is None or new is None or not set(old) <= set(new):
        return None
    index = {name: i for i, name in enumerate(new)}
    return [index[name] for name in old]
