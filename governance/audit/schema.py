"""The audit store's schema and its ordered migrations.

``schema_version`` holds one row per applied migration (version, when, what). :func:`migrate`
applies every migration above the current version, in order, each in its own transaction, so a
crash mid-migration leaves the database at the last complete version. A database written by a
*newer* linewatch (version above :data:`LATEST`) is refused rather than guessed at.

Append-only is enforced by the database itself (triggers), not by the Python API:

- ``audit_log_no_update``: every ``UPDATE`` of ``audit_log`` aborts (an UPSERT too).
- ``audit_log_no_replace``: an ``INSERT`` whose ``seq`` or ``source_key`` already exists aborts
  (``INSERT OR REPLACE`` would otherwise delete the old row without firing delete triggers).
- ``audit_log_no_delete``: a ``DELETE`` aborts unless the retention gate is open for a run whose
  own ``retention`` record is already in ``audit_log`` and the row is in the run's prefix
  (``seq <= max_seq``): rows leave only through the retention job, and never without a record of it.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

GENESIS = "0" * 64
NO_UPDATE = "audit_log is append-only: a record cannot be edited"
NO_DELETE = ("audit_log is append-only: rows are removed only by the retention job "
             "(linewatch audit retention), which records itself")
NO_REPLACE = "audit_log is append-only: a row with this seq or source_key exists and cannot be replaced"

# Content columns, in the order the hash chain covers them (see governance.audit.store.row_hash).
CONTENT_COLUMNS = ("seq", "source_key", "kind", "event", "recorded_at_ms", "event_time_ms", "actor", "asset_id",
                   "label", "summary", "stream", "entry_id", "input_refs", "models", "payload")


_V1_STATEMENTS = (
    """CREATE TABLE audit_log (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        source_key TEXT NOT NULL UNIQUE,      -- idempotency key: stream/entry id, model:..., retention:...
        kind TEXT NOT NULL,                   -- verdict|alert|operator_action|explanation|drift|model_change|...
        event TEXT NOT NULL DEFAULT '',       -- raised, cleared, acknowledged, first_seen, ...
        recorded_at_ms INTEGER NOT NULL,      -- when the audit store wrote the row
        event_time_ms INTEGER,                -- when it happened (the message's own time)
        actor TEXT NOT NULL DEFAULT '',       -- who: the operator's user name, or the stage
        asset_id TEXT NOT NULL DEFAULT '',
        label TEXT NOT NULL DEFAULT '',
        summary TEXT NOT NULL DEFAULT '',     -- what, in one line
        stream TEXT NOT NULL DEFAULT '',      -- the input entry this row records ('' if synthetic)
        entry_id TEXT NOT NULL DEFAULT '',
        entry_ms INTEGER,                     -- entry id as numbers (ordering of verdicts per asset)
        entry_seq INTEGER,
        input_refs TEXT NOT NULL DEFAULT '{}',  -- JSON: entry ids, raw files, alert ids
        models TEXT NOT NULL DEFAULT '{}',      -- JSON: modality -> {name, version, sha256}
        payload TEXT NOT NULL DEFAULT '{}'      -- JSON: the message body (arrays left out)
    )""",
    "CREATE INDEX audit_log_time ON audit_log (recorded_at_ms)",
    "CREATE INDEX audit_log_asset ON audit_log (kind, asset_id, entry_ms, entry_seq)",
    """CREATE TABLE retention_gate (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        run_key TEXT,                         -- source_key of the retention record of the open run
        max_seq INTEGER NOT NULL DEFAULT 0
    )""",
    "INSERT INTO retention_gate (id, run_key, max_seq) VALUES (1, NULL, 0)",
    f"""CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
    BEGIN SELECT RAISE(ABORT, '{NO_UPDATE}'); END""",
    f"""CREATE TRIGGER audit_log_no_replace BEFORE INSERT ON audit_log
    WHEN EXISTS (SELECT 1 FROM audit_log WHERE seq = NEW.seq OR source_key = NEW.source_key)
    BEGIN SELECT RAISE(ABORT, '{NO_REPLACE}'); END""",
    f"""CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
    WHEN NOT EXISTS (
        SELECT 1 FROM retention_gate g
        WHERE g.id = 1 AND g.run_key IS NOT NULL AND OLD.seq <= g.max_seq
          AND EXISTS (SELECT 1 FROM audit_log r WHERE r.source_key = g.run_key AND r.kind = 'retention'))
    BEGIN SELECT RAISE(ABORT, '{NO_DELETE}'); END""",
)


def _v1(conn: sqlite3.Connection) -> None:
    """The audit log, its indexes, the retention gate and the append-only triggers."""
    for statement in _V1_STATEMENTS:
        conn.execute(statement)  # one by one: executescript() would COMMIT the migration's transaction


def _v2(conn: sqlite3.Connection) -> None:
    """Hash chain: each row stores the SHA-256 of the previous row's hash and its own content.

    Rows written before this version are chained here, in ``seq`` order: the one place an
    ``UPDATE`` of ``audit_log`` happens, inside this migration's transaction, with the trigger
    dropped and re-created around it.
    """
    conn.execute("ALTER TABLE audit_log ADD COLUMN prev_hash TEXT NOT NULL DEFAULT ''")
    conn.execute("ALTER TABLE audit_log ADD COLUMN row_hash TEXT NOT NULL DEFAULT ''")
    conn.execute("DROP TRIGGER audit_log_no_update")
    prev = GENESIS
    cols = ", ".join(CONTENT_COLUMNS)
    for row in conn.execute(f"SELECT {cols} FROM audit_log ORDER BY seq").fetchall():
        h = row_hash(prev, dict(zip(CONTENT_COLUMNS, row, strict=True)))
        conn.execute("UPDATE audit_log SET prev_hash = ?, row_hash = ? WHERE seq = ?", (prev, h, row[0]))
        prev = h
    conn.execute(f"CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log "
                 f"BEGIN SELECT RAISE(ABORT, '{NO_UPDATE}'); END")


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    apply: Callable[[sqlite3.Connection], None]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "audit_log, retention gate, append-only triggers", _v1),
    Migration(2, "hash chain (prev_hash, row_hash), existing rows chained", _v2),
)
LATEST = MIGRATIONS[-1].version


class SchemaTooNew(RuntimeError):
    """The database was written by a newer linewatch than this one."""


def current_version(conn: sqlite3.Connection) -> int:
    conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, applied_at_ms INTEGER "
                 "NOT NULL, description TEXT NOT NULL)")
    row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
    return int(row[0] or 0)


def migrate(conn: sqlite3.Connection, target: int = LATEST) -> list[int]:
    """Apply the migrations above the database's version up to ``target``; returns those applied.

    ``conn`` must be in autocommit mode (``isolation_level=None``): each migration runs in its
    own ``BEGIN IMMEDIATE`` transaction, together with its ``schema_version`` row.
    """
    applied: list[int] = []
    current = current_version(conn)
    if current > LATEST:
        raise SchemaTooNew(f"audit database is at schema version {current}, this linewatch knows up to {LATEST}: "
                           "upgrade linewatch (never downgrade an audit store)")
    for m in MIGRATIONS:
        if m.version <= current or m.version > target:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            if current_version(conn) >= m.version:  # another process migrated meanwhile
                conn.execute("COMMIT")
                continue
            m.apply(conn)
            conn.execute("INSERT INTO schema_version (version, applied_at_ms, description) VALUES (?, ?, ?)",
                         (m.version, int(time.time() * 1000), m.description))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        applied.append(m.version)
    return applied


def dumps(value: object) -> str:
    """Canonical JSON of the stored JSON columns (sorted keys, no spaces): stable for the hash chain."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def row_hash(prev_hash: str, content: Mapping[str, object]) -> str:
    """SHA-256 (hex) of the previous row's hash followed by the canonical JSON of this row's
    :data:`CONTENT_COLUMNS` values (the JSON columns as their stored text)."""
    text = prev_hash + dumps([content[c] for c in CONTENT_COLUMNS])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
