"""``linewatch train`` and ``linewatch export``: the model stage."""

from __future__ import annotations

from pathlib import Path

import typer

from linewatch.cli.context import cli_context

export_app = typer.Typer(help="Export trained models for serving (Triton model repository).", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.command("train")(train)
    app.add_typer(export_app, name="export")


def train(
    ctx: typer.Context,
    modalities: str = typer.Option("plc,thermal,audio", help="Comma-separated modalities to train."),
    registry: Path | None = typer.Option(None, "--registry", file_okay=False, help="Model registry (default <data_dir>/models)."),
    data: Path | None = typer.Option(
        None, "--data", file_okay=False,
        help="Labelled dataset directory (labels.csv + files, see docs/models.md). Default: simulate one.",
    ),
    samples_per_class: int = typer.Option(200, min=10, help="Simulated samples per class (without --data): a "
                                          "domain-randomised fleet, plus an unseen-type test fleet."),
    seed: int = typer.Option(0, help="Seed for data, initialisation and splits."),
    difficulty: str | None = typer.Option(None, help="Use the plant simulator at this difficulty (easy | realistic "
                                          "| hard) instead of the domain-randomised fleet."),
    threads: int = typer.Option(1, min=1, help="torch intra-op threads."),
    teacher_checkpoint: Path | None = typer.Option(
        None, file_okay=False, help="Start the teacher from your own Hugging Face checkpoint directory (one modality)."
    ),
    teacher_epochs: int | None = typer.Option(None, min=1, help="Override the teacher's epochs."),
    student_epochs: int | None = typer.Option(None, min=1, help="Override the student's epochs."),
    device: str = typer.Option("cpu", help="torch device for training: cpu | cuda (export and INT8 run on CPU)."),
    workers: int = typer.Option(1, min=1, help="Processes rendering the simulated data."),
    force: bool = typer.Option(False, "--force", help="Register even if the new model is worse than the registered "
                               "latest (the no-regression gate; recorded in the card)."),
) -> None:
    """Train teacher → distil student → ONNX → INT8 (CPU and TensorRT flavours) → accuracy gates → registry.

    Fails with a clear message (nothing registered) when a gate fails: INT8 more than 1 macro-F1
    point below the FP32 student, the student more than 5 below the teacher, a floor missed
    (macro-F1 past moderate severity, recall of each class the modality can see, healthy false
    positives), or the serving model worse than the registered latest (unless --force).
    """
    from models.training import AccuracyGateError, train_command

    cli = cli_context(ctx)
    registry = registry or cli.settings().data_dir / "models"
    try:
        train_command(modalities=modalities, registry_dir=registry, data_dir=data, samples_per_class=samples_per_class,
                      seed=seed, difficulty=difficulty, threads=threads, teacher_checkpoint=teacher_checkpoint,
                      teacher_epochs=teacher_epochs, student_epochs=student_epochs, device=device, force=force,
                      workers=workers)
    except AccuracyGateError as exc:
        cli.console.print(f"[red]accuracy gate failed:[/red] {exc}")
        raise typer.Exit(3) from exc
    except ValueError as exc:
        cli.console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc


@export_app.command("triton")
def export_triton(
    ctx: typer.Context,
    model_dir: Path = typer.Argument(..., exists=True, file_okay=False, help="A registry version directory (with card.json)."),
    out: Path = typer.Option(..., "--out", "-o", file_okay=False, help="Triton model repository to write into."),
    flavour: str = typer.Option("int8_trt", help="int8_trt | int8_cpu | fp32 | teacher_fp32."),
    instance_kind: str = typer.Option("KIND_GPU", help="KIND_GPU or KIND_CPU."),
    instances: int = typer.Option(1, min=1, help="Model instances per device."),
    max_batch_size: int = typer.Option(32, min=1, help="Largest batch the dynamic batcher forms."),
    max_queue_delay_us: int = typer.Option(2000, min=0, help="Dynamic batcher queue delay."),
) -> None:
    """Write <out>/<model>/config.pbtxt (onnxruntime backend, dynamic batching, instance groups, optional
    TensorRT accelerator) and <out>/<model>/1/model.onnx."""
    from models.runtime import export_triton_repository
    from models.runtime.triton_repository import TritonRepositoryOptions

    cli = cli_context(ctx)
    options = TritonRepositoryOptions(flavour=flavour, instance_kind=instance_kind, instance_count=instances,  # type: ignore[arg-type]
                                      max_batch_size=max_batch_size, max_queue_delay_us=max_queue_delay_us)
    written = export_triton_repository(model_dir, out, options)
    cli.console.print(f"[green]wrote[/green] {written}")
