"""One event-time policy for every modality (docs/features.md, "Validation").

* ``future``: an event time more than ``future_tolerance_ms`` ahead of the job's wall clock —
  a frame, a clip, **each PLC row** and each alarm line (a gateway with a wrong clock, or a bad
  row: it must not drag an asset's windows or high-water marks into the future);
* frames and clips must be newer than the asset's last accepted one of the modality
  (``duplicate`` if equal, ``late`` if older): each stream holds strictly increasing event
  times per asset, which the idempotent writes rely on;
* PLC rows whose every window was already emitted are ``late`` (per row, ``path:line``), and
  PLC windows never close ahead of the clock (:meth:`EventTimePolicy.watermark`), so no single
  row can poison an asset.

>>> policy = EventTimePolicy(future_tolerance_ms=500)
>>> policy.future(11_000, now_ms=10_000, raw_ref="a.csv:5", asset_id="A").reason.value
'future'
>>> policy.after_last(9_000, last_ms=9_000, modality="thermal", raw_ref="f.tiff", asset_id="A").reason.value
'duplicate'
>>> policy.watermark(newest_ms=20_000, end_ms=None, now_ms=10_000)
10000
"""

from __future__ import annotations

from dataclasses import dataclass

from linewatch.contract import DeadLetterReason
from pipeline.validation.errors import InvalidRecord


@dataclass(frozen=True)
class EventTimePolicy:
    """Event-time checks shared by every handler (``settings.validation.future_tolerance_ms``)."""

    future_tolerance_ms: int = 60_000

    def future(self, event_time_ms: int, now_ms: int, raw_ref: str, asset_id: str | None = None,
               excerpt: str = "") -> InvalidRecord | None:
        """``future`` if ``event_time_ms`` is more than the tolerance ahead of ``now_ms``."""
        if event_time_ms <= now_ms + self.future_tolerance_ms:
            return None
        return InvalidRecord(
            DeadLetterReason.FUTURE,
            f"event time is {event_time_ms - now_ms} ms ahead of the job's clock (tolerance {self.future_tolerance_ms} "
            "ms, validation.future_tolerance_ms); check the gateway's clock", raw_ref, excerpt,
            asset_id=asset_id, event_time_ms=event_time_ms)

    def after_last(self, event_time_ms: int, last_ms: int | None, modality: str, raw_ref: str,
                   asset_id: str) -> InvalidRecord | None:
        """``duplicate``/``late`` for a frame or clip not newer than the last accepted one."""
        if last_ms is None or event_time_ms > last_ms:
            return None
        reason = DeadLetterReason.DUPLICATE if event_time_ms == last_ms else DeadLetterReason.LATE
        return InvalidRecord(reason, f"event time {event_time_ms} is not after the last accepted {modality} record "
                             f"{last_ms} of {asset_id}", raw_ref, asset_id=asset_id, event_time_ms=event_time_ms)

    def watermark(self, newest_ms: int | None, end_ms: int | None, now_ms: int) -> int | None:
        """How far an asset's PLC windows may close after a file: the file's ``end`` (else its newest
        accepted row), never past the job's clock."""
        mark = end_ms - 1 if end_ms is not None else newest_ms
        return None if mark is None else min(mark, now_ms)
