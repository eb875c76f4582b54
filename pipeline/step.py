"""What handling one input produced (:class:`StepOutput`) and how dead letters are built
(:class:`DeadLetters`): shared by the ingestor and the per-modality handlers."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from linewatch.contract import DeadLetter, DeadLetterReason, StreamNames
from pipeline.decoders.errors import RejectedInput, printable_excerpt
from pipeline.redis_sink import PendingEntry, dedup_key_for
from pipeline.stage_times import BlobTimes

MAX_DEAD_LETTERS_PER_FILE = 50
"""A garbage file yields at most this many line-level dead letters (plus one summary)."""


@dataclass
class StepOutput:
    """What handling one input produced; the caller writes ``entries`` then archives ``archive``."""

    entries: list[PendingEntry] = field(default_factory=list)
    archive: list[Path] = field(default_factory=list)
    counters: dict[str, int] = field(default_factory=dict)
    closed_ms: list[tuple[int, int]] = field(default_factory=list)  # (entry index, file-closed ms)
    progressed: bool = False  # a held-back or ordered line was processed (the reorder wait restarts)
    recheck: bool = False  # a decision waits for the manifest index to list a line: look again soon
    probe: str | None = None
    times: list[BlobTimes] = field(default_factory=list)  # stage stamps of the blobs handled (pipeline.stage_times)
    accepted: bool = False  # a handler accepted its blob's input (a frame, a clip, PLC samples): pipeline.sensor_refusals

    def count(self, name: str, n: int = 1) -> None:
        if n:
            self.counters[name] = self.counters.get(name, 0) + n

    def extend(self, other: StepOutput) -> None:
        base = len(self.entries)
        self.entries += other.entries
        self.archive += other.archive
        self.times += other.times
        for name, n in other.counters.items():
            self.count(name, n)
        self.closed_ms += [(base + i, ms) for i, ms in other.closed_ms]


@dataclass(frozen=True)
class DeadLetters:
    """Builds dead-letter entries (``names.deadletter``, deduplicated by reference, reason, detail)."""

    names: StreamNames

    def add(self, out: StepOutput, source: str, reason: DeadLetterReason, detail: str, raw_ref: str,
            excerpt: bytes | str = "", asset_id: str | None = None, event_time_ms: int | None = None) -> None:
        msg = DeadLetter(
            source=source, reason=reason, detail=detail[:2000], raw_ref=raw_ref, excerpt=printable_excerpt(excerpt),
            asset_id=asset_id, event_time_ms=event_time_ms, failed_at_ms=int(time.time() * 1000),
        )
        out.entries.append(PendingEntry(stream=self.names.deadletter, message=msg,
                                        dedup_key=dedup_key_for(self.names, raw_ref, reason.value, detail)))
        out.count("deadletters")
        out.count(f"deadletters.{reason.value}")

    def rejection(self, out: StepOutput, source: str, exc: RejectedInput, asset_id: str | None = None) -> None:
        """A decoder's or validator's :class:`~pipeline.decoders.errors.RejectedInput` -> dead letter."""
        self.add(out, source, exc.reason, exc.detail, exc.raw_ref, exc.excerpt, asset_id or exc.asset_id,
                 exc.event_time_ms)

    def per_line(self, out: StepOutput, source: str, errors: list[RejectedInput], asset_id: str, ref: str) -> None:
        """One dead letter per rejected line (``path:line``), at most :data:`MAX_DEAD_LETTERS_PER_FILE`
        plus a summary."""
        for exc in errors[:MAX_DEAD_LETTERS_PER_FILE]:
            self.rejection(out, source, exc, asset_id=asset_id)
        if len(errors) > MAX_DEAD_LETTERS_PER_FILE:
            self.add(out, source, errors[-1].reason,
                     f"{len(errors) - MAX_DEAD_LETTERS_PER_FILE} more rejected lines not listed", ref, asset_id=asset_id)
