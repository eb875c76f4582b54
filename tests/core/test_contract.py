"""Round trips of every message type through encoding and a real Redis stream."""

from __future__ import annotations

import json

import numpy as np
import pytest
import redis

from linewatch.contract import (
    MESSAGE_TYPES,
    Alert,
    AlertRequest,
    AlertSeverity,
    AudioFeatures,
    DeadLetter,
    DeadLetterReason,
    DriftFeature,
    DriftReport,
    Explanation,
    FeatureWeight,
    ModalityExplanation,
    RuleHit,
    Feedback,
    MalformedMessageError,
    Message,
    ModelRef,
    PlcFeatures,
    Prediction,
    StreamNames,
    ThermalFeatures,
    UnknownSchemaError,
    Verdict,
    decode_array,
    decode_message,
    encode_array,
    encode_message,
)
from linewatch.contract.arrays import ArrayEncodingError, ArraySpec


def _examples() -> list[Message]:
    rng = np.random.default_rng(0)
    return [
        DeadLetter(source="pipeline.audio", reason=DeadLetterReason.BAD_SHAPE,
                   detail="expected 16000 Hz mono, got 44100 Hz", raw_ref="audio/clips/PMP-01/x.wav",
                   excerpt="RIFF", asset_id="PMP-01", event_time_ms=1_764_424_800_000, failed_at_ms=1_764_424_800_050),
        PlcFeatures(asset_id="PMP-01", asset_type="pump", window_start_ms=0, window_end_ms=10_000,
                    event_time_ms=10_000, features_version=1, feature_names=["a.mean", "a.std"],
                    values=np.array([1.5, 0.25], dtype=np.float32), n_samples=100, alarm_counts={"A101": 2},
                    source="plc/plc-PMP-01-x.csv", ingest_time_ms=10_012),
        ThermalFeatures(asset_id="PRS-02", asset_type="press", event_time_ms=5, features_version=1,
                        stats={"max_c": 81.5, "p99_c": 70.25}, frame=rng.normal(size=(120, 160)).astype(np.float16)),
        AudioFeatures(asset_id="CNV-03", asset_type="conveyor", event_time_ms=7, features_version=1,
                      stats={"rms": 0.1}, logmel=rng.normal(size=(64, 101)).astype(np.float32)),
        Prediction(asset_id="PMP-01", modality="thermal", event_time_ms=5, model_name="thermal-student",
                   model_version="1", classes=["normal", "bearing_wear"], probabilities=[0.25, 0.75],
                   label="bearing_wear", features_entry_id="1-0", inferred_at_ms=9),
        Verdict(asset_id="PMP-01", event_time_ms=5, label="bearing_wear", confidence=0.8,
                modalities={"thermal": "bearing_wear"}, probabilities={"bearing_wear": 0.8}, reasons=["DE hot"]),
        Alert(asset_id="PMP-01", severity=AlertSeverity.WARNING, label="bearing_wear",
              message="PMP-01: bearing wear suspected", verdict_entry_id="2-0", created_at_ms=11),
        AlertRequest(source="drift", episode_key="drift:thermal:PMP-01", asset_id="PMP-01", label="feature_drift",
                     severity=0.4, state="raise", message="thermal stats drifted", details={"p": 0.001},
                     event_time_ms=12),
        Feedback(alert_id="A-1", asset_id="PMP-01", predicted_label="bearing_wear", outcome="rejected",
                 true_label="normal", verdict_entry_id="2-0",
                 models={"thermal": ModelRef(name="thermal-student", version="v1", sha256="ab")},
                 user="op1", comment="sensor knocked", time_ms=13),
        Explanation(explanation_id="1-0", verdict_entry_id="1-0", alert_id="A-1", asset_id="PMP-01",
                    label="bearing_wear", event_time_ms=14, agreement=True, explained_at_ms=15,
                    modalities=[ModalityExplanation(
                        modality="thermal", model=ModelRef(name="thermal-student", version="v4"),
                        explained_label="bearing_wear", probability=0.8, stability=0.9, num_samples=500, seed=0,
                        top_features=[FeatureWeight(name="de_bearing.max_rise", weight=0.4, value=12.0)])],
                    rule_hits=[RuleHit(rule_id="bearing-hot", label="bearing_wear", cause="outer-race wear",
                                       action="plan a bearing change", conditions=["de_bearing.max_rise >= 8"])],
                    thermal_heatmap=np.arange(6, dtype=np.float32).reshape(2, 3)),
        DriftReport(kind="feature", scope="asset", asset_id="PMP-01", modality="plc", window_start_ms=0,
                    window_end_ms=16, n_live=500, n_reference=256, drifted=True, state="raised", cause="sensor",
                    correction="bh", alpha=0.01, detector="ks", decided_at_ms=17,
                    features=[DriftFeature(name="motor_temp_c.mean", statistic=0.4, p_value=1e-6, p_adjusted=1e-5,
                                           effect_size=1.2, drifted=True)]),
    ]


