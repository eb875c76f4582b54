"""The real ingestion job ingests the simulator's native output: no adapter, no manifests
published by the test. The simulator's manifests are the only input the job gets."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

import pytest
import redis

from linewatch.contract import StreamNames
from linewatch.simulator import Factory, SimulatorConfig
from pipeline.landing import parse_manifest_line
from tests.pipeline.conftest import feature_entries, make_job, wait_for

pytestmark = [pytest.mark.flink, pytest.mark.slow]

N_ASSETS = 2
SECONDS = 20


def test_the_job_ingests_native_simulator_manifests(
    tmp_path: Path, prefix: str, redis_url: str, ingest_redis: redis.Redis
) -> None:
    landing = tmp_path / "landing"
    # frequent nuisance alarms: alarm logs ride in the manifests before the PLC file of their roll
    config = SimulatorConfig(seed=13, batch_roll_seconds=5.0, nuisance_alarms_per_hour=2000.0)
    Factory(config, n_assets=N_ASSETS).run_batch(landing, SECONDS / 60.0, progress=False)
    entries = [parse_manifest_line(line) for path in sorted((landing / "manifests").glob("*.jsonl"))
               for line in path.read_text().splitlines()]
    kinds = Counter(e.kind for e in entries)
    assert set(kinds) == {"plc", "alarms", "thermal", "audio"}
    expected = {m: Counter((e.asset_id, e.event_time_ms) for e in entries if e.kind == m) for m in ("thermal", "audio")}
    names = StreamNames(prefix=prefix, shards=2)
    stats_key = StreamNames(prefix).ingest_stats()

    def stat(name: str) -> int:
        return int(ingest_redis.hget(stats_key, name) or 0)

    job = make_job(landing, prefix, tmp_path / "job", redis_url, checkpoint_interval_ms=2000)
    job.start()
    try:
        job.wait_ready()
        wait_for(lambda: all(len(feature_entries(ingest_redis, names, m)) >= sum(expected[m].values()) for m in expected)
                 and stat("blobs.plc") >= kinds["plc"] and stat("blobs.alarms") >= kinds["alarms"],
                 120, "every frame, clip, PLC file and alarm log", job)
    finally:
        job.stop()

    for modality, want in expected.items():
        got = Counter((m.asset_id, m.event_time_ms) for _, m in feature_entries(ingest_redis, names, modality))
        assert got == want, f"{modality}: lost {want - got}, duplicated {got - want}"
    assert not list(ingest_redis.xrange(names.deadletter)), "native simulator output must give no dead letter"
    assert stat("seq_gaps") == 0 and stat("alarm_late") == 0 and stat("plc_late_samples") == 0
    # `end` closes every window of the last roll when its file is read: 1 s windows up to the run's end
    start_ms = min(e.event_time_ms for e in entries)
    plc: dict[str, list[int]] = defaultdict(list)
    alarms_counted = 0
    for _, m in feature_entries(ingest_redis, names, "plc"):
        plc[m.asset_id].append(m.window_end_ms)  # type: ignore[attr-defined]
        alarms_counted += sum(m.alarm_counts.values())  # type: ignore[attr-defined]
    assert set(plc) == {e.asset_id for e in entries}
    for asset, ends in plc.items():
        assert ends == list(range(start_ms + 1000, start_ms + SECONDS * 1000 + 1, 1000)), f"PLC windows of {asset}"
    assert alarms_counted > 0
