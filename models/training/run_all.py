"""Train every modality from one dataset; the function behind ``linewatch train``."""

from __future__ import annotations

import logging
from pathlib import Path

from models.config import TrainConfig, default_train_config
from models.data.samples import LabelledSamples
from models.registry.card import ModelCard
from models.specs import MODALITIES, check_modality
from models.training.train import train_modality

log = logging.getLogger(__name__)


def load_training_data(
    modalities: tuple[str, ...],
    data_dir: Path | None = None,
    samples_per_class: int = 200,
    sim_config: object | None = None,
    progress: bool = True,
    seed: int = 0,
    workers: int = 1,
    domain: str = "train",
) -> dict[str, LabelledSamples]:
    """From ``data_dir`` (labels.csv layout) when given, else a domain-randomised simulated fleet
    (``models.data.domain_data``; ``domain="unseen"``: the unseen-type test fleet). ``sim_config``
    (a ``SimulatorConfig``) selects the plant simulator instead (``simulated_samples``)."""
    if data_dir is not None:
        from models.data.directory import load_directory

        return {m: load_directory(data_dir, m) for m in modalities}
    if sim_config is not None:
        from models.data.simulated import simulated_samples

        return simulated_samples(samples_per_class, sim_config, modalities, progress=progress)  # type: ignore[arg-type]
    from models.data.domain_data import build_domain_dataset

    n_assets = max(12, samples_per_class * 6 // 40)  # ~40 samples per machine, as the shipped run
    ds = build_domain_dataset(samples_per_class, n_assets, seed=seed + (11 if domain == "train" else 23),
                              domain=domain, workers=workers, progress=progress)
    return {m: ds.samples(m) for m in modalities}


def train_all(
    out_registry_dir: Path,
    modalities: tuple[str, ...] = MODALITIES,
    data: dict[str, LabelledSamples] | Path | None = None,
    samples_per_class: int = 200,
    configs: dict[str, TrainConfig] | None = None,
    sim_config: object | None = None,
    progress: bool = True,
    unseen: dict[str, LabelledSamples] | None = None,
    force: bool = False,
    workers: int = 1,
) -> dict[str, ModelCard]:
    """Train ``modalities`` one after another; stop at the first failure (gate or parity).

    ``data``: arrays per modality, a dataset directory, or None (domain-randomised simulator,
    ``samples_per_class``; then an unseen-type test fleet of a quarter of the size is rendered
    too unless ``unseen`` is given). ``configs``: per-modality :class:`TrainConfig` (default:
    :func:`default_train_config`). ``force``: register despite the no-regression gate.
    """
    for m in modalities:
        check_modality(m)
    simulated = data is None and sim_config is None
    if not isinstance(data, dict):
        data = load_training_data(modalities, data, samples_per_class, sim_config, progress, workers=workers)
    if unseen is None and simulated:
        unseen = load_training_data(modalities, None, max(samples_per_class // 4, 5), None, progress, workers=workers,
                                    domain="unseen")
    cards = {}
    for m in modalities:
        cfg = (configs or {}).get(m) or default_train_config(m, progress=progress)
        cards[m] = train_modality(m, data[m], out_registry_dir, cfg, unseen=(unseen or {}).get(m), force=force)
    return cards


def train_command(
    modalities: str = "plc,thermal,audio",
    registry_dir: Path | None = None,
    data_dir: Path | None = None,
    samples_per_class: int = 200,
    seed: int = 0,
    difficulty: str | None = None,
    threads: int = 1,
    teacher_checkpoint: Path | None = None,
    teacher_epochs: int | None = None,
    student_epochs: int | None = None,
    progress: bool = True,
    device: str = "cpu",
    force: bool = False,
    workers: int = 1,
) -> dict[str, ModelCard]:
    """``linewatch train``: train, gate and register models; print a summary table.

    ``registry_dir`` defaults to ``<data_dir of Settings>/models``; the shipped defaults live in
    ``models/default`` and are made by ``scripts/train_gpu.py`` + ``scripts/package_models.py``.
    ``teacher_checkpoint`` (one modality only) starts the teacher from a local HF checkpoint.
    """
    from rich.console import Console
    from rich.table import Table

    mods = tuple(m.strip() for m in modalities.split(",") if m.strip())
    if teacher_checkpoint is not None and len(mods) != 1:
        raise ValueError("--teacher-checkpoint fits one modality: pass --modalities thermal (or plc / audio)")
    if registry_dir is None:
        from linewatch.settings import load_settings

        registry_dir = load_settings().data_dir / "models"
    sim_config = None
    if data_dir is None and difficulty:  # the plant simulator at that difficulty instead of the domain fleet
        from linewatch.simulator.config import SimulatorConfig

        sim_config = SimulatorConfig(difficulty=difficulty)
    configs = {}
    for m in mods:
        cfg = default_train_config(m, seed=seed, threads=threads, progress=progress, device=device)
        if teacher_checkpoint is not None:
            cfg.teacher.checkpoint = teacher_checkpoint
        if teacher_epochs is not None:
            cfg.teacher.epochs = teacher_epochs
        if student_epochs is not None:
            cfg.student.epochs = student_epochs
        configs[m] = cfg
    cards = train_all(Path(registry_dir), mods, data_dir, samples_per_class, configs, sim_config, progress,
                      force=force, workers=workers)
    table = Table(title=f"registered in {registry_dir}")
    for col in ("modality", "version", "teacher F1", "student F1", "INT8 cpu F1", "INT8 trt F1", "INT8 cpu b1 ms"):
        table.add_column(col)
    for m, card in cards.items():
        b1 = next((l.median_ms for l in card.latency_ms if l.role == "student_int8_cpu" and l.batch == 1), float("nan"))
        table.add_row(
            m, card.version, *(f"{card.macro_f1(r):.3f}" for r in ("teacher", "student", "int8_cpu", "int8_tensorrt")), f"{b1:.3f}"
        )
    Console().print(table)
    return cards
