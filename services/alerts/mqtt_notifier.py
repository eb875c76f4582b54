"""MQTT destination: every notified alert event at QoS 1, plus a retained per-asset state topic.

Topics (``<p>`` = ``alerts.mqtt.topic_prefix``, default ``linewatch``):

- ``<p>/<line>/<asset>/alerts`` — one JSON message per notified event (raised, escalated, cleared,
  acknowledged ...), QoS 1, not retained.
- ``<p>/<line>/<asset>/state`` — retained: the asset's open alerts now, so a dashboard or a PLC
  gateway that subscribes late sees the current state at once.

It runs as a consumer group (``notify-mqtt``) on ``lw:alerts``: an event is acknowledged only after
the broker acknowledged the publish (PUBACK), so a broker outage delays alerts, never loses them.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid

import paho.mqtt.client as mqtt

from linewatch.contract import Alert
from linewatch.service_settings import MqttSettings
from linewatch.streaming import Batch
from services.alerts.store import AlertStore

log = logging.getLogger("linewatch.services.alerts.mqtt")


def alert_topic(settings: MqttSettings, line: str, asset_id: str) -> str:
    return f"{settings.topic_prefix}/{line}/{asset_id}/alerts"


def state_topic(settings: MqttSettings, line: str, asset_id: str) -> str:
    return f"{settings.topic_prefix}/{line}/{asset_id}/state"


class MqttUnavailable(ConnectionError):
    """The broker did not acknowledge a publish in time (the event stays pending and is retried)."""


class MqttNotifier:
    """Handler of the ``notify-mqtt`` group (see the module docstring)."""

    def __init__(self, settings: MqttSettings, line: str, store: AlertStore) -> None:
        self.settings = settings
        self.line = line
        self.store = store
        self._connected = threading.Event()
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"linewatch-alerts-{uuid.uuid4().hex[:8]}")
        if settings.username:
            self.client.username_pw_set(settings.username,
                                        settings.password.get_secret_value() if settings.password else None)
        self.client.on_connect = self._on_connect
        self.client.on_disconnect = self._on_disconnect
        self.client.connect_async(settings.host, settings.port, keepalive=settings.keepalive_s)
        self.client.loop_start()

    def _on_connect(self, client: mqtt.Client, userdata: object, flags: object, reason: object,
                    properties: object = None) -> None:
        if not getattr(reason, "is_failure", False):
            self._connected.set()
            log.info("mqtt connected", extra={"host": self.settings.host, "port": self.settings.port})

    def _on_disconnect(self, *args: object) -> None:
        self._connected.clear()

    def close(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()

    def _publish(self, topic: str, payload: dict, retain: bool) -> None:
        if not self._connected.wait(self.settings.publish_timeout_s):
            raise MqttUnavailable(f"MQTT broker {self.settings.host}:{self.settings.port} is not reachable")
        info = self.client.publish(topic, json.dumps(payload, separators=(",", ":")), qos=self.settings.qos,
                                   retain=retain)
        try:
            info.wait_for_publish(self.settings.publish_timeout_s)
        except (ValueError, RuntimeError) as exc:
            raise MqttUnavailable(f"publish to {topic} failed: {exc}") from exc
        if not info.is_published():
            raise MqttUnavailable(f"no PUBACK for {topic} within {self.settings.publish_timeout_s} s")

    def state_payload(self, asset_id: str) -> dict:
        now = self.store.now_ms()
        open_alerts = [{"alert_id": r.alert_id, "label": r.label, "state": r.state(now), "priority": r.priority,
                        "severity": r.severity, "raised_at_ms": r.raised_at_ms, "group_id": r.group_id}
                       for r in self.store.list(asset_id=asset_id)]
        return {"asset_id": asset_id, "line": self.line, "open_alerts": open_alerts, "updated_at_ms": now}

    def handle(self, batch: Batch) -> None:
        assets: list[str] = []
        for entry in batch.entries:
            alert = batch.decode(entry, Alert)
            if not isinstance(alert, Alert):
                continue
            if alert.notify:
                payload = {**alert.model_dump(mode="json"), "entry_id": entry.entry_id}
                self._publish(alert_topic(self.settings, self.line, alert.asset_id), payload, retain=False)
            if alert.asset_id not in assets:
                assets.append(alert.asset_id)
            batch.ack(entry)
        for asset_id in assets:
            self._publish(state_topic(self.settings, self.line, asset_id), self.state_payload(asset_id), retain=True)
