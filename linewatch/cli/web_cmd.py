"""``linewatch serve web`` (the operators' web app) and ``linewatch users add|list|remove|token|passwd``.

The first admin is created on the command line (``linewatch users add NAME --role admin`` asks for the
password twice); there is no default password.
"""

from __future__ import annotations

import signal
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import redis
import typer

from linewatch.cli.context import CliContext, cli_context
from linewatch.contract import StreamNames
from linewatch.settings import Settings

if TYPE_CHECKING:
    import uvicorn

users_app = typer.Typer(help="Users of the web app (roles: operator, engineer, admin) and API tokens.",
                        no_args_is_help=True)


def register(app: typer.Typer, serve_app: typer.Typer) -> None:
    serve_app.command("web")(serve_web)
    app.add_typer(users_app, name="users")


def users_db_path(settings: Settings) -> Path:
    return settings.web.users_db or settings.data_dir / "web" / "users.db"


def registry_root(settings: Settings) -> Path:
    if settings.web.registry is not None:
        return settings.web.registry
    if settings.inference.registry is not None:
        return settings.inference.registry
    import models

    return Path(models.__file__).resolve().parent / "default"


def web_url(host: str, port: int) -> str:
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else ("[::1]" if host == "::" else host)
    return f"http://{shown}:{port}/"


@dataclass
class WebServer:
    """The web app on uvicorn in a thread (``linewatch demo``, tests, benchmarks)."""

    server: uvicorn.Server
    thread: threading.Thread

    @property
    def port(self) -> int:
        return int(self.server.servers[0].sockets[0].getsockname()[1])

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)


def start_web(client: redis.Redis, names: StreamNames, settings: Settings, maxlen: int | None = None,
              port: int | None = None) -> WebServer:
    """Start the app in a daemon thread and wait until it listens."""
    import uvicorn

    from services.web.app import create_app

    app = create_app(client, names, settings.web, users_db_path(settings), registry_root(settings),
                     maxlen or settings.streams.maxlen)
    server = uvicorn.Server(uvicorn.Config(app, host=settings.web.host,
                                           port=settings.web.port if port is None else port, log_level="warning",
                                           timeout_graceful_shutdown=2))
    thread = threading.Thread(target=server.run, name="web", daemon=True)
    thread.start()
    ready = threading.Event()
    while thread.is_alive() and not server.started:
        ready.wait(0.05)
    if not server.started:
        raise RuntimeError(f"the web app did not start on {settings.web.host}:{settings.web.port}: "
                           "is the port in use? set LINEWATCH_WEB__PORT or --port")
    return WebServer(server, thread)


def serve_web(
    ctx: typer.Context,
    redis_url: str | None = typer.Option(None, "--redis-url", help="redis://host:port/db "
                                         "(default: LINEWATCH_REDIS__URL, else the running demo's)."),
    host: str | None = typer.Option(None, "--host", help="Interface (default: web.host, 127.0.0.1)."),
    port: int | None = typer.Option(None, "--port", help="Port (default: web.port, 8480; 0: a free one)."),
) -> None:
    """The operators' and engineers' web app: line overview, alert inbox, asset, explanation, drift and
    model views, JSON API under /api/v1. Prints its URL."""
    import uvicorn

    from linewatch.cli.serve_cmd import connect
    from services.web.app import create_app
    from services.web.users import UserDB

    cli = cli_context(ctx)
    settings, client, names = connect(cli, redis_url, **{"web.host": host, "web.port": port})
    db_path = users_db_path(settings)
    if not UserDB(db_path).users():
        cli.console.print(f"[yellow]no users yet[/yellow] in {db_path}: create the first admin with "
                          "`linewatch users add NAME --role admin`")
    app = create_app(client, names, settings.web, db_path, registry_root(settings), settings.streams.maxlen)
    config = uvicorn.Config(app, host=settings.web.host, port=settings.web.port, log_level="warning",
                            timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    original = server.startup

    async def startup(sockets: object = None) -> None:
        await original(sockets)  # type: ignore[arg-type]
        if server.started:
            bound = server.servers[0].sockets[0].getsockname()[1]
            cli.console.print(f"linewatch web: [bold]{web_url(settings.web.host, int(bound))}[/bold]  "
                              f"(API docs: /api/v1/docs)", highlight=False)

    server.startup = startup  # type: ignore[method-assign]
    # uvicorn shuts down gracefully on SIGTERM/SIGINT, then re-raises the signal: end with 0 like the
    # other services (a supervisor reads a signal death as a crash)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    server.run()


def _db(ctx: typer.Context):  # type: ignore[no-untyped-def]
    from services.web.users import UserDB

    return UserDB(users_db_path(cli_context(ctx).settings()))


@users_app.command("add")
def users_add(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="User name."),
    role: str = typer.Option("operator", "--role", "-r", help="operator, engineer or admin."),
    password: str = typer.Option(..., prompt=True, confirmation_prompt=True, hide_input=True,
                                 help="Asked for when not given (at least 8 characters)."),
) -> None:
    """Add a user (the first admin: `linewatch users add NAME --role admin`)."""
    from services.web.users import UserError

    try:
        user = _db(ctx).add_user(name, password, role)
    except UserError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc
    typer.echo(f"added {user.name} ({user.role})")


