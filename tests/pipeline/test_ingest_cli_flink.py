"""``linewatch ingest`` as an operator runs it: a process that ingests until SIGTERM, then
cancels the job (checkpoint retained) and exits 0; started again it resumes from the checkpoint
with a fresh source, and files published while it was down still arrive once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from linewatch.contract import StreamNames
from pipeline.landing import ManifestWriter, publish_existing
from tests.pipeline.conftest import assert_exactly_once_in_order, feature_entries, simulate, wait_for

pytestmark = [pytest.mark.flink, pytest.mark.slow]

PROJECT = Path(__file__).resolve().parents[2]


def start_cli(landing: Path, data: Path, prefix: str, redis_url: str, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "LINEWATCH_DATA_DIR": str(data), "LINEWATCH_REDIS__URL": redis_url,
           "LINEWATCH_STREAMS__PREFIX": prefix, "LINEWATCH_STREAMS__SHARDS": "2",
           "LINEWATCH_FLINK__CHECKPOINT_INTERVAL_MS": "500", "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([str(Path(sys.executable).parent / "linewatch"), "ingest", "--landing", str(landing)],
                            cwd=PROJECT, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT)


def test_linewatch_ingest_stops_on_sigterm_and_resumes(
    tmp_path: Path, prefix: str, redis_url: str, ingest_redis: redis.Redis
) -> None:
    landing = tmp_path / "landing"
    simulate(landing, n_assets=2, seconds=12, roll_s=2.0, seed=5)
    staging = ManifestWriter(landing, epoch=2, manifest_dir="manifests-staging")
    entries = publish_existing(landing, staging, lines_per_manifest=8)
    staged = sorted((landing / "manifests-staging").glob("gw-*.jsonl"))
    (landing / "manifests").mkdir()
    half = len(staged) // 2
    names = StreamNames(prefix=prefix, shards=2)

    def arrived(part: list) -> bool:
        want = sum(e.kind == "thermal" for e in part)
        return len(feature_entries(ingest_redis, names, "thermal")) >= want

    first_part = [e for e in entries if any(e.path in p.read_text() for p in staged[:half])]
    for path in staged[:half]:
        path.rename(landing / "manifests" / path.name)
    log = tmp_path / "ingest-1.log"
    cli = start_cli(landing, tmp_path / "data", prefix, redis_url, log)
    try:
        wait_for(lambda: arrived(first_part) or cli.poll() is not None, 180, "the first half")
        assert cli.poll() is None, log.read_text()[-3000:]
        wait_for(lambda: any((tmp_path / "data" / "flink" / "checkpoints").glob("*/chk-*/_metadata")), 30,
                 "a checkpoint")
    finally:
        cli.send_signal(signal.SIGTERM)
        assert cli.wait(timeout=90) == 0, log.read_text()[-3000:]
    assert "stopped" in log.read_text()

    for path in staged[half:]:  # published while the job is down
        path.rename(landing / "manifests" / path.name)
    log2 = tmp_path / "ingest-2.log"
    cli = start_cli(landing, tmp_path / "data", prefix, redis_url, log2)
    try:
        n_plc = sum(e.kind == "plc" for e in entries)
        wait_for(lambda: (arrived(entries) and len(feature_entries(ingest_redis, names, "audio"))
                          >= sum(e.kind == "audio" for e in entries)
                          and int(ingest_redis.hget(StreamNames(prefix).ingest_stats(), "blobs.plc") or 0) >= n_plc)
                 or cli.poll() is not None, 180, "everything after the resume")
        assert cli.poll() is None, log2.read_text()[-3000:]
        spec = (tmp_path / "data" / "flink" / "run" / "spec.json").read_text()
        assert '"source_generation": 0' not in spec, "a resume must start a fresh source"
    finally:
        cli.send_signal(signal.SIGTERM)
        assert cli.wait(timeout=90) == 0, log2.read_text()[-3000:]
    assert_exactly_once_in_order(ingest_redis, names, prefix, entries, "a stop and resume")
