"""``train_modality``: teacher → distilled student → ONNX → INT8 (two flavours) → gates →
registered model version with its card.

Nothing is registered unless every step passed: the version is assembled in a staging
directory next to the registry and renamed into place at the end.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import torch

from models.config import TrainConfig
from models.data.samples import LabelledSamples, split_samples
from models.export.calibration import array_digest, calibration_indices
from models.export.latency import measure_latencies
from models.export.onnx_export import check_parity, export_onnx, ort_logits, ort_session
from models.export.quantize import FLAVOURS, quantize_int8
from models.families import family
from models.registry.card import ModelCard
from models.registry.store import ModelRegistry, file_entry
from models.specs import PREPROCESSING_VERSION, check_modality, input_spec
from models.common.normalization import fit_standardizer
from models.training.gates import AccuracyGateError, evaluate_gates
from models.training.loop import fit, predict_logits
from models.training.metrics import classification_report, confusion_png

log = logging.getLogger(__name__)

#: Teacher macro-F1 above this on simulated data means the task is too easy to tell models apart.
TOO_EASY_F1 = 0.97

FILES = {
    "student_fp32": "student.fp32.onnx",
    "student_int8_cpu": "student.int8.cpu.onnx",
    "student_int8_tensorrt": "student.int8.tensorrt.onnx",
    "teacher_fp32": "teacher.fp32.onnx",
    "reference": "reference.npz",
}


def _param_count(model: torch.nn.Module) -> int:
    return int(sum(p.numel() for p in model.parameters()))


def _seed_everything(seed: int) -> None:
    np.random.seed(seed)
    torch.manual_seed(seed)


def _versions() -> dict[str, str]:
    import onnx
    import onnxruntime
    import transformers

    return {"torch": torch.__version__, "onnxruntime": onnxruntime.__version__, "onnx": onnx.__version__, "transformers": transformers.__version__}


def _write_reference(data: LabelledSamples, directory: Path, n: int, seed: int) -> dict[str, object]:
    """Save a stratified sample of training drift-summary rows as ``reference.npz``."""
    idx = calibration_indices(data.labels, n, seed + 7)
    if data.reference is not None:
        rows, names, kind = data.reference[idx], data.reference_names, data.reference_kind
    else:  # no summary given: per-sample mean/std/min/max of the model input
        x = data.inputs[idx].reshape(len(idx), -1)
        rows = np.stack([np.nanmean(x, 1), np.nanstd(x, 1), np.nanmin(x, 1), np.nanmax(x, 1)], axis=1)
        names, kind = ("input.mean", "input.std", "input.min", "input.max"), "input summary"
    np.savez_compressed(
        directory / FILES["reference"],
        features=np.asarray(rows, np.float32),
        names=np.asarray(names, dtype=str),
        labels=data.labels[idx].astype(np.int64),
    )
    return {"path": FILES["reference"], "n_samples": int(len(idx)), "names": list(names), "kind": kind,
            "arrays": {"features": "float32 (n, len(names))", "names": "str (len(names),)", "labels": "int64 class index"}}


def train_modality(
    modality: str,
    data: LabelledSamples,
    out_registry_dir: Path,
    config: TrainConfig | None = None,
) -> ModelCard:
    """Train, distil, export, quantize, gate and register one modality; return its card.

    Raises :class:`~models.training.gates.AccuracyGateError` (nothing registered) when a gate
    fails, :class:`~models.export.onnx_export.OnnxParityError` when ORT disagrees with torch.
    """
    cfg = config or TrainConfig()
    modality = check_modality(modality)
    if data.modality != modality:
        raise ValueError(f"data is for {data.modality!r}, not {modality!r}")
    started = time.perf_counter()
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(cfg.threads)
    _seed_everything(cfg.seed)
    registry = ModelRegistry(out_registry_dir)
    Path(out_registry_dir).mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".staging-{modality}-", dir=out_registry_dir))
    try:
        card = _train(modality, data, staging, cfg)
        card.training["duration_s"] = round(time.perf_counter() - started, 1)
        card.save(staging)
        version, directory = registry.publish(modality, staging)
        log.info("%s: registered %s at %s", modality, version, directory)
        return ModelCard.load(directory)
    finally:
        torch.set_num_threads(previous_threads)
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def _train(modality: str, data: LabelledSamples, out: Path, cfg: TrainConfig) -> ModelCard:
    fam = family(modality)
    split = split_samples(data, cfg.val_fraction, cfg.test_fraction, cfg.seed)
    classes = data.classes
    shape = data.sample_shape
    stats = fit_standardizer(split.train.inputs, per_feature=fam.per_feature_standardization)

    # 1. teacher
    device = torch.device(cfg.device)
    teacher = fam.build_teacher(cfg.teacher, classes, shape, stats).to(device)
    teacher_fit = None
    if cfg.teacher.epochs > 0:
        teacher_fit = fit(
            teacher, split.train.inputs, split.train.labels, split.val.inputs, split.val.labels, classes,
            epochs=cfg.teacher.epochs, lr=cfg.teacher.lr, weight_decay=cfg.teacher.weight_decay,
            batch_size=cfg.batch_size, patience=cfg.patience, seed=cfg.seed,
            desc=f"{modality} teacher", progress=cfg.progress, min_epochs=cfg.teacher.min_epochs,
        )
    teacher_test = classification_report(split.test.labels, predict_logits(teacher, split.test.inputs).argmax(1), classes)
    if teacher_test.macro_f1 >= TOO_EASY_F1 and data.source.startswith("simulator"):
        log.warning(
            "%s teacher macro-F1 %.3f >= %.2f on simulated data: the task is too easy to tell models apart; "
            "raise the simulator difficulty", modality, teacher_test.macro_f1, TOO_EASY_F1,
        )

    # 2. student, distilled from the teacher's logits on the training split
    _seed_everything(cfg.seed + 1)
    student = fam.build_student(cfg.student, len(classes), shape, stats).to(device)
    soft = predict_logits(teacher, split.train.inputs)
    student_fit = fit(
        student, split.train.inputs, split.train.labels, split.val.inputs, split.val.labels, classes,
        epochs=cfg.student.epochs, lr=cfg.student.lr, weight_decay=cfg.student.weight_decay,
        batch_size=cfg.batch_size, patience=cfg.patience, seed=cfg.seed + 1,
        desc=f"{modality} student", progress=cfg.progress,
        teacher_logits=soft, temperature=cfg.student.temperature, alpha=cfg.student.alpha,
        min_epochs=cfg.student.min_epochs,
    )
    student_test = classification_report(split.test.labels, predict_logits(student, split.test.inputs).argmax(1), classes)
    teacher, student = teacher.cpu(), student.cpu()  # export and parity run on CPU

    # 3. ONNX export + parity
    fp32 = export_onnx(student, shape, out / FILES["student_fp32"])
    parity = check_parity(student, fp32, split.test.inputs[: min(64, len(split.test.inputs))], cfg.gates.parity_atol)
    files = {"student_fp32": fp32}
    teacher_parity = None
    if cfg.export_teacher:
        files["teacher_fp32"] = export_onnx(teacher, shape, out / FILES["teacher_fp32"])
        teacher_parity = check_parity(teacher, files["teacher_fp32"], split.test.inputs[: min(16, len(split.test.inputs))], cfg.gates.parity_atol)
    teacher_source = str(cfg.teacher.checkpoint) if cfg.teacher.checkpoint else "random init from config"
    if cfg.save_teacher_checkpoint:
        teacher.save(out / "teacher")

    # 4. INT8, calibrated on a stratified sample of the training split
    calib_idx = calibration_indices(split.train.labels, cfg.quantize.calibration_samples, cfg.seed)
    calib = split.train.inputs[calib_idx]
    recipes = {}
    int8_reports = {}
    for flavour in FLAVOURS:
        role = f"student_int8_{flavour}"
        recipes[flavour] = asdict(quantize_int8(fp32, out / FILES[role], calib, flavour, cfg.quantize))
        recipes[flavour]["evaluated_with"] = (
            "ONNX Runtime CPU, graph optimisations off (QDQ emulation of TensorRT explicit quantization)"
            if flavour == "tensorrt" else "ONNX Runtime CPU, default optimisations (fused int8 kernels)"
        )
        files[role] = out / FILES[role]
        # cpu: exactly what ORT CPU runs in production; tensorrt: TensorRT's QDQ arithmetic
        pred = ort_logits(ort_session(files[role], emulate_qdq=flavour == "tensorrt"), split.test.inputs).argmax(1)
        int8_reports[flavour] = classification_report(split.test.labels, pred, classes)
    fp32_ort_pred = ort_logits(ort_session(fp32), split.test.inputs).argmax(1)
    student_ort_test = classification_report(split.test.labels, fp32_ort_pred, classes)

    # 5. gates
    checks = evaluate_gates(
        teacher_test.macro_f1, student_ort_test.macro_f1, {k: v.macro_f1 for k, v in int8_reports.items()}, cfg.gates
    )
    failures = [c for c in checks if not c.passed]
    if failures:
        raise AccuracyGateError(modality, failures)

    # 6. card artefacts
    reports = {"teacher": teacher_test, "student": student_ort_test, **{f"int8_{k}": v for k, v in int8_reports.items()}}
    for role, report in reports.items():
        confusion_png(report, out / f"confusion.{role}.png", f"{modality} {role}")
    reference = _write_reference(split.train, out, cfg.reference_samples, cfg.seed)
    latency_files = {r: p for r, p in files.items() if r.startswith("student")}
    latencies = measure_latencies(latency_files, split.test.inputs[:32], (1, 32), cfg.latency_runs)
    names = sorted(p.name for p in out.iterdir() if p.is_file()) + sorted(
        f"teacher/{p.name}" for p in (out / "teacher").glob("*") if p.is_file()
    )
    role_of = {v: k for k, v in FILES.items()}
    entries = {role_of.get(n, n): file_entry(out, n) for n in names}
    spec = input_spec(modality, shape, data.features_version)
    return ModelCard(
        name=f"{modality}-student",
        modality=modality,
        version="staging",
        created_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        classes=list(classes),
        input=spec.to_dict(),
        features_version=data.features_version,
        preprocessing_version=PREPROCESSING_VERSION,
        teacher={
            "architecture": fam.teacher_architecture,
            "parameters": _param_count(teacher),
            "source": teacher_source,
            "config": cfg.teacher.model_dump(mode="json"),
            "fit": asdict(teacher_fit) if teacher_fit else None,
            "onnx_parity": teacher_parity.to_dict() if teacher_parity else None,
            "torch_test_macro_f1": teacher_test.macro_f1,
        },
        student={
            "architecture": fam.student_architecture,
            "parameters": _param_count(student),
            "config": cfg.student.model_dump(mode="json"),
            "fit": asdict(student_fit),
            "torch_test_macro_f1": student_test.macro_f1,
        },
        metrics={role: r.to_dict() for role, r in reports.items()},
        gates={"passed": True, "config": cfg.gates.model_dump(), "checks": [c.to_dict() for c in checks]},
        parity=parity.to_dict(),
        quantization=recipes,
        calibration={
            "n_samples": int(len(calib_idx)),
            "digest": array_digest(calib),
            "source": "stratified sample of the training split",
            "method": cfg.quantize.calibration_method,
        },
        dataset={
            "source": data.source,
            "digest": data.digest(),
            "n_total": int(len(data.labels)),
            "n_train": int(len(split.train.labels)),
            "n_val": int(len(split.val.labels)),
            "n_test": int(len(split.test.labels)),
            "class_counts": data.class_counts(),
            "test_class_counts": split.test.class_counts(),
        },
        reference=reference,
        latency_ms=latencies,
        files=entries,
        training={"seed": cfg.seed, "threads": cfg.threads, "config": cfg.model_dump(mode="json"), "versions": _versions()},
    )
