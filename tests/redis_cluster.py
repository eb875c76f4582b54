"""Private ``redis-server`` processes for tests: a standalone server a test may reconfigure
(``maxmemory``, ``SCRIPT FLUSH``) without disturbing the shared one, and a real Redis Cluster of
three masters (``redis-server --cluster-enabled yes``, slots assigned with ``CLUSTER ADDSLOTSRANGE``,
joined with ``CLUSTER MEET``).

Both use Debian's ``redis-server`` (``apt-get install redis-server``; ``.ci/run`` installs it when
missing). A missing binary is an error, never a skip.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis
from redis.cluster import ClusterNode, RedisCluster

SLOTS = 16384
BUS_OFFSET = 10000  # a cluster node's bus port is its port + 10000


def redis_server_binary() -> str:
    path = shutil.which("redis-server") or ("/usr/bin/redis-server" if Path("/usr/bin/redis-server").exists() else None)
    if path is None:
        raise RuntimeError("redis-server not found: install Debian's package (`apt-get install redis-server`; "
                           ".ci/run does this when run as root) — the Redis Cluster tests need it")
    return path


def _free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_ports(n: int, with_bus: bool = False) -> list[int]:
    """``n`` free local ports (and their cluster-bus ports ``+10000`` when ``with_bus``)."""
    ports: list[int] = []
    while len(ports) < n:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port in ports or (with_bus and (port + BUS_OFFSET > 65535 or not _free(port + BUS_OFFSET))):
            continue
        ports.append(port)
    return ports


def wait_until(check: object, timeout_s: float, what: str) -> None:
    """Poll ``check()`` until it is true; raise with ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            if check():  # type: ignore[operator]
                return
        except (redis.RedisError, OSError) as exc:
            last = exc
        time.sleep(0.05)
    raise TimeoutError(f"timed out after {timeout_s:.0f} s waiting for {what}" + (f" (last error: {last})" if last else ""))


@dataclass
class RedisServer:
    """One ``redis-server`` process on ``port`` with its files in ``workdir``."""

    port: int
    workdir: Path
    extra: list[str] = field(default_factory=list)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, socket_connect_timeout=2, socket_timeout=10)

    def start(self) -> RedisServer:
        self.workdir.mkdir(parents=True, exist_ok=True)
        log = open(self.workdir / "redis.log", "wb")  # noqa: SIM115 - kept open for the process' lifetime
        self.process = subprocess.Popen(
            [redis_server_binary(), "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.workdir), "--daemonize", "no", *self.extra],
            stdout=log, stderr=subprocess.STDOUT)
        log.close()
        client = self.client()
        try:
            def up() -> bool:
                if self.process is not None and self.process.poll() is not None:
                    raise RuntimeError(f"redis-server on {self.port} exited: "
                                       f"{(self.workdir / 'redis.log').read_text()[-2000:]}")
                return bool(client.ping())
            wait_until(up, 15, f"redis-server on port {self.port}")
        finally:
            client.close()
        return self

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        self.process = None


@dataclass
class LocalRedisCluster:
    """Three (``masters``) cluster-enabled servers owning all 16384 slots, no replicas."""

    workdir: Path
    masters: int = 3
    nodes: list[RedisServer] = field(default_factory=list)

    @property
    def url(self) -> str:
        """URL of the first node (a cluster client discovers the others)."""
        return self.nodes[0].url

    @property
    def startup_nodes(self) -> list[ClusterNode]:
        return [ClusterNode("127.0.0.1", n.port) for n in self.nodes]

    def client(self, **options: object) -> RedisCluster:
        return RedisCluster(startup_nodes=self.startup_nodes, **options)  # type: ignore[arg-type]

    def start(self) -> LocalRedisCluster:
        ports = free_ports(self.masters, with_bus=True)
        try:
            for i, port in enumerate(ports):
                self.nodes.append(RedisServer(port, self.workdir / f"node{i}", [
                    "--cluster-enabled", "yes", "--cluster-config-file", f"nodes-{port}.conf",
                    "--cluster-node-timeout", "5000", "--cluster-require-full-coverage", "yes"]).start())
            clients = [n.client() for n in self.nodes]
            per = SLOTS // self.masters
            for i, c in enumerate(clients):
                last = SLOTS - 1 if i == self.masters - 1 else (i + 1) * per - 1
                c.execute_command("CLUSTER", "ADDSLOTSRANGE", i * per, last)
            for c in clients[1:]:
                c.execute_command("CLUSTER", "MEET", "127.0.0.1", ports[0])

            def ready() -> bool:
                for c in clients:
                    info = c.execute_command("CLUSTER", "INFO")
                    text = info.decode() if isinstance(info, bytes) else str(info)
                    if "cluster_state:ok" not in text or f"cluster_known_nodes:{self.masters}" not in text:
                        return False
                    if len(c.execute_command("CLUSTER", "SLOTS")) != self.masters:
                        return False
                return True
            wait_until(ready, 60, f"cluster_state:ok on {self.masters} masters {ports}")
            for c in clients:
                c.close()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()
        self.nodes.clear()
