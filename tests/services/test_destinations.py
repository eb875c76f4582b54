"""Alert destinations against real servers: Mosquitto on 127.0.0.1:1883 (QoS 1, retained state),
webhooks with retries and signatures against local HTTP servers."""

from __future__ import annotations

import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import paho.mqtt.client as mqtt
import pytest
import redis

from linewatch.contract import DeadLetterReason, StreamNames, decode_message
from linewatch.service_settings import AlertsSettings, MqttSettings, WebhookSettings
from models.runtime.pytriton_process import free_port
from services.alerts.service import alert_workers
from services.alerts.webhook import (
    DELIVERY_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    WebhookNotifier,
    sign,
)
from services.alerts.webhook_receiver import (
    ReplayCache,
    ReplayError,
    SignatureError,
    make_server,
    verify,
)
from tests.services.support import running, verdict, wait_for, write

MQTT_HOST, MQTT_PORT = "127.0.0.1", 1883


class Subscriber:
    """A real MQTT client subscribed at QoS 1 to ``<prefix>/#``."""

    def __init__(self, prefix: str) -> None:
        self.messages: list[mqtt.MQTTMessage] = []
        self.ready = threading.Event()
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"test-{uuid.uuid4().hex[:8]}")
        self.client.on_connect = lambda c, u, f, rc, p=None: c.subscribe(f"{prefix}/#", qos=1)
        self.client.on_subscribe = lambda *a: self.ready.set()
        self.client.on_message = lambda c, u, m: self.messages.append(m)
        self.client.connect(MQTT_HOST, MQTT_PORT)
        self.client.loop_start()
        assert self.ready.wait(10), "MQTT subscription not acknowledged (is Mosquitto on 1883?)"

    def close(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()


def test_mqtt_alerts_reach_a_subscriber_at_qos1_with_retained_state(redis_client: redis.Redis,
                                                                    stream_names: StreamNames) -> None:
    prefix = f"lwtest-{uuid.uuid4().hex[:8]}"
    settings = AlertsSettings(line="l1", mqtt=MqttSettings(host=MQTT_HOST, port=MQTT_PORT, topic_prefix=prefix),
                              lease_ttl_ms=2000)
    sub = Subscriber(prefix)
    router, notifier = alert_workers(redis_client, stream_names, settings)
    try:
        with running(router), running(notifier):
            write(redis_client, stream_names.verdicts("PMP-01"), verdict("PMP-01", "bearing_wear", "raised"))
            wait_for(lambda: any(m.topic.endswith("/alerts") for m in sub.messages), 20, "alert on MQTT")
            wait_for(lambda: any(m.topic.endswith("/state") for m in sub.messages), 20, "state on MQTT")
        alert = next(m for m in sub.messages if m.topic == f"{prefix}/l1/PMP-01/alerts")
        assert alert.qos == 1 and not alert.retain
        body = json.loads(alert.payload)
        assert body["event"] == "raised" and body["label"] == "bearing_wear" and body["alert_id"].startswith("A-")
        late = Subscriber(prefix)  # subscribes after the fact: gets the retained state at once
        wait_for(lambda: late.messages, 10, "retained state")
        state = late.messages[0]
        assert state.topic == f"{prefix}/l1/PMP-01/state" and state.retain
        assert json.loads(state.payload)["open_alerts"][0]["label"] == "bearing_wear"
        late.close()
    finally:
        sub.close()
        cleaner = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
        cleaner.connect(MQTT_HOST, MQTT_PORT)
        cleaner.publish(f"{prefix}/l1/PMP-01/state", b"", qos=1, retain=True).wait_for_publish(5)
        cleaner.disconnect()
    assert redis_client.xpending(stream_names.alerts, "notify-mqtt")["pending"] == 0


class FlakyReceiver:
    """Answers 503 to the first ``fail`` requests, then verifies like the example receiver."""

    def __init__(self, secret: str, fail: int) -> None:
        self.received: list[dict] = []
        self.calls = 0
        cache = ReplayCache()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.calls += 1
                if outer.calls <= fail:
                    self.send_response(503)
                    self.end_headers()
                    return
                try:
                    payload, first = verify(secret, dict(self.headers.items()), body, cache)
                    code = 200
                    if first:
                        outer.received.append(payload)
                except (SignatureError, ReplayError):
                    code = 401
                self.send_response(code)
                self.end_headers()

            def log_message(self, *a: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_webhook_retries_with_backoff_then_delivers_signed(redis_client: redis.Redis,
                                                           stream_names: StreamNames) -> None:
    receiver = FlakyReceiver("k3y", fail=2)
    hook = WebhookSettings(name="ops", url=receiver.url, secret="k3y", base_delay_s=0.05, max_attempts=5)
    settings = AlertsSettings(webhooks=[hook], lease_ttl_ms=2000)
    router, notifier = alert_workers(redis_client, stream_names, settings, mqtt=False)
    try:
        with running(router), running(notifier):
            write(redis_client, stream_names.verdicts("PMP-01"), verdict("PMP-01", "imbalance", "raised"))
            wait_for(lambda: receiver.received, 20, "webhook delivery")
        assert receiver.calls == 3 and receiver.received[0]["label"] == "imbalance"
        assert redis_client.xpending(stream_names.alerts, "notify-webhook-ops")["pending"] == 0
        assert redis_client.xlen(stream_names.deadletter) == 0
    finally:
        receiver.close()


def test_webhook_destination_down_ends_in_dead_letter(redis_client: redis.Redis, stream_names: StreamNames) -> None:
    hook = WebhookSettings(name="down", url=f"http://127.0.0.1:{free_port()}/x", secret="s", base_delay_s=0.01,
                           max_attempts=3, timeout_s=1)
    router, notifier = alert_workers(redis_client, stream_names, AlertsSettings(webhooks=[hook]), mqtt=False)
    with running(router), running(notifier):
        write(redis_client, stream_names.verdicts("PMP-01"), verdict("PMP-01", "imbalance", "raised"))
        wait_for(lambda: redis_client.xlen(stream_names.deadletter), 20, "dead letter")
    dl = decode_message(redis_client.xrange(stream_names.deadletter)[0][1])
    assert dl.reason == DeadLetterReason.MAX_DELIVERIES and "after 3 attempts" in dl.detail
    assert dl.source == "services.alerts.webhook.down" and dl.raw_ref.startswith(stream_names.alerts + "/")


def test_example_receiver_rejects_bad_signature_and_replay() -> None:
    got: list[dict] = []
    server = make_server("right", on_alert=got.append)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    notifier = WebhookNotifier(WebhookSettings(name="x", url=url, secret="right"))
    try:
        headers, body = notifier.request("9-0", b'{"label":"x"}')
        ok = httpx.post(url, content=body, headers=headers)
        assert ok.status_code == 200 and got == [{"label": "x"}]
        assert httpx.post(url, content=body, headers=headers).status_code == 409  # replay
        forged = {**headers, SIGNATURE_HEADER: sign("wrong", headers[TIMESTAMP_HEADER], body)}
        assert httpx.post(url, content=body, headers=forged).status_code == 401
        tampered = httpx.post(url, content=b'{"label":"y"}', headers=headers)
        assert tampered.status_code == 401
        old_ts = str(int(headers[TIMESTAMP_HEADER]) - 3600)
        stale = {**headers, TIMESTAMP_HEADER: old_ts, SIGNATURE_HEADER: sign("right", old_ts, body)}
        assert httpx.post(url, content=body, headers=stale).status_code == 401
        retry_headers, _ = WebhookNotifier(WebhookSettings(name="x", url=url, secret="right"),
                                           clock=lambda: float(headers[TIMESTAMP_HEADER]) + 1).request("9-0", body)
        retry = httpx.post(url, content=body, headers=retry_headers)
        assert retry.status_code == 200 and retry.json()["duplicate"] and len(got) == 1
        assert headers[DELIVERY_HEADER] == "9-0"
    finally:
        notifier.close()
        server.shutdown()


def test_a_refused_webhook_is_not_retried() -> None:
    server = make_server("right")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    notifier = WebhookNotifier(WebhookSettings(name="x", url=f"http://127.0.0.1:{server.server_address[1]}/",
                                               secret="wrong", base_delay_s=0.01))
    from services.alerts.webhook import DeliveryFailed

    with pytest.raises(DeliveryFailed, match="not retried"):
        notifier.deliver("1-0", {"a": 1})
    assert notifier.attempts == 1
    server.shutdown()
