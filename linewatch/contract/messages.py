"""Versioned message schemas carried on the Redis Streams.

Every entry has the fields ``schema`` (a name such as ``thermal.features``), ``v`` (an
integer version), ``body`` (UTF-8 JSON of the scalar fields) and one binary field
``arr.<name>`` per array (see :mod:`linewatch.contract.arrays`). Readers reject a schema
or version they do not know with :class:`UnknownSchemaError`, which consumers turn into a
dead-letter entry rather than a crash.

>>> msg = DeadLetter(source="pipeline.thermal", reason=DeadLetterReason.TRUNCATED,
...                  detail="TIFF ends after 1024 of 38528 bytes", raw_ref="thermal/frames/a.tiff",
...                  failed_at_ms=1)
>>> decode_message(encode_message(msg)) == msg
True
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from enum import StrEnum
from typing import Annotated, Any, ClassVar, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, PlainValidator, ValidationError

from linewatch.contract.arrays import ArrayEncodingError, ArraySpec, decode_array, encode_array

ARRAY_FIELD_PREFIX = "arr."


class ContractError(ValueError):
    """An entry does not follow the stream contract."""


class UnknownSchemaError(ContractError):
    """The entry's schema name or version is not one this reader understands."""


class MalformedMessageError(ContractError):
    """The entry names a known schema but its fields do not validate."""


def _as_ndarray(value: Any) -> np.ndarray:
    if not isinstance(value, np.ndarray):
        raise TypeError(f"expected a numpy array, got {type(value).__name__}")
    return value


NDArray = Annotated[np.ndarray, PlainValidator(_as_ndarray)]
"""A numpy array field; travels as raw bytes in its own stream field."""


def _no_vector() -> np.ndarray:
    return np.zeros(0, dtype=np.float32)


MODEL_VECTOR_DESCRIPTION = (
    "float32 physics-normalised model input (features v2+, names in pipeline.features: "
    "PLC_VECTOR_NAMES / THERMAL_VECTOR_NAMES / AUDIO_VECTOR_NAMES); empty in entries of older writers."
)


class Message(BaseModel):
    """Base of every stream message. Subclasses set ``SCHEMA`` and ``VERSION``."""

    SCHEMA: ClassVar[str] = ""
    VERSION: ClassVar[int] = 1
    SUPPORTED_VERSIONS: ClassVar[frozenset[int]] = frozenset({1})

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True, extra="forbid")

    @classmethod
    def array_fields(cls) -> tuple[str, ...]:
        return tuple(name for name, info in cls.model_fields.items() if info.annotation is np.ndarray)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, Message)
        arrays = self.array_fields()
        for name in type(self).model_fields:
            a, b = getattr(self, name), getattr(other, name)
            if name in arrays:
                if a.dtype != b.dtype or a.shape != b.shape or not np.array_equal(a, b, equal_nan=True):
                    return False
            elif a != b:
                return False
        return True

    __hash__ = None  # type: ignore[assignment]


class DeadLetterReason(StrEnum):
    """Why an input was rejected. Stable codes: alerting and dashboards group by them."""

    DECODE_ERROR = "decode_error"  # bytes are not the format they claim to be
    TRUNCATED = "truncated"  # file or record ends early (half-written, cut off)
    SCHEMA_ERROR = "schema_error"  # missing/extra columns or fields, wrong types
    UNKNOWN_SCHEMA = "unknown_schema"  # stream entry with a schema/version nobody reads
    OUT_OF_RANGE = "out_of_range"  # a value outside its physical/documented range
    BAD_SHAPE = "bad_shape"  # frame shape/dtype, sample rate/channels/length mismatch
    LATE = "late"  # event time older than the allowed lateness
    FUTURE = "future"  # event time ahead of the clock beyond tolerance
    DUPLICATE = "duplicate"  # the same record was already accepted
    UNKNOWN_ASSET = "unknown_asset"  # asset id not in the registry
    PATH_OUTSIDE_LANDING = "path_outside_landing"  # a manifest points outside the landing zone
    MISSING_FILE = "missing_file"  # a manifest points to a file that does not exist
    PROCESSING_ERROR = "processing_error"  # an unexpected exception while handling valid-looking input
    MAX_DELIVERIES = "max_deliveries"  # a stream entry kept failing; given up after N deliveries (services)
    TRIMMED = "trimmed"  # retention removed a stream entry before its consumer group processed it (services)
    NO_SIGNAL = "no_signal"  # the sensor recorded nothing: a frame without contrast (covered lens), a silent clip


