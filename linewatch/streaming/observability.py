"""``/metrics``, ``/healthz`` and ``/readyz`` over HTTP for one worker process.

- ``/metrics``: Prometheus text format of the worker's registry.
- ``/healthz``: 200 while the worker loop is alive (its heartbeat is fresh), 503 otherwise: a
  supervisor restarts a process that fails it.
- ``/readyz``: 200 once the worker is serving (Redis reachable, model loaded, groups created),
  503 before that and while draining after SIGTERM: a load balancer or the demo waits for it.

The server is the standard library's ``ThreadingHTTPServer`` on a daemon thread; port 0 picks a
free port (see :attr:`ObservabilityServer.port`).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest


class Health:
    """Liveness and readiness of a worker, updated by its loop."""

    def __init__(self, stale_after_s: float = 30.0) -> None:
        self.stale_after_s = stale_after_s
        self._beat = time.monotonic()
        self._ready = False
        self._reason = "starting"
        self._lock = threading.Lock()

    def beat(self) -> None:
        self._beat = time.monotonic()

    def set_ready(self, ready: bool, reason: str = "") -> None:
        with self._lock:
            self._ready, self._reason = ready, reason or ("ready" if ready else "not ready")

    def alive(self) -> tuple[bool, str]:
        age = time.monotonic() - self._beat
        ok = age < self.stale_after_s
        return ok, f"loop heartbeat {age:.1f} s ago" + ("" if ok else f" (> {self.stale_after_s:.0f} s: stuck)")

    def ready(self) -> tuple[bool, str]:
        with self._lock:
            return self._ready and self.alive()[0], self._reason


class ObservabilityServer:
    """HTTP endpoints for one process; ``extra`` adds JSON endpoints (path -> callable)."""

    def __init__(self, registry: CollectorRegistry, health: Health, host: str = "127.0.0.1", port: int = 0,
                 extra: dict[str, Callable[[], object]] | None = None) -> None:
        self.registry = registry
        self.health = health
        self.extra = dict(extra or {})
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    self._send(200, generate_latest(outer.registry), CONTENT_TYPE_LATEST)
                elif path in ("/healthz", "/readyz"):
                    ok, why = outer.health.alive() if path == "/healthz" else outer.health.ready()
                    body = json.dumps({"ok": ok, "detail": why}).encode()
                    self._send(200 if ok else 503, body, "application/json")
                elif path in outer.extra:
                    self._send(200, json.dumps(outer.extra[path](), default=str).encode(), "application/json")
                else:
                    self._send(404, b'{"error": "not found: try /metrics, /healthz, /readyz"}', "application/json")

            def _send(self, code: int, body: bytes, ctype: str) -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                return

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="observability", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        host = self._server.server_address[0]
        return f"http://{host}:{self.port}"

    def start(self) -> ObservabilityServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
