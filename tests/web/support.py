"""A running web stack for the tests, screenshots and benchmark: the real alerts service (router worker on a
real Redis) and the web app on uvicorn on a free port, with three users."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import redis

from linewatch.cli.web_cmd import WebServer, start_web, users_db_path
from linewatch.contract import StreamNames
from linewatch.service_settings import AlertsSettings
from linewatch.settings import Settings
from linewatch.streaming import StreamWorker
from linewatch.web_settings import WebSettings
from services.alerts.store import AlertStore
from services.web.users import UserDB

VENDOR = Path(__file__).resolve().parent / "vendor"
PASSWORDS = {"olga": "operator-pass-1", "erin": "engineer-pass-1", "adam": "admin-pass-123"}
ROLES = {"olga": "operator", "erin": "engineer", "adam": "admin"}


@dataclass
class WebStack:
    client: redis.Redis
    names: StreamNames
    settings: Settings
    server: WebServer
    users: UserDB
    store: AlertStore
    workers: list[StreamWorker] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.port}"

    def http(self, user: str | None = None) -> httpx.Client:
        """An HTTP client, logged in as ``user`` through the login form (cookies set by hand: httpx keeps
        Secure cookies off plain http, browsers accept them on localhost)."""
        h = httpx.Client(base_url=self.url, timeout=30)
        if user is not None:
            sid = login(h, user, PASSWORDS[user])
            assert sid, f"login of {user} failed"
        return h


def login(h: httpx.Client, user: str, password: str) -> str | None:
    form = h.get("/login")
    token = re.search(r'name="csrf_token" value="([^"]+)"', form.text)
    assert token is not None
    h.cookies.set("lw_login_csrf", form.cookies.get("lw_login_csrf") or "", path="/login")
    r = h.post("/login", data={"username": user, "password": password, "csrf_token": token.group(1), "next": "/"})
    sid = r.cookies.get("lw_session")
    if sid:
        h.cookies.set("lw_session", sid)
    return sid


def csrf_of(h: httpx.Client) -> str:
    page = h.get("/")
    m = re.search(r'<meta name="csrf-token" content="([^"]+)"', page.text)
    assert m is not None, page.text[:500]
    return m.group(1)


@contextmanager
def web_stack(client: redis.Redis, names: StreamNames, data_dir: Path, alerts: bool = True,
              web: WebSettings | None = None, alerts_settings: AlertsSettings | None = None) -> Iterator[WebStack]:
    from services.alerts.service import alert_workers

    settings = Settings(data_dir=data_dir, web=web or WebSettings(port=0, tail_block_ms=200))
    users = UserDB(users_db_path(settings))
    for name, role in ROLES.items():
        if users.get_user(name) is None:
            users.add_user(name, PASSWORDS[name], role)
    workers = alert_workers(client, names, alerts_settings or AlertsSettings(block_ms=100), mqtt=False) if alerts else []
    threads = [threading.Thread(target=w.run, daemon=True) for w in workers]
    for t in threads:
        t.start()
    server = start_web(client, names, settings)
    try:
        yield WebStack(client, names, settings, server, users, AlertStore(client, names), workers)
    finally:
        server.stop()
        for w in workers:
            w.stop()
        for t in threads:
            t.join(timeout=30)
