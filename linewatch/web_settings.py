"""Settings of the web app (``linewatch serve web``), nested in ``linewatch.settings.Settings`` as ``web``.

Plain pydantic, no stage imports (core must not import a stage). Environment variables follow the
usual scheme, e.g. ``LINEWATCH_WEB__PORT=8480``, ``LINEWATCH_WEB__COOKIE_SECURE=false``.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field


class WebSettings(BaseModel):
    """The operators' and engineers' web app: where it listens, sessions, login throttling."""

    host: str = Field("127.0.0.1", description="Interface to bind (0.0.0.0: every interface; put TLS in front).")
    port: int = Field(8480, ge=0, le=65535, description="HTTP port (0: a free one).")
    users_db: Path | None = Field(None, description="Users/sessions/tokens SQLite file. Unset: <data_dir>/web/users.db.")
    registry: Path | None = Field(None, description="Model registry for the models view. Unset: the shipped "
                                  "models/default (or inference.registry when set).")
    cookie_secure: bool = Field(True, description="Send the session cookie only over HTTPS (browsers also accept "
                                "it on http://localhost). Set false only behind a trusted TLS-terminating proxy "
                                "that talks plain HTTP to a non-local address.")
    session_ttl_s: int = Field(12 * 3600, ge=60, description="A session expires this long after login.")
    login_max_failures: int = Field(5, ge=1, description="Failed logins per user+IP allowed in login_window_s ...")
    login_window_s: int = Field(900, ge=1, description="... after which further attempts get 429 until it passes.")
    sse_heartbeat_s: float = Field(15.0, gt=0, description="Comment line on idle server-sent-event streams.")
    tail_block_ms: int = Field(500, ge=10, description="XREAD block of the live tailer (stop latency).")
    verdict_scan: int = Field(2000, ge=10, description="Newest entries per verdict shard read at start-up and "
                              "for verdict history.")
