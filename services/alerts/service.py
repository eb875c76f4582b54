"""``linewatch serve alerts``: the router plus one worker per destination, sharing one registry."""

from __future__ import annotations

import threading

import redis
from redis.cluster import RedisCluster

from linewatch.contract import ConsumerGroup, StreamNames
from linewatch.service_settings import AlertsSettings
from linewatch.streaming import StreamWorker, WorkerConfig, WorkerMetrics
from services.alerts.router import AlertRouter
from services.alerts.store import AlertStore


def alert_workers(client: redis.Redis, names: StreamNames, settings: AlertsSettings, maxlen: int = 100_000,
                  consumer: str | None = None, mqtt: bool | None = None,
                  stop: threading.Event | None = None) -> list[StreamWorker]:
    """[router, mqtt notifier (if enabled), one webhook notifier per configured webhook].

    They share one metrics object (labels carry each worker's role), so one /metrics shows all."""
    if isinstance(client, RedisCluster):
        raise ValueError("the alerts service needs a single Redis server, not a Redis Cluster: its router commits "
                         "the acknowledgements of every verdict shard with the global alert state in one script "
                         "(several hash slots) and the alert store uses WATCH/MULTI; see docs/streams.md")
    metrics = WorkerMetrics("alerting")
    router = AlertRouter(client, names, settings, maxlen)
    common = dict(block_ms=settings.block_ms, lease_ttl_ms=settings.lease_ttl_ms,
                  max_deliveries=settings.max_deliveries, maxlen=maxlen, consumer=consumer)
    workers = [StreamWorker(client, names, WorkerConfig(role="alerting", group=ConsumerGroup.ALERTING.value, units=1,
                                                        max_batch=256, dead_letter_source="services.alerts",
                                                        **common),  # type: ignore[arg-type]
                            router.inputs, router, metrics=metrics)]
    store = AlertStore(client, names, maxlen)

    def alerts_input(unit: int) -> list[str]:
        return [names.alerts]

    if settings.mqtt.enabled if mqtt is None else mqtt:
        from services.alerts.mqtt_notifier import MqttNotifier

        notifier = MqttNotifier(settings.mqtt, settings.line, store)
        workers.append(StreamWorker(client, names, WorkerConfig(
            role="notify.mqtt", group=ConsumerGroup.NOTIFY_MQTT.value, units=1, max_batch=64,
            dead_letter_source="services.alerts.mqtt", **common), alerts_input, notifier,  # type: ignore[arg-type]
            metrics=metrics))
    for hook in settings.webhooks:
        from services.alerts.webhook import WebhookNotifier

        notifier_w = WebhookNotifier(hook, stop=stop)
        workers.append(StreamWorker(client, names, WorkerConfig(
            role=f"notify.webhook.{hook.name}", group=f"{ConsumerGroup.NOTIFY_WEBHOOK.value}-{hook.name}", units=1,
            max_batch=16, dead_letter_source=f"services.alerts.webhook.{hook.name}", **common),  # type: ignore[arg-type]
            alerts_input, notifier_w, metrics=metrics))
    return workers

