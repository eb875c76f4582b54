"""Reads and writes of a shard under its lease, each one Lua script that first checks the fence.

- :meth:`FencedShard.read_new` — ``XREADGROUP ... >`` on the shard's input streams, only while the
  lease is still ours (a worker that lost its shard cannot pull entries its successor would then
  see out of order).
- :meth:`FencedShard.claim_pending` — ``XAUTOCLAIM`` (min idle 0) of the shard's pending entries in
  id order, with their delivery counts (``XPENDING``): used after acquiring a shard (the previous
  owner's unacknowledged entries come first) and to retry after a failure.
- :meth:`FencedShard.commit` — applies a :class:`Commit` (outputs, state, acknowledgements)
  atomically, or nothing when the lease moved on (:class:`FencedOut`).

An output written with an explicit entry id (``Commit.xadd(..., entry_id=source_id)``) is
idempotent: a redelivered input whose output already exists is acknowledged without a second
entry. If the id is smaller than the stream's top but absent, the script refuses the whole commit
(:class:`OrderViolation`): an output would be lost or reordered, and that must never pass silently.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import redis

from linewatch.streaming.lease import ShardLease

_FENCE = """
local h = redis.call('HMGET', KEYS[1], 'owner', 'token')
if h[1] ~= ARGV[1] or h[2] ~= ARGV[2] then
  return {'fenced', h[1] or '', h[2] or ''}
