"""``linewatch redis``: run the embedded Redis-compatible server in the foreground."""

from __future__ import annotations

import signal
import threading

import typer

from linewatch.cli.context import cli_context
from linewatch.embedded_redis import EmbeddedRedis, EmbeddedRedisError, embedded_maxmemory

app = typer.Typer(help="The embedded Redis-compatible server used when LINEWATCH_REDIS__URL is unset.", no_args_is_help=True)


@app.command("serve")
def serve(
    ctx: typer.Context,
    port: int = typer.Option(6390, help="TCP port on 127.0.0.1 (0 picks a free one)."),
) -> None:
    """Start the embedded server (data under <data_dir>/redis) until Ctrl-C.

    Other linewatch processes reach it with LINEWATCH_REDIS__URL=redis://127.0.0.1:PORT/0.
    """
    cli = cli_context(ctx)
    settings = cli.settings()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        server = EmbeddedRedis(settings.data_dir / "redis", settings.redis.embedded_binary, port,
                               maxmemory=embedded_maxmemory(settings))
        server.start()
    except EmbeddedRedisError as exc:
        cli.console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(1) from exc
    cli.console.print(f"embedded server [bold]{server.binary.name}[/bold] listening: {server.url} "
                      f"(maxmemory {server.maxmemory} bytes, noeviction: docs/redis.md)")
    cli.console.print(f"export LINEWATCH_REDIS__URL={server.url}")
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        cli.console.print("stopped")
