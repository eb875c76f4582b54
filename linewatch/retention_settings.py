"""Retention of the Redis Streams per stream family: a byte budget and a maximum age
(``streams.retention.<family>``), nested in ``linewatch.settings.StreamSettings``.

Plain pydantic, no stage imports. The :class:`~linewatch.streaming.retention.RetentionKeeper`
enforces it with ``XTRIM ... MINID`` and never trims an entry a consumer group has not read
(docs/redis.md). Environment variables follow the usual scheme, e.g.
``LINEWATCH_STREAMS__RETENTION__FEATURES__THERMAL__MAX_BYTES=268435456`` or, in TOML::

    [streams.retention.features.thermal]
    max_bytes = 268435456
    max_age_s = 300

The defaults are sized from the entry sizes measured by ``bench/bench_redis_memory.py`` for the
reference line (10 assets, 2 thermal frames/s, 1 audio clip/s, PLC at 10 Hz → 1 window/s per
asset): the age limit is what binds there, the byte budget is the cap that binds on a bigger plant.

>>> r = RetentionSettings()
>>> sorted(r.families())[:4]
['alert-requests', 'alerts', 'deadletter', 'drift']
>>> r.family("features.thermal").max_age_s
300.0
>>> RetentionSettings(features={"thermal": {"max_age_s": 600}}).features.thermal.max_bytes == 320 * MIB
True
>>> r.total_bytes() == sum(f.max_bytes or 0 for f in r.families().values())
True
>>> r.maxmemory_bytes() > r.total_bytes()
True
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

MIB = 1024 * 1024


class FamilyRetention(BaseModel):
    """How much of one stream family Redis keeps: the newest entries within ``max_bytes`` (all the
    family's streams together) and no older than ``max_age_s`` (by entry id time). ``None``: no
    limit of that kind. Entries a consumer group has not yet read are kept whatever the limits."""

    max_bytes: int | None = Field(default=None, ge=1, description="Byte budget of the family (all shards), "
                                  "as Redis counts it (MEMORY USAGE).")
    max_age_s: float | None = Field(default=None, gt=0, description="Entries older than this (entry-id time) "
                                    "are trimmed once every group has read them.")


def _bytes(mib: float) -> Any:
    return Field(default=int(mib * MIB), ge=1, description="Byte budget of the family (all shards).")


def _age(seconds: float) -> Any:
    return Field(default=float(seconds), gt=0, description="Maximum age (entry-id time), seconds.")


# One class per family so that a config or environment variable that sets only one of the two
# limits (``...__THERMAL__MAX_AGE_S=600``) keeps the family's default for the other.
class PlcFeaturesRetention(FamilyRetention):
    max_bytes: int | None = _bytes(8)
    max_age_s: float | None = _age(300)


class ThermalFeaturesRetention(FamilyRetention):
    max_bytes: int | None = _bytes(320)
    max_age_s: float | None = _age(300)


class AudioFeaturesRetention(FamilyRetention):
    max_bytes: int | None = _bytes(112)
    max_age_s: float | None = _age(300)


class PredictionsRetention(FamilyRetention):
    max_bytes: int | None = _bytes(36)
    max_age_s: float | None = _age(900)


class ShadowRetention(FamilyRetention):
    max_bytes: int | None = _bytes(16)
    max_age_s: float | None = _age(900)


class VerdictsRetention(FamilyRetention):
    max_bytes: int | None = _bytes(44)
    max_age_s: float | None = _age(900)


class AlertsRetention(FamilyRetention):
    max_bytes: int | None = _bytes(64)
    max_age_s: float | None = _age(7 * 86_400)


class DeadletterRetention(FamilyRetention):
    max_bytes: int | None = _bytes(64)
    max_age_s: float | None = _age(7 * 86_400)


class ExplanationsRetention(FamilyRetention):
    max_bytes: int | None = _bytes(128)
    max_age_s: float | None = _age(86_400)


class DriftRetention(FamilyRetention):
    max_bytes: int | None = _bytes(16)
    max_age_s: float | None = _age(7 * 86_400)


class FeedbackRetention(FamilyRetention):
    max_bytes: int | None = _bytes(16)
    max_age_s: float | None = _age(30 * 86_400)


class AlertRequestsRetention(FamilyRetention):
    max_bytes: int | None = _bytes(16)
    max_age_s: float | None = _age(86_400)


class FeatureRetention(BaseModel):
    """The three feature families (``features.plc``, ``features.thermal``, ``features.audio``)."""

    plc: PlcFeaturesRetention = Field(default_factory=PlcFeaturesRetention)
    thermal: ThermalFeaturesRetention = Field(default_factory=ThermalFeaturesRetention)
    audio: AudioFeaturesRetention = Field(default_factory=AudioFeaturesRetention)


class RetentionSettings(BaseModel):
    """Retention per stream family, how often it is enforced, and the embedded server's memory."""

    interval_s: float = Field(default=5.0, gt=0, description="Seconds between trimming passes.")
    memory_samples: int = Field(default=5, ge=0, description="MEMORY USAGE ... SAMPLES n per stream "
                                "(0: exact, walks every node).")
    clear_after_passes: int = Field(default=3, ge=1, description="A backpressure alert clears after this "
                                    "many passes in a row in which no unread entry held retention back.")
    headroom: float = Field(default=1.25, ge=1.0, description="maxmemory of the embedded server = "
                            "sum of the byte budgets x headroom + base_bytes.")
    base_bytes: int = Field(default=64 * MIB, ge=0, description="Server memory outside the budgets (other "
                            "keys: alert store, stage state, leases; allocator overhead).")
    metrics_host: str = "127.0.0.1"
    metrics_port: int = Field(default=0, ge=0, le=65535, description="/metrics /healthz /readyz of "
                              "`linewatch serve retention` (0: pick a free one).")
    features: FeatureRetention = Field(default_factory=FeatureRetention)
    predictions: PredictionsRetention = Field(default_factory=PredictionsRetention)
    shadow: ShadowRetention = Field(default_factory=ShadowRetention)
    verdicts: VerdictsRetention = Field(default_factory=VerdictsRetention)
    alerts: AlertsRetention = Field(default_factory=AlertsRetention)
    deadletter: DeadletterRetention = Field(default_factory=DeadletterRetention)
    explanations: ExplanationsRetention = Field(default_factory=ExplanationsRetention)
    drift: DriftRetention = Field(default_factory=DriftRetention)
    feedback: FeedbackRetention = Field(default_factory=FeedbackRetention)
    alert_requests: AlertRequestsRetention = Field(default_factory=AlertRequestsRetention)

    def families(self) -> dict[str, FamilyRetention]:
        """Family name (as in docs/redis.md and the metrics) -> its retention."""
        f = self.features
        return {
            "features.plc": f.plc, "features.thermal": f.thermal, "features.audio": f.audio,
            "predictions": self.predictions, "shadow": self.shadow, "verdicts": self.verdicts,
            "alerts": self.alerts, "deadletter": self.deadletter, "explanations": self.explanations,
            "drift": self.drift, "feedback": self.feedback, "alert-requests": self.alert_requests,
        }

    def family(self, name: str) -> FamilyRetention:
        try:
            return self.families()[name]
        except KeyError:
            raise KeyError(f"unknown stream family {name!r}: one of {sorted(self.families())}") from None

    def total_bytes(self) -> int:
        """Sum of the byte budgets (families without one count 0: size maxmemory yourself then)."""
        return sum(f.max_bytes or 0 for f in self.families().values())

    def maxmemory_bytes(self) -> int:
        """The embedded server's default ``maxmemory``: budgets x headroom + base."""
        return int(self.total_bytes() * self.headroom) + self.base_bytes
