from __future__ import annotations

import pytest

from linewatch.contract import Modality, StreamNames, shard_of


def test_shard_is_stable_and_in_range() -> None:
    ids = [f"PMP-{i:02d}" for i in range(200)]
    shards = [shard_of(a, 4) for a in ids]
    assert shards == [shard_of(a, 4) for a in ids]
    assert set(shards) == {0, 1, 2, 3}


def test_names_cover_modalities_and_shards() -> None:
    names = StreamNames(prefix="x", shards=3)
    assert names.all_feature_streams() == [f"x:features:{m.value}:s{s}" for m in Modality for s in range(3)]
    assert names.features("audio", "A") == names.features_shard(Modality.AUDIO, names.shard_of("A"))
    assert names.predictions("plc", "A").startswith("x:predictions:plc:s")
    with pytest.raises(ValueError, match="out of range"):
        names.features_shard("plc", 3)
    with pytest.raises(ValueError):
        names.features("smell", "A")
