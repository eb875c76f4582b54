"""``linewatch demo``: the whole line on one machine, with what an operator would see."""

from __future__ import annotations

import functools
import shutil
import threading
import time
from pathlib import Path
from collections.abc import Callable
from typing import TYPE_CHECKING

import typer
from rich.live import Live

from linewatch.cli.context import CliContext, cli_context
from linewatch.cli.demo_view import ArrivalCounter, StreamSampler, render
from linewatch.contract import StreamNames
from linewatch.embedded_redis import EmbeddedRedisError, redis_url
from linewatch.redis_connection import RedisConnectError, connect_redis

if TYPE_CHECKING:
    from linewatch.cli.demo_governance import DemoGovernance
    from linewatch.simulator import Factory


#: The demo's length: long enough for the default drift to be raised (docs/drift.md "Demo drift").
DEFAULT_SECONDS = 360.0


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)


def demo(
    ctx: typer.Context,
    seconds: float = typer.Option(DEFAULT_SECONDS, "--seconds", "-s", min=1.0, help="How long the simulated line runs."),
    assets: int = typer.Option(6, "--assets", "-n", min=1, max=100, help="Simulated assets."),
    ingest: bool = typer.Option(True, "--ingest/--no-ingest", help="Run the Flink ingestion job (needs Java)."),
    bad_input: bool = typer.Option(
        True, "--bad-input/--no-bad-input",
        help="Half-way through, drop a truncated thermal frame into the landing zone, as a failing gateway would, "
        "and five frames of a camera whose lens is covered: they show up as dead letters (truncated, no_signal) "
        "while the line keeps running, and the covered camera as a sensor_fault alert until its next real frame.",
    ),
    keep: bool = typer.Option(False, "--keep", help="Keep the demo's landing zone and state afterwards."),
    services: bool = typer.Option(True, "--services/--no-services",
                                  help="Run inference x3, fusion and alerts on the feature streams (in-process)."),
    mqtt: bool = typer.Option(False, "--mqtt/--no-mqtt", help="Also publish alerts to the MQTT broker in settings."),
    governance: bool = typer.Option(True, "--governance/--no-governance",
                                    help="Run the audit, drift and explain workers too (those installed)."),
    drift: str = typer.Option("mic_degradation", "--drift", help="Drift injected into the simulated line from 135 s (40 "
                              "percent of a shorter run; the line has no other drift): mic_degradation (the last asset's microphone "
                              "loses its high frequencies; raised 2-3 minutes later, docs/drift.md \"Demo "
                              "drift\"), plc_temp_offset, camera_ageing (one asset), ambient_shift (every asset), "
                              "or none."),
    fault: str = typer.Option("bearing_wear", "--fault", help="Fault started on one asset 5 s into the run, "
                              "reaching full severity at 35 percent of it (so a short demo shows a fault verdict, "
                              "its alert and its explanation): bearing_wear, electrical_overheating, "
                              "cooling_failure, imbalance, cavitation, or none (the demo line has no other fault)."),
) -> None:
    """Run a simulated line in real time, ingest it with embedded Flink into an embedded Redis, run the
    services (inference x3, fusion, alerts), and show live per asset the verdict, open alerts, stage
    latencies, stream rates and dead letters. In another terminal: `linewatch alerts list|ack|...`.

    Needs no Redis: with LINEWATCH_REDIS__URL unset an embedded server starts and stops with the demo.
    """
    from linewatch.simulator import Factory

    cli = cli_context(ctx)
    from linewatch.simulator.drift import DRIFT_KINDS

    if drift != "none" and drift not in DRIFT_KINDS:  # governance: checked before anything starts
        cli.console.print(f"[red]error:[/red] --drift {drift!r}: choose one of {', '.join(DRIFT_KINDS)} or none")
        raise typer.Exit(2)
    from linewatch.simulator.health import FAULTS

    if fault != "none" and fault not in FAULTS:
        cli.console.print(f"[red]error:[/red] --fault {fault!r}: choose one of {', '.join(FAULTS)} or none")
        raise typer.Exit(2)
    base = cli.settings().data_dir / "demo"
    shutil.rmtree(base, ignore_errors=True)
    settings = cli.settings(**{
        "landing_dir": base / "landing",
        "flink.checkpoint_dir": base / "flink" / "checkpoints",
        "streams.prefix": "demo",
        "audit.path": base / "audit" / "audit.sqlite",  # governance: the demo's own audit store
    })
    settings.landing.mkdir(parents=True)
    arrivals = ArrivalCounter()
    stop = threading.Event()
    from linewatch.cli.demo_governance import demo_simulator_config

    factory = Factory(demo_simulator_config(settings.simulator), n_assets=assets)
    try:
        with redis_url(settings) as url:
            client = connect_redis(settings.redis, url)
            for key in client.scan_iter(match=f"{settings.streams.prefix}:*"):
                client.delete(key)
            job = None
            demo_governance = None  # governance (issue 11)
            sampler = None
            demo_services = view = web = None
            if services:  # services (issue 9)
                from linewatch.cli.demo_services import DemoServices, ServicesSampler, write_connection

                names = StreamNames(settings.streams.prefix, settings.streams.shards)
                with cli.console.status("starting inference x3, fusion and alerts ..."):
                    demo_services = DemoServices(client, names, settings, mqtt=mqtt, log_path=base / "services.log").start()
                view = ServicesSampler(client, names)
                write_connection(base / "connection.json", url, names)
                from linewatch.cli.web_cmd import start_demo_web  # web app (issue 12)

                web = start_demo_web(cli, client, names, settings)
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
                                        job.spec.stats_key)
            if services and governance:  # governance (issue 11): audit, drift, explain workers + their live view
                from linewatch.cli.demo_governance import DemoGovernance, Views

                gov_names = StreamNames(settings.streams.prefix, settings.streams.shards)
                with cli.console.status("starting governance (audit, drift, explain) ..."):
                    demo_governance = DemoGovernance(client, gov_names, settings, base, run_seconds=seconds).start()
                view = Views([view, demo_governance])
            try:
                inject = _inject_bad_input if bad_input and ingest else None
                add_drift = None
                if demo_governance is not None and (drift != "none" or fault != "none"):
                    add_drift = functools.partial(_inject, demo_governance, drift, fault, seconds)
                _run_line(cli, factory, settings.landing, seconds, stop, arrivals, sampler, inject, view, add_drift)
            finally:
                if job is not None:
                    job.stop()
                if web is not None:
                    web.stop()
                if demo_services is not None:
                    demo_services.stop()
                    (base / "connection.json").unlink(missing_ok=True)
                if demo_governance is not None:
                    demo_governance.stop()
                    cli.console.print(f"governance: {demo_governance.summary()}"
                                      + (f"; audit trail kept in {demo_governance.audit_path()}" if keep else ""))
                client.close()
    except (EmbeddedRedisError, RedisConnectError) as exc:
        cli.console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(1) from exc
    finally:
        stop.set()
        if not keep:
            shutil.rmtree(base, ignore_errors=True)
    cli.console.print("[green]demo finished[/green]")


