"""The stream services over TLS as the ``services`` ACL user (linewatch.redis_acl): inference, fusion,
the alert router and an operator action, end to end on a TLS-only ``redis-server``.

A command the services send that the ACL does not grant fails the run with ``NOPERM``; the same
user may not delete keys or touch another prefix.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from typer.testing import CliRunner

from linewatch.cli.app import app
from linewatch.contract import Alert, StreamNames, decode_message
from linewatch.redis_acl import acl_line, password_sha256
from linewatch.redis_connection import RedisConnectionSettings, connect_redis
from linewatch.service_settings import AlertsSettings, FusionSettings, InferenceSettings
from linewatch.streaming import StreamWorker, WorkerConfig
from services.alerts.router import AlertRouter
from services.alerts.store import AlertStore
from services.fusion.service import fusion_worker
from services.inference.service import inference_worker
from tests.redis_tls import TlsRedis, make_pki
from tests.services.support import features, prediction, running, wait_for, write

SECRET = "svc-Secret-4242"
PREFIX = "lwsvc"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsRedis]:
    pki = make_pki(tmp_path_factory.mktemp("pki"))
    users = [acl_line("services", "lw-services", PREFIX, password_sha256(SECRET))]
    with TlsRedis(tmp_path_factory.mktemp("tls-redis"), pki, users, auth_clients="yes") as srv:
        yield srv


def test_services_run_over_tls_as_the_services_acl_user(server: TlsRedis, tmp_path: Path) -> None:
    pki = server.pki
    conn = RedisConnectionSettings(url=server.url, username="lw-services", password=SECRET, tls_ca=pki.ca,
                                   tls_cert=pki.client_cert, tls_key=pki.client_key)
    client = connect_redis(conn)
    admin = server.admin()
    names = StreamNames(PREFIX, 2)
    infer = inference_worker(client, names, InferenceSettings(max_batch=8, lease_ttl_ms=2000), "plc")
    fuse = fusion_worker(client, names, FusionSettings(raise_k=2, raise_n=3, lease_ttl_ms=2000))
    router = AlertRouter(client, names, AlertsSettings())
    alerting = StreamWorker(client, names, WorkerConfig(role="alerting", group="alerting", units=1, tick_ms=50,
                                                        lease_ttl_ms=2000, max_batch=64), router.inputs, router)
    with running(infer), running(fuse), running(alerting):
        for i in range(10):
            write(admin, names.features("plc", "PMP-01"), features("plc", "PMP-01", 1000 + i, i))
        wait_for(lambda: sum(admin.xlen(names.predictions_shard("plc", s)) for s in range(2)) == 10, 30,
                 "10 predictions")
        for i in range(4):
            for m in ("plc", "thermal", "audio"):
                write(admin, names.predictions(m, "PMP-07"), prediction(m, "PMP-07", 50_000 + 1000 * i, "bearing_wear"))
        raised = wait_for(lambda: [a for a in (decode_message(f) for _, f in admin.xrange(names.alerts))
                                   if isinstance(a, Alert) and a.asset_id == "PMP-07" and a.event == "raised"],
                          30, "a raised alert")
    store = AlertStore(client, names)
    record = store.ack(raised[0].alert_id, user="maria")  # type: ignore[index]
    assert record.acked and record.acked_by == "maria"
    assert admin.xlen(names.deadletter) == 0
    refused = [e for e in admin.acl_log() if e.get("username") == "lw-services"]
    assert refused == [], f"the services ACL lacks commands the services sent: {refused}"
    with pytest.raises(redis.exceptions.NoPermissionError):
        client.delete(names.alerts)
    elsewhere = StreamNames("lw").features_shard("plc", 0)  # another prefix
    assert not elsewhere.startswith(f"{names.prefix}:")
    with pytest.raises(redis.exceptions.NoPermissionError):
        client.xadd(elsewhere, {"v": "1"})
    assert {e["object"] for e in admin.acl_log() if e.get("username") == "lw-services"} >= {"del", elsewhere}
    client.close()
    admin.close()

    # the operator's CLI: `linewatch alerts list` through the same settings, TLS and user (env only)
    env = {"LINEWATCH_REDIS__URL": server.url.replace("127.0.0.1", "localhost"), "LINEWATCH_REDIS__USERNAME":
           "lw-services", "LINEWATCH_REDIS__PASSWORD": SECRET, "LINEWATCH_REDIS__TLS_CA": str(pki.ca),
           "LINEWATCH_REDIS__TLS_CERT": str(pki.client_cert), "LINEWATCH_REDIS__TLS_KEY": str(pki.client_key),
           "LINEWATCH_STREAMS__PREFIX": PREFIX, "LINEWATCH_STREAMS__SHARDS": "2",
           "LINEWATCH_DATA_DIR": str(tmp_path), "COLUMNS": "200"}
    listed = CliRunner().invoke(app, ["alerts", "list", "--all"], env=env)
    assert listed.exit_code == 0 and raised[0].alert_id in listed.output, listed.output  # type: ignore[index]
    refused = CliRunner().invoke(app, ["alerts", "list"], env={**env, "LINEWATCH_REDIS__PASSWORD": "wrong-one"})
    assert refused.exit_code == 2 and "refused user 'lw-services'" in refused.output, refused.output