@users_app.command("passwd")
def users_passwd(ctx: typer.Context, name: str = typer.Argument(...),
                 password: str = typer.Option(..., prompt=True, confirmation_prompt=True, hide_input=True)) -> None:
    """Set a user's password (ends the user's sessions)."""
    from services.web.users import UserError

    try:
        _db(ctx).set_password(name, password)
    except UserError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc
    typer.echo(f"password of {name} changed")


@users_app.command("list")
def users_list(ctx: typer.Context, tokens: bool = typer.Option(False, "--tokens", help="List API tokens too.")) -> None:
    """Users and roles (and API tokens, never their secrets)."""
    db = _db(ctx)
    users = db.users()
    typer.echo(f"{len(users)} user(s) in {db.path}")
    for u in users:
        typer.echo(f"  {u.name:<24} {u.role}")
    if tokens:
        for t in db.tokens():
            typer.echo(f"  token {t['id']}  user {t['user']}  {t['label']}")


@users_app.command("remove")
def users_remove(ctx: typer.Context, name: str = typer.Argument(...)) -> None:
    """Remove a user, its sessions and its API tokens."""
    from services.web.users import UserError

    try:
        _db(ctx).remove_user(name)
    except UserError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc
    typer.echo(f"removed {name}")


@users_app.command("token")
def users_token(ctx: typer.Context, name: str = typer.Argument(..., help="The user the token acts as."),
                label: str = typer.Option("", "--label", help="What the token is for (e.g. prometheus)."),
                revoke: str | None = typer.Option(None, "--revoke", help="Revoke the token with this id instead.")
                ) -> None:
    """Create an API token for machines (printed once; send it as `Authorization: Bearer <token>`)."""
    from services.web.users import UserError

    db = _db(ctx)
    try:
        if revoke:
            db.revoke_token(revoke)
            typer.echo(f"revoked {revoke}")
            return
        typer.echo(db.create_token(name, label))
    except UserError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc


def start_demo_web(cli: CliContext, client: redis.Redis, names: StreamNames, settings: Settings) -> WebServer | None:
    """``linewatch demo``'s web app: on web.port (a free port when that one is taken); prints the URL."""
    from services.web.users import UserDB

    try:
        try:
            server = start_web(client, names, settings)
        except (RuntimeError, OSError, SystemExit):
            server = start_web(client, names, settings, port=0)
    except (RuntimeError, OSError, SystemExit) as exc:
        cli.console.print(f"[yellow]web app not started:[/yellow] {exc}")
        return None
    cli.console.print(f"web app: [bold]{web_url(settings.web.host, server.port)}[/bold]", highlight=False)
    if not UserDB(users_db_path(settings)).users():
        cli.console.print("  no users yet: in another terminal `linewatch users add NAME --role admin`, then log in")
    return server
