"""The learned audio baseline in the real PyFlink job: an asset learns its healthy shaft-harmonic
levels from its first clips, the job is killed, and the job restored from its checkpoint reads a
later imbalanced clip against them (keyed state ``audio-baseline``) instead of learning again."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest
import redis

from linewatch.contract import StreamNames
from pipeline.landing import ManifestWriter
from tests.pipeline.conftest import feature_entries, kill_after_a_checkpoint, make_job, wait_for, wav_bytes
from tests.pipeline.test_audio_baseline import AVAILABLE, DELTA_1X, motor_clip

pytestmark = [pytest.mark.flink, pytest.mark.slow]


def test_the_learned_audio_baseline_survives_a_restore_and_reaches_the_model_input(
    tmp_path: Path, prefix: str, redis_url: str, ingest_redis: redis.Redis
) -> None:
    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / "assets.json").write_text(json.dumps({"assets": [
        {"asset_id": "MTR-A", "asset_type": "conveyor", "nominal_rpm": 1480}]}))
    names = StreamNames(prefix=prefix, shards=2)
    stats = names.ingest_stats()
    writer = ManifestWriter(landing, epoch=1)
    rng = np.random.default_rng(3)
    t0 = (int(time.time()) - 3_600) * 1000
    settings = {"checkpoint_interval_ms": 300, "audio_baseline_clips": 4, "audio_baseline_gap_s": 30.0}

    def publish(k: int, one_x: float = 0.05) -> None:
        at = t0 + 30_000 * k
        writer.publish([writer.write_blob(f"audio/clips/MTR-A/{k}.wav", wav_bytes(motor_clip(rng, one_x)), "MTR-A",
                                          at)])

    def audio_vectors() -> list[np.ndarray]:
        return [m.vector for _, m in sorted(feature_entries(ingest_redis, names, "audio"),  # type: ignore[attr-defined]
                                            key=lambda e: e[1].event_time_ms)]  # type: ignore[attr-defined]

    work = tmp_path / "job"
    first = make_job(landing, prefix, work, redis_url, **settings)
    for k in range(4):
        publish(k)
    first.start()
    kill_after_a_checkpoint(first, work / "checkpoints",
                            lambda: int(ingest_redis.hget(stats, "audio_baseline_learned") or 0) == 1,
                            "the asset to learn its healthy sound")
    before = audio_vectors()
    assert len(before) == 4 and all(v[AVAILABLE] == 0.0 for v in before)  # the learning period: clips alone

    second = make_job(landing, prefix, work, redis_url, **settings)
    assert second.spec.restore_from is not None
    publish(4, one_x=0.2)  # the machine goes out of balance: +12 dB at 1x
    second.start()
    try:
        wait_for(lambda: len(audio_vectors()) >= 5, 120, "the feature entry of the fifth clip", second)
    finally:
        second.stop()
    later = audio_vectors()[-1]
    assert later[AVAILABLE] == 1.0 and later[DELTA_1X] > 6.0
    assert int(ingest_redis.hget(stats, "audio_baseline_learned") or 0) == 1  # restored, not learnt again
