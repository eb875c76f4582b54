"""The inference service on a real Redis with the shipped ONNX models."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import redis

from linewatch.contract import DeadLetterReason, Prediction, StreamNames, decode_message
from linewatch.service_settings import InferenceSettings
from models.registry.store import DEFAULT_ROOT
from services.inference.model import ModelRefused, load_served_model
from services.inference.service import inference_worker
from tests.services.support import (
    features,
    pending,
    running,
    stream_len,
    wait_for,
    write,
)


def _predictions(client: redis.Redis, names: StreamNames, modality: str) -> list[tuple[str, Prediction]]:
    out = []
    for s in range(names.shards):
        for eid, f in client.xrange(names.predictions_shard(modality, s)):
            out.append((eid.decode(), decode_message(f)))
    return out


@pytest.mark.parametrize("modality", ["plc", "thermal", "audio"])
def test_one_prediction_per_entry_keyed_by_its_id(redis_client: redis.Redis, stream_names: StreamNames,
                                                  modality: str) -> None:
    worker = inference_worker(redis_client, stream_names, InferenceSettings(lease_ttl_ms=2000), modality)
    ids = {}
    with running(worker):
        for i in range(12):
            asset = f"PMP-{i % 3:02d}"
            ids[write(redis_client, stream_names.features(modality, asset), features(modality, asset, 1000 + i, i))] = asset
        wait_for(lambda: len(_predictions(redis_client, stream_names, modality)) == 12, 30, "12 predictions")
    preds = _predictions(redis_client, stream_names, modality)
    card = load_served_model(InferenceSettings(), modality).ref
    assert {eid for eid, _ in preds} == set(ids)
    for eid, p in preds:
        assert p.features_entry_id == eid and p.asset_id == ids[eid] and p.modality == modality
        assert (p.model_name, p.model_version, p.model_sha256) == (card.name, card.version, card.sha256)
        assert abs(sum(p.probabilities) - 1) < 1e-4 and p.label == p.classes[int(np.argmax(p.probabilities))]
    assert pending(redis_client, stream_names.all_feature_streams(), "inference") == 0


def test_audio_withholds_imbalance_without_its_machines_healthy_sound_and_bearing_wear_on_reciprocating_machines(
        redis_client: redis.Redis, stream_names: StreamNames) -> None:
    from pipeline.features.audio_physics import AUDIO_VECTOR_NAMES

    worker = inference_worker(redis_client, stream_names, InferenceSettings(lease_ttl_ms=2000), "audio")
    flag = AUDIO_VECTOR_NAMES.index("baseline.available")
    cases = [(0.0, 0.0), (1.0, 0.0), (0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0)]  # (baseline, reciprocating)
    ids = {}
    with running(worker):
        for i, (available, reciprocating) in enumerate(cases):
            x = np.random.default_rng(i).normal(size=len(AUDIO_VECTOR_NAMES)).astype(np.float32)
            x[flag] = available
            ids[write(redis_client, stream_names.features("audio", "PMP-01"),
                      features("audio", "PMP-01", 1000 + i, value=x, stats={"reciprocating": reciprocating}))] = (
                available, reciprocating)
        wait_for(lambda: len(_predictions(redis_client, stream_names, "audio")) == len(cases), 30, "6 predictions")
    for eid, p in _predictions(redis_client, stream_names, "audio"):
        available, reciprocating = ids[eid]
        expected = (["bearing_wear"] if reciprocating else []) + ([] if available else ["imbalance"])
        assert sorted(p.withheld) == sorted(expected), (ids[eid], p.withheld)


def test_plc_withholds_every_fault_on_a_window_in_which_the_machine_stood_still(
        redis_client: redis.Redis, stream_names: StreamNames) -> None:
    from pipeline.features.plc_physics import PLC_VECTOR_NAMES

    worker = inference_worker(redis_client, stream_names, InferenceSettings(lease_ttl_ms=2000), "plc")
    cases = [{"not_running": 1.0}, {"not_running": 0.0}, {}]  # a stop in the window; running; no run-state tag
    ids = {}
    with running(worker):
        for i, stats in enumerate(cases):
            x = np.random.default_rng(i).normal(size=len(PLC_VECTOR_NAMES)).astype(np.float32)
            x[[k for k, n in enumerate(PLC_VECTOR_NAMES) if n.startswith("missing.")]] = 0.0  # every tag there
            ids[write(redis_client, stream_names.features("plc", "PMP-01"),
                      features("plc", "PMP-01", 1000 + i, value=x, stats=stats))] = i
        wait_for(lambda: len(_predictions(redis_client, stream_names, "plc")) == len(cases), 30, "3 predictions")
    preds = {ids[eid]: p for eid, p in _predictions(redis_client, stream_names, "plc")}
    faults = sorted(c for c in preds[0].classes if c != "normal")
    assert sorted(preds[0].withheld) == faults and len(faults) >= 3
    assert preds[1].withheld == preds[2].withheld == []


def _served_in_order(redis_client: redis.Redis, stream_names: StreamNames, modality: str,
                     vectors: tuple[np.ndarray, ...]) -> list:
    """The service's predictions of one machine's feature vectors, in the order given."""
    worker = inference_worker(redis_client, stream_names, InferenceSettings(lease_ttl_ms=2000), modality)
    ids = {}
    with running(worker):
        for i, v in enumerate(vectors):
            ids[write(redis_client, stream_names.features(modality, "PMP-01"),
                      features(modality, "PMP-01", 1000 + i, value=v))] = i
        wait_for(lambda: len(_predictions(redis_client, stream_names, modality)) == len(vectors), 30,
                 f"{len(vectors)} predictions")
    by_index = {ids[eid]: p for eid, p in _predictions(redis_client, stream_names, modality)}
    return [by_index[i] for i in range(len(vectors))]


def test_plc_reads_a_tag_the_historian_lacks_as_a_healthy_machines(
        redis_client: redis.Redis, stream_names: StreamNames) -> None:
    """A machine without a pressure transmitter (``missing.pressure`` 1, its inputs 0: nothing the model
    learnt): the service reads the tag at the model's healthy median (models.missing_tags), so the
    prediction is the model's on that filled vector, and withholds cavitation."""
    from pipeline.features.plc_physics import PLC_VECTOR_NAMES

    fill = load_served_model(InferenceSettings(), "plc").fill
    assert fill is not None
    x = np.random.default_rng(7).normal(size=len(PLC_VECTOR_NAMES)).astype(np.float32)
    x[[k for k, n in enumerate(PLC_VECTOR_NAMES) if n.startswith("missing.")]] = 0.0  # every tag there
    lacking = x.copy()
    lacking[[PLC_VECTOR_NAMES.index(n) for n in ("pressure.mean_over_nominal", "pressure.std_over_mean",
                                                  "pressure.max_over_mean", "pressure.slope_over_nominal",
                                                  "pressure.affinity_ratio")]] = 0.0
    lacking[PLC_VECTOR_NAMES.index("missing.pressure")] = 1.0
    filled = fill.apply(lacking)
    assert not np.array_equal(filled, lacking) and filled[PLC_VECTOR_NAMES.index("missing.pressure")] == 0.0
    preds = _served_in_order(redis_client, stream_names, "plc", (lacking, filled))
    assert preds[0].probabilities == preds[1].probabilities
    assert preds[0].withheld == ["cavitation"] and preds[1].withheld == []


