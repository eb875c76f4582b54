"""``linewatch config``: inspect the effective settings."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from linewatch.cli.context import cli_context
from linewatch.settings import describe_errors, settings_with_sources

app = typer.Typer(help="Inspect linewatch's settings (LINEWATCH_* env vars, --config TOML file, defaults).", no_args_is_help=True)


def warn_readable_secret(rows: list[tuple[str, object, str]]) -> None:
    """A password read from a config file that others may read: say so (stderr), with the fix."""
    for name, _, source in rows:
        if name == "redis.password" and source.startswith("file "):
            path = Path(source.removeprefix("file ").split(" (")[0])
            if path.is_file() and path.stat().st_mode & 0o077:
                Console(stderr=True).print(f"[yellow]warning:[/yellow] {path} holds redis.password and is readable by others "
                              f"(mode {path.stat().st_mode & 0o777:o}): chmod 600 {path}")


@app.command("show")
def show(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Print every effective setting and where its value came from (cli, env, file or default)."""
    cli = cli_context(ctx)
    try:
        rows = settings_with_sources(cli.config_file)
    except FileNotFoundError as exc:
        cli.console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    except ValidationError as exc:
        cli.console.print(f"[red]error:[/red] invalid settings: {escape(describe_errors(exc))}")
        raise typer.Exit(2) from None
    warn_readable_secret(rows)
    if as_json:
        typer.echo(json.dumps([{"name": n, "value": v, "source": s} for n, v, s in rows], indent=2))
        return
    table = Table(title="linewatch settings", show_lines=False)
    table.add_column("setting", style="cyan", no_wrap=True)
    table.add_column("value")
    table.add_column("source", style="magenta")
    for name, value, source in rows:
        table.add_row(name, "" if value is None else str(value), source)
    cli.console.print(table)
    cli.console.print(
        "Override any value with an environment variable such as [bold]LINEWATCH_REDIS__URL[/bold] "
        "(sections joined by '__') or a TOML file given by --config / LINEWATCH_CONFIG."
    )
