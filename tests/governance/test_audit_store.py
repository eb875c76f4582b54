"""The audit store on a real SQLite file: append-only in the database, migrations, retention,
the hash chain, and export (CSV/Parquet through the CLI)."""

from __future__ import annotations

import csv
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from governance.audit.schema import LATEST, SchemaTooNew, current_version, migrate
from governance.audit.store import AuditRecord, AuditStore
from linewatch.cli.app import app
from linewatch.contract import StreamNames


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


VERDICTS, ALERTS = StreamNames().verdicts_shard(0), StreamNames().alerts


def rec(i: int, kind: str = "verdict") -> AuditRecord:
    return AuditRecord(f"{VERDICTS}/{1000 + i}-0", kind=kind, event="raised", event_time_ms=1000 + i,
                       actor="services.fusion", asset_id=f"A-{i % 3}", label="bearing_wear", summary=f"row {i}",
                       stream=VERDICTS, entry_id=f"{1000 + i}-0",
                       input_refs={"predictions": {"thermal": f"{900 + i}-0"}, "raw": f"thermal/f{i}.tiff"},
                       models={"thermal": {"name": "thermal-student", "version": "v3", "sha256": "ab" * 32}},
                       payload={"i": i})


@pytest.fixture
def store(tmp_path: Path) -> AuditStore:
    s = AuditStore(tmp_path / "audit" / "audit.sqlite")
    yield s
    s.close()


def raw(path: Path) -> sqlite3.Connection:
    """A plain connection, as any SQL client would open the file: no linewatch code involved."""
    return sqlite3.connect(path, isolation_level=None)


def test_wal_mode_and_idempotent_append(store: AuditStore) -> None:
    assert store.connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.connection.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert store.append([rec(i) for i in range(5)]) == 5
    assert store.append([rec(i) for i in range(3, 8)]) == 3  # 3, 4 exist: skipped, not duplicated
    assert store.count() == 8
    assert [r["seq"] for r in store.rows()] == list(range(1, 9))


def test_update_delete_and_replace_are_refused_by_the_database(store: AuditStore) -> None:
    store.append([rec(i) for i in range(4)])
    sql = raw(store.path)
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        sql.execute("UPDATE audit_log SET summary = 'forged' WHERE seq = 2")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        sql.execute("DELETE FROM audit_log WHERE seq = 2")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        sql.execute("DELETE FROM audit_log")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):  # REPLACE deletes without delete triggers
        sql.execute("INSERT OR REPLACE INTO audit_log (seq, source_key, kind, recorded_at_ms) "
                    "VALUES (2, 'x', 'verdict', 0)")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):  # UPSERT updates
        sql.execute("INSERT INTO audit_log (source_key, kind, recorded_at_ms) VALUES (?, "
                    "'verdict', 0) ON CONFLICT (source_key) DO UPDATE SET summary = 'forged'", (f"{VERDICTS}/1001-0",))
    # opening the retention gate by hand is not enough: the run must have recorded itself first
    sql.execute("UPDATE retention_gate SET run_key = 'retention:fake', max_seq = 4")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        sql.execute("DELETE FROM audit_log WHERE seq = 1")
    sql.close()
    assert store.count() == 4
    assert [r["summary"] for r in store.rows()] == [f"row {i}" for i in range(4)]
    assert store.verify().ok


def test_retention_removes_only_old_rows_and_records_itself(tmp_path: Path) -> None:
    day = 86_400.0
    clock = Clock(1_000 * day)
    store = AuditStore(tmp_path / "a.sqlite", clock=clock)
    store.append([rec(i) for i in range(3)])  # day 1000
    clock.t += 20 * day
    store.append([rec(i) for i in range(3, 5)])  # day 1020
    clock.t += 15 * day  # day 1035: keep 30 days -> cutoff day 1005
    result = store.run_retention(30)
    assert (result.deleted, result.max_seq) == (3, 3)
    rows = list(store.rows())
    assert [r["seq"] for r in rows] == [4, 5, 6]
    assert rows[-1]["kind"] == "retention" and rows[-1]["actor"] == "governance.audit.retention"
    assert "removed 3 rows" in rows[-1]["summary"]
    report = store.verify()
    assert report.ok, report.problems
    assert (report.first_seq, report.head_seq) == (4, 6)
    assert store.run_retention(30).deleted == 0  # nothing else is old enough; no record for a no-op
    assert store.count() == 3
    # after a run the gate is closed again: a hand-made DELETE is still refused
    sql = raw(store.path)
    assert sql.execute("SELECT run_key FROM retention_gate").fetchone()[0] is None
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        sql.execute("DELETE FROM audit_log WHERE seq = 4")
    sql.close()
    store.close()


