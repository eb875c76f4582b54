"""The learned thermal reference: the learner's rules, and the job's thermal and PLC handlers end
to end (real landing zone, the ingestor the Flink function runs, state written and read back as
Flink would)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from pipeline.asset_state import AssetState
from pipeline.features.thermal_commissioning import ThermalCommissioning, ThermalReferenceRules
from pipeline.features.thermal_regions import THERMAL_VECTOR_NAMES
from pipeline.ingestor import AssetIngestor
from pipeline.landing import ManifestWriter
from tests.pipeline.conftest import job_spec, tiff_bytes

AVAILABLE = THERMAL_VECTOR_NAMES.index("baseline.baseline_available")
DELTA_BODY = THERMAL_VECTOR_NAMES.index("baseline.delta_body_mean")
REGIONS = {"motor_body": [60, 50, 110, 80], "de_bearing": [110, 55, 118, 75], "nde_bearing": [52, 55, 60, 75]}
AMBIENT_CK = 29_515  # 22 °C


def motor_frame(rng: np.random.Generator, body_rise_k: float, hall_k: float = 0.0) -> np.ndarray:
    """A 160x120 frame (centikelvin): the hall at 22 °C + ``hall_k``, the motor body ``body_rise_k``
    above it, bearings 5 K above it, camera noise."""
    frame = np.full((120, 160), AMBIENT_CK + 100 * hall_k, np.float64)
    frame[50:80, 60:110] += 100 * body_rise_k
    frame[55:75, 110:118] += 500
    frame[55:75, 52:60] += 500
    return np.clip(frame + rng.normal(0, 5, frame.shape), 0, 65_535).astype(np.uint16)


def plc_csv(asset: str, start_ms: int, current_a: float) -> bytes:
    from pipeline.decoders import format_timestamp_ms

    rows = ["timestamp,tag,value,quality,unit"]
    for k in range(10):
        ts = format_timestamp_ms(start_ms + 100 * k)
        rows += [f"{ts},{asset}.motor_current_a,{current_a:.3f},Good,A", f"{ts},{asset}.run_state,1,Good,bool"]
    return ("\n".join(rows) + "\n").encode()


def test_the_learner_takes_spaced_frames_of_one_size_then_freezes_and_forgets_only_on_reset() -> None:
    rng = np.random.default_rng(0)
    learner = ThermalCommissioning(ThermalReferenceRules(frames=2, min_gap_ms=60_000))
    assert not learner.observe(motor_frame(rng, 20.0), 0, 10.0)
    assert not learner.observe(motor_frame(rng, 20.0), 30_000, 10.0)  # too close to the last one
    assert not learner.observe(np.zeros((60, 80), np.uint16), 90_000, 10.0)  # another frame size
    assert learner.observe(motor_frame(rng, 20.0), 120_000, 10.0) and learner.learned
    assert not learner.observe(motor_frame(rng, 40.0), 240_000, 10.0)  # frozen: a later fault is not learnt
    assert len(learner.frames) == 2
    assert learner.reference(10.0, np.zeros((60, 80), np.uint16)) is None  # a frame of another size
    learner.reset()
    assert not learner.learned and learner.reference(10.0) is None
    partial = ThermalCommissioning(ThermalReferenceRules(frames=3, min_gap_ms=0, current_tolerance=0.2), generation=4)
    partial.observe(motor_frame(rng, 20.0), 5_000, None)
    partial.observe(motor_frame(rng, 21.0), 6_000, 12.5)
    back = ThermalCommissioning.from_bytes(partial.to_bytes())  # what the job's state keeps
    assert (back.rules, back.generation, back.currents, back.last_ms) == (partial.rules, 4, [None, 12.5], 6_000)
    assert back.ambients == partial.ambients and all(np.array_equal(a, b) for a, b in zip(back.frames, partial.frames, strict=True))
    empty = ThermalCommissioning.from_bytes(ThermalCommissioning().to_bytes())
    assert empty.frames == [] and empty.last_ms is None


def test_a_reference_holds_at_the_loads_it_was_learnt_at_and_at_the_frame_s_hall_temperature() -> None:
    rng = np.random.default_rng(1)
    learner = ThermalCommissioning(ThermalReferenceRules(frames=2, min_gap_ms=0, current_tolerance=0.15))
    learner.observe(motor_frame(rng, 10.0), 0, 10.0, REGIONS)  # light load: body +10 K
    learner.observe(motor_frame(rng, 30.0), 1, 30.0, REGIONS)  # full load: body +30 K
    body = (slice(50, 80), slice(60, 110))
    boxes = {k: (v[0], v[1], v[2], v[3]) for k, v in REGIONS.items()}
    warm_hall = motor_frame(rng, 30.0, hall_k=6.0)
    ref = learner.reference(31.0, warm_hall, boxes)
    assert ref is not None  # the full-load frame only, brought to the 6 K warmer hall
    assert float(np.mean(ref[body])) == pytest.approx(AMBIENT_CK + 600 + 3000, abs=20)
    assert learner.reference(20.0, warm_hall, boxes) is None  # a load it was not learnt at
    assert learner.reference(None) is None  # no current: only frames learnt without one would do
    blind = ThermalCommissioning(ThermalReferenceRules(frames=1, min_gap_ms=0))
    blind.observe(motor_frame(rng, 10.0), 0, None)  # an asset without a PLC feed
    assert blind.reference(None) is not None and blind.reference(10.0) is None
    with pytest.raises(ValueError, match="frames >= 1"):
        ThermalReferenceRules(frames=0)


def test_the_job_learns_each_asset_s_reference_reads_a_slow_fault_against_it_after_a_restore_and_relearns(
        tmp_path: Path) -> None:
    tags = {"motor_current_a": {"unit": "A"}, "run_state": {"unit": "bool"}}
    assets = [{"asset_id": "MTR-T", "asset_type": "conveyor", "nominal_rpm": 1480, "regions": REGIONS, "tags": tags}]
    (tmp_path / "assets.json").write_text(json.dumps({"assets": assets}))
    spec = dict(thermal_reference_frames=3, thermal_reference_gap_s=60.0)
    ingestor = AssetIngestor(job_spec(tmp_path, "x", "redis://unused", **spec))  # type: ignore[arg-type]
    writer = ManifestWriter(tmp_path, epoch=1)
    rng = np.random.default_rng(2)
    t0 = (int(time.time()) - 7_200) * 1000
    state = {"s": AssetState()}
    saved: list[bool] = []  # whether each frame marked the reference for saving

    def plc(minute: int, current_a: float, job: AssetIngestor = ingestor) -> None:
        at = t0 + 60_000 * minute
        entry = writer.write_blob(f"plc/MTR-T/{minute}.csv", plc_csv("MTR-T", at, current_a), "MTR-T", at,
                                  end_ms=at + 1_000)
        writer.publish([entry])
        job.on_line(entry.to_json(), state["s"], "MTR-T")

    def frame(at_s: int, body_rise_k: float, job: AssetIngestor = ingestor, restore: bool = True
              ) -> tuple[np.ndarray, float, dict[str, int]]:
        at = t0 + 1_000 * at_s
        entry = writer.write_blob(f"thermal/frames/MTR-T/{at_s}.tiff", tiff_bytes(motor_frame(rng, body_rise_k)),
                                  "MTR-T", at)
        writer.publish([entry])
        out = job.on_line(entry.to_json(), state["s"], "MTR-T")
        saved.append(state["s"].thermal_reference_touched)
        state["s"].clear_touched()  # what the Flink function does once it saved the touched parts
        if restore:
            state["s"] = state["s"].copy_through_storage()  # what a checkpoint and restore keep
        messages = [e.message for e in out.entries if hasattr(e.message, "vector")]
        assert len(messages) == 1, out
        return messages[0].vector, messages[0].stats["baseline_reference"], out.counters

    for minute in range(3):  # commissioning: the frames are read against the running baseline
        plc(minute, 20.0)
        vector, read_reference, counters = frame(60 * minute + 2, 20.0, restore=False)
        assert read_reference == 0.0
    assert counters.get("thermal_reference_learned") == 1 and state["s"].thermal_reference.learned
    assert state["s"].thermal_reference.currents == [20.0, 20.0, 20.0]  # each with the load its PLC said
    assert saved == [True] * 3
    plc(10, 20.5)
    for k in range(12):  # a cooling failure develops: the body 1 K warmer every frame
        vector, read_reference, counters = frame(602 + 5 * k, 20.0 + k, restore=False)
        if k == 2:  # 2 K warmer than at commissioning: within a healthy machine's day-to-day change
            assert read_reference == 1.0 and vector[DELTA_BODY] == 0.0
    running = state["s"].baseline.baseline_ck
    state["s"] = state["s"].copy_through_storage()
    assert state["s"].baseline.baseline_ck is not None and np.allclose(state["s"].baseline.baseline_ck, running)
    assert read_reference == 1.0 and vector[AVAILABLE] == 1.0
    assert vector[DELTA_BODY] == pytest.approx(11.0 - 3.0, abs=0.5)  # the whole rise since commissioning, less
    # the dead band a reference of another time is read with (pipeline.features.thermal_reference.dead_band)
    assert "thermal_reference_learned" not in counters and saved[3:] == [False] * 12  # learned: only read

    # after the restore the asset's motor current is unknown until its next PLC file: the running baseline
    _, read_reference, counters = frame(662, 32.0)
    assert read_reference == 0.0 and counters.get("thermal_running_baseline_read") == 1
    plc(12, 30.0)  # a load the reference was not learnt at (+50 % current): the running baseline again
    _, read_reference, counters = frame(722, 32.0)
    assert read_reference == 0.0 and counters.get("thermal_running_baseline_read") == 1

    # the operator asks MTR-T to learn again (after the repair): once, at its next frame
    relearn = AssetIngestor(job_spec(tmp_path, "x", "redis://unused", thermal_reference_relearn={"MTR-T": 1},
                                     **spec))  # type: ignore[arg-type]
    plc(13, 20.0, job=relearn)
    _, read_reference, counters = frame(782, 20.0, job=relearn)
    assert counters.get("thermal_reference_reset") == 1 and read_reference == 0.0
    assert len(state["s"].thermal_reference.frames) == 1  # this frame starts the new reference


def test_learning_can_be_turned_off(tmp_path: Path) -> None:
    (tmp_path / "assets.json").write_text(json.dumps({"assets": [
        {"asset_id": "MTR-O", "asset_type": "fan", "regions": REGIONS}]}))
    ingestor = AssetIngestor(job_spec(tmp_path, "x", "redis://unused", thermal_reference_frames=0))
    writer = ManifestWriter(tmp_path, epoch=1)
    state = AssetState()
    entry = writer.write_blob("thermal/frames/MTR-O/0.tiff", tiff_bytes(motor_frame(np.random.default_rng(3), 20.0)),
                              "MTR-O", (int(time.time()) - 60) * 1000)
    writer.publish([entry])
    out = ingestor.on_line(entry.to_json(), state, "MTR-O")
    assert [e.message.stats["baseline_reference"] for e in out.entries if hasattr(e.message, "vector")] == [0.0]
    assert state.thermal_reference_bytes() is None


@pytest.mark.parametrize("at_load", [True, False])
def test_a_frame_at_a_load_the_reference_was_not_learnt_at_is_read_at_its_own_load(tmp_path: Path,
                                                                                   at_load: bool) -> None:
    """Learnt at 20 A (body +20 K), a frame at 27 A (+35 %: no learnt frame near) is read against the learnt frames
    scaled to its load where the rated current is known (the motor's heat 0.2 + 0.8 (I / 30 A)^2: x1.53), so a
    healthy body at +30.5 K reads as no change and one of a cooling failure (+40 K) as its rise over that; at
    5 A (x0.40, outside x0.5-2) and with ``thermal_reference_at_load`` off, against the running baseline."""
    tags = {"motor_current_a": {"unit": "A"}, "run_state": {"unit": "bool"}}
    assets = [{"asset_id": "MTR-L", "asset_type": "conveyor", "nominal_rpm": 1480, "rated_current_a": 30.0,
               "regions": REGIONS, "tags": tags}]
    (tmp_path / "assets.json").write_text(json.dumps({"assets": assets}))
    ingestor = AssetIngestor(job_spec(tmp_path, "x", "redis://unused", thermal_reference_frames=2,  # type: ignore[arg-type]
                                      thermal_reference_gap_s=60.0, thermal_reference_at_load=at_load))
    writer = ManifestWriter(tmp_path, epoch=1)
    rng = np.random.default_rng(5)
    t0 = (int(time.time()) - 7_200) * 1000
    state = AssetState()

    def plc(minute: int, current_a: float) -> None:
        at = t0 + 60_000 * minute
        entry = writer.write_blob(f"plc/MTR-L/{minute}.csv", plc_csv("MTR-L", at, current_a), "MTR-L", at,
                                  end_ms=at + 1_000)
        writer.publish([entry])
        ingestor.on_line(entry.to_json(), state, "MTR-L")

    def frame(at_s: int, body_rise_k: float) -> tuple[np.ndarray, dict[str, float], dict[str, int]]:
        at = t0 + 1_000 * at_s
        entry = writer.write_blob(f"thermal/frames/MTR-L/{at_s}.tiff", tiff_bytes(motor_frame(rng, body_rise_k)),
                                  "MTR-L", at)
        writer.publish([entry])
        out = ingestor.on_line(entry.to_json(), state, "MTR-L")
        (message,) = [e.message for e in out.entries if hasattr(e.message, "vector")]
        return message.vector, message.stats, out.counters

    for minute in range(2):
        plc(minute, 20.0)
        frame(60 * minute + 2, 20.0)
    assert state.thermal_reference is not None and state.thermal_reference.learned
    plc(10, 27.0)
    healthy, stats, counters = frame(602, 30.5)
    faulty, _, _ = frame(607, 40.0)
    if at_load:
        assert counters.get("thermal_reference_read_at_load") == 1 and stats["baseline_reference"] == 1.0
        assert stats["baseline_rise_ratio"] == pytest.approx(0.848 / 0.5556, abs=0.01)
        assert healthy[DELTA_BODY] == 0.0  # within the dead band of the learnt body scaled to 27 A
        assert faulty[DELTA_BODY] == pytest.approx(9.5 - 3.0, abs=0.7)
    else:
        assert counters.get("thermal_running_baseline_read") == 1 and stats["baseline_reference"] == 0.0
        assert "baseline_rise_ratio" not in stats
    plc(11, 5.0)  # the motor's heat x0.40: too far from the learnt load to scale
    _, stats, counters = frame(662, 8.0)
    assert counters.get("thermal_running_baseline_read") == 1 and stats["baseline_reference"] == 0.0
