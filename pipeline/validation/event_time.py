"""Per-asset event-time checks: late, future and duplicate records, with bounded memory.

One :class:`EventTimeGuard` per asset **and modality** (a Flink keyed function keeps one per
key of each stream): PLC files, frames and clips arrive separately and are not time-aligned, so
a shared guard would call the slower modality late. A record is

* ``future`` if its event time is more than ``future_tolerance_ms`` ahead of the wall clock
  (``now_ms`` is passed in: deterministic tests, and the job decides which clock counts);
* ``late`` if it is more than ``allowed_lateness_ms`` older than the newest event time this
  asset has accepted;
* ``duplicate`` if its key (e.g. ``(tag, timestamp_ms)``) or its blob SHA-256 was accepted before.

Memory stays bounded: a key older than the lateness horizon can be forgotten, since such a
record is rejected as late anyway; on top, at most ``max_keys`` keys and ``max_blobs`` SHA-256
values are remembered (oldest first out).

>>> g = EventTimeGuard("PMP-01", allowed_lateness_ms=1000, future_tolerance_ms=500)
>>> g.check(("speed_rpm", 10_000), 10_000, now_ms=10_000, raw_ref="a:2") is None
True
>>> g.check(("speed_rpm", 10_000), 10_000, now_ms=10_000, raw_ref="a:3").reason.value
'duplicate'
>>> g.check(("speed_rpm", 8_000), 8_000, now_ms=10_000, raw_ref="a:4").reason.value
'late'
>>> g.check(("speed_rpm", 11_000), 11_000, now_ms=10_000, raw_ref="a:5").reason.value
'future'
"""

from __future__ import annotations

import heapq
from collections import OrderedDict
from collections.abc import Hashable

from linewatch.contract import DeadLetterReason
from pipeline.validation.errors import InvalidRecord


