"""Stream and consumer-group names: the one place that owns them.

Feature streams are split per modality and per shard of assets; an asset always maps to
the same shard (CRC-32 of its id), so one consumer of a shard sees that asset's entries in
order.

**Redis Cluster hash tags.** Every per-shard key ends with the shard's hash tag ``{s<k>}``:
Redis Cluster hashes only the part between the braces, so all keys of one shard (feature,
prediction and verdict streams, the services' lease and state hashes, the ingestion job's
high-water marks) live in one hash slot, and a Lua script or ``MULTI`` that touches several of
them never fails with ``CROSSSLOT``. A companion of a global stream carries that stream's full
name as its tag (``{lw:deadletter}``): a key without braces hashes by its whole name, so the
companion shares the stream's slot. Every key still starts with ``<prefix>:``, so
``SCAN MATCH lw:*`` and ACL key patterns ``~lw:*`` cover them all.

>>> names = StreamNames(prefix="lw", shards=4)
>>> names.features("thermal", "PRS-02")
'lw:features:thermal:{s3}'
>>> names.shard_of("CNV-03")
1
>>> names.lease("inference.thermal", 3)
'lw:lease:inference.thermal:{s3}'
>>> names.ingest_marks("thermal", 3)
'lw:ingest:hwm:thermal:{s3}'
>>> names.deadletter
'lw:deadletter'
>>> names.ingest_dedup("6f0c3309e56626fc38c64358")
'lw:ingest:dedup:{lw:deadletter}:6f0c3309e56626fc38c64358'
>>> hash_tag(names.features("thermal", "PRS-02")) == hash_tag(names.ingest_marks("thermal", 3))
True
>>> hash_tag(names.ingest_dedup("ab")) == hash_tag(names.deadletter)
True
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


def hash_tag(key: str) -> str:
    """The part of ``key`` Redis Cluster hashes: the text between the first ``{`` and the next ``}``
    when that is not empty, else the whole key (keys with equal tags share a hash slot).

    >>> hash_tag("lw:features:plc:{s1}"), hash_tag("lw:deadletter"), hash_tag("a{}b")
    ('s1', 'lw:deadletter', 'a{}b')
    """
    start = key.find("{")
    if start >= 0:
        end = key.find("}", start + 1)
        if end > start + 1:
            return key[start + 1:end]
    return key


@dataclass(frozen=True)
class StreamNames:
    """Names of every stream for a given prefix and shard count (see docs/streams.md)."""

    prefix: str = "lw"
    shards: int = 4

    def __post_init__(self) -> None:
        if not self.prefix or "{" in self.prefix or "}" in self.prefix:
            raise ValueError(f"stream prefix {self.prefix!r} must be non-empty and free of braces "
                             "(braces are Redis Cluster hash tags)")
        if self.shards < 1:
            raise ValueError("shards must be >= 1")

    def shard_tag(self, shard: int) -> str:
        """Hash tag of every key of ``shard``: they share one Redis Cluster hash slot."""
        return f"{{s{self._check(shard)}}}"

    def shard_of(self, asset_id: str) -> int:
        return shard_of(asset_id, self.shards)

    def features(self, modality: Modality | str, asset_id: str) -> str:
        """Feature stream of ``asset_id`` for ``modality`` (written by pipeline/)."""
        return self.features_shard(modality, self.shard_of(asset_id))

    def features_shard(self, modality: Modality | str, shard: int) -> str:
        return f"{self.prefix}:features:{Modality(modality).value}:{self.shard_tag(shard)}"

    def predictions(self, modality: Modality | str, asset_id: str) -> str:
        """Per-modality model outputs (written by the inference service)."""
        return self.predictions_shard(modality, self.shard_of(asset_id))

    def predictions_shard(self, modality: Modality | str, shard: int) -> str:
        return f"{self.prefix}:predictions:{Modality(modality).value}:{self.shard_tag(shard)}"

    def verdicts(self, asset_id: str) -> str:
        """Fused per-asset verdicts (written by the fusion service)."""
        return self.verdicts_shard(self.shard_of(asset_id))

    def verdicts_shard(self, shard: int) -> str:
        return f"{self.prefix}:verdicts:{self.shard_tag(shard)}"

    @property
    def alerts(self) -> str:
        """Alerts for operators (written by the alert router)."""
        return f"{self.prefix}:alerts"

    @property
    def deadletter(self) -> str:
        """Rejected input of every stage, each entry with a reason."""
        return f"{self.prefix}:deadletter"

    # -- ingestion job (pipeline) ------------------------------------------------------------------
    def ingest_marks(self, modality: Modality | str, shard: int) -> str:
        """Hash of the ingestion job's per-asset high-water marks (asset -> event time, ms) of the
        assets on ``shard``: same hash slot as their feature stream (the sink's script writes both)."""
        return f"{self.prefix}:ingest:hwm:{Modality(modality).value}:{self.shard_tag(shard)}"

    def ingest_marks_of(self, modality: Modality | str, asset_id: str) -> str:
        """:meth:`ingest_marks` of the shard of ``asset_id``."""
        return self.ingest_marks(modality, self.shard_of(asset_id))

    def ingest_dedup(self, digest: str) -> str:
        """Dedup key (``SET NX``) of one dead letter of the ingestion job: same slot as :attr:`deadletter`."""
        return f"{self.prefix}:ingest:dedup:{{{self.deadletter}}}:{digest}"

    def ingest_request_dedup(self, digest: str) -> str:
        """Dedup key (``SET NX``) of one ``AlertRequest`` of the ingestion job (a sensor whose inputs it
        keeps refusing): same slot as :meth:`alert_requests`."""
        return f"{self.prefix}:ingest:dedup:{{{self.alert_requests()}}}:{digest}"

    def ingest_stats(self) -> str:
        """Hash of the ingestion job's counters and latency (read by ``linewatch demo``)."""
        return f"{self.prefix}:ingest:stats"

    def ingest_probe(self) -> str:
        """Hash where the ingestion job acknowledges readiness probes (token -> ms)."""
        return f"{self.prefix}:ingest:probe"

    def ingest_health(self) -> str:
        """Hash where the ingestion supervisor records its last answered probe."""
        return f"{self.prefix}:ingest:health"

    def ingest_lease(self, zone_id: str) -> str:
        """Lease of one landing zone (one ingestion supervisor per zone)."""
        return f"{self.prefix}:ingest:lease:{zone_id}"

    @property
    def audit(self) -> str:
        """Append-only audit trail (governance)."""
        return f"{self.prefix}:audit"

    # -- services (issue 9): operator streams, leases, worker state ---------------------------------
    def alert_requests(self) -> str:
        """Requests to raise/clear an alert from other stages (``AlertRequest``: governance for drift, the
        workers for backpressure, the ingestion job for a sensor whose inputs it keeps refusing)."""
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
        return f"{self.prefix}:lease:{role}:{self.shard_tag(shard)}"

    def members(self, role: str) -> str:
        """Sorted set of the live workers of a role (score: last heartbeat, ms)."""
        return f"{self.prefix}:members:{role}"

    def stage_state(self, role: str, shard: int) -> str:
        """Hash of a stage's per-asset state on ``shard`` (written with the outputs it explains)."""
        return f"{self.prefix}:state:{role}:{self.shard_tag(shard)}"

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
