"""Bounded, honest stream retention: trim by bytes and age, never an entry a group has not read.

A :class:`RetentionKeeper` runs a pass every ``streams.retention.interval_s``. Per stream family
(``features.thermal``, ``verdicts``, ... see :func:`family_streams`):

1. **Measure.** ``MEMORY USAGE key SAMPLES n`` and ``XINFO STREAM`` (length, first and last id)
   of every stream of the family.
2. **Wanted cut.** The age limit wants every entry older than ``now - max_age_s`` gone (entry ids
   are milliseconds). The byte budget (the family's streams together) wants the oldest entries
   gone until the rest fits: the cut time is found by bisection, each stream's bytes taken as
   spread evenly over its id time span (streams are written at steady rates; an error is
   corrected at the next pass). The wanted cut is the later of the two.
3. **Trim, never past an unread entry.** One Lua script per stream (atomic, so a group cannot
   move between the check and the trim) computes the stream's *floor*: over every consumer
   group, the oldest pending (delivered, unacknowledged) entry, else the entry after the group's
   last-delivered id. It runs ``XTRIM key MINID = min(wanted, floor)``: entries below the floor
   have been read and acknowledged by every group; nothing at or above it is ever removed.
4. **Backpressure instead of loss.** When the wanted cut is beyond the floor (retention would
   have to drop entries some group has not read), the keeper keeps them, sets the
   ``linewatch_retention_over_budget`` gauge and writes an ``AlertRequest`` (source
   ``backpressure``, one episode per stream) to ``StreamNames.alert_requests()``; it writes the
   ``clear`` after ``clear_after_passes`` passes in a row without that. The server's
   ``maxmemory`` with ``noeviction`` (docs/redis.md) is the last line: writes then fail loudly.

A stream with no consumer group has no floor: retention alone decides.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import redis
from prometheus_client import CollectorRegistry, Counter, Gauge

from linewatch.contract import AlertRequest, Modality, StreamNames, encode_message
from linewatch.retention_settings import FamilyRetention, RetentionSettings

log = logging.getLogger("linewatch.retention")

# KEYS[1]: stream; ARGV[1]: wanted MINID ('' = none).
# Returns {trimmed, floor ('' = no group), effective MINID ('' = none), blocked (0/1), groups holding it}.
TRIM_LUA = """
local function parse(id)
  local dash = string.find(id, '-', 1, true)
  if not dash then return tonumber(id), 0 end
  return tonumber(string.sub(id, 1, dash - 1)), tonumber(string.sub(id, dash + 1))
end
local function less(a, b)
  local am, as = parse(a)
  local bm, bs = parse(b)
  return am < bm or (am == bm and as < bs)