class EventTimeGuard:
    """Late / future / duplicate checks for one asset. ``check`` records what it accepts."""

    def __init__(self, asset_id: str, allowed_lateness_ms: int = 5_000, future_tolerance_ms: int = 60_000,
                 max_keys: int = 100_000, max_blobs: int = 10_000) -> None:
        self.asset_id = asset_id
        self.allowed_lateness_ms = allowed_lateness_ms
        self.future_tolerance_ms = future_tolerance_ms
        self.max_keys = max_keys
        self.max_blobs = max_blobs
        self.max_event_time_ms: int | None = None
        self._keys: dict[Hashable, int] = {}
        self._heap: list[tuple[int, int, Hashable]] = []
        self._counter = 0
        self._blobs: OrderedDict[str, int] = OrderedDict()

    def __len__(self) -> int:
        """Keys currently remembered (bounded by ``max_keys``)."""
        return len(self._keys)

    def _reject(self, reason: DeadLetterReason, detail: str, raw_ref: str, event_time_ms: int) -> InvalidRecord:
        return InvalidRecord(reason, detail, raw_ref, asset_id=self.asset_id, event_time_ms=event_time_ms)

    def check_time(self, event_time_ms: int, now_ms: int, raw_ref: str) -> InvalidRecord | None:
        """Only the late/future checks (records nothing)."""
        if event_time_ms > now_ms + self.future_tolerance_ms:
            return self._reject(
                DeadLetterReason.FUTURE,
                f"event time is {event_time_ms - now_ms} ms ahead of the clock (tolerance "
                f"{self.future_tolerance_ms} ms); check the gateway's clock", raw_ref, event_time_ms)
        if self.max_event_time_ms is not None and event_time_ms < self.max_event_time_ms - self.allowed_lateness_ms:
            return self._reject(
                DeadLetterReason.LATE,
                f"event time is {self.max_event_time_ms - event_time_ms} ms older than the newest accepted for "
                f"{self.asset_id} (allowed lateness {self.allowed_lateness_ms} ms)", raw_ref, event_time_ms)
        return None

    def check(self, key: Hashable, event_time_ms: int, now_ms: int, raw_ref: str) -> InvalidRecord | None:
        """Reject (and return why) or accept and remember ``key``; ``key`` must identify the
        record within the asset, e.g. ``(tag, timestamp_ms)`` or ``("frame", timestamp_ms)``."""
        problem = self.check_time(event_time_ms, now_ms, raw_ref)
        if problem is not None:
            return problem
        if key in self._keys:
            return self._reject(DeadLetterReason.DUPLICATE,
                                f"{self.asset_id} record {key!r} was already accepted", raw_ref, event_time_ms)
        self._remember(key, event_time_ms)
        return None

    def check_blob(self, sha256: str, key: Hashable, event_time_ms: int, now_ms: int,
                   raw_ref: str) -> InvalidRecord | None:
        """Like :meth:`check`, and also ``duplicate`` when the same blob content (SHA-256) was
        accepted before under any key (a re-sent file, or a stuck camera/microphone)."""
        if sha256 in self._blobs:
            return self._reject(DeadLetterReason.DUPLICATE,
                                f"blob sha256 {sha256[:12]}… of {self.asset_id} was already accepted "
                                f"(event time {self._blobs[sha256]})", raw_ref, event_time_ms)
        problem = self.check(key, event_time_ms, now_ms, raw_ref)
        if problem is None:
            self._blobs[sha256] = event_time_ms
            if len(self._blobs) > self.max_blobs:
                self._blobs.popitem(last=False)
        return problem

    def to_state(self) -> dict[str, object]:
        """JSON-able snapshot for Flink state (tuple keys become lists and come back as tuples)."""
        return {
            "asset_id": self.asset_id, "allowed_lateness_ms": self.allowed_lateness_ms,
            "future_tolerance_ms": self.future_tolerance_ms, "max_keys": self.max_keys, "max_blobs": self.max_blobs,
            "max_event_time_ms": self.max_event_time_ms,
            "keys": [[list(k) if isinstance(k, tuple) else k, ts] for k, ts in self._keys.items()],
            "blobs": [[sha, ts] for sha, ts in self._blobs.items()],
        }

    @classmethod
    def from_state(cls, state: dict[str, object]) -> EventTimeGuard:
        """Inverse of :meth:`to_state`.

        >>> g = EventTimeGuard("PMP-01"); _ = g.check(("speed_rpm", 5), 5, 5, "a")
        >>> import json; h = EventTimeGuard.from_state(json.loads(json.dumps(g.to_state())))
        >>> h.check(("speed_rpm", 5), 5, 5, "a").reason.value, h.max_event_time_ms
        ('duplicate', 5)
        """
        guard = cls(str(state["asset_id"]), int(state["allowed_lateness_ms"]),  # type: ignore[call-overload]
                    int(state["future_tolerance_ms"]), int(state["max_keys"]),  # type: ignore[call-overload]
                    int(state["max_blobs"]))  # type: ignore[call-overload]
        for key, ts in state["keys"]:  # type: ignore[attr-defined]
            guard._remember(tuple(key) if isinstance(key, list) else key, int(ts))
        for sha, ts in state["blobs"]:  # type: ignore[attr-defined]
            guard._blobs[str(sha)] = int(ts)
        last = state["max_event_time_ms"]
        guard.max_event_time_ms = None if last is None else int(last)  # type: ignore[call-overload]
        return guard

    def _remember(self, key: Hashable, event_time_ms: int) -> None:
        if self.max_event_time_ms is None or event_time_ms > self.max_event_time_ms:
            self.max_event_time_ms = event_time_ms
        self._keys[key] = event_time_ms
        self._counter += 1
        heapq.heappush(self._heap, (event_time_ms, self._counter, key))
        horizon = self.max_event_time_ms - self.allowed_lateness_ms
        while self._heap and (self._heap[0][0] < horizon or len(self._keys) > self.max_keys):
            ts, _, old = heapq.heappop(self._heap)
            if self._keys.get(old) == ts:
                del self._keys[old]
