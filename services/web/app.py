"""The web app (FastAPI): server-rendered pages (Jinja2) and the JSON API under ``/api/v1`` on the same data.

``create_app(client, names, settings, users_db, registry_root)`` builds it; ``linewatch serve web`` runs it
with uvicorn. Pages and their roles:

=============================== ========== ===============================================================
``/``                           operator   line overview, live (server-sent events)
``/alerts``                     operator   alert inbox: ack, shelve, confirm, reject (through the alerts store)
``/assets/{id}``                operator   thermal frame (°C), spectrogram, PLC trends, verdict history, inputs refused
``/explanations[/{id}]``        engineer   LIME heatmaps and feature bars, rule cause + action, agreement
``/drift``                      engineer   p-values over time, reference vs live, cause, shadow disagreement
``/models``                     engineer   model cards: metrics, gates, confusion and calibration plots
``/admin/users``, ``/admin/settings`` admin users and API tokens; the effective web settings
``/api/v1/...``                 as above   JSON (OpenAPI at ``/api/v1/docs``), ``/api/v1/events`` (SSE)
``/metrics``                    operator   Prometheus (scrape with an API token)
``/healthz``                    nobody     liveness (no data)
=============================== ========== ===============================================================

Operator actions go to ``services.alerts.store.AlertStore`` with the logged-in user's name, so every
action is an event on ``lw:alerts`` with ``user`` (the audit trail's source); the web app writes no
audit of its own.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast
from urllib.parse import quote

import numpy as np
from numpy.typing import NDArray
import redis
from fastapi import APIRouter, Depends, FastAPI, Form, HTTPException, Request, Response
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, StreamingResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from pydantic import BaseModel, Field

from linewatch import __version__
from linewatch.contract import Alert, AudioFeatures, Explanation, Modality, StreamNames, ThermalFeatures
from linewatch.web_settings import WebSettings
from services.alerts.records import PRIORITY_ORDER, AlertRecord
from services.alerts.store import MAX_SHELVE_S, AlertNotFound, AlertStore, InvalidAction
from services.web import render
from services.web.auth import (
    LOGIN_CSRF_COOKIE,
    SESSION_COOKIE,
    Forbidden,
    LoginRequired,
    Principal,
    authorize,
    check_csrf,
)
from services.web.data import LineReader, ModelCards
from services.web.live import LiveFeed
from services.web.users import ROLES, Role, UserDB, UserError

HERE = Path(__file__).resolve().parent
EXPLAIN_SLACK_MS = 120_000
SHELVE_CHOICES = [(15, "15 minutes"), (60, "1 hour"), (240, "4 hours"), (480, "8 hours"), (1440, "24 hours")]


class WebMetrics:
    """The app's Prometheus metrics in its own registry (no global state)."""

    def __init__(self) -> None:
        self.registry = r = CollectorRegistry()
        self.requests = Counter("linewatch_web_requests", "HTTP requests by route and status.",
                                ["route", "status"], registry=r)
        self.latency = Histogram("linewatch_web_request_seconds", "Time to answer a request (streams excluded).",
                                 ["route"], registry=r,
                                 buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5))
        self.sse_clients = Gauge("linewatch_web_sse_clients", "Connected server-sent-event clients.", registry=r)
        self.events = Counter("linewatch_web_live_events", "Live events fanned out, by kind.", ["kind"], registry=r)
        self.logins = Counter("linewatch_web_logins", "Login attempts by outcome.", ["outcome"], registry=r)
        self.actions = Counter("linewatch_web_alert_actions", "Operator actions on alerts.", ["action"], registry=r)


