"""The learned audio baseline: the learner's rules, and the job's audio handler end to end (real
landing zone, the ingestor the Flink function runs, state written and read back as Flink would)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from pipeline.asset_state import AssetState
from pipeline.features.audio_baseline import AudioBaseline, AudioBaselineRules, HealthyLevels, baseline_values
from pipeline.features.audio_physics import AUDIO_VECTOR_NAMES, audio_vector, clip_levels, clip_speed
from pipeline.ingestor import AssetIngestor
from pipeline.landing import ManifestWriter
from tests.pipeline.conftest import job_spec, wav_bytes

SR = 16_000
SHAFT_HZ = 1480 / 60
DELTA_1X = AUDIO_VECTOR_NAMES.index("baseline.shaft.1x.delta_db")
AVAILABLE = AUDIO_VECTOR_NAMES.index("baseline.available")


def motor_clip(rng: np.random.Generator, one_x: float = 0.05, shaft_hz: float = SHAFT_HZ) -> np.ndarray:
    """One second of a motor: shaft harmonics over broadband noise; ``one_x``: the 1x amplitude."""
    t = np.arange(SR) / SR
    x = rng.normal(0, 0.1, SR)
    for k, amp in enumerate((one_x, 0.03, 0.015, 0.01, 0.008, 0.006), start=1):
        x += amp * rng.uniform(0.9, 1.1) * np.sin(2 * np.pi * k * shaft_hz * t + rng.uniform(0, 2 * np.pi))
    return x.astype(np.float32)


def test_the_learner_takes_spaced_clips_then_freezes_and_forgets_only_on_reset() -> None:
    b = AudioBaseline(AudioBaselineRules(clips=3, min_gap_ms=30_000))
    assert not b.observe(np.full(6, 5.0), event_ms=0)
    assert not b.observe(np.full(6, 50.0), event_ms=10_000)  # too soon after the last one: skipped
    assert not b.observe(np.r_[np.nan, np.ones(5)], event_ms=40_000) and b.rejected == 1
    assert not b.observe(np.full(6, 7.0), event_ms=40_000)
    assert b.observe(np.full(6, 6.0), event_ms=80_000) and b.levels_db == (6.0,) * 6
    assert not b.observe(np.full(6, 20.0), event_ms=200_000) and b.levels_db == (6.0,) * 6  # frozen
    restored = AudioBaseline.from_state(json.loads(json.dumps(b.to_state())))
    assert restored == b
    restored.reset()
    assert not restored.learned and restored.values == [] and restored.seen == 0


def test_baseline_values_are_the_level_deltas_and_a_flag() -> None:
    assert baseline_values(np.arange(6.0), None).tolist() == [0.0] * 7
    assert baseline_values(np.arange(6.0), (1.0,) * 6).tolist() == [-1.0, 0.0, 1.0, 2.0, 3.0, 4.0, 1.0]


def test_a_raised_1x_reads_against_the_machine_s_own_learned_levels() -> None:
    rng = np.random.default_rng(0)
    asset = {"asset_id": "M", "nominal_rpm": 1480}
    healthy = [audio_vector(motor_clip(rng), SR, asset) for _ in range(8)]
    levels = tuple(np.median([clip_levels(v) for v in healthy], axis=0))
    imbalanced = motor_clip(rng, one_x=0.2)  # +12 dB at 1x
    loud = audio_vector(imbalanced, SR, asset, baseline_db=levels)
    quiet = audio_vector(motor_clip(rng), SR, asset, baseline_db=levels)
    assert loud[AVAILABLE] == quiet[AVAILABLE] == 1.0
    assert loud[DELTA_1X] > 6.0 and abs(quiet[DELTA_1X]) < 1.5
    alone = audio_vector(imbalanced, SR, asset)
    np.testing.assert_array_equal(loud[:79], alone[:79])  # the clip's own values do not depend on the baseline
    assert alone[79:].tolist() == [0.0] * 7


def test_a_baseline_holds_only_at_the_speeds_it_was_learnt_at() -> None:
    """A drive machine's clip at another speed is not read against levels learnt at this one: its
    shaft levels move with speed, not with a fault (``baseline.available`` 0, imbalance withheld)."""
    rng = np.random.default_rng(4)
    asset = {"asset_id": "VFD"}  # no nameplate speed: searched in 8-65 Hz
    learner = AudioBaseline(AudioBaselineRules(clips=4, min_gap_ms=0))
    for k in range(4):
        v = audio_vector(motor_clip(rng, shaft_hz=SHAFT_HZ), SR, asset)
        learner.observe(clip_levels(v), event_ms=k, shaft_hz=clip_speed(v))
    healthy = learner.healthy
    assert healthy is not None and healthy.shaft_hz is not None
    assert abs(healthy.shaft_hz[0] - SHAFT_HZ) < 0.5 and abs(healthy.shaft_hz[1] - SHAFT_HZ) < 0.5
    same = audio_vector(motor_clip(rng, shaft_hz=SHAFT_HZ * 1.05), SR, asset, baseline_db=healthy)
    faster = audio_vector(motor_clip(rng, shaft_hz=SHAFT_HZ * 1.4), SR, asset, baseline_db=healthy)
    assert abs(clip_speed(faster) - 1.4 * SHAFT_HZ) < 0.5  # the speed estimate the rule reads
    assert same[AVAILABLE] == 1.0
    assert faster[AVAILABLE] == 0.0 and faster[79:].tolist() == [0.0] * 7
    # the same levels without speeds (training data, states written before) hold at any speed
    assert audio_vector(motor_clip(rng, shaft_hz=SHAFT_HZ * 1.4), SR, asset,
                        baseline_db=healthy.levels_db)[AVAILABLE] == 1.0
    restored = AudioBaseline.from_state(json.loads(json.dumps(learner.to_state())))
    assert restored.healthy == healthy
    old_state = {k: v for k, v in learner.to_state().items() if k not in ("speeds", "shaft_hz")}
    assert AudioBaseline.from_state(old_state).healthy == HealthyLevels(healthy.levels_db, None)


def test_the_job_learns_each_asset_s_baseline_keeps_it_over_a_restore_and_relearns_on_request(
        tmp_path: Path) -> None:
    assets = [{"asset_id": "MTR-A", "asset_type": "conveyor", "nominal_rpm": 1480}]
    (tmp_path / "assets.json").write_text(json.dumps({"assets": assets}))
    spec = dict(audio_baseline_clips=4, audio_baseline_gap_s=30.0)
    ingestor = AssetIngestor(job_spec(tmp_path, "x", "redis://unused", **spec))  # type: ignore[arg-type]
    writer = ManifestWriter(tmp_path, epoch=1)
    rng = np.random.default_rng(1)
    t0 = (int(time.time()) - 3_600) * 1000
    state = {"s": AssetState()}
    saved: list[bool] = []  # whether each clip marked the audio baseline for saving

    def ingest(k: int, one_x: float = 0.05, job: AssetIngestor = ingestor) -> tuple[np.ndarray, dict[str, int]]:
        at = t0 + 30_000 * k
        entry = writer.write_blob(f"audio/clips/MTR-A/{k}.wav", wav_bytes(motor_clip(rng, one_x)), "MTR-A", at)
        writer.publish([entry])
        out = job.on_line(entry.to_json(), state["s"], "MTR-A")
        saved.append(state["s"].audio_baseline_touched)
        state["s"] = state["s"].copy_through_storage()  # what a checkpoint and restore keep
        vectors = [e.message.vector for e in out.entries if hasattr(e.message, "vector")]
        assert len(vectors) == 1, out
        return vectors[0], out.counters

    for k in range(4):  # the learning period: the clips are read alone, as before features v4
        vector, counters = ingest(k)
        assert vector[AVAILABLE] == 0.0
    assert counters.get("audio_baseline_learned") == 1
    learned = state["s"].audio_baseline
    assert learned.learned and len(learned.levels_db) == 6
    assert learned.shaft_hz is not None and abs(learned.shaft_hz[0] - SHAFT_HZ) < 1.0  # learnt at this speed
    vector, counters = ingest(4, one_x=0.2)  # the machine goes out of balance: +12 dB at 1x
    assert vector[AVAILABLE] == 1.0 and vector[DELTA_1X] > 6.0 and "audio_baseline_learned" not in counters
    assert state["s"].audio_baseline.levels_db == learned.levels_db  # frozen: the fault is not learnt
    assert saved == [True] * 4 + [False]  # written while learning, only read once learned

    # the operator asks MTR-A to learn again (after the repair): once, at its next clip
    relearn = AssetIngestor(job_spec(tmp_path, "x", "redis://unused", audio_baseline_relearn={"MTR-A": 1},
                                     **spec))  # type: ignore[arg-type]
    vector, counters = ingest(5, job=relearn)
    assert counters.get("audio_baseline_reset") == 1 and vector[AVAILABLE] == 0.0
    vector, counters = ingest(6, job=relearn)
    assert "audio_baseline_reset" not in counters and not state["s"].audio_baseline.learned


def test_learning_can_be_turned_off(tmp_path: Path) -> None:
    (tmp_path / "assets.json").write_text(json.dumps({"assets": [{"asset_id": "MTR-B", "asset_type": "fan"}]}))
    ingestor = AssetIngestor(job_spec(tmp_path, "x", "redis://unused", audio_baseline_clips=0))
    writer = ManifestWriter(tmp_path, epoch=1)
    state = AssetState()
    entry = writer.write_blob("audio/clips/MTR-B/0.wav", wav_bytes(motor_clip(np.random.default_rng(2))), "MTR-B",
                              (int(time.time()) - 60) * 1000)
    writer.publish([entry])
    out = ingestor.on_line(entry.to_json(), state, "MTR-B")
    assert [e.message.vector[AVAILABLE] for e in out.entries if hasattr(e.message, "vector")] == [0.0]
    assert state.audio_baseline_json() is None


def test_training_data_read_every_clip_against_its_baseline_the_line_only_at_its_speeds() -> None:
    """``build_domain_dataset`` renders what the models were trained on (baselines at any speed)
    unless asked for the line's speed rule; the clip's own values never depend on it."""
    from models.data.domain_data import build_domain_dataset

    kw = dict(n_assets=12, seed=3, workers=1, audio_baseline_share=1.0, audio_chronic_share=0.0)
    trained = build_domain_dataset(6, **kw)
    served = build_domain_dataset(6, audio_baseline_speed_gate=True, **kw)
    with_baseline = trained.audio_baseline > 0
    assert with_baseline.sum() > 20 and np.all(trained.audio[with_baseline, AVAILABLE] == 1.0)
    assert np.sum(served.audio[with_baseline, AVAILABLE] == 0.0) >= 1  # a clip off its baseline's speeds
    np.testing.assert_array_equal(trained.audio[:, :79], served.audio[:, :79])
    np.testing.assert_array_equal(trained.thermal, served.thermal)
