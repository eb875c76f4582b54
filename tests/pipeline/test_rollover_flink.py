"""Bounded memory: the supervisor rolls the job over to a fresh FileSource (restart from its
checkpoint, source state left behind) while data keeps arriving; nothing is lost, nothing is
duplicated, per-asset state (order, PLC windows) carries across."""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path

import pytest
import redis

from linewatch.contract import StreamNames
from linewatch.flink_settings import FlinkSettings
from linewatch.settings import Settings
from pipeline.landing import ManifestWriter, publish_existing
from pipeline.runner import IngestSupervisor
from tests.pipeline.conftest import assert_exactly_once_in_order, feature_entries, simulate

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
        # small enough that what piles up during one restart (under load: ~15 s of publishing) leaves
        # enough for a second rollover; after two, rollovers stop (each costs a restart)
        flink=FlinkSettings(checkpoint_interval_ms=300, source_rollover_manifests=max(4, len(staged) // 8)),
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
                and int(ingest_redis.hget(StreamNames(prefix).ingest_stats(), "blobs.plc") or 0) >= n_plc

        def archived_all() -> bool:  # rollovers count archived manifests: let the janitor catch up
            return not any((landing / "manifests").glob("gw-*.jsonl"))

        while True:
            # the janitor may archive a whole backlog in one pass: look at the count once more after that
            done = not publisher.is_alive() and complete() and archived_all()
            assert time.monotonic() < deadline, f"timed out; job stats {supervisor.job.stats() if supervisor.job else {}}"
            if supervisor.check():
                generations.append(supervisor.job.spec.source_generation)  # type: ignore[union-attr]
                if supervisor.rollovers >= 2:
                    supervisor.flink = supervisor.flink.model_copy(update={"source_rollover_manifests": 0})
            if done:
                break
            time.sleep(0.1)
    finally:
        stop_publishing.set()
        supervisor.stop()

    assert supervisor.rollovers >= 2, f"expected at least two rollovers, got {supervisor.rollovers}"
    assert len(set(generations)) == len(generations), f"every rollover must start a new source: {generations}"
    assert_exactly_once_in_order(ingest_redis, names, prefix, entries, "a rollover")
    # retained checkpoints of the jobs before the last rollover are pruned (Flink keeps them forever)
    job_dirs = [d for d in (tmp_path / "data" / "flink" / "checkpoints").iterdir() if d.is_dir()]
    assert len(job_dirs) <= 2, f"old jobs' checkpoints were not pruned: {job_dirs}"