class DeadLetter(Message):
    """One rejected input: where it came from, why, and where the raw data is."""

    SCHEMA: ClassVar[str] = "deadletter"
    #: 2: the reason ``no_signal`` (version-1 entries read unchanged: the same fields)
    VERSION: ClassVar[int] = 2
    SUPPORTED_VERSIONS: ClassVar[frozenset[int]] = frozenset({1, 2})
    source: str = Field(description="Stage and input, e.g. 'pipeline.plc' or 'services.inference'.")
    reason: DeadLetterReason
    detail: str = Field(description="Human-readable explanation that says what is wrong.")
    raw_ref: str = Field(description="Reference to the raw data: file path (+ line), or stream entry id.")
    excerpt: str = Field(default="", max_length=512, description="First bytes of the bad record, printable.")
    asset_id: str | None = None
    event_time_ms: int | None = None
    failed_at_ms: int


class PlcFeatures(Message):
    """Features of one PLC tag window of one asset (event time)."""

    SCHEMA: ClassVar[str] = "plc.features"
    asset_id: str
    asset_type: str
    window_start_ms: int
    window_end_ms: int
    event_time_ms: int = Field(description="Window end; the time the features describe.")
    features_version: int
    feature_names: list[str]
    values: NDArray = Field(description="float32 vector aligned with feature_names.")
    n_samples: int
    alarm_counts: dict[str, int] = Field(default_factory=dict)
    source: str = ""
    ingest_time_ms: int = 0
    vector: NDArray = Field(default_factory=_no_vector, description=MODEL_VECTOR_DESCRIPTION)
    # -- issue 10: additive, optional ----------------------------------------------------------------
    stats: dict[str, float] = Field(default_factory=dict, description=(
        "What the window says beside the model input: 'not_running' 1.0 when the machine stood still in "
        "part of it (its run-state mean below 0.99) or started less than flink.plc_run_up_s before it; "
        "absent without a run-state tag."))


class ThermalFeatures(Message):
    """Statistics of one thermal frame plus the normalized frame the models read."""

    SCHEMA: ClassVar[str] = "thermal.features"
    asset_id: str
    asset_type: str
    event_time_ms: int
    features_version: int
    stats: dict[str, float]
    frame: NDArray = Field(description="Normalized frame, float16 (H, W).")
    source: str = ""
    ingest_time_ms: int = 0
    vector: NDArray = Field(default_factory=_no_vector, description=MODEL_VECTOR_DESCRIPTION)


class AudioFeatures(Message):
    """Features of one audio clip plus its log-mel spectrogram."""

    SCHEMA: ClassVar[str] = "audio.features"
    asset_id: str
    asset_type: str
    event_time_ms: int
    features_version: int
    stats: dict[str, float]
    logmel: NDArray = Field(description="float32 (n_mels, n_frames) log-mel spectrogram.")
    source: str = ""
    ingest_time_ms: int = 0
    vector: NDArray = Field(default_factory=_no_vector, description=MODEL_VECTOR_DESCRIPTION)


class Prediction(Message):
    """One model's class probabilities for one feature entry.

    Written by the inference service with the stream entry id of its features entry as its own
    entry id (one prediction per input, whatever the redeliveries: see docs/services.md).
    """

    SCHEMA: ClassVar[str] = "prediction"
    asset_id: str
    modality: str
    event_time_ms: int
    model_name: str
    model_version: str
    classes: list[str]
    probabilities: list[float]
    label: str
    features_entry_id: str = Field(description="Stream entry id of the features this predicts on.")
    inferred_at_ms: int
    # -- services (issue 9): additive, optional fields --------------------------------------------
    model_sha256: str = Field(default="", description="SHA-256 of the served model file (from its card).")
    asset_type: str = ""
    source: str = Field(default="", description="Raw file reference of the features (traceability, latency).")
    ingest_time_ms: int = Field(default=0, description="When ingestion wrote the features entry.")
    # -- issue 10: additive, optional ----------------------------------------------------------------
    withheld: list[str] = Field(default_factory=list, description=(
        "Classes this input cannot show (audio read without the machine's learned healthy sound: "
        "imbalance; a PLC window without the tag that shows a class: cooling_failure without the winding "
        "temperature, imbalance without vibration, cavitation without pressure); the fusion reads the "
        "modality as neutral on them (models.withheld_classes)."))
    beyond_training: dict[str, int] = Field(default_factory=dict, description=(
        "Model inputs far outside the model's training range (models.training_range): input name -> +1 above "
        "it, -1 below it. The fusion counts those that do not show more of the class it reads this modality "
        "as naming; with 3 or more it flattens the modality (the model extrapolates), as linewatch inspect does."))


