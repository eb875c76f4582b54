"""Bounded, honest Redis memory (issue 8) against real servers: retention by bytes and age with
``XTRIM MINID``, never past an entry a consumer group has not read (backpressure alert instead),
the embedded server's ``maxmemory`` + ``noeviction``, and stream workers that survive a full server."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import redis
from typer.testing import CliRunner

from linewatch.contract import AlertRequest, StreamNames, decode_message
from linewatch.embedded_redis import EmbeddedRedis, redis_url
from linewatch.retention_settings import RetentionSettings
from linewatch.settings import load_settings
from linewatch.streaming import StreamWorker, WorkerConfig
from linewatch.streaming.retention import RetentionKeeper
from tests.services.support import running, wait_for
from tests.services.test_streaming import Echo

T0 = 1_700_000_000_000  # entry ids: milliseconds of "line time"
PAYLOAD = b"x" * 2000


def _fill(client: redis.Redis, stream: str, n: int, step_ms: int = 100) -> list[str]:
    pipe = client.pipeline(transaction=False)
    for i in range(n):
        pipe.xadd(stream, {"v": str(i), "pad": PAYLOAD}, id=f"{T0 + i * step_ms}-0")
    return [i.decode() for i in pipe.execute()]


def _keeper(client: redis.Redis, names: StreamNames, now_ms: int, **verdicts: object) -> RetentionKeeper:
    """A keeper whose only limited family is ``verdicts`` (the others: no limits), clock at ``now_ms``."""
    none = {"max_bytes": None, "max_age_s": None}
    settings = RetentionSettings(**{name: none for name in ("predictions", "shadow", "alerts", "deadletter",
                                                            "explanations", "drift", "feedback", "alert_requests")},
                                 verdicts={**none, **verdicts}, clear_after_passes=2)  # type: ignore[arg-type]
    return RetentionKeeper(client, names, settings, clock=lambda: now_ms / 1000.0)


def _ids(client: redis.Redis, stream: str) -> list[str]:
    return [eid.decode() for eid, _ in client.xrange(stream)]


def _requests(client: redis.Redis, names: StreamNames) -> list[AlertRequest]:
    out = [decode_message(f) for _, f in client.xrange(names.alert_requests())]
    return [r for r in out if isinstance(r, AlertRequest)]


def test_age_retention_trims_what_every_group_has_read(redis_client: redis.Redis, stream_names: StreamNames) -> None:
    stream = stream_names.verdicts_shard(0)
    ids = _fill(redis_client, stream, 100)  # 10 s of entries, one every 100 ms
    redis_client.xgroup_create(stream, "fast", id="0")
    redis_client.xgroup_create(stream, "slow", id="0")
    for group, n in (("fast", 100), ("slow", 80)):
        got = redis_client.xreadgroup(group, "c", {stream: ">"}, count=n)
        redis_client.xack(stream, group, *[eid for eid, _ in got[0][1]])
    keeper = _keeper(redis_client, stream_names, T0 + 9_950, max_age_s=5.0)  # wants everything before T0+4950 gone
    [report] = [r for r in keeper.run_once() if r.stream == stream]
    assert _ids(redis_client, stream) == ids[50:]  # both groups had read those: age alone decides
    assert report.trimmed == 50 and not report.blocked
    assert keeper.metrics.registry.get_sample_value(
        "linewatch_retention_trimmed_entries_total", {"family": "verdicts", "stream": stream}) == 50.0
    assert _requests(redis_client, stream_names) == []


def test_byte_budget_brings_the_family_within_budget(redis_client: redis.Redis, stream_names: StreamNames) -> None:
    a, b = stream_names.verdicts_shard(0), stream_names.verdicts_shard(1)
    _fill(redis_client, a, 400)
    _fill(redis_client, b, 400)
    before = int(redis_client.memory_usage(a)) + int(redis_client.memory_usage(b))
    budget = before // 4
    keeper = _keeper(redis_client, stream_names, T0 + 40_000, max_bytes=budget)  # no group: bytes alone decide
    for _ in range(3):
        keeper.run_once()
    after = int(redis_client.memory_usage(a, samples=0)) + int(redis_client.memory_usage(b, samples=0))
    assert 0.7 * budget <= after <= budget * 1.02, (before, budget, after)
    left_a, left_b = _ids(redis_client, a), _ids(redis_client, b)
    assert left_a and left_a[-1] == f"{T0 + 399 * 100}-0"  # the newest entries are the ones kept
    assert abs(len(left_a) - len(left_b)) <= 2  # one time horizon for the family's streams
    assert keeper.metrics.registry.get_sample_value("linewatch_stream_bytes", {"family": "verdicts", "stream": a}) > 0


def test_unread_entries_are_never_trimmed_and_raise_backpressure_until_the_group_catches_up(
        redis_client: redis.Redis, stream_names: StreamNames) -> None:
    stream = stream_names.verdicts_shard(0)
    ids = _fill(redis_client, stream, 200)
    redis_client.xgroup_create(stream, "alerting", id="0")
    got = redis_client.xreadgroup("alerting", "c", {stream: ">"}, count=60)[0][1]
    redis_client.xack(stream, "alerting", *[eid for eid, _ in got[:40]])  # 40 acked, 20 pending, 140 unread
    keeper = _keeper(redis_client, stream_names, T0 + 60_000, max_bytes=1_000, max_age_s=1.0)  # wants all gone
    reports = [r for r in keeper.run_once() if r.stream == stream]
    assert _ids(redis_client, stream) == ids[40:]  # the pending and the unread entries are all still there
    assert reports[0].blocked and reports[0].holders == ["alerting"] and reports[0].floor == ids[40]
    labels = {"family": "verdicts", "stream": stream}
    assert keeper.metrics.registry.get_sample_value("linewatch_retention_over_budget", labels) == 1.0
    [raised] = _requests(redis_client, stream_names)
    assert (raised.source, raised.state, raised.asset_id) == ("backpressure", "raise", "fleet")
    assert raised.episode_key == f"backpressure:retention:{stream}" and "alerting" in raised.message
    keeper.run_once()  # still behind: no second raise, nothing unread trimmed
    assert len(_requests(redis_client, stream_names)) == 1 and _ids(redis_client, stream) == ids[40:]

    redis_client.xack(stream, "alerting", *[eid for eid, _ in got[40:]])
    rest = redis_client.xreadgroup("alerting", "c", {stream: ">"})[0][1]
    redis_client.xack(stream, "alerting", *[eid for eid, _ in rest])  # caught up
    keeper.run_once()
    assert redis_client.xlen(stream) == 0
    assert keeper.metrics.registry.get_sample_value("linewatch_retention_over_budget", labels) == 0.0
    assert [r.state for r in _requests(redis_client, stream_names)] == ["raise"]  # clears after 2 calm passes
    keeper.run_once()
    reqs = _requests(redis_client, stream_names)
    assert [r.state for r in reqs] == ["raise", "clear"] and reqs[1].episode_key == raised.episode_key
    assert keeper.backpressured == []


def test_a_trim_never_passes_the_slowest_group(redis_client: redis.Redis, stream_names: StreamNames) -> None:
    stream = stream_names.verdicts_shard(1)
    ids = _fill(redis_client, stream, 50)
    redis_client.xgroup_create(stream, "a", id="0")
    redis_client.xgroup_create(stream, "b", id=ids[9])  # b starts after entry 9 and reads 10 more
    for group, n in (("a", 30), ("b", 10)):
        got = redis_client.xreadgroup(group, "c", {stream: ">"}, count=n)[0][1]
        redis_client.xack(stream, group, *[eid for eid, _ in got])
    keeper = _keeper(redis_client, stream_names, T0 + 3_500, max_age_s=1.0)  # wants entries 0..24 gone
    [report] = [r for r in keeper.run_once() if r.stream == stream]
    assert _ids(redis_client, stream) == ids[20:]  # b has read up to entry 19 (a to 29): the slowest wins
    assert report.blocked and report.holders == ["b"]


def test_embedded_server_runs_with_maxmemory_and_noeviction(tmp_path: Path) -> None:
    settings = load_settings(data_dir=tmp_path, **{"redis.embedded_maxmemory": 4 * 1024 * 1024})
    with redis_url(settings) as url:
        client = redis.Redis.from_url(url)
        config = client.config_get("maxmemory*")
        assert config["maxmemory"] == str(4 * 1024 * 1024) and config["maxmemory-policy"] == "noeviction"
        client.set("keep-me", "1")
        with pytest.raises(redis.OutOfMemoryError):
            for i in range(10_000):
                client.xadd("fill", {"pad": b"p" * 4096, "i": i})
        assert client.get("keep-me") == b"1"  # full means refused writes, never evicted keys
        assert client.xlen("fill") > 0
        client.close()
    default = load_settings(data_dir=tmp_path)
    expected = default.streams.retention.maxmemory_bytes()
    assert expected > default.streams.retention.total_bytes()
    with redis_url(default) as url:
        assert redis.Redis.from_url(url).config_get("maxmemory")["maxmemory"] == str(expected)


def _overfill(client: redis.Redis, stream: str) -> int:
    """Add entries until the server refuses (maxmemory, noeviction), then halve its limit, so that
    no write gets through until the test frees memory; returns how many entries were added."""
    n = 0
    with pytest.raises(redis.OutOfMemoryError):
        while True:
            client.xadd(stream, {"v": str(n), "pad": b"p" * 8192})
            n += 1
    client.config_set("maxmemory", int(client.info("memory")["used_memory"]) // 2)
    return n


def _echo_worker(client: redis.Redis, names: StreamNames, stream: str) -> StreamWorker:
    config = WorkerConfig(role="echo", group="g", units=1, retry_base_ms=10, retry_max_ms=100, lag_interval_ms=100,
                          lease_ttl_ms=1000)
    return StreamWorker(client, names, config, lambda u: [stream], Echo())


def test_a_worker_survives_a_full_server_and_loses_nothing(tmp_path: Path) -> None:
    names = StreamNames("oom", 1)
    stream = f"{names.prefix}:in:s0"
    with EmbeddedRedis(tmp_path / "redis", persist=False, maxmemory=6 * 1024 * 1024) as server:
        client = server.client()
        client.xgroup_create(stream, "g", id="0", mkstream=True)
        n = _overfill(client, stream)
        worker = _echo_worker(client, names, stream)
        with running(worker):
            wait_for(lambda: (worker.metrics.registry.get_sample_value(
                "linewatch_errors_total", {"role": "echo", "kind": "OutOfMemory"}) or 0) >= 3, 20, "OOM retries")
            assert client.xlen(stream + ":out") == 0
            client.config_set("maxmemory", 256 * 1024 * 1024)  # memory freed (an operator, or retention)
            wait_for(lambda: client.xlen(stream + ":out") == n, 30, "every entry handled once memory is back")
        assert client.xpending(stream, "g")["pending"] == 0 and worker.stats.dead_letters == 0
        client.close()


def test_a_worker_started_on_a_full_server_waits_for_memory_instead_of_crashing(tmp_path: Path) -> None:
    """Its consumer group does not exist yet and cannot be created while the server is full: the
    worker retries (counted as OutOfMemory) instead of its thread dying, is not ready meanwhile,
    and once memory is back creates the group from the stream's start and handles every entry."""
    names = StreamNames("oom2", 1)
    stream = f"{names.prefix}:in:s0"
    with EmbeddedRedis(tmp_path / "redis", persist=False, maxmemory=6 * 1024 * 1024) as server:
        client = server.client()
        n = _overfill(client, stream)
        worker = _echo_worker(client, names, stream)
        thread = threading.Thread(target=worker.run, daemon=True)
        thread.start()
        try:
            wait_for(lambda: (worker.metrics.registry.get_sample_value(
                "linewatch_errors_total", {"role": "echo", "kind": "OutOfMemory"}) or 0) >= 3, 20, "OOM retries")
            assert thread.is_alive() and not worker.health.ready()[0]
            client.config_set("maxmemory", 256 * 1024 * 1024)
            wait_for(lambda: worker.health.ready()[0], 30, "worker ready once memory is back")
            wait_for(lambda: client.xlen(stream + ":out") == n, 30, "every entry handled")
        finally:
            worker.stop()
            thread.join(timeout=30)
        assert not thread.is_alive()
        assert client.xpending(stream, "g")["pending"] == 0 and worker.stats.dead_letters == 0
        client.close()


