"""``linewatch demo``: the whole line on one machine, with what an operator would see."""

from __future__ import annotations

import shutil
import threading
import time
from collections import Counter
from pathlib import Path

import typer
from rich.console import Group
from rich.live import Live
from rich.panel import Panel
from rich.table import Table

from linewatch.cli.context import cli_context
from linewatch.embedded_redis import EmbeddedRedisError, redis_url


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)


class ArrivalCounter:
    """Thread-safe tally of files the gateway (simulator) closed, per asset and kind."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[tuple[str, str]] = Counter()
        self._last: dict[str, float] = {}

    def on_file(self, path: Path, kind: str) -> None:
        asset = _asset_of(Path(path), kind)
        with self._lock:
            self._counts[(asset, kind)] += 1
            self._last[asset] = time.monotonic()

    def snapshot(self) -> tuple[Counter[tuple[str, str]], dict[str, float]]:
        with self._lock:
            return Counter(self._counts), dict(self._last)


def _asset_of(path: Path, kind: str) -> str:
    if kind in ("thermal", "audio", "frame", "clip"):
        return path.parent.name
    parts = path.stem.split("-")  # plc-PMP-01-<stamp>
    return "-".join(parts[1:3]) if len(parts) >= 4 else "-"


def _table(counter: ArrivalCounter, kinds: list[str], elapsed: float, url: str, landing: Path) -> Panel:
    counts, last = counter.snapshot()
    table = Table(expand=True)
    table.add_column("asset", style="cyan")
    for kind in kinds:
        table.add_column(f"{kind} files", justify="right")
    table.add_column("last file", justify="right")
    now = time.monotonic()
    for asset in sorted({a for a, _ in counts if a != "-"}):
        age = now - last.get(asset, now)
        table.add_row(asset, *(str(counts.get((asset, k), 0)) for k in kinds), f"{age:4.1f} s ago")
    header = f"elapsed {elapsed:5.1f} s   redis {url}   landing {landing}"
    return Panel(Group(header, table), title="linewatch demo: arrivals per asset and modality")


def demo(
    ctx: typer.Context,
    seconds: float = typer.Option(30.0, "--seconds", "-s", min=1.0, help="How long to run the line."),
    assets: int = typer.Option(6, "--assets", "-n", min=1, max=100, help="Simulated assets."),
    keep: bool = typer.Option(False, "--keep", help="Keep the demo's landing files afterwards."),
) -> None:
    """Run a simulated line in real time on this machine and show what arrives per asset and modality.

    Needs no Redis: with LINEWATCH_REDIS__URL unset an embedded server starts and stops with the demo.
    """
    from linewatch.simulator import Factory

    cli = cli_context(ctx)
    settings = cli.settings()
    landing = settings.data_dir / "demo" / "landing"
    shutil.rmtree(landing, ignore_errors=True)
    landing.mkdir(parents=True)
    counter = ArrivalCounter()
    stop = threading.Event()
    factory = Factory(settings.simulator, n_assets=assets)
    try:
        with redis_url(settings) as url:
            thread = threading.Thread(
                target=factory.run_realtime,
                kwargs={"out_dir": landing, "duration_s": seconds, "stop": stop, "on_file": counter.on_file},
                name="simulator",
                daemon=True,
            )
            start = time.monotonic()
            thread.start()
            kinds = ["plc", "alarms", "thermal", "audio"]
            with Live(_table(counter, kinds, 0.0, url, landing), console=cli.console, refresh_per_second=4) as live:
                try:
                    while thread.is_alive():
                        thread.join(timeout=0.25)
                        live.update(_table(counter, kinds, time.monotonic() - start, url, landing))
                except KeyboardInterrupt:
                    stop.set()
                    thread.join()
    except EmbeddedRedisError as exc:
        cli.console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(1) from exc
    finally:
        stop.set()
        if not keep:
            shutil.rmtree(landing, ignore_errors=True)
    cli.console.print("[green]demo finished[/green]")