class ModelRef(BaseModel):
    """Which model produced a prediction: name, version and SHA-256 from its registry card."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    version: str
    sha256: str = ""


class Verdict(Message):
    """The fused per-asset state after combining the modalities.

    ``label`` is the fault the hysteresis holds raised (``normal`` when none); ``instant_label``
    is what this evaluation alone says. ``severity`` is an estimate in 0..1 (the fused
    probability mass of faults), ``confidence`` the fused top probability times the coverage of
    the expected modalities (missing or late modalities lower it).
    """

    SCHEMA: ClassVar[str] = "verdict"
    asset_id: str
    event_time_ms: int
    label: str
    confidence: float = Field(ge=0.0, le=1.0)
    modalities: dict[str, str] = Field(default_factory=dict, description="modality -> its label")
    probabilities: dict[str, float] = Field(default_factory=dict)
    reasons: list[str] = Field(default_factory=list)
    # -- services (issue 9): additive, optional fields --------------------------------------------
    asset_type: str = ""
    state: Literal["normal", "raised", "cleared"] = Field(
        default="normal", description="raised: the fault persists (k of n); cleared: this evaluation cleared it."
    )
    instant_label: str = ""
    severity: float = Field(default=0.0, ge=0.0, le=1.0)
    coverage: float = Field(default=1.0, ge=0.0, le=1.0)
    missing: list[str] = Field(default_factory=list, description="expected modalities absent from the window")
    input_entry_ids: dict[str, str] = Field(default_factory=dict, description="modality -> prediction entry id")
    models: dict[str, ModelRef] = Field(default_factory=dict, description="modality -> model that predicted")
    source: str = Field(default="", description="Raw file of the prediction that triggered this evaluation.")
    ingest_time_ms: int = 0
    decided_at_ms: int = 0
    # -- issue 10: additive, optional ----------------------------------------------------------------
    withheld: dict[str, list[str]] = Field(default_factory=dict, description=(
        "modality -> the classes its input could not judge in this evaluation (Prediction.withheld, e.g. "
        "audio imbalance before the machine's healthy sound is learnt); the modality's entry in "
        "``modalities`` is read without them, and the fusion left them to the other modalities."))
    extrapolating: dict[str, list[str]] = Field(default_factory=dict, description=(
        "modality -> the model inputs far outside its training range that made this evaluation count it with "
        "flattened probabilities (models.training_range): its model extrapolates for this machine."))


class AlertSeverity(StrEnum):
    INFO = "info"
    WARNING = "warning"
    CRITICAL = "critical"


class Alert(Message):
    """One event in an alert's life, routed to stream, webhook and MQTT.

    The ``lw:alerts`` stream is the source of truth: every state change of an alert (raised,
    escalated, acknowledged, shelved, cleared, ...) is one entry.
    """

    SCHEMA: ClassVar[str] = "alert"
    asset_id: str
    severity: AlertSeverity
    label: str
    message: str
    verdict_entry_id: str = ""
    created_at_ms: int
    # -- services (issue 9): additive, optional fields --------------------------------------------
    alert_id: str = ""
    event: str = Field(default="raised", description="raised | escalated | acknowledged | shelved | unshelved | "
                       "cleared | closed | confirmed | rejected | grouped | group_updated")
    state: str = Field(default="unacknowledged", description="ISA-18.2 state after the event (see docs/services.md)")
    priority: str = Field(default="medium", description="low | medium | high | urgent (severity x criticality)")
    score: float = Field(default=0.0, ge=0.0, le=1.0, description="severity x asset criticality")
    severity_estimate: float = Field(default=0.0, ge=0.0, le=1.0)
    criticality: float = Field(default=0.0, ge=0.0, le=1.0)
    source: str = Field(default="verdict", description="verdict, or the AlertRequest source (drift, backpressure ...)")
    episode_key: str = ""
    group_id: str = Field(default="", description="flood group this alert belongs to (its own notifications are held)")
    notify: bool = Field(default=True, description="False: recorded only; destinations skip it (flood member)")
    user: str = ""
    comment: str = ""
    event_time_ms: int = 0
    source_entry_id: str = ""
    source_ref: str = Field(default="", description="Raw file behind the evidence that raised it")
    details: dict[str, Any] = Field(default_factory=dict)


class AlertRequest(Message):
    """A request from another stage (governance: drift; services: backpressure; the ingestion job:
    ``sensor``, a sensor whose inputs it keeps refusing) to raise or clear an alert. The alerts
    service routes it exactly like a verdict episode (states, dedup, shelving, MQTT, webhooks).
    Written on ``StreamNames.alert_requests()``."""

    SCHEMA: ClassVar[str] = "alert.request"
    source: str = Field(description='Who asks: "drift", "model", "backpressure", "sensor", ...')
    episode_key: str = Field(description="Dedup key: one alert per key while it is raised.")
    asset_id: str = Field(description='The asset, or "fleet" for the whole line.')
    label: str
    severity: float = Field(ge=0.0, le=1.0)
    state: Literal["raise", "clear"]
    message: str = ""
    details: dict[str, Any] = Field(default_factory=dict)
    event_time_ms: int


class Feedback(Message):
    """An operator's verdict on an alert: confirmed (the fault is real) or rejected (false alarm).

    Written on ``StreamNames.feedback()`` by the alerts API; governance reads it as labels for
    error-rate drift.
    """

    SCHEMA: ClassVar[str] = "feedback"
    alert_id: str
    asset_id: str
    predicted_label: str
    outcome: Literal["confirmed", "rejected"]
    true_label: str | None = Field(default=None, description="What the fault really was, when the operator knows.")
    verdict_entry_id: str = ""
    episode_key: str = ""
    source: str = Field(default="verdict", description="What raised the alert (verdict, drift, ...)")
    models: dict[str, ModelRef] = Field(default_factory=dict, description="modality -> model behind the verdict")
    user: str
    comment: str = ""
    time_ms: int


class FeatureWeight(BaseModel):
    """One feature (or image/spectrogram segment) and its weight in an explanation."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    weight: float = Field(description="LIME weight towards the explained class (signed).")
    value: float | None = Field(default=None, description="The feature's value in the explained input.")