@dataclass
class Web:
    """Everything the routes share."""

    settings: WebSettings
    names: StreamNames
    store: AlertStore
    reader: LineReader
    cards: ModelCards
    users: UserDB
    live: LiveFeed
    metrics: WebMetrics
    templates: Jinja2Templates

    def alert_view(self, rec: AlertRecord, now: int | None = None) -> dict[str, Any]:
        now = self.store.now_ms() if now is None else now
        return {**rec.model_dump(mode="json"), "state": rec.state(now), "score": rec.score}

    def asset_alerts(self) -> dict[str, dict[str, Any]]:
        """asset -> its most urgent open alert (flood members included: each asset shows its own)."""
        out: dict[str, dict[str, Any]] = {}
        now = self.store.now_ms()
        for rec in self.store.list():
            if rec.is_group or rec.asset_id in out:
                continue
            out[rec.asset_id] = {"alert_id": rec.alert_id, "state": rec.state(now), "priority": rec.priority,
                                 "label": rec.label}
        return out

    def live_alert(self, alert: Alert) -> dict[str, Any]:
        """The SSE payload of an alert event: the event, and the asset's open alert after it."""
        asset_open = None
        now = self.store.now_ms()
        for rec in self.store.list(asset_id=alert.asset_id):
            if not rec.is_group:
                asset_open = {"alert_id": rec.alert_id, "state": rec.state(now), "priority": rec.priority,
                              "label": rec.label}
                break
        return {"alert_id": alert.alert_id, "asset_id": alert.asset_id, "event": alert.event, "state": alert.state,
                "priority": alert.priority, "label": alert.label, "user": alert.user, "message": alert.message,
                "created_at_ms": alert.created_at_ms, "asset_alert": asset_open}

    def overview(self) -> list[dict[str, Any]]:
        verdicts = self.live.snapshot()
        alerts = self.asset_alerts()
        rows = []
        for asset in sorted(set(verdicts) | set(alerts)):
            v = verdicts.get(asset)
            rows.append({"asset_id": asset, "verdict": v, "alert": alerts.get(asset)})
        return rows

    def explanation_finder(self) -> Callable[[AlertRecord], str]:
        """The explanation of an alert, over the newest explanations: by alert id, else by the verdict entry
        id the record holds, else the newest explanation of the same asset and fault made while the alert
        was open (the record keeps the *latest* verdict's id, an explanation the raising verdict's). explain
        reads the verdicts itself, so its explanation may land up to ``EXPLAIN_SLACK_MS`` before the router
        raises the alert."""
        newest = list(reversed(self.live.explanation_refs()))
        by_id: dict[str, str] = {}
        for e in reversed(newest):
            by_id[e.verdict_entry_id] = e.explanation_id
            if e.alert_id:
                by_id[e.alert_id] = e.explanation_id

        def find(rec: AlertRecord) -> str:
            hit = by_id.get(rec.alert_id) or by_id.get(rec.verdict_entry_id)
            if hit:
                return hit
            for e in newest:
                if e.asset_id == rec.asset_id and e.label == rec.label \
                        and e.explained_at_ms >= rec.raised_at_ms - EXPLAIN_SLACK_MS \
                        and (not rec.cleared_at_ms or e.event_time_ms <= rec.cleared_at_ms):
                    return e.explanation_id
            return ""
        return find


# -- request bodies of the JSON API ---------------------------------------------------------------------
class CommentBody(BaseModel):
    comment: str = ""


class ShelveBody(BaseModel):
    duration_s: float = Field(gt=0, le=MAX_SHELVE_S)
    reason: str = ""


class ConfirmBody(BaseModel):
    comment: str = ""
    true_label: str | None = None


class NewUser(BaseModel):
    name: str
    role: Role
    password: str = Field(min_length=8)


def _png(data: bytes) -> Response:
    return Response(data, media_type="image/png", headers={"Cache-Control": "no-store"})


