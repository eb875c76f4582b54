"""Fixtures shared by every test folder: a real Redis server and unique stream prefixes."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
import redis

from linewatch.contract import StreamNames
from tests.redis_cluster import LocalRedisCluster

DEFAULT_TEST_REDIS = "redis://127.0.0.1:6379/0"


@pytest.fixture(scope="session")
def redis_url() -> str:
    """URL of the real Redis server the tests use (``LINEWATCH_TEST_REDIS_URL``, else 127.0.0.1:6379).

    .ci/run starts one when none answers; a missing server is an error, never a skip.
    """
    url = os.environ.get("LINEWATCH_TEST_REDIS_URL", DEFAULT_TEST_REDIS)
    client = redis.Redis.from_url(url, socket_connect_timeout=2)
    try:
        client.ping()
    except redis.ConnectionError as exc:
        raise RuntimeError(f"no Redis at {url}: start one (see .ci/run) or set LINEWATCH_TEST_REDIS_URL") from exc
    finally:
        client.close()
    return url


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


@pytest.fixture
def stream_names(redis_client: redis.Redis) -> Iterator[StreamNames]:
    """A unique stream prefix per test; every key under it is deleted afterwards."""
    names = StreamNames(prefix=f"t{uuid.uuid4().hex[:10]}", shards=2)
    yield names
    keys = list(redis_client.scan_iter(match=f"{names.prefix}:*", count=1000))
    if keys:
        redis_client.delete(*keys)


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRedisCluster]:
    """A real Redis Cluster of 3 masters (Debian's ``redis-server --cluster-enabled yes`` on free
    local ports, ``cluster_state:ok`` awaited); stopped at the end. No redis-server: an error."""
    cluster = LocalRedisCluster(tmp_path_factory.mktemp("redis-cluster")).start()
    yield cluster
    cluster.stop()
