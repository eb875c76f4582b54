"""Bounded memory: the supervisor rolls the job over to a fresh FileSource (restart from its
checkpoint, source state left behind) while data keeps arriving; nothing is lost, nothing is
duplicated, per-asset state (order, PLC windows) carries across."""

from __future__ import annotations

import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

import pytest
import redis

from linewatch.contract import StreamNames
from linewatch.flink_settings import FlinkSettings
from linewatch.settings import Settings
from pipeline.landing import ManifestWriter, publish_existing
from pipeline.runner import IngestSupervisor
from tests.pipeline.conftest import feature_entries, simulate

pytestmark = [pytest.mark.flink, pytest.mark.slow]


def test_rollover_to_a_fresh_source_loses_and_duplicates_nothing(
    tmp_path: Path, prefix: str, redis_url: str, ingest_redis: redis.Redis
) -> None:
    landing = tmp_path / "landing"
    simulate(landing, n_assets=3, seconds=30, roll_s=2.0, seed=13)
    staging = ManifestWriter(landing, epoch=9, manifest_dir="manifests-staging")
    entries = publish_existing(landing, staging, lines_per_manifest=6)
    staged = sorted((landing / "manifests-staging").glob("gw-*.jsonl"))
    (landing / "manifests").mkdir()
    names = StreamNames(prefix=prefix, shards=2)
    expected = {m: Counter((e.asset_id, e.event_time_ms) for e in entries if e.kind == m) for m in ("thermal", "audio")}
    settings = Settings(
        data_dir=tmp_path / "data", landing_dir=landing, streams={"prefix": prefix, "shards": 2},
        flink=FlinkSettings(checkpoint_interval_ms=300, source_rollover_manifests=max(4, len(staged) // 5)),
    )
    supervisor = IngestSupervisor(settings, redis_url)
    supervisor.start()
    assert supervisor.job is not None and supervisor.job.spec.source_generation == 0
    generations = [0]
    stop_publishing = threading.Event()

    def gateway() -> None:  # publishes at a steady pace, also while the job restarts
        for path in staged:
            path.rename(landing / "manifests" / path.name)
            if stop_publishing.wait(0.4):
                return

    publisher = threading.Thread(target=gateway, daemon=True)
    publisher.start()
    try:
        deadline = time.monotonic() + 300
        n_plc = sum(e.kind == "plc" for e in entries)

        def complete() -> bool:
            return all(len(feature_entries(ingest_redis, names, m)) >= sum(expected[m].values()) for m in expected) \
                and int(ingest_redis.hget(f"{prefix}:ingest:stats", "blobs.plc") or 0) >= n_plc

        while publisher.is_alive() or not complete():
            assert time.monotonic() < deadline, f"timed out; job stats {supervisor.job.stats() if supervisor.job else {}}"
            if supervisor.check():
                generations.append(supervisor.job.spec.source_generation)  # type: ignore[union-attr]
            time.sleep(0.1)
    finally:
        stop_publishing.set()
        supervisor.stop()

    assert supervisor.rollovers >= 2, f"expected at least two rollovers, got {supervisor.rollovers}"
    assert len(set(generations)) == len(generations), f"every rollover must start a new source: {generations}"
    stats = {k.decode(): v.decode() for k, v in ingest_redis.hgetall(f"{prefix}:ingest:stats").items()}
    for modality, want in expected.items():
        got = Counter((m.asset_id, m.event_time_ms) for _, m in feature_entries(ingest_redis, names, modality))
        assert got == want, f"{modality}: lost {want - got}, duplicated {got - want}; job stats {stats}"
    for modality in ("thermal", "audio", "plc"):
        per_asset: dict[str, list[int]] = defaultdict(list)
        for _, m in feature_entries(ingest_redis, names, modality):
            per_asset[m.asset_id].append(m.event_time_ms)
        for asset, times in per_asset.items():
            assert times == sorted(set(times)), f"{modality} {asset}: out of order or duplicated"
    plc = [m for _, m in feature_entries(ingest_redis, names, "plc")]
    for asset in {e.asset_id for e in entries}:
        ends = [m.window_end_ms for m in plc if m.asset_id == asset]
        assert ends and all(b - a == 1000 for a, b in zip(ends, ends[1:])), f"PLC windows of {asset} have a hole"
    assert not list(ingest_redis.xrange(names.deadletter)), f"a rollover must not dead-letter valid input: {stats}"
