"""``linewatch demo``: the whole line on one machine, with what an operator would see."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import redis
import typer
from rich.live import Live

from linewatch.cli.context import CliContext, cli_context
from linewatch.cli.demo_view import ArrivalCounter, StreamSampler, render
from linewatch.contract import StreamNames
from linewatch.embedded_redis import EmbeddedRedisError, redis_url

if TYPE_CHECKING:
    from linewatch.simulator import Factory


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)


def demo(
    ctx: typer.Context,
    seconds: float = typer.Option(60.0, "--seconds", "-s", min=1.0, help="How long the simulated line runs."),
    assets: int = typer.Option(6, "--assets", "-n", min=1, max=100, help="Simulated assets."),
    ingest: bool = typer.Option(True, "--ingest/--no-ingest", help="Run the Flink ingestion job (needs Java)."),
    keep: bool = typer.Option(False, "--keep", help="Keep the demo's landing zone and state afterwards."),
) -> None:
    """Run a simulated line in real time, ingest it with embedded Flink into an embedded Redis, and show
    per-stream rates, dead letters and ingest latency live.

    Needs no Redis: with LINEWATCH_REDIS__URL unset an embedded server starts and stops with the demo.
    """
    from linewatch.simulator import Factory

    cli = cli_context(ctx)
    base = cli.settings().data_dir / "demo"
    shutil.rmtree(base, ignore_errors=True)
    settings = cli.settings(**{
        "landing_dir": base / "landing",
        "flink.checkpoint_dir": base / "flink" / "checkpoints",
        "streams.prefix": "demo",
    })
    settings.landing.mkdir(parents=True)
    arrivals = ArrivalCounter()
    stop = threading.Event()
    factory = Factory(settings.simulator, n_assets=assets)
    try:
        with redis_url(settings) as url:
            client = redis.Redis.from_url(url)
            for key in client.scan_iter(match=f"{settings.streams.prefix}:*"):
                client.delete(key)
            job = None
            sampler = None
            if ingest:
                from pipeline.runner import IngestJob, IngestJobError

                job = IngestJob.from_settings(settings, url, resume=False)
                with cli.console.status("starting the Flink ingestion job (embedded MiniCluster) ..."):
                    try:
                        job.start()
                        job.wait_ready()
                    except IngestJobError as exc:
                        cli.console.print(f"[red]error:[/red] {exc}")
                        raise typer.Exit(1) from exc
                sampler = StreamSampler(client, StreamNames(settings.streams.prefix, settings.streams.shards),
                                        job.spec.ingest.stats_key)
            try:
                _run_line(cli, factory, settings.landing, seconds, stop, arrivals, sampler)
            finally:
                if job is not None:
                    job.stop()
                client.close()
    except EmbeddedRedisError as exc:
        cli.console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(1) from exc
    finally:
        stop.set()
        if not keep:
            shutil.rmtree(base, ignore_errors=True)
    cli.console.print("[green]demo finished[/green]")


def _run_line(
    cli: CliContext,
    factory: Factory,
    landing: Path,
    seconds: float,
    stop: threading.Event,
    arrivals: ArrivalCounter,
    sampler: StreamSampler | None,
) -> None:
    thread = threading.Thread(
        target=factory.run_realtime,
        kwargs={"out_dir": landing, "duration_s": seconds, "stop": stop, "on_file": arrivals.on_file},
        name="simulator",
        daemon=True,
    )
    start = time.monotonic()
    thread.start()
    with Live(render(arrivals, sampler, 0.0, "line running"), console=cli.console, refresh_per_second=2) as live:
        try:
            while thread.is_alive():
                thread.join(timeout=1.0)
                live.update(render(arrivals, sampler, time.monotonic() - start, "line running"))
        except KeyboardInterrupt:
            stop.set()
            thread.join()
        live.update(render(arrivals, sampler, time.monotonic() - start, "line stopped"))
