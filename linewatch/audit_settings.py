"""Settings of the audit trail (``linewatch serve audit``, ``linewatch audit ...``), nested in
``linewatch.settings.Settings`` as ``audit``.

Plain pydantic, no stage imports. Environment variables follow the usual scheme, e.g.
``LINEWATCH_AUDIT__RETENTION_DAYS=90``, ``LINEWATCH_AUDIT__VERDICTS=all``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from linewatch.service_settings import WorkerSettings


class AuditSettings(WorkerSettings):
    """The append-only audit store (SQLite, WAL) and the worker that fills it from the streams."""

    path: Path | None = Field(None, description="SQLite file of the audit trail. Unset: <data_dir>/audit/audit.sqlite.")
    retention_days: int = Field(365, ge=0, description="Rows older than this are removed by the audited "
                                "retention job (0: keep forever).")
    retention_interval_s: int = Field(3_600, ge=1, description="How often the worker runs the retention job.")
    verdicts: Literal["changes", "all"] = Field(
        "changes", description="changes: record a verdict when its asset's state or fault label changes (first "
        "verdict, raised, fault label change, cleared); all: every verdict (many per second on a full line).")
    synchronous: Literal["FULL", "NORMAL"] = Field(
        "FULL", description="SQLite PRAGMA synchronous. FULL: a committed (and so acknowledged) row survives a "
        "power cut; NORMAL (WAL): survives a process crash, the last commits may be lost on power loss.")
    max_deliveries: int = Field(50, ge=1, description="An entry whose record keeps failing (disk full, store "
                                "locked) is retried with backoff this often before it goes to the dead-letter stream "
                                "(reason max_deliveries, with its stream reference): an audit would rather fall "
                                "behind (backpressure alert) than drop, but one poison entry must not block a shard.")
    max_batch: int = Field(256, ge=1, le=10_000, description="Entries per SQLite transaction (one fsync each).")

    def store_path(self, data_dir: Path) -> Path:
        """The SQLite file in force."""
        return self.path.expanduser() if self.path is not None else data_dir / "audit" / "audit.sqlite"
