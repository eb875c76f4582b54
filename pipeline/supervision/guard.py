"""Everything that makes a job the only one on its landing zone and data dir, taken together.

:meth:`LandingGuard.acquire` takes, in order, the landing zone's ``flock``
(``<landing>/.linewatch-ingest.lock``), the run directory's ``flock`` (``<data>/flink/run/.lock``:
two ingests on one data dir would share checkpoints) and the Redis lease of the zone; it raises
:class:`IngestBusy` naming the holder when any is taken. The file descriptors are passed to the job
process, so the locks outlive a supervisor that dies before its job has finished cancelling.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from linewatch.redis_connection import RedisConnectionSettings
from pipeline.supervision.lease import LeaseHeld, RedisLease, zone_id
from pipeline.supervision.lock import LANDING_LOCK_NAME, FileLock, LockHeld

RUN_LOCK_NAME = ".lock"
ORPHAN_WAIT_S = 40.0
"""How long a start waits for the job of a dead supervisor on this host to exit (its stop grace is 30 s)."""


class IngestBusy(RuntimeError):
    """Another ingest holds the landing zone or the data dir (the message names it)."""


@dataclass
class LandingGuard:
    landing: FileLock
    run_dir: FileLock
    lease: RedisLease | None
    released: bool = field(default=False)

    @classmethod
    def acquire(cls, landing: Path, work_dir: Path, redis_url: str | None,
                lease_key_of: Callable[[str], str] | None = None,
                lease_ttl_s: float = 15.0, connection: RedisConnectionSettings | None = None) -> LandingGuard:
        """``lease_key_of``: ``zone id -> key`` (``JobSpec.lease_key``); None or no ``redis_url``: no lease.
        ``connection``: credentials/TLS of the Redis connection (``linewatch.redis_connection``)."""
        try:
            zone_lock = FileLock.acquire(landing / LANDING_LOCK_NAME, "landing zone", wait_orphan_s=ORPHAN_WAIT_S)
        except LockHeld as exc:
            raise IngestBusy(str(exc)) from None
        try:
            run_lock = FileLock.acquire(work_dir / RUN_LOCK_NAME, "data dir", wait_orphan_s=ORPHAN_WAIT_S)
        except LockHeld as exc:
            zone_lock.release()
            raise IngestBusy(str(exc)) from None
        lease = None
        if redis_url and lease_key_of is not None:
            lease = RedisLease(redis_url, lease_key_of(zone_id(landing)), landing, lease_ttl_s, connection)
            try:
                lease.acquire(holds_local_lock=True)
            except LeaseHeld as exc:
                lease.client.close()
                zone_lock.release()
                run_lock.release()
                raise IngestBusy(str(exc)) from None
            lease.start_renewing()
        return cls(zone_lock, run_lock, lease)

    @property
    def fds(self) -> tuple[int, ...]:
        """Descriptors the job process inherits (it holds the locks as long as it lives)."""
        return tuple(fd for fd in (self.landing.fd, self.run_dir.fd) if fd >= 0)

    @property
    def lost(self) -> str | None:
        return self.lease.lost if self.lease is not None else None

    def record_job(self, pid: int) -> None:
        self.landing.record_job(pid)
        self.run_dir.record_job(pid)

    def release(self) -> None:
        if self.released:
            return
        self.released = True
        if self.lease is not None:
            self.lease.release()
        self.run_dir.release()
        self.landing.release()