class RuleHit(BaseModel):
    """A domain rule (governance rule engine, YAML) that fired on the explained input."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    rule_id: str
    label: str = Field(description="The fault class the rule points at.")
    cause: str
    action: str = Field(description="Recommended action for the maintenance engineer.")
    conditions: list[str] = Field(default_factory=list, description="The conditions that held, as text.")


class ModalityExplanation(BaseModel):
    """LIME on one modality's model for one verdict."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    modality: str
    model: ModelRef
    explained_label: str
    probability: float = Field(ge=0.0, le=1.0)
    top_features: list[FeatureWeight] = Field(default_factory=list, description="Largest |weight| first.")
    stability: float = Field(ge=0.0, le=1.0, description="Top-k overlap (Jaccard) across seeds.")
    num_samples: int
    seed: int
    features_entry_id: str = ""
    heatmap_png: str = Field(default="", description="Path of the heatmap PNG under the explanations directory.")
    latency_ms: float = 0.0


class Explanation(Message):
    """Why a fault verdict was raised: LIME per modality + the rule engine, and whether they agree.

    ``thermal_heatmap`` / ``audio_heatmap`` carry the per-pixel (per time-frequency bin) LIME weight
    maps (float32, same shape as the model's frame / log-mel input; empty when not explained).
    """

    SCHEMA: ClassVar[str] = "explanation"
    explanation_id: str = Field(description="Stable id: the verdict entry id it explains.")
    verdict_entry_id: str
    alert_id: str = ""
    asset_id: str
    asset_type: str = ""
    label: str = Field(description="The verdict's fault label.")
    event_time_ms: int
    modalities: list[ModalityExplanation] = Field(default_factory=list)
    rule_hits: list[RuleHit] = Field(default_factory=list)
    agreement: bool = Field(description="LIME's top features and a rule hit point at the same fault/signals.")
    agreement_detail: str = ""
    explained_at_ms: int
    thermal_heatmap: NDArray = Field(default_factory=_no_vector)
    audio_heatmap: NDArray = Field(default_factory=_no_vector)


class DriftFeature(BaseModel):
    """One tested feature in a drift window."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    test: Literal["ks", "chi2"] = "ks"
    statistic: float
    p_value: float
    p_adjusted: float
    effect_size: float = Field(description="KS: the D statistic in reference-std units of the median shift; "
                               "chi2: Cramer's V.")
    drifted: bool


class DriftSkipped(BaseModel):
    """A feature not tested in a drift window, and why (so an operator knows what was not checked)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    reason: Literal["n_eff", "no_live_values", "no_reference", "availability_flag"] = Field(
        description="n_eff: worth fewer independent draws than min_n_eff (serial dependence); no_live_values: no "
                    "finite live value; no_reference: nothing to test against; availability_flag: a flag whose gated "
                    "features are tested where it is 1.")
    n_eff_live: float | None = None
    n_eff_reference: float | None = None


