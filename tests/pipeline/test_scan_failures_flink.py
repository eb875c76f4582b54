"""Failed directory scans under the janitor are rare, counted, and harmless (issue 13, item 3).

Flink's enumerator lists ``manifests/`` and then stats every entry; a manifest the janitor archives
in between fails the whole scan ("Failed to enumerate files", FileNotFoundException); the next scan,
one interval later, succeeds. The janitor moves manifests only in the quiet part of the
enumerator's cycle, which it observes with inotify (``pipeline.landing.scan_gate``); on a loaded
machine a scan can still be slower than the gate assumes, so the failures are counted
(``IngestJob.scan_failures``, published by the supervisor as ``scan_failures``). Here a gateway
publishes one-frame manifests at 60/s while the janitor archives every 100 ms (10x the default
rate of archive passes, checkpoints every 300 ms): the count from the job's own Flink log must
equal the metric; at least half the archives must find a quiet window; the failed scans may exceed the
archives moved without one (``janitor_ungated``) by at most 1 per 100 archived manifests (1, 0, 1 of
1,200 measured alone; 9 with a second Flink job on the two cores; on 2026-12-07's loaded machine 26,
35 and 26 with 253, 386 and 219 archives ungated); and no frame may be lost (docs/ingestion.md,
"Directory scans").
"""

from __future__ import annotations

import io
import json
import threading
import time
from pathlib import Path

import pytest
import redis
import tifffile

from linewatch.contract import StreamNames
from pipeline.landing import ManifestWriter
from tests.pipeline.conftest import make_job, scene_frame, wait_for

pytestmark = [pytest.mark.flink, pytest.mark.slow]

SCAN_FAILURE = "Failed to enumerate files"


def write_registry(landing: Path, assets: list[str]) -> None:
    """``assets.json`` naming the gateway's assets (unknown assets are dead letters)."""
    tags = [{"name": "motor_current_a", "unit": "A", "valid_min": 0, "valid_max": 500}]
    (landing / "assets.json").write_text(json.dumps(
        {"assets": [{"asset_id": a, "asset_type": "pump", "regions": {}, "region_fit": False, "tags": tags} for a in assets]}))


def frame(value: int) -> bytes:
    buf = io.BytesIO()
    tifffile.imwrite(buf, scene_frame(29315 + value % 500))
    return buf.getvalue()


def test_no_directory_scan_fails_while_the_janitor_archives(
    tmp_path: Path, prefix: str, redis_url: str, ingest_redis: redis.Redis
) -> None:
    landing = tmp_path / "landing"
    (landing / "manifests").mkdir(parents=True)
    write_registry(landing, [f"A{i}" for i in range(6)])
    job = make_job(landing, prefix, tmp_path / "work", redis_url, checkpoint_interval_ms=300, janitor_interval_ms=100)
    job.start()
    try:
        job.wait_ready()
        writer = ManifestWriter(landing, epoch=1)
        rate, seconds, assets = 60, 20.0, 6
        stop = threading.Event()
        published = [0]

        def gateway() -> None:
            t0, n = time.monotonic(), 0
            while not stop.is_set() and time.monotonic() - t0 < seconds:
                asset = f"A{n % assets}"
                entry = writer.write_blob(f"thermal/frames/{asset}/{asset}-{n}.tiff", frame(n), asset,
                                          int(time.time() * 1000) - 5000)
                writer.publish([entry])
                n += 1
                published[0] = n
                time.sleep(max(0.0, t0 + n / rate - time.monotonic()))

        thread = threading.Thread(target=gateway)
        thread.start()
        thread.join()
        n = published[0]
        wait_for(lambda: int(ingest_redis.hget(StreamNames(prefix).ingest_stats(), "manifests_archived") or 0) >= n - 10,
                 120, f"the janitor to archive ~{n} manifests", job)
    finally:
        job.stop()
    metric = job.scan_failures()
    logs = list(job.flink_log_dir.glob("*.log"))
    assert logs, f"no Flink log in {job.flink_log_dir}"
    text = "".join(p.read_text(errors="replace") for p in logs)
    failures = text.count(SCAN_FAILURE)
    stats = {k.decode(): v.decode() for k, v in ingest_redis.hgetall(StreamNames(prefix).ingest_stats()).items()}
    archived = int(stats.get("manifests_archived", 0))
    gated, ungated = int(stats.get("janitor_gated.0", 0)), int(stats.get("janitor_ungated.0", 0))
    gate_failures = int(stats.get("janitor_gate_failures.0", 0))
    print(f"{n} manifests published, {archived} archived ({gated} between scans, {ungated} not), "
          f"{failures} failed scans, {gate_failures} passes without the gate's process")
    assert gate_failures == 0, f"the scan gate's process failed to start or answer in {gate_failures} passes"
    assert gated + ungated >= archived - 1, stats  # every archive went through the gate (and was counted)
    assert "org.apache.flink.runtime" in text, "the log must be the job's own Flink log"
    assert metric == failures, f"scan_failures metric {metric} != {failures} in the log"
    # The gate must find the quiet part of the scan cycle for most archives: a gate that sees no scans (session
    # 17's blind gate: 13 of 1,201 gated) fails here. An archive it moves without a window (none came within
    # max_wait_s on a loaded machine) can fail a scan as before the gate, and is counted; beyond those, failed
    # scans stay at or below 1 per 100 archived manifests.
    assert gated >= archived // 2, f"only {gated} of {archived} archives found a quiet window between scans"
    assert failures <= ungated + archived // 100, (
        f"{failures} directory scans failed while the janitor archived {archived}, {ungated} of them ungated")
    names = StreamNames(prefix=prefix, shards=2)
    frames = sum(ingest_redis.xlen(names.features_shard("thermal", k)) for k in range(names.shards))
    assert frames == n, f"{n} frames published, {frames} entries: a failed scan must not lose anything"
