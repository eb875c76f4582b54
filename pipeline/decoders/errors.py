"""Rejections of raw input: the one exception type decoders raise and validators return.

A rejection carries what a dead-letter entry needs (reason, detail, raw reference,
printable excerpt), so the Flink job turns it into a :class:`~linewatch.contract.DeadLetter`
with :meth:`RejectedInput.to_dead_letter` and never crashes on bad input.

>>> from linewatch.contract import DeadLetterReason
>>> err = DecodeError(DeadLetterReason.TRUNCATED, "TIFF ends after 10 of 38528 bytes", "thermal/a.tiff", b"II*\\x00\\x08")
>>> err.excerpt
'II*\\\\x00\\\\x08'
>>> dl = err.to_dead_letter("pipeline.thermal", failed_at_ms=5, asset_id="PMP-01")
>>> (dl.reason.value, dl.raw_ref, dl.asset_id)
('truncated', 'thermal/a.tiff', 'PMP-01')
"""

from __future__ import annotations

from linewatch.contract import DeadLetter, DeadLetterReason

EXCERPT_MAX_CHARS = 200
"""Excerpts are cut to this many printable characters (the contract allows 512)."""


def printable_excerpt(raw: bytes | str, limit: int = EXCERPT_MAX_CHARS) -> str:
    """A short, printable, single-line rendering of ``raw`` for logs and dead letters.

    Non-printable bytes are shown as ``\\xNN`` escapes; the result never exceeds ``limit``
    characters (an ellipsis marks a cut).

    >>> printable_excerpt(b"ok\\x00\\xff line")
    'ok\\\\x00\\\\xff line'
    >>> len(printable_excerpt("x" * 1000, limit=20))
    20
    """
    text = raw[: limit * 4].decode("ascii", errors="backslashreplace") if isinstance(raw, bytes) else raw[: limit * 4]
    text = "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class RejectedInput(Exception):
    """Base of every rejection: a record or file that goes to the dead-letter stream.

    ``asset_id`` and ``event_time_ms`` are filled when known (validation usually knows
    them, a decoder that failed early does not).
    """

    def __init__(
        self,
        reason: DeadLetterReason,
        detail: str,
        raw_ref: str,
        excerpt: bytes | str = "",
        *,
        asset_id: str | None = None,
        event_time_ms: int | None = None,
    ) -> None:
        self.reason = DeadLetterReason(reason)
        self.detail = detail
        self.raw_ref = raw_ref
        self.excerpt = printable_excerpt(excerpt)
        self.asset_id = asset_id
        self.event_time_ms = event_time_ms
        super().__init__(f"{self.reason.value}: {detail} [{raw_ref}]")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.reason.value!r}, {self.detail!r}, {self.raw_ref!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RejectedInput):
            return NotImplemented
        return (type(self), self.reason, self.detail, self.raw_ref, self.excerpt) == (
            type(other), other.reason, other.detail, other.raw_ref, other.excerpt)

    __hash__ = Exception.__hash__

    def to_dead_letter(
        self,
        source: str,
        failed_at_ms: int,
        asset_id: str | None = None,
        event_time_ms: int | None = None,
    ) -> DeadLetter:
        """The contract message for this rejection (``source`` e.g. ``"pipeline.plc"``)."""
        return DeadLetter(
            source=source,
            reason=self.reason,
            detail=self.detail,
            raw_ref=self.raw_ref,
            excerpt=self.excerpt,
            asset_id=asset_id if asset_id is not None else self.asset_id,
            event_time_ms=event_time_ms if event_time_ms is not None else self.event_time_ms,
            failed_at_ms=failed_at_ms,
        )


class DecodeError(RejectedInput):
    """Raw bytes could not be turned into a typed record (see ``reason`` for why)."""
