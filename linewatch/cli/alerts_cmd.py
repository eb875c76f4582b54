"""``linewatch alerts list|show|ack|shelve|unshelve|confirm|reject``: what an operator types.

Works against the Redis in LINEWATCH_REDIS__URL, or the running ``linewatch demo``.
"""

from __future__ import annotations

import getpass
import os
import time

import typer
from rich.table import Table

from linewatch.cli.context import cli_context
from linewatch.cli.serve_cmd import REDIS_URL, connect

app = typer.Typer(help="List alerts and act on them as an operator (acknowledge, shelve, confirm, reject).",
                  no_args_is_help=True)

USER = typer.Option(None, "--user", "-u", help="Acting operator (default: $LINEWATCH_USER, else the login name).")


def _store(ctx: typer.Context, redis_url: str | None):  # type: ignore[no-untyped-def]
    from services.alerts.store import AlertStore

    cli = cli_context(ctx)
    settings, client, names = connect(cli, redis_url)
    return cli, AlertStore(client, names, settings.streams.maxlen)


def _user(user: str | None) -> str:
    return user or os.environ.get("LINEWATCH_USER") or getpass.getuser()


def _age(ms: int, now: int) -> str:
    s = max(now - ms, 0) // 1000
    return f"{s}s" if s < 120 else f"{s // 60}m" if s < 7200 else f"{s // 3600}h"


@app.command("list")
def list_alerts(
    ctx: typer.Context,
    all_: bool = typer.Option(False, "--all", "-a", help="Include closed (cleared and acknowledged) alerts."),
    asset: str | None = typer.Option(None, "--asset", help="Only this asset."),
    members: bool = typer.Option(False, "--members", help="Also list the members of flood groups."),
    redis_url: str | None = REDIS_URL,
) -> None:
    """Open alerts, most urgent first."""
    cli, store = _store(ctx, redis_url)
    now = store.now_ms()
    rows = store.list(open_only=not all_, asset_id=asset, include_members=members)
    table = Table(title=f"{len(rows)} alert(s)", show_lines=False)
    for col in ("id", "priority", "state", "asset", "label", "severity", "age", "message"):
        table.add_column(col)
    colour = {"urgent": "bold red", "high": "red", "medium": "yellow", "low": "cyan"}
    for r in rows:
        state = r.state(now) + (f" ({r.outcome})" if r.outcome else "")
        label = r.label + (f" [{len(r.members)} grouped]" if r.is_group else "")
        table.add_row(r.alert_id, f"[{colour[r.priority]}]{r.priority}[/]", state, r.asset_id, label,
                      f"{r.severity:.2f}", _age(r.raised_at_ms, now), r.message[:70])
    cli.console.print(table)


def _do(ctx: typer.Context, redis_url: str | None, action: str, alert_id: str, **kwargs: object) -> None:
    from services.alerts.store import AlertNotFound, InvalidAction

    cli, store = _store(ctx, redis_url)
    try:
        rec = getattr(store, action)(alert_id, **kwargs)
    except AlertNotFound as exc:
        cli.console.print(f"[red]error:[/red] {exc.args[0]}")
        raise typer.Exit(1) from exc
    except InvalidAction as exc:
        cli.console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    cli.console.print(f"{rec.alert_id}: {rec.state(store.now_ms())}"
                      + (f", {rec.outcome} by {rec.outcome_by}" if rec.outcome else ""))


@app.command("ack")
def ack(ctx: typer.Context, alert_id: str, user: str | None = USER, comment: str = typer.Option("", "--comment"),
        redis_url: str | None = REDIS_URL) -> None:
    """Acknowledge an alert (a flood group: all its members)."""
    _do(ctx, redis_url, "ack", alert_id, user=_user(user), comment=comment)


@app.command("shelve")
def shelve(ctx: typer.Context, alert_id: str, minutes: float = typer.Option(60.0, "--minutes", min=0.01),
           reason: str = typer.Option("", "--reason"), user: str | None = USER,
           redis_url: str | None = REDIS_URL) -> None:
    """Shelve an alert for a while (at most 24 h); it comes back by itself."""
    _do(ctx, redis_url, "shelve", alert_id, user=_user(user), duration_s=minutes * 60, reason=reason)


@app.command("unshelve")
def unshelve(ctx: typer.Context, alert_id: str, user: str | None = USER, redis_url: str | None = REDIS_URL) -> None:
    """End a shelf early."""
    _do(ctx, redis_url, "unshelve", alert_id, user=_user(user))


@app.command("confirm")
def confirm(ctx: typer.Context, alert_id: str, label: str | None = typer.Option(None, "--label",
            help="What the fault really was (default: the alert's label)."),
            comment: str = typer.Option("", "--comment"), user: str | None = USER,
            redis_url: str | None = REDIS_URL) -> None:
    """The fault is real: recorded as feedback (a label) for the models' error-rate monitoring."""
    _do(ctx, redis_url, "confirm", alert_id, user=_user(user), true_label=label, comment=comment)


@app.command("reject")
def reject(ctx: typer.Context, alert_id: str, comment: str = typer.Option("", "--comment"),
           user: str | None = USER, redis_url: str | None = REDIS_URL) -> None:
    """False alarm: recorded as feedback (true label normal)."""
    _do(ctx, redis_url, "reject", alert_id, user=_user(user), comment=comment)


@app.command("show")
def show(ctx: typer.Context, alert_id: str, redis_url: str | None = REDIS_URL) -> None:
    """One alert and its history of events."""
    cli, store = _store(ctx, redis_url)
    rec = store.get(alert_id)
    if rec is None:
        cli.console.print(f"[red]error:[/red] no alert {alert_id!r}")
        raise typer.Exit(1)
    cli.console.print_json(rec.model_dump_json())
    for eid, ev in store.events(200, alert_id):
        when = time.strftime("%H:%M:%S", time.localtime(ev.created_at_ms / 1000))
        cli.console.print(f"{when} {ev.event:<14} {ev.state:<20} {ev.user or ''} {ev.comment or ev.message[:60]}")
