"""``linewatch serve audit``: build the audit workers.

Two roles on consumer group ``audit``, sharing one metrics registry, each with its own SQLite
connection to the same store: ``audit.verdicts`` (one shard per verdict stream, scaled like fusion)
and ``audit.events`` (``names.alerts``, ``names.explanations()``, ``names.drift()``; one shard, which
also runs the retention job).
"""

from __future__ import annotations

from pathlib import Path

import redis
from prometheus_client import Counter

from governance.audit.handler import AuditHandler
from governance.audit.store import AuditStore
from linewatch.audit_settings import AuditSettings
from linewatch.contract import ConsumerGroup, StreamNames
from linewatch.streaming import StreamWorker, WorkerConfig, WorkerMetrics

VERDICTS_ROLE = "audit.verdicts"
EVENTS_ROLE = "audit.events"


def event_streams(names: StreamNames) -> list[str]:
    return [names.alerts, names.explanations(), names.drift()]


def audit_workers(client: redis.Redis, names: StreamNames, settings: AuditSettings, data_dir: Path,
                  maxlen: int = 100_000, consumer: str | None = None) -> list[StreamWorker]:
    """[verdicts worker, events worker]; the store is created and migrated on the way."""
    path = settings.store_path(data_dir)
    metrics = WorkerMetrics("audit")
    rows = Counter("linewatch_audit_rows", "Rows appended to the audit store, by kind.", ["role", "kind"],
                   registry=metrics.registry)
    common = dict(group=ConsumerGroup.AUDIT.value, max_batch=settings.max_batch, block_ms=settings.block_ms,
                  lease_ttl_ms=settings.lease_ttl_ms, max_deliveries=settings.max_deliveries, maxlen=maxlen,
                  consumer=consumer, dead_letter_source="governance.audit")

    def verdict_inputs(unit: int) -> list[str]:
        return [names.verdicts_shard(unit)]

    def event_inputs(unit: int) -> list[str]:
        return event_streams(names)

    workers = []
    for role, units, inputs, retention in ((VERDICTS_ROLE, names.shards, verdict_inputs, False),
                                           (EVENTS_ROLE, 1, event_inputs, True)):
        store = AuditStore(path, synchronous=settings.synchronous)
        handler = AuditHandler(store, names, settings, inputs, rows, role, retention=retention)
        config = WorkerConfig(role=role, units=units, **common)  # type: ignore[arg-type]
        workers.append(StreamWorker(client, names, config, inputs, handler, metrics=metrics))
    return workers
