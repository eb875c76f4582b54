"""Idempotent, pipelined XADD of contract messages into Redis Streams.

Redis has no transaction Flink can join, so the job delivers **at least once** (it replays
from its last checkpoint after a failure) and makes the writes **idempotent**:

* feature entries carry a per-asset, per-modality *high-water mark* (``HSET
  <prefix>:ingest:hwm:<modality>:{s<k>} <asset> <event_time_ms>``, one hash per shard): the Lua
  script adds an entry only if its event time is newer than the mark. Per asset the job emits
  strictly increasing event times (frames and clips by timestamp, PLC windows by window end), so
  a replay after a restart does not add an entry twice, however long ago the original was
  written, and the mark costs one hash field per asset.
* dead letters are not ordered; each carries a dedup key (``<prefix>:ingest:dedup:{<prefix>:deadletter}:<digest>``)
  derived from its raw reference, reason and detail, kept ``dedup_ttl_s``.

**Write first, then mark.** Redis does not roll a script back: whatever it wrote before an
error stays. The script therefore runs ``XADD`` first and moves the mark (or sets the dedup key)
only after the entry is in the stream. If ``XADD`` fails (``OOM`` under ``maxmemory`` +
``noeviction``, ``WRONGTYPE``, a full disk on AOF fsync-always …) the mark is untouched, the
error reaches the Flink task, the job restarts from its checkpoint and the replay writes the
entry. The only failure window left is *after* ``XADD`` (e.g. the marks hash is not a hash): then
the replay may add the entry a second time — a failure can duplicate, never lose.

**No trimming.** The sink's ``XADD`` has no ``MAXLEN``: it must never remove entries a consumer
group has not read yet. Retention is a separate keeper's job (``MINID`` below every group's
last-delivered id; ``linewatch.streaming.retention``).

**Redis Cluster.** Both keys of one script share a hash slot (the feature stream and its shard's
marks hash carry the shard tag ``{s<k>}``; the dedup keys carry ``{<prefix>:deadletter}``), so the
sink works through :class:`redis.cluster.RedisCluster` — :func:`connect` picks it when the server
says ``cluster_enabled:1``. See docs/streams.md.

All entries produced from one input element go to Redis in one pipelined round trip, which
is flushed before the element's processing returns: nothing is buffered across elements, so
a checkpoint never covers an entry that is not yet in Redis (PyFlink has no end-of-bundle or
pre-checkpoint hook for user functions, so a cross-element buffer would lose entries).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import redis
from redis.cluster import RedisCluster

from linewatch.contract import Message, StreamNames, encode_message
from linewatch.redis_connection import RedisConnectionSettings, redis_client, redis_cluster_client

#: A client of a single Redis server or of a Redis Cluster (both speak the commands the sink uses).
RedisClient = redis.Redis | RedisCluster

# KEYS[1] stream, KEYS[2] marks hash ('hwm') or dedup key ('nx') — one hash slot.
# ARGV[1] 'hwm' | 'nx'; ARGV[2] hash field (asset) | ttl seconds; ARGV[3] event time ('hwm');
# ARGV[4..] field, value, field, value ...
# Returns the new entry id, or 0 if the entry was a duplicate. XADD runs before any other write:
# if it fails, the script stops with nothing written, and the replay adds the entry.
XADD_ONCE_LUA = """
local hwm = ARGV[1] == 'hwm'
if hwm then
  local cur = redis.call('HGET', KEYS[2], ARGV[2])
  if cur and tonumber(cur) >= tonumber(ARGV[3]) then return 0 end
elseif redis.call('EXISTS', KEYS[2]) == 1 then
  return 0
end
local args = {'XADD', KEYS[1], '*'}
for i = 4, #ARGV do args[#args + 1] = ARGV[i] end
local id = redis.call(unpack(args))
if hwm then
  redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
else
  redis.call('SET', KEYS[2], '1', 'EX', tonumber(ARGV[2]))