def create_app(client: redis.Redis, names: StreamNames, settings: WebSettings, users_db: Path,
               registry_root: Path, maxlen: int = 100_000, start_live: bool = True) -> FastAPI:
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    templates.env.filters["ts"] = _ts
    metrics = WebMetrics()
    store = AlertStore(client, names, maxlen)
    live = LiveFeed(client, names, block_ms=settings.tail_block_ms, verdict_scan=settings.verdict_scan,
                    on_event=lambda kind: metrics.events.labels(kind).inc())
    web = Web(settings, names, store, LineReader(client, names, settings.verdict_scan), ModelCards(registry_root),
              UserDB(users_db), live, metrics, templates)
    live.alert_view = web.live_alert

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if start_live:
            await asyncio.to_thread(live.start)
        try:
            yield
        finally:
            live.stop()

    app = FastAPI(title="linewatch web", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None,
                  openapi_url=None, description="Line overview, alerts, explanations, drift and model cards. "
                  "Every endpoint except /healthz needs a session or `Authorization: Bearer <API token>`.")
    app.state.web = web
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")

    @app.middleware("http")
    async def observe(request: Request, call_next: Callable[[Request], Any]) -> Response:
        start = time.perf_counter()
        response: Response = await call_next(request)
        route = request.scope.get("route")
        path = getattr(route, "path", "unmatched")
        if not path.endswith("/events"):
            metrics.latency.labels(path).observe(time.perf_counter() - start)
        metrics.requests.labels(path, str(response.status_code)).inc()
        response.headers.setdefault("Content-Security-Policy",
                                    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
                                    "frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        return response

    @app.exception_handler(LoginRequired)
    async def to_login(request: Request, exc: LoginRequired) -> Response:
        return RedirectResponse(f"/login?next={quote(exc.next_url, safe='/')}", status_code=303)

    @app.exception_handler(Forbidden)
    async def forbidden(request: Request, exc: Forbidden) -> Response:
        text = f"{exc.user.name} ({exc.user.role}) may not open this: it needs the {exc.role} role"
        if exc.api:
            return JSONResponse({"detail": text}, status_code=403)
        return templates.TemplateResponse(request, "error.html", {"title": "Not allowed", "message": text,
                                                                  "who": None}, status_code=403)

    def page(role: Role) -> Callable[[Request], Principal]:
        def dep(request: Request) -> Principal:
            return authorize(request, web.users, role, api=False)
        return dep

    def api(role: Role) -> Callable[[Request], Principal]:
        def dep(request: Request) -> Principal:
            return authorize(request, web.users, role, api=True)
        return dep

    def render_page(request: Request, name: str, who: Principal | None, **ctx: Any) -> HTMLResponse:
        return templates.TemplateResponse(request, name, {"who": who, "nav": request.url.path, **ctx})

    # -- health, metrics, login ---------------------------------------------------------------------------
    @app.get("/healthz", include_in_schema=False)
    def healthz() -> dict[str, Any]:
        return {"ok": True, "live_feed": live.alive or not start_live}

    @app.get("/metrics", include_in_schema=False)
    def prometheus(who: Principal = Depends(api("operator"))) -> Response:
        metrics.sse_clients.set(live.subscribers)
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    @app.get("/login", response_class=HTMLResponse, include_in_schema=False)
    def login_form(request: Request, next: str = "/", error: str = "") -> HTMLResponse:
        token = secrets.token_urlsafe(24)
        resp = render_page(request, "login.html", None, next=_safe_next(next), error=error, csrf_token=token)
        resp.set_cookie(LOGIN_CSRF_COOKIE, token, httponly=True, secure=settings.cookie_secure, samesite="strict",
                        max_age=3600, path="/login")
        return resp

    @app.post("/login", include_in_schema=False)
    def login(request: Request, username: str = Form(""), password: str = Form(""), csrf_token: str = Form(""),
              next: str = Form("/")) -> Response:
        cookie = request.cookies.get(LOGIN_CSRF_COOKIE, "")
        if not csrf_token or not secrets.compare_digest(cookie, csrf_token):
            metrics.logins.labels("csrf").inc()
            raise HTTPException(403, "missing or wrong CSRF token: reload the login page and try again")
        client_ip = request.client.host if request.client else "?"
        wait = web.users.login_blocked_for_s(username, client_ip, settings.login_max_failures,
                                             settings.login_window_s)
        if wait:
            metrics.logins.labels("throttled").inc()
            return templates.TemplateResponse(request, "login.html", {
                "who": None, "next": _safe_next(next), "csrf_token": csrf_token,
                "error": f"Too many failed logins for {username} from this address: try again in {wait} s."},
                status_code=429, headers={"Retry-After": str(wait)})
        user = web.users.authenticate(username, password)
        if user is None:
            web.users.record_login_failure(username, client_ip)
            metrics.logins.labels("failed").inc()
            return templates.TemplateResponse(request, "login.html", {
                "who": None, "next": _safe_next(next), "csrf_token": csrf_token,
                "error": "Wrong user name or password."}, status_code=401)
        web.users.clear_login_failures(username, client_ip)
        metrics.logins.labels("ok").inc()
        sid, _ = web.users.create_session(user, settings.session_ttl_s)
        resp = RedirectResponse(_safe_next(next), status_code=303)
        resp.set_cookie(SESSION_COOKIE, sid, httponly=True, secure=settings.cookie_secure, samesite="strict",
                        max_age=settings.session_ttl_s, path="/")
        resp.delete_cookie(LOGIN_CSRF_COOKIE, path="/login")
        return resp

    @app.post("/logout", include_in_schema=False)
    def logout(request: Request, csrf_token: str = Form(""), who: Principal = Depends(page("operator"))) -> Response:
        check_csrf(who, csrf_token)
        sid = request.cookies.get(SESSION_COOKIE)
        if sid:
            web.users.end_session(sid)
        resp = RedirectResponse("/login", status_code=303)
        resp.delete_cookie(SESSION_COOKIE, path="/")
        return resp

    # -- pages ----------------------------------------------------------------------------------------------
    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def overview_page(request: Request, who: Principal = Depends(page("operator"))) -> HTMLResponse:
        return render_page(request, "overview.html", who, rows=web.overview())

    @app.get("/alerts", response_class=HTMLResponse, include_in_schema=False)
    def inbox_page(request: Request, partial: bool = False,
                   who: Principal = Depends(page("operator"))) -> HTMLResponse:
        return render_page(request, "inbox_list.html" if partial else "inbox.html", who, **_inbox(web, who))

    @app.post("/alerts/{alert_id}/{action}", include_in_schema=False)
    def alert_action_form(alert_id: str, action: str, csrf_token: str = Form(""), comment: str = Form(""),
                          minutes: float = Form(0), true_label: str = Form(""),
                          who: Principal = Depends(page("operator"))) -> Response:
        check_csrf(who, csrf_token)
        _act(web, who, alert_id, action, comment=comment, duration_s=minutes * 60, true_label=true_label or None)
        return RedirectResponse(f"/alerts#alert-{alert_id}", status_code=303)

    @app.get("/assets/{asset_id}", response_class=HTMLResponse, include_in_schema=False)
    def asset_page(request: Request, asset_id: str, who: Principal = Depends(page("operator"))) -> HTMLResponse:
        history = web.reader.verdict_history(asset_id, 30)
        alerts = [web.alert_view(r) for r in web.store.list(asset_id=asset_id, open_only=False, limit=20)]
        return render_page(request, "asset.html", who, asset_id=asset_id, history=history, alerts=alerts,
                           tags=_plc_latest(web, asset_id), refused=web.reader.refused_inputs(asset_id))

    @app.get("/explanations", response_class=HTMLResponse, include_in_schema=False)
    def explanations_page(request: Request, who: Principal = Depends(page("engineer"))) -> HTMLResponse:
        return render_page(request, "explanations.html", who, rows=web.reader.explanations(50))

    @app.get("/explanations/{explanation_id}", response_class=HTMLResponse, include_in_schema=False)
    def explanation_page(request: Request, explanation_id: str,
                         who: Principal = Depends(page("engineer"))) -> HTMLResponse:
        e = _explanation(web, explanation_id)
        return render_page(request, "explanation.html", who, e=e,
                           has_heatmap={"thermal": e.thermal_heatmap.ndim == 2 and e.thermal_heatmap.size > 0,
                                        "audio": e.audio_heatmap.ndim == 2 and e.audio_heatmap.size > 0})

    @app.get("/drift", response_class=HTMLResponse, include_in_schema=False)
    def drift_page(request: Request, modality: str = "thermal", feature: str = "",
                   who: Principal = Depends(page("engineer"))) -> HTMLResponse:
        reports = web.reader.drift_reports(500)
        ref = web.cards.reference(modality) if modality in set(Modality) else None
        names_ = ref[1] if ref else []
        if not feature or feature not in names_:
            drifted = [f.name for _, r in reversed(reports) if r.modality == modality for f in r.features if f.drifted]
            feature = next((f for f in drifted if f in names_), names_[0] if names_ else "")
        shadow = [r for _, r in reports if r.kind == "shadow" and r.error_rate is not None]
        return render_page(request, "drift.html", who, latest=list(reversed(reports))[:30], modality=modality,
                           feature=feature, feature_names=names_, modalities=[m.value for m in Modality],
                           shadow=shadow[-1] if shadow else None)

    @app.get("/models", response_class=HTMLResponse, include_in_schema=False)
    def models_page(request: Request, who: Principal = Depends(page("engineer"))) -> HTMLResponse:
        cards = []
        for modality, version in web.cards.latest():
            card = web.cards.card(modality, version) or {}
            cards.append({"modality": modality, "version": version, "card": card,
                          "plots": web.cards.plots(modality, version), "metrics": _card_metrics(card)})
        return render_page(request, "models.html", who, cards=cards)

    @app.get("/admin/users", response_class=HTMLResponse, include_in_schema=False)
    def users_page(request: Request, message: str = "", who: Principal = Depends(page("admin"))) -> HTMLResponse:
        return render_page(request, "users.html", who, users=web.users.users(), tokens=web.users.tokens(),
                           roles=ROLES, message=message)

    @app.post("/admin/users", include_in_schema=False)
    def users_form(op: str = Form(...), name: str = Form(""), role: str = Form("operator"), password: str = Form(""),
                   token_id: str = Form(""), csrf_token: str = Form(""),
                   who: Principal = Depends(page("admin"))) -> Response:
        check_csrf(who, csrf_token)
        try:
            if op == "add":
                web.users.add_user(name, password, role)
                msg = f"added {name} ({role})"
            elif op == "remove":
                if name == who.user.name:
                    raise UserError("you cannot remove yourself: ask another admin")
                web.users.remove_user(name)
                msg = f"removed {name}"
            elif op == "revoke":
                web.users.revoke_token(token_id)
                msg = f"revoked token {token_id}"
            else:
                raise UserError(f"unknown operation {op!r}")
        except UserError as exc:
            msg = f"error: {exc}"
        return RedirectResponse(f"/admin/users?message={quote(msg)}", status_code=303)

    @app.get("/admin/settings", response_class=HTMLResponse, include_in_schema=False)
    def settings_page(request: Request, who: Principal = Depends(page("admin"))) -> HTMLResponse:
        rows = sorted(settings.model_dump(mode="json").items())
        return render_page(request, "settings.html", who, rows=rows, prefix=names.prefix, shards=names.shards,
                           registry=str(registry_root), users_db=str(users_db))

    # -- JSON API --------------------------------------------------------------------------------------------
    v1 = APIRouter(prefix="/api/v1")

    @v1.get("/overview", summary="Every asset: newest verdict and its most urgent open alert")
    def api_overview(who: Principal = Depends(api("operator"))) -> list[dict[str, Any]]:
        return web.overview()

    @v1.get("/events", summary="Server-sent events: verdict, alert, explanation, drift")
    async def api_events(request: Request, who: Principal = Depends(api("operator"))) -> StreamingResponse:
        sub = live.subscribe()
        metrics.sse_clients.set(live.subscribers)

        async def stream() -> AsyncIterator[str]:
            try:
                yield "retry: 2000\n: connected\n\n"
                while True:
                    try:
                        event = await asyncio.wait_for(sub.queue.get(), timeout=settings.sse_heartbeat_s)
                    except TimeoutError:
                        if await request.is_disconnected():
                            break
                        yield ": heartbeat\n\n"
                        continue
                    yield f"event: {event['type']}\ndata: {json.dumps(event, separators=(',', ':'))}\n\n"
            finally:
                live.unsubscribe(sub)
                metrics.sse_clients.set(live.subscribers)

        return StreamingResponse(stream(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})

    @v1.get("/assets/{asset_id}", summary="An asset: newest verdicts, its alerts and its inputs refused")
    def api_asset(asset_id: str, who: Principal = Depends(api("operator"))) -> dict[str, Any]:
        from services.web.live import verdict_view

        return {"asset_id": asset_id,
                "verdicts": [verdict_view(e, v) for e, v in web.reader.verdict_history(asset_id, 50)],
                "alerts": [web.alert_view(r) for r in web.store.list(asset_id=asset_id, open_only=False, limit=50)],
                "refused_inputs": [{"entry_id": e} | d.model_dump(mode="json")
                                   for e, d in web.reader.refused_inputs(asset_id)]}

    @v1.get("/assets/{asset_id}/thermal.png", summary="Newest thermal frame, false colour, °C scale")
    def api_thermal(asset_id: str, who: Principal = Depends(api("operator"))) -> Response:
        got = web.reader.latest_features(Modality.THERMAL, asset_id)
        if got is None or not isinstance(got[1], ThermalFeatures):
            return _png(render.message_png(f"no thermal frame of {asset_id} in the stream"))
        return _png(render.thermal_png(got[1]))

    @v1.get("/assets/{asset_id}/spectrogram.png", summary="Newest audio clip's log-mel spectrogram")
    def api_spectrogram(asset_id: str, who: Principal = Depends(api("operator"))) -> Response:
        got = web.reader.latest_features(Modality.AUDIO, asset_id)
        if got is None or not isinstance(got[1], AudioFeatures):
            return _png(render.message_png(f"no audio clip of {asset_id} in the stream"))
        return _png(render.spectrogram_png(got[1].logmel, f"{asset_id} audio, log-mel"))

    @v1.get("/assets/{asset_id}/plc.png", summary="PLC tag trends over the last hour")
    def api_plc(asset_id: str, who: Principal = Depends(api("operator"))) -> Response:
        return _png(render.plc_trends_png(web.reader.plc_window(asset_id), int(time.time() * 1000)))

    @v1.get("/alerts", summary="Alerts, unacknowledged first")
    def api_alerts(all: bool = False, asset: str | None = None,
                   who: Principal = Depends(api("operator"))) -> list[dict[str, Any]]:
        now = web.store.now_ms()
        recs = web.store.list(open_only=not all, asset_id=asset)
        return [web.alert_view(r, now) for r in _inbox_order(recs, now)]

    @v1.get("/alerts/{alert_id}", summary="One alert with its events (the audit trail of its actions)")
    def api_alert(alert_id: str, who: Principal = Depends(api("operator"))) -> dict[str, Any]:
        rec = web.store.get(alert_id)
        if rec is None:
            raise HTTPException(404, f"no alert {alert_id!r}")
        events = [{"entry_id": eid, **ev.model_dump(mode="json")} for eid, ev in _events(web.store, alert_id)]
        return {**web.alert_view(rec), "events": events}

    @v1.post("/alerts/{alert_id}/ack", summary="Acknowledge")
    def api_ack(alert_id: str, body: CommentBody, request: Request,
                who: Principal = Depends(api("operator"))) -> dict[str, Any]:
        check_csrf(who, request.headers.get("x-csrf-token"))
        return _act(web, who, alert_id, "ack", comment=body.comment)

    @v1.post("/alerts/{alert_id}/shelve", summary="Shelve until now + duration_s (at most 24 h)")
    def api_shelve(alert_id: str, body: ShelveBody, request: Request,
                   who: Principal = Depends(api("operator"))) -> dict[str, Any]:
        check_csrf(who, request.headers.get("x-csrf-token"))
        return _act(web, who, alert_id, "shelve", comment=body.reason, duration_s=body.duration_s)

    @v1.post("/alerts/{alert_id}/unshelve", summary="Unshelve")
    def api_unshelve(alert_id: str, request: Request, who: Principal = Depends(api("operator"))) -> dict[str, Any]:
        check_csrf(who, request.headers.get("x-csrf-token"))
        return _act(web, who, alert_id, "unshelve")

    @v1.post("/alerts/{alert_id}/confirm", summary="The fault is real (writes Feedback)")
    def api_confirm(alert_id: str, body: ConfirmBody, request: Request,
                    who: Principal = Depends(api("operator"))) -> dict[str, Any]:
        check_csrf(who, request.headers.get("x-csrf-token"))
        return _act(web, who, alert_id, "confirm", comment=body.comment, true_label=body.true_label)

    @v1.post("/alerts/{alert_id}/reject", summary="False alarm (writes Feedback)")
    def api_reject(alert_id: str, body: CommentBody, request: Request,
                   who: Principal = Depends(api("operator"))) -> dict[str, Any]:
        check_csrf(who, request.headers.get("x-csrf-token"))
        return _act(web, who, alert_id, "reject", comment=body.comment)

    @v1.get("/explanations", summary="Newest explanations")
    def api_explanations(who: Principal = Depends(api("engineer"))) -> list[dict[str, Any]]:
        return [_explanation_json(e) for _, e in web.reader.explanations(50)]

    @v1.get("/explanations/{explanation_id}", summary="One explanation (heatmaps as PNG links)")
    def api_explanation(explanation_id: str, who: Principal = Depends(api("engineer"))) -> dict[str, Any]:
        return _explanation_json(_explanation(web, explanation_id))

    @v1.get("/explanations/{explanation_id}/heatmap/{modality}.png", summary="LIME heatmap over its input")
    def api_heatmap(explanation_id: str, modality: str, who: Principal = Depends(api("engineer"))) -> Response:
        e = _explanation(web, explanation_id)
        if modality not in ("thermal", "audio"):
            raise HTTPException(404, "heatmaps exist for thermal and audio")
        hm = e.thermal_heatmap if modality == "thermal" else e.audio_heatmap
        if hm.ndim != 2 or hm.size == 0:
            return _png(render.message_png(f"no {modality} heatmap in this explanation"))
        base: NDArray[np.float32] | None = None
        me = next((m for m in e.modalities if m.modality == modality), None)
        if me is not None and me.features_entry_id:
            msg = web.reader.features_entry(modality, e.asset_id, me.features_entry_id)
            if isinstance(msg, ThermalFeatures):
                base = msg.frame.astype(np.float32)
            elif isinstance(msg, AudioFeatures):
                base = msg.logmel
        return _png(render.heatmap_png(hm, base, f"{e.asset_id} {modality}: why {e.label}",
                                       "frame" if modality == "thermal" else "spectrogram"))

    @v1.get("/explanations/{explanation_id}/bars/{modality}.png", summary="Top LIME feature weights")
    def api_bars(explanation_id: str, modality: str, who: Principal = Depends(api("engineer"))) -> Response:
        e = _explanation(web, explanation_id)
        me = next((m for m in e.modalities if m.modality == modality), None)
        if me is None:
            return _png(render.message_png(f"{modality} was not explained"))
        return _png(render.feature_bars_png(me.top_features, f"{e.asset_id} {modality}: top features for "
                                            f"{me.explained_label} (p={me.probability:.2f})"))

    @v1.get("/drift", summary="Newest drift reports")
    def api_drift(count: int = 200, who: Principal = Depends(api("engineer"))) -> list[dict[str, Any]]:
        return [{"entry_id": e, **r.model_dump(mode="json")} for e, r in reversed(web.reader.drift_reports(count))]

    @v1.get("/drift/pvalues.png", summary="Adjusted p-values over time")
    def api_drift_p(who: Principal = Depends(api("engineer"))) -> Response:
        reports = [r for _, r in web.reader.drift_reports(2000)]
        alpha = next((r.alpha for r in reversed(reports) if r.alpha), 0.05)
        return _png(render.drift_pvalues_png(reports, alpha))

    @v1.get("/drift/shadow.png", summary="Shadow-teacher disagreement over time")
    def api_drift_shadow(who: Principal = Depends(api("engineer"))) -> Response:
        return _png(render.shadow_png([r for _, r in web.reader.drift_reports(2000)]))

    @v1.get("/drift/distribution.png", summary="One model-input feature: reference vs live")
    def api_drift_dist(modality: str, feature: str, who: Principal = Depends(api("engineer"))) -> Response:
        if modality not in set(Modality):
            raise HTTPException(404, f"modality must be one of {[m.value for m in Modality]}")
        ref = web.cards.reference(modality)
        if ref is None or feature not in ref[1]:
            return _png(render.message_png(f"no reference for {modality}/{feature}"))
        i = ref[1].index(feature)
        live_v = web.reader.live_vectors(Modality(modality))
        live_col = live_v[:, i] if live_v.ndim == 2 and live_v.shape[1] == len(ref[1]) else np.zeros(0, np.float32)
        return _png(render.distribution_png(ref[0][:, i], live_col, f"{modality}/{feature}"))

    @v1.get("/models", summary="The newest model card per modality")
    def api_models(who: Principal = Depends(api("engineer"))) -> list[dict[str, Any]]:
        return [{"modality": m, "version": v, "metrics": _card_metrics(web.cards.card(m, v) or {}),
                 "gates": (web.cards.card(m, v) or {}).get("gates"), "plots": web.cards.plots(m, v)}
                for m, v in web.cards.latest()]

    @v1.get("/models/{modality}/{version}", summary="One model card (card.json)")
    def api_model(modality: str, version: str, who: Principal = Depends(api("engineer"))) -> dict[str, Any]:
        card = web.cards.card(modality, version)
        if card is None:
            raise HTTPException(404, f"no card {modality}/{version}")
        return card

    @v1.get("/models/{modality}/{version}/plots/{name}", summary="A plot of a model card (PNG)")
    def api_model_plot(modality: str, version: str, name: str, who: Principal = Depends(api("engineer"))) -> Response:
        path = web.cards.plot_path(modality, version, name)
        if path is None:
            raise HTTPException(404, f"no plot {name!r} in {modality}/{version}")
        return Response(path.read_bytes(), media_type="image/png")

    @v1.get("/users", summary="Users (admin)")
    def api_users(who: Principal = Depends(api("admin"))) -> list[dict[str, Any]]:
        return [{"name": u.name, "role": u.role, "created_ms": u.created_ms} for u in web.users.users()]

    @v1.post("/users", summary="Add a user (admin)", status_code=201)
    def api_add_user(body: NewUser, request: Request, who: Principal = Depends(api("admin"))) -> dict[str, Any]:
        check_csrf(who, request.headers.get("x-csrf-token"))
        try:
            u = web.users.add_user(body.name, body.password, body.role)
        except UserError as exc:
            raise HTTPException(422, str(exc)) from exc
        return {"name": u.name, "role": u.role}

    @v1.get("/settings", summary="Effective web settings (admin)")
    def api_settings(who: Principal = Depends(api("admin"))) -> dict[str, Any]:
        return {**settings.model_dump(mode="json"), "prefix": names.prefix, "shards": names.shards}

    @v1.get("/openapi.json", include_in_schema=False)
    def openapi(who: Principal = Depends(api("operator"))) -> dict[str, Any]:
        return app.openapi()

    @v1.get("/docs", include_in_schema=False, response_class=HTMLResponse)
    def docs(request: Request, who: Principal = Depends(page("operator"))) -> HTMLResponse:
        return render_page(request, "apidocs.html", who)

    app.include_router(v1)
    return app


def _events(store: AlertStore, alert_id: str) -> list[tuple[str, Alert]]:
    return cast("list[tuple[str, Alert]]", store.events(200, alert_id))


def _ts(ms: int | float | None) -> str:
    """UTC time of epoch milliseconds, as operators read it."""
    if not ms:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ms / 1000.0)) + " UTC"


