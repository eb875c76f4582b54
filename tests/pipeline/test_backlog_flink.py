"""A backlog of many one-line manifests, all waiting when the job starts: the FileSource hands
them out in directory order (no particular order), so each asset's lines arrive shuffled and
most are held back for a missing seq. Every entry must still come out exactly once, in order.

Before 2026-11-30 this collapsed: every held line was re-encoded on every input, and the 30 s
reorder timer then skipped seqs that were still on their way (measured: 81 of 4,000 frames in
400 s, the rest lost; docs/benchmarks.md, "Backlog")."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

from linewatch.contract import StreamNames
from pipeline.landing import ManifestWriter, publish_existing
from tests.pipeline.conftest import assert_exactly_once_in_order, feature_entries, make_job, simulate, wait_for

pytestmark = [pytest.mark.flink, pytest.mark.slow]


def test_a_backlog_of_one_line_manifests_comes_out_exactly_once_in_order(
    tmp_path: Path, prefix: str, redis_url: str, ingest_redis: redis.Redis
) -> None:
    landing = tmp_path / "landing"
    simulate(landing, n_assets=3, seconds=20, roll_s=2.0, seed=21)
    entries = publish_existing(landing, ManifestWriter(landing, epoch=3), lines_per_manifest=1)
    assert len(list((landing / "manifests").iterdir())) == len(entries) > 150
    names = StreamNames(prefix=prefix, shards=2)
    # reorder_timeout 1 s: the timer fires many times while lines wait; it must not skip listed seqs
    job = make_job(landing, prefix, tmp_path / "job", redis_url, checkpoint_interval_ms=1000, reorder_timeout_ms=1000)
    job.start()
    try:
        want = {m: sum(e.kind == m for e in entries) for m in ("thermal", "audio")}
        n_plc = sum(e.kind == "plc" for e in entries)
        wait_for(lambda: all(len(feature_entries(ingest_redis, names, m)) >= n for m, n in want.items())
                 and int(ingest_redis.hget(StreamNames(prefix).ingest_stats(), "blobs.plc") or 0) >= n_plc, 180,
                 "every entry of the backlog", job)
        stats = job.stats()
    finally:
        job.stop()
    assert int(stats.get("reorder_held", 0)) > 0, f"the backlog arrived in order, so it tested nothing: {stats}"
    assert "seq_gaps" not in stats and "late_after_gap" not in stats, stats
    assert_exactly_once_in_order(ingest_redis, names, prefix, entries, "a backlog")
