"""The fusion service on a real Redis: window join, hysteresis, degraded confidence, exactly-once state."""

from __future__ import annotations

import redis

from linewatch.contract import StreamNames, Verdict, decode_message
from linewatch.service_settings import FusionSettings
from services.fusion.service import fusion_worker
from tests.services.support import CLASSES, pending, prediction, running, wait_for, write


def _verdicts(client: redis.Redis, names: StreamNames) -> list[Verdict]:
    out = []
    for s in names.all_verdict_streams():
        out += [decode_message(f) for _, f in client.xrange(s)]
    return sorted(out, key=lambda v: (v.asset_id, v.decided_at_ms, v.event_time_ms))  # type: ignore[return-value]


def _feed(client: redis.Redis, names: StreamNames, asset: str, steps: list[str], t0: int = 10_000,
          modalities: tuple[str, ...] = ("plc", "thermal", "audio")) -> int:
    n = 0
    for i, label in enumerate(steps):
        for m in modalities:
            write(client, names.predictions(m, asset), prediction(m, asset, t0 + 1000 * i, label))
            n += 1
    return n


def test_persistent_fault_raises_noise_does_not_and_it_clears(redis_client: redis.Redis,
                                                             stream_names: StreamNames) -> None:
    worker = fusion_worker(redis_client, stream_names, FusionSettings(raise_k=3, raise_n=5, clear_m=4,
                                                                      lease_ttl_ms=2000))
    steps = ["normal", "imbalance", "normal", "normal", "normal", "normal"]  # one noisy window
    steps += ["bearing_wear"] * 3 + ["normal"] * 6
    with running(worker):
        n = _feed(redis_client, stream_names, "PMP-01", steps)
        wait_for(lambda: worker.stats.handled == n, 30, "all predictions fused")
    vs = _verdicts(redis_client, stream_names)
    assert len(vs) == n
    states = [(v.state, v.label) for v in vs]
    assert ("raised", "imbalance") not in states
    first_raise = states.index(("raised", "bearing_wear"))
    assert all(s == ("normal", "normal") for s in states[:first_raise])
    assert states.count(("cleared", "bearing_wear")) == 1
    raised = vs[first_raise]
    assert raised.confidence > 0.5 and raised.missing == [] and set(raised.input_entry_ids) == {"plc", "thermal", "audio"}
    assert raised.models["plc"].name == "plc-student" and raised.severity > 0.5
    assert pending(redis_client, stream_names.all_prediction_streams(), "fusion") == 0


def test_a_class_the_audio_input_withholds_is_left_to_the_other_modalities(redis_client: redis.Redis,
                                                                          stream_names: StreamNames) -> None:
    """Audio read without the machine's healthy sound withholds imbalance: its imbalance call neither
    raises the verdict (PMP-01) nor vetoes the PLC's (PMP-02); the same call not withheld does raise."""
    worker = fusion_worker(redis_client, stream_names, FusionSettings(raise_k=3, raise_n=5, lease_ttl_ms=2000))
    cases = {"PMP-01": {"audio": ("imbalance", ("imbalance",)), "plc": ("normal", ()), "thermal": ("normal", ())},
             "PMP-02": {"audio": ("normal", ("imbalance",)), "plc": ("imbalance", ()), "thermal": ("normal", ())},
             "PMP-03": {"audio": ("imbalance", ()), "plc": ("normal", ()), "thermal": ("normal", ())}}
    n = 0
    with running(worker):
        for asset, calls in cases.items():
            for i in range(6):
                for m, (label, withheld) in calls.items():
                    write(redis_client, stream_names.predictions(m, asset),
                          prediction(m, asset, 10_000 + 1000 * i, label, p=0.95, withheld=withheld))
                    n += 1
        wait_for(lambda: worker.stats.handled == n, 30, "all predictions fused")
    verdicts = _verdicts(redis_client, stream_names)
    raised = {(v.asset_id, v.label) for v in verdicts if v.state == "raised"}
    assert ("PMP-01", "imbalance") not in raised
    assert ("PMP-02", "imbalance") in raised
    assert ("PMP-03", "imbalance") in raised
    # the verdict shows each modality as the fusion read it, and says what it could not judge
    with_audio = [v for v in verdicts if "audio" in v.modalities]  # its prediction in the verdict's window
    assert {v.asset_id for v in with_audio} == set(cases)
    for v in with_audio:
        blind = v.asset_id != "PMP-03"
        assert v.modalities["audio"] == ("normal" if blind else "imbalance"), (v.asset_id, v.modalities)
        assert ("not judged: audio imbalance" in v.reasons) == blind, (v.asset_id, v.reasons)
        assert v.withheld == ({"audio": ["imbalance"]} if blind else {}), (v.asset_id, v.withheld)