def _safe_next(url: str) -> str:
    r"""Only same-site paths (no open redirect).

    >>> [_safe_next(u) for u in ("/alerts?x=1", "//evil.example", "/\\evil", "https://evil", "/\t/evil")]
    ['/alerts?x=1', '/', '/', '/', '/']
    """
    ok = url.startswith("/") and not url.startswith("//") and "\\" not in url and url.isprintable() \
        and " " not in url
    return url if ok else "/"


def _inbox_order(recs: list[AlertRecord], now: int) -> list[AlertRecord]:
    """Unacknowledged first, then by priority (urgent first), newest first; shelved last."""
    rank = {"unacknowledged": 0, "rtn_unacknowledged": 1, "acknowledged": 2, "cleared": 3, "shelved": 4}
    return sorted(recs, key=lambda r: (rank[r.state(now)], -PRIORITY_ORDER.index(r.priority), -r.raised_at_ms))


def _inbox(web: Web, who: Principal) -> dict[str, Any]:
    now = web.store.now_ms()
    recs = _inbox_order(web.store.list(include_members=False), now)
    groups = {r.alert_id: [m for m in (web.store.get(mid) for mid in r.members) if m is not None]
              for r in recs if r.is_group}
    explain = web.explanation_finder() if who.user.can("engineer") else None
    rows = []
    for r in recs:
        view = web.alert_view(r, now)
        view["explanation_id"] = explain(r) if explain is not None and not r.is_group else ""
        view["members"] = [web.alert_view(m, now) for m in groups.get(r.alert_id, [])]
        rows.append(view)
    unacked = sum(1 for r in rows if r["state"] in ("unacknowledged", "rtn_unacknowledged"))
    return {"alerts": [r for r in rows if r["state"] != "shelved"], "shelved": [r for r in rows if r["state"] == "shelved"],
            "unacked": unacked, "shelve_choices": SHELVE_CHOICES}


