"""Webhook destination: HTTP POST of every notified alert event, signed, retried, dead-lettered.

Request::

    POST <url>
    Content-Type: application/json
    X-Linewatch-Delivery: <lw:alerts entry id>     (the same on every retry: dedup key)
    X-Linewatch-Timestamp: <unix seconds>
    X-Linewatch-Signature: sha256=<hex HMAC-SHA256(secret, "<timestamp>." + body)>

A 2xx answer delivers it. Connection errors, timeouts, 408, 429 and 5xx are retried with
exponential backoff (``base_delay_s · 2^k`` capped at ``max_delay_s``, ``max_attempts`` in all);
any other 4xx is final (the receiver refuses this request: retrying cannot help). An event that
cannot be delivered becomes a dead-letter entry (reason ``max_deliveries``) naming the destination
and the last error, and the next event is tried: a destination that stays down never blocks
the others (each webhook has its own consumer group ``notify-webhook-<name>``).

The receiver side (signature check, timestamp tolerance, replay cache) is
``services/alerts/webhook_receiver.py``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import threading
import time

import httpx

from linewatch.contract import Alert, DeadLetterReason
from linewatch.service_settings import WebhookSettings
from linewatch.streaming import Batch

log = logging.getLogger("linewatch.services.alerts.webhook")

SIGNATURE_HEADER = "X-Linewatch-Signature"
TIMESTAMP_HEADER = "X-Linewatch-Timestamp"
DELIVERY_HEADER = "X-Linewatch-Delivery"
RETRYABLE_STATUS = {408, 425, 429}


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """``sha256=<hex>`` of HMAC-SHA256 over ``"<timestamp>." + body``.

    >>> sign("s3cret", "1700000000", b'{"a":1}')[:15]
    'sha256=1698a50b'
    """
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


class DeliveryFailed(RuntimeError):
    """The destination did not take the event after every attempt (or refused it for good)."""


class WebhookNotifier:
    """Handler of one webhook's consumer group."""

    def __init__(self, settings: WebhookSettings, stop: threading.Event | None = None,
                 clock: callable = time.time) -> None:  # type: ignore[valid-type]
        self.settings = settings
        self.stop = stop or threading.Event()
        self.clock = clock
        self.http = httpx.Client(timeout=settings.timeout_s)
        self.attempts = 0  # every POST tried (tests and the bench read it)

    def close(self) -> None:
        self.http.close()

    def request(self, delivery_id: str, body: bytes) -> tuple[dict[str, str], bytes]:
        ts = str(int(self.clock()))
        return {"Content-Type": "application/json", DELIVERY_HEADER: delivery_id, TIMESTAMP_HEADER: ts,
                SIGNATURE_HEADER: sign(self.settings.secret.get_secret_value(), ts, body)}, body

    def deliver(self, delivery_id: str, payload: dict) -> int:
        """POST with retries; returns the number of attempts, raises DeliveryFailed."""
        body = json.dumps(payload, separators=(",", ":"), sort_keys=True).encode()
        s = self.settings
        last = ""
        for attempt in range(1, s.max_attempts + 1):
            headers, data = self.request(delivery_id, body)  # fresh timestamp and signature per attempt
            self.attempts += 1
            try:
                resp = self.http.post(s.url, content=data, headers=headers)
                if 200 <= resp.status_code < 300:
                    return attempt
                last = f"HTTP {resp.status_code}: {resp.text[:200]}"
                if 400 <= resp.status_code < 500 and resp.status_code not in RETRYABLE_STATUS:
                    raise DeliveryFailed(f"webhook {s.name} refused delivery {delivery_id} ({last}); not retried")
            except httpx.HTTPError as exc:
                last = f"{type(exc).__name__}: {exc}"
            if attempt < s.max_attempts:
                delay = min(s.base_delay_s * 2 ** (attempt - 1), s.max_delay_s)
                log.warning("webhook attempt failed", extra={"webhook": s.name, "attempt": attempt, "error": last,
                                                            "retry_in_s": delay, "entry_ids": [delivery_id]})
                if self.stop.wait(delay):
                    raise InterruptedError(f"stopping during webhook retries of {delivery_id}")
        raise DeliveryFailed(f"webhook {s.name} ({s.url}) still failing after {s.max_attempts} attempts: {last}")

    def handle(self, batch: Batch) -> None:
        for entry in batch.entries:
            alert = batch.decode(entry, Alert)
            if not isinstance(alert, Alert):
                continue
            if not alert.notify:
                batch.ack(entry)
                continue
            try:
                self.deliver(entry.entry_id, {**alert.model_dump(mode="json"), "entry_id": entry.entry_id})
            except DeliveryFailed as exc:
                batch.dead_letter(entry, DeadLetterReason.MAX_DELIVERIES, str(exc), asset_id=alert.asset_id,
                                  event_time_ms=alert.event_time_ms)
                continue
            batch.ack(entry)
