"""The consumer-group worker every stream stage runs: FIFO per shard, at-least-once in,
exactly-once out, dead letters after N deliveries, graceful SIGTERM.

A stage supplies a :class:`Handler`; the worker does the rest:

1. **Shards and leases.** The role's input is split into ``units`` (shards). The worker holds the
   lease of a fair share of them (``ceil(units / live workers)``, re-balanced every ``ttl/3``), so
   each shard has one active reader and its entries are handled in order.
2. **Reading.** For each owned shard, ``XREADGROUP >`` inside a Lua script that checks the lease
   (a worker that lost its shard cannot read on). A lone entry is handled at once; a backlog is
   handled in batches of ``max_batch``; ``max_wait_ms > 0`` holds a partial batch up to that long
   for more entries. Idle, it blocks on ``XREAD`` until something arrives.
3. **Handling.** ``handler.handle(batch)`` decides per entry: outputs + ack
   (``batch.commit(shard)``), or ``batch.dead_letter(entry, reason, detail)``. Raising means
   "transient, try again": nothing is written or acknowledged.
4. **Committing.** Each shard's :class:`~linewatch.streaming.fenced.Commit` is applied in one Lua
   script that first checks the fencing token: outputs, state and ``XACK`` land together or not
   at all. Outputs keyed by the input's entry id make a redelivery idempotent.
5. **Recovery.** After acquiring a shard, and after a failure, the shard's pending entries
   (every consumer's: the lease makes us the only reader) are claimed with ``XAUTOCLAIM`` oldest
   first, before any new entry: order survives crashes and takeovers. After a failure the shard is
   retried one entry at a time with exponential backoff; an entry delivered more than
   ``max_deliveries`` times goes to the dead-letter stream with its last error.
6. **Backpressure.** Lag (``XINFO GROUPS``: lag + pending) is exported per stream; when the unread
   backlog reaches ``backpressure_ratio`` of the stream's retention an ``AlertRequest``
   (source ``backpressure``) is raised, and pending entries that retention already removed are
   dead-lettered (reason ``trimmed``) and raise it too: nothing vanishes silently.
7. **Stopping.** :meth:`StreamWorker.stop` (SIGTERM/SIGINT with :func:`stop_on_signals`) lets the
   batch in hand finish and commit, releases the leases (a peer takes over at once) and returns.
"""

from __future__ import annotations

import logging
import math
import os
import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import redis
from redis.cluster import RedisCluster

from linewatch.contract import (
    AlertRequest,
    ContractError,
    DeadLetter,
    DeadLetterReason,
    Message,
    StreamNames,
    UnknownSchemaError,
    decode_message,
    encode_message,
    hash_tag,
)
from linewatch.stop_signals import call_on_signals
from linewatch.streaming.fenced import (
    Commit,
    Conflict,
    Entry,
    FencedOut,
    FencedShard,
    OrderViolation,
)
from linewatch.streaming.lease import LeaseClient, ShardLease
from linewatch.streaming.metrics import WorkerMetrics
from linewatch.streaming.observability import Health

log = logging.getLogger("linewatch.streaming")


@dataclass(frozen=True)
class WorkerConfig:
    """How a worker reads, batches, retries and shares its shards."""

    role: str  #: lease and metrics name, e.g. ``inference.thermal``
    group: str  #: consumer group on the input streams
    units: int  #: number of shards (lease units) of the role
    max_batch: int = 32
    max_wait_ms: int = 0  #: hold a partial batch this long for more entries (0: never hold a lone entry)
    block_ms: int = 500  #: idle wait per XREAD before housekeeping
    lease_ttl_ms: int = 5_000
    max_deliveries: int = 5
    retry_base_ms: int = 100
    retry_max_ms: int = 5_000
    tick_ms: int = 1_000
    lag_interval_ms: int = 2_000
    maxlen: int = 100_000  #: unread backlog (entries) the backpressure check compares with; writes never trim
    #: (retention is the RetentionKeeper's: bytes/age, never an unread entry, docs/redis.md)
    backpressure_ratio: float = 0.8
    consumer: str | None = None  #: default: host-pid-random
    dead_letter_source: str | None = None  #: DeadLetter.source; default ``services.<role>``

    def consumer_name(self) -> str:
        return self.consumer or f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


