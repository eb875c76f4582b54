"""``linewatch serve fusion``: build the worker."""

from __future__ import annotations

import redis

from linewatch.contract import ConsumerGroup, StreamNames
from linewatch.service_settings import FusionSettings
from linewatch.streaming import StreamWorker, WorkerConfig, WorkerMetrics
from services.fusion.handler import ROLE, FusionHandler


def fusion_worker(client: redis.Redis, names: StreamNames, settings: FusionSettings, maxlen: int = 100_000,
                  consumer: str | None = None) -> StreamWorker:
    metrics = WorkerMetrics(ROLE)
    handler = FusionHandler(names, settings, maxlen, metrics, client=client)
    config = WorkerConfig(
        role=ROLE, group=ConsumerGroup.FUSION.value, units=names.shards, max_batch=settings.max_batch,
        block_ms=settings.block_ms, lease_ttl_ms=settings.lease_ttl_ms, max_deliveries=settings.max_deliveries,
        maxlen=maxlen, consumer=consumer, dead_letter_source="services.fusion")
    return StreamWorker(client, names, config, handler.inputs, handler, metrics=metrics)
