"""``linewatch serve inference|fusion|alerts``: the stream services, one process each.

They need a shared Redis: set ``LINEWATCH_REDIS__URL`` (or ``--redis-url``); ``linewatch redis serve``
starts the embedded one for a single machine. SIGTERM drains the batch in hand and exits 0.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import redis
import typer

from linewatch.cli.context import CliContext, cli_context
from linewatch.contract import Modality, StreamNames
from linewatch.redis_connection import RedisConnectError, connect_redis, split_password
from linewatch.settings import Settings

app = typer.Typer(help="Run a stream service (inference, fusion, alerts, explain) until SIGTERM.", no_args_is_help=True)

CONNECTION_FILE = "connection.json"


def demo_connection(settings: Settings) -> dict | None:
    """The running demo's Redis URL and stream names, if a demo is running (see ``linewatch demo``)."""
    path = settings.data_dir / "demo" / CONNECTION_FILE
    if not path.is_file():
        return None
    try:
        info = json.loads(path.read_text())
    except json.JSONDecodeError:
        return None
    pid = int(info.get("pid", 0))
    try:
        os.kill(pid, 0)
    except OSError:
        return None
    return info


def connect(cli: CliContext, redis_url: str | None, **overrides: object) -> tuple[Settings, redis.Redis, StreamNames]:
    """Settings, a Redis client and the stream names; the running demo's when nothing else is set."""
    settings = cli.settings(**overrides)
    url = redis_url or settings.redis.url
    names = StreamNames(settings.streams.prefix, settings.streams.shards)
    if url is None:
        demo = demo_connection(settings)
        if demo is None:
            cli.console.print("[red]error:[/red] no Redis: set LINEWATCH_REDIS__URL or --redis-url "
                              "(`linewatch redis serve` starts one), or start `linewatch demo`")
            raise typer.Exit(2)
        url = demo["redis_url"]
        names = StreamNames(demo["prefix"], int(demo["shards"]))
    try:
        client = connect_redis(settings.redis, url)
    except RedisConnectError as exc:
        cli.console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    return settings, client, names


REDIS_URL = typer.Option(None, "--redis-url", help="redis://host:port/db (default: LINEWATCH_REDIS__URL).")
METRICS_PORT = typer.Option(None, "--metrics-port", help="Port of /metrics /healthz /readyz (0: a free one).")


@app.command("inference")
def inference(
    ctx: typer.Context,
    modality: Modality = typer.Option(..., "--modality", "-m", help="plc, thermal or audio."),
    redis_url: str | None = REDIS_URL,
    metrics_port: int | None = METRICS_PORT,
    backend: str | None = typer.Option(None, help="onnxruntime (default), triton or tensorrt."),
    max_batch: int | None = typer.Option(None, help="At most this many entries per backend call."),
    max_wait_ms: int | None = typer.Option(None, help="Hold a partial batch this long (0: never)."),
) -> None:
    """Features -> predictions for one modality (run more processes to scale; shards are shared)."""
    from services.inference.model import ModelRefused
    from services.inference.service import inference_worker
    from services.runner import serve_workers

    cli = cli_context(ctx)
    settings, client, names = connect(cli, redis_url, **{
        "inference.metrics_port": metrics_port, "inference.backend": backend, "inference.max_batch": max_batch,
        "inference.max_wait_ms": max_wait_ms})
    try:
        worker = inference_worker(client, names, settings.inference, modality.value, settings.streams.maxlen)
    except ModelRefused as exc:
        cli.console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(3) from exc
    raise typer.Exit(serve_workers([worker], settings.inference, settings.log_level))