def test_plc_reads_temperatures_a_historian_rounded_as_a_healthy_rtds(
        redis_client: redis.Redis, stream_names: StreamNames) -> None:
    """A historian that rounds the temperatures (or stores them on a deadband) leaves their standard
    deviation over a window at about 0, where the PLC model learnt one RTD's noise: the service reads
    both at the model's healthy median (models.missing_tags: the bearing's always, as it is no evidence
    of any class; the winding's below its floor), so the prediction is the model's on that vector."""
    from pipeline.features.plc_physics import PLC_VECTOR_NAMES

    fill = load_served_model(InferenceSettings(), "plc").fill
    assert fill is not None
    bearing, winding = PLC_VECTOR_NAMES.index("temp.bearing_std"), PLC_VECTOR_NAMES.index("temp.winding_std")
    x = np.random.default_rng(11).normal(size=len(PLC_VECTOR_NAMES)).astype(np.float32)
    x[[k for k, n in enumerate(PLC_VECTOR_NAMES) if n.startswith("missing.")]] = 0.0  # every tag there
    x[PLC_VECTOR_NAMES.index("flag.vfd")] = 0.0
    rounded = x.copy()
    rounded[[bearing, winding]] = 0.0
    filled = fill.apply(rounded)
    assert filled[bearing] == fill.fixed_speed[bearing] > 0.1 and filled[winding] == fill.fixed_speed[winding] > 0.1
    noisy = x.copy()
    noisy[[bearing, winding]] = 2.0  # a noisy bearing RTD; a winding heating within the window
    assert fill.apply(noisy)[bearing] == filled[bearing] and fill.apply(noisy)[winding] == 2.0
    preds = _served_in_order(redis_client, stream_names, "plc", (rounded, filled))
    assert preds[0].probabilities == preds[1].probabilities


