"""Authentication, roles, CSRF and login throttling of the web app, against a real server on real Redis."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import redis
from starlette.routing import Route
from typer.testing import CliRunner

from linewatch.cli.app import app as cli_app
from linewatch.contract import StreamNames
from linewatch.web_settings import WebSettings
from services.web.data import frame_celsius
from tests.services.support import wait_for
from tests.web import seed
from tests.web.support import PASSWORDS, WebStack, csrf_of, login, web_stack

OPEN = {"/healthz", "/login"}


@pytest.fixture
def stack(redis_client: redis.Redis, stream_names: StreamNames, tmp_path: Path) -> Iterator[WebStack]:
    with web_stack(redis_client, stream_names, tmp_path, web=WebSettings(port=0, tail_block_ms=200,
                                                                        login_max_failures=3)) as s:
        yield s


def _raise_alert(stack: WebStack, asset: str = "PMP-01") -> str:
    eid = seed.add(stack.client, stack.names.verdicts(asset), seed.verdict(asset, "bearing_wear"))
    rec = wait_for(lambda: next((r for r in stack.store.list() if r.verdict_entry_id == eid), None), 15, "alert")
    return rec.alert_id  # type: ignore[attr-defined]


def _routes(routes: list[object]) -> Iterator[Route]:
    """Every route, also those of included routers (FastAPI wraps them)."""
    for r in routes:
        if isinstance(r, Route):
            yield r
        inner = getattr(r, "original_router", None)
        if inner is not None:
            yield from _routes(inner.routes)


def test_every_endpoint_but_health_and_login_refuses_anonymous(stack: WebStack) -> None:
    routes = list(_routes(stack.server.server.config.app.routes))  # type: ignore[attr-defined]
    assert len(routes) > 30
    h = stack.http()
    checked = 0
    for route in routes:
        if route.path in OPEN:
            continue
        path = re.sub(r"\{[^}]+\}", "x", route.path)
        for method in sorted(route.methods or {"GET"}):
            if method == "HEAD":
                continue
            r = h.request(method, path)
            if route.path.startswith("/api/v1/") and route.path != "/api/v1/docs" or route.path == "/metrics":
                assert r.status_code == 401, (method, path, r.status_code)
            else:
                assert r.status_code in (303, 401), (method, path, r.status_code)
                if r.status_code == 303:
                    assert r.headers["location"].startswith("/login?next=")
            checked += 1
    assert checked > 30
    assert h.get("/healthz").json()["ok"] is True


def test_roles(stack: WebStack) -> None:
    op, eng, adm = stack.http("olga"), stack.http("erin"), stack.http("adam")
    for path in ("/admin/users", "/admin/settings", "/api/v1/users"):
        assert op.get(path).status_code == 403
        assert eng.get(path).status_code == 403
        assert adm.get(path).status_code == 200
    for path in ("/drift", "/models", "/explanations", "/api/v1/drift", "/api/v1/models"):
        assert op.get(path).status_code == 403, path
        assert eng.get(path).status_code == 200, path
    assert "needs the admin role" in op.get("/admin/users").text
    for path in ("/", "/alerts", "/api/v1/overview", "/metrics"):
        assert op.get(path).status_code == 200


def test_csrf_required_for_cookie_sessions_not_for_tokens(stack: WebStack) -> None:
    aid = _raise_alert(stack)
    op = stack.http("olga")
    assert op.post(f"/alerts/{aid}/ack", data={}).status_code == 403
    assert op.post(f"/alerts/{aid}/ack", data={"csrf_token": "forged"}).status_code == 403
    assert op.post(f"/api/v1/alerts/{aid}/ack", json={}).status_code == 403
    assert stack.store.get(aid).acked is False  # type: ignore[union-attr]
    r = op.post(f"/alerts/{aid}/ack", data={"csrf_token": csrf_of(op)})
    assert r.status_code == 303
    rec = stack.store.get(aid)
    assert rec is not None and rec.acked and rec.acked_by == "olga"
    # a machine with an API token: no cookie, no CSRF; acts as its user
    token = stack.users.create_token("olga", "scada")
    bot = stack.http()
    assert bot.post(f"/api/v1/alerts/{aid}/shelve", json={"duration_s": 600},
                    headers={"Authorization": "Bearer lwt_x_wrong"}).status_code == 401
    r = bot.post(f"/api/v1/alerts/{aid}/shelve", json={"duration_s": 600, "reason": "parts"},
                 headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 200 and r.json()["state"] == "shelved"
    events = [(ev.event, ev.user) for _, ev in stack.store.events(50, aid)]
    assert events == [("raised", ""), ("acknowledged", "olga"), ("shelved", "olga")]
    # login form without its CSRF token
    assert stack.http().post("/login", data={"username": "olga", "password": PASSWORDS["olga"]}).status_code == 403


def test_failed_logins_are_rate_limited_per_user_and_address(stack: WebStack) -> None:
    h = stack.http()
    codes = [h.post("/login", data={"username": "olga", "password": "wrong", "csrf_token": "x"}).status_code
             for _ in range(1)]
    assert codes == [403]  # not even counted without the login CSRF token
    for _ in range(3):
        assert login(h, "olga", "wrong-password") is None
    form = h.get("/login")
    token = re.search(r'name="csrf_token" value="([^"]+)"', form.text).group(1)  # type: ignore[union-attr]
    h.cookies.set("lw_login_csrf", form.cookies.get("lw_login_csrf") or "", path="/login")
    r = h.post("/login", data={"username": "olga", "password": PASSWORDS["olga"], "csrf_token": token})
    assert r.status_code == 429 and int(r.headers["retry-after"]) > 0, r.status_code
    assert "lw_session" not in r.cookies
    assert login(stack.http(), "erin", PASSWORDS["erin"])  # another user from the same address is not blocked


def test_secrets_are_stored_hashed(stack: WebStack) -> None:
    token = stack.users.create_token("erin", "prometheus")
    h = stack.http("erin")
    sid = next(c.value for c in h.cookies.jar if c.name == "lw_session")
    raw = Path(stack.users.path).read_bytes()
    for secret in (*PASSWORDS.values(), token.split("_", 2)[2], sid):
        assert secret and secret.encode() not in raw
    with sqlite3.connect(stack.users.path) as db:
        hashes = [r[0] for r in db.execute("SELECT pw_hash FROM users")]
    assert hashes and all(h_.startswith("$argon2id$") for h_ in hashes)
    r = stack.http().get("/metrics", headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 200 and "linewatch_web_requests" in r.text
    stack.users.revoke_token(token.split("_")[1])
    assert stack.http().get("/metrics", headers={"Authorization": f"Bearer {token}"}).status_code == 401
    # logging out ends the session server-side
    assert h.post("/logout", data={"csrf_token": csrf_of(h)}).status_code == 303
    assert h.get("/api/v1/overview").status_code == 401


def test_users_cli(tmp_path: Path) -> None:
    env = {"LINEWATCH_DATA_DIR": str(tmp_path)}
    runner = CliRunner()
    r = runner.invoke(cli_app, ["users", "add", "root", "--role", "admin"], input="s3cret-pass\ns3cret-pass\n", env=env)
    assert r.exit_code == 0 and "added root (admin)" in r.output, r.output
    r = runner.invoke(cli_app, ["users", "add", "shorty"], input="short\nshort\n", env=env)
    assert r.exit_code == 1 and "at least 8" in r.output
    r = runner.invoke(cli_app, ["users", "add", "x", "--role", "boss"], input="long-enough\nlong-enough\n", env=env)
    assert r.exit_code == 1 and "operator, engineer, admin" in r.output
    token = runner.invoke(cli_app, ["users", "token", "root", "--label", "ci"], env=env).output.strip()
    assert token.startswith("lwt_")
    out = runner.invoke(cli_app, ["users", "list", "--tokens"], env=env).output
    assert "root" in out and "admin" in out and token.split("_")[1] in out and token.split("_", 2)[2] not in out
    assert runner.invoke(cli_app, ["users", "remove", "root"], env=env).exit_code == 0
    assert "0 user(s)" in runner.invoke(cli_app, ["users", "list"], env=env).output


def test_thermal_scale_maps_the_model_input_back_to_celsius() -> None:
    """The asset view's °C scale inverts pipeline.features' normalisation (docs/features.md)."""
    from pipeline.features.thermal_features import thermal_features

    truth_c = np.full((120, 160), 24.0, np.float32)
    truth_c[40:60, 80:100] = 71.5  # a hot bearing, 47.5 K above ambient
    truth_c[0, 0] = 160.0  # beyond ambient + 100 K: the model input saturates
    frame_ck = np.rint((truth_c + 273.15) * 100).astype(np.uint16)
    stats, norm = thermal_features(frame_ck, None, None)
    from linewatch.contract import ThermalFeatures

    f = ThermalFeatures(asset_id="PMP-01", asset_type="pump", event_time_ms=0, features_version=3, stats=stats,
                        frame=norm)
    celsius, exact = frame_celsius(f)
    assert not exact  # the 160 °C pixel is clipped, and the page says so
    assert abs(celsius[50, 90] - 71.5) < 0.1 and abs(celsius[5, 5] - 24.0) < 0.05
    assert abs(celsius[0, 0] - (stats["ambient_c"] + 100.0)) < 0.1


def test_serve_web_prints_its_url_and_serves(redis_url: str, stream_names: StreamNames, tmp_path: Path) -> None:
    import subprocess
    import sys

    import httpx

    from tests.services.support import REPO, env_for

    env = env_for(redis_url, stream_names, LINEWATCH_DATA_DIR=str(tmp_path), LINEWATCH_WEB__PORT="0")
    proc = subprocess.Popen([sys.executable, "-m", "linewatch.cli.app", "serve", "web"], env=env, cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        lines = []
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if "http://" in line:
                break
        out = "".join(lines)
        assert "no users yet" in out and "linewatch users add NAME --role admin" in out, out
        url = re.search(r"(http://127\.0\.0\.1:\d+/)", out)
        assert url is not None, out
        assert httpx.get(url.group(1) + "healthz").json()["ok"] is True
        assert httpx.get(url.group(1) + "api/v1/overview").status_code == 401
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0
