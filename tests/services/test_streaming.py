"""linewatch.streaming against a real Redis: leases and fencing, FIFO, redelivery, dead letters,
backpressure, observability endpoints."""

from __future__ import annotations

import json
import urllib.request

import pytest
import redis

from linewatch.contract import (
    AlertRequest,
    DeadLetter,
    DeadLetterReason,
    StreamNames,
    decode_message,
)
from linewatch.streaming import (
    Commit,
    FencedOut,
    FencedShard,
    Health,
    LeaseClient,
    ObservabilityServer,
    OrderViolation,
    StreamWorker,
    WorkerConfig,
)
from tests.services.support import running, wait_for


class Echo:
    """Copies each entry to ``<stream>:out`` keyed by its id; ``fail`` entries raise, ``bad`` are dead-lettered."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def handle(self, batch) -> None:  # type: ignore[no-untyped-def]
        for e in batch.entries:
            if e.fields.get(b"fail"):
                raise RuntimeError(f"cannot handle {e.entry_id}")
        for e in batch.entries:
            if e.fields.get(b"bad"):
                batch.dead_letter(e, DeadLetterReason.SCHEMA_ERROR, "bad entry")
                continue
            self.seen.append(e.fields[b"v"].decode())
            batch.commit(batch.shard(e)).xadd(e.stream + ":out", {"v": e.fields[b"v"]}, entry_id=e.entry_id)
            batch.ack(e)


def _inp(names: StreamNames, shard: int) -> str:
    """The test's input stream of ``shard`` (tagged like every per-shard key: one hash slot per shard)."""
    return f"{names.prefix}:in:{names.shard_tag(shard)}"


def _worker(client: redis.Redis, names: StreamNames, handler, **kw) -> StreamWorker:  # type: ignore[no-untyped-def]
    cfg = dict(role="echo", group="g", units=2, lease_ttl_ms=600, retry_base_ms=10, retry_max_ms=50, tick_ms=100,
               lag_interval_ms=100)
    cfg.update(kw)
    return StreamWorker(client, names, WorkerConfig(**cfg), lambda u: [_inp(names, u)], handler)


def test_lease_fencing_and_takeover(redis_client: redis.Redis, stream_names: StreamNames) -> None:
    key = stream_names.lease("echo", 0)
    a, b = LeaseClient(redis_client, "A", 300), LeaseClient(redis_client, "B", 300)
    la = a.acquire("echo", 0, key)
    assert la is not None and b.acquire("echo", 0, key) is None
    assert a.renew(la)
    wait_for(lambda: a.holder(key).owner == "", 5, "lease expiry")
    lb = b.acquire("echo", 0, key)
    assert lb is not None and lb.token == la.token + 1
    assert not a.renew(la)
    commit = Commit()
    commit.hset(stream_names.stage_state("echo", 0), {"x": "stale"})
    with pytest.raises(FencedOut, match="moved to B"):
        FencedShard(redis_client, "g", "A").commit(la, commit)
    assert redis_client.hget(stream_names.stage_state("echo", 0), "x") is None
    assert b.release(lb) and a.acquire("echo", 0, key) is not None


def test_keyed_output_is_idempotent_and_a_gap_is_refused(redis_client: redis.Redis, stream_names: StreamNames) -> None:
    key, out = stream_names.lease("echo", 0), f"{stream_names.prefix}:out"
    lease = LeaseClient(redis_client, "A", 5000).acquire("echo", 0, key)
    shard = FencedShard(redis_client, "g", "A")
    c = Commit()
    c.xadd(out, {"v": "1"}, entry_id="5-0")
    c.xadd(out, {"v": "2"}, entry_id="7-0")
    assert shard.commit(lease, c).written == 2
    again = Commit()
    again.xadd(out, {"v": "other"}, entry_id="7-0")
    res = shard.commit(lease, again)
    assert (res.written, res.duplicates) == (0, 1) and redis_client.xlen(out) == 2
    gap = Commit()
    gap.xadd(out, {"v": "late"}, entry_id="6-0")
    gap.hset(f"{stream_names.prefix}:h", {"x": "1"})
    with pytest.raises(OrderViolation):
        shard.commit(lease, gap)
    assert redis_client.xlen(out) == 2


def test_fifo_poison_and_max_deliveries(redis_client: redis.Redis, stream_names: StreamNames) -> None:
    echo = Echo()
    worker = _worker(redis_client, stream_names, echo, max_deliveries=3)
    inp = _inp(stream_names, 0)
    with running(worker):
        for i in range(10):
            redis_client.xadd(inp, {"v": str(i)})
        redis_client.xadd(inp, {"v": "poison", "fail": "1"})
        redis_client.xadd(inp, {"v": "bad", "bad": "1"})
        for i in range(10, 15):
            redis_client.xadd(inp, {"v": str(i)})
        wait_for(lambda: redis_client.xlen(inp + ":out") == 15, 30, "15 outputs")
        wait_for(lambda: redis_client.xlen(stream_names.deadletter) == 2, 30, "2 dead letters")
        wait_for(lambda: redis_client.xpending(inp, "g")["pending"] == 0, 10, "nothing pending")
    assert [f[b"v"].decode() for _, f in redis_client.xrange(inp + ":out")] == [str(i) for i in range(15)]
    dls = [decode_message(f) for _, f in redis_client.xrange(stream_names.deadletter)]
    assert all(isinstance(d, DeadLetter) for d in dls)
    reasons = {d.reason: d for d in dls}
    assert "cannot handle" in reasons[DeadLetterReason.MAX_DELIVERIES].detail
    assert "delivered 4 times" in reasons[DeadLetterReason.MAX_DELIVERIES].detail
    assert reasons[DeadLetterReason.SCHEMA_ERROR].raw_ref.startswith(inp + "/")


