"""The embedded server is a real valkey/redis binary: it serves streams and groups, then stops."""

from __future__ import annotations

from pathlib import Path

import redis

from linewatch.embedded_redis import EmbeddedRedis, find_server_binary
from linewatch.settings import load_settings


def test_embedded_server_streams_groups_and_clean_stop(tmp_path: Path) -> None:
    server = EmbeddedRedis(tmp_path / "redis")
    url = server.start()
    assert server.running
    client = redis.Redis.from_url(url)
    try:
        info = client.info("server")
        assert int(str(info.get("redis_version", "0")).split(".")[0]) >= 7
        client.xgroup_create("s", "g", id="0", mkstream=True)
        ids = [client.xadd("s", {"n": str(i)}) for i in range(5)]
        got = client.xreadgroup("g", "c1", {"s": ">"}, count=10)
        assert [eid for eid, _ in got[0][1]] == ids
        assert client.xpending("s", "g")["pending"] == 5
        client.xack("s", "g", *ids[:3])
        claimed = client.xautoclaim("s", "g", "c2", min_idle_time=0)
        assert [eid for eid, _ in claimed[1]] == ids[3:]
    finally:
        client.close()
    server.stop()
    assert not server.running
    try:
        redis.Redis.from_url(url, socket_connect_timeout=0.5).ping()
        raise AssertionError("server still answers after stop()")
    except redis.ConnectionError:
        pass


def test_data_survives_a_restart(tmp_path: Path) -> None:
    with EmbeddedRedis(tmp_path / "redis") as server:
        server.client().xadd("keep", {"a": "1"})
    with EmbeddedRedis(tmp_path / "redis") as server:
        assert server.client().xlen("keep") == 1


def test_redis_url_prefers_configured_server(tmp_path: Path, redis_url: str) -> None:
    from linewatch.embedded_redis import redis_url as resolve

    with resolve(load_settings(**{"redis.url": redis_url, "data_dir": tmp_path})) as url:
        assert url == redis_url
    with resolve(load_settings(**{"data_dir": tmp_path})) as url:
        assert url != redis_url
        assert redis.Redis.from_url(url).ping()
    assert (tmp_path / "redis").is_dir()
    assert find_server_binary().is_file()
