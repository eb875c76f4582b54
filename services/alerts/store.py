"""The alert store and the operator actions: the Python API behind the CLI, the HTTP API and the web app.

Usage::

    store = AlertStore(redis_client(settings.redis), StreamNames("lw", 4))   # linewatch.redis_connection
    for rec in store.list():                       # open alerts, most urgent first
        print(rec.alert_id, rec.asset_id, rec.label, rec.state(store.now_ms()), rec.priority)
    store.ack("A-12", user="maria")                # unacknowledged -> acknowledged
    store.shelve("A-12", user="maria", duration_s=3600, reason="bearing ordered")
    store.confirm("A-12", user="maria", true_label="bearing_wear", comment="DE bearing replaced")
    store.reject("A-13", user="maria", comment="camera was knocked")   # -> Feedback, false alarm

Every action is applied atomically with optimistic concurrency (``WATCH``/``MULTI``): the record,
the event on ``lw:alerts`` (so MQTT/webhooks see it), and for confirm/reject a ``Feedback`` entry on
``StreamNames.feedback()``. The alerts service writes the same records with a compare-and-set, so
neither side loses the other's update. Every action names the acting user.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import redis

from linewatch.contract import (
    Alert,
    Feedback,
    StreamNames,
    decode_message,
    encode_message,
)
from services.alerts.records import PRIORITY_ORDER, AlertRecord, severity_class

#: The longest an alert may be shelved: shelving is temporary by design (ISA-18.2 5.6.4).
MAX_SHELVE_S = 24 * 3600


class AlertNotFound(KeyError):
    """No alert with that id."""


class InvalidAction(ValueError):
    """The action does not fit the alert's state (the message says why and what to do)."""


def alert_event(rec: AlertRecord, event: str, now_ms: int, *, notify: bool = True, user: str = "",
                comment: str = "", message: str | None = None, source_entry_id: str = "",
                source_ref: str | None = None) -> Alert:
    """The ``lw:alerts`` entry describing ``event`` of ``rec`` (its state after the event).

    ``source_ref``: the raw file behind the evidence that caused this event (default: the one that
    raised the alert)."""
    return Alert(
        asset_id=rec.asset_id, severity=severity_class(rec.priority), label=rec.label,
        message=message if message is not None else rec.message, verdict_entry_id=rec.verdict_entry_id,
        created_at_ms=now_ms, alert_id=rec.alert_id, event=event, state=rec.state(now_ms), priority=rec.priority,
        score=min(rec.score, 1.0), severity_estimate=rec.severity, criticality=rec.criticality, source=rec.source,
        episode_key=rec.episode_key, group_id=rec.group_id, notify=notify, user=user, comment=comment,
        event_time_ms=rec.event_time_ms, source_entry_id=source_entry_id,
        source_ref=rec.source_ref if source_ref is None else source_ref,
        details={**rec.details, "members": len(rec.members)} if rec.is_group else dict(rec.details),
    )