def test_audio_reads_one_recording_s_1x_level_as_a_healthy_machine_s(
        redis_client: redis.Redis, stream_names: StreamNames) -> None:
    """Without the machine's learned healthy levels (``baseline.available`` 0) the 1x tone's level over the
    clip's broadband is where the microphone stands, not evidence: the service reads it at the model's
    healthy median (models.missing_tags.UNBASELINED_INPUTS), so a clip whose 1x sits 40 dB down is read as
    the same clip at that median; against the machine's healthy levels it is read as measured."""
    from pipeline.features.audio_physics import AUDIO_VECTOR_NAMES

    fill = load_served_model(InferenceSettings(), "audio").fill
    assert fill is not None
    one_x, available = AUDIO_VECTOR_NAMES.index("shaft.1x.level_db"), AUDIO_VECTOR_NAMES.index("baseline.available")
    x = np.random.default_rng(5).normal(size=len(AUDIO_VECTOR_NAMES)).astype(np.float32)
    x[AUDIO_VECTOR_NAMES.index("flag.vfd")] = 0.0
    quiet, typical = x.copy(), x.copy()
    quiet[[one_x, available]] = (-40.0, 0.0)
    typical[[one_x, available]] = (fill.fixed_speed[one_x], 0.0)
    assert -15.0 < typical[one_x] < 10.0 and np.array_equal(fill.apply(quiet), typical)
    with_baseline = quiet.copy()
    with_baseline[available] = 1.0
    assert np.array_equal(fill.apply(with_baseline), with_baseline)
    preds = _served_in_order(redis_client, stream_names, "audio", (quiet, typical))
    assert preds[0].probabilities == preds[1].probabilities


