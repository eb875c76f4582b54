"""What an operator types: ``linewatch alerts ...`` and the HTTP API, on a real Redis."""

from __future__ import annotations

import redis
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from linewatch.cli.app import app
from linewatch.contract import StreamNames, decode_message
from linewatch.service_settings import AlertsSettings
from linewatch.streaming import StreamWorker, WorkerConfig
from services.alerts.api import create_app
from services.alerts.router import AlertRouter
from services.alerts.store import AlertStore
from tests.services.support import running, verdict, wait_for, write


def _raise(client: redis.Redis, names: StreamNames, *assets: str) -> list[str]:
    router = AlertRouter(client, names, AlertsSettings())
    worker = StreamWorker(client, names, WorkerConfig(role="alerting", group="alerting", units=1), router.inputs, router)
    store = AlertStore(client, names)
    with running(worker):
        for a in assets:
            write(client, names.verdicts(a), verdict(a, "bearing_wear", "raised", severity=0.9))
        wait_for(lambda: len(store.list()) == len(assets), 10, "alerts")
    return sorted(r.alert_id for r in store.list())


def test_cli_list_ack_shelve_confirm_reject(redis_url: str, redis_client: redis.Redis,
                                            stream_names: StreamNames) -> None:
    a1, a2 = _raise(redis_client, stream_names, "PMP-01", "PRS-02")
    env = {"LINEWATCH_REDIS__URL": redis_url, "LINEWATCH_STREAMS__PREFIX": stream_names.prefix,
           "LINEWATCH_STREAMS__SHARDS": str(stream_names.shards), "COLUMNS": "200"}
    runner = CliRunner()

    def run(*args: str):  # type: ignore[no-untyped-def]
        result = runner.invoke(app, ["alerts", *args], env=env)
        assert result.exit_code == 0, result.output
        return result.output

    out = run("list")
    assert "2 alert(s)" in out and "PMP-01" in out and "unacknowledged" in out
    assert f"{a1}: acknowledged" in run("ack", a1, "--user", "maria")
    assert "shelved" in run("shelve", a2, "--minutes", "30", "--reason", "parts ordered", "--user", "ivan")
    assert "confirmed by maria" in run("confirm", a1, "--user", "maria", "--comment", "noisy DE bearing")
    assert "rejected by ivan" in run("reject", a2, "--user", "ivan")
    bad = runner.invoke(app, ["alerts", "ack", "A-999", "--user", "x"], env=env)
    assert bad.exit_code == 1 and "no alert 'A-999'" in bad.output
    outcomes = [decode_message(f).outcome for _, f in redis_client.xrange(stream_names.feedback())]
    assert outcomes == ["confirmed", "rejected"]
    assert "acknowledged" in run("show", a1)


def test_http_api(redis_client: redis.Redis, stream_names: StreamNames) -> None:
    [aid] = _raise(redis_client, stream_names, "CNV-03")
    api = TestClient(create_app(AlertStore(redis_client, stream_names)))
    listed = api.get("/alerts").json()
    assert [a["alert_id"] for a in listed] == [aid] and listed[0]["state"] == "unacknowledged"
    assert api.post(f"/alerts/{aid}/ack", json={"user": "maria"}).json()["state"] == "acknowledged"
    assert api.post(f"/alerts/{aid}/shelve", json={"user": "maria", "duration_s": 60}).json()["state"] == "shelved"
    assert api.post(f"/alerts/{aid}/unshelve", json={"user": "maria"}).json()["state"] == "acknowledged"
    assert api.post(f"/alerts/{aid}/confirm", json={"user": "maria", "true_label": "imbalance"}).json()["outcome"] \
        == "confirmed"
    assert api.post(f"/alerts/{aid}/shelve", json={"user": "maria", "duration_s": 10**6}).status_code == 422
    assert api.post("/alerts/A-0/ack", json={"user": "maria"}).status_code == 404
    assert api.post(f"/alerts/{aid}/ack", json={"user": ""}).status_code == 422
    detail = api.get(f"/alerts/{aid}").json()
    assert [e["event"] for e in detail["events"]] == ["raised", "acknowledged", "shelved", "unshelved", "confirmed"]