def _act(web: Web, who: Principal, alert_id: str, action: str, *, comment: str = "", duration_s: float = 0.0,
         true_label: str | None = None) -> dict[str, Any]:
    user = who.user.name
    store = web.store
    try:
        if action == "ack":
            rec = store.ack(alert_id, user, comment)
        elif action == "shelve":
            rec = store.shelve(alert_id, user, duration_s, comment)
        elif action == "unshelve":
            rec = store.unshelve(alert_id, user)
        elif action == "confirm":
            rec = store.confirm(alert_id, user, true_label, comment)
        elif action == "reject":
            rec = store.reject(alert_id, user, comment)
        else:
            raise HTTPException(404, f"unknown action {action!r}: ack, shelve, unshelve, confirm or reject")
    except AlertNotFound as exc:
        raise HTTPException(404, str(exc.args[0])) from exc
    except InvalidAction as exc:
        raise HTTPException(422, str(exc)) from exc
    web.metrics.actions.labels(action).inc()
    return web.alert_view(rec)


def _explanation(web: Web, explanation_id: str) -> Explanation:
    ref = next((r for r in web.live.explanation_refs() if r.explanation_id == explanation_id), None)
    e = web.reader.explanation_at(ref.entry_id) if ref is not None else None
    if e is None or e.explanation_id != explanation_id:
        e = web.reader.explanation(explanation_id, scan=200)
    if e is None:
        raise HTTPException(404, f"no explanation {explanation_id!r} (explanations come from `linewatch serve "
                            "explain`; only fault verdicts are explained)")
    return e


