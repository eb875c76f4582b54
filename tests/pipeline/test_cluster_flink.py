"""Cluster mode: a standalone cluster from the wheel's scripts (two TaskManagers of one slot:
how the job scales out, each TaskManager with its own Python), the same job submitted with
``flink run -py`` at parallelism 2, verified, cancelled, and the cluster stopped (even when the
test fails)."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

from linewatch.contract import StreamNames
from pipeline.cluster import StandaloneCluster
from pipeline.landing import ManifestWriter
from pipeline.runner import latest_checkpoint
from tests.pipeline.conftest import feature_entries, make_job, simulate, wait_for

pytestmark = [pytest.mark.flink, pytest.mark.slow]


def test_submit_to_a_standalone_cluster(tmp_path: Path, prefix: str, redis_url: str, ingest_redis: redis.Redis) -> None:
    landing = tmp_path / "landing"
    simulate(landing, n_assets=4, seconds=10, roll_s=5.0, seed=3)
    names = StreamNames(prefix=prefix, shards=2)
    job = make_job(landing, prefix, tmp_path / "job", redis_url, checkpoint_interval_ms=1000, parallelism=2)
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(job.spec.to_json())
    with StandaloneCluster(tmp_path / "cluster", taskmanagers=2) as cluster:
        assert cluster.rest("/overview")["taskmanagers"] == 2
        job_id = cluster.submit(spec_path)
        assert cluster.wait_state(job_id, {"RUNNING", "FAILED"}) == "RUNNING"
        assert job_id in cluster.running_jobs()
        from pipeline.landing import publish_existing

        entries = publish_existing(landing, ManifestWriter(landing, epoch=1), lines_per_manifest=20)
        n_thermal = sum(e.kind == "thermal" for e in entries)
        n_audio = sum(e.kind == "audio" for e in entries)
        wait_for(lambda: len(feature_entries(ingest_redis, names, "thermal")) == n_thermal
                 and len(feature_entries(ingest_redis, names, "audio")) == n_audio, 120, "entries from the cluster job")
        assert feature_entries(ingest_redis, names, "plc")
        for modality in ("thermal", "audio", "plc"):  # per-asset order holds with assets split over subtasks
            per_asset: dict[str, list[int]] = {}
            for _, m in feature_entries(ingest_redis, names, modality):
                per_asset.setdefault(m.asset_id, []).append(m.event_time_ms)
            assert len(per_asset) == 4 and all(t == sorted(set(t)) for t in per_asset.values())
        # both subtasks (one per TaskManager) did work: each publishes its own latency
        wait_for(lambda: {b"latency_n.0", b"latency_n.1"} <= set(ingest_redis.hkeys(StreamNames(prefix).ingest_stats())), 30,
                 "metrics of both subtasks")
        assert not list(ingest_redis.xrange(names.deadletter))
        wait_for(lambda: latest_checkpoint(tmp_path / "job" / "checkpoints") is not None, 30, "a checkpoint")
        cluster.cancel(job_id)
        assert cluster.job_state(job_id) == "CANCELED"
    # stopped: the REST port no longer answers
    with pytest.raises(OSError):
        cluster.rest("/overview")
