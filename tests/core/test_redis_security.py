"""Redis credentials and transport security against a real TLS-only ``redis-server`` with ACL users.

The server (tests/redis_tls.py) listens only on ``--tls-port`` (``--port 0``), demands a client
certificate signed by a CA made for the test, and has its ``default`` user disabled.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from typer.testing import CliRunner

from linewatch.cli.app import app
from linewatch.contract import StreamNames
from linewatch.redis_acl import acl_line, password_sha256
from linewatch.redis_connection import (
    PASSWORD_ENV,
    RedisConnectError,
    RedisConnectionSettings,
    connect_redis,
    explain,
    redis_client,
)
from linewatch.settings import Settings, load_settings
from pipeline.job_spec import JobSpec
from pipeline.redis_sink import PendingEntry, RedisStreamWriter
from pipeline.runner import IngestJob
from tests.redis_tls import Pki, TlsRedis, make_pki
from tests.services.support import features

SECRET = "Zq8-very-secret-pw"  # the ACL users' password; must never appear in output or files
PREFIX = "lw"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def server(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsRedis]:
    users = [
        f"user lw-rw on >{SECRET} ~{PREFIX}:* resetchannels -@all +ping +xadd +xrange +xlen",
        acl_line("ingest", "lw-ingest", PREFIX, password_sha256(SECRET)),
    ]
    with TlsRedis(tmp_path_factory.mktemp("tls-redis"), pki, users, auth_clients="yes") as srv:
        yield srv


def tls_settings(server: TlsRedis, pki: Pki, user: str = "lw-rw", **kw: object) -> RedisConnectionSettings:
    fields: dict[str, object] = {"url": server.url, "username": user, "password": SECRET, "tls_ca": pki.ca,
                                 "tls_cert": pki.client_cert, "tls_key": pki.client_key, **kw}
    return RedisConnectionSettings(**fields)  # type: ignore[arg-type]


def test_rediss_with_ca_client_cert_and_acl_user_writes_and_reads_a_stream(server: TlsRedis, pki: Pki) -> None:
    client = connect_redis(tls_settings(server, pki))
    try:
        entry = client.xadd(f"{PREFIX}:tls:s", {"v": "1"})
        assert client.xrange(f"{PREFIX}:tls:s") == [(entry, {b"v": b"1"})]
    finally:
        client.close()
    admin = server.admin()
    assert admin.xlen(f"{PREFIX}:tls:s") == 1
    admin.close()


def test_password_and_user_may_come_from_the_url_and_env(server: TlsRedis, pki: Pki,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LINEWATCH_REDIS__URL", f"rediss://lw-rw:{SECRET}@localhost:{server.port}/0")
    monkeypatch.setenv("LINEWATCH_REDIS__TLS_CA", str(pki.ca))
    monkeypatch.setenv("LINEWATCH_REDIS__TLS_CERT", str(pki.client_cert))
    monkeypatch.setenv("LINEWATCH_REDIS__TLS_KEY", str(pki.client_key))
    settings = load_settings()
    assert settings.redis.url == f"rediss://lw-rw@localhost:{server.port}/0"
    assert SECRET not in repr(settings) and SECRET not in settings.model_dump_json()
    assert connect_redis(settings.redis).xlen(f"{PREFIX}:none") == 0
    # the job process: no password in its settings, the environment provides it
    job_side = RedisConnectionSettings.model_validate_json(settings.redis.connection_settings().model_dump_json())
    assert job_side.password is None
    with pytest.raises(RedisConnectError):
        connect_redis(job_side, environ={})
    assert connect_redis(job_side, environ={PASSWORD_ENV: SECRET}).ping()


def test_wrong_password_says_what_to_fix(server: TlsRedis, pki: Pki) -> None:
    wrong = "not-the-password-123"
    with pytest.raises(RedisConnectError) as err:
        connect_redis(tls_settings(server, pki, password=wrong))
    text = str(err.value)
    assert "refused user 'lw-rw'" in text and "redis.password" in text and PASSWORD_ENV in text
    assert wrong not in text and SECRET not in text
    with pytest.raises(RedisConnectError, match="requires a password"):
        connect_redis(tls_settings(server, pki, username=None, password=None), environ={})


def test_plain_redis_url_against_the_tls_only_port_fails_clearly(server: TlsRedis) -> None:
    plain = RedisConnectionSettings(url=f"redis://lw-rw@127.0.0.1:{server.port}/0", password=SECRET,
                                    connect_timeout_s=2, socket_timeout_s=2)
    with pytest.raises(RedisConnectError, match=r"only accepts TLS.*use a rediss:// URL"):
        connect_redis(plain)


def test_tls_without_client_certificate_or_with_the_wrong_ca_fails_clearly(server: TlsRedis, pki: Pki) -> None:
    needs_cert = r"TLS with Redis .* failed.*requires? a client certificate.*redis\.tls_cert and redis\.tls_key"
    with pytest.raises(RedisConnectError, match=needs_cert):
        connect_redis(tls_settings(server, pki, tls_cert=None, tls_key=None, socket_timeout_s=2))
    with pytest.raises(RedisConnectError, match=r"certificate is not trusted: set redis\.tls_ca"):
        connect_redis(tls_settings(server, pki, tls_ca=pki.other_ca))
    with pytest.raises(ValueError, match="use rediss://"):
        RedisConnectionSettings(url="redis://127.0.0.1:6379/0", tls_ca=pki.ca)


def test_optional_client_certificates(pki: Pki, tmp_path: Path) -> None:
    users = [f"user lw-rw on >{SECRET} ~{PREFIX}:* -@all +ping"]
    with TlsRedis(tmp_path / "srv", pki, users, auth_clients="optional") as srv:
        conn = RedisConnectionSettings(url=srv.url, username="lw-rw", password=SECRET, tls_ca=pki.ca)
        assert connect_redis(conn).ping()


def test_acl_user_is_refused_outside_its_key_pattern_and_commands(server: TlsRedis, pki: Pki) -> None:
    conn = tls_settings(server, pki, user="lw-ingest")
    client = connect_redis(conn)
    try:
        client.hset(f"{PREFIX}:ingest:stats", "x", 1)  # its own keys, its own commands
        with pytest.raises(redis.exceptions.NoPermissionError) as err:
            client.xadd("other:features", {"v": "1"})  # another prefix
        assert "lw-ingest" in explain(err.value, conn) and "docs/redis-security.md" in explain(err.value, conn)
        with pytest.raises(redis.exceptions.NoPermissionError):
            client.xrange(f"{PREFIX}:ingest:stats")  # ingest never reads streams
        with pytest.raises(redis.exceptions.NoPermissionError):
            client.flushall()
    finally:
        client.close()


def test_config_show_and_repr_never_print_the_password(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    runner = CliRunner()
    monkeypatch.setenv("LINEWATCH_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("LINEWATCH_REDIS__URL", f"rediss://lw-svc:{SECRET}@redis.plant:6380/0")
    table = runner.invoke(app, ["config", "show"], env={"COLUMNS": "250"})
    as_json = runner.invoke(app, ["config", "show", "--json"])
    assert table.exit_code == 0 and as_json.exit_code == 0, table.output + as_json.output
    assert SECRET not in table.output and SECRET not in as_json.output
    rows = {r["name"]: r["value"] for r in json.loads(as_json.output)}
    assert rows["redis.url"] == "rediss://lw-svc:***@redis.plant:6380/0"
    assert rows["redis.password"] == "***"
    sources = {r["name"]: r["source"] for r in json.loads(as_json.output)}
    assert sources["redis.password"] == "env LINEWATCH_REDIS__URL (in redis.url)"
    monkeypatch.delenv("LINEWATCH_REDIS__URL")
    monkeypatch.setenv("LINEWATCH_REDIS__URL", "redis://redis.plant:6379/0")
    monkeypatch.setenv(PASSWORD_ENV, SECRET)
    as_json = runner.invoke(app, ["config", "show", "--json"])
    assert SECRET not in as_json.output
    rows = {r["name"]: r for r in json.loads(as_json.output)}
    assert rows["redis.password"] == {"name": "redis.password", "value": "***", "source": f"env {PASSWORD_ENV}"}
    settings = Settings()
    assert SECRET not in repr(settings) and SECRET not in str(settings.model_dump())


def test_spec_json_holds_no_password_and_the_job_side_writer_authenticates(
        server: TlsRedis, pki: Pki, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (PASSWORD_ENV, "LINEWATCH_REDIS__URL"):
        monkeypatch.delenv(name, raising=False)
    settings = Settings(data_dir=tmp_path / "data", streams={"prefix": PREFIX, "shards": 2},  # type: ignore[arg-type]
                        redis={"url": server.url, "username": "lw-ingest", "tls_ca": pki.ca,  # type: ignore[arg-type]
                               "tls_cert": pki.client_cert, "tls_key": pki.client_key})
    url_with_password = f"rediss://lw-ingest:{SECRET}@127.0.0.1:{server.port}/0"  # e.g. from --redis-url
    job = IngestJob.from_settings(settings, url_with_password, resume=False)
    spec_json = job.spec.to_json()
    assert SECRET not in spec_json and SECRET not in repr(job.spec)
    assert job.spec.redis_url == server.url.replace("rediss://", "rediss://lw-ingest@")
    assert job.spec.redis.secret_env() == {PASSWORD_ENV: SECRET}  # what runner.py puts in the job's env
    with pytest.raises(ValueError, match="must not hold a password"):
        JobSpec.model_validate({**json.loads(spec_json), "redis_url": url_with_password})

    # the job process: spec.json + its environment -> the sink's client (TLS + ACL user)
    in_job = JobSpec.model_validate_json(spec_json)
    assert in_job.redis.password is None and in_job.redis.tls_cert == pki.client_cert
    monkeypatch.setenv(PASSWORD_ENV, SECRET)
    writer = RedisStreamWriter.open(in_job.redis_url, in_job.flink.dedup_ttl_s, in_job.redis)
    names = StreamNames(PREFIX, 2)
    stream = names.features("plc", "PMP-01")
    try:
        result = writer.write([PendingEntry(stream, features("plc", "PMP-01", 1), names.ingest_marks_of("plc", "PMP-01"), "PMP-01", 5)],
                              {"blobs.plc": 1}, in_job.stats_key)
    finally:
        writer.close()
    assert result.added == 1
    admin = server.admin()
    assert admin.xlen(stream) == 1 and admin.hget(in_job.stats_key, "blobs.plc") == b"1"
    admin.close()


def test_a_password_without_a_url_is_refused() -> None:
    with pytest.raises(ValueError, match="set redis.url"):
        RedisConnectionSettings(password=SECRET)


def test_redis_client_uses_the_url_given_over_the_settings(server: TlsRedis, pki: Pki) -> None:
    conn = tls_settings(server, pki)
    client = redis_client(conn.model_copy(update={"url": "rediss://127.0.0.1:1/0"}), server.url)
    try:
        assert client.ping()
    finally:
        client.close()


def test_redis_acl_command_prints_a_hashed_line_the_server_accepts(server: TlsRedis, pki: Pki) -> None:
    password = "cli-made-password-0123"
    result = CliRunner().invoke(app, ["redis", "acl", "ingest", "--user", "lw-cli", "--prefix", PREFIX],
                                input=f"{password}\n{password}\n")
    assert result.exit_code == 0, result.output
    line = result.output.strip().splitlines()[-1]
    assert line == acl_line("ingest", "lw-cli", PREFIX, password_sha256(password)) and password not in line
    admin = server.admin()
    admin.execute_command("ACL", "SETUSER", *line.split()[1:])  # what ACL LOAD does with the line
    admin.close()
    client = connect_redis(tls_settings(server, pki, user="lw-cli", password=password))
    assert client.hset(f"{PREFIX}:ingest:stats", "cli", 1) in (0, 1)
    client.close()


def test_a_rejected_setting_is_explained_without_echoing_the_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LINEWATCH_REDIS__URL", f"redis://lw-svc:{SECRET}@redis.plant:6379/0")
    monkeypatch.setenv(PASSWORD_ENV, "a-different-password")
    for args in (["config", "show"], ["config", "show", "--json"], ["alerts", "list"]):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2, result.output
        assert "keep only one" in result.output and SECRET not in result.output, result.output
    with pytest.raises(ValueError) as err:
        load_settings()
    assert SECRET not in str(err.value)


ROOT = Path(__file__).resolve().parents[2]
# the one builder, and the embedded server's clients of its own local process (no users, no TLS)
MAY_CONSTRUCT = {"linewatch/redis_connection.py", "linewatch/embedded_redis.py"}


def _constructions(path: Path) -> list[int]:
    import ast

    lines = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        owner = func.value if isinstance(func, ast.Attribute) else None
        owner_name = (owner.attr if isinstance(owner, ast.Attribute) else owner.id if isinstance(owner, ast.Name)
                      else "")
        if name in ("Redis", "StrictRedis", "RedisCluster") or (name == "from_url" and "Redis" in owner_name):
            lines.append(node.lineno)
    return lines


def test_every_redis_client_outside_tests_is_built_by_redis_connection() -> None:
    """Credentials and TLS apply only to clients built by linewatch.redis_connection: no other construction."""
    offenders = []
    for package in ("linewatch", "pipeline", "services", "models", "governance", "bench", "deploy", "scripts"):
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel not in MAY_CONSTRUCT:
                offenders += [f"{rel}:{line}" for line in _constructions(path)]
    assert not offenders, ("build Redis clients with linewatch.redis_connection.redis_client(settings.redis, url), "
                           "not redis.Redis(...)/from_url:\n" + "\n".join(offenders))


def test_cluster_client_over_tls_as_an_acl_user(pki: Pki, tmp_path: Path) -> None:
    from linewatch.redis_acl import CLUSTER_COMMANDS
    from linewatch.redis_connection import redis_cluster_client

    extra = " ".join(f"+{c}" for c in CLUSTER_COMMANDS)
    users = [f"user lw-rw on >{SECRET} ~{PREFIX}:* resetchannels -@all +ping +xadd +xrange {extra}"]
    with TlsRedis(tmp_path / "cluster", pki, users, cluster=True) as srv:
        client = redis_cluster_client(tls_settings(srv, pki))
        try:
            entry = client.xadd(f"{PREFIX}:{{PMP-01}}:s", {"v": "1"})
            assert client.xrange(f"{PREFIX}:{{PMP-01}}:s") == [(entry, {b"v": b"1"})]
        finally:
            client.close()
        admin = srv.admin()
        assert [e for e in admin.acl_log() if e.get("username") == "lw-rw"] == []
        admin.close()


def test_config_show_warns_about_a_readable_file_with_the_password(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("LINEWATCH_REDIS__URL", PASSWORD_ENV):
        monkeypatch.delenv(name, raising=False)
    config = tmp_path / "linewatch.toml"
    config.write_text(f'[redis]\nurl = "rediss://lw-svc@redis.plant:6380/0"\npassword = "{SECRET}"\ntls_ca = "ca.pem"\n')
    config.chmod(0o644)
    runner = CliRunner()
    shown = runner.invoke(app, ["--config", str(config), "config", "show", "--json"])
    assert shown.exit_code == 0 and SECRET not in shown.output
    assert "readable by others" in shown.output and f"chmod 600 {config}" in shown.output.replace("\n", "")
    rows = {r["name"]: r["value"] for r in json.loads(shown.output[shown.output.index("["):])}
    assert Path(rows["redis.tls_ca"]).is_absolute()  # the job process runs elsewhere
    config.chmod(0o600)
    assert "readable by others" not in runner.invoke(app, ["--config", str(config), "config", "show"]).output


def test_other_secrets_in_the_settings_are_masked_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LINEWATCH_REDIS__URL", raising=False)
    monkeypatch.setenv("LINEWATCH_ALERTS__MQTT__PASSWORD", "mqtt-" + SECRET)
    config = tmp_path / "linewatch.toml"
    config.write_text(f'[[alerts.webhooks]]\nname = "ops"\nurl = "https://bot:url-{SECRET}@hooks.plant/in"\n'
                      f'secret = "hmac-{SECRET}"\n')
    config.chmod(0o600)
    shown = CliRunner().invoke(app, ["--config", str(config), "config", "show", "--json"])
    assert shown.exit_code == 0, shown.output
    assert SECRET not in shown.output
    rows = {r["name"]: r["value"] for r in json.loads(shown.output)}
    assert rows["alerts.mqtt.password"] == "***"
    assert rows["alerts.webhooks"] == [{**rows["alerts.webhooks"][0], "url": "https://bot:***@hooks.plant/in",
                                        "secret": "***"}]
    settings = load_settings(config)
    assert SECRET not in repr(settings) and "https://bot:***@hooks.plant/in" in repr(settings)
    assert settings.alerts.webhooks[0].secret.get_secret_value() == f"hmac-{SECRET}"