def test_verify_detects_edits_and_removals_made_around_the_triggers(store: AuditStore) -> None:
    store.append([rec(i) for i in range(6)])
    assert store.verify().ok
    sql = raw(store.path)
    sql.execute("DROP TRIGGER audit_log_no_update")  # someone with file access, bypassing linewatch
    sql.execute("UPDATE audit_log SET summary = 'forged' WHERE seq = 3")
    sql.execute("DROP TRIGGER audit_log_no_delete")
    sql.execute("DELETE FROM audit_log WHERE seq = 5")
    sql.close()
    problems = store.verify().problems
    assert any("row 3: content does not match" in p for p in problems), problems
    assert any("rows 5..5 are missing" in p for p in problems), problems
    result = CliRunner().invoke(app, ["audit", "verify", "--path", str(store.path)])
    assert result.exit_code == 1, result.output
    assert "FAIL" in result.output


def test_migration_from_schema_v1_chains_existing_rows(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    assert migrate(conn, target=1) == [1]
    for i in range(3):  # rows written by a v1 linewatch (no hash columns)
        conn.execute("INSERT INTO audit_log (source_key, kind, event, recorded_at_ms, actor, summary) "
                     "VALUES (?, 'operator_action', 'acknowledged', ?, 'maria', ?)", (f"{ALERTS}/{i}-0", i, f"old {i}"))
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("UPDATE audit_log SET actor = 'x'")
    conn.close()

    store = AuditStore(path)  # opens -> migrates to the latest version
    assert current_version(store.connection) == LATEST == 2
    versions = store.connection.execute("SELECT version FROM schema_version ORDER BY version").fetchall()
    assert versions == [(1,), (2,)]
    assert [r["summary"] for r in store.rows()] == ["old 0", "old 1", "old 2"]
    assert all(len(r["row_hash"]) == 64 for r in store.rows())
    store.append([rec(9)])
    report = store.verify()
    assert report.ok and report.rows == 4, report.problems
    sql = raw(path)
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):  # the trigger came back after the backfill
        sql.execute("UPDATE audit_log SET actor = 'x' WHERE seq = 1")
    sql.execute("INSERT INTO schema_version VALUES (99, 0, 'from the future')")
    sql.close()
    store.close()
    with pytest.raises(SchemaTooNew, match="upgrade linewatch"):
        AuditStore(path)


def test_export_csv_and_parquet_round_trip_with_since(tmp_path: Path) -> None:
    import pyarrow.parquet as pq  # in .venv (linewatch[flink]); the CLI says what to install when missing
    clock = Clock(1_800_000_000.0)  # 2027-01-15T08:00:00Z
    path = tmp_path / "a.sqlite"
    store = AuditStore(path, clock=clock)
    store.append([rec(i) for i in range(4)])
    clock.t += 3600
    store.append([rec(i) for i in range(4, 10)])
    expected = list(store.rows(since_ms=int(clock.t * 1000)))
    assert len(expected) == 6
    store.close()
    since = "2027-01-15T08:30:00Z"
    runner = CliRunner()
    out_csv = tmp_path / "x.csv"
    res = runner.invoke(app, ["audit", "export", "--path", str(path), "--since", since, "--format", "csv",
                              "--out", str(out_csv)])
    assert res.exit_code == 0, res.output
    with out_csv.open(newline="") as fh:
        got = list(csv.DictReader(fh))
    assert [int(r["seq"]) for r in got] == [r["seq"] for r in expected]
    assert [r["row_hash"] for r in got] == [r["row_hash"] for r in expected]
    assert got[0]["input_refs"] == expected[0]["input_refs"]
    out_pq = tmp_path / "x.parquet"
    res = runner.invoke(app, ["audit", "export", "--path", str(path), "--since", since, "--until",
                              "2027-01-15T10:00:00Z", "--format", "parquet", "--out", str(out_pq)])
    assert res.exit_code == 0, res.output
    assert pq.read_table(out_pq).to_pylist() == expected
    res = runner.invoke(app, ["audit", "export", "--path", str(path), "--since", "yesterday-ish", "--out",
                              str(out_csv)])
    assert res.exit_code == 2 and "ISO 8601" in res.output


def test_cli_tail_and_retention(tmp_path: Path) -> None:
    day = 86_400.0
    clock = Clock(1_000 * day)
    path = tmp_path / "a.sqlite"
    store = AuditStore(path, clock=clock)
    store.append([rec(i, kind="operator_action") for i in range(3)])
    store.close()
    runner = CliRunner()
    res = runner.invoke(app, ["audit", "tail", "--path", str(path), "-n", "2", "--kind", "operator_action"])
    assert res.exit_code == 0, res.output
    assert "row 1" in res.output and "row 2" in res.output and "row 0" not in res.output
    res = runner.invoke(app, ["audit", "retention", "--path", str(path), "--days", "30"])  # now is far later
    assert res.exit_code == 0 and "removed 3 row(s)" in res.output, res.output
    with AuditStore(path) as s:
        assert [r["kind"] for r in s.rows()] == ["retention"]
        assert s.verify().ok
    res = runner.invoke(app, ["audit", "verify", "--path", str(path)])
    assert res.exit_code == 0 and "ok" in res.output, res.output
    res = runner.invoke(app, ["audit", "tail", "--path", str(tmp_path / "missing.sqlite")])
    assert res.exit_code == 2 and "no audit store" in res.output
