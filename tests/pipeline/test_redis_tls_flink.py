"""``linewatch ingest`` into a TLS-only Redis as the ``ingest`` ACL user (linewatch.redis_acl).

The password is only in a 0600 config file (not in the environment): ``spec.json`` must not hold
it, the runner hands it to the job process through ``LINEWATCH_REDIS__PASSWORD``, and the Flink
job's sink connects with the CA, the client certificate and the user from the spec. Every frame
and clip then arrives exactly once — which also proves the ingest ACL grants every command the
job, its Lua script and its runner send.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from linewatch.contract import StreamNames
from linewatch.redis_acl import acl_line, password_sha256
from linewatch.redis_connection import PASSWORD_ENV
from pipeline.landing import publish_existing
from tests.pipeline.conftest import assert_exactly_once_in_order, simulate, wait_for
from tests.redis_tls import TlsRedis, make_pki

pytestmark = [pytest.mark.flink, pytest.mark.slow]

PROJECT = Path(__file__).resolve().parents[2]
SECRET = "tls-flink-Secret-77"
PREFIX = "lwtls"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsRedis]:
    pki = make_pki(tmp_path_factory.mktemp("pki"))
    users = [acl_line("ingest", "lw-ingest", PREFIX, password_sha256(SECRET))]
    with TlsRedis(tmp_path_factory.mktemp("tls-redis"), pki, users, auth_clients="yes") as srv:
        yield srv


def test_ingest_over_tls_as_the_ingest_acl_user(server: TlsRedis, tmp_path: Path) -> None:
    landing, data = tmp_path / "landing", tmp_path / "data"
    simulate(landing, n_assets=2, seconds=6, roll_s=2.0, seed=11)
    entries = publish_existing(landing, lines_per_manifest=8)
    pki = server.pki
    config = tmp_path / "linewatch.toml"
    config.write_text(
        f'data_dir = "{data}"\n[redis]\nurl = "rediss://lw-ingest@localhost:{server.port}/0"\n'
        f'password = "{SECRET}"\ntls_ca = "{pki.ca}"\ntls_cert = "{pki.client_cert}"\ntls_key = "{pki.client_key}"\n'
        f'[streams]\nprefix = "{PREFIX}"\nshards = 2\n[flink]\ncheckpoint_interval_ms = 500\n'
    )
    config.chmod(0o600)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LINEWATCH_")}
    env.update(LINEWATCH_CONFIG=str(config), PYTHONUNBUFFERED="1")
    log = tmp_path / "ingest.log"
    cli = subprocess.Popen([str(Path(sys.executable).parent / "linewatch"), "ingest", "--landing", str(landing)],
                           cwd=PROJECT, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    admin = server.admin()
    names = StreamNames(PREFIX, 2)
    n_plc = sum(e.kind == "plc" for e in entries)
    try:
        wait_for(lambda: int(admin.hget(f"{PREFIX}:ingest:stats", "blobs.plc") or 0) >= n_plc
                 and sum(admin.xlen(names.features_shard("audio", s)) for s in range(2))
                 >= sum(e.kind == "audio" for e in entries)
                 and sum(admin.xlen(names.features_shard("thermal", s)) for s in range(2))
                 >= sum(e.kind == "thermal" for e in entries)
                 or cli.poll() is not None, 180, "every blob in the TLS Redis")
        assert cli.poll() is None, log.read_text()[-3000:]
    finally:
        cli.send_signal(signal.SIGTERM)
        assert cli.wait(timeout=90) == 0, log.read_text()[-3000:]
    assert_exactly_once_in_order(admin, names, PREFIX, entries, "ingest over TLS")
    refused = [e for e in admin.acl_log() if e.get("username") == "lw-ingest"]
    assert refused == [], f"the ingest ACL lacks commands the job or its runner sent: {refused}"
    admin.close()
    run = data / "flink" / "run"
    spec = (run / "spec.json").read_text()
    assert '"username": "lw-ingest"' in spec or "lw-ingest@" in spec
    assert str(pki.client_cert) in spec
    for path in (run / "spec.json", run / "ingest-job.log", log):
        assert SECRET not in path.read_text(errors="replace"), f"{path} holds the password"
    assert PASSWORD_ENV not in env  # the job got it from the runner, not from this test's environment
