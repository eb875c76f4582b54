"""``linewatch ingest --health``: is an ingest running on this landing zone, and does it answer?

Healthy when (1) some process holds the landing zone's ``flock`` (an ingest is running here) and
(2) its supervisor recorded an answered probe (a manifest line that went through the source, the
operator and Redis) less than ``max_age_s`` ago (``<prefix>:ingest:health``; the supervisor sends one
every 30 s). For a container ``HEALTHCHECK`` or a systemd/monitoring timer (docs/supervision.md).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import redis

from linewatch.contract import StreamNames
from linewatch.redis_connection import redis_client
from linewatch.settings import Settings
from pipeline.supervision.lock import LANDING_LOCK_NAME, is_locked, read_holder


@dataclass(frozen=True)
class HealthReport:
    healthy: bool
    message: str


def _redis_url(settings: Settings) -> str | None:
    if settings.redis.url:
        return settings.redis.url
    spec = Path(settings.data_dir) / "flink" / "run" / "spec.json"  # the embedded server's URL, as the job got it
    try:
        return str(json.loads(spec.read_text())["redis_url"])
    except (OSError, ValueError, KeyError):
        return None


def check_health(settings: Settings, max_age_s: float = 120.0) -> HealthReport:
    lock = Path(settings.landing) / LANDING_LOCK_NAME
    if not is_locked(lock):
        return HealthReport(False, f"unhealthy: no ingest holds {settings.landing} (lock {lock} is free)")
    holder = read_holder(lock)
    who = holder.describe() if holder is not None else "an unknown process"
    url = _redis_url(settings)
    if url is None:
        return HealthReport(False, f"unhealthy: ingest by {who} runs, but no Redis URL is known to check its probe")
    key = StreamNames(settings.streams.prefix, settings.streams.shards).ingest_health()
    client = redis_client(settings.redis, url, socket_timeout=5, socket_connect_timeout=5, decode_responses=True)
    try:
        data = cast(dict[str, str], client.hgetall(key))
    except redis.RedisError as exc:
        return HealthReport(False, f"unhealthy: ingest by {who} runs, but Redis at {url} does not answer: {exc}")
    finally:
        client.close()
    if not data or "probe_ok_ms" not in data:
        return HealthReport(False, f"unhealthy: ingest by {who} runs but has not answered a probe yet ({key} empty)")
    age = time.time() - int(data["probe_ok_ms"]) / 1000
    if age > max_age_s:
        return HealthReport(False, f"unhealthy: ingest by {who}: last answered probe {age:.0f}s ago (> {max_age_s:.0f}s)")
    return HealthReport(True, f"healthy: ingest by {who}; last probe answered {age:.0f}s ago in {data.get('probe_s')}s")