end
return id
"""


@dataclass(frozen=True)
class PendingEntry:
    """One entry to add: the stream, the message, and how duplicates are recognised."""

    stream: str
    message: Message
    hwm_key: str | None = None  # hash of per-asset marks of the stream's shard (feature entries)
    hwm_field: str | None = None  # the asset id
    hwm_value: int | None = None  # event time; must grow per asset
    dedup_key: str | None = None  # SET NX key (dead letters)


def dedup_key_for(names: StreamNames, *parts: str, key: Callable[[str], str] | None = None) -> str:
    """Stable dedup key from the parts that identify a record; ``key`` (digest -> key) puts it in the
    hash slot of the stream it guards: by default ``names.ingest_dedup`` (dead letters), for an alert
    request ``names.ingest_request_dedup``.

    >>> dedup_key_for(StreamNames("lw"), "plc/a.csv:3", "truncated")
    'lw:ingest:dedup:{lw:deadletter}:6f0c3309e56626fc38c64358'
    >>> dedup_key_for(StreamNames("lw"), "plc/a.csv:3", "truncated", key=StreamNames("lw").ingest_request_dedup)
    'lw:ingest:dedup:{lw:alert-requests}:6f0c3309e56626fc38c64358'
    """
    digest = hashlib.sha1("\x1f".join(parts).encode("utf-8", errors="replace")).hexdigest()[:24]
    return (key or names.ingest_dedup)(digest)


def connect(url: str, connection: RedisConnectionSettings | None = None, **overrides: Any) -> RedisClient:
    """A client for ``url`` with ``connection``'s user, password and TLS (``linewatch.redis_connection``):
    a :class:`RedisCluster` when the server answers ``CLUSTER SLOTS`` (it runs with
    ``cluster-enabled yes``), else a :class:`redis.Redis`. A server without cluster support answers
    with an error (so does an ACL user without ``+cluster|slots``; the ingest rules of
    ``linewatch.redis_acl`` grant it). ``overrides`` go to redis-py."""
    conn = connection or RedisConnectionSettings()
    probe = redis_client(conn, url, **overrides)
    try:
        probe.execute_command("CLUSTER", "SLOTS")  # type: ignore[no-untyped-call]
        clustered = True
    except redis.ResponseError:  # "cluster support disabled", or NOPERM
        clustered = False
    finally:
        probe.close()
    if clustered:
        return redis_cluster_client(conn, url, **overrides)
    return redis_client(conn, url, **overrides)


@dataclass
class WriteResult:
    added: int = 0
    duplicates: int = 0
    entry_ids: list[str] = field(default_factory=list)
    script_reloads: int = 0  #: NoScriptError answered by SCRIPT LOAD + one resend of the affected entries


class SinkWriteError(redis.RedisError):
    """An entry could not be written; the entries before it in the batch may have been."""


class RedisStreamWriter:
    """Writes :class:`PendingEntry` batches with one pipelined round trip per batch."""

    def __init__(self, client: RedisClient, dedup_ttl_s: int) -> None:
        self.client = client
        self.dedup_ttl_s = dedup_ttl_s
        self._sha = self._load()

    @classmethod
    def open(cls, url: str, dedup_ttl_s: int, connection: RedisConnectionSettings | None = None) -> RedisStreamWriter:
        """A writer on :func:`connect` (single server or cluster; credentials + TLS: docs/redis-security.md)
        with the job's timeouts."""
        return cls(connect(url, connection, socket_timeout=10, socket_connect_timeout=5, health_check_interval=30),
                   dedup_ttl_s)

    def _load(self) -> str:
        sha = self.client.script_load(XADD_ONCE_LUA)  # a cluster client loads it on every primary
        return sha.decode() if isinstance(sha, bytes) else str(sha)

    def _queue(self, pipe: Any, entry: PendingEntry) -> None:
        fields = encode_message(entry.message)
        flat: list[bytes | str | int] = []
        for name, value in fields.items():
            flat += [name, value]
        if entry.hwm_key is not None:
            keys = [entry.stream, entry.hwm_key]
            args: list[bytes | str | int] = ["hwm", entry.hwm_field or "", int(entry.hwm_value or 0)]
        else:
            if entry.dedup_key is None:
                raise ValueError(f"entry for {entry.stream} has neither a high-water mark nor a dedup key")
            keys = [entry.stream, entry.dedup_key]
            args = ["nx", self.dedup_ttl_s, 0]
        # execute_command, not pipe.evalsha: redis-py's cluster pipeline blocks the evalsha method, yet
        # routes a queued EVALSHA by its keys like any command (both keys share a slot)
        pipe.execute_command("EVALSHA", self._sha, len(keys), *keys, *args, *flat)

    def write(self, entries: list[PendingEntry], counters: dict[str, int] | None = None,
              stats_key: str | None = None) -> WriteResult:
        """Add ``entries`` (idempotently) and bump ``counters`` in ``stats_key``, in one round trip.

        A ``NoScriptError`` (the server restarted, failed over, or ran ``SCRIPT FLUSH``) is answered
        once: the script is loaded again and only the entries that got it are sent again — the
        counters are not. Any other error (Redis unreachable, ``OOM``, ``WRONGTYPE``) raises: the
        Flink task then fails and restarts from its last checkpoint; an entry whose ``XADD`` failed
        was not marked, so the replay writes it (no entry is lost; counters are at least once).
        """
        result = WriteResult()
        if not entries and not counters:
            return result
        pipe = self.client.pipeline(transaction=False)
        for entry in entries:
            self._queue(pipe, entry)
        if counters and stats_key:
            for name, value in counters.items():
                if value:
                    pipe.hincrby(stats_key, name, value)
        replies = list(pipe.execute(raise_on_error=False))
        missing = [i for i, r in enumerate(replies[: len(entries)]) if isinstance(r, redis.exceptions.NoScriptError)]
        if missing:
            self._sha = self._load()
            result.script_reloads += 1
            again = self.client.pipeline(transaction=False)
            for i in missing:
                self._queue(again, entries[i])
            for i, reply in zip(missing, again.execute(raise_on_error=False)):
                replies[i] = reply
        for i, reply in enumerate(replies):
            if isinstance(reply, Exception):
                what = f"entry {i} for {entries[i].stream}" if i < len(entries) else f"counter in {stats_key}"
                raise SinkWriteError(f"Redis refused the {what}: {type(reply).__name__}: {reply} (the task restarts from its checkpoint; "
                                     "check Redis memory (maxmemory/noeviction) and the key's type)") from reply
        for reply in replies[: len(entries)]:
            if reply in (0, b"0", None):
                result.duplicates += 1
            else:
                result.added += 1
                result.entry_ids.append(reply.decode() if isinstance(reply, bytes) else str(reply))
        return result

    def close(self) -> None:
        self.client.close()
