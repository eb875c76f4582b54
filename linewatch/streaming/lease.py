"""Shard leases with fencing tokens: one active owner per shard of a worker role.

A lease is a Redis hash ``StreamNames.lease(role, shard)`` with ``owner``, ``token`` and ``until``
(server time, ms). Acquiring a lease that is free or expired bumps ``token``; every write a worker
makes for the shard (``linewatch.streaming.fenced``) first checks, inside the same Lua script, that
``owner`` and ``token`` are still its own. A worker that was frozen (SIGSTOP, a GC pause, a network
partition) and whose lease was taken over therefore cannot write late: its commit is rejected
(*fenced out*) and it drops the shard.

Expiry is judged by the Redis server's clock (``TIME``), so workers on machines with skewed clocks
agree on it.
"""

from __future__ import annotations

from dataclasses import dataclass

import redis

_NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""

ACQUIRE_LUA = _NOW + """
local h = redis.call('HMGET', KEYS[1], 'owner', 'token', 'until')
local owner = h[1] or ''
local token = tonumber(h[2] or '0')
local untl = tonumber(h[3] or '0')
local me = ARGV[1]
local ttl = tonumber(ARGV[2])
if owner ~= '' and owner ~= me and untl > now then
  return {0, owner, tostring(token), tostring(untl - now)}
end
if owner ~= me or untl <= now then
  token = token + 1
end
redis.call('HSET', KEYS[1], 'owner', me, 'token', tostring(token), 'until', tostring(now + ttl))
return {1, me, tostring(token), tostring(ttl)}
"""

RENEW_LUA = _NOW + """
local h = redis.call('HMGET', KEYS[1], 'owner', 'token')
if h[1] ~= ARGV[1] or h[2] ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], 'until', tostring(now + tonumber(ARGV[3])))
return 1
"""

RELEASE_LUA = """
local h = redis.call('HMGET', KEYS[1], 'owner', 'token')
if h[1] ~= ARGV[1] or h[2] ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], 'owner', '', 'until', '0')
return 1
"""


@dataclass(frozen=True)
class ShardLease:
    """A lease this worker holds: ``token`` is the fencing token every write carries."""

    role: str
    shard: int
    key: str
    owner: str
    token: int


@dataclass(frozen=True)
class LeaseHolder:
    """Who holds a shard now (``owner`` is empty when nobody does)."""

    owner: str
    token: int
    remaining_ms: int


class LeaseClient:
    """Acquire, renew and release shard leases of one worker (``owner``) in one role."""

    def __init__(self, client: redis.Redis, owner: str, ttl_ms: int) -> None:
        if ttl_ms < 100:
            raise ValueError("lease ttl_ms must be >= 100 ms")
        self.client = client
        self.owner = owner
        self.ttl_ms = ttl_ms
        self._acquire = client.register_script(ACQUIRE_LUA)
        self._renew = client.register_script(RENEW_LUA)
        self._release = client.register_script(RELEASE_LUA)

    def acquire(self, role: str, shard: int, key: str) -> ShardLease | None:
        """Take the lease if it is free, expired or already ours; None while another owner holds it."""
        got, _owner, token, _ms = self._acquire(keys=[key], args=[self.owner, self.ttl_ms])
        if int(got) != 1:
            return None
        return ShardLease(role, shard, key, self.owner, int(token))

    def renew(self, lease: ShardLease) -> bool:
        """Extend the lease; False when it was taken over (the worker must drop the shard)."""
        return bool(int(self._renew(keys=[lease.key], args=[lease.owner, lease.token, self.ttl_ms])))

    def release(self, lease: ShardLease) -> bool:
        """Give the shard up at once (a peer may take it without waiting for the expiry)."""
        return bool(int(self._release(keys=[lease.key], args=[lease.owner, lease.token])))

    def holder(self, key: str) -> LeaseHolder:
        owner, token, until = self.client.hmget(key, "owner", "token", "until")
        now_s, now_us = self.client.time()
        now_ms = int(now_s) * 1000 + int(now_us) // 1000
        remaining = int(until or 0) - now_ms
        held = bool(owner) and remaining > 0
        return LeaseHolder((owner or b"").decode() if held else "", int(token or 0), max(remaining, 0))
