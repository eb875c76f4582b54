"""Directory scans of the FileSource never fail under the janitor (issue 13, item 3).

Flink's enumerator lists ``manifests/`` and then stats every entry; a manifest the janitor archives
in between fails the whole scan ("Failed to enumerate files", FileNotFoundException). The janitor
now archives only in the quiet part of the enumerator's cycle, which it observes with inotify
(``pipeline.landing.scan_gate``). Here a gateway publishes one-frame manifests at a high rate while
the janitor archives every 100 ms (10x the default rate of archive passes, with checkpoints every
300 ms), and the job's own Flink log is searched for failed scans: with the ungated janitor this
load failed scans within seconds (docs/ingestion.md, "Directory scans").
"""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import redis
import tifffile

from pipeline.landing import ManifestWriter
from tests.pipeline.conftest import make_job, wait_for

pytestmark = [pytest.mark.flink, pytest.mark.slow]

SCAN_FAILURE = "Failed to enumerate files"


def frame(value: int) -> bytes:
    buf = io.BytesIO()
    tifffile.imwrite(buf, np.full((120, 160), 29315 + value % 500, np.uint16))
    return buf.getvalue()


def test_no_directory_scan_fails_while_the_janitor_archives(
    tmp_path: Path, prefix: str, redis_url: str, ingest_redis: redis.Redis
) -> None:
    landing = tmp_path / "landing"
    (landing / "manifests").mkdir(parents=True)
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
        wait_for(lambda: int(ingest_redis.hget(f"{prefix}:ingest:stats", "manifests_archived") or 0) >= n - 10,
                 120, f"the janitor to archive ~{n} manifests", job)
    finally:
        job.stop()
    logs = list(job.flink_log_dir.glob("*.log"))
    assert logs, f"no Flink log in {job.flink_log_dir}"
    text = "".join(p.read_text(errors="replace") for p in logs)
    failures = text.count(SCAN_FAILURE)
    stats = {k.decode(): v.decode() for k, v in ingest_redis.hgetall(f"{prefix}:ingest:stats").items()}
    archived = int(stats.get("manifests_archived", 0))
    gated, ungated = int(stats.get("janitor_gated.0", 0)), int(stats.get("janitor_ungated.0", 0))
    print(f"{n} manifests published, {archived} archived ({gated} between scans, {ungated} not), "
          f"{failures} failed scans")
    assert gated + ungated >= archived - 1, stats  # every archive went through the gate (and was counted)
    assert "Enumerat" in text or "enumerat" in text or archived, "the log must be the job's Flink log"
    assert failures == 0, f"{failures} directory scans failed while the janitor archived {archived} manifests"