@dataclass
class _DeadLetterRequest:
    entry: Entry
    reason: DeadLetterReason
    detail: str
    asset_id: str | None
    event_time_ms: int | None


class Batch:
    """Entries handed to a handler, and the writes it decides on, per shard."""

    def __init__(self, entries: Sequence[Entry], shard_of: Callable[[str], int], group: str) -> None:
        self.entries = list(entries)
        self._shard_of = shard_of
        self.group = group
        self._commits: dict[int, Commit] = {}
        self._acks: dict[tuple[int, str], list[str]] = {}
        self._dead: dict[int, list[_DeadLetterRequest]] = {}
        self._done: set[tuple[str, str]] = set()

    def shard(self, entry: Entry) -> int:
        return self._shard_of(entry.stream)

    def commit(self, shard: int) -> Commit:
        """The shard's commit: add outputs and state to it; acks are added by :meth:`ack`."""
        return self._commits.setdefault(shard, Commit())

    def ack(self, entry: Entry) -> None:
        """Acknowledge ``entry`` in the same commit as the outputs of its shard."""
        shard = self.shard(entry)
        self.commit(shard)
        self._acks.setdefault((shard, entry.stream), []).append(entry.entry_id)
        self._done.add((entry.stream, entry.entry_id))

    def dead_letter(self, entry: Entry, reason: DeadLetterReason, detail: str, asset_id: str | None = None,
                    event_time_ms: int | None = None) -> None:
        """Give ``entry`` up with a reason: a dead-letter entry is written, the input acknowledged."""
        self._dead.setdefault(self.shard(entry), []).append(
            _DeadLetterRequest(entry, reason, detail, asset_id, event_time_ms))
        self.ack(entry)

    def decode(self, entry: Entry, *expected: type[Message]) -> Message | None:
        """The entry's message, or None after dead-lettering it: an unknown schema or version
        (``unknown_schema``), fields that do not validate (``schema_error``), or a message that is
        none of ``expected`` (``schema_error``)."""
        try:
            msg = decode_message(entry.fields)
        except UnknownSchemaError as exc:
            self.dead_letter(entry, DeadLetterReason.UNKNOWN_SCHEMA, str(exc))
            return None
        except ContractError as exc:
            self.dead_letter(entry, DeadLetterReason.SCHEMA_ERROR, str(exc))
            return None
        if expected and not isinstance(msg, expected):
            want = ", ".join(repr(t.SCHEMA) for t in expected)
            self.dead_letter(entry, DeadLetterReason.SCHEMA_ERROR, f"expected {want} on {entry.stream}, got "
                             f"{msg.SCHEMA!r}", getattr(msg, "asset_id", None))
            return None
        return msg

    def finished(self, entry: Entry) -> bool:
        return (entry.stream, entry.entry_id) in self._done

    def shards(self) -> set[int]:
        return set(self._commits) | {self.shard(e) for e in self.entries}

    def _final(self, shard: int) -> tuple[Commit, list[_DeadLetterRequest]]:
        commit = self.commit(shard)
        for (s, stream), ids in self._acks.items():
            if s == shard:
                commit.ack(stream, self.group, ids)
        return commit, self._dead.get(shard, [])


class Handler(Protocol):
    """Stage code run by a :class:`StreamWorker`. Optional hooks: ``on_acquire(shard)``,
    ``on_release(shard)`` and ``tick(worker)`` (periodic work such as shelving expiry)."""

    def handle(self, batch: Batch) -> None: ...


@dataclass
class _Shard:
    lease: ShardLease
    streams: list[str]
    recovering: bool = True
    failures: int = 0
    retry_at: float = 0.0
    last_error: str = ""


@dataclass
class WorkerStats:
    """Counts a test or the demo can read without scraping Prometheus."""

    handled: int = 0
    dead_letters: int = 0
    batches: int = 0
    fenced: int = 0
    duplicates: int = 0
    batch_sizes: list[int] = field(default_factory=list)


