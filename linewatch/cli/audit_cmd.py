"""``linewatch serve audit`` and ``linewatch audit export|verify|retention|tail``: the audit trail.

The store is ``settings.audit.path`` (default ``<data_dir>/audit/audit.sqlite``); ``--path`` overrides.
See docs/audit.md.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Literal

import typer
from rich.table import Table

from linewatch.cli import serve_cmd
from linewatch.cli.context import CliContext, cli_context

app = typer.Typer(help="The append-only audit trail: export, verify the hash chain, retention, tail.",
                  no_args_is_help=True)

PATH = typer.Option(None, "--path", help="Audit SQLite file (default: settings audit.path, else "
                    "<data_dir>/audit/audit.sqlite).", dir_okay=False)


def _store_path(cli: CliContext, path: Path | None) -> Path:
    settings = cli.settings()
    return path or settings.audit.store_path(settings.data_dir)


def _open(cli: CliContext, path: Path | None, must_exist: bool = True):  # type: ignore[no-untyped-def]
    from governance.audit.schema import SchemaTooNew
    from governance.audit.store import AuditStore

    file = _store_path(cli, path)
    if must_exist and not file.is_file():
        cli.console.print(f"[red]error:[/red] no audit store at {file}: start `linewatch serve audit` "
                          "(or `linewatch demo`), or pass --path")
        raise typer.Exit(2)
    try:
        return AuditStore(file, synchronous=cli.settings().audit.synchronous)
    except SchemaTooNew as exc:
        cli.console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc


def serve_audit(ctx: typer.Context, redis_url: str | None = serve_cmd.REDIS_URL,
                metrics_port: int | None = serve_cmd.METRICS_PORT,
                path: Path | None = PATH) -> None:
    """Verdicts, alerts (operator actions), explanations and drift -> the append-only audit store."""
    from governance.audit.service import audit_workers
    from services.runner import serve_workers

    cli = cli_context(ctx)
    settings, client, names = serve_cmd.connect(cli, redis_url, **{"audit.metrics_port": metrics_port,
                                                                   "audit.path": path})
    workers = audit_workers(client, names, settings.audit, settings.data_dir, settings.streams.maxlen)
    raise typer.Exit(serve_workers(workers, settings.audit, settings.log_level))


@app.command("export")
def export_cmd(
    ctx: typer.Context,
    since: str = typer.Option(..., "--since", help="From (inclusive): ISO 8601 (UTC unless zoned), a span ago "
                              "(30m, 2h, 7d) or epoch ms. Compared with the time the row was recorded."),
    until: str | None = typer.Option(None, "--until", help="To (exclusive), same forms; default: now."),
    fmt: str = typer.Option("csv", "--format", "-f", help="csv or parquet (parquet needs pyarrow)."),
    out: Path = typer.Option(..., "--out", "-o", help="File to write.", dir_okay=False),
    path: Path | None = PATH,
) -> None:
    """Write the audit rows of a time range to CSV or Parquet (every column, hashes included)."""
    from governance.audit.export import ExportError, export, parse_when

    cli = cli_context(ctx)
    if fmt not in ("csv", "parquet"):
        cli.console.print(f"[red]error:[/red] --format must be csv or parquet, not {fmt!r}")
        raise typer.Exit(2)
    now = int(time.time() * 1000)
    try:
        since_ms = parse_when(since, now)
        until_ms = parse_when(until, now) if until else None
        with _open(cli, path) as store:
            kind: Literal["csv", "parquet"] = "csv" if fmt == "csv" else "parquet"
            n = export(store.rows(since_ms, until_ms), out, kind)
    except ExportError as exc:
        cli.console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    cli.console.print(f"wrote {n} row(s) to {out}")


@app.command("verify")
def verify_cmd(ctx: typer.Context, path: Path | None = PATH) -> None:
    """Check the hash chain: no row edited, none missing except through recorded retention runs."""
    cli = cli_context(ctx)
    with _open(cli, path) as store:
        report = store.verify()
    for problem in report.problems[:50]:
        cli.console.print(f"[red]FAIL[/red] {problem}")
    if report.problems:
        cli.console.print(f"[red]{len(report.problems)} problem(s)[/red] in {report.rows} row(s)")
        raise typer.Exit(1)
    cli.console.print(f"[green]ok[/green]: {report.rows} row(s), seq {report.first_seq}..{report.head_seq}, "
                      f"head hash {report.head_hash} (keep it elsewhere to anchor the chain)")


@app.command("retention")
def retention_cmd(ctx: typer.Context, days: int | None = typer.Option(None, "--days", help="Keep this many days "
                  "(default: settings audit.retention_days)."), path: Path | None = PATH) -> None:
    """Run the retention job now (the only way rows leave the store; the run is recorded)."""
    cli = cli_context(ctx)
    keep = days if days is not None else cli.settings().audit.retention_days
    if keep <= 0:
        cli.console.print("retention is off (0 days: keep forever); nothing removed")
        return
    with _open(cli, path) as store:
        result = store.run_retention(keep)
    cli.console.print(f"removed {result.deleted} row(s) recorded more than {keep} day(s) ago"
                      + (f" (seq <= {result.max_seq}; recorded as {result.run_key})" if result.deleted else ""))


@app.command("tail")
def tail_cmd(ctx: typer.Context, n: int = typer.Option(20, "-n", help="Rows to show."),
             kind: str | None = typer.Option(None, "--kind", help="Only this kind (verdict, operator_action, ...)."),
             path: Path | None = PATH) -> None:
    """The newest rows."""
    cli = cli_context(ctx)
    with _open(cli, path) as store:
        sql = "SELECT seq, recorded_at_ms, kind, event, actor, asset_id, summary FROM audit_log"
        args: tuple[object, ...] = ()
        if kind:
            sql += " WHERE kind = ?"
            args = (kind,)
        rows = store.connection.execute(sql + " ORDER BY seq DESC LIMIT ?", (*args, n)).fetchall()
    table = Table(title=f"audit trail: last {len(rows)} row(s)")
    for col in ("seq", "recorded (UTC)"):
        table.add_column(col, no_wrap=True)
    for col in ("kind", "event", "who", "asset"):
        table.add_column(col)
    table.add_column("what", ratio=1, min_width=24)
    for seq, at, k, event, actor, asset, summary in reversed(rows):
        table.add_row(str(seq), time.strftime("%m-%d %H:%M:%S", time.gmtime(at / 1000)), k, event, actor, asset,
                      summary)
    cli.console.print(table)


def register(root: typer.Typer) -> None:
    """``linewatch audit ...`` and ``linewatch serve audit``."""
    root.add_typer(app, name="audit")
    serve_cmd.app.command("audit")(serve_audit)
