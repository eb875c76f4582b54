"""``linewatch serve retention``: trim every stream family to ``streams.retention`` (bytes / age),
never past an entry a consumer group has not read; backpressure alerts and metrics instead of loss
(docs/redis.md). One per Redis server is enough; two are harmless (each trim is one atomic script).
"""

from __future__ import annotations

import typer
from rich.table import Table

from linewatch.cli.context import cli_context
from linewatch.cli.serve_cmd import METRICS_PORT, REDIS_URL, connect


def register(serve_app: typer.Typer) -> None:
    serve_app.command("retention")(retention)


def retention(
    ctx: typer.Context,
    redis_url: str | None = REDIS_URL,
    metrics_port: int | None = METRICS_PORT,
    interval_s: float | None = typer.Option(None, "--interval", help="Seconds between passes (default: settings)."),
    once: bool = typer.Option(False, "--once", help="One pass, print what it did, exit (e.g. from cron)."),
) -> None:
    """Keep Redis memory bounded: XTRIM MINID per stream family, never an unread entry."""
    from linewatch.streaming import Health, ObservabilityServer, configure_json_logging, stop_on_signals
    from linewatch.streaming.retention import RetentionKeeper, warn_eviction_policy

    cli = cli_context(ctx)
    settings, client, names = connect(cli, redis_url, **{"streams.retention.metrics_port": metrics_port,
                                                         "streams.retention.interval_s": interval_s})
    keeper = RetentionKeeper(client, names, settings.streams.retention)
    if once:
        policy = warn_eviction_policy(client)
        reports = keeper.run_once()
        table = Table(title=f"retention pass (maxmemory-policy: {policy or 'unknown'})")
        for col in ("family", "stream", "entries", "bytes", "trimmed", "held back by"):
            table.add_column(col)
        for r in reports:
            if r.length or r.trimmed:
                table.add_row(r.family, r.stream, str(r.length), str(r.bytes), str(r.trimmed),
                              ", ".join(r.holders) if r.blocked else "")
        cli.console.print(table)
        raise typer.Exit(0)
    configure_json_logging(settings.log_level)
    health = Health(stale_after_s=max(30.0, 3 * settings.streams.retention.interval_s))
    server = ObservabilityServer(keeper.metrics.registry, health, settings.streams.retention.metrics_host,
                                 settings.streams.retention.metrics_port,
                                 extra={"/backpressure": lambda: keeper.backpressured}).start()
    stop_on_signals(keeper.stop)  # SIGTERM/SIGINT, no lock in the handler (linewatch.stop_signals)

    def on_pass(_reports: object) -> None:
        health.beat()
        health.set_ready(True, "trimming")

    try:
        keeper.run(on_pass=on_pass)
    finally:
        server.stop()
    raise typer.Exit(0)
