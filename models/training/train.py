"""``train_modality``: fit (teacher, label-only and distilled students, calibration) → package
(ONNX, INT8 in two flavours, severity-aware evaluation, gates, card) → registered version.

The two halves can run on different machines: :func:`models.training.fitting.fit_models` on a GPU
(it returns a :class:`~models.training.fitting.FitBundle` that saves to a directory),
:func:`package` on the CPU machine that quantizes and times the models. Nothing is registered
unless every gate passed: the version is assembled in a staging directory next to the registry
and renamed into place at the end.
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
from models.data.samples import LabelledSamples
from models.export.calibration import array_digest, calibration_indices
from models.export.latency import measure_latencies
from models.export.onnx_export import check_parity, export_onnx, ort_logits, ort_session
from models.export.quantize import FLAVOURS, quantize_int8
from models.families import family
from models.registry.card import ModelCard
from models.registry.store import ModelRegistry, file_entry
from models.specs import PREPROCESSING_VERSION, check_modality, input_spec
from models.training.calibration import reliability_png, softmax
from models.training.evaluation import (
    SEVERITY_THRESHOLD,
    VISIBLE_CLASSES,
    Evaluation,
    apply_mask,
    evaluate,
    possible_mask,
    severity_curves_png,
)
from models.training.fitting import STUDENT_ROLES, FitBundle, fit_models
from models.training.gates import (
    enforce_gates,
    evaluate_gates,
    floor_checks,
    regression_check,
)
from models.training.loop import predict_logits
from models.training.metrics import confusion_png
from models.withheld_classes import drop_withheld_rows, withheld_rows
from pipeline.features.vector_history import columns_of

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
#: Roles of ``card.metrics`` (test split): the comparison the issue asks for, on the same split.
METRIC_ROLES: tuple[str, ...] = ("teacher", "student_label_only", "student_distilled", "student", "int8_cpu",
                                 "int8_tensorrt")


def _param_count(model: torch.nn.Module) -> int:
    return int(sum(p.numel() for p in model.parameters()))


def _versions() -> dict[str, str]:
    import onnx
    import onnxruntime
    import transformers

    return {"torch": torch.__version__, "onnxruntime": onnxruntime.__version__, "onnx": onnx.__version__,
            "transformers": transformers.__version__}


def _write_reference(data: LabelledSamples, directory: Path, n: int, seed: int) -> dict[str, object]:
    """Save a stratified sample of training drift-summary rows as ``reference.npz``."""
    idx = calibration_indices(data.labels, n, seed + 7)
    if data.reference is not None:
        rows, names, kind = data.reference[idx], data.reference_names, data.reference_kind
    else:  # no summary given: per-sample mean/std/min/max of the model input
        x = data.inputs[idx].reshape(len(idx), -1)
        rows = np.stack([np.nanmean(x, 1), np.nanstd(x, 1), np.nanmin(x, 1), np.nanmax(x, 1)], axis=1)
        names, kind = ("input.mean", "input.std", "input.min", "input.max"), "input summary"
    np.savez_compressed(directory / FILES["reference"], features=np.asarray(rows, np.float32),
                        names=np.asarray(names, dtype=str), labels=data.labels[idx].astype(np.int64))
    return {"path": FILES["reference"], "n_samples": len(idx), "names": list(names), "kind": kind,
            "arrays": {"features": "float32 (n, len(names))", "names": "str (len(names),)",
                       "labels": "int64 class index"}}


def train_modality(modality: str, data: LabelledSamples, out_registry_dir: Path, config: TrainConfig | None = None,
                   unseen: LabelledSamples | None = None, force: bool = False) -> ModelCard:
    """Fit, package, gate and register one modality; return its card.

    ``unseen``: an optional second test set (machine types / parameter ranges never seen in
    training), evaluated and recorded but not gated. ``force``: register even if the new model is
    worse than the registered latest (the no-regression gate); the other gates always apply.
    Raises :class:`~models.training.gates.AccuracyGateError` (nothing registered) when a gate fails,
    :class:`~models.export.onnx_export.OnnxParityError` when ORT disagrees with torch.
    """
    cfg = config or TrainConfig()
    modality = check_modality(modality)
    if data.modality != modality:
        raise ValueError(f"data is for {data.modality!r}, not {modality!r}")
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(cfg.threads)
    try:
        bundle = fit_models(modality, data, cfg)
        return package(bundle, data, out_registry_dir, cfg, unseen=unseen, force=force)
    finally:
        torch.set_num_threads(previous_threads)


def package(bundle: FitBundle, data: LabelledSamples, out_registry_dir: Path, cfg: TrainConfig | None = None,
            unseen: LabelledSamples | None = None, force: bool = False) -> ModelCard:
    """Export, quantize, evaluate, gate and register a fitted bundle (CPU)."""
    cfg = cfg or TrainConfig.model_validate(bundle.config)
    started = time.perf_counter()
    registry = ModelRegistry(out_registry_dir)
    Path(out_registry_dir).mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".staging-{bundle.modality}-", dir=out_registry_dir))
    try:
        card = _package(bundle, data, staging, cfg, registry, unseen, force)
        card.training["package_duration_s"] = round(time.perf_counter() - started, 1)
        card.save(staging)
        version, directory = registry.publish(bundle.modality, staging)
        log.info("%s: registered %s at %s", bundle.modality, version, directory)
        return ModelCard.load(directory)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def _probs(logits: np.ndarray) -> np.ndarray:
    return softmax(logits).astype(np.float32)


def visible_recall(probs: np.ndarray, labels: np.ndarray, severity: np.ndarray | None, classes: tuple[str, ...],
                   cls: str, withheld: np.ndarray) -> float:
    """Recall of ``cls`` past moderate severity over the samples whose input can show it (not
    ``withheld``, :mod:`models.withheld_classes`); NaN when there are none.

    >>> p = np.array([[0.2, 0.8], [0.9, 0.1], [0.9, 0.1]]); y = np.array([1, 1, 1])
    >>> visible_recall(p, y, np.ones(3), ("normal", "x"), "x", np.array([[0, 0], [0, 1], [0, 0]], bool))
    0.5
    """
    k = list(classes).index(cls)
    sev = np.where(labels == 0, 0.0, 1.0) if severity is None else np.asarray(severity)
    sel = (np.asarray(labels) == k) & (sev >= SEVERITY_THRESHOLD) & ~withheld[:, k]
    return float(np.mean(probs[sel].argmax(axis=1) == k)) if np.any(sel) else float("nan")


def _regression(registry: ModelRegistry, modality: str, spec_shape: list[int], features_version: int,
                new: Evaluation, test: LabelledSamples, classes: tuple[str, ...], cfg: TrainConfig,
                withheld: np.ndarray | None = None):
    """The no-regression check against the registered latest (None when nothing is registered), the
    registered model read as served (``withheld`` classes dropped) like the new one."""
    try:
        latest = registry.latest(modality)
    except LookupError:
        return None
    card = latest.card
    same = list(card.input.get("shape", [])) == spec_shape and card.features_version == features_version
    columns = None if same else columns_of(modality, card.features_version, features_version)
    if columns is not None and len(columns) != int(np.prod(card.input.get("shape", [0]))):
        columns = None
    if same or columns is not None:
        inputs = test.inputs if same else test.inputs[:, columns]
        old_probs = _probs(ort_logits(ort_session(latest.path()), inputs))
        if withheld is not None:
            old_probs = drop_withheld_rows(old_probs, withheld)
        old = evaluate(apply_mask(old_probs, possible_mask(test.asset_types, classes)), test.labels, test.severity,
                       classes)
        basis = "registered model re-scored on this test split" + (
            "" if same else f" (its features v{card.features_version} values picked from the new vector by name)")
        new_f1, old_f1 = new.macro_f1_past_moderate, old.macro_f1_past_moderate
    else:
        basis = (f"input changed (registered: features v{card.features_version}, shape {card.input.get('shape')}), "
                 "compared with its recorded test macro-F1")
        serving = card.serving_role.removeprefix("student_")
        old_f1 = float(card.metrics.get(serving, card.metrics.get("int8_cpu", {})).get("macro_f1", 0.0))
        new_f1 = new.macro_f1
    return regression_check(new_f1, old_f1, latest.version, basis, cfg.gates)


def _package(bundle: FitBundle, data: LabelledSamples, out: Path, cfg: TrainConfig, registry: ModelRegistry,
             unseen: LabelledSamples | None, force: bool) -> ModelCard:
    modality, classes, shape = bundle.modality, bundle.classes, bundle.sample_shape
    fam = family(modality)
    split = bundle.split_of(data)
    test = split.test
    student = bundle.calibrated("student")
    teacher = bundle.calibrated("teacher")

    # 1. ONNX (calibration baked in) + parity
    fp32 = export_onnx(student, shape, out / FILES["student_fp32"])
    parity = check_parity(student, fp32, test.inputs[: min(64, len(test.inputs))], cfg.gates.parity_atol)
    files = {"student_fp32": fp32}
    teacher_parity = None
    if cfg.export_teacher:
        files["teacher_fp32"] = export_onnx(teacher, shape, out / FILES["teacher_fp32"])
        teacher_parity = check_parity(teacher, files["teacher_fp32"], test.inputs[: min(16, len(test.inputs))],
                                      cfg.gates.parity_atol)
    if cfg.save_teacher_checkpoint:
        bundle.models["teacher"].save(out / "teacher")  # type: ignore[operator]

    # 2. INT8, calibrated on a stratified sample of the training split
    calib_idx = calibration_indices(split.train.labels, cfg.quantize.calibration_samples, cfg.seed)
    calib = split.train.inputs[calib_idx]
    recipes: dict[str, dict] = {}
    for flavour in FLAVOURS:
        role = f"student_int8_{flavour}"
        recipes[flavour] = asdict(quantize_int8(fp32, out / FILES[role], calib, flavour, cfg.quantize))
        recipes[flavour]["evaluated_with"] = (
            "ONNX Runtime CPU, graph optimisations off (QDQ emulation of TensorRT explicit quantization)"
            if flavour == "tensorrt" else "ONNX Runtime CPU, default optimisations (fused int8 kernels)")
        files[role] = out / FILES[role]

    # 3. evaluation: every role on the test split (and the unseen set), severity-aware
    def scores(part: LabelledSamples) -> dict[str, np.ndarray]:
        """Every role's probabilities, impossible classes (cavitation without a pump) masked as
        every consumer masks them."""
        inputs = part.inputs
        possible = possible_mask(part.asset_types, classes)
        out_probs = {r: _probs(predict_logits(bundle.calibrated(r), inputs))
                     for r in ("teacher", *STUDENT_ROLES)}
        out_probs["student"] = _probs(ort_logits(ort_session(fp32), inputs))
        for flavour in FLAVOURS:
            session = ort_session(files[f"student_int8_{flavour}"], emulate_qdq=flavour == "tensorrt")
            out_probs[f"int8_{flavour}"] = _probs(ort_logits(session, inputs))
        return {r: apply_mask(p, possible) for r, p in out_probs.items()}

    sets = {"test": test, **({"unseen": unseen} if unseen is not None else {})}
    evaluations: dict[str, dict[str, Evaluation]] = {}
    served_test: np.ndarray | None = None
    for name, part in sets.items():
        probs = scores(part)
        evaluations[name] = {r: evaluate(p, part.labels, part.severity, classes) for r, p in probs.items()}
        if name == "test":
            served_test = probs["int8_cpu"]
            raw = apply_mask(_probs(predict_logits(bundle.models[bundle.chosen], part.inputs)),
                             possible_mask(part.asset_types, classes))
            reliability_png(raw, part.labels, out / "reliability.uncalibrated.png", f"{modality} student, raw softmax")
            reliability_png(probs["int8_cpu"], part.labels, out / "reliability.int8_cpu.png",
                            f"{modality} INT8 student, calibrated")
    ev = evaluations["test"]
    for role in ("teacher", "student", "int8_cpu", "int8_tensorrt"):
        confusion_png(ev[role].report, out / f"confusion.{role}.png", f"{modality} {role} (test)")
    severity_curves_png({f"{n} split": e["int8_cpu"] for n, e in evaluations.items()}, out / "recall_vs_severity.png",
                        f"{modality} INT8 student: recall vs fault severity")
    if ev["teacher"].macro_f1 >= TOO_EASY_F1 and data.source.startswith("simulator"):
        log.warning("%s teacher macro-F1 %.3f >= %.2f on simulated data: too easy to tell models apart",
                    modality, ev["teacher"].macro_f1, TOO_EASY_F1)

    # 4. gates, on the INT8 model as served: a class the input cannot show is withheld
    # (models.withheld_classes: dropped from the probabilities, and left out of that class's recall)
    assert served_test is not None
    withheld = withheld_rows(modality, test.inputs, classes)
    served = drop_withheld_rows(served_test, withheld)
    serving = evaluate(served, test.labels, test.severity, classes)
    checks = evaluate_gates(ev["teacher"].macro_f1, ev["student"].macro_f1,
                            {f: ev[f"int8_{f}"].macro_f1 for f in FLAVOURS}, cfg.gates)
    visible = {c: visible_recall(served, test.labels, test.severity, classes, c, withheld)
               for c in VISIBLE_CLASSES.get(modality, ())}
    strong = serving.macro_f1_past_moderate if test.severity is not None else serving.macro_f1
    checks += floor_checks(strong, visible, serving.healthy_fpr, cfg.gates)
    spec = input_spec(modality, shape, data.features_version)
    regression = _regression(registry, modality, list(spec.shape), data.features_version, serving, test, classes, cfg,
                             withheld)
    forced = enforce_gates(modality, checks, regression, force)

    # 5. card artefacts
    reference = _write_reference(split.train, out, cfg.reference_samples, cfg.seed)
    latency_files = {r: p for r, p in files.items() if r.startswith("student")}
    latencies = measure_latencies(latency_files, test.inputs[:32], (1, 32), cfg.latency_runs)
    names = sorted(p.name for p in out.iterdir() if p.is_file()) + sorted(
        f"teacher/{p.name}" for p in (out / "teacher").glob("*") if p.is_file())
    role_of = {v: k for k, v in FILES.items()}
    entries = {role_of.get(n, n): file_entry(out, n) for n in names}
    teacher_fit = bundle.fits.get("teacher")
    return ModelCard(
        name=f"{modality}-student", modality=modality, version="staging",
        created_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), classes=list(classes), input=spec.to_dict(),
        features_version=data.features_version, preprocessing_version=PREPROCESSING_VERSION,
        teacher={
            "architecture": fam.teacher_architecture, "parameters": _param_count(bundle.models["teacher"]),
            "source": str(cfg.teacher.checkpoint) if cfg.teacher.checkpoint else "random init from config",
            "config": cfg.teacher.model_dump(mode="json"), "fit": asdict(teacher_fit) if teacher_fit else None,
            "onnx_parity": teacher_parity.to_dict() if teacher_parity else None,
            "trained_on": bundle.trained_on, "torch_test_macro_f1": ev["teacher"].macro_f1,
        },
        student={
            "architecture": fam.student_architecture, "parameters": _param_count(bundle.models[bundle.chosen]),
            "kept": bundle.chosen, "config": cfg.student.model_dump(mode="json"),
            "fit": asdict(bundle.fits[bundle.chosen]) if bundle.fits.get(bundle.chosen) else None,
            "trained_on": bundle.trained_on, "torch_test_macro_f1": ev[bundle.chosen].macro_f1,
        },
        metrics={role: ev[role].report.to_dict() for role in METRIC_ROLES},
        gates={"passed": True, "forced": forced, "config": cfg.gates.model_dump(),
               "checks": [c.to_dict() for c in checks]},
        parity=parity.to_dict(), quantization=recipes,
        calibration={"n_samples": len(calib_idx), "digest": array_digest(calib),
                     "source": "stratified sample of the training split", "method": cfg.quantize.calibration_method},
        dataset={
            "source": data.source, "digest": data.digest(), "n_total": len(data.labels),
            "n_train": len(split.train.labels), "n_val": len(split.val.labels),
            "n_test": len(test.labels), "class_counts": data.class_counts(),
            "test_class_counts": test.class_counts(),
            "split": "grouped by machine (no machine in two splits)" if data.groups is not None else "stratified",
            "n_machines": {k: len(set(part.groups.tolist())) for k, part in
                           (("train", split.train), ("val", split.val), ("test", test))} if data.groups is not None
            else {},
            **({"unseen": {"source": unseen.source, "n": len(unseen.labels),
                           "class_counts": unseen.class_counts()}} if unseen is not None else {}),
        },
        reference=reference, latency_ms=latencies, files=entries,
        training={"seed": cfg.seed, "threads": cfg.threads, "config": cfg.model_dump(mode="json"),
                  "versions": _versions(), "fit_on": bundle.trained_on},
        evaluation={name: {r: e.to_dict() for r, e in evs.items()} for name, evs in evaluations.items()},
        probability_calibration={r: c.to_dict() for r, c in bundle.calibrations.items()}
        | {"serving": bundle.calibrations[bundle.chosen].to_dict(), "test_ece_int8_cpu": serving.ece},
        distillation={
            "kept": bundle.chosen, "rule": cfg.distillation,
            "val_macro_f1": bundle.val_macro_f1,
            "test_macro_f1": {r: ev[r].macro_f1 for r in ("teacher", *STUDENT_ROLES)},
            "distillation_helped_on_val": bundle.val_macro_f1.get("student_distilled", 0.0)
            > bundle.val_macro_f1.get("student_label_only", 0.0),
        },
    )