class StreamWorker:
    """Runs a :class:`Handler` over the role's shards (see the module docstring)."""

    def __init__(
        self,
        client: redis.Redis,
        names: StreamNames,
        config: WorkerConfig,
        inputs: Callable[[int], list[str]],
        handler: Handler,
        metrics: WorkerMetrics | None = None,
        health: Health | None = None,
    ) -> None:
        self.client = client
        self.names = names
        self.config = config
        self.inputs = inputs
        self.handler = handler
        self.consumer = config.consumer_name()
        self.metrics = metrics or WorkerMetrics(config.role)
        self.health = health or Health()
        self.stats = WorkerStats()
        self.leases = LeaseClient(client, self.consumer, config.lease_ttl_ms)
        self.fenced = FencedShard(client, config.group, self.consumer)
        self._stop = threading.Event()
        self._owned: dict[int, _Shard] = {}
        self._stream_shard = {s: u for u in range(config.units) for s in inputs(u)}
        self._backpressured: set[str] = set()
        self._source = config.dead_letter_source or f"services.{config.role}"
        self._labels = {"role": config.role}

    # -- public -----------------------------------------------------------------------------------
    def stop(self) -> None:
        """Ask the loop to finish the batch in hand and return."""
        self._stop.set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def owned_shards(self) -> list[int]:
        return sorted(self._owned)

    def commit(self, shard: int, commit: Commit, dead: Sequence[_DeadLetterRequest] = ()) -> bool:
        """Apply a commit for an owned shard (used by ``tick`` hooks); False when fenced out."""
        st = self._owned.get(shard)
        if st is None:
            return False
        return self._commit(st, commit, dead)

    def _group_exists(self, stream: str) -> bool:
        """Whether ``stream`` has this worker's group (``XINFO GROUPS``: a read, allowed on a full server)."""
        try:
            groups = self.client.xinfo_groups(stream)
        except redis.ResponseError:  # no such stream yet
            return False
        name = self.config.group
        return any(g.get("name") in (name, name.encode()) for g in groups)

    def ensure_groups(self) -> None:
        """Create the consumer group on every input stream (``MKSTREAM``, from the start). Groups that
        exist are left alone without a write, so a worker restarting on a full server (maxmemory,
        noeviction) finds them; a group that must be created there raises ``OutOfMemoryError``."""
        for unit in range(self.config.units):
            for stream in self.inputs(unit):
                if self._group_exists(stream):
                    continue
                try:
                    self.client.xgroup_create(stream, self.config.group, id="0", mkstream=True)
                except redis.ResponseError as exc:
                    if "BUSYGROUP" not in str(exc):
                        raise

    def _out_of_memory(self, exc: redis.OutOfMemoryError, full_s: float) -> float:
        """Log and count a write refused by a full server, wait the next backoff step; returns it."""
        full_s = min(max(2 * full_s, self.config.retry_base_ms / 1000.0), self.config.retry_max_ms / 1000.0)
        log.error("Redis is out of memory; retrying", extra={
            "role": self.config.role, "error": str(exc), "retry_in_s": full_s})
        self.metrics.errors.labels(role=self.config.role, kind="OutOfMemory").inc()
        self._stop.wait(full_s)
        return full_s

    def run(self) -> None:
        """The loop; returns after :meth:`stop` (leases released, membership removed)."""
        full_s = 0.0  # backoff while the server is out of memory
        while not self._stop.is_set():
            try:
                self.ensure_groups()
                break
            except redis.OutOfMemoryError as exc:  # a group to create on a full server: wait, never crash
                full_s = self._out_of_memory(exc, full_s)
        if self._stop.is_set():
            self.health.set_ready(False, "stopped")
            return
        self.health.set_ready(True, f"{self.config.role}: consuming as {self.consumer}")
        next_balance = next_tick = next_lag = 0.0
        full_s = 0.0
        try:
            while not self._stop.is_set():
                self.health.beat()
                now = time.monotonic()
                try:
                    if now >= next_balance:
                        self._rebalance()
                        next_balance = now + self.config.lease_ttl_ms / 3000.0
                    if now >= next_tick:
                        self._tick()
                        next_tick = now + self.config.tick_ms / 1000.0
                    if now >= next_lag:
                        next_lag = now + self.config.lag_interval_ms / 1000.0
                        self._measure_lag()
                    worked = self._recover()
                    if self._stop.is_set():
                        break
                    worked = self._read_and_handle() or worked
                    full_s = 0.0
                except redis.OutOfMemoryError as exc:
                    # maxmemory with noeviction (docs/redis.md): nothing was written, the input stays
                    # pending; wait for consumers and retention to free memory, loudly
                    full_s = self._out_of_memory(exc, full_s)
                    continue
                if not worked:
                    self._wait_for_input(min(next_balance, next_tick, next_lag) - time.monotonic())
        finally:
            self.health.set_ready(False, "stopped")
            self._release_all()

    # -- leases -----------------------------------------------------------------------------------
    def _rebalance(self) -> None:
        cfg = self.config
        key = self.names.members(cfg.role)
        now_ms = int(time.time() * 1000)
        pipe = self.client.pipeline(transaction=False)
        pipe.zadd(key, {self.consumer: now_ms})
        pipe.zremrangebyscore(key, "-inf", now_ms - 3 * cfg.lease_ttl_ms)
        pipe.zcard(key)
        pipe.pexpire(key, 10 * cfg.lease_ttl_ms)
        alive = max(int(pipe.execute()[2]), 1)
        target = math.ceil(cfg.units / alive)
        for shard, st in list(self._owned.items()):
            if not self.leases.renew(st.lease):
                self._drop(shard, "lease taken over")
        while len(self._owned) > target:
            shard = max(self._owned)
            st = self._owned.pop(shard)
            self.leases.release(st.lease)
            self._on_release(shard)
            log.info("released shard to a peer", extra={"role": cfg.role, "shard": shard, "target": target})
        if len(self._owned) < target:
            start = abs(hash(self.consumer)) % cfg.units
            for i in range(cfg.units):
                shard = (start + i) % cfg.units
                if shard in self._owned:
                    continue
                lease = self.leases.acquire(cfg.role, shard, self.names.lease(cfg.role, shard))
                if lease is None:
                    continue
                self._owned[shard] = _Shard(lease, self.inputs(shard))
                log.info("acquired shard", extra={"role": cfg.role, "shard": shard, "token": lease.token})
                hook = getattr(self.handler, "on_acquire", None)
                if hook is not None:
                    hook(shard)
                if len(self._owned) >= target:
                    break
        self.metrics.shards.labels(**self._labels).set(len(self._owned))

    def _drop(self, shard: int, why: str) -> None:
        if self._owned.pop(shard, None) is not None:
            log.warning("dropped shard", extra={"role": self.config.role, "shard": shard, "why": why})
            self._on_release(shard)
            self.metrics.shards.labels(**self._labels).set(len(self._owned))

    def _on_release(self, shard: int) -> None:
        hook = getattr(self.handler, "on_release", None)
        if hook is not None:
            hook(shard)

    def _release_all(self) -> None:
        for shard, st in list(self._owned.items()):
            try:
                self.leases.release(st.lease)
            except redis.RedisError:
                pass
            self._owned.pop(shard, None)
            self._on_release(shard)
        try:
            self.client.zrem(self.names.members(self.config.role), self.consumer)
        except redis.RedisError:
            pass
        self.metrics.shards.labels(**self._labels).set(0)

    # -- reading ----------------------------------------------------------------------------------
    def _read_shards(self, shards: Iterable[_Shard]) -> tuple[list[Entry], dict[str, str]]:
        entries: list[Entry] = []
        tops: dict[str, str] = {}
        for st in list(shards):
            try:
                got, top = self.fenced.read_new(st.lease, st.streams, self.config.max_batch)
            except FencedOut as exc:
                self._drop(st.lease.shard, str(exc))
                self.metrics.fenced.labels(**self._labels).inc()
                continue
            entries += got
            tops.update(top)
        return entries, tops

    def _read_and_handle(self) -> bool:
        ready = [st for st in self._owned.values() if not st.recovering]
        if not ready:
            return False
        entries, tops = self._read_shards(ready)
        self._tops = tops
        if not entries:
            return False
        cfg = self.config
        if cfg.max_wait_ms > 0 and len(entries) < cfg.max_batch:
            deadline = time.monotonic() + cfg.max_wait_ms / 1000.0
            while len(entries) < cfg.max_batch and not self._stop.is_set():
                left_ms = int((deadline - time.monotonic()) * 1000)
                if left_ms <= 0:
                    break
                last = {}
                for e in entries:
                    last[e.stream] = e.entry_id
                self._block_read({s: last.get(s, "$") for st in ready for s in st.streams}, left_ms)
                more, _ = self._read_shards([st for st in ready if st.lease.shard in self._owned])
                entries += more
        for i in range(0, len(entries), cfg.max_batch):
            self._process(entries[i:i + cfg.max_batch])
        return True

    def _wait_for_input(self, max_s: float) -> None:
        block_ms = max(1, min(self.config.block_ms, int(max_s * 1000)))
        tops = getattr(self, "_tops", {})
        streams = {s: tops.get(s, "$") for st in self._owned.values() if not st.recovering for s in st.streams}
        if not streams:
            self._stop.wait(block_ms / 1000.0)
            return
        try:
            self._block_read(streams, block_ms)
        except redis.RedisError as exc:
            log.warning("waiting for input failed", extra={"role": self.config.role, "error": str(exc)})
            self._stop.wait(block_ms / 1000.0)

    def _block_read(self, streams: dict[str, str], block_ms: int) -> None:
        """``XREAD BLOCK`` until one of ``streams`` has an entry after the given id, or ``block_ms``.

        On Redis Cluster one command may only name keys of one hash slot (one shard's tag): the wait
        is then split over the owned shards' slots, each at most ``block_ms / slots``, so an idle
        worker notices new input on another shard within ``block_ms`` (the next read takes it).
        """
        groups: dict[str, dict[str, str]] = {}
        if isinstance(self.client, RedisCluster):
            for stream, last in streams.items():
                groups.setdefault(hash_tag(stream), {})[stream] = last
        else:
            groups[""] = streams
        per_ms = max(1, block_ms // max(len(groups), 1))
        for group in groups.values():
            if self._stop.is_set() or self.client.xread(group, count=1, block=per_ms):
                return

    # -- recovery ---------------------------------------------------------------------------------
    def _recover(self) -> bool:
        worked = False
        now = time.monotonic()
        for shard, st in list(self._owned.items()):
            if not st.recovering or st.retry_at > now or self._stop.is_set():
                continue
            count = 1 if st.failures else self.config.max_batch
            claimed: list[Entry] = []
            dead: list[_DeadLetterRequest] = []
            try:
                for stream in st.streams:
                    res = self.fenced.claim_pending(st.lease, stream, count)
                    for gone in res.deleted:
                        dead.append(_DeadLetterRequest(
                            Entry(stream, gone, {}), DeadLetterReason.TRIMMED,
                            f"retention removed {stream} {gone} before group {self.config.group} processed it",
                            None, None))
                    claimed += res.entries
                    if res.entries or res.deleted:
                        break  # one stream at a time, oldest first
            except FencedOut as exc:
                self._drop(shard, str(exc))
                continue
            if dead:
                self.metrics.trimmed.labels(**self._labels).inc(len(dead))
                self._raise_backpressure(dead[0].entry.stream, f"{len(dead)} pending entries were trimmed unread")
                self._write_dead_letters(dead)
            if not claimed:
                if not dead:
                    st.recovering = False
                    st.failures = 0
                continue
            worked = True
            give_up = [e for e in claimed if e.deliveries > self.config.max_deliveries]
            keep = [e for e in claimed if e.deliveries <= self.config.max_deliveries]
            if give_up:
                commit = Commit()
                commit.ack(give_up[0].stream, self.config.group, [e.entry_id for e in give_up])
                reqs = [_DeadLetterRequest(e, DeadLetterReason.MAX_DELIVERIES,
                                           f"delivered {e.deliveries} times (limit {self.config.max_deliveries}); "
                                           f"last error: {st.last_error or 'unknown'}", None, None)
                        for e in give_up]
                self._commit(st, commit, reqs)
            if keep:
                self.metrics.redeliveries.labels(**self._labels).inc(sum(1 for e in keep if e.deliveries > 1))
                self._process(keep)
        return worked

    # -- handling and committing ------------------------------------------------------------------
    def _process(self, entries: list[Entry]) -> None:
        cfg = self.config
        batch = Batch(entries, self._stream_shard.__getitem__, cfg.group)
        t0 = time.perf_counter()
        try:
            self.handler.handle(batch)
        except Exception as exc:  # transient by contract: retry with backoff, then dead-letter
            kind = type(exc).__name__
            self.metrics.errors.labels(role=cfg.role, kind=kind).inc()
            log.warning("batch failed; will retry", extra={
                "role": cfg.role, "error": f"{kind}: {exc}", "entry_ids": [e.entry_id for e in entries[:20]]})
            for shard in {batch.shard(e) for e in entries}:
                self._fail(shard, f"{kind}: {exc}")
            return
        self.metrics.handle_seconds.labels(**self._labels).observe(time.perf_counter() - t0)
        self.metrics.batch_size.labels(**self._labels).observe(len(entries))
        self.stats.batches += 1
        self.stats.batch_sizes.append(len(entries))
        for shard in sorted(batch.shards()):
            st = self._owned.get(shard)
            if st is None:
                continue
            commit, dead = batch._final(shard)
            if not self._commit(st, commit, dead):
                continue
            left = [e for e in entries if batch.shard(e) == shard and not batch.finished(e)]
            done = sum(1 for e in entries if batch.shard(e) == shard) - len(left)
            self.stats.handled += done
            self.metrics.entries.labels(role=cfg.role, outcome="ok").inc(done - len(dead))
            if left:
                self._fail(shard, f"handler left {len(left)} entries unacknowledged")

    def _fail(self, shard: int, why: str) -> None:
        st = self._owned.get(shard)
        if st is None:
            return
        st.recovering = True
        st.failures += 1
        st.last_error = why
        delay_ms = min(self.config.retry_base_ms * 2 ** (st.failures - 1), self.config.retry_max_ms)
        st.retry_at = time.monotonic() + delay_ms / 1000.0

    def _commit(self, st: _Shard, commit: Commit, dead: Sequence[_DeadLetterRequest]) -> bool:
        t0 = time.perf_counter()
        try:
            if dead:
                self._write_dead_letters(dead)
            result = self.fenced.commit(st.lease, commit)
        except redis.OutOfMemoryError as exc:
            # the server is full (maxmemory, noeviction): nothing of this commit was written and the
            # input stays pending; retry with backoff while consumers catch up and retention trims
            log.error("Redis is out of memory; will retry", extra={"role": self.config.role, "error": str(exc)})
            self.metrics.errors.labels(role=self.config.role, kind="OutOfMemory").inc()
            self._fail(st.lease.shard, f"Redis out of memory: {exc}")
            return False
        except FencedOut as exc:
            self.stats.fenced += 1
            self.metrics.fenced.labels(**self._labels).inc()
            self._drop(st.lease.shard, str(exc))
            return False
        except Conflict as exc:
            self.metrics.errors.labels(role=self.config.role, kind="Conflict").inc()
            self._fail(st.lease.shard, str(exc))
            return False
        except OrderViolation as exc:
            log.error("commit refused", extra={"role": self.config.role, "error": str(exc)})
            self.metrics.errors.labels(role=self.config.role, kind="OrderViolation").inc()
            self._fail(st.lease.shard, str(exc))
            return False
        self.metrics.commit_seconds.labels(**self._labels).observe(time.perf_counter() - t0)
        if result.duplicates:
            self.stats.duplicates += result.duplicates
            self.metrics.duplicates.labels(**self._labels).inc(result.duplicates)
        return True

    def _write_dead_letters(self, dead: Sequence[_DeadLetterRequest]) -> None:
        now = int(time.time() * 1000)
        pipe = self.client.pipeline(transaction=False)
        for d in dead:
            body = d.entry.fields.get(b"body", b"")
            excerpt = "".join(ch if ch.isprintable() else "?" for ch in body[:512].decode("utf-8", "replace"))[:512]
            msg = DeadLetter(source=self._source, reason=d.reason, detail=d.detail[:2000],
                             raw_ref=f"{d.entry.stream}/{d.entry.entry_id}", excerpt=excerpt,
                             asset_id=d.asset_id, event_time_ms=d.event_time_ms, failed_at_ms=now)
            pipe.xadd(self.names.deadletter, encode_message(msg))  # trimmed by retention (docs/redis.md)
            self.metrics.dead_letters.labels(role=self.config.role, reason=d.reason.value).inc()
            self.metrics.entries.labels(role=self.config.role, outcome="dead_letter").inc()
            log.warning("dead letter", extra={"role": self.config.role, "reason": d.reason.value,
                                              "entry_ids": [d.entry.entry_id], "stream": d.entry.stream,
                                              "detail": d.detail[:300]})
        pipe.execute()
        self.stats.dead_letters += len(dead)

    # -- housekeeping -----------------------------------------------------------------------------
    def _tick(self) -> None:
        hook = getattr(self.handler, "tick", None)
        if hook is not None and self._owned:
            try:
                hook(self)
            except Exception as exc:  # a failing tick must not stop consumption
                log.warning("tick failed", extra={"role": self.config.role, "error": f"{type(exc).__name__}: {exc}"})

    def _measure_lag(self) -> None:
        cfg = self.config
        for st in list(self._owned.values()):
            for stream in st.streams:
                try:
                    groups = self.client.xinfo_groups(stream)
                except redis.ResponseError:
                    continue
                for g in groups:
                    name = g.get("name")
                    if (name.decode() if isinstance(name, bytes) else name) != cfg.group:
                        continue
                    lag = g.get("lag")
                    pending = int(g.get("pending") or 0)
                    self.metrics.pending.labels(role=cfg.role, stream=stream).set(pending)
                    if lag is not None:
                        self.metrics.lag.labels(role=cfg.role, stream=stream).set(int(lag))
                    backlog = int(lag or 0) + pending
                    if backlog >= cfg.backpressure_ratio * cfg.maxlen:
                        self._raise_backpressure(stream, f"{backlog} entries unread of a retention of {cfg.maxlen}")
                    elif stream in self._backpressured and backlog < cfg.backpressure_ratio * cfg.maxlen / 2:
                        self._clear_backpressure(stream, backlog)

    def _backpressure_request(self, stream: str, state: str, message: str) -> AlertRequest:
        return AlertRequest(source="backpressure", episode_key=f"backpressure:{self.config.group}:{stream}",
                            asset_id="fleet", label="backpressure", severity=0.7 if state == "raise" else 0.0,
                            state=state, message=message,  # type: ignore[arg-type]
                            details={"stream": stream, "group": self.config.group, "role": self.config.role},
                            event_time_ms=int(time.time() * 1000))

    def _raise_backpressure(self, stream: str, why: str) -> None:
        self.metrics.backpressure.labels(role=self.config.role, stream=stream).set(1)
        if stream in self._backpressured:
            return
        msg = (f"{self.config.role} is falling behind on {stream}: {why}; its unread input is kept, so Redis memory "
               "grows past the stream's retention budget (docs/redis.md)")
        log.error("backpressure", extra={"role": self.config.role, "stream": stream, "detail": why})
        self.client.xadd(self.names.alert_requests(), encode_message(self._backpressure_request(stream, "raise", msg)))
        self._backpressured.add(stream)  # after the write: a refused write (OOM) is retried next time

    def _clear_backpressure(self, stream: str, backlog: int) -> None:
        self._backpressured.discard(stream)
        self.metrics.backpressure.labels(role=self.config.role, stream=stream).set(0)
        msg = f"{self.config.role} caught up on {stream} ({backlog} entries unread)"
        self.client.xadd(self.names.alert_requests(), encode_message(self._backpressure_request(stream, "clear", msg)))


def stop_on_signals(worker_stop: Callable[[], None],
                    signals: Sequence[signal.Signals] = (signal.SIGTERM, signal.SIGINT)) -> None:
    """Make SIGTERM/SIGINT call ``worker_stop`` (main thread only): the batch in hand drains. The handler
    takes no lock (:mod:`linewatch.stop_signals`); a thread logs the stop and calls ``worker_stop``, which
    sets events and logs: from a handler that could deadlock on a second signal."""
    def stop() -> None:
        log.info("stopping on signal")
        worker_stop()

    call_on_signals(stop, tuple(signals))