def test_serve_retention_once_and_settings(redis_url: str, stream_names: StreamNames, redis_client: redis.Redis,
                                           monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from linewatch.cli.app import app

    stream = stream_names.deadletter
    _fill(redis_client, stream, 30)
    monkeypatch.setenv("LINEWATCH_STREAMS__RETENTION__DEADLETTER__MAX_AGE_S", "1")
    monkeypatch.setenv("LINEWATCH_STREAMS__PREFIX", stream_names.prefix)
    monkeypatch.setenv("LINEWATCH_STREAMS__SHARDS", str(stream_names.shards))
    monkeypatch.setenv("LINEWATCH_DATA_DIR", str(tmp_path))
    retention = load_settings().streams.retention
    assert retention.deadletter.max_age_s == 1.0
    assert retention.deadletter.max_bytes == 64 * 1024 * 1024  # setting one limit keeps the other's default
    result = CliRunner().invoke(app, ["serve", "retention", "--once", "--redis-url", redis_url])
    assert result.exit_code == 0, result.output
    assert "deadletter" in result.output and "noeviction" in result.output
    assert redis_client.xlen(stream) == 0  # entries from 2023 are older than 1 s; no group holds them
    with pytest.warns(DeprecationWarning, match="streams.retention"):
        load_settings(**{"streams.maxlen": 5000})


def test_keeper_thread_stops(redis_client: redis.Redis, stream_names: StreamNames) -> None:
    keeper = RetentionKeeper(redis_client, stream_names, RetentionSettings(interval_s=0.05))
    passes: list[int] = []
    thread = threading.Thread(target=keeper.run, kwargs={"on_pass": lambda r: passes.append(len(r))}, daemon=True)
    thread.start()
    wait_for(lambda: len(passes) >= 3, 10, "three passes")
    keeper.stop()
    thread.join(timeout=5)
    assert not thread.is_alive()
