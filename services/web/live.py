"""The live feed behind server-sent events: one tailer thread per web process reads the verdict shards,
``lw:alerts``, ``lw:explanations`` and ``lw:drift`` with a blocking ``XREAD`` and fans each change out to
every connected browser's queue.

No consumer group: every web process must see every entry (a group would split them between processes),
and the web app acknowledges nothing. Verdicts are coalesced per asset: an unchanged verdict (same label,
state and alert-relevant fields) is sent at most every ``verdict_min_interval_s``; a change is sent at once.
A browser that reconnects re-reads the whole overview (``/api/v1/overview``), so nothing it missed while
disconnected stays stale.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import redis

from linewatch.contract import Alert, DriftReport, Explanation, StreamNames, Verdict
from services.web.data import decoded

log = logging.getLogger("linewatch.services.web")


def verdict_view(entry_id: str, v: Verdict) -> dict[str, Any]:
    """What the overview shows of a verdict (JSON)."""
    return {"asset_id": v.asset_id, "asset_type": v.asset_type, "label": v.label, "state": v.state,
            "instant_label": v.instant_label, "severity": round(v.severity, 3), "confidence": round(v.confidence, 3),
            "coverage": round(v.coverage, 3), "missing": list(v.missing), "modalities": dict(v.modalities),
            "withheld": {m: list(c) for m, c in v.withheld.items()},
            "extrapolating": {m: list(n) for m, n in v.extrapolating.items()},
            "event_time_ms": v.event_time_ms, "decided_at_ms": v.decided_at_ms, "entry_id": entry_id}


@dataclass(frozen=True)
class ExplanationRef:
    """Where an explanation is (its entry id) and what it explains: the inbox links alerts with these
    without reading the heatmaps of every explanation again."""

    explanation_id: str
    entry_id: str
    alert_id: str
    verdict_entry_id: str
    asset_id: str
    label: str
    event_time_ms: int
    explained_at_ms: int

    @classmethod
    def of(cls, entry_id: str, e: Explanation) -> ExplanationRef:
        return cls(e.explanation_id, entry_id, e.alert_id, e.verdict_entry_id, e.asset_id, e.label, e.event_time_ms,
                   e.explained_at_ms)


@dataclass
class Subscriber:
    queue: asyncio.Queue[dict[str, Any]]
    loop: asyncio.AbstractEventLoop
    dropped: int = 0


@dataclass
class LiveFeed:
    """Tails the streams in a thread and keeps the newest verdict per asset (see the module docstring)."""

    client: redis.Redis
    names: StreamNames
    block_ms: int = 500
    verdict_scan: int = 2000
    verdict_min_interval_s: float = 0.5
    queue_size: int = 1000
    on_event: Callable[[str], None] | None = None
    alert_view: Callable[[Alert], dict[str, Any]] | None = None
    explanation_scan: int = 500
    latest: dict[str, dict[str, Any]] = field(default_factory=dict)
    _explanations: dict[str, ExplanationRef] = field(default_factory=dict)
    _subs: list[Subscriber] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _sent_at: dict[str, tuple[tuple[Any, ...], float]] = field(default_factory=dict)

    # -- lifecycle ------------------------------------------------------------------------------------
    def start(self) -> LiveFeed:
        streams = [*self.names.all_verdict_streams(), self.names.alerts, self.names.explanations(), self.names.drift()]
        last = {s: self._last_id(s) for s in streams}  # everything after this is "live"
        for stream in self.names.all_verdict_streams():
            rows = decoded(self.client.xrevrange(stream, max=last[stream], count=self.verdict_scan), Verdict)
            for eid, v in reversed(rows):
                self.latest[v.asset_id] = verdict_view(eid, v)
        explained = decoded(self.client.xrevrange(self.names.explanations(), max=last[self.names.explanations()],
                                                  count=self.explanation_scan), Explanation)
        for eid, e in reversed(explained):
            self._explanations[e.explanation_id] = ExplanationRef.of(eid, e)
        self._thread = threading.Thread(target=self._run, args=(last,), name="web-live", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _last_id(self, stream: str) -> str:
        got: Any = self.client.xrevrange(stream, count=1)
        if not got:
            return "0-0"
        eid = got[0][0]
        return eid.decode() if isinstance(eid, bytes) else str(eid)

    # -- subscribers (asyncio side) -------------------------------------------------------------------
    def subscribe(self) -> Subscriber:
        sub = Subscriber(asyncio.Queue(self.queue_size), asyncio.get_running_loop())
        with self._lock:
            self._subs.append(sub)
        return sub

    def unsubscribe(self, sub: Subscriber) -> None:
        with self._lock:
            if sub in self._subs:
                self._subs.remove(sub)

    @property
    def subscribers(self) -> int:
        with self._lock:
            return len(self._subs)

    def snapshot(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            return dict(self.latest)

    def explanation_refs(self) -> list[ExplanationRef]:
        """Known explanations, newest last (start-up scan of ``explanation_scan`` entries + live ones)."""
        with self._lock:
            return list(self._explanations.values())

    def publish(self, kind: str, data: dict[str, Any]) -> None:
        event = {"type": kind, "data": data, "sent_ms": int(time.time() * 1000)}
        with self._lock:
            subs = list(self._subs)
        for sub in subs:
            try:
                sub.loop.call_soon_threadsafe(self._offer, sub, event)
            except RuntimeError:  # its loop is closed: the browser is gone
                self.unsubscribe(sub)
        if self.on_event is not None:
            self.on_event(kind)

    @staticmethod
    def _offer(sub: Subscriber, event: dict[str, Any]) -> None:
        if sub.queue.full():  # a stalled browser: drop its oldest event; it re-syncs on reconnect
            sub.queue.get_nowait()
            sub.dropped += 1
        sub.queue.put_nowait(event)

    # -- tailer thread --------------------------------------------------------------------------------
    def _run(self, last: dict[str, str]) -> None:
        verdict_streams = set(self.names.all_verdict_streams())
        while not self._stop.is_set():
            try:
                got: Any = self.client.xread(last, block=self.block_ms, count=500)  # type: ignore[arg-type]
            except redis.RedisError as exc:
                log.warning("live feed: Redis read failed (%s); retrying", exc)
                self._stop.wait(1.0)
                continue
            for raw_stream, entries in got or []:
                stream = raw_stream.decode() if isinstance(raw_stream, bytes) else raw_stream
                if entries:
                    eid = entries[-1][0]
                    last[stream] = eid.decode() if isinstance(eid, bytes) else eid
                try:
                    if stream in verdict_streams:
                        self._verdicts(entries)
                    elif stream == self.names.alerts:
                        for _, alert in decoded(entries, Alert):
                            self.publish("alert", self.alert_view(alert) if self.alert_view else
                                         alert.model_dump(mode="json"))
                    elif stream == self.names.explanations():
                        for eid_, e in decoded(entries, Explanation):
                            with self._lock:
                                self._explanations.pop(e.explanation_id, None)  # newest last
                                self._explanations[e.explanation_id] = ExplanationRef.of(eid_, e)
                            self.publish("explanation", {"explanation_id": e.explanation_id, "asset_id": e.asset_id,
                                                         "alert_id": e.alert_id, "label": e.label, "entry_id": eid_})
                    elif stream == self.names.drift():
                        for eid_, d in decoded(entries, DriftReport):
                            self.publish("drift", {"kind": d.kind, "asset_id": d.asset_id, "modality": d.modality,
                                                   "drifted": d.drifted, "state": d.state, "cause": d.cause,
                                                   "entry_id": eid_})
                except Exception:  # a bad entry must not stop the live view
                    log.exception("live feed: could not handle entries of %s", stream)

    def _verdicts(self, entries: list[tuple[Any, Any]]) -> None:
        newest: dict[str, dict[str, Any]] = {}
        for eid, v in decoded(entries, Verdict):
            newest[v.asset_id] = verdict_view(eid, v)
        now = time.monotonic()
        for asset, view in newest.items():
            with self._lock:
                self.latest[asset] = view
            key = (view["label"], view["state"], view["instant_label"], tuple(view["missing"]))
            prev = self._sent_at.get(asset)
            if prev is None or prev[0] != key or now - prev[1] >= self.verdict_min_interval_s:
                self._sent_at[asset] = (key, now)
                self.publish("verdict", view)
