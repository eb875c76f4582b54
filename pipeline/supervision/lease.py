"""One ingest host per landing zone, across hosts: a Redis lease next to the ``flock``.

``flock`` on a shared NFS landing volume excludes two hosts only where the server implements
NFSv4 locking (:mod:`pipeline.supervision.lock`). The lease covers the rest: the key
``<prefix>:ingest:lease:<zone id>`` holds the owner (``host``, ``pid``, landing path, a token) with
a TTL the supervisor renews every third of it. ``<zone id>`` is a random id kept in the landing zone
itself (``.linewatch-zone-id``), so two hosts that mount the same volume at different paths agree on
it. A second ingest on the zone from another host finds the key and refuses, naming the owner. A
crashed owner's lease expires after the TTL; on the *same* host it is taken over at once, because
holding the zone's ``flock`` proves that no other ingest on this host is alive.

The lease is advisory (it depends on Redis being reachable): when Redis is down the job cannot
write either, and the supervisor keeps running and logs the failed renewals.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import redis

from linewatch.redis_connection import RedisConnectionSettings, redis_client

log = logging.getLogger(__name__)

ZONE_ID_NAME = ".linewatch-zone-id"

_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('DEL', KEYS[1])
end
return 0
"""


def zone_id(landing: Path) -> str:
    """The landing zone's id (created once, atomically, in ``<landing>/.linewatch-zone-id``).

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     zone_id(Path(d)) == zone_id(Path(d)) and len(zone_id(Path(d))) == 32
    True
    """
    path = landing / ZONE_ID_NAME
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        for _ in range(50):  # another host may be between create and write
            text = path.read_text().strip()
            if text:
                return text
            time.sleep(0.01)
        raise RuntimeError(f"{path} is empty: delete it and start again") from None
    value = uuid.uuid4().hex
    with os.fdopen(fd, "w") as handle:
        handle.write(value + "\n")
    return value


@dataclass(frozen=True)
class LeaseOwner:
    host: str
    pid: int
    landing: str
    token: str

    def to_json(self) -> str:
        return json.dumps(self.__dict__, sort_keys=True)

    @classmethod
    def parse(cls, raw: bytes | str | None) -> LeaseOwner | None:
        if raw is None:
            return None
        try:
            data = json.loads(raw)
            return cls(str(data["host"]), int(data["pid"]), str(data["landing"]), str(data["token"]))
        except (ValueError, KeyError, TypeError):
            return None


class LeaseHeld(RuntimeError):
    """Another host holds the landing zone's lease."""

    def __init__(self, key: str, owner: LeaseOwner | None, ttl_ms: int) -> None:
        self.key = key
        self.owner = owner
        who = f"PID {owner.pid} on host {owner.host} (landing {owner.landing})" if owner else "an unreadable owner"
        super().__init__(f"the landing zone is already being ingested by {who}: Redis lease {key} "
                         f"(expires in {max(ttl_ms, 0) / 1000:.1f}s unless renewed). Run one ingest per landing zone; "
                         "stop the other one first.")


def _sync(value: Any) -> Any:
    """redis-py's sync client types its replies as ``Awaitable | value``; this client is sync."""
    return value


class RedisLease:
    """Acquire, renew (on a daemon thread) and release the landing zone's lease."""

    def __init__(self, redis_url: str, key: str, landing: Path, ttl_s: float = 15.0,
                 connection: RedisConnectionSettings | None = None) -> None:
        self.client = redis_client(connection or RedisConnectionSettings(), redis_url, socket_timeout=5,
                                   socket_connect_timeout=5)
        self.key = key
        self.ttl_ms = int(ttl_s * 1000)
        self.owner = LeaseOwner(socket.gethostname(), os.getpid(), str(landing), uuid.uuid4().hex)
        self.lost: str | None = None  # why the lease was lost (the supervisor stops the job then)
        self.renewals = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def acquire(self, holds_local_lock: bool = True) -> None:
        """Take the lease, or raise :class:`LeaseHeld`. With ``holds_local_lock`` (this process holds the
        zone's ``flock``), a lease left by this host (a crashed run) is taken over at once."""
        value = self.owner.to_json()
        if self.client.set(self.key, value, nx=True, px=self.ttl_ms):
            return
        current = LeaseOwner.parse(cast(bytes | None, self.client.get(self.key)))
        if holds_local_lock and current is not None and current.host == self.owner.host:
            log.warning("taking over the lease %s left by PID %d (this host, no longer running)", self.key, current.pid)
            self.client.set(self.key, value, px=self.ttl_ms)
            return
        if current is None and self.client.set(self.key, value, nx=True, px=self.ttl_ms):
            return  # expired in between
        raise LeaseHeld(self.key, current, int(_sync(self.client.pttl(self.key))))

    def renew(self) -> bool:
        """Extend the TTL if the lease is still ours; False (and :attr:`lost` set) if it is not."""
        if int(_sync(self.client.eval(_RENEW, 1, self.key, self.owner.to_json(), str(self.ttl_ms)))) == 1:
            self.renewals += 1
            return True
        current = LeaseOwner.parse(cast(bytes | None, self.client.get(self.key)))
        if current is None and self.client.set(self.key, self.owner.to_json(), nx=True, px=self.ttl_ms):
            log.warning("lease %s had expired (Redis unreachable for a while?); taken again", self.key)
            return True
        self.lost = (f"lost the landing-zone lease {self.key} to "
                     f"{f'PID {current.pid} on host {current.host}' if current else 'nobody (expired)'}")
        return False

    def start_renewing(self) -> None:
        def loop() -> None:
            while not self._stop.wait(self.ttl_ms / 3000):
                try:
                    if not self.renew():
                        log.error("%s", self.lost)
                        return
                except redis.RedisError as exc:
                    log.warning("could not renew lease %s: %s", self.key, exc)

        self._thread = threading.Thread(target=loop, name="linewatch-lease", daemon=True)
        self._thread.start()

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        try:
            self.client.eval(_RELEASE, 1, self.key, self.owner.to_json())
        except redis.RedisError as exc:
            log.warning("could not release lease %s (it expires by itself): %s", self.key, exc)
        finally:
            self.client.close()
