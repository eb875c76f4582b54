"""The learned PLC pressure and vibration baseline in the real PyFlink job: an asset without a nominal pressure
learns it, the job is killed, and the job restored from its checkpoint reads the learned value
(keyed state ``plc-pressure-baseline``) in the model input of the next file."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest
import redis

from linewatch.contract import StreamNames
from pipeline.features.plc_physics import PLC_VECTOR_NAMES, VIBRATION_READ_AS_MM_S
from pipeline.landing import ManifestWriter
from tests.pipeline.conftest import feature_entries, kill_after_a_checkpoint, make_job, wait_for
from tests.pipeline.test_plc_pressure_baseline import UNITS, _plc_csv

pytestmark = [pytest.mark.flink, pytest.mark.slow]


def test_the_learned_pressure_survives_a_restore_and_reaches_the_model_input(
    tmp_path: Path, prefix: str, redis_url: str, ingest_redis: redis.Redis
) -> None:
    landing = tmp_path / "landing"
    landing.mkdir()
    tags = {tag: {"unit": unit} for tag, unit in UNITS.items()}
    (landing / "assets.json").write_text(json.dumps({"assets": [
        {"asset_id": "PMP-X", "asset_type": "pump", "nominal_rpm": 1480, "rated_current_a": 25.0, "tags": tags}]}))
    names = StreamNames(prefix=prefix, shards=2)
    stats = names.ingest_stats()
    writer = ManifestWriter(landing, epoch=1)
    rng = np.random.default_rng(2)
    t0 = (int(time.time()) - 3_600) * 1000

    def publish(minute: int, pressure: float) -> None:
        start = t0 + 60_000 * minute
        entry = writer.write_blob(f"plc/PMP-X/{minute}.csv", _plc_csv("PMP-X", start, 60, pressure, rng, vibration=6.0), "PMP-X",
                                  start, end_ms=start + 60_000)
        writer.publish([entry])

    def plc_vectors() -> list[np.ndarray]:
        return [m.vector for _, m in sorted(feature_entries(ingest_redis, names, "plc"),  # type: ignore[attr-defined]
                                            key=lambda e: e[1].window_end_ms)]  # type: ignore[attr-defined]

    work = tmp_path / "job"
    first = make_job(landing, prefix, work, redis_url, checkpoint_interval_ms=300, plc_pressure_baseline_windows=4)
    publish(0, 4.0)
    first.start()
    kill_after_a_checkpoint(first, work / "checkpoints",
                            lambda: int(ingest_redis.hget(stats, "plc_pressure_baseline_learned") or 0) == 1
                            and int(ingest_redis.hget(stats, "plc_vibration_baseline_learned") or 0) == 1,
                            "the asset to learn its pressure and vibration")
    n_before = len(plc_vectors())
    flag, ratio = PLC_VECTOR_NAMES.index("flag.pressure_nominal_known"), PLC_VECTOR_NAMES.index(
        "pressure.mean_over_nominal")
    level = PLC_VECTOR_NAMES.index("vib.mean_log")
    assert plc_vectors()[0][flag] == 0.0  # before learning: as without a baseline
    assert np.exp(plc_vectors()[0][level]) == pytest.approx(6.0, rel=0.05)

    second = make_job(landing, prefix, work, redis_url, checkpoint_interval_ms=300, plc_pressure_baseline_windows=4)
    assert second.spec.restore_from is not None
    publish(1, 3.0)  # a 25 % drop against the learned 4 bar
    second.start()
    try:
        wait_for(lambda: len(plc_vectors()) >= n_before + 50, 120, "the windows of the second file", second)
    finally:
        second.stop()
    later = plc_vectors()[-20]  # a window wholly inside the second file
    assert later[flag] == 1.0 and later[ratio] == pytest.approx(0.75, rel=0.02)
    # the learned 6 mm/s normal vibration (a piston compressor's) reads as a healthy level of the fleet
    assert np.exp(later[level]) == pytest.approx(VIBRATION_READ_AS_MM_S, rel=0.05)
    assert int(ingest_redis.hget(stats, "plc_pressure_baseline_learned") or 0) == 1  # restored, not learnt again
    assert int(ingest_redis.hget(stats, "plc_vibration_baseline_learned") or 0) == 1