def test_pending_of_a_dead_consumer_is_claimed_first(redis_client: redis.Redis, stream_names: StreamNames) -> None:
    inp = _inp(stream_names, 0)
    redis_client.xgroup_create(inp, "g", id="0", mkstream=True)
    for i in range(6):
        redis_client.xadd(inp, {"v": str(i)})
    # a consumer that read three entries and died without acknowledging them
    redis_client.xreadgroup("g", "dead-consumer", {inp: ">"}, count=3)
    for i in range(6, 9):
        redis_client.xadd(inp, {"v": str(i)})
    echo = Echo()
    with running(_worker(redis_client, stream_names, echo)):
        wait_for(lambda: redis_client.xlen(inp + ":out") == 9, 20, "9 outputs")
    assert echo.seen == [str(i) for i in range(9)]
    assert redis_client.xpending(inp, "g")["pending"] == 0


def test_two_workers_share_the_shards(redis_client: redis.Redis, stream_names: StreamNames) -> None:
    a, b = _worker(redis_client, stream_names, Echo()), _worker(redis_client, stream_names, Echo())
    with running(a), running(b):
        wait_for(lambda: len(a.owned_shards()) == 1 and len(b.owned_shards()) == 1, 20, "one shard each")
        assert set(a.owned_shards()) | set(b.owned_shards()) == {0, 1}


def test_trimmed_pending_entries_are_dead_lettered_and_raise_backpressure(
        redis_client: redis.Redis, stream_names: StreamNames) -> None:
    inp = _inp(stream_names, 0)
    redis_client.xgroup_create(inp, "g", id="0", mkstream=True)
    ids = [redis_client.xadd(inp, {"v": str(i)}) for i in range(4)]
    redis_client.xreadgroup("g", "dead-consumer", {inp: ">"}, count=4)
    redis_client.xdel(inp, ids[0], ids[1])  # retention removed them before they were processed
    with running(_worker(redis_client, stream_names, Echo(), maxlen=1000)):
        wait_for(lambda: redis_client.xlen(inp + ":out") == 2, 20, "2 outputs")
        wait_for(lambda: redis_client.xlen(stream_names.alert_requests()) >= 1, 20, "backpressure alert")
    dls = [decode_message(f) for _, f in redis_client.xrange(stream_names.deadletter)]
    assert sorted(d.reason for d in dls) == [DeadLetterReason.TRIMMED] * 2
    req = decode_message(redis_client.xrange(stream_names.alert_requests())[0][1])
    assert isinstance(req, AlertRequest) and req.source == "backpressure" and req.state == "raise"


def test_lag_near_retention_raises_backpressure(redis_client: redis.Redis, stream_names: StreamNames) -> None:
    inp = _inp(stream_names, 0)
    for i in range(120):
        redis_client.xadd(inp, {"v": str(i), "fail": "1"})
    worker = _worker(redis_client, stream_names, Echo(), maxlen=100, max_deliveries=1000, retry_base_ms=1000)
    with running(worker):
        wait_for(lambda: redis_client.xlen(stream_names.alert_requests()) >= 1, 20, "backpressure alert")
    req = decode_message(redis_client.xrange(stream_names.alert_requests())[0][1])
    assert req.episode_key == f"backpressure:g:{inp}" and "unread" in req.message
    text = worker.metrics.registry.get_sample_value("linewatch_backpressure", {"role": "echo", "stream": inp})
    assert text == 1.0


def test_observability_endpoints(redis_client: redis.Redis, stream_names: StreamNames) -> None:
    worker = _worker(redis_client, stream_names, Echo())
    server = ObservabilityServer(worker.metrics.registry, worker.health).start()
    try:
        def get(path: str) -> tuple[int, bytes]:
            try:
                with urllib.request.urlopen(server.url + path, timeout=5) as r:
                    return r.status, r.read()
            except urllib.error.HTTPError as exc:
                return exc.code, exc.read()
        assert get("/readyz")[0] == 503
        with running(worker):
            redis_client.xadd(_inp(stream_names, 1), {"v": "x"})
            wait_for(lambda: worker.stats.handled == 1, 10, "one entry")
            assert get("/readyz")[0] == 200 and get("/healthz")[0] == 200
            code, body = get("/metrics")
            assert code == 200 and b'linewatch_entries_total{outcome="ok",role="echo"} 1.0' in body
            assert b"linewatch_batch_size_bucket" in body and b"linewatch_shards_owned" in body
        assert json.loads(get("/readyz")[1])["ok"] is False
    finally:
        server.stop()


def test_health_goes_stale() -> None:
    h = Health(stale_after_s=0.0)
    assert h.alive()[0] is False and "stuck" in h.alive()[1]
