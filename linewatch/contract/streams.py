"""Stream and consumer-group names: the one place that owns them.

Feature streams are split per modality and per shard of assets; an asset always maps to
the same shard (CRC-32 of its id), so one consumer of a shard sees that asset's entries in
order.

>>> names = StreamNames(prefix="lw", shards=4)
>>> names.features("thermal", "PRS-02")
'lw:features:thermal:s3'
>>> names.shard_of("CNV-03")
1
>>> names.deadletter
'lw:deadletter'
>>> len(names.all_feature_streams())
12
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from enum import StrEnum


class Modality(StrEnum):
    """The three kinds of sensor data."""

    PLC = "plc"
    THERMAL = "thermal"
    AUDIO = "audio"


class ConsumerGroup(StrEnum):
    """Consumer-group names, one per downstream service reading a stream."""

    INFERENCE = "inference"
    FUSION = "fusion"
    ALERTING = "alerting"
    DRIFT = "drift"
    AUDIT = "audit"
    DASHBOARD = "dashboard"
    EXPLAIN = "explain"
    SHADOW = "shadow"
    WEB = "web"
    # services (issue 9): the alert destinations read lw:alerts each with its own group
    NOTIFY_MQTT = "notify-mqtt"
    NOTIFY_WEBHOOK = "notify-webhook"


def shard_of(asset_id: str, shards: int) -> int:
    """Stable shard of an asset: ``crc32(asset_id) % shards`` (same in every process and language)."""
    if shards < 1:
        raise ValueError("shards must be >= 1")
    return zlib.crc32(asset_id.encode("utf-8")) % shards


@dataclass(frozen=True)
class StreamNames:
    """Names of every stream for a given prefix and shard count (see docs/streams.md)."""

    prefix: str = "lw"
    shards: int = 4

    def shard_of(self, asset_id: str) -> int:
        return shard_of(asset_id, self.shards)

    def features(self, modality: Modality | str, asset_id: str) -> str:
        """Feature stream of ``asset_id`` for ``modality`` (written by pipeline/)."""
        return self.features_shard(modality, self.shard_of(asset_id))

    def features_shard(self, modality: Modality | str, shard: int) -> str:
        return f"{self.prefix}:features:{Modality(modality).value}:s{self._check(shard)}"

    def predictions(self, modality: Modality | str, asset_id: str) -> str:
        """Per-modality model outputs (written by the inference service)."""
        return self.predictions_shard(modality, self.shard_of(asset_id))

    def predictions_shard(self, modality: Modality | str, shard: int) -> str:
        return f"{self.prefix}:predictions:{Modality(modality).value}:s{self._check(shard)}"

    def verdicts(self, asset_id: str) -> str:
        """Fused per-asset verdicts (written by the fusion service)."""
        return self.verdicts_shard(self.shard_of(asset_id))

    def verdicts_shard(self, shard: int) -> str:
        return f"{self.prefix}:verdicts:s{self._check(shard)}"

    @property
    def alerts(self) -> str:
        """Alerts for operators (written by the alert router)."""
        return f"{self.prefix}:alerts"

    @property
    def deadletter(self) -> str:
        """Rejected input of every stage, each entry with a reason."""
        return f"{self.prefix}:deadletter"

    @property
    def audit(self) -> str:
        """Append-only audit trail (governance)."""
        return f"{self.prefix}:audit"

    # -- services (issue 9): operator streams, leases, worker state ---------------------------------
    def alert_requests(self) -> str:
        """Requests to raise/clear an alert from other stages (``AlertRequest``; governance writes)."""
        return f"{self.prefix}:alert-requests"

    def feedback(self) -> str:
        """Operators' confirm/reject of alerts (``Feedback``; governance reads)."""
        return f"{self.prefix}:feedback"

    # -- governance (issue 11) -------------------------------------------------------------------------
    def explanations(self) -> str:
        """Explanations of fault verdicts (``Explanation``; governance ``serve explain`` writes, web reads)."""
        return f"{self.prefix}:explanations"

    def drift(self) -> str:
        """Drift decisions (``DriftReport``; governance ``serve drift`` writes, web reads)."""
        return f"{self.prefix}:drift"

    def shadow_predictions(self, modality: Modality | str) -> str:
        """Teacher predictions on the sampled fraction of inputs (governance shadow scoring)."""
        return f"{self.prefix}:shadow:{Modality(modality).value}"

    def lease(self, role: str, shard: int) -> str:
        """Lease (owner + fencing token) of ``shard`` for a worker role, e.g. ``inference.thermal``."""
        return f"{self.prefix}:lease:{role}:s{self._check(shard)}"

    def members(self, role: str) -> str:
        """Sorted set of the live workers of a role (score: last heartbeat, ms)."""
        return f"{self.prefix}:members:{role}"

    def stage_state(self, role: str, shard: int) -> str:
        """Hash of a stage's per-asset state on ``shard`` (written with the outputs it explains)."""
        return f"{self.prefix}:state:{role}:s{self._check(shard)}"

    def alert_state(self, part: str) -> str:
        """Keys of the alerts service's store: ``records`` (alert id -> JSON), ``episodes`` (episode key
        -> open alert id), ``raised`` / ``shelved`` / ``closed`` (sorted sets by time), ``seq`` (id counter)."""
        if part not in ("records", "episodes", "raised", "shelved", "closed", "seq"):
            raise ValueError(f"unknown alert state part {part!r}")
        return f"{self.prefix}:alert-state:{part}"

    def all_prediction_streams(self) -> list[str]:
        return [self.predictions_shard(m, s) for m in Modality for s in range(self.shards)]

    def all_verdict_streams(self) -> list[str]:
        return [self.verdicts_shard(s) for s in range(self.shards)]

    def all_feature_streams(self) -> list[str]:
        return [self.features_shard(m, s) for m in Modality for s in range(self.shards)]

    def _check(self, shard: int) -> int:
        if not 0 <= shard < self.shards:
            raise ValueError(f"shard {shard} out of range 0..{self.shards - 1}")
        return shard
