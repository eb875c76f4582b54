"""HTTP API for operators (FastAPI): list alerts and act on them. Served by ``linewatch serve alerts``.

============================ ============================================================
``GET  /alerts``             open alerts, most urgent first (``?all=true``, ``?asset=PMP-01``)
``GET  /alerts/{id}``        one alert with its events
``POST /alerts/{id}/ack``    ``{"user": "...", "comment": "..."}``
``POST /alerts/{id}/shelve`` ``{"user": "...", "duration_s": 3600, "reason": "..."}``
``POST /alerts/{id}/unshelve`` ``{"user": "..."}``
``POST /alerts/{id}/confirm`` ``{"user": "...", "true_label": null, "comment": "..."}``
``POST /alerts/{id}/reject`` ``{"user": "...", "comment": "..."}``
============================ ============================================================

Errors: 404 unknown alert, 422 an action that does not fit the alert's state (the body says why).
Every action names the acting user; the API adds no authentication of its own: run it behind
the plant's reverse proxy / SSO (docs/services.md).
"""

from __future__ import annotations

from fastapi import FastAPI, HTTPException
from pydantic import BaseModel, Field

from services.alerts.records import AlertRecord
from services.alerts.store import AlertNotFound, AlertStore, InvalidAction


class Action(BaseModel):
    user: str = Field(min_length=1)
    comment: str = ""


class ShelveAction(Action):
    duration_s: float = Field(gt=0)
    reason: str = ""


class ConfirmAction(Action):
    true_label: str | None = None


def _view(store: AlertStore, rec: AlertRecord) -> dict:
    return {**rec.model_dump(mode="json"), "state": rec.state(store.now_ms()), "score": rec.score}


def create_app(store: AlertStore) -> FastAPI:
    app = FastAPI(title="linewatch alerts", version="1")

    def act(fn, *args, **kwargs) -> dict:  # type: ignore[no-untyped-def]
        try:
            return _view(store, fn(*args, **kwargs))
        except AlertNotFound as exc:
            raise HTTPException(404, str(exc.args[0])) from exc
        except InvalidAction as exc:
            raise HTTPException(422, str(exc)) from exc

    @app.get("/alerts")
    def list_alerts(all: bool = False, asset: str | None = None) -> list[dict]:
        return [_view(store, r) for r in store.list(open_only=not all, asset_id=asset)]

    @app.get("/alerts/{alert_id}")
    def get_alert(alert_id: str) -> dict:
        rec = store.get(alert_id)
        if rec is None:
            raise HTTPException(404, f"no alert {alert_id!r}")
        events = [{"entry_id": eid, **ev.model_dump(mode="json")} for eid, ev in store.events(200, alert_id)]
        return {**_view(store, rec), "events": events}

    @app.post("/alerts/{alert_id}/ack")
    def ack(alert_id: str, body: Action) -> dict:
        return act(store.ack, alert_id, body.user, body.comment)

    @app.post("/alerts/{alert_id}/shelve")
    def shelve(alert_id: str, body: ShelveAction) -> dict:
        return act(store.shelve, alert_id, body.user, body.duration_s, body.reason)

    @app.post("/alerts/{alert_id}/unshelve")
    def unshelve(alert_id: str, body: Action) -> dict:
        return act(store.unshelve, alert_id, body.user)

    @app.post("/alerts/{alert_id}/confirm")
    def confirm(alert_id: str, body: ConfirmAction) -> dict:
        return act(store.confirm, alert_id, body.user, body.true_label, body.comment)

    @app.post("/alerts/{alert_id}/reject")
    def reject(alert_id: str, body: Action) -> dict:
        return act(store.reject, alert_id, body.user, body.comment)

    return app
