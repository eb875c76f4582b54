"""The ingestion sink (``pipeline.redis_sink``) against real Redis servers: write first, then mark
(a failed XADD is written by the replay, never dropped as a duplicate), one bounded script reload
without double counting, no trimming, and (``test_sink_on_redis_cluster``) a real 3-master cluster."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from redis.cluster import RedisCluster

from linewatch.contract import DeadLetter, DeadLetterReason, Modality, StreamNames, decode_message, hash_tag
from pipeline.redis_sink import PendingEntry, RedisStreamWriter, SinkWriteError, connect, dedup_key_for
from tests.redis_cluster import LocalRedisCluster, RedisServer, free_ports
from tests.services.support import features


def feature_entry(names: StreamNames, asset: str, t_ms: int, modality: str = "plc") -> PendingEntry:
    return PendingEntry(stream=names.features(modality, asset), message=features(modality, asset, t_ms),
                        hwm_key=names.ingest_marks_of(modality, asset), hwm_field=asset, hwm_value=t_ms)


def dead_entry(names: StreamNames, ref: str) -> PendingEntry:
    msg = DeadLetter(source="pipeline.plc", reason=DeadLetterReason.TRUNCATED, detail="half a line", raw_ref=ref,
                     excerpt="1,2,", failed_at_ms=int(time.time() * 1000))
    return PendingEntry(stream=names.deadletter, message=msg,
                        dedup_key=dedup_key_for(names, ref, DeadLetterReason.TRUNCATED.value, "half a line"))


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A redis-server of this test alone: it may be put out of memory or have its scripts flushed."""
    server = RedisServer(free_ports(1)[0], tmp_path / "redis").start()
    yield server
    server.stop()


def test_failed_xadd_is_written_by_the_replay(redis_client: redis.Redis, stream_names: StreamNames,
                                              redis_url: str) -> None:
    """Old code moved the mark before XADD: after a WRONGTYPE the replay dropped the entry as a duplicate."""
    names = stream_names
    writer = RedisStreamWriter.open(redis_url, dedup_ttl_s=600)
    entry, dead = feature_entry(names, "PMP-01", 1_000), dead_entry(names, "plc/a.csv:3")
    for e in (entry, dead):
        redis_client.set(e.stream, "not a stream")  # XADD fails with WRONGTYPE
        with pytest.raises(SinkWriteError, match="WRONGTYPE"):
            writer.write([e])
        assert redis_client.type(e.stream) == b"string"
        redis_client.delete(e.stream)  # the operator fixes it; Flink replays from its checkpoint
        result = writer.write([e])
        assert (result.added, result.duplicates) == (1, 0), f"{e.stream}: the replay dropped the entry"
        assert redis_client.xlen(e.stream) == 1
        assert writer.write([e]).duplicates == 1  # and it is still written once only
    assert redis_client.hget(names.ingest_marks_of("plc", "PMP-01"), "PMP-01") == b"1000"
    writer.close()


def test_xadd_refused_for_memory_is_written_later(private_redis: RedisServer) -> None:
    """maxmemory + noeviction: XADD answers OOM; nothing is marked, the replay writes the entry."""
    names = StreamNames("oom", shards=2)
    client = private_redis.client()
    writer = RedisStreamWriter.open(private_redis.url, dedup_ttl_s=600)
    client.config_set("maxmemory-policy", "noeviction")
    client.config_set("maxmemory", "1")  # every write is over the limit
    batch = [feature_entry(names, "PMP-01", 1_000, "thermal"), dead_entry(names, "thermal/x.tiff")]
    with pytest.raises(SinkWriteError, match="maxmemory"):
        writer.write(batch)
    assert client.exists(names.features("thermal", "PMP-01"), names.ingest_marks_of("thermal", "PMP-01"),
                         names.deadletter, batch[1].dedup_key) == 0
    client.config_set("maxmemory", "0")
    result = writer.write(batch)
    assert (result.added, result.duplicates) == (2, 0)
    writer.close()
    client.close()


