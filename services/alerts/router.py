"""The alerts service's stage code: verdicts and AlertRequests in, alert records and events out.

Rules (ISA-18.2 / EEMUA 191):

- **One alert per episode.** An episode is an asset's fault (verdicts: key ``verdict:<asset>``
  plus the label) or an ``AlertRequest.episode_key``. While it is raised, repeats update the same
  alert; a different label on the same key clears the old alert and raises a new one; a raise of a
  cleared but unacknowledged alert re-activates it.
- **Priority = severity x criticality** (``records.priority_of``); a rise into a higher priority
  band is an ``escalated`` event, notified again.
- **Shelving.** Events of a shelved alert are recorded, not notified; the shelf expires by itself
  (``tick``).
- **Flood guard.** When more than ``flood_threshold`` alerts were raised in ``flood_window_s``,
  each further alert joins one flood group alert: members are recorded (``notify=False``), the
  group alert is what operators get. The group clears when the flood is over.

Everything a batch changes is committed in one fenced script: records (compare-and-set against
what was read, so an operator's concurrent ack is never overwritten), episode index, events on
``lw:alerts`` and the acknowledgement of the inputs.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import redis

from linewatch.contract import (
    Alert,
    AlertRequest,
    ModelRef,
    StreamNames,
    Verdict,
    encode_message,
)
from linewatch.service_settings import AlertsSettings
from linewatch.streaming import Batch, Commit
from services.alerts.records import PRIORITY_ORDER, AlertRecord, priority_of
from services.alerts.store import alert_event

if TYPE_CHECKING:
    from linewatch.streaming import StreamWorker

log = logging.getLogger("linewatch.services.alerts")

FLOOD_EPISODE = "flood:{line}"


@dataclass(frozen=True)
class Signal:
    """A verdict or an AlertRequest, reduced to what the alert logic needs."""

    source: str
    episode_key: str
    asset_id: str
    asset_type: str
    label: str
    severity: float
    raise_: bool
    message: str
    event_time_ms: int
    entry_id: str
    source_ref: str = ""
    models: dict[str, ModelRef] = field(default_factory=dict)
    details: dict = field(default_factory=dict)


def signal_of(msg: Verdict | AlertRequest, entry_id: str) -> Signal | None:
    """The alert signal of a message; None for a verdict that asks nothing (normal, no change)."""
    if isinstance(msg, AlertRequest):
        return Signal(msg.source, f"{msg.source}:{msg.episode_key}" if not msg.episode_key.startswith(msg.source + ":")
                      else msg.episode_key, msg.asset_id, "", msg.label, msg.severity, msg.state == "raise",
                      msg.message or f"{msg.asset_id}: {msg.label} ({msg.source})", msg.event_time_ms, entry_id,
                      details=dict(msg.details))
    if msg.state == "raised" and msg.label != "normal":
        # a modality whose model extrapolated for this machine (Verdict.extrapolating) is marked: its call counted for less
        mods = ", ".join(f"{m}={lab}" + (" (extrapolates)" if m in msg.extrapolating else "")
                         for m, lab in sorted(msg.modalities.items()))
        text = (f"{msg.asset_id}: {msg.label.replace('_', ' ')} (confidence {msg.confidence:.2f}, "
                f"severity {msg.severity:.2f}; {mods})")
        return Signal("verdict", f"verdict:{msg.asset_id}", msg.asset_id, msg.asset_type, msg.label, msg.severity,
                      True, text, msg.event_time_ms, entry_id, msg.source, dict(msg.models),
                      {"confidence": msg.confidence, "coverage": msg.coverage, "missing": list(msg.missing),
                       "reasons": list(msg.reasons),
                       "extrapolating": {m: list(n) for m, n in sorted(msg.extrapolating.items())}})
    if msg.state == "cleared":
        return Signal("verdict", f"verdict:{msg.asset_id}", msg.asset_id, msg.asset_type, msg.label, 0.0, False,
                      f"{msg.asset_id}: {msg.label.replace('_', ' ')} cleared", msg.event_time_ms, entry_id,
                      msg.source)
    return None


class _Work:
    """Records read and changed while handling one batch (or one tick)."""

    def __init__(self, router: AlertRouter) -> None:
        self.r = router
        self.read: dict[str, bytes | None] = {}
        self.records: dict[str, AlertRecord] = {}
        self.changed: set[str] = set()
        self.events: list[Alert] = []
        self.episodes_set: dict[str, str] = {}
        self.episodes_del: set[str] = set()
        self.new_raises: dict[str, int] = {}

    def load(self, alert_id: str) -> AlertRecord | None:
        if alert_id in self.records:
            return self.records[alert_id]
        raw = self.r.client.hget(self.r.records_key, alert_id)
        self.read[alert_id] = raw
        if raw is None:
            return None
        rec = AlertRecord.from_json(raw)
        self.records[alert_id] = rec
        return rec

    def put(self, rec: AlertRecord) -> None:
        if rec.alert_id not in self.read:
            self.read[rec.alert_id] = None  # a new record: it must not exist yet
        self.records[rec.alert_id] = rec
        self.changed.add(rec.alert_id)

    def episode(self, key: str) -> str | None:
        if key in self.episodes_del:
            return None
        if key in self.episodes_set:
            return self.episodes_set[key]
        raw = self.r.client.hget(self.r.episodes_key, key)
        return raw.decode() if raw else None

    def to_commit(self, commit: Commit, now: int) -> None:
        names = self.r.names
        for aid in sorted(self.changed):
            rec = self.records[aid]
            commit.expect(self.r.records_key, aid, self.read.get(aid))
            commit.hset(self.r.records_key, {aid: rec.to_json()})
            if rec.closed:
                commit.zadd(names.alert_state("closed"), {aid: now})
            if rec.shelved(now):
                commit.zadd(names.alert_state("shelved"), {aid: rec.shelved_until_ms})
            else:
                commit.zrem(names.alert_state("shelved"), [aid])
        commit.hset(self.r.episodes_key, self.episodes_set)
        commit.hdel(self.r.episodes_key, sorted(self.episodes_del - set(self.episodes_set)))
        commit.zadd(names.alert_state("raised"), {k: float(v) for k, v in self.new_raises.items()})
        for ev in self.events:
            commit.xadd(names.alerts, encode_message(ev))  # retention: docs/redis.md


class AlertRouter:
    """Handler of the ``alerting`` role (one lease: a single active router per line)."""

    def __init__(self, client: redis.Redis, names: StreamNames, settings: AlertsSettings, maxlen: int = 100_000,
                 clock: Callable[[], float] = time.time) -> None:
        self.client = client
        self.names = names
        self.settings = settings
        self.maxlen = maxlen
        self.clock = clock
        self.records_key = names.alert_state("records")
        self.episodes_key = names.alert_state("episodes")
        self.flood_key = FLOOD_EPISODE.format(line=settings.line)

    def inputs(self, unit: int) -> list[str]:
        return [*self.names.all_verdict_streams(), self.names.alert_requests()]

    def criticality(self, asset_id: str, asset_type: str) -> float:
        c = self.settings.criticality
        return float(c.get(asset_id, c.get(asset_type, self.settings.default_criticality)))

    # -- the handler ------------------------------------------------------------------------------
    def handle(self, batch: Batch) -> None:
        now = int(self.clock() * 1000)
        work = _Work(self)
        for entry in batch.entries:
            msg = batch.decode(entry, Verdict, AlertRequest)
            if not isinstance(msg, Verdict | AlertRequest):
                continue
            sig = signal_of(msg, entry.entry_id)
            if sig is not None:
                self._apply(work, sig, now)
            batch.ack(entry)
        if batch.entries:
            work.to_commit(batch.commit(batch.shard(batch.entries[0])), now)

    # -- rules ------------------------------------------------------------------------------------
    def _apply(self, work: _Work, sig: Signal, now: int) -> None:
        aid = work.episode(sig.episode_key)
        rec = work.load(aid) if aid else None
        if rec is not None and rec.closed:
            rec = None
        if not sig.raise_:
            if rec is not None and rec.active and (sig.source != "verdict" or rec.label == sig.label):
                self._clear(work, rec, now, sig.message, sig.entry_id, sig.source_ref)
            return
        if rec is not None and rec.label != sig.label:
            if rec.active:
                self._clear(work, rec, now, f"{rec.asset_id}: {rec.label} replaced by {sig.label}", sig.entry_id,
                            sig.source_ref)
            rec = None
        if rec is None:
            self._raise_new(work, sig, now)
            return
        crit = rec.criticality
        update: dict = {"severity": sig.severity, "max_severity": max(rec.max_severity, sig.severity),
                        "event_time_ms": sig.event_time_ms, "verdict_entry_id": sig.entry_id if sig.source == "verdict"
                        else rec.verdict_entry_id, "models": sig.models or rec.models, "details": sig.details or rec.details}
        priority = priority_of(max(rec.max_severity, sig.severity) * crit)
        if not rec.active:  # re-alarm before anyone acknowledged the return to normal
            new = rec.model_copy(update={**update, "active": True, "cleared_at_ms": 0, "updated_at_ms": now,
                                         "priority": max(priority, rec.priority, key=PRIORITY_ORDER.index),
                                         "message": sig.message})
            work.put(new)
            work.events.append(alert_event(new, "raised", now, notify=self._notify(new, now),
                                           source_entry_id=sig.entry_id, source_ref=sig.source_ref))
            return
        if PRIORITY_ORDER.index(priority) > PRIORITY_ORDER.index(rec.priority):
            new = rec.model_copy(update={**update, "priority": priority, "updated_at_ms": now, "message": sig.message})
            work.put(new)
            work.events.append(alert_event(new, "escalated", now, notify=self._notify(new, now),
                                           message=f"{sig.message} - escalated {rec.priority} -> {priority}",
                                           source_entry_id=sig.entry_id, source_ref=sig.source_ref))
            if new.group_id:
                self._escalate_group(work, new, now)
            return
        if abs(sig.severity - rec.severity) >= 0.05:  # keep the estimate fresh without a write per verdict
            work.put(rec.model_copy(update={**update, "updated_at_ms": now}))

    def _notify(self, rec: AlertRecord, now: int) -> bool:
        return not rec.shelved(now) and not rec.group_id

    def _raise_new(self, work: _Work, sig: Signal, now: int) -> None:
        crit = self.criticality(sig.asset_id, sig.asset_type)
        alert_id = f"A-{int(self.client.incr(self.names.alert_state('seq')))}"
        rec = AlertRecord(
            alert_id=alert_id, episode_key=sig.episode_key, source=sig.source, asset_id=sig.asset_id,
            asset_type=sig.asset_type, label=sig.label, message=sig.message, severity=sig.severity,
            max_severity=sig.severity, criticality=crit, priority=priority_of(sig.severity * crit),
            raised_at_ms=now, updated_at_ms=now, event_time_ms=sig.event_time_ms,
            verdict_entry_id=sig.entry_id if sig.source == "verdict" else "", source_ref=sig.source_ref,
            models=sig.models, details=sig.details)
        recent = int(self.client.zcount(self.names.alert_state("raised"), now - self.settings.flood_window_s * 1000,
                                        "+inf")) + len(work.new_raises)
        if recent >= self.settings.flood_threshold:
            group = self._flood_group(work, rec, now)
            rec = rec.model_copy(update={"group_id": group.alert_id})
        work.put(rec)
        work.episodes_set[sig.episode_key] = alert_id
        work.episodes_del.discard(sig.episode_key)
        work.new_raises[alert_id] = now
        work.events.append(alert_event(rec, "raised", now, notify=self._notify(rec, now), source_entry_id=sig.entry_id))

    def _flood_group(self, work: _Work, member: AlertRecord, now: int) -> AlertRecord:
        gid = work.episode(self.flood_key)
        group = work.load(gid) if gid else None
        if group is not None and not group.active:
            group = None
        if group is None:
            gid = f"A-{int(self.client.incr(self.names.alert_state('seq')))}"
            group = AlertRecord(
                alert_id=gid, episode_key=self.flood_key, source="flood", asset_id="fleet", label="alert_flood",
                message=f"alert flood on {self.settings.line}: more than {self.settings.flood_threshold} alerts in "
                        f"{self.settings.flood_window_s // 60} min; further alerts are grouped here",
                severity=member.severity, max_severity=member.severity, criticality=member.criticality,
                priority=member.priority, raised_at_ms=now, updated_at_ms=now, is_group=True,
                members=[member.alert_id], event_time_ms=member.event_time_ms)
            work.put(group)
            work.episodes_set[self.flood_key] = gid
            work.events.append(alert_event(group, "raised", now, notify=not group.shelved(now)))
            return group
        members = [*group.members, member.alert_id]
        priority = max(group.priority, member.priority, key=PRIORITY_ORDER.index)
        escalated = PRIORITY_ORDER.index(priority) > PRIORITY_ORDER.index(group.priority)
        group = group.model_copy(update={"members": members, "priority": priority, "updated_at_ms": now,
                                         "severity": max(group.severity, member.severity),
                                         "max_severity": max(group.max_severity, member.severity)})
        work.put(group)
        work.events.append(alert_event(group, "escalated" if escalated else "group_updated", now,
                                       notify=escalated and not group.shelved(now),
                                       message=f"{group.message} ({len(members)} alerts grouped)"))
        return group

    def _escalate_group(self, work: _Work, member: AlertRecord, now: int) -> None:
        group = work.load(member.group_id)
        if group is None or not group.active or PRIORITY_ORDER.index(member.priority) <= PRIORITY_ORDER.index(group.priority):
            return
        group = group.model_copy(update={"priority": member.priority, "updated_at_ms": now})
        work.put(group)
        work.events.append(alert_event(group, "escalated", now, notify=not group.shelved(now)))

    def _clear(self, work: _Work, rec: AlertRecord, now: int, message: str, entry_id: str,
               source_ref: str = "") -> None:
        new = rec.model_copy(update={"active": False, "cleared_at_ms": now, "updated_at_ms": now})
        work.put(new)
        if new.closed:
            work.episodes_del.add(new.episode_key)
            work.episodes_set.pop(new.episode_key, None)
        work.events.append(alert_event(new, "cleared", now, notify=self._notify(new, now), message=message,
                                       source_entry_id=entry_id, source_ref=source_ref))

    # -- periodic work ----------------------------------------------------------------------------
    def tick(self, worker: StreamWorker) -> None:
        """Shelves that expired, the end of a flood, and retention of closed alerts."""
        now = int(self.clock() * 1000)
        work = _Work(self)
        for raw in self.client.zrangebyscore(self.names.alert_state("shelved"), "-inf", now):
            rec = work.load(raw.decode())
            if rec is not None and rec.shelved_until_ms and not rec.shelved(now):
                new = rec.model_copy(update={"shelved_until_ms": 0, "updated_at_ms": now})
                work.put(new)
                work.events.append(alert_event(new, "unshelved", now, notify=not new.group_id,
                                               message=f"{rec.message} (shelf time over)"))
        gid = work.episode(self.flood_key)
        group = work.load(gid) if gid else None
        if group is not None and group.active:
            recent = int(self.client.zcount(self.names.alert_state("raised"),
                                            now - self.settings.flood_window_s * 1000, "+inf"))
            members_active = any((m := work.load(mid)) is not None and m.active for mid in group.members)
            if recent <= self.settings.flood_threshold and not members_active:
                self._clear(work, group, now, f"alert flood on {self.settings.line} is over", "")
        commit = Commit()
        work.to_commit(commit, now)
        cutoff = now - int(self.settings.history_days * 86_400_000)
        old = [r.decode() for r in self.client.zrangebyscore(self.names.alert_state("closed"), "-inf", cutoff)]
        if old:
            commit.hdel(self.records_key, old)
            commit.zrem(self.names.alert_state("closed"), old)
        raised_old = self.client.zrangebyscore(self.names.alert_state("raised"), "-inf",
                                               now - 2 * self.settings.flood_window_s * 1000)
        commit.zrem(self.names.alert_state("raised"), [r.decode() for r in raised_old])
        if not commit.empty:
            for shard in worker.owned_shards():
                worker.commit(shard, commit)
                break
