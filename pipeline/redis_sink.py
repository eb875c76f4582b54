"""Idempotent, pipelined XADD of contract messages into Redis Streams.

Redis has no transaction Flink can join, so the job delivers **at least once** (it replays
from its last checkpoint after a failure) and makes the writes **idempotent**:

* feature entries carry a per-asset, per-modality *high-water mark* (``HSET
  <prefix>:ingest:hwm:<modality> <asset> <event_time_ms>``): the Lua script adds an entry only
  if its event time is newer than the mark, and moves the mark in the same atomic step. Per
  asset the job emits strictly increasing event times (frames and clips by timestamp, PLC
  windows by window end), so a replay after a restart can never add an entry twice, however
  long ago the original was written, and the mark costs one hash field per asset.
* dead letters are not ordered; each carries a dedup key (``SET NX EX``) derived from its raw
  reference, reason and detail, kept ``dedup_ttl_s``.

All entries produced from one input element go to Redis in one pipelined round trip, which
is flushed before the element's processing returns: nothing is buffered across elements, so
a checkpoint never covers an entry that is not yet in Redis (PyFlink has no end-of-bundle or
pre-checkpoint hook for user functions, so a cross-element buffer would lose entries).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import redis

from linewatch.contract import Message, encode_message
from linewatch.redis_connection import RedisConnectionSettings, redis_client

# KEYS[1] stream, KEYS[2] hwm hash or dedup key.
# ARGV[1] 'hwm' | 'nx'; ARGV[2] hash field (asset) | ttl seconds; ARGV[3] event time (hwm);
# ARGV[4] maxlen; ARGV[5..] field, value, field, value ...
# Returns the new entry id, or 0 if the entry was a duplicate.
XADD_ONCE_LUA = """
if ARGV[1] == 'hwm' then
  local cur = redis.call('HGET', KEYS[2], ARGV[2])
  if cur and tonumber(cur) >= tonumber(ARGV[3]) then return 0 end
  redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
else
  if not redis.call('SET', KEYS[2], '1', 'NX', 'EX', tonumber(ARGV[2])) then return 0 end
end
local args = {KEYS[1], 'MAXLEN', '~', ARGV[4], '*'}
for i = 5, #ARGV do args[#args + 1] = ARGV[i] end
return redis.call('XADD', unpack(args))
"""


@dataclass(frozen=True)
class PendingEntry:
    """One entry to add: the stream, the message, and how duplicates are recognised."""

    stream: str
    message: Message
    hwm_key: str | None = None  # hash of per-asset marks (feature entries)
    hwm_field: str | None = None  # the asset id
    hwm_value: int | None = None  # event time; must grow per asset
    dedup_key: str | None = None  # SET NX key (dead letters)


def dedup_key_for(prefix: str, *parts: str) -> str:
    """Stable dedup key from the parts that identify a record.

    >>> dedup_key_for("lw", "plc/a.csv:3", "truncated")
    'lw:ingest:dedup:6f0c3309e56626fc38c64358'
    """
    digest = hashlib.sha1("\x1f".join(parts).encode("utf-8", errors="replace")).hexdigest()[:24]
    return f"{prefix}:ingest:dedup:{digest}"


@dataclass
class WriteResult:
    added: int = 0
    duplicates: int = 0
    entry_ids: list[str] = field(default_factory=list)


class RedisStreamWriter:
    """Writes :class:`PendingEntry` batches with one pipelined round trip per batch."""

    def __init__(self, url: str, maxlen: int, dedup_ttl_s: int, connection: RedisConnectionSettings | None = None) -> None:
        self.client = redis_client(connection or RedisConnectionSettings(), url,  # credentials + TLS: docs/redis-security.md
                                   socket_timeout=10, socket_connect_timeout=5, health_check_interval=30)
        self.maxlen = maxlen
        self.dedup_ttl_s = dedup_ttl_s
        self._sha = self.client.script_load(XADD_ONCE_LUA)

    def write(self, entries: list[PendingEntry], counters: dict[str, int] | None = None, stats_key: str | None = None) -> WriteResult:
        """Add ``entries`` (idempotently) and bump ``counters`` in ``stats_key``, in one round trip.

        Raises ``redis.RedisError`` if Redis is unreachable: the Flink task then fails and
        restarts from its last checkpoint (no entry is lost, none is duplicated).
        """
        result = WriteResult()
        if not entries and not counters:
            return result
        pipe = self.client.pipeline(transaction=False)
        for entry in entries:
            fields = encode_message(entry.message)
            flat: list[bytes | str | int] = []
            for name, value in fields.items():
                flat += [name, value]
            if entry.hwm_key is not None:
                keys = [entry.stream, entry.hwm_key]
                args: list[bytes | str | int] = ["hwm", entry.hwm_field or "", int(entry.hwm_value or 0), self.maxlen]
            else:
                keys = [entry.stream, entry.dedup_key or dedup_key_for("lw", entry.stream, str(fields.get("body")))]
                args = ["nx", self.dedup_ttl_s, 0, self.maxlen]
            pipe.evalsha(self._sha, len(keys), *keys, *args, *flat)
        if counters and stats_key:
            for name, value in counters.items():
                if value:
                    pipe.hincrby(stats_key, name, value)
        try:
            replies = pipe.execute()
        except redis.exceptions.NoScriptError:  # the server restarted or ran SCRIPT FLUSH: load, retry once
            self._sha = self.client.script_load(XADD_ONCE_LUA)
            return self.write(entries, counters, stats_key)
        for reply in replies[: len(entries)]:
            if reply in (0, b"0", None):
                result.duplicates += 1
            else:
                result.added += 1
                result.entry_ids.append(reply.decode() if isinstance(reply, bytes) else str(reply))
        return result

    def close(self) -> None:
        self.client.close()
