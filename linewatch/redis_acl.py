"""Redis ACL rules of each linewatch stage: only the commands it sends, only keys under the stream prefix.

One ACL user per stage keeps a compromised or buggy process from touching what is not its own:
the ingestion job cannot read or delete streams, no stage can ``FLUSHALL``, ``CONFIG`` or ``KEYS``,
and nothing outside ``<prefix>:*`` is reachable. Commands a Lua script runs are checked against the
same rules, so they are listed too. ``linewatch redis acl`` prints the lines for an ACL file;
tests/core/test_redis_security.py and tests/pipeline/test_redis_tls_flink.py run the real stages
under them against a real server (a missing command shows up there as ``NOPERM``).

>>> acl_rules("ingest", "lw").split()[:5]
['~lw:*', 'resetchannels', '-@all', '+ping', '+script|load']
>>> {"+evalsha", "+xadd", "+exists", "+cluster|slots"} <= set(acl_rules("ingest", "lw").split())
True
>>> acl_line("ingest", "lw-ingest", "lw", password_sha256="0" * 64).startswith("user lw-ingest on #000")
True
"""

from __future__ import annotations

import hashlib

# Commands per stage (Redis 7 ACL syntax: +command or +command|subcommand).
STAGE_COMMANDS: dict[str, tuple[str, ...]] = {
    # pipeline: the Flink job (sink script, probe/stats hashes) and its runner (probe, stats, rollover),
    # plus the supervisor's landing-zone lease (SET NX PX, GET, PTTL; renew/release scripts: GET, PEXPIRE,
    # DEL) and its health hash (HSET, EXPIRE; a seen probe token is removed with HDEL); exists: the sink's
    # dead-letter dedup check; cluster|slots: the sink asks whether the server is a Redis Cluster
    # (pipeline/redis_sink.py connect; a single server answers "cluster support disabled")
    "ingest": ("ping", "script|load", "eval", "evalsha", "xadd", "get", "set", "del", "pttl", "pexpire", "expire",
               "hget", "hset", "hdel", "hexists", "hgetall", "hincrby", "exists", "cluster|slots"),
    # services: inference, fusion, alerts (router, notifiers, the alert store behind `linewatch alerts`
    # and the HTTP API) on linewatch.streaming (consumer groups, leases and fencing in Lua, metrics)
    "services": (
        "ping", "time", "script|load", "evalsha", "multi", "exec", "watch", "unwatch",
        "xadd", "xack", "xautoclaim", "xgroup|create", "xinfo|groups", "xlen", "xpending", "xrange", "xrevrange",
        "xread", "xreadgroup", "hget", "hmget", "hset", "hdel", "hvals", "incrby", "pexpire",
        "zadd", "zcard", "zcount", "zrangebyscore", "zrem", "zremrangebyscore",
    ),
}

STAGE_CHANNELS: dict[str, bool] = {}  # stages that publish on <prefix>:* channels

# what redis-py's cluster client sends to discover the cluster (slot map, command table)
CLUSTER_COMMANDS: tuple[str, ...] = ("cluster|slots", "command")


def acl_rules(stage: str, prefix: str, cluster: bool = False) -> str:
    """The ACL rules (keys, channels, commands) of ``stage`` for streams under ``prefix``; ``cluster``:
    for a Redis Cluster (adds :data:`CLUSTER_COMMANDS`)."""
    try:
        commands = STAGE_COMMANDS[stage]
    except KeyError:
        raise ValueError(f"unknown stage {stage!r}: one of {', '.join(STAGE_COMMANDS)}") from None
    channels = f"&{prefix}:*" if STAGE_CHANNELS.get(stage) else "resetchannels"
    extra = tuple(c for c in CLUSTER_COMMANDS if c not in commands) if cluster else ()
    return " ".join([f"~{prefix}:*", channels, "-@all", *(f"+{c}" for c in (*commands, *extra))])


def password_sha256(password: str) -> str:
    """The hex SHA-256 an ACL file stores instead of the password (``#<hash>``)."""
    return hashlib.sha256(password.encode()).hexdigest()


def acl_line(stage: str, user: str, prefix: str, password_sha256: str, cluster: bool = False) -> str:
    """``user <name> on #<sha256> <rules>``: one line of a Redis ACL file (no clear-text password)."""
    return f"user {user} on #{password_sha256} {acl_rules(stage, prefix, cluster)}"