def _inject(gov: DemoGovernance, drift: str, fault: str, seconds: float, factory: Factory) -> None:
    """The demo's scenario additions: a drift from 135 s (``DEMO_DRIFT``), a fault from 5 s."""
    from linewatch.cli.demo_governance import DEMO_DRIFT

    if drift != "none":
        onset, ramp = DEMO_DRIFT.onset_ramp(seconds)
        gov.inject_drift(factory, drift, onset, ramp, DEMO_DRIFT.magnitude if drift == DEMO_DRIFT.kind else None)
    if fault != "none":
        try:
            gov.inject_fault(factory, fault, onset_s=min(5.0, 0.05 * seconds), ramp_s=0.3 * seconds)
        except ValueError as exc:  # e.g. cavitation without a pump in the fleet: the line runs on
            gov.fault = f"not started: {exc}"


def _run_line(
    cli: CliContext,
    factory: Factory,
    landing: Path,
    seconds: float,
    stop: threading.Event,
    arrivals: ArrivalCounter,
    sampler: StreamSampler | None,
    inject: Callable[[Path, str], None] | None = None,
    view: object | None = None,
    add_drift: Callable[[Factory], object] | None = None,
) -> None:
    thread = threading.Thread(
        target=factory.run_realtime,
        kwargs={"out_dir": landing, "duration_s": seconds, "stop": stop, "on_file": arrivals.on_file},
        name="simulator",
        daemon=True,
    )
    start = time.monotonic()
    thread.start()
    with Live(render(arrivals, sampler, 0.0, "line running", view), console=cli.console, refresh_per_second=2) as live:
        try:
            while thread.is_alive():
                thread.join(timeout=1.0)
                if add_drift is not None and factory.scenario is not None:  # governance: drift part-way
                    add_drift(factory)
                    add_drift = None
                if inject is not None and time.monotonic() - start > seconds / 2:
                    inject(landing, factory.fleet[0].asset_id)
                    inject = None
                live.update(render(arrivals, sampler, time.monotonic() - start, "line running", view))
            if sampler is not None:  # let the job drain what the gateway closed last
                deadline = time.monotonic() + 15.0
                previous = None
                while time.monotonic() < deadline:
                    counts = {m: n for m, (n, _) in sampler.modality_counts().items()}
                    if counts == previous:
                        break
                    previous = counts
                    live.update(render(arrivals, sampler, time.monotonic() - start, "line stopped, draining", view))
                    stop.wait(1.0)
        except KeyboardInterrupt:
            stop.set()
            thread.join()
        live.update(render(arrivals, sampler, time.monotonic() - start, "line stopped", view))


