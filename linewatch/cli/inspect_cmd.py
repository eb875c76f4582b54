"""``linewatch inspect``: score recorded files with the deployed models (see docs/models.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from models.inspect.scoring import FileResult


def register(app: typer.Typer) -> None:
    app.command("inspect")(inspect)


def inspect(
    files: list[Path] = typer.Argument(..., exists=True,
                                       help="Audio (WAV; also FLAC, Ogg, MP3), thermal frames (TIFF; 16-bit PNG, .npy, temperature-matrix CSV), PLC CSV / JSON-lines files "
                                       "(any mix), or folders of them (read recursively)."),
    assets: Path | None = typer.Option(None, "--assets", exists=True, dir_okay=False,
                                       help="assets.json describing the machines (schema: docs/simulator.md)."),
    asset: str | None = typer.Option(None, "--asset", help="Machine id of every file (else from <ASSET>-<stamp> "
                                     "file names, or the PLC tags)."),
    registry: Path | None = typer.Option(None, "--registry", file_okay=False,
                                         help="Model registry (default: the shipped models/default)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON: one record per file, fused verdicts inside."),
    healthy_audio: list[Path] = typer.Option([], "--healthy-audio", exists=True, dir_okay=False,
                                             help="A WAV of the same machine recorded when it was healthy (e.g. at "
                                             "commissioning; repeatable): its clips are read against it, which is "
                                             "how audio tells an imbalance from a machine that is loud anyway."),
    healthy_thermal: list[Path] = typer.Option([], "--healthy-thermal", exists=True, dir_okay=False,
                                               help="A thermal frame (TIFF, PNG, .npy or matrix CSV) of the same machine when it was healthy, "
                                               "at a similar load (e.g. its commissioning survey; repeatable, any "
                                               "camera position): its frames are read against it, which is how "
                                               "thermal tells a cooling failure from a machine that runs hot anyway. "
                                               "With the machine's PLC file in the call and its --healthy-plc export "
                                               "of the same visit, it is read at the frame's load (motor current)."),
    healthy_plc: list[Path] = typer.Option([], "--healthy-plc", exists=True, dir_okay=False,
                                           help="A PLC export (CSV / JSON lines) of the same machine in normal "
                                           "operation (repeatable): gives its running pressure where assets.json "
                                           "has no nominal pressure, its normal vibration (how the PLC model tells "
                                           "an imbalance from a machine that runs rough anyway, a piston "
                                           "compressor) and how warm its winding runs (how it tells a cooling "
                                           "failure from a motor that runs hot anyway; needs the rated current), "
                                           "as the live job learns them; and the load a --healthy-thermal frame "
                                           "of the same visit was taken at."),
    speed_rpm: list[str] = typer.Option([], "--speed-rpm",
                                        help="The shaft speed you measured while recording (tachometer, the "
                                        "drive's display), in rpm: RPM for every machine or ASSET=RPM for one "
                                        "(repeatable). Audio reads the machine at that speed instead of searching "
                                        "for it in the sound (which can mistake a drive machine's speed); it "
                                        "takes precedence over a PLC file's speed."),
) -> None:
    """Score recorded files and print per-file class probabilities and, for several modalities of
    one machine, the fused verdict.

    Exit code 0 when every file was scored, 1 when some could not be (they are reported with an
    error; so is a --healthy-* reference that could not be read, its machine's files then scored
    without it), 2 for bad arguments (unreadable assets.json, unknown registry).
    """
    from models.inspect import InspectInputError, Inspector
    from models.inspect.readers import load_assets, parse_speeds
    from models.inspect.scoring import expand_inputs
    from models.registry import ModelRegistry

    try:
        profiles = load_assets(assets)
        inspector = Inspector(ModelRegistry(registry) if registry else None, profiles)
        speeds = parse_speeds(list(speed_rpm))
        results, verdicts = inspector.score(expand_inputs(list(files), [assets] if assets else []), asset, list(healthy_audio), list(healthy_thermal),
                                            list(healthy_plc), speeds)
    except (InspectInputError, LookupError, ValueError, OSError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    fused = {v.asset_id: v for v in verdicts}
    if as_json:
        records = []
        for r in results:
            rec = r.to_json()
            if r.asset_id in fused:
                rec["fused"] = fused[r.asset_id].to_json()
            records.append(rec)
        sys.stdout.write(json.dumps(records, indent=None) + "\n")
    else:
        _print_tables(results, verdicts)
    for r in results:
        for w in r.warnings:
            typer.echo(f"warning: {Path(r.file).name}: {w}", err=True)
    heard = {r.asset_id for r in results if r.modality == "audio"}
    for machine, hz in speeds.items():
        if machine is not None and machine not in heard:
            typer.echo(f"warning: --speed-rpm {machine}={60.0 * hz:.0f}: no audio file of machine {machine!r} was "
                       "scored, so it was not used; check the machine id (file name or --asset)", err=True)
    if any(r.error for r in results):
        raise typer.Exit(1)


def _speed_cell(result: FileResult) -> str:
    """An audio file's running speed and where it came from (``given``, ``plc``, ``drive carrier``, ``plc setpoint``,
    ``estimated``)."""
    from models.inspect.scoring import SPEED_SOURCES

    if result.shaft_hz is None:
        return ""
    short = dict(zip(SPEED_SOURCES, ("estimated", "given", "plc", "drive carrier", "plc setpoint"), strict=True))
    return f"{60.0 * result.shaft_hz:.0f} rpm ({short.get(result.speed_source or '', 'estimated')})"


def _print_tables(results: list, verdicts: list) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    table = Table(title="per file")
    for col in ("file", "machine", "modality", "class", "p(class)", "top-3", "speed"):
        table.add_column(col)
    for r in results:
        if r.error:
            table.add_row(Path(r.file).name, r.asset_id or "?", r.modality, "[red]error[/red]", "", r.error[:80], "")
            continue
        top = sorted(r.probabilities.items(), key=lambda kv: -kv[1])[:3]
        table.add_row(Path(r.file).name, r.asset_id or "?", r.modality, r.label or "", f"{r.probabilities[r.label]:.3f}",
                      ", ".join(f"{c} {p:.2f}" for c, p in top), _speed_cell(r))
    console.print(table)
    if verdicts:
        fused = Table(title="fused verdict per machine")
        for col in ("machine", "class", "p(class)", "confidence", "modalities"):
            fused.add_column(col)
        for v in verdicts:
            fused.add_row(v.asset_id, v.label, f"{v.probabilities[v.label]:.3f}", f"{v.confidence:.3f}",
                          ", ".join(f"{m}: {c}" for m, c in v.modalities.items()))
        console.print(fused)
