"""Prometheus metrics of a stream worker, in the worker's own registry (no global state).

Stage code adds its own metrics to ``WorkerMetrics.registry`` (e.g. backend latency), so one
``/metrics`` endpoint shows both.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

#: Latency buckets (seconds) from 0.25 ms to 10 s: stage latencies are milliseconds on a quiet line.
LATENCY_BUCKETS = (0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)


class WorkerMetrics:
    """The metrics every worker exports; label ``role`` names the worker role (the worker's
    ``config.role``), so several workers of one process can share one object and registry."""

    def __init__(self, role: str, registry: CollectorRegistry | None = None) -> None:
        self.role = role
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.entries = Counter("linewatch_entries", "Input entries finished, by outcome.",
                               ["role", "outcome"], registry=r)
        self.redeliveries = Counter("linewatch_redeliveries", "Entries handled again after a failure, crash "
                                    "or takeover (delivery count > 1).", ["role"], registry=r)
        self.dead_letters = Counter("linewatch_dead_letters", "Entries sent to the dead-letter stream.",
                                    ["role", "reason"], registry=r)
        self.errors = Counter("linewatch_errors", "Batches that failed and will be retried.", ["role", "kind"],
                              registry=r)
        self.fenced = Counter("linewatch_fenced_out", "Commits refused because the shard's lease moved on.",
                              ["role"], registry=r)
        self.duplicates = Counter("linewatch_duplicate_outputs", "Outputs that already existed (a redelivery "
                                  "after a crash): acknowledged without a second entry.", ["role"], registry=r)
        self.batch_size = Histogram("linewatch_batch_size", "Entries per handled batch.", ["role"],
                                    buckets=BATCH_BUCKETS, registry=r)
        self.handle_seconds = Histogram("linewatch_handle_seconds", "Time to handle one batch (stage code).",
                                        ["role"], buckets=LATENCY_BUCKETS, registry=r)
        self.commit_seconds = Histogram("linewatch_commit_seconds", "Time of the fenced commit of one shard.",
                                        ["role"], buckets=LATENCY_BUCKETS, registry=r)
        self.lag = Gauge("linewatch_group_lag", "Entries of the stream not yet delivered to the group "
                         "(XINFO GROUPS lag).", ["role", "stream"], registry=r)
        self.pending = Gauge("linewatch_group_pending", "Entries delivered but not acknowledged.",
                             ["role", "stream"], registry=r)
        self.shards = Gauge("linewatch_shards_owned", "Shards whose lease this worker holds.", ["role"], registry=r)
        self.trimmed = Counter("linewatch_trimmed_unread", "Pending entries retention removed before they were "
                               "processed.", ["role"], registry=r)
        self.backpressure = Gauge("linewatch_backpressure", "1 while a stream's unread backlog is near its "
                                  "retention limit.", ["role", "stream"], registry=r)

    def stage_latency(self, name: str, doc: str) -> Histogram:
        """A latency histogram for stage code (labels: ``role``, ``stage``)."""
        return Histogram(name, doc, ["role", "stage"], buckets=LATENCY_BUCKETS, registry=self.registry)
