"""The audit worker's stage code: decode entries, write their records, acknowledge after COMMIT.

Order of effects per batch (what makes "nothing acknowledged is lost" true):

1. decode every entry (a bad one goes to the dead-letter stream with its reason, like any stage);
2. write the batch's records in one SQLite transaction and ``COMMIT`` it (WAL, ``synchronous=FULL``
   by default: the commit is on disk when it returns);
3. only then acknowledge the entries: the worker applies the ``XACK`` after ``handle`` returns.

A crash between 2 and 3 redelivers the entries; their ``source_key`` (``<stream>/<entry id>``) is
already in the store, so they are skipped, not written twice. A failure in 2 rolls the transaction
back and raises: nothing is acknowledged and the worker retries with backoff.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from prometheus_client import Counter

from governance.audit.records import (
    alert_records,
    drift_records,
    explanation_records,
    model_records,
    verdict_changes,
    verdict_record,
)
from governance.audit.store import AuditRecord, AuditStore, AuditWriter
from linewatch.audit_settings import AuditSettings
from linewatch.contract import Alert, DriftReport, Explanation, Message, StreamNames, Verdict
from linewatch.streaming import Batch, Entry, StreamWorker

log = logging.getLogger("linewatch.governance.audit")


class AuditHandler:
    """Handler of one audit role: ``audit.verdicts`` (one shard per verdict stream) or ``audit.events``
    (alerts, explanations, drift: one shard)."""

    def __init__(self, store: AuditStore, names: StreamNames, settings: AuditSettings,
                 inputs: Callable[[int], list[str]], rows: Counter, role: str, retention: bool = False,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.store = store
        self.names = names
        self.settings = settings
        self.inputs = inputs
        self.role = role
        self._rows = rows
        self._retention = retention and settings.retention_days > 0
        self._clock = clock
        self._next_retention = 0.0
        self._expected: dict[str, type[Message]] = {s: Verdict for s in names.all_verdict_streams()}
        self._expected.update({names.alerts: Alert, names.explanations(): Explanation, names.drift(): DriftReport})

    def handle(self, batch: Batch) -> None:
        decoded: list[tuple[Entry, Message]] = []
        for entry in batch.entries:
            msg = batch.decode(entry, self._expected[entry.stream])
            if msg is not None:
                decoded.append((entry, msg))
        if not decoded:
            return
        kinds: dict[str, int] = {}
        with self.store.writing() as w:
            for entry, msg in decoded:
                for rec in self._records(w, entry, msg):
                    if w.insert(rec):
                        kinds[rec.kind] = kinds.get(rec.kind, 0) + 1
        for entry, _ in decoded:  # after COMMIT: the worker XACKs them when handle returns
            batch.ack(entry)
        for kind, n in kinds.items():
            self._rows.labels(role=self.role, kind=kind).inc(n)

    def _records(self, w: AuditWriter, entry: Entry, msg: Message) -> list[AuditRecord]:
        s, eid = entry.stream, entry.entry_id
        if isinstance(msg, Verdict):
            out = model_records(s, eid, msg)
            if self.settings.verdicts == "all" or verdict_changes(w.last_verdict(msg.asset_id, eid), msg):
                out.insert(0, verdict_record(s, eid, msg))
            return out
        if isinstance(msg, Alert):
            return alert_records(s, eid, msg)
        if isinstance(msg, Explanation):
            return explanation_records(s, eid, msg)
        if isinstance(msg, DriftReport):
            return drift_records(s, eid, msg)
        return []

    def tick(self, worker: StreamWorker) -> None:
        """The retention job, every ``retention_interval_s`` (only on the ``audit.events`` role)."""
        if not self._retention or self._clock() < self._next_retention:
            return
        self._next_retention = self._clock() + self.settings.retention_interval_s
        result = self.store.run_retention(self.settings.retention_days)
        if result.deleted:
            self._rows.labels(role=self.role, kind="retention").inc()
            log.info("audit retention", extra={"role": self.role, "deleted": result.deleted,
                                               "max_seq": result.max_seq, "cutoff_ms": result.cutoff_ms})