def test_thermal_does_not_call_a_motor_warmer_at_its_fan_end_healthy(
        redis_client: redis.Redis, stream_names: StreamNames) -> None:
    from pipeline.features.thermal_regions import THERMAL_VECTOR_NAMES

    worker = inference_worker(redis_client, stream_names, InferenceSettings(lease_ttl_ms=2000), "thermal")
    cases = [{"body_mid_axial_k": -3.0}, {"body_mid_axial_k": 3.0},  # fan end warmer; drive end warmer
             {"body_mid_axial_k": -3.0, "regions_registered": 1.0}, {},  # boxes moved: within the margin; unknown
             {"body_mid_axial_k": -8.0, "regions_registered": 1.0}]  # boxes moved: clearly warmer at the fan end
    ids = {}
    with running(worker):
        for i, stats in enumerate(cases):
            x = np.random.default_rng(i).normal(size=len(THERMAL_VECTOR_NAMES)).astype(np.float32)
            x[THERMAL_VECTOR_NAMES.index("motor_body.mean_rise")] = 30.0
            ids[write(redis_client, stream_names.features("thermal", "PMP-01"),
                      features("thermal", "PMP-01", 1000 + i, value=x, stats=stats))] = i
        wait_for(lambda: len(_predictions(redis_client, stream_names, "thermal")) == len(cases), 30, "5 predictions")
    preds = {ids[eid]: p for eid, p in _predictions(redis_client, stream_names, "thermal")}
    normal = preds[0].classes.index("normal")
    for i in (0, 4):
        assert preds[i].probabilities[normal] == 0.0 and preds[i].label != "normal"
        assert sum(preds[i].probabilities) == pytest.approx(1.0)
    assert all(preds[i].probabilities[normal] > 0.0 for i in (1, 2, 3))


def test_a_prediction_lists_the_inputs_far_outside_the_models_training_range(
        redis_client: redis.Redis, stream_names: StreamNames) -> None:
    """A frame whose scene is far hotter than any training frame's: the prediction lists those inputs with
    their side, exactly as ``linewatch inspect`` finds them for the same vector; a typical frame lists none."""
    from models.inspect.scoring import Inspector
    from models.registry import default_registry

    ref = np.load(default_registry().latest("thermal").path("reference"), allow_pickle=False)
    names = [str(n) for n in ref["names"]]
    typical = np.median(ref["features"], axis=0).astype(np.float32)
    hot_scene = typical.copy()
    scene = ["global.frame_max_rise", "global.hot_area_frac", "global.hot_outside_regions_frac"]
    for n in scene:
        k = names.index(n)
        hot_scene[k] = ref["features"][:, k].max() + 2.0 * np.ptp(ref["features"][:, k]) + 1.0
    preds = _served_in_order(redis_client, stream_names, "thermal", (typical, hot_scene))
    assert preds[0].beyond_training == {}
    assert preds[1].beyond_training == {n: 1 for n in scene}
    assert preds[1].beyond_training == Inspector().beyond_training("thermal", hot_scene)


def test_audio_does_not_call_a_1x_far_over_the_machine_s_healthy_level_healthy(
        redis_client: redis.Redis, stream_names: StreamNames) -> None:
    from models.ruled_out import AUDIO_1X_RISE_DB
    from pipeline.features.audio_physics import AUDIO_VECTOR_NAMES

    worker = inference_worker(redis_client, stream_names, InferenceSettings(lease_ttl_ms=2000), "audio")
    rise, available, drive = (AUDIO_VECTOR_NAMES.index(n) for n in ("baseline.shaft.1x.delta_db", "baseline.available",
                                                                     "flag.vfd"))
    cases = [(AUDIO_1X_RISE_DB + 4, 1.0, 0.0), (AUDIO_1X_RISE_DB - 4, 1.0, 0.0),  # (1x rise, baseline, drive)
             (AUDIO_1X_RISE_DB + 4, 0.0, 0.0), (AUDIO_1X_RISE_DB + 4, 1.0, 1.0)]  # no baseline; on a drive
    ids = {}
    with running(worker):
        for i, case in enumerate(cases):
            x = np.random.default_rng(i).normal(size=len(AUDIO_VECTOR_NAMES)).astype(np.float32)
            x[[rise, available, drive]] = case
            ids[write(redis_client, stream_names.features("audio", "PMP-01"),
                      features("audio", "PMP-01", 1000 + i, value=x))] = i
        wait_for(lambda: len(_predictions(redis_client, stream_names, "audio")) == len(cases), 30, "4 predictions")
    preds = {ids[eid]: p for eid, p in _predictions(redis_client, stream_names, "audio")}
    normal = preds[0].classes.index("normal")
    assert preds[0].probabilities[normal] == 0.0 and preds[0].label != "normal"
    assert all(preds[i].probabilities[normal] > 0.0 for i in (1, 2, 3))