def test_a_modality_whose_model_extrapolates_counts_for_less(redis_client: redis.Redis,
                                                              stream_names: StreamNames) -> None:
    """Thermal calls bearing wear at 0.95 while PLC and audio say normal at 0.7. Read with inputs far outside
    its training range that are not bearing evidence (the scene), thermal is flattened as ``linewatch inspect``
    flattens it, and no fault is raised (PMP-01). With the bearing housings' rise beyond the range instead
    (more of the fault it names: evidence, PMP-02), or nothing beyond it (PMP-03), bearing wear is raised.
    A PLC window far outside the range that withholds every fault (the machine stood still) says nothing
    flattening could weaken: it is not listed (PMP-04)."""
    from models.training_range import OUT_OF_RANGE_WARN

    scene = {"global.frame_max_rise": 1, "global.hot_area_frac": 1, "global.hot_outside_regions_frac": 1}
    housings = {"de_bearing.max_rise": 1, "rel.de_minus_body": 1, "ratio.de_over_body": 1}
    assert len(scene) == len(housings) == OUT_OF_RANGE_WARN
    cases = {"PMP-01": scene, "PMP-02": housings, "PMP-03": {}}
    worker = fusion_worker(redis_client, stream_names, FusionSettings(raise_k=3, raise_n=5, lease_ttl_ms=2000))
    n = 0
    with running(worker):
        for asset, beyond in cases.items():
            for i in range(6):
                t = 10_000 + 1000 * i
                thermal = prediction("thermal", asset, t, "bearing_wear", p=0.95)
                write(redis_client, stream_names.predictions("thermal", asset),
                      thermal.model_copy(update={"beyond_training": beyond}))
                for m in ("plc", "audio"):
                    write(redis_client, stream_names.predictions(m, asset), prediction(m, asset, t, "normal", p=0.7))
                n += 3
        faults = tuple(c for c in CLASSES if c != "normal")
        for i in range(3):
            stood = prediction("plc", "PMP-04", 10_000 + 1000 * i, "normal", p=0.7, withheld=faults)
            write(redis_client, stream_names.predictions("plc", "PMP-04"), stood.model_copy(update={"beyond_training": scene}))
            n += 1
        wait_for(lambda: worker.stats.handled == n, 30, "all predictions fused")
    verdicts = _verdicts(redis_client, stream_names)
    raised = {v.asset_id for v in verdicts if v.state == "raised" and v.label == "bearing_wear"}
    assert raised == {"PMP-02", "PMP-03"}
    stood_still = [v for v in verdicts if v.asset_id == "PMP-04"]
    assert len(stood_still) == 3 and all(v.extrapolating == {} for v in stood_still)
    for v in verdicts:
        if "thermal" not in v.modalities:
            continue
        assert v.modalities["thermal"] == "bearing_wear"
        guessed = v.asset_id == "PMP-01"
        assert v.extrapolating == ({"thermal": sorted(scene)} if guessed else {}), (v.asset_id, v.extrapolating)
        assert any(r.startswith("extrapolates, counted with less weight: thermal (3 inputs") for r in v.reasons) == guessed


def test_missing_modality_degrades_confidence_without_blocking(redis_client: redis.Redis,
                                                               stream_names: StreamNames) -> None:
    worker = fusion_worker(redis_client, stream_names, FusionSettings(window_ms=1000, lease_ttl_ms=2000))
    with running(worker):
        n = _feed(redis_client, stream_names, "PRS-02", ["cavitation"] * 2, modalities=("plc", "thermal", "audio"))
        # the microphone falls silent: the next windows are fused from two modalities only
        n += _feed(redis_client, stream_names, "PRS-02", ["cavitation"] * 4, t0=13_000, modalities=("plc", "thermal"))
        wait_for(lambda: worker.stats.handled == n, 30, "all fused")
    vs = _verdicts(redis_client, stream_names)
    full = [v for v in vs if not v.missing]
    partial = [v for v in vs if v.missing == ["audio"]]
    assert full and partial and len(vs) == n
    assert max(v.coverage for v in partial) < 0.8 < min(v.coverage for v in full[1:])
    assert max(v.confidence for v in partial) < max(v.confidence for v in full)


def test_state_survives_a_restart(redis_client: redis.Redis, stream_names: StreamNames) -> None:
    settings = FusionSettings(raise_k=3, raise_n=5, clear_m=2, lease_ttl_ms=2000, min_confidence=0.2)
    first = fusion_worker(redis_client, stream_names, settings)
    with running(first):
        n = _feed(redis_client, stream_names, "CNV-03", ["cooling_failure"] * 2, modalities=("thermal",))
        wait_for(lambda: first.stats.handled == n, 20, "first half")
    second = fusion_worker(redis_client, stream_names, settings)  # a new process: state comes from Redis
    with running(second):
        m = _feed(redis_client, stream_names, "CNV-03", ["cooling_failure"], t0=12_000, modalities=("thermal",))
        wait_for(lambda: second.stats.handled == m, 20, "second half")
    vs = _verdicts(redis_client, stream_names)
    assert [v.state for v in vs] == ["normal", "normal", "raised"]
