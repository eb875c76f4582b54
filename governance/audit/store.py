"""The append-only audit store: SQLite in WAL mode, one row per audited event, hash-chained.

>>> import tempfile, pathlib
>>> store = AuditStore(pathlib.Path(tempfile.mkdtemp()) / "audit.sqlite")
>>> store.append([AuditRecord("lw:alerts/1-0", kind="operator_action", event="acknowledged", actor="maria")])
1
>>> store.append([AuditRecord("lw:alerts/1-0", kind="operator_action", event="acknowledged", actor="maria")])
0
>>> store.verify().ok
True
>>> store.close()

Writes go through :meth:`AuditStore.writing` (one ``BEGIN IMMEDIATE`` transaction: a batch of
records, one fsync at ``COMMIT``). A record whose ``source_key`` exists is skipped, so a
redelivered stream entry never makes a second row. Nothing in this module (or anywhere) updates a
row; the database refuses it anyway (see :mod:`governance.audit.schema`). The only deleter is
:meth:`AuditStore.run_retention`, which records itself in the log it trims.
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from governance.audit.schema import CONTENT_COLUMNS, GENESIS, dumps, migrate, row_hash

EXPORT_COLUMNS = (*CONTENT_COLUMNS, "prev_hash", "row_hash")
RETENTION_ACTOR = "governance.audit.retention"


@dataclass(frozen=True)
class AuditRecord:
    """One audited event before it is written (``seq``, times and hashes are the store's)."""

    source_key: str  #: idempotency key: ``<stream>/<entry id>`` for stream entries
    kind: str  #: verdict | alert | operator_action | explanation | drift | model_change | retention
    event: str = ""
    event_time_ms: int | None = None
    actor: str = ""
    asset_id: str = ""
    label: str = ""
    summary: str = ""
    stream: str = ""
    entry_id: str = ""
    input_refs: dict[str, Any] = field(default_factory=dict)
    models: dict[str, Any] = field(default_factory=dict)
    payload: dict[str, Any] = field(default_factory=dict)


def entry_position(entry_id: str) -> tuple[int, int] | None:
    """``"1700000000000-3"`` -> ``(1700000000000, 3)``; None when not a stream entry id."""
    ms, sep, seq = entry_id.partition("-")
    if not ms.isdigit() or (sep and not seq.isdigit()):
        return None
    return int(ms), int(seq or 0)


class ChainBroken(RuntimeError):
    """The newest row the chain should continue from is missing: the store was altered outside linewatch."""


class AuditWriter:
    """The inside of one write transaction (see :meth:`AuditStore.writing`)."""

    def __init__(self, conn: sqlite3.Connection, now_ms: int) -> None:
        self._conn = conn
        self._now_ms = now_ms
        self._head: tuple[int, str] | None = None
        self.inserted = 0

    def exists(self, source_key: str) -> bool:
        return self._conn.execute("SELECT 1 FROM audit_log WHERE source_key = ?", (source_key,)).fetchone() is not None

    def last_verdict(self, asset_id: str, before_entry_id: str) -> tuple[str, str] | None:
        """(event, label) of the asset's newest recorded verdict older than ``before_entry_id``."""
        pos = entry_position(before_entry_id) or (2**62, 0)
        row = self._conn.execute(
            "SELECT event, label FROM audit_log WHERE kind = 'verdict' AND asset_id = ? "
            "AND (entry_ms < ? OR (entry_ms = ? AND entry_seq < ?)) ORDER BY entry_ms DESC, entry_seq DESC LIMIT 1",
            (asset_id, pos[0], pos[0], pos[1])).fetchone()
        return (str(row[0]), str(row[1])) if row is not None else None

    def head(self) -> tuple[int, str]:
        """(seq, row_hash) the next row chains to; ``(0, GENESIS)`` for an empty store."""
        if self._head is None:
            row = self._conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'audit_log'").fetchone()
            seq = int(row[0]) if row is not None else 0
            if seq == 0:
                self._head = (0, GENESIS)
            else:
                got = self._conn.execute("SELECT row_hash FROM audit_log WHERE seq = ?", (seq,)).fetchone()
                if got is None:
                    raise ChainBroken(f"audit_log row {seq} (the newest ever written) is missing: the store was "
                                      "altered outside linewatch; run `linewatch audit verify` and keep a copy")
                self._head = (seq, str(got[0]))
        return self._head

    def insert(self, record: AuditRecord) -> bool:
        """Append ``record``; False (nothing written) when its ``source_key`` is already there."""
        if self.exists(record.source_key):
            return False
        seq, prev = self.head()
        pos = entry_position(record.entry_id) if record.entry_id else None
        content: dict[str, object] = {
            "seq": seq + 1, "source_key": record.source_key, "kind": record.kind, "event": record.event,
            "recorded_at_ms": self._now_ms, "event_time_ms": record.event_time_ms, "actor": record.actor,
            "asset_id": record.asset_id, "label": record.label, "summary": record.summary, "stream": record.stream,
            "entry_id": record.entry_id, "input_refs": dumps(record.input_refs), "models": dumps(record.models),
            "payload": dumps(record.payload)}
        h = row_hash(prev, content)
        cols = [*CONTENT_COLUMNS, "entry_ms", "entry_seq", "prev_hash", "row_hash"]
        values = [*(content[c] for c in CONTENT_COLUMNS), pos[0] if pos else None, pos[1] if pos else None, prev, h]
        self._conn.execute(f"INSERT INTO audit_log ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                           values)
        self._head = (seq + 1, h)
        self.inserted += 1
        return True


@dataclass(frozen=True)
class RetentionResult:
    deleted: int
    max_seq: int
    cutoff_ms: int
    run_key: str  #: source_key of the run's own record ('' when nothing was old enough)


@dataclass
class VerifyReport:
    rows: int = 0
    first_seq: int = 0
    head_seq: int = 0
    head_hash: str = GENESIS
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


class AuditStore:
    """An open audit database (created and migrated to the latest schema on open)."""

    def __init__(self, path: Path, synchronous: str = "FULL", timeout_s: float = 30.0,
                 clock: Callable[[], float] = time.time) -> None:
        if synchronous not in ("FULL", "NORMAL", "EXTRA"):
            raise ValueError(f"synchronous must be FULL, NORMAL or EXTRA, not {synchronous!r}")
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._clock = clock
        # autocommit mode: transactions are explicit (BEGIN IMMEDIATE ... COMMIT)
        self._conn = sqlite3.connect(self.path, timeout=timeout_s, isolation_level=None, check_same_thread=False)
        mode = self._conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise RuntimeError(f"{self.path}: SQLite refused WAL mode (got {mode!r}); put the audit store on a "
                               "local file system (WAL does not work over NFS)")
        self._conn.execute(f"PRAGMA synchronous={synchronous}")
        self._conn.execute(f"PRAGMA busy_timeout={int(timeout_s * 1000)}")
        migrate(self._conn)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> AuditStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def connection(self) -> sqlite3.Connection:
        """The raw connection (read-only uses: tests, export). Writes go through :meth:`writing`."""
        return self._conn

    # -- writing ------------------------------------------------------------------------------------
    @contextmanager
    def writing(self) -> Iterator[AuditWriter]:
        """One write transaction: everything inserted is durable when the block exits (COMMIT)."""
        self._conn.execute("BEGIN IMMEDIATE")
        writer = AuditWriter(self._conn, int(self._clock() * 1000))
        try:
            yield writer
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def append(self, records: Sequence[AuditRecord]) -> int:
        """Append ``records`` in one transaction; returns how many were new."""
        with self.writing() as w:
            for r in records:
                w.insert(r)
            return w.inserted

    def run_retention(self, retention_days: int, now_ms: int | None = None,
                      actor: str = RETENTION_ACTOR) -> RetentionResult:
        """Remove the rows recorded more than ``retention_days`` ago, and record that it did.

        Rows go as a prefix of the chain (every ``seq`` up to the newest row older than the cutoff),
        in one transaction with the run's own ``retention`` record, which names the cutoff, the
        count and the hash of the last removed row (the anchor ``verify`` checks the rest against).
        """
        if retention_days <= 0:
            raise ValueError("retention_days must be > 0 (0 means keep forever: do not run the job)")
        now = now_ms if now_ms is not None else int(self._clock() * 1000)
        cutoff = now - retention_days * 86_400_000
        with self.writing() as w:
            row = self._conn.execute("SELECT MAX(seq) FROM audit_log WHERE recorded_at_ms < ?", (cutoff,)).fetchone()
            max_seq = int(row[0] or 0)
            if max_seq == 0:
                return RetentionResult(0, 0, cutoff, "")
            count = int(self._conn.execute("SELECT COUNT(*) FROM audit_log WHERE seq <= ?", (max_seq,)).fetchone()[0])
            last_hash = str(self._conn.execute("SELECT row_hash FROM audit_log WHERE seq = ?",
                                               (max_seq,)).fetchone()[0])
            key = f"retention:{uuid.uuid4().hex}"
            when = datetime.fromtimestamp(cutoff / 1000, UTC).isoformat(timespec="seconds")
            w.insert(AuditRecord(
                key, kind="retention", event="deleted", event_time_ms=now, actor=actor,
                summary=f"retention {retention_days} d: removed {count} rows recorded before {when} (seq <= {max_seq})",
                payload={"retention_days": retention_days, "cutoff_ms": cutoff, "max_seq": max_seq, "deleted": count,
                         "last_deleted_hash": last_hash}))
            self._conn.execute("UPDATE retention_gate SET run_key = ?, max_seq = ? WHERE id = 1", (key, max_seq))
            self._conn.execute("DELETE FROM audit_log WHERE seq <= ?", (max_seq,))
            self._conn.execute("UPDATE retention_gate SET run_key = NULL, max_seq = 0 WHERE id = 1")
        return RetentionResult(count, max_seq, cutoff, key)

    # -- reading ------------------------------------------------------------------------------------
    def count(self, kind: str | None = None) -> int:
        if kind is None:
            return int(self._conn.execute("SELECT COUNT(*) FROM audit_log").fetchone()[0])
        return int(self._conn.execute("SELECT COUNT(*) FROM audit_log WHERE kind = ?", (kind,)).fetchone()[0])

    def rows(self, since_ms: int | None = None, until_ms: int | None = None, after_seq: int = 0,
             limit: int | None = None) -> Iterator[dict[str, Any]]:
        """Rows in ``seq`` order with ``since_ms <= recorded_at_ms < until_ms`` (each bound optional)."""
        sql = f"SELECT {', '.join(EXPORT_COLUMNS)} FROM audit_log WHERE seq > ?"
        args: list[object] = [after_seq]
        if since_ms is not None:
            sql += " AND recorded_at_ms >= ?"
            args.append(since_ms)
        if until_ms is not None:
            sql += " AND recorded_at_ms < ?"
            args.append(until_ms)
        sql += " ORDER BY seq"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        for row in self._conn.execute(sql, args):
            yield dict(zip(EXPORT_COLUMNS, row, strict=True))

    def verify(self) -> VerifyReport:
        """Walk the hash chain: every row's hash matches its content, links to the row before, and
        ``seq`` has no gap; the oldest row links to the genesis or to a retention run's anchor."""
        report = VerifyReport()
        anchors: dict[int, str] = {}
        for (payload,) in self._conn.execute("SELECT payload FROM audit_log WHERE kind = 'retention'"):
            p = json.loads(payload)
            anchors[int(p.get("max_seq", 0))] = str(p.get("last_deleted_hash", ""))
        prev_seq = 0
        prev_hash = GENESIS
        cols = ", ".join((*CONTENT_COLUMNS, "prev_hash", "row_hash"))
        for row in self._conn.execute(f"SELECT {cols} FROM audit_log ORDER BY seq"):
            content = dict(zip(CONTENT_COLUMNS, row[:len(CONTENT_COLUMNS)], strict=True))
            seq, stored_prev, stored_hash = int(row[0]), str(row[-2]), str(row[-1])
            if report.rows == 0:
                report.first_seq = seq
                if seq == 1 and stored_prev != GENESIS:
                    report.problems.append("row 1 does not start from the genesis hash")
                elif seq > 1 and anchors.get(seq - 1) != stored_prev:
                    report.problems.append(f"rows 1..{seq - 1} are gone and no retention record accounts for them")
            else:
                if seq != prev_seq + 1:
                    report.problems.append(f"rows {prev_seq + 1}..{seq - 1} are missing")
                if stored_prev != prev_hash:
                    report.problems.append(f"row {seq}: prev_hash does not match row {prev_seq}'s hash")
            if row_hash(stored_prev, content) != stored_hash:
                report.problems.append(f"row {seq}: content does not match its hash (edited)")
            report.rows += 1
            prev_seq, prev_hash = seq, stored_hash
        report.head_seq, report.head_hash = prev_seq, prev_hash
        return report
