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
    assert names.all_feature_streams() == [f"x:features:{m.value}:{{s{s}}}" for m in Modality for s in range(3)]
    assert names.features("audio", "A") == names.features_shard(Modality.AUDIO, names.shard_of("A"))
    assert names.predictions("plc", "A").startswith("x:predictions:plc:{s")
    with pytest.raises(ValueError, match="out of range"):
        names.features_shard("plc", 3)
    with pytest.raises(ValueError):
        names.features("smell", "A")


def test_keys_written_together_share_a_hash_slot() -> None:
    """Redis Cluster: every key one script touches must hash to one slot (else CROSSSLOT)."""
    from redis.crc import key_slot

    names = StreamNames(prefix="lw", shards=4)
    for shard in range(4):
        together = [names.features_shard(m, shard) for m in Modality] + [
            names.predictions_shard(m, shard) for m in Modality] + [
            names.verdicts_shard(shard), names.lease("fusion", shard), names.stage_state("fusion", shard),
            names.lease("inference.thermal", shard)] + [names.ingest_marks(m, shard) for m in Modality]
        assert len({key_slot(k.encode()) for k in together}) == 1, together
        assert all(k.startswith("lw:") for k in together)  # SCAN MATCH lw:* and ACL ~lw:* still cover them
    assert len({key_slot(names.verdicts_shard(s).encode()) for s in range(4)}) == 4  # shards spread out
    assert key_slot(names.ingest_dedup("0f").encode()) == key_slot(names.deadletter.encode())
    for bad in ("", "l{w", "lw}"):
        with pytest.raises(ValueError, match="brace|non-empty"):
            StreamNames(prefix=bad)