def _explanation_json(e: Explanation) -> dict[str, Any]:
    body = e.model_dump(mode="json", exclude={"thermal_heatmap", "audio_heatmap"})
    for m in ("thermal", "audio"):
        hm = getattr(e, f"{m}_heatmap")
        body[f"{m}_heatmap"] = {"shape": list(hm.shape), "png": f"/api/v1/explanations/{e.explanation_id}/heatmap/{m}.png"
                                } if hm.size else None
    return body


def _card_metrics(card: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for role, m in (card.get("metrics") or {}).items():
        if isinstance(m, dict) and "macro_f1" in m:
            out.append({"role": role, "macro_f1": m.get("macro_f1"), "accuracy": m.get("accuracy"),
                        "n_samples": m.get("n_samples")})
    return out


def _plc_latest(web: Web, asset_id: str) -> list[tuple[str, str]]:
    from linewatch.contract import PlcFeatures
    from linewatch.contract.plc_tags import PLC_TAGS, TAG_UNITS

    got = web.reader.latest_features(Modality.PLC, asset_id)
    if got is None or not isinstance(got[1], PlcFeatures):
        return []
    m = got[1]
    out = []
    for tag in PLC_TAGS:
        key = f"{tag}.mean"
        if key in m.feature_names and m.feature_names.index(key) < m.values.size:
            out.append((tag, f"{float(m.values[m.feature_names.index(key)]):.2f} {TAG_UNITS.get(tag, '')}"))
    return out
