"""Reusable machinery of every stream stage (services, governance): a consumer-group worker with
shard leases and fencing, recovery of pending entries, dead letters, backpressure, graceful stop;
Prometheus metrics with ``/healthz`` and ``/readyz``; JSON logs.

See docs/services.md ("The worker machinery").
"""

from linewatch.streaming.fenced import (
    Commit,
    Conflict,
    Entry,
    FencedOut,
    FencedShard,
    OrderViolation,
)
from linewatch.streaming.json_logging import JsonFormatter, configure_json_logging
from linewatch.streaming.lease import LeaseClient, ShardLease
from linewatch.streaming.metrics import LATENCY_BUCKETS, WorkerMetrics
from linewatch.streaming.observability import Health, ObservabilityServer
from linewatch.streaming.worker import (
    Batch,
    Handler,
    StreamWorker,
    WorkerConfig,
    stop_on_signals,
)

__all__ = [
    "LATENCY_BUCKETS",
    "Batch",
    "Commit",
    "Conflict",
    "Entry",
    "FencedOut",
    "FencedShard",
    "Handler",
    "Health",
    "JsonFormatter",
    "LeaseClient",
    "ObservabilityServer",
    "OrderViolation",
    "ShardLease",
    "StreamWorker",
    "WorkerConfig",
    "WorkerMetrics",
    "configure_json_logging",
    "stop_on_signals",
]
