"""linewatch.streaming on a real Redis Cluster of 3 masters: a shard's lease, input, output and state
keys share its hash tag, so the fenced Lua scripts (read, claim, commit) run without CROSSSLOT, and
a real stage (fusion, several shards on all three masters) runs through ``RedisCluster``."""

from __future__ import annotations

import time

import pytest
from redis.cluster import RedisCluster

from linewatch.contract import ConsumerGroup, Modality, StreamNames, decode_message, encode_message
from linewatch.service_settings import AlertsSettings, FusionSettings
from linewatch.streaming import Commit, FencedOut, FencedShard, LeaseClient
from services.alerts.service import alert_workers
from services.fusion.service import fusion_worker
from tests.redis_cluster import LocalRedisCluster
from tests.services.support import features, prediction, running, wait_for


def _names() -> StreamNames:
    return StreamNames(f"c{time.time_ns() % 10**9}", shards=4)


def _asset_per_shard(names: StreamNames) -> dict[int, str]:
    assets: dict[int, str] = {}
    i = 0
    while len(assets) < names.shards:
        assets.setdefault(names.shard_of(f"PMP-{i:02d}"), f"PMP-{i:02d}")
        i += 1
    return assets


def test_fenced_scripts_on_every_shard(redis_cluster: LocalRedisCluster) -> None:
    """Inference's commit (prediction keyed by the features id + ack + state) on each shard's slot."""
    names = _names()
    client = redis_cluster.client()
    role, group = "inference.thermal", ConsumerGroup.INFERENCE.value
    leases, other = LeaseClient(client, "A", 5_000), LeaseClient(client, "B", 300)
    fenced = FencedShard(client, group, "A")
    nodes = set()
    for shard, asset in _asset_per_shard(names).items():
        inp, out = names.features_shard(Modality.THERMAL, shard), names.predictions_shard(Modality.THERMAL, shard)
        nodes.add(client.get_node_from_key(inp).name)
        client.xgroup_create(inp, group, id="0", mkstream=True)
        ids = [client.xadd(inp, encode_message(features("thermal", asset, 1_000 * (i + 1)))).decode()
               for i in range(3)]
        lease = leases.acquire(role, shard, names.lease(role, shard))
        assert lease is not None
        entries, _ = fenced.read_new(lease, [inp], 10)
        assert [e.entry_id for e in entries] == ids
        commit = Commit()
        for e in entries:
            commit.xadd(out, encode_message(prediction("thermal", asset, 1_000, "normal")), entry_id=e.entry_id)
        commit.ack(inp, group, ids)
        commit.hset(names.stage_state(role, shard), {asset: "seen"})
        assert fenced.commit(lease, commit).written == 3
        again = Commit()  # a redelivery after a crash: keyed outputs are not written twice
        for e in entries:
            again.xadd(out, encode_message(prediction("thermal", asset, 1_000, "normal")), entry_id=e.entry_id)
        assert fenced.commit(lease, again).duplicates == 3
        assert client.xlen(out) == 3 and client.xpending(inp, group)["pending"] == 0
        assert client.hget(names.stage_state(role, shard), asset) == b"seen"
        assert leases.release(lease)
        taken = other.acquire(role, shard, names.lease(role, shard))  # B takes the shard; A is fenced out
        assert taken is not None
        stale = Commit()
        stale.hset(names.stage_state(role, shard), {asset: "stale"})
        with pytest.raises(FencedOut):
            fenced.commit(lease, stale)
        assert client.hget(names.stage_state(role, shard), asset) == b"seen"
        claimed = FencedShard(client, group, "B").claim_pending(taken, inp, 10)
        assert claimed.entries == [] and claimed.deleted == []
    assert len(nodes) == 3, nodes
    client.close()


def test_fusion_worker_on_redis_cluster(redis_cluster: LocalRedisCluster) -> None:
    """One fusion worker owning all 4 shards (slots on the 3 masters) through a RedisCluster client."""
    names = _names()
    client = redis_cluster.client()
    assert isinstance(client, RedisCluster)
    worker = fusion_worker(client, names, FusionSettings(lease_ttl_ms=2_000, block_ms=100))  # type: ignore[arg-type]
    assets = _asset_per_shard(names)
    n = 0
    with running(worker):
        wait_for(lambda: len(worker.owned_shards()) == 4, 20, "all four shards leased")
        for step in range(3):
            for asset in assets.values():
                for m in Modality:
                    client.xadd(names.predictions(m, asset),
                                encode_message(prediction(m.value, asset, 10_000 + 1_000 * step, "normal")))
                    n += 1
        wait_for(lambda: worker.stats.handled == n, 30, "every prediction fused")
    for shard, asset in assets.items():
        verdicts = [decode_message(f) for _, f in client.xrange(names.verdicts_shard(shard))]
        assert len(verdicts) == 9 and {v.asset_id for v in verdicts} == {asset}  # type: ignore[attr-defined]
        assert client.hexists(names.stage_state("fusion", shard), asset)
        for m in Modality:
            assert client.xpending(names.predictions_shard(m, shard), "fusion")["pending"] == 0
    assert worker.stats.fenced == 0 and worker.stats.dead_letters == 0
    client.close()


def test_alerts_service_refuses_a_cluster_with_a_reason(redis_cluster: LocalRedisCluster) -> None:
    client = redis_cluster.client()
    with pytest.raises(ValueError, match="single Redis server.*docs/streams.md"):
        alert_workers(client, _names(), AlertsSettings())  # type: ignore[arg-type]
    client.close()
