"""Root of the ``linewatch`` CLI: one subcommand per stage of the line."""

from __future__ import annotations

from pathlib import Path

import typer

from linewatch import __version__
from linewatch.cli import (
    alerts_cmd,
    audit_cmd,
    config_cmd,
    demo_cmd,
    ingest_cmd,
    inspect_cmd,
    models_cmd,
    redis_cmd,
    retention_cmd,
    serve_cmd,
    simulate_cmd,
    web_cmd,
)
from linewatch.cli.context import CliContext

app = typer.Typer(
    name="linewatch",
    help=(
        "linewatch: PLC logs, thermal frames and machine audio in; per-asset fault verdicts out.\n\n"
        "Start with `linewatch demo` (a simulated line, embedded Flink and Redis), "
        "or `linewatch simulate --help`."
    ),
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_show_locals=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"linewatch {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    config: Path | None = typer.Option(
        None, "--config", "-c", help="TOML config file (else $LINEWATCH_CONFIG).", dir_okay=False
    ),
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
) -> None:
    ctx.obj = CliContext(config_file=config)


app.add_typer(config_cmd.app, name="config")
app.add_typer(redis_cmd.app, name="redis")
app.add_typer(serve_cmd.app, name="serve")  # services (issue 9)
retention_cmd.register(serve_cmd.app)  # redis-memory (issue 8): linewatch serve retention
app.add_typer(alerts_cmd.app, name="alerts")  # services (issue 9)
audit_cmd.register(app)  # governance (issue 11): linewatch audit ..., linewatch serve audit
simulate_cmd.register(app)
demo_cmd.register(app)
ingest_cmd.register(app)
models_cmd.register(app)
inspect_cmd.register(app)  # models: score recorded files (linewatch inspect)
web_cmd.register(app, serve_cmd.app)  # web app (issue 12): linewatch serve web, linewatch users


def main() -> None:
    app()


if __name__ == "__main__":
    main()