def test_poison_messages_are_dead_lettered_and_the_service_keeps_going(redis_client: redis.Redis,
                                                                       stream_names: StreamNames) -> None:
    worker = inference_worker(redis_client, stream_names, InferenceSettings(lease_ttl_ms=2000), "thermal")
    stream = stream_names.features("thermal", "PMP-01")
    with running(worker):
        write(redis_client, stream, features("thermal", "PMP-01", 1))
        redis_client.xadd(stream, {"schema": "thermal.features", "v": "1", "body": "{\"asset_id\": 3}"})  # bad schema
        redis_client.xadd(stream, {"schema": "thermal.frames", "v": "1", "body": "{}"})  # unknown schema
        redis_client.xadd(stream, {"no": "header"})
        write(redis_client, stream, features("thermal", "PMP-01", 2, value=np.zeros((10, 10))))  # wrong shape
        write(redis_client, stream, features("thermal", "PMP-01", 3, value=np.full(69, np.nan)))  # NaN
        write(redis_client, stream, features("plc", "PMP-01", 4))  # another modality's message
        write(redis_client, stream, features("thermal", "PMP-01", 5))
        wait_for(lambda: stream_len(redis_client, [stream_names.deadletter]) == 6, 30, "6 dead letters")
        wait_for(lambda: len(_predictions(redis_client, stream_names, "thermal")) == 2, 30, "2 predictions")
        assert pending(redis_client, [stream], "inference") == 0
    reasons = sorted(decode_message(f).reason for _, f in redis_client.xrange(stream_names.deadletter))
    assert reasons == sorted([DeadLetterReason.SCHEMA_ERROR, DeadLetterReason.UNKNOWN_SCHEMA,
                              DeadLetterReason.UNKNOWN_SCHEMA, DeadLetterReason.BAD_SHAPE,
                              DeadLetterReason.OUT_OF_RANGE, DeadLetterReason.SCHEMA_ERROR])
    dl = [decode_message(f) for _, f in redis_client.xrange(stream_names.deadletter)]
    assert all(d.source == "services.inference.thermal" and d.raw_ref.startswith(stream + "/") for d in dl)


def test_a_model_whose_card_does_not_verify_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "registry"
    shutil.copytree(DEFAULT_ROOT / "plc", root / "plc")
    latest = max((root / "plc").glob("v*"), key=lambda d: int(d.name[1:]))  # the version that would be served
    model = latest / "student.int8.cpu.onnx"
    model.write_bytes(model.read_bytes() + b"\0")  # tampered after registration
    with pytest.raises(ModelRefused, match="does not verify"):
        load_served_model(InferenceSettings(registry=root), "plc")
    with pytest.raises(ModelRefused, match="no servable thermal model"):
        load_served_model(InferenceSettings(registry=root), "thermal")


def test_micro_batching_drains_a_backlog_in_full_batches(redis_client: redis.Redis, stream_names: StreamNames) -> None:
    for i in range(100):
        write(redis_client, stream_names.features("plc", "PMP-01"), features("plc", "PMP-01", i, i))
    worker = inference_worker(redis_client, stream_names, InferenceSettings(max_batch=16, lease_ttl_ms=2000), "plc")
    with running(worker):
        wait_for(lambda: len(_predictions(redis_client, stream_names, "plc")) == 100, 30, "100 predictions")
    assert worker.stats.batch_sizes[:6] == [16] * 6 and sum(worker.stats.batch_sizes) == 100
    lone = inference_worker(redis_client, stream_names, InferenceSettings(max_batch=16, lease_ttl_ms=2000), "plc")
    with running(lone):
        write(redis_client, stream_names.features("plc", "PMP-01"), features("plc", "PMP-01", 101))
        wait_for(lambda: lone.stats.batch_sizes == [1], 10, "the lone entry handled alone, at once")
