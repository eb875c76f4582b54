"""A real ``redis-server`` that only speaks TLS, with a throwaway CA and ACL users (test helper).

The CA, the server certificate (``localhost`` / ``127.0.0.1``) and a client certificate are made
with the ``openssl`` command line for each server; a second, unrelated CA lets a test present the
wrong trust anchor. The server listens on a free ``--tls-port`` with ``--port 0`` (no plain TCP),
``--tls-auth-clients yes|optional`` and an ACL file whose ``default`` user is disabled.
Debian's ``redis-server`` (built with TLS) is required; ``.ci/run`` installs it.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import redis

ADMIN_USER = "lw-test-admin"
ADMIN_PASSWORD = "admin-5ecret-for-fixture"


@dataclass(frozen=True)
class Pki:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_ca: Path  # an unrelated CA: verification against it must fail


def _openssl(*args: str, cwd: Path) -> None:
    exe = shutil.which("openssl")
    if exe is None:
        raise RuntimeError("the TLS tests need the openssl command line: apt-get install openssl")
    subprocess.run([exe, *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def _ca(directory: Path, name: str) -> tuple[Path, Path]:
    key, cert = directory / f"{name}.key", directory / f"{name}.crt"
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", key.name, "-out", cert.name, "-days", "2", "-subj", f"/CN={name}",
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
             cwd=directory)
    return key, cert


def _leaf(directory: Path, name: str, ca: tuple[Path, Path], ext: str) -> tuple[Path, Path]:
    key, csr, cert = directory / f"{name}.key", directory / f"{name}.csr", directory / f"{name}.crt"
    (directory / f"{name}.ext").write_text(ext)
    _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key.name,
             "-out", csr.name, "-subj", f"/CN={name}", cwd=directory)
    _openssl("x509", "-req", "-in", csr.name, "-CA", ca[1].name, "-CAkey", ca[0].name, "-CAcreateserial",
             "-out", cert.name, "-days", "2", "-extfile", f"{name}.ext", cwd=directory)
    key.chmod(0o600)
    return cert, key


def make_pki(directory: Path) -> Pki:
    """A throwaway CA, a server certificate for localhost/127.0.0.1 and a client certificate."""
    directory.mkdir(parents=True, exist_ok=True)
    ca = _ca(directory, "linewatch-test-ca")
    _, other = _ca(directory, "unrelated-ca")
    server_cert, server_key = _leaf(directory, "server", ca,
                                    "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    client_cert, client_key = _leaf(directory, "client", ca, "extendedKeyUsage=clientAuth\n")
    return Pki(ca[1], server_cert, server_key, client_cert, client_key, other)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class TlsRedis:
    """``redis-server --port 0 --tls-port N`` with ``acl_lines`` (plus the fixture's admin user)."""

    def __init__(self, directory: Path, pki: Pki, acl_lines: list[str], auth_clients: str = "yes",
                 cluster: bool = False) -> None:
        self.cluster = cluster  # a one-master Redis Cluster (all 16384 slots), TLS on the cluster bus too
        self.dir = directory
        self.pki = pki
        self.acl_lines = acl_lines
        self.auth_clients = auth_clients
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"rediss://127.0.0.1:{self.port}/0"

    def admin(self) -> redis.Redis:
        """A client of the fixture's admin user (all commands, all keys), with the client certificate."""
        return redis.Redis(host="127.0.0.1", port=self.port, ssl=True, ssl_ca_certs=str(self.pki.ca),
                           ssl_certfile=str(self.pki.client_cert), ssl_keyfile=str(self.pki.client_key),
                           username=ADMIN_USER, password=ADMIN_PASSWORD, socket_connect_timeout=2)

    def start(self) -> TlsRedis:
        binary = shutil.which("redis-server", path="/usr/bin:/usr/local/bin") or shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("the TLS tests need Debian's redis-server (built with TLS): apt-get install redis-server")
        self.dir.mkdir(parents=True, exist_ok=True)
        aclfile = self.dir / "users.acl"
        aclfile.write_text("\n".join(["user default off",
                                      f"user {ADMIN_USER} on >{ADMIN_PASSWORD} ~* &* +@all", *self.acl_lines]) + "\n")
        log = self.dir / "server.log"
        for _ in range(3):
            self.port = _free_port()
            self.process = subprocess.Popen(
                [binary, "--port", "0", "--tls-port", str(self.port), "--bind", "127.0.0.1",
                 "--tls-cert-file", str(self.pki.server_cert), "--tls-key-file", str(self.pki.server_key),
                 "--tls-ca-cert-file", str(self.pki.ca), "--tls-auth-clients", self.auth_clients,
                 "--aclfile", str(aclfile), "--save", "", "--appendonly", "no", "--dir", str(self.dir),
                 "--logfile", str(log), *self._cluster_args()],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if self._wait_ready():
                if self.cluster:
                    self._assign_slots()
                return self
            self.stop()
        raise RuntimeError(f"redis-server with TLS did not start: {log.read_text()[-1500:] if log.exists() else ''}")

    def _cluster_args(self) -> list[str]:
        if not self.cluster:
            return []
        return ["--cluster-enabled", "yes", "--cluster-config-file", str(self.dir / "nodes.conf"),
                "--tls-cluster", "yes", "--cluster-port", str(_free_port())]

    def _assign_slots(self, timeout_s: float = 10.0) -> None:
        client = self.admin()
        try:
            client.execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 16383)
            deadline = time.monotonic() + timeout_s
            while b"cluster_state:ok" not in client.execute_command("CLUSTER", "INFO"):
                if time.monotonic() > deadline:
                    raise RuntimeError("the one-node TLS cluster did not reach cluster_state:ok")
                time.sleep(0.05)
        finally:
            client.close()

    def _wait_ready(self, timeout_s: float = 10.0) -> bool:
        assert self.process is not None
        client = self.admin()
        deadline = time.monotonic() + timeout_s
        try:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    return False
                try:
                    return bool(client.ping())
                except redis.ConnectionError:
                    time.sleep(0.02)
            return False
        finally:
            client.close()

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None

    def __enter__(self) -> TlsRedis:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
