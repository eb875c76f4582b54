"""The learned thermal reference in the real PyFlink job: an asset learns healthy frames with the
motor current of its PLC around them, the job is killed, and the job restored from its checkpoint
reads a later, hotter frame against them (keyed state ``thermal-reference``) instead of learning again."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest
import redis

from linewatch.contract import StreamNames
from pipeline.landing import ManifestWriter
from tests.pipeline.conftest import feature_entries, kill_after_a_checkpoint, make_job, tiff_bytes, wait_for
from tests.pipeline.test_thermal_reference import AVAILABLE, DELTA_BODY, REGIONS, motor_frame, plc_csv

pytestmark = [pytest.mark.flink, pytest.mark.slow]


def test_the_learned_thermal_reference_survives_a_restore_and_reaches_the_model_input(
    tmp_path: Path, prefix: str, redis_url: str, ingest_redis: redis.Redis
) -> None:
    landing = tmp_path / "landing"
    landing.mkdir()
    tags = {"motor_current_a": {"unit": "A"}, "run_state": {"unit": "bool"}}
    (landing / "assets.json").write_text(json.dumps({"assets": [
        {"asset_id": "MTR-F", "asset_type": "conveyor", "nominal_rpm": 1480, "regions": REGIONS, "tags": tags}]}))
    names = StreamNames(prefix=prefix, shards=2)
    stats = names.ingest_stats()
    writer = ManifestWriter(landing, epoch=1)
    rng = np.random.default_rng(4)
    t0 = (int(time.time()) - 3_600) * 1000
    settings = {"checkpoint_interval_ms": 300, "thermal_reference_frames": 3, "thermal_reference_gap_s": 60.0}

    def publish(minute: int, body_rise_k: float) -> None:
        at = t0 + 60_000 * minute
        plc = writer.write_blob(f"plc/MTR-F/{minute}.csv", plc_csv("MTR-F", at, 20.0), "MTR-F", at, end_ms=at + 1_000)
        frame = writer.write_blob(f"thermal/frames/MTR-F/{minute}.tiff", tiff_bytes(motor_frame(rng, body_rise_k)),
                                  "MTR-F", at + 2_000)
        writer.publish([plc, frame])

    def thermal_messages() -> list:
        return [m for _, m in sorted(feature_entries(ingest_redis, names, "thermal"),
                                     key=lambda e: e[1].event_time_ms)]  # type: ignore[attr-defined]

    work = tmp_path / "job"
    first = make_job(landing, prefix, work, redis_url, **settings)
    for minute in range(3):
        publish(minute, 20.0)
    first.start()
    kill_after_a_checkpoint(first, work / "checkpoints",
                            lambda: int(ingest_redis.hget(stats, "thermal_reference_learned") or 0) == 1,
                            "the asset to learn its healthy frames")
    before = thermal_messages()
    assert len(before) == 3 and all(m.stats["baseline_reference"] == 0.0 for m in before)

    second = make_job(landing, prefix, work, redis_url, **settings)
    assert second.spec.restore_from is not None
    publish(30, 30.0)  # half an hour later the body runs 10 K hotter at the same current
    second.start()
    try:
        wait_for(lambda: len(thermal_messages()) >= 4, 120, "the feature entry of the fourth frame", second)
    finally:
        second.stop()
    later = thermal_messages()[-1]
    assert later.stats["baseline_reference"] == 1.0 and later.vector[AVAILABLE] == 1.0
    assert later.vector[DELTA_BODY] == pytest.approx(10.0 - 3.0, abs=0.5)  # less the 3 K dead band
    assert int(ingest_redis.hget(stats, "thermal_reference_learned") or 0) == 1  # restored, not learnt again
