"""Settings sections of the services (inference, fusion, alerts), nested in ``linewatch.settings.Settings``.

Plain pydantic, no service imports: ``linewatch`` core must not import a stage. Environment
variables follow the usual scheme, e.g. ``LINEWATCH_INFERENCE__MAX_BATCH=16``,
``LINEWATCH_ALERTS__MQTT__HOST=broker``, ``LINEWATCH_FUSION__RAISE_K=3``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, SecretStr

from linewatch.redis_connection import mask_url


class WorkerSettings(BaseModel):
    """What every stream worker shares (see linewatch.streaming.worker)."""

    lease_ttl_ms: int = Field(5_000, ge=200, description="A shard's lease; a dead owner's shard moves after this.")
    max_deliveries: int = Field(5, ge=1, description="An entry that failed this often goes to the dead-letter stream.")
    block_ms: int = Field(500, ge=1, description="Idle wait per read before housekeeping.")
    metrics_host: str = "127.0.0.1"
    metrics_port: int = Field(0, ge=0, le=65535, description="/metrics /healthz /readyz port (0: pick a free one).")


class InferenceSettings(WorkerSettings):
    """``linewatch serve inference``: one process per modality, scale by running more."""

    registry: Path | None = Field(None, description="Model registry root. Unset: the shipped models/default.")
    model_version: str | None = Field(None, description="e.g. v2. Unset: the newest version in the registry.")
    backend: Literal["onnxruntime", "triton", "tensorrt"] = "onnxruntime"
    flavour: str | None = Field(None, description="fp32 | int8_cpu | int8_trt; unset: the card's serving role.")
    triton_url: str | None = None
    triton_protocol: Literal["http", "grpc"] = "http"
    triton_model_name: str | None = None
    max_batch: int = Field(32, ge=1, le=1024, description="At most this many entries per backend call.")
    max_wait_ms: int = Field(0, ge=0, le=1000, description="Hold a partial batch up to this long (0: a lone "
                             "entry goes at once; a backlog still drains in full batches).")
    intra_op_threads: int = Field(1, ge=0, description="ONNX Runtime threads per operator.")


class FusionSettings(WorkerSettings):
    """``linewatch serve fusion``: per-asset event-time window join and hysteresis."""

    window_ms: int = Field(2_000, ge=100, description="A modality's latest prediction counts while it is at most "
                           "this much older (event time) than the evaluation.")
    hop_ms: int = Field(1_000, ge=10, description="One hysteresis window (event time): evaluations within it "
                        "replace each other, so k of n counts windows, not arrivals.")
    raise_k: int = Field(3, ge=1, description="Raise a fault when it wins k of the last n windows ...")
    raise_n: int = Field(5, ge=1, description="... out of n.")
    clear_m: int = Field(4, ge=1, description="Clear after m consecutive clean (normal) windows.")
    min_confidence: float = Field(0.3, ge=0.0, le=1.0, description="An evaluation below this confidence is "
                                  "not evidence of a fault.")
    expected: tuple[str, ...] = ("plc", "thermal", "audio")
    weights: Path | None = Field(None, description="FusionWeights JSON (models.fusion); unset: the shipped "
                                 "models/default/fusion.json when present, else equal weights.")
    max_batch: int = 64


class MqttSettings(BaseModel):
    enabled: bool = True
    host: str = "127.0.0.1"
    port: int = 1883
    topic_prefix: str = "linewatch"
    qos: int = Field(1, ge=0, le=2)
    username: str | None = None
    password: SecretStr | None = None  # never printed in clear (docs/redis-security.md)
    keepalive_s: int = 30
    publish_timeout_s: float = 10.0


class WebhookSettings(BaseModel):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    url: str
    secret: SecretStr = Field(description="Shared HMAC-SHA256 key (the receiver verifies with it).")
    max_attempts: int = Field(6, ge=1)
    base_delay_s: float = Field(0.5, gt=0)
    max_delay_s: float = Field(30.0, gt=0)
    timeout_s: float = Field(5.0, gt=0)

    def __repr_args__(self):  # type: ignore[no-untyped-def]
        for name, value in super().__repr_args__():  # credentials in the URL never show
            yield name, mask_url(value) if name == "url" and isinstance(value, str) else value


class AlertsSettings(WorkerSettings):
    """``linewatch serve alerts``: ISA-18.2 alert states, flood grouping, destinations."""

    line: str = Field("line1", pattern=r"^[A-Za-z0-9_-]+$", description="Line name in MQTT topics.")
    criticality: dict[str, float] = Field(
        default_factory=lambda: {"press": 0.9, "pump": 0.7, "conveyor": 0.5},
        description="Asset criticality 0..1 by asset id or asset type (id wins).")
    default_criticality: float = Field(0.6, ge=0.0, le=1.0)
    flood_threshold: int = Field(10, ge=1, description="More than this many new alerts in flood_window_s is a "
                                 "flood (EEMUA 191): further alerts are grouped.")
    flood_window_s: int = Field(600, ge=1)
    history_days: float = Field(7.0, gt=0, description="Closed alerts are kept this long.")
    mqtt: MqttSettings = Field(default_factory=MqttSettings)
    webhooks: list[WebhookSettings] = Field(default_factory=list)
    api_host: str = "127.0.0.1"
    api_port: int = Field(8470, ge=0, le=65535, description="HTTP API of `linewatch serve alerts` (0: free port).")