end
"""

# KEYS: lease, streams...; ARGV: owner, token, group, consumer, count, then one start id per stream
READ_NEW_LUA = _FENCE + """
local n = #KEYS - 1
local args = {'XREADGROUP', 'GROUP', ARGV[3], ARGV[4], 'COUNT', ARGV[5], 'STREAMS'}
for i = 2, #KEYS do args[#args + 1] = KEYS[i] end
for i = 1, n do args[#args + 1] = '>' end
local got = redis.call(unpack(args))
if not got then
  local tops = {}
  for i = 2, #KEYS do
    local last = redis.call('XREVRANGE', KEYS[i], '+', '-', 'COUNT', 1)
    tops[#tops + 1] = (last[1] and last[1][1]) or '0-0'
  end
  return {'empty', tops}
end
return {'ok', got}
"""

# KEYS: lease, stream; ARGV: owner, token, group, consumer, count, cursor
CLAIM_LUA = _FENCE + """
local r = redis.call('XAUTOCLAIM', KEYS[2], ARGV[3], ARGV[4], 0, ARGV[6], 'COUNT', ARGV[5])
local entries = r[2]
local counts = {}
if #entries > 0 then
  local first = entries[1][1]
  local last = entries[#entries][1]
  local p = redis.call('XPENDING', KEYS[2], ARGV[3], first, last, #entries + 16)
  for _, row in ipairs(p) do counts[#counts + 1] = row[1]; counts[#counts + 1] = row[4] end
end
return {'ok', r[1], entries, r[3] or {}, counts}
"""

# KEYS: lease, then every key the ops name (by index); ARGV: owner, token, then ops:
#   'xadd' keyidx maxlen id nfields f1 v1 ...   (id '*' = new id; maxlen '0' = none)
#   'xack' keyidx group nids id...
#   'hset' keyidx nfields f1 v1 ...
#   'hdel' keyidx nfields f1 ...
#   'zadd' keyidx n score1 m1 ...
#   'zrem' keyidx n m1 ...
#   'hcas' keyidx field expected      (checked for every hcas before any write: optimistic concurrency)
COMMIT_LUA = _FENCE + """
local k = 3
while k <= #ARGV do
  local op = ARGV[k]
  if op == 'hcas' then
    local cur = redis.call('HGET', KEYS[tonumber(ARGV[k + 1])], ARGV[k + 2]) or ''
    if cur ~= ARGV[k + 3] then return {'conflict', KEYS[tonumber(ARGV[k + 1])], ARGV[k + 2]} end
    k = k + 4
  elseif op == 'xadd' then k = k + 5 + 2 * tonumber(ARGV[k + 4])
  elseif op == 'xack' then k = k + 4 + tonumber(ARGV[k + 3])
  elseif op == 'hset' or op == 'zadd' then k = k + 3 + 2 * tonumber(ARGV[k + 2])
  else k = k + 3 + tonumber(ARGV[k + 2]) end
end
local i = 3
local written, dups = 0, 0
local ids = {}
while i <= #ARGV do
  local op = ARGV[i]
  local key = KEYS[tonumber(ARGV[i + 1])]
  if op == 'xadd' then
    local maxlen, id, nf = ARGV[i + 2], ARGV[i + 3], tonumber(ARGV[i + 4])
    local args = {'XADD', key}
    if maxlen ~= '0' then
      args[#args + 1] = 'MAXLEN'; args[#args + 1] = '~'; args[#args + 1] = maxlen
    end
    args[#args + 1] = id
    for j = 1, 2 * nf do args[#args + 1] = ARGV[i + 4 + j] end
    local r = redis.pcall(unpack(args))
    if type(r) == 'table' and r.err then
      if id ~= '*' and string.find(r.err, 'equal or smaller', 1, true) then
        local there = redis.call('XRANGE', key, id, id)
        if #there == 0 then
          return {'order', key, id}
        end
        dups = dups + 1
      else
        return redis.error_reply(r.err)
      end
    else
      written = written + 1
      ids[#ids + 1] = r
    end
    i = i + 5 + 2 * nf
  elseif op == 'xack' then
    local n = tonumber(ARGV[i + 3])
    local args = {'XACK', key, ARGV[i + 2]}
    for j = 1, n do args[#args + 1] = ARGV[i + 3 + j] end
    if n > 0 then redis.call(unpack(args)) end
    i = i + 4 + n
  elseif op == 'hset' or op == 'hdel' or op == 'zadd' or op == 'zrem' then
    local n = tonumber(ARGV[i + 2])
    local width = (op == 'hset' or op == 'zadd') and 2 or 1
    local args = {string.upper(op), key}
    for j = 1, width * n do args[#args + 1] = ARGV[i + 2 + j] end
    if n > 0 then redis.call(unpack(args)) end
    i = i + 3 + width * n
  elseif op == 'hcas' then
    i = i + 4
  else
    return redis.error_reply('unknown commit op ' .. tostring(op))
  end
end
return {'ok', written, dups, ids}
"""


class FencedOut(RuntimeError):
    """The shard's lease belongs to someone else now: this worker must drop the shard."""


class Conflict(RuntimeError):
    """Someone else changed a hash field the commit depends on (``Commit.expect``): re-read, retry."""


class OrderViolation(RuntimeError):
    """An output would land below the stream's top without existing: refusing to lose it."""


@dataclass(frozen=True)
class Entry:
    """One stream entry as read: stream key, id, raw fields, and how often it was delivered."""

    stream: str
    entry_id: str
    fields: Mapping[bytes, bytes]
    deliveries: int = 1


@dataclass
class Commit:
    """Writes of one shard that succeed together or not at all (see :meth:`FencedShard.commit`)."""

    _keys: list[str] = field(default_factory=list)
    _args: list[bytes | str | int | float] = field(default_factory=list)
    n_outputs: int = 0
    n_acks: int = 0

    def _key(self, key: str) -> int:
        if key not in self._keys:
            self._keys.append(key)
        return self._keys.index(key) + 2  # KEYS[1] is the lease

    def xadd(self, stream: str, fields: Mapping[str | bytes, bytes | str], entry_id: str = "*",
             maxlen: int | None = None) -> None:
        """Append an entry; with an explicit ``entry_id`` a repeat of the same id is skipped."""
        self._args += ["xadd", self._key(stream), maxlen or 0, entry_id, len(fields)]
        for k, v in fields.items():
            self._args += [k, v]
        self.n_outputs += 1

    def ack(self, stream: str, group: str, entry_ids: Sequence[str]) -> None:
        if entry_ids:
            self._args += ["xack", self._key(stream), group, len(entry_ids), *entry_ids]
            self.n_acks += len(entry_ids)

    def hset(self, key: str, mapping: Mapping[str, bytes | str]) -> None:
        if mapping:
            self._args += ["hset", self._key(key), len(mapping)]
            for k, v in mapping.items():
                self._args += [k, v]

    def hdel(self, key: str, names: Sequence[str]) -> None:
        if names:
            self._args += ["hdel", self._key(key), len(names), *names]

    def zadd(self, key: str, mapping: Mapping[str, float]) -> None:
        if mapping:
            self._args += ["zadd", self._key(key), len(mapping)]
            for member, score in mapping.items():
                self._args += [score, member]

    def zrem(self, key: str, members: Sequence[str]) -> None:
        if members:
            self._args += ["zrem", self._key(key), len(members), *members]

    def expect(self, key: str, name: str, value: bytes | str | None) -> None:
        """Commit only if hash field ``name`` still holds ``value`` (None: absent)."""
        self._args += ["hcas", self._key(key), name, value if value is not None else ""]

    @property
    def empty(self) -> bool:
        return not self._args


@dataclass(frozen=True)
class CommitResult:
    written: int
    duplicates: int
    ids: list[str]


@dataclass(frozen=True)
class ClaimResult:
    entries: list[Entry]
    cursor: str
    deleted: list[str]  #: pending ids whose entries retention already removed


def _s(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _fields(raw: Sequence[bytes] | None) -> dict[bytes, bytes]:
    raw = raw or []
    return {raw[i]: raw[i + 1] for i in range(0, len(raw), 2)}


class FencedShard:
    """Lua-script access to one leased shard for one consumer group."""

    def __init__(self, client: redis.Redis, group: str, consumer: str) -> None:
        self.client = client
        self.group = group
        self.consumer = consumer
        self._read = client.register_script(READ_NEW_LUA)
        self._claim = client.register_script(CLAIM_LUA)
        self._commit = client.register_script(COMMIT_LUA)

    @staticmethod
    def _check(reply: list, lease: ShardLease) -> None:
        if _s(reply[0]) == "fenced":
            raise FencedOut(
                f"lease {lease.key} moved to {_s(reply[1]) or 'nobody'} (token {_s(reply[2]) or '?'}), "
                f"ours was token {lease.token}"
            )

    def read_new(self, lease: ShardLease, streams: Sequence[str], count: int) -> tuple[list[Entry], dict[str, str]]:
        """New entries (at most ``count`` per stream); when none, the top id of each stream."""
        reply = self._read(keys=[lease.key, *streams], args=[lease.owner, lease.token, self.group, self.consumer, count])
        self._check(reply, lease)
        if _s(reply[0]) == "empty":
            return [], {s: _s(t) for s, t in zip(streams, reply[1])}
        out: list[Entry] = []
        for stream, entries in reply[1]:
            for entry_id, raw in entries:
                out.append(Entry(_s(stream), _s(entry_id), _fields(raw), 1))
        return out, {}

    def claim_pending(self, lease: ShardLease, stream: str, count: int, cursor: str = "0-0") -> ClaimResult:
        """Take over pending entries of ``stream`` from ``cursor`` (every consumer's), oldest first."""
        reply = self._claim(keys=[lease.key, stream], args=[lease.owner, lease.token, self.group, self.consumer,
                                                            count, cursor])
        self._check(reply, lease)
        _, nxt, entries, deleted, counts = reply
        by_id = {_s(counts[i]): int(counts[i + 1]) for i in range(0, len(counts), 2)}
        out = [Entry(stream, _s(eid), _fields(raw), by_id.get(_s(eid), 1)) for eid, raw in entries if raw is not None]
        gone = [_s(d) for d in deleted] + [_s(eid) for eid, raw in entries if raw is None]
        return ClaimResult(out, _s(nxt), gone)

    def commit(self, lease: ShardLease, commit: Commit) -> CommitResult:
        """Apply ``commit`` if the lease is still ours; raise :class:`FencedOut` otherwise."""
        if commit.empty:
            return CommitResult(0, 0, [])
        reply = self._commit(keys=[lease.key, *commit._keys], args=[lease.owner, lease.token, *commit._args])
        self._check(reply, lease)
        if _s(reply[0]) == "conflict":
            raise Conflict(f"{_s(reply[1])} field {_s(reply[2])} changed since it was read; retry")
        if _s(reply[0]) == "order":
            raise OrderViolation(
                f"output {_s(reply[2])} on {_s(reply[1])} is below the stream's top but absent: "
                "an earlier input was skipped; refusing the commit (nothing written, nothing acknowledged)"
            )
        return CommitResult(int(reply[1]), int(reply[2]), [_s(i) for i in reply[3]])
