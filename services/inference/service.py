"""``linewatch serve inference --modality M``: build the worker (model verified first)."""

from __future__ import annotations

import redis

from linewatch.contract import ConsumerGroup, Modality, StreamNames
from linewatch.service_settings import InferenceSettings
from linewatch.streaming import StreamWorker, WorkerConfig, WorkerMetrics
from services.inference.handler import InferenceHandler
from services.inference.model import load_served_model


def inference_worker(client: redis.Redis, names: StreamNames, settings: InferenceSettings, modality: str,
                     maxlen: int = 100_000, consumer: str | None = None) -> StreamWorker:
    """A ready-to-run inference worker for ``modality`` (raises ModelRefused if its card does not verify)."""
    modality = Modality(modality).value
    model = load_served_model(settings, modality)
    role = f"inference.{modality}"
    metrics = WorkerMetrics(role)
    handler = InferenceHandler(model, names, maxlen, metrics)
    config = WorkerConfig(
        role=role, group=ConsumerGroup.INFERENCE.value, units=names.shards, max_batch=settings.max_batch,
        max_wait_ms=settings.max_wait_ms, block_ms=settings.block_ms, lease_ttl_ms=settings.lease_ttl_ms,
        max_deliveries=settings.max_deliveries, maxlen=maxlen, consumer=consumer,
        dead_letter_source=f"services.inference.{modality}")
    return StreamWorker(client, names, config, handler.inputs, handler, metrics=metrics)
