"""``linewatch simulate`` and ``linewatch dataset``: the simulated factory."""

from __future__ import annotations

import threading
from pathlib import Path

import typer

from linewatch.cli.context import cli_context


def register(app: typer.Typer) -> None:
    app.command("simulate")(simulate)
    app.command("dataset")(dataset)


def _sim_overrides(seed: int | None, difficulty: str | None, plc_format: str | None) -> dict[str, object]:
    return {"simulator.seed": seed, "simulator.difficulty": difficulty, "simulator.plc_format": plc_format}


def simulate(
    ctx: typer.Context,
    assets: int = typer.Option(6, "--assets", "-n", min=1, max=500, help="Number of assets (pumps, presses, conveyors)."),
    minutes: float = typer.Option(2.0, "--minutes", "-m", min=0.05, help="Simulated minutes (batch) or wall-clock minutes (real time)."),
    out: Path = typer.Option(..., "--out", "-o", file_okay=False, help="Output directory (the landing zone in real-time mode)."),
    realtime: bool = typer.Option(False, "--realtime", help="Write at wall-clock pace, closing each file atomically, as an edge gateway would."),
    seed: int | None = typer.Option(None, help="Seed (default from settings: simulator.seed)."),
    difficulty: str | None = typer.Option(None, help="easy | realistic | hard (default from settings)."),
    plc_format: str | None = typer.Option(None, "--plc-format", help="csv | jsonl."),
) -> None:
    """Simulate a line: PLC tags + alarms, thermal frames (16-bit TIFF) and audio (16 kHz WAV), plus ground truth.

    Batch mode (default) generates the files as fast as possible; --realtime streams them into OUT.
    """
    from linewatch.simulator import Factory

    cli = cli_context(ctx)
    settings = cli.settings(**_sim_overrides(seed, difficulty, plc_format))
    factory = Factory(settings.simulator, n_assets=assets)
    out.mkdir(parents=True, exist_ok=True)
    if realtime:
        cli.console.print(f"streaming {assets} assets into [bold]{out}[/bold] for {minutes:g} min (Ctrl-C stops)")
        stop = threading.Event()
        try:
            summary = factory.run_realtime(out, duration_s=minutes * 60.0, stop=stop)
        except KeyboardInterrupt:
            stop.set()
            raise typer.Exit(130) from None
    else:
        summary = factory.run_batch(out, minutes=minutes, progress=True)
    cli.console.print(f"[green]done[/green]: {summary}")


def dataset(
    ctx: typer.Context,
    out: Path = typer.Option(..., "--out", "-o", file_okay=False, help="Dataset directory (labels.csv + files)."),
    samples_per_class: int = typer.Option(300, "--samples-per-class", min=1, help="Samples per fault class."),
    seed: int | None = typer.Option(None, help="Seed (default from settings)."),
    difficulty: str | None = typer.Option(None, help="easy | realistic | hard."),
) -> None:
    """Generate a labelled training dataset (independent scenarios, balanced classes) for `linewatch train`."""
    from linewatch.simulator import generate_dataset

    cli = cli_context(ctx)
    settings = cli.settings(**_sim_overrides(seed, difficulty, None))
    summary = generate_dataset(out, samples_per_class=samples_per_class, config=settings.simulator, progress=True)
    cli.console.print(f"[green]done[/green]: {summary}")