def _inject_bad_input(landing: Path, asset_id: str, covered: int = 5) -> None:
    """What a failing gateway and a covered camera send: a frame whose manifest announces more bytes
    than it has (power lost mid-write), and ``covered`` frames, 0.1 s apart, of one temperature and
    the camera's noise (a lens cap left on: no contrast). All become dead letters (``truncated``,
    ``no_signal``); with the default ``flink.sensor_alert_after`` (5) the covered frames also raise a
    ``sensor_fault`` alert, which the camera's next real frame returns to normal."""
    import hashlib
    import io
    import json

    import numpy as np
    import tifffile

    from pipeline.landing import STAGING_DIR, atomic_write

    now_ms = int(time.time() * 1000)

    def stamp(ms: int) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}Z"

    full = b"II*\x00" + bytes(38_396)  # what a 160x120 uint16 TIFF would weigh
    frames: dict[str, list[tuple[str, bytes, bytes]]] = {"power-cut": [("power-cut", full[:1024], full)], "lens-covered": []}
    for k in range(covered):
        capped = io.BytesIO()
        cap = 29_515 + np.random.default_rng(k).normal(0.0, 5.0, (120, 160))  # 22 °C, NETD 50 mK
        tifffile.imwrite(capped, np.rint(cap).astype(np.uint16))
        frames["lens-covered"].append((f"lens-covered-{k}", capped.getvalue(), capped.getvalue()))
    for name, blobs in frames.items():
        lines = []
        for k, (blob, written, announced) in enumerate(blobs):
            rel = f"thermal/frames/{asset_id}/{asset_id}-{blob}.tiff"
            atomic_write(landing / rel, written)
            lines.append(json.dumps({"asset_id": asset_id, "timestamp": stamp(now_ms + 100 * k), "path": rel,
                                     "bytes": len(announced), "sha256": hashlib.sha256(announced).hexdigest(),
                                     "kind": "thermal"}))
        atomic_write(landing / "manifests" / f"gateway-{asset_id}-{name}.jsonl", "".join(f"{x}\n" for x in lines).encode(),
                     staging=landing / STAGING_DIR)