def test_every_message_type_has_an_example() -> None:
    assert {type(m).SCHEMA for m in _examples()} == set(MESSAGE_TYPES)


@pytest.mark.parametrize("message", _examples(), ids=lambda m: m.SCHEMA)
def test_round_trip_in_memory(message: Message) -> None:
    fields = encode_message(message)
    assert fields["schema"] == message.SCHEMA.encode()
    assert fields["v"] == str(type(message).VERSION).encode()
    decoded = decode_message(fields)
    assert decoded == message
    for name in message.array_fields():
        assert getattr(decoded, name).dtype == getattr(message, name).dtype


@pytest.mark.parametrize("message", _examples(), ids=lambda m: m.SCHEMA)
def test_round_trip_through_redis_stream(message: Message, redis_client: redis.Redis, stream_names: StreamNames) -> None:
    stream = stream_names.deadletter
    entry_id = redis_client.xadd(stream, encode_message(message))
    [(got_id, fields)] = redis_client.xrange(stream, min=entry_id, max=entry_id)
    assert decode_message(fields) == message


def test_unknown_version_is_rejected() -> None:
    fields = encode_message(_examples()[0])
    fields["v"] = b"99"
    with pytest.raises(UnknownSchemaError, match="version 99 is not supported"):
        decode_message(fields)


def test_a_dead_letter_of_version_1_still_reads() -> None:
    """Version 2 added the reason ``no_signal``; entries a version-1 writer left read unchanged."""
    letter = DeadLetter(source="pipeline.thermal", reason=DeadLetterReason.OUT_OF_RANGE, detail="d", raw_ref="f.tiff",
                        failed_at_ms=5)
    fields = encode_message(letter)
    assert fields["v"] == b"2"
    fields["v"] = b"1"
    assert decode_message(fields) == letter
    silent = DeadLetter(source="pipeline.audio", reason=DeadLetterReason.NO_SIGNAL, detail="silent", raw_ref="a.wav",
                        failed_at_ms=6)
    assert decode_message(encode_message(silent)) == silent


def test_unknown_schema_and_missing_header_are_rejected() -> None:
    fields = encode_message(_examples()[0])
    fields["schema"] = b"plc.raw"
    with pytest.raises(UnknownSchemaError, match="unknown schema 'plc.raw'"):
        decode_message(fields)
    with pytest.raises(UnknownSchemaError, match="no 'schema'"):
        decode_message({b"body": b"{}"})


def test_malformed_bodies_are_rejected() -> None:
    fields = encode_message(_examples()[1])
    body = json.loads(fields["body"])
    del body["asset_id"]
    with pytest.raises(MalformedMessageError, match="asset_id"):
        decode_message({**fields, "body": json.dumps(body).encode()})
    with pytest.raises(MalformedMessageError, match="does not validate"):
        decode_message({**fields, "arr.values": b"\x00" * 3})
    without_array = {k: v for k, v in fields.items() if k != "arr.values"}
    with pytest.raises(MalformedMessageError, match="lacks array field 'values'"):
        decode_message(without_array)
    with pytest.raises(MalformedMessageError):
        decode_message({**fields, "body": b"not json"})


def test_arrays_are_little_endian_and_pickle_free() -> None:
    big = np.arange(4, dtype=">u2")
    spec, raw = encode_array(big)
    assert spec == ArraySpec("uint16", (4,))
    assert raw == np.arange(4, dtype="<u2").tobytes()
    assert decode_array(spec, raw).tolist() == [0, 1, 2, 3]
    with pytest.raises(ArrayEncodingError, match="not allowed"):
        ArraySpec.from_json({"dtype": "object", "shape": [1]})
    with pytest.raises(ArrayEncodingError, match="cannot encode"):
        encode_array(np.array([object()]))