class AlertStore:
    """Read alerts and act on them as an operator (see the module docstring)."""

    def __init__(self, client: redis.Redis, names: StreamNames, maxlen: int = 100_000,
                 clock: Callable[[], float] = time.time) -> None:
        self.client = client
        self.names = names
        self.maxlen = maxlen
        self.clock = clock
        self.records_key = names.alert_state("records")
        self.episodes_key = names.alert_state("episodes")

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    # -- reading ----------------------------------------------------------------------------------
    def get(self, alert_id: str) -> AlertRecord | None:
        raw = self.client.hget(self.records_key, alert_id)
        return AlertRecord.from_json(raw) if raw is not None else None

    def list(self, *, open_only: bool = True, asset_id: str | None = None, states: set[str] | None = None,
             include_members: bool = True, limit: int = 500) -> list[AlertRecord]:
        """Alerts, most urgent first (priority, then unacknowledged, then newest).

        ``open_only`` drops closed alerts (cleared and acknowledged); ``include_members=False`` hides
        the members of a flood group (the group alert stands for them).
        """
        now = self.now_ms()
        out = []
        for raw in self.client.hvals(self.records_key):
            rec = AlertRecord.from_json(raw)
            if open_only and rec.closed:
                continue
            if asset_id is not None and rec.asset_id != asset_id:
                continue
            if states is not None and rec.state(now) not in states:
                continue
            if not include_members and rec.group_id:
                continue
            out.append(rec)
        out.sort(key=lambda r: (-PRIORITY_ORDER.index(r.priority), r.acked, -r.raised_at_ms))
        return out[:limit]

    def events(self, count: int = 100, alert_id: str | None = None) -> list[tuple[str, Alert]]:
        """The latest ``lw:alerts`` events (newest last), optionally of one alert."""
        out = []
        for entry_id, fields in reversed(self.client.xrevrange(self.names.alerts, count=count if not alert_id else 5000)):
            msg = decode_message(fields)
            if isinstance(msg, Alert) and (alert_id is None or msg.alert_id == alert_id):
                out.append((entry_id.decode() if isinstance(entry_id, bytes) else entry_id, msg))
        return out[-count:]

    # -- operator actions -------------------------------------------------------------------------
    def ack(self, alert_id: str, user: str, comment: str = "") -> AlertRecord:
        """Acknowledge (an operator has seen it). A cleared alert that is acknowledged is closed.
        Acknowledging a flood group acknowledges its members too."""
        def act(rec: AlertRecord, now: int) -> tuple[AlertRecord, list[Alert], Feedback | None]:
            if rec.acked:
                return rec, [], None
            new = rec.model_copy(update={"acked": True, "acked_by": user, "acked_at_ms": now, "updated_at_ms": now})
            return new, [alert_event(new, "acknowledged", now, user=user, comment=comment)], None
        return self._apply(alert_id, _require_user(user), act, cascade=True)

    def shelve(self, alert_id: str, user: str, duration_s: float, reason: str = "") -> AlertRecord:
        """Hide the alert until ``now + duration_s`` (at most 24 h); it stays recorded, its events are
        not notified, and it comes back by itself when the shelf time ends."""
        if not 0 < duration_s <= MAX_SHELVE_S:
            raise InvalidAction(f"shelve duration must be between 1 s and {MAX_SHELVE_S} s, got {duration_s}")

        def act(rec: AlertRecord, now: int) -> tuple[AlertRecord, list[Alert], Feedback | None]:
            if rec.closed:
                raise InvalidAction(f"{rec.alert_id} is closed (cleared and acknowledged): nothing to shelve")
            new = rec.model_copy(update={"shelved_until_ms": now + int(duration_s * 1000), "shelved_by": user,
                                         "shelve_reason": reason, "updated_at_ms": now})
            return new, [alert_event(new, "shelved", now, user=user, comment=reason)], None
        return self._apply(alert_id, _require_user(user), act)

    def unshelve(self, alert_id: str, user: str) -> AlertRecord:
        def act(rec: AlertRecord, now: int) -> tuple[AlertRecord, list[Alert], Feedback | None]:
            if not rec.shelved(now):
                return rec, [], None
            new = rec.model_copy(update={"shelved_until_ms": 0, "updated_at_ms": now})
            return new, [alert_event(new, "unshelved", now, user=user)], None
        return self._apply(alert_id, _require_user(user), act)

    def confirm(self, alert_id: str, user: str, true_label: str | None = None, comment: str = "") -> AlertRecord:
        """The fault is real (``true_label``: what it really was, if not the alert's label).
        Writes a ``Feedback`` (outcome confirmed); implies acknowledgement."""
        return self._outcome(alert_id, user, "confirmed", true_label, comment)

    def reject(self, alert_id: str, user: str, comment: str = "", true_label: str | None = "normal") -> AlertRecord:
        """False alarm. Writes a ``Feedback`` (outcome rejected, true label ``normal`` unless
        given); implies acknowledgement."""
        return self._outcome(alert_id, user, "rejected", true_label, comment)

    def _outcome(self, alert_id: str, user: str, outcome: str, true_label: str | None,
                 comment: str) -> AlertRecord:
        def act(rec: AlertRecord, now: int) -> tuple[AlertRecord, list[Alert], Feedback | None]:
            if rec.is_group:
                raise InvalidAction(f"{rec.alert_id} is a flood group: confirm or reject its member alerts "
                                    f"({', '.join(rec.members[:5])}...)")
            label = true_label if true_label is not None else (rec.label if outcome == "confirmed" else None)
            update = {"outcome": outcome, "outcome_by": user, "true_label": label, "comment": comment,
                      "updated_at_ms": now}
            if not rec.acked:
                update.update(acked=True, acked_by=user, acked_at_ms=now)
            new = rec.model_copy(update=update)
            fb = Feedback(alert_id=rec.alert_id, asset_id=rec.asset_id, predicted_label=rec.label,
                          outcome=outcome, true_label=label, verdict_entry_id=rec.verdict_entry_id,  # type: ignore[arg-type]
                          episode_key=rec.episode_key, source=rec.source, models=dict(rec.models), user=user,
                          comment=comment, time_ms=now)
            return new, [alert_event(new, outcome, now, user=user, comment=comment)], fb
        return self._apply(alert_id, _require_user(user), act)

    def _apply(self, alert_id: str, user: str,
               act: Callable[[AlertRecord, int], tuple[AlertRecord, list[Alert], Feedback | None]],
               cascade: bool = False) -> AlertRecord:
        for _ in range(50):
            with self.client.pipeline() as pipe:
                try:
                    pipe.watch(self.records_key, self.episodes_key)
                    raw = pipe.hget(self.records_key, alert_id)
                    if raw is None:
                        raise AlertNotFound(f"no alert {alert_id!r}: see `linewatch alerts list --all`")
                    now = self.now_ms()
                    rec = AlertRecord.from_json(raw)
                    changes = [act(rec, now)]
                    if cascade and rec.is_group:
                        for member_id in rec.members:
                            member_raw = pipe.hget(self.records_key, member_id)
                            if member_raw is not None:
                                changes.append(act(AlertRecord.from_json(member_raw), now))
                    episodes = {r.episode_key: pipe.hget(self.episodes_key, r.episode_key) for r, _, _ in changes}
                    pipe.multi()
                    for new, events, fb in changes:
                        self._stage(pipe, new, events, fb, episodes.get(new.episode_key), now)
                    pipe.execute()
                    return changes[0][0]
                except redis.WatchError:
                    continue
        raise RuntimeError(f"alert {alert_id} kept changing while {user} acted on it; try again")

    def _stage(self, pipe: redis.client.Pipeline, new: AlertRecord, events: list[Alert], fb: Feedback | None,
               episode_owner: bytes | None, now: int) -> None:
        if not events and fb is None:
            return
        pipe.hset(self.records_key, new.alert_id, new.to_json())
        if new.closed:
            if episode_owner is not None and episode_owner.decode() == new.alert_id:
                pipe.hdel(self.episodes_key, new.episode_key)
            pipe.zadd(self.names.alert_state("closed"), {new.alert_id: now})
        if new.shelved(now):
            pipe.zadd(self.names.alert_state("shelved"), {new.alert_id: new.shelved_until_ms})
        else:
            pipe.zrem(self.names.alert_state("shelved"), new.alert_id)
        for ev in events:
            pipe.xadd(self.names.alerts, encode_message(ev))  # retention: docs/redis.md
        if fb is not None:
            pipe.xadd(self.names.feedback(), encode_message(fb))


def _require_user(user: str) -> str:
    if not user or not user.strip():
        raise InvalidAction("every operator action names the acting user (--user, or $LINEWATCH_USER)")
    return user.strip()