def test_script_reload_counts_once(private_redis: RedisServer) -> None:
    """SCRIPT FLUSH: the old code re-ran the whole pipeline, counters included (counted twice)."""
    names = StreamNames("noscript", shards=2)
    client = private_redis.client()
    writer = RedisStreamWriter.open(private_redis.url, dedup_ttl_s=600)
    stats = names.ingest_stats()
    client.script_flush()
    result = writer.write([feature_entry(names, "PMP-01", 1_000), dead_entry(names, "plc/b.csv:1")],
                          {"plc_windows": 1, "deadletters": 1}, stats)
    assert client.hgetall(stats) == {b"plc_windows": b"1", b"deadletters": b"1"}
    assert (result.added, result.duplicates, result.script_reloads) == (2, 0, 1)
    assert client.xlen(names.features("plc", "PMP-01")) == 1 and client.xlen(names.deadletter) == 1
    result = writer.write([feature_entry(names, "PMP-01", 2_000)], {"plc_windows": 1}, stats)  # loaded again
    assert (result.added, result.script_reloads) == (1, 0)
    assert client.hget(stats, "plc_windows") == b"2"
    writer.close()
    client.close()


def test_sink_never_trims(redis_client: redis.Redis, stream_names: StreamNames, redis_url: str) -> None:
    """No MAXLEN on the sink's XADD: entries a group has not read stay (retention is the keeper's job)."""
    names = stream_names
    stream = names.features("plc", "PMP-07")
    redis_client.xgroup_create(stream, "inference", id="0", mkstream=True)
    writer = RedisStreamWriter.open(redis_url, dedup_ttl_s=600)
    for start in range(0, 1_200, 200):
        writer.write([feature_entry(names, "PMP-07", t) for t in range(start + 1, start + 201)])
    assert redis_client.xlen(stream) == 1_200
    first = redis_client.xrange(stream, count=1)[0][1]
    assert decode_message(first).event_time_ms == 1  # type: ignore[attr-defined]
    writer.close()


def test_sink_on_redis_cluster(redis_cluster: LocalRedisCluster) -> None:
    """Assets on every shard (slots on all 3 masters), their marks and dead letters, through a real
    Redis Cluster: no CROSSSLOT (the old unsharded marks hash did), and the replay adds nothing."""
    names = StreamNames(f"c{time.time_ns() % 10**9}", shards=4)
    assets = {}
    i = 0
    while len(assets) < 4:
        assets.setdefault(names.shard_of(f"PMP-{i:02d}"), f"PMP-{i:02d}")
        i += 1
    writer = RedisStreamWriter.open(redis_cluster.url, dedup_ttl_s=600)
    assert isinstance(writer.client, RedisCluster)
    batches = [[feature_entry(names, a, t, m) for a in assets.values() for m in Modality] + [dead_entry(names, f"f{t}")]
               for t in (1_000, 2_000, 3_000)]
    stats = names.ingest_stats()
    for batch in batches:
        result = writer.write(batch, {"entries": len(batch)}, stats)
        assert (result.added, result.duplicates) == (len(batch), 0)
    for batch in batches:  # Flink replays everything since an old checkpoint
        assert writer.write(batch).duplicates == len(batch)
    cluster = writer.client
    assert isinstance(cluster, RedisCluster)
    nodes = {cluster.get_node_from_key(names.features("plc", a)).name for a in assets.values()}
    assert len(nodes) == 3, f"the shards' slots should spread over the 3 masters, got {nodes}"
    for shard, asset in assets.items():
        assert hash_tag(names.features("audio", asset)) == hash_tag(names.ingest_marks("audio", shard))
        for m in Modality:
            assert cluster.xlen(names.features(m, asset)) == 3
            assert cluster.hget(names.ingest_marks_of(m, asset), asset) == b"3000"
    assert cluster.xlen(names.deadletter) == 3
    assert int(cluster.hget(stats, "entries") or 0) == sum(len(b) for b in batches)
    cluster.script_flush()  # a failover or restart loses scripts: reloaded on every primary, once
    result = writer.write([feature_entry(names, a, 4_000) for a in assets.values()])
    assert (result.added, result.script_reloads) == (4, 1)
    writer.close()
    plain = connect(redis_cluster.url)
    assert isinstance(plain, RedisCluster)
    plain.close()
