"""``linewatch redis``: run the embedded Redis-compatible server in the foreground; print a stage's ACL user."""

from __future__ import annotations

import signal
import threading

import typer

from linewatch.cli.context import cli_context
from linewatch.embedded_redis import EmbeddedRedis, EmbeddedRedisError, embedded_maxmemory
from linewatch.stop_signals import call_on_signals

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
    call_on_signals(stop.set, (signal.SIGTERM,))  # no lock in the handler (linewatch.stop_signals)
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


@app.command("acl")
def acl(
    ctx: typer.Context,
    stage: str = typer.Argument(..., help="ingest or services (docs/redis-security.md)."),
    user: str = typer.Option(None, "--user", help="ACL user name (default: lw-<stage>)."),
    prefix: str | None = typer.Option(None, "--prefix", help="Stream key prefix (default: streams.prefix)."),
    cluster: bool = typer.Option(False, "--cluster", help="For a Redis Cluster (adds +cluster|slots +command)."),
) -> None:
    """Print the ACL-file line of a stage's Redis user: its commands, keys <prefix>:*, and the password's SHA-256.

    The password is asked for (hidden) or read from stdin; only its hash is printed. Append the line to
    the server's aclfile and run ACL LOAD.
    """
    from linewatch.redis_acl import STAGE_COMMANDS, acl_line, password_sha256

    cli = cli_context(ctx)
    if stage not in STAGE_COMMANDS:
        cli.console.print(f"[red]error:[/red] unknown stage {stage!r}: one of {', '.join(STAGE_COMMANDS)}")
        raise typer.Exit(2)
    password = typer.prompt(f"password of {user or 'lw-' + stage}", hide_input=True, confirmation_prompt=True,
                            err=True)
    if len(password) < 16:
        cli.console.print("[red]error:[/red] use a password of at least 16 characters (e.g. `openssl rand -hex 24`)")
        raise typer.Exit(2)
    line = acl_line(stage, user or f"lw-{stage}", prefix or cli.settings().streams.prefix, password_sha256(password),
                    cluster)
    typer.echo(line)