@app.command("fusion")
def fusion(ctx: typer.Context, redis_url: str | None = REDIS_URL, metrics_port: int | None = METRICS_PORT) -> None:
    """Predictions -> per-asset verdicts (event-time window join, k-of-n hysteresis)."""
    from services.fusion.service import fusion_worker
    from services.runner import serve_workers

    cli = cli_context(ctx)
    settings, client, names = connect(cli, redis_url, **{"fusion.metrics_port": metrics_port})
    worker = fusion_worker(client, names, settings.fusion, settings.streams.maxlen)
    raise typer.Exit(serve_workers([worker], settings.fusion, settings.log_level))


@app.command("drift")
def drift(ctx: typer.Context, redis_url: str | None = REDIS_URL, metrics_port: int | None = METRICS_PORT) -> None:
    """Feature, prediction, operator-feedback and shadow-teacher drift -> DriftReports + drift alerts (issue 11)."""
    from governance.drift.service import drift_workers
    from services.runner import serve_workers

    cli = cli_context(ctx)
    settings, client, names = connect(cli, redis_url, **{"drift.metrics_port": metrics_port})
    workers = drift_workers(client, names, settings.drift, settings.streams.maxlen)
    raise typer.Exit(serve_workers(workers, settings.drift, settings.log_level))


@app.command("alerts")
def alerts(
    ctx: typer.Context,
    redis_url: str | None = REDIS_URL,
    metrics_port: int | None = METRICS_PORT,
    api_port: int | None = typer.Option(None, "--api-port", help="HTTP API port (0: a free one)."),
    mqtt: bool | None = typer.Option(None, "--mqtt/--no-mqtt", help="Publish to MQTT (default: settings)."),
) -> None:
    """Verdicts and AlertRequests -> alerts (stream, MQTT, webhooks) + the operators' HTTP API."""
    import uvicorn

    from services.alerts.api import create_app
    from services.alerts.service import alert_workers
    from services.alerts.store import AlertStore
    from services.runner import serve_workers

    cli = cli_context(ctx)
    settings, client, names = connect(cli, redis_url, **{"alerts.metrics_port": metrics_port,
                                                         "alerts.api_port": api_port})
    stop = threading.Event()
    workers = alert_workers(client, names, settings.alerts, settings.streams.maxlen, mqtt=mqtt, stop=stop)
    api = uvicorn.Server(uvicorn.Config(create_app(AlertStore(client, names, settings.streams.maxlen)),
                                        host=settings.alerts.api_host, port=settings.alerts.api_port,
                                        log_level="warning"))
    api.install_signal_handlers = lambda: None  # type: ignore[method-assign]  # the workers own SIGTERM
    thread = threading.Thread(target=api.run, name="alerts-api", daemon=True)
    thread.start()
    try:
        code = serve_workers(workers, settings.alerts, settings.log_level, on_stop=stop.set)
    finally:
        stop.set()
        api.should_exit = True
        thread.join(timeout=10)
    raise typer.Exit(code)


@app.command("explain")
def explain(ctx: typer.Context, redis_url: str | None = REDIS_URL, metrics_port: int | None = METRICS_PORT,
            rules: Path | None = typer.Option(None, "--rules", help="Rules YAML (default: the shipped rules).")) -> None:
    """Fault verdicts -> explanations (LIME per modality + rule engine + agreement) on lw:explanations."""
    from governance.explain.service import explain_worker
    from governance.rules import RulesError
    from services.runner import serve_workers

    cli = cli_context(ctx)
    settings, client, names = connect(cli, redis_url, **{"explain.metrics_port": metrics_port,
                                                         "explain.rules": str(rules) if rules else None})
    try:
        worker = explain_worker(client, names, settings.explain, settings.streams.maxlen,
                                data_dir=settings.data_dir, landing=settings.landing)
    except RulesError as exc:
        cli.console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(3) from exc
    raise typer.Exit(serve_workers([worker], settings.explain, settings.log_level))


def write_connection(path: Path, url: str, names: StreamNames) -> None:
    path.write_text(json.dumps({"redis_url": split_password(url)[0], "prefix": names.prefix, "shards": names.shards,
                                "pid": os.getpid()}))
