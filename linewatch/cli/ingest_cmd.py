"""``linewatch ingest``: the PyFlink ingestion job, embedded or on a Flink cluster."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import typer
from rich.table import Table

from linewatch.cli.context import CliContext, cli_context
from linewatch.settings import Settings
from linewatch.stop_signals import call_on_signals


def register(app: typer.Typer) -> None:
    app.command("ingest")(ingest)


def ingest(
    ctx: typer.Context,
    landing: Path | None = typer.Option(None, "--landing", file_okay=False, help="Landing zone (default: settings' landing)."),
    cluster: str | None = typer.Option(
        None, "--cluster", metavar="HOST:PORT",
        help="Submit to a running Flink cluster's JobManager (REST address) instead of the embedded MiniCluster.",
    ),
    fresh: bool = typer.Option(False, "--fresh", help="Ignore existing checkpoints (default: resume from the newest)."),
    health: bool = typer.Option(
        False, "--health",
        help="Check a running ingest instead of starting one (container HEALTHCHECK): exit 0 if it holds the "
        "landing zone and answered a probe within --max-age seconds, else 1.",
    ),
    max_age: float = typer.Option(120.0, "--max-age", help="With --health: oldest acceptable answered probe (s)."),
) -> None:
    """Ingest PLC logs, thermal frames and audio from the landing zone into the Redis feature streams.

    Embedded (default): a Flink MiniCluster runs until Ctrl-C, resuming from its last checkpoint.
    --cluster: the same job is submitted with `flink run -py pipeline/ingest_job.py` and keeps running there.
    Needs LINEWATCH_REDIS__URL for --cluster (the cluster's workers must reach Redis).
    One ingest per landing zone: another one holding it makes this exit 3, naming its PID and host.
    The embedded job stops when this process dies, even by kill -9 (docs/supervision.md).
    """
    from pipeline.runner import IngestBusy, IngestJobError, IngestSupervisor

    cli = cli_context(ctx)
    settings = cli.settings(landing_dir=landing)
    if health:
        _health(cli, settings, max_age)
        return
    settings.landing.mkdir(parents=True, exist_ok=True)
    if cluster:
        _submit(cli, settings, cluster, fresh)
        return
    from linewatch.embedded_redis import redis_url
    from linewatch.redis_connection import mask_url

    stop = threading.Event()
    call_on_signals(stop.set, (signal.SIGTERM,))  # no lock in the handler (linewatch.stop_signals)
    with redis_url(settings) as url:
        cli.console.print(f"ingesting [bold]{settings.landing}[/bold] into {mask_url(url)} (Ctrl-C stops; state is checkpointed)")
        supervisor = IngestSupervisor(settings, url, resume=not fresh)
        try:
            job = supervisor.start()
            cli.console.print(f"job {job.job_id} running")
            while not stop.wait(5.0):
                if supervisor.check():
                    cli.console.print(f"rolled over to a fresh manifest source (rollover {supervisor.rollovers})")
                assert supervisor.job is not None
                cli.console.print(_stats_table(supervisor.job.stats()))
        except KeyboardInterrupt:
            pass
        except IngestBusy as exc:
            cli.console.print(f"[red]error:[/red] {exc}", soft_wrap=True)
            raise typer.Exit(3) from exc
        except IngestJobError as exc:
            cli.console.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(1) from exc
        finally:
            supervisor.stop()
    cli.console.print("stopped")


def _health(cli: CliContext, settings: Settings, max_age_s: float) -> None:
    from pipeline.supervision.health import check_health

    report = check_health(settings, max_age_s)
    cli.console.print(report.message, soft_wrap=True)
    raise typer.Exit(0 if report.healthy else 1)


def _submit(cli: CliContext, settings: Settings, address: str, fresh: bool) -> None:
    from linewatch.redis_connection import PASSWORD_ENV
    from pipeline.cluster import ClusterError, submit_job
    from pipeline.runner import IngestJob

    if not settings.redis.url:
        cli.console.print("[red]error:[/red] --cluster needs LINEWATCH_REDIS__URL: the cluster's workers write to it")
        raise typer.Exit(2)
    job = IngestJob.from_settings(settings, settings.redis.url, resume=not fresh)
    if settings.redis.password is not None and PASSWORD_ENV not in os.environ:
        cli.console.print(f"[yellow]note:[/yellow] spec.json holds no password: the cluster's TaskManagers need "
                          f"{PASSWORD_ENV} in their environment (docs/redis-security.md)")
    spec_path = job.work_dir / "spec.json"
    spec_path.write_text(job.spec.to_json())
    try:
        job_id = submit_job(spec_path, address)
    except ClusterError as exc:
        cli.console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(1) from exc
    cli.console.print(f"submitted job {job_id} to {address} (spec {spec_path}); cancel with `flink cancel {job_id}`")


def _stats_table(stats: dict[str, str]) -> Table:
    table = Table(title="ingest counters", show_header=True)
    table.add_column("counter", style="cyan")
    table.add_column("value", justify="right")
    for key in sorted(stats):
        table.add_row(key, stats[key])
    return table