end
local key = KEYS[1]
local wanted = ARGV[1]
if redis.call('EXISTS', key) == 0 then return {0, '', '', 0, {}} end
local floor = ''
local holders = {}
local ok, groups = pcall(redis.call, 'XINFO', 'GROUPS', key)
if not ok then return {0, '', '', 0, {}} end
for _, g in ipairs(groups) do
  local info = {}
  for i = 1, #g, 2 do info[g[i]] = g[i + 1] end
  local ms, seq = parse(info['last-delivered-id'])
  local cand = string.format('%.0f-%.0f', ms, seq + 1)
  if tonumber(info['pending']) > 0 then
    local p = redis.call('XPENDING', key, info['name'])
    if p[2] and less(p[2], cand) then cand = p[2] end
  end
  if wanted ~= '' and less(cand, wanted) then holders[#holders + 1] = info['name'] end
  if floor == '' or less(cand, floor) then floor = cand end
end
local effective = wanted
if wanted ~= '' and floor ~= '' and less(floor, wanted) then effective = floor end
local trimmed = 0
if effective ~= '' then trimmed = redis.call('XTRIM', key, 'MINID', '=', effective) end
-- blocked: an entry retention wants gone is still there because some group needs it
local blocked = 0
if effective ~= wanted then
  local first = redis.call('XRANGE', key, '-', '+', 'COUNT', 1)[1]
  if first and less(first[1], wanted) then blocked = 1 else holders = {} end
else
  holders = {}
end
return {trimmed, floor, effective, blocked, holders}
"""


def family_streams(names: StreamNames) -> dict[str, list[str]]:
    """Every stream a family covers, by family name (the keys of ``RetentionSettings.families()``).

    The audit trail (``names.audit``) is not trimmed here: governance's audit store owns it.
    """
    shards = range(names.shards)
    return {
        "features.plc": [names.features_shard(Modality.PLC, s) for s in shards],
        "features.thermal": [names.features_shard(Modality.THERMAL, s) for s in shards],
        "features.audio": [names.features_shard(Modality.AUDIO, s) for s in shards],
        "predictions": names.all_prediction_streams(),
        "shadow": [names.shadow_predictions(m) for m in Modality],
        "verdicts": names.all_verdict_streams(),
        "alerts": [names.alerts],
        "deadletter": [names.deadletter],
        "explanations": [names.explanations()],
        "drift": [names.drift()],
        "feedback": [names.feedback()],
        "alert-requests": [names.alert_requests()],
    }


def id_ms(entry_id: str | bytes) -> int:
    """Millisecond part of a stream entry id.

    >>> id_ms("1700000000123-4"), id_ms(b"5")
    (1700000000123, 5)
    """
    text = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
    return int(text.split("-", 1)[0])


@dataclass
class StreamState:
    """One stream as measured at the start of a pass."""

    stream: str
    length: int
    bytes: int
    first_ms: int
    last_ms: int

    def bytes_after(self, cut_ms: float) -> float:
        """Estimated bytes left after dropping entries older than ``cut_ms`` (even spread over ids)."""
        if self.length == 0 or cut_ms <= self.first_ms:
            return float(self.bytes)
        if cut_ms > self.last_ms:
            return 0.0
        span = self.last_ms - self.first_ms
        return self.bytes * (self.last_ms - cut_ms + 1) / (span + 1)


def byte_cut_ms(states: Sequence[StreamState], budget: int) -> int | None:
    """The earliest cut time (ms) that brings the streams' estimated bytes within ``budget``.

    >>> s = [StreamState("a", 100, 1000, 0, 99), StreamState("b", 100, 1000, 0, 99)]
    >>> byte_cut_ms(s, 1000), byte_cut_ms(s, 5000)
    (50, None)
    """
    live = [s for s in states if s.length]
    if sum(s.bytes for s in live) <= budget:
        return None
    lo = min(s.first_ms for s in live)
    hi = max(s.last_ms for s in live) + 1
    while lo < hi:  # smallest cut with bytes_after(cut) <= budget (monotone non-increasing in cut)
        mid = (lo + hi) // 2
        if sum(s.bytes_after(mid) for s in live) <= budget:
            hi = mid
        else:
            lo = mid + 1
    return lo


@dataclass
class StreamReport:
    """What one pass did to one stream."""

    family: str
    stream: str
    length: int
    bytes: int
    wanted: str  #: MINID retention asked for ('' = nothing to trim)
    floor: str  #: oldest entry some group still needs ('' = no group)
    trimmed: int
    blocked: bool  #: retention wanted entries some group has not read; they were kept
    holders: list[str] = field(default_factory=list)  #: the groups holding retention back


class RetentionMetrics:
    """Prometheus metrics of the keeper, in its own registry."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        labels = ["family", "stream"]
        self.bytes = Gauge("linewatch_stream_bytes", "Bytes of the stream as Redis counts them (MEMORY USAGE, "
                           "sampled), at the start of the last pass.", labels, registry=r)
        self.entries = Gauge("linewatch_stream_entries", "Entries in the stream (XLEN) at the start of the last "
                             "pass.", labels, registry=r)
        self.budget = Gauge("linewatch_retention_budget_bytes", "Byte budget of the family (all its streams).",
                            ["family"], registry=r)
        self.trimmed = Counter("linewatch_retention_trimmed_entries", "Entries removed by retention (every "
                               "group had read them).", labels, registry=r)
        self.over_budget = Gauge("linewatch_retention_over_budget", "1 while retention is held back by entries a "
                                 "consumer group has not read (backpressure alert raised).", labels, registry=r)
        self.used_memory = Gauge("linewatch_redis_used_memory_bytes", "INFO memory used_memory.", registry=r)
        self.maxmemory = Gauge("linewatch_redis_maxmemory_bytes", "INFO memory maxmemory (0: unlimited).",
                               registry=r)
        self.passes = Counter("linewatch_retention_passes", "Trimming passes completed.", registry=r)


class RetentionKeeper:
    """Enforces ``streams.retention`` on every stream family (see the module docstring)."""

    def __init__(self, client: redis.Redis, names: StreamNames, settings: RetentionSettings,
                 metrics: RetentionMetrics | None = None, clock: Callable[[], float] = time.time,
                 families: Mapping[str, list[str]] | None = None) -> None:
        self.client = client
        self.names = names
        self.settings = settings
        self.metrics = metrics or RetentionMetrics()
        self.clock = clock
        self.streams = dict(families) if families is not None else family_streams(names)
        self._trim = client.register_script(TRIM_LUA)
        self._blocked: dict[str, int] = {}  # stream -> passes in a row without blocking (while raised)
        self._stop = threading.Event()
        for family, retention in settings.families().items():
            if retention.max_bytes is not None:
                self.metrics.budget.labels(family=family).set(retention.max_bytes)

    # -- one pass ------------------------------------------------------------------------------------
    def run_once(self) -> list[StreamReport]:
        """Measure and trim every family once; returns what was done per stream."""
        now_ms = int(self.clock() * 1000)
        reports: list[StreamReport] = []
        for family, retention in self.settings.families().items():
            streams = self.streams.get(family, [])
            if streams:
                reports += self._family(family, retention, streams, now_ms)
        self._memory_info()
        self.metrics.passes.inc()
        return reports

    def _measure(self, stream: str) -> StreamState | None:
        try:
            info: dict[str, Any] = self.client.xinfo_stream(stream)  # type: ignore[assignment]
        except redis.ResponseError:  # no such key
            return None
        length = int(info.get("length") or 0)
        if length == 0:
            return StreamState(stream, 0, 0, 0, 0)
        first = info.get("first-entry")
        last = info.get("last-entry")
        first_id = first[0] if first else info.get("recorded-first-entry-id", b"0-0")
        last_id = last[0] if last else info.get("last-generated-id", b"0-0")
        size: Any = self.client.memory_usage(stream, samples=self.settings.memory_samples) or 0
        return StreamState(stream, length, int(size), id_ms(first_id), id_ms(last_id))

    def _family(self, family: str, retention: FamilyRetention, streams: list[str],
                now_ms: int) -> list[StreamReport]:
        states = [s for s in (self._measure(name) for name in streams) if s is not None]
        cuts: list[int] = []
        if retention.max_age_s is not None:
            cuts.append(max(now_ms - int(retention.max_age_s * 1000), 0))
        if retention.max_bytes is not None:
            cut = byte_cut_ms(states, retention.max_bytes)
            if cut is not None:
                cuts.append(cut)
        wanted = f"{max(cuts)}-0" if cuts else ""
        reports = []
        for st in states:
            labels = {"family": family, "stream": st.stream}
            self.metrics.bytes.labels(**labels).set(st.bytes)
            self.metrics.entries.labels(**labels).set(st.length)
            want = wanted if st.length and wanted and id_ms(wanted) > st.first_ms else ""
            trimmed, floor, _, blocked, holders = self._trim(keys=[st.stream], args=[want])
            report = StreamReport(family, st.stream, st.length, st.bytes, want, _text(floor), int(trimmed),
                                  bool(int(blocked)), [_text(h) for h in holders])
            if report.trimmed:
                self.metrics.trimmed.labels(**labels).inc(report.trimmed)
            self._backpressure(report)
            reports.append(report)
        return reports

    # -- backpressure --------------------------------------------------------------------------------
    def _backpressure(self, r: StreamReport) -> None:
        labels = {"family": r.family, "stream": r.stream}
        if r.blocked:
            self.metrics.over_budget.labels(**labels).set(1)
            if r.stream not in self._blocked:
                msg = (f"retention of {r.family} wants entries of {r.stream} older than {r.wanted} gone, but "
                       f"group(s) {', '.join(r.holders)} have not read them (oldest needed: {r.floor}); kept "
                       f"them: {r.bytes} bytes, {r.length} entries. A consumer is down or too slow: scale it, "
                       f"or `XGROUP DESTROY` a group nobody runs")
                log.error("backpressure", extra={"stream": r.stream, "family": r.family, "groups": r.holders})
                if not self._request(r, "raise", msg):
                    return  # not written (server full?): try again next pass
            self._blocked[r.stream] = 0
            return
        self.metrics.over_budget.labels(**labels).set(0)
        if r.stream in self._blocked:
            self._blocked[r.stream] += 1
            if self._blocked[r.stream] >= self.settings.clear_after_passes and self._request(
                    r, "clear", f"consumers of {r.stream} caught up: retention of {r.family} holds again"):
                del self._blocked[r.stream]

    def _request(self, r: StreamReport, state: str, message: str) -> bool:
        """Write the AlertRequest; False when the server refused it (e.g. OOM): the caller retries."""
        req = AlertRequest(source="backpressure", episode_key=f"backpressure:retention:{r.stream}",
                           asset_id="fleet", label="backpressure", severity=0.7 if state == "raise" else 0.0,
                           state=state, message=message,  # type: ignore[arg-type]
                           details={"stream": r.stream, "family": r.family, "groups": r.holders,
                                    "bytes": r.bytes, "entries": r.length, "oldest_unread": r.floor},
                           event_time_ms=int(self.clock() * 1000))
        try:
            self.client.xadd(self.names.alert_requests(), encode_message(req))  # type: ignore[arg-type]
        except redis.ResponseError as exc:
            log.error("could not write the backpressure alert request", extra={"stream": r.stream, "error": str(exc)})
            return False
        return True

    @property
    def backpressured(self) -> list[str]:
        """Streams whose backpressure alert is raised now."""
        return sorted(self._blocked)

    def _memory_info(self) -> None:
        try:
            info: dict[str, Any] = self.client.info("memory")  # type: ignore[assignment]
        except redis.RedisError:
            return
        self.metrics.used_memory.set(int(info.get("used_memory", 0)))
        self.metrics.maxmemory.set(int(info.get("maxmemory", 0)))

    # -- the loop ------------------------------------------------------------------------------------
    def stop(self) -> None:
        self._stop.set()

    def run(self, on_pass: Callable[[list[StreamReport]], None] | None = None) -> None:
        """A pass every ``interval_s`` until :meth:`stop`; a failed pass is logged and retried."""
        warn_eviction_policy(self.client)
        while not self._stop.is_set():
            try:
                reports = self.run_once()
                if on_pass is not None:
                    on_pass(reports)
            except Exception as exc:  # a failed pass must not stop retention: logged, retried next interval
                log.warning("retention pass failed; retrying", extra={"error": f"{type(exc).__name__}: {exc}"})
            self._stop.wait(self.settings.interval_s)


def warn_eviction_policy(client: redis.Redis) -> str | None:
    """Log an error when the server may evict keys (any ``maxmemory-policy`` but ``noeviction``):
    an evicted stream is silent data loss. Returns the policy (None when CONFIG is not allowed)."""
    try:
        config: dict[str, Any] = client.config_get("maxmemory-policy")  # type: ignore[assignment]
        policy = config.get("maxmemory-policy")
    except redis.RedisError:
        return None
    text = _text(policy) if policy is not None else None
    if text is not None and text != "noeviction":
        log.error("the Redis server evicts keys when full: set `maxmemory-policy noeviction` (docs/redis.md)",
                  extra={"maxmemory_policy": text})
    return text


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
