"""Example webhook receiver that verifies linewatch's signature: copy it into your own endpoint.

Checks, in order: the signature (HMAC-SHA256 over ``"<timestamp>." + body``, compared in constant
time), the timestamp (within ``tolerance_s`` of now: an old captured request is refused), and the
replay cache (the exact same signed request twice is refused; a *retry* of a delivery — same
delivery id, new timestamp and signature — is answered 200 without processing it again).

Run it::

    python -m services.alerts.webhook_receiver --secret "$SECRET" --port 9000

Answers: 200 delivered (or duplicate retry), 401 bad/missing signature or stale timestamp,
409 replayed request.
"""

from __future__ import annotations

import argparse
import hmac
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from services.alerts.webhook import (
    DELIVERY_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    sign,
)


class SignatureError(ValueError):
    """401: the request is not from someone holding the secret, or too old."""


class ReplayError(ValueError):
    """409: this exact signed request was received before."""


class ReplayCache:
    """Signatures seen within the tolerance window, and delivery ids already processed (bounded)."""

    def __init__(self, size: int = 100_000) -> None:
        self.size = size
        self._signatures: OrderedDict[str, None] = OrderedDict()
        self._deliveries: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def _add(d: OrderedDict[str, None], key: str, size: int) -> bool:
        if key in d:
            return False
        d[key] = None
        while len(d) > size:
            d.popitem(last=False)
        return True

    def first_signature(self, sig: str) -> bool:
        with self._lock:
            return self._add(self._signatures, sig, self.size)

    def first_delivery(self, delivery_id: str) -> bool:
        with self._lock:
            return self._add(self._deliveries, delivery_id, self.size)


def verify(secret: str, headers: Mapping[str, str], body: bytes, cache: ReplayCache, tolerance_s: float = 300.0,
           now: float | None = None) -> tuple[dict, bool]:
    """Return ``(payload, first_time)`` or raise SignatureError/ReplayError.

    >>> cache = ReplayCache()
    >>> from services.alerts.webhook import sign
    >>> h = {TIMESTAMP_HEADER: "100", SIGNATURE_HEADER: sign("k", "100", b'{"a":1}'), DELIVERY_HEADER: "1-0"}
    >>> verify("k", h, b'{"a":1}', cache, now=100)
    ({'a': 1}, True)
    >>> verify("k", h, b'{"a":1}', cache, now=100)
    Traceback (most recent call last):
    ...
    services.alerts.webhook_receiver.ReplayError: replayed request (signature seen before) for delivery 1-0
    >>> verify("wrong", h, b'{"a":1}', ReplayCache(), now=100)
    Traceback (most recent call last):
    ...
    services.alerts.webhook_receiver.SignatureError: bad signature
    """
    lower = {k.lower(): v for k, v in headers.items()}
    ts = lower.get(TIMESTAMP_HEADER.lower(), "")
    sig = lower.get(SIGNATURE_HEADER.lower(), "")
    delivery = lower.get(DELIVERY_HEADER.lower(), "")
    if not ts or not sig:
        raise SignatureError("missing signature or timestamp header")
    if not hmac.compare_digest(sign(secret, ts, body), sig):
        raise SignatureError("bad signature")
    try:
        age = (time.time() if now is None else now) - float(ts)
    except ValueError as exc:
        raise SignatureError("timestamp is not a number") from exc
    if abs(age) > tolerance_s:
        raise SignatureError(f"timestamp {ts} is {age:.0f} s away from now (tolerance {tolerance_s:.0f} s)")
    if not cache.first_signature(sig):
        raise ReplayError(f"replayed request (signature seen before) for delivery {delivery}")
    return json.loads(body), cache.first_delivery(delivery) if delivery else True


def make_server(secret: str, host: str = "127.0.0.1", port: int = 0,
                on_alert: Callable[[dict], None] | None = None, tolerance_s: float = 300.0) -> ThreadingHTTPServer:
    """A receiver HTTP server (call ``serve_forever`` on it; ``server_address[1]`` is the port)."""
    cache = ReplayCache()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            try:
                payload, first = verify(secret, dict(self.headers.items()), body, cache, tolerance_s)
            except SignatureError as exc:
                return self._answer(401, {"error": str(exc)})
            except ReplayError as exc:
                return self._answer(409, {"error": str(exc)})
            if first and on_alert is not None:
                on_alert(payload)
            self._answer(200, {"ok": True, "duplicate": not first})

        def _answer(self, code: int, obj: dict) -> None:
            data = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    return server


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--secret", required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=9000)
    args = ap.parse_args()
    server = make_server(args.secret, args.host, args.port,
                         on_alert=lambda p: print(json.dumps(p, sort_keys=True), flush=True))
    print(f"webhook receiver on http://{args.host}:{server.server_address[1]}/", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
