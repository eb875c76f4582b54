"""The part of training that wants a GPU: teacher, label-only student, distilled student, calibration.

:func:`fit_models` runs on any torch device (``TrainConfig.device``: ``cpu`` for smoke runs in the
tests, ``cuda`` on the lent H200) and returns a :class:`FitBundle`: the three models, which student
is kept (distillation only where it beats the label-only student on *validation*), each model's
calibration (temperature + healthy prior shift, fitted on validation) and the fit histories.
A bundle saves to a directory (teacher as a Hugging Face checkpoint, students as safetensors,
``bundle.json``) and loads back on another machine, where :func:`models.training.train.package`
exports, quantizes, gates and registers it.
"""

from __future__ import annotations

import json
import platform
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

from models.common.normalization import fit_standardizer
from models.config import TrainConfig
from models.data.samples import LabelledSamples, Split, split_samples
from models.families import family
from models.training.calibration import Calibration, calibrate
from models.training.evaluation import possible_mask
from models.training.loop import FitResult, fit, predict_logits

STUDENT_ROLES: tuple[str, ...] = ("student_label_only", "student_distilled")
BUNDLE_JSON = "bundle.json"


class CalibratedModel(nn.Module):
    """``(model(x) + b) / T``: calibrated logits (what is exported and served)."""

    def __init__(self, model: nn.Module, calibration: Calibration, n_classes: int) -> None:
        super().__init__()
        self.model = model
        shift = torch.tensor([list(calibration.class_bias)], dtype=torch.float32)
        if shift.shape != (1, n_classes):
            raise ValueError(f"calibration has {shift.shape[1]} class shifts for {n_classes} classes")
        self.register_buffer("shift", shift)
        self.register_buffer("inv_temperature", torch.tensor(1.0 / float(calibration.temperature)))

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return (self.model(input) + self.shift) * self.inv_temperature


@dataclass
class FitBundle:
    """Trained, calibrated models of one modality and how they were made."""

    modality: str
    classes: tuple[str, ...]
    sample_shape: tuple[int, ...]
    config: dict
    split: dict[str, list[int]]
    standardizer: tuple[list[float], list[float]]
    chosen: str
    calibrations: dict[str, Calibration]
    fits: dict[str, FitResult | None]
    val_macro_f1: dict[str, float]
    trained_on: dict[str, str]
    models: dict[str, nn.Module] = field(default_factory=dict, repr=False)

    def calibrated(self, role: str) -> CalibratedModel:
        """``role`` (teacher / student_label_only / student_distilled / student = the chosen one), calibrated."""
        role = self.chosen if role == "student" else role
        return CalibratedModel(self.models[role], self.calibrations[role], len(self.classes)).eval()

    def save(self, directory: Path) -> Path:
        from safetensors.torch import save_file

        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        teacher = self.models["teacher"].cpu()
        teacher.save(directory / "teacher")  # type: ignore[operator]
        for role in STUDENT_ROLES:
            state = {k: v.detach().cpu().contiguous() for k, v in self.models[role].state_dict().items()}
            save_file(state, str(directory / f"{role}.safetensors"))
        meta = {
            "modality": self.modality, "classes": list(self.classes), "sample_shape": list(self.sample_shape),
            "config": self.config, "split": self.split, "standardizer": list(self.standardizer),
            "chosen": self.chosen, "calibrations": {k: v.to_dict() for k, v in self.calibrations.items()},
            "fits": {k: (asdict(v) if v else None) for k, v in self.fits.items()},
            "val_macro_f1": self.val_macro_f1, "trained_on": self.trained_on,
        }
        (directory / BUNDLE_JSON).write_text(json.dumps(meta, indent=1))
        return directory

    @classmethod
    def load(cls, directory: Path) -> FitBundle:
        from safetensors.torch import load_file

        directory = Path(directory)
        meta = json.loads((directory / BUNDLE_JSON).read_text())
        cfg = TrainConfig.model_validate(meta["config"])
        fam = family(meta["modality"])
        classes = tuple(meta["classes"])
        shape = tuple(meta["sample_shape"])
        stats = tuple(np.asarray(s, np.float32).reshape(shape) for s in meta["standardizer"])
        teacher_cfg = cfg.teacher.model_copy(update={"checkpoint": directory / "teacher"})
        models: dict[str, nn.Module] = {"teacher": fam.build_teacher(teacher_cfg, classes, shape, stats).eval()}
        for role in STUDENT_ROLES:
            student = fam.build_student(cfg.student, len(classes), shape, stats)
            student.load_state_dict(load_file(str(directory / f"{role}.safetensors")))
            models[role] = student.eval()
        fits = {k: (FitResult(**v) if v else None) for k, v in meta["fits"].items()}
        return cls(meta["modality"], classes, shape, meta["config"], meta["split"],
                   tuple(meta["standardizer"]), meta["chosen"],  # type: ignore[arg-type]
                   {k: Calibration(**v) for k, v in meta["calibrations"].items()}, fits, meta["val_macro_f1"],
                   meta["trained_on"], models)

    def split_of(self, data: LabelledSamples) -> Split:
        return Split(*(data.subset(np.asarray(self.split[k], np.int64)) for k in ("train", "val", "test")))


