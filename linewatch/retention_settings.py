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
>>> r.total_bytes() == sum(f.max_bytes or 0 for f in r.families().values())
True
>>> r.maxmemory_bytes() > r.total_bytes()
True
"""

from __future__ import annotations

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


def _family(mib: float, age_s: float) -> FamilyRetention:
    return FamilyRetention(max_bytes=int(mib * MIB), max_age_s=age_s)


class FeatureRetention(BaseModel):
    """The three feature families (``features.plc``, ``features.thermal``, ``features.audio``)."""

    plc: FamilyRetention = Field(default_factory=lambda: _family(8, 300))
    thermal: FamilyRetention = Field(default_factory=lambda: _family(320, 300))
    audio: FamilyRetention = Field(default_factory=lambda: _family(112, 300))


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
    predictions: FamilyRetention = Field(default_factory=lambda: _family(36, 900))
    shadow: FamilyRetention = Field(default_factory=lambda: _family(16, 900))
    verdicts: FamilyRetention = Field(default_factory=lambda: _family(44, 900))
    alerts: FamilyRetention = Field(default_factory=lambda: _family(64, 7 * 86_400))
    deadletter: FamilyRetention = Field(default_factory=lambda: _family(64, 7 * 86_400))
    explanations: FamilyRetention = Field(default_factory=lambda: _family(128, 86_400))
    drift: FamilyRetention = Field(default_factory=lambda: _family(16, 7 * 86_400))
    feedback: FamilyRetention = Field(default_factory=lambda: _family(16, 30 * 86_400))
    alert_requests: FamilyRetention = Field(default_factory=lambda: _family(16, 86_400))

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