class DriftReport(Message):
    """One drift decision (governance ``serve drift``): feature, prediction, error or shadow-teacher drift.

    Written to ``lw:drift`` for every evaluated window with a drift finding or a state change; raise/clear
    go to the alert router as ``AlertRequest`` (source ``drift``).
    """

    SCHEMA: ClassVar[str] = "drift.report"
    kind: Literal["feature", "prediction", "error", "shadow"]
    scope: Literal["asset", "fleet"]
    asset_id: str = Field(description='The asset, or "fleet".')
    modality: str
    window_start_ms: int
    window_end_ms: int
    n_live: int
    n_reference: int
    drifted: bool
    state: Literal["normal", "raised", "cleared"] = "normal"
    cause: str = Field(default="", description="sensor | machine | fleet | fault (features or predictions moved with "
                       "an open fault episode) | model (prediction/shadow/error) | '' when none.")
    cause_detail: str = ""
    correction: str = Field(default="", description="bonferroni | bh")
    alpha: float = 0.0
    features: list[DriftFeature] = Field(default_factory=list, description="Drifted features first.")
    skipped: list[DriftSkipped] = Field(default_factory=list, description="Features not tested in this window.")
    detector: str = Field(default="", description="ks | chi2 | EDDM | ADWIN | PageHinkley")
    error_rate: float | None = None
    model: ModelRef | None = None
    decided_at_ms: int


MESSAGE_TYPES: Mapping[str, type[Message]] = {
    cls.SCHEMA: cls
    for cls in (DeadLetter, PlcFeatures, ThermalFeatures, AudioFeatures, Prediction, Verdict, Alert, AlertRequest,
                Feedback, Explanation, DriftReport)
}


def encode_message(message: Message) -> dict[str, bytes]:
    """Stream fields of ``message``: ``schema``, ``v``, ``body`` and one ``arr.*`` per array."""
    arrays = message.array_fields()
    body = message.model_dump(mode="json", exclude=set(arrays))
    fields: dict[str, bytes] = {}
    specs: dict[str, object] = {}
    for name in arrays:
        spec, raw = encode_array(getattr(message, name))
        specs[name] = spec.to_json()
        fields[ARRAY_FIELD_PREFIX + name] = raw
    if specs:
        body["_arrays"] = specs
    fields["schema"] = message.SCHEMA.encode()
    fields["v"] = str(message.VERSION).encode()
    fields["body"] = json.dumps(body, separators=(",", ":"), allow_nan=False).encode()
    return dict(sorted(fields.items(), key=lambda kv: kv[0] not in ("schema", "v", "body")))


def _text(value: bytes | str) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else value


def decode_message(fields: Mapping[bytes | str, bytes | str]) -> Message:
    """Rebuild a message from stream fields (as redis-py returns them, bytes or str keys).

    Raises :class:`UnknownSchemaError` for an unknown schema or version and
    :class:`MalformedMessageError` for fields that do not validate.
    """
    named = {_text(k): v for k, v in fields.items()}
    if "schema" not in named or "v" not in named:
        raise UnknownSchemaError(f"entry has no 'schema'/'v' fields (fields: {sorted(named)})")
    schema = _text(named["schema"])
    cls = MESSAGE_TYPES.get(schema)
    if cls is None:
        raise UnknownSchemaError(f"unknown schema {schema!r}; known: {sorted(MESSAGE_TYPES)}")
    try:
        version = int(_text(named["v"]))
    except ValueError as exc:
        raise UnknownSchemaError(f"version of {schema!r} is not an integer: {named['v']!r}") from exc
    if version not in cls.SUPPORTED_VERSIONS:
        raise UnknownSchemaError(
            f"{schema!r} version {version} is not supported by this reader "
            f"(supports {sorted(cls.SUPPORTED_VERSIONS)}); upgrade linewatch on the consumer side"
        )
    try:
        body = json.loads(_text(named.get("body", b"{}")))
        if not isinstance(body, dict):
            raise MalformedMessageError(f"{schema!r} body must be a JSON object")
        specs = body.pop("_arrays", {})
        for name in cls.array_fields():
            raw = named.get(ARRAY_FIELD_PREFIX + name)
            if (raw is None or name not in specs) and cls.model_fields[name].default_factory is not None:
                continue  # an optional array (added later) that an older writer did not send
            if raw is None or name not in specs:
                raise MalformedMessageError(f"{schema!r} entry lacks array field {name!r}")
            body[name] = decode_array(ArraySpec.from_json(specs[name]), raw if isinstance(raw, bytes) else raw.encode("latin-1"))
        return cls.model_validate(body)
    except (ValidationError, ArrayEncodingError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise MalformedMessageError(f"{schema!r} v{version} entry does not validate: {exc}") from exc