def _seed(seed: int) -> None:
    np.random.seed(seed)
    torch.manual_seed(seed)


def _device_description(device: torch.device) -> str:
    if device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(device)})"
    return f"cpu ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)"


def fit_models(modality: str, data: LabelledSamples, cfg: TrainConfig) -> FitBundle:
    """Teacher, label-only and distilled students, calibrated on validation (see module docstring)."""
    from models.training.metrics import classification_report

    started = time.perf_counter()
    fam = family(modality)
    split = split_samples(data, cfg.val_fraction, cfg.test_fraction, cfg.seed)
    classes, shape = data.classes, data.sample_shape
    stats = fit_standardizer(split.train.inputs, per_feature=fam.per_feature_standardization)
    device = torch.device(cfg.device)
    common = {"batch_size": cfg.batch_size, "patience": cfg.patience, "progress": cfg.progress}
    tr, va = split.train, split.val

    _seed(cfg.seed)
    teacher = fam.build_teacher(cfg.teacher, classes, shape, stats).to(device)
    teacher_fit = None
    if cfg.teacher.epochs > 0:
        teacher_fit = fit(teacher, tr.inputs, tr.labels, va.inputs, va.labels, classes, epochs=cfg.teacher.epochs,
                          lr=cfg.teacher.lr, weight_decay=cfg.teacher.weight_decay, seed=cfg.seed,
                          desc=f"{modality} teacher", min_epochs=cfg.teacher.min_epochs, **common)
    soft = predict_logits(teacher, tr.inputs)
    models: dict[str, nn.Module] = {"teacher": teacher}
    fits: dict[str, FitResult | None] = {"teacher": teacher_fit}
    for role, alpha in (("student_label_only", 0.0), ("student_distilled", cfg.student.alpha)):
        _seed(cfg.seed + 1)
        student = fam.build_student(cfg.student, len(classes), shape, stats).to(device)
        fits[role] = fit(student, tr.inputs, tr.labels, va.inputs, va.labels, classes, epochs=cfg.student.epochs,
                         lr=cfg.student.lr, weight_decay=cfg.student.weight_decay, seed=cfg.seed + 1,
                         desc=f"{modality} {role}", min_epochs=cfg.student.min_epochs,
                         teacher_logits=soft if alpha > 0 else None, temperature=cfg.student.temperature,
                         alpha=alpha, **common)
        models[role] = student
    calibrations, val_f1 = {}, {}
    possible = possible_mask(va.asset_types, classes)
    for role, model in models.items():
        logits = predict_logits(model, va.inputs)
        calibrations[role] = calibrate(logits, va.labels, cfg.val_fpr_budget, severity=va.severity, possible=possible)
        pred = calibrations[role].apply(logits, possible).argmax(1)
        val_f1[role] = classification_report(va.labels, pred, classes).macro_f1
    if cfg.distillation == "always":
        chosen = "student_distilled"
    elif cfg.distillation == "never":
        chosen = "student_label_only"
    else:
        chosen = "student_distilled" if val_f1["student_distilled"] > val_f1["student_label_only"] else "student_label_only"
    for m in models.values():
        m.cpu().eval()
    trained_on = {"device": _device_description(device), "torch": torch.__version__,
                  "host": platform.node(), "duration_s": f"{time.perf_counter() - started:.1f}"}
    index = {k: v for k, v in zip(("train", "val", "test"), _split_indices(data, cfg), strict=True)}
    return FitBundle(modality, classes, shape, cfg.model_dump(mode="json"), index,
                     (np.asarray(stats[0]).ravel().tolist(), np.asarray(stats[1]).ravel().tolist()), chosen,
                     calibrations, fits, val_f1, trained_on, models)


def _split_indices(data: LabelledSamples, cfg: TrainConfig) -> tuple[list[int], list[int], list[int]]:
    """Indices of :func:`split_samples` (recomputed: the split is a pure function of data and seed)."""
    from models.data.samples import grouped_split_indices

    if data.groups is not None:
        return tuple(x.tolist() for x in grouped_split_indices(data.groups, cfg.val_fraction, cfg.test_fraction,
                                                               cfg.seed))  # type: ignore[return-value]
    ids = {sid: i for i, sid in enumerate(data.sample_ids)} if data.sample_ids else None
    split = split_samples(data, cfg.val_fraction, cfg.test_fraction, cfg.seed)
    if ids is None:
        raise ValueError("data without groups needs sample_ids to record its split")
    return tuple([ids[s] for s in part.sample_ids] for part in (split.train, split.val, split.test))  # type: ignore[return-value]
