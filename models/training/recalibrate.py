"""Re-calibrating a registered model with an honest false-alarm budget, published as its next version.

The students' class shifts were fitted to spend a 0.5 % healthy-FPR budget on the validation split
and measured on the same machines; held out, the FPR comes out 2–3× higher. This module

1. takes the registered serving model's logits on the validation split (the INT8 model that is
   served; its calibration ``(z + b) / T`` is already in them),
2. picks the validation budget by grouped cross-validation over the validation machines
   (:mod:`models.training.crossval`): the largest budget whose *held-out* FPR (as served: only the
   modality's visible classes) is at most ``target − margin``,
3. fits new class shifts at that budget on the whole validation split and a new temperature, and
   appends them to every student file as an FP32 head (:mod:`models.export.recalibrate`: the
   network and its INT8 weights are untouched),
4. scores the new files on the test split and the unseen set, runs the gates (floors, INT8 vs
   FP32, student vs teacher, no regression against the registered version re-scored on the same
   test split) and publishes the next version through :class:`~models.registry.ModelRegistry`.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from models.config import GateConfig, TrainConfig
from models.data.samples import LabelledSamples, Split
from models.export.onnx_export import ort_logits, ort_session
from models.export.recalibrate import AffineHead, append_head
from models.registry.card import ModelCard
from models.registry.store import ModelRegistry, file_entry
from models.training.calibration import (
    expected_calibration_error,
    fit_class_bias,
    fit_temperature,
    masked,
    softmax,
)
from models.training.crossval import (
    BUDGET_GRID,
    HeldOut,
    calibration_fit_predict,
    choose_budget,
    out_of_fold,
    score_heldout,
)
from models.training.evaluation import VISIBLE_CLASSES, Evaluation, apply_mask, evaluate, possible_mask

STUDENT_FILES = {"student_fp32": "student.fp32.onnx", "student_int8_cpu": "student.int8.cpu.onnx",
                 "student_int8_tensorrt": "student.int8.tensorrt.onnx"}
CARRIED = ("teacher_fp32", "reference")


def allowed_classes(modality: str, classes: tuple[str, ...]) -> np.ndarray:
    """(C,) bool: ``normal`` plus the faults the modality may name as served."""
    visible = VISIBLE_CLASSES.get(modality, classes[1:])
    return np.array([i == 0 or c in visible for i, c in enumerate(classes)])


@dataclass(frozen=True)
class BudgetChoice:
    """What grouped cross-validation over the validation machines decided."""

    target: float
    margin: float
    budget: float
    k: int
    repeats: int
    tried: tuple[HeldOut, ...]
    shipped: HeldOut  #: the registered model's procedure (its own budget), held out the same way

    @property
    def chosen(self) -> HeldOut:
        return next(h for h in self.tried if h.budget == self.budget)

    def to_dict(self) -> dict[str, object]:
        out = asdict(self)
        out["tried"] = [h.to_dict() for h in self.tried]
        out["shipped"] = self.shipped.to_dict()
        return out


def choose_modality_budget(logits: np.ndarray, val: LabelledSamples, modality: str, target: float, margin: float,
                           shipped_budget: float, k: int = 5, repeats: int = 3, seed: int = 0,
                           grid: tuple[float, ...] = BUDGET_GRID) -> BudgetChoice:
    """Held-out FPR / recall of the class-shift procedure at each budget of ``grid`` (see module
    docstring); ``logits`` are the served model's validation logits."""
    if val.groups is None:
        raise ValueError("a grouped cross-validation needs the machine of every validation sample")
    possible = possible_mask(val.asset_types, val.classes)
    allowed = allowed_classes(modality, val.classes)

    def heldout(budget: float) -> HeldOut:
        fp = calibration_fit_predict(logits, val.labels, budget, val.severity, possible, allowed)
        return score_heldout(out_of_fold(fp, val.groups, k, repeats, seed), val.labels, val.severity, val.groups,
                             val.classes, budget)

    budget, tried = choose_budget(heldout, target, margin, grid)
    shipped = next((h for h in tried if h.budget == shipped_budget), None) or heldout(shipped_budget)
    return BudgetChoice(target, margin, budget, k, repeats, tuple(tried), shipped)


def fit_head(logits: np.ndarray, val: LabelledSamples, budget: float) -> tuple[AffineHead, dict[str, float | list]]:
    """New class shifts (``budget``) and temperature on top of the served logits, as an :class:`AffineHead`."""
    possible = possible_mask(val.asset_types, val.classes)
    z = np.asarray(logits, np.float64)
    shift = fit_class_bias(z, val.labels, budget, val.severity, possible)
    shifted = masked(z + shift, possible)
    t = fit_temperature(shifted, val.labels)
    head = AffineHead(scale=1.0 / t, shift=tuple(float(v) / t for v in shift))
    pred = shifted.argmax(1)
    healthy = val.labels == 0
    info = {"budget": budget, "extra_shift_on_served_logits": shift.tolist(), "extra_temperature": t,
            "val_fpr": float(np.mean(pred[healthy] != 0)) if np.any(healthy) else float("nan"),
            "val_ece_before": expected_calibration_error(softmax(masked(z, possible)), val.labels),
            "val_ece_after": expected_calibration_error(softmax(shifted / t), val.labels)}
    return head, info


def _evaluate_files(files: dict[str, Path], part: LabelledSamples) -> dict[str, Evaluation]:
    possible = possible_mask(part.asset_types, part.classes)
    out = {}
    for role, path in files.items():
        session = ort_session(path, emulate_qdq=role.endswith("tensorrt"))
        probs = apply_mask(softmax(ort_logits(session, part.inputs)), possible)
        out[role] = evaluate(probs, part.labels, part.severity, part.classes)
    return out


METRIC_ROLE = {"teacher_fp32": "teacher", "student_fp32": "student", "student_int8_cpu": "int8_cpu",
               "student_int8_tensorrt": "int8_tensorrt"}


def publish_recalibrated(registry: ModelRegistry, modality: str, head: AffineHead, split: Split,
                         unseen: LabelledSamples | None, record: dict, gates: GateConfig | None = None,
                         force: bool = False) -> ModelCard:
    """Append ``head`` to the registered latest's student files, score, gate, and publish the next
    version (see module docstring). ``record`` (the budget choice, the fitted head) goes into the card."""
    from models.training.gates import enforce_gates, evaluate_gates, floor_checks
    from models.training.metrics import confusion_png
    from models.training.train import _regression

    gates = gates or GateConfig()
    latest = registry.latest(modality)
    old = latest.card
    staging = Path(tempfile.mkdtemp(prefix=f".staging-{modality}-", dir=registry.root))
    try:
        files: dict[str, Path] = {}
        for role, name in STUDENT_FILES.items():
            files[role] = append_head(latest.path(role), staging / name, head)
        for role in CARRIED:
            if role in old.files:
                shutil.copy2(latest.path(role), staging / old.files[role].path)
        if "teacher_fp32" in old.files:
            files = {"teacher_fp32": staging / old.files["teacher_fp32"].path, **files}
        shutil.copy2(latest.directory / "reliability.uncalibrated.png", staging / "reliability.uncalibrated.png")
        sets = {"test": split.test, **({"unseen": unseen} if unseen is not None else {})}
        evaluations = {name: {METRIC_ROLE[r]: e for r, e in _evaluate_files(files, part).items()}
                       for name, part in sets.items()}
        ev = evaluations["test"]
        teacher_f1 = ev["teacher"].macro_f1 if "teacher" in ev else float(old.metrics["teacher"]["macro_f1"])
        checks = evaluate_gates(teacher_f1, ev["student"].macro_f1,
                                {f: ev[f"int8_{f}"].macro_f1 for f in ("cpu", "tensorrt")}, gates)
        serving = ev["int8_cpu"]
        visible = {c: serving.recall_past_moderate.get(c, float("nan")) for c in VISIBLE_CLASSES.get(modality, ())}
        checks += floor_checks(serving.macro_f1_past_moderate, visible, serving.healthy_fpr, gates)
        cfg = TrainConfig(gates=gates)
        regression = _regression(registry, modality, list(old.input["shape"]), old.features_version, serving,
                                 split.test, tuple(old.classes), cfg)
        forced = enforce_gates(modality, checks, regression, force)
        from models.export.latency import measure_latencies
        from models.training.calibration import reliability_png
        from models.training.evaluation import severity_curves_png

        for role in ("student", "int8_cpu", "int8_tensorrt", "teacher"):
            if role in ev:
                confusion_png(ev[role].report, staging / f"confusion.{role}.png", f"{modality} {role} (test)")
        severity_curves_png({f"{n} split": e["int8_cpu"] for n, e in evaluations.items()},
                            staging / "recall_vs_severity.png", f"{modality} INT8 student: recall vs fault severity")
        int8 = ort_session(files["student_int8_cpu"])
        probs = apply_mask(softmax(ort_logits(int8, split.test.inputs)),
                           possible_mask(split.test.asset_types, split.test.classes))
        reliability_png(probs, split.test.labels, staging / "reliability.int8_cpu.png",
                        f"{modality} INT8 student, re-calibrated")
        latencies = measure_latencies({r: p for r, p in files.items() if r.startswith("student")},
                                      split.test.inputs[:32], (1, 32), 50)
        names = sorted(p.name for p in staging.iterdir() if p.is_file())
        role_of = {**{v: k for k, v in STUDENT_FILES.items()}, **{old.files[r].path: r for r in CARRIED if r in old.files}}
        prev = old.probability_calibration.get("serving", {})
        t_old = float(prev.get("temperature", 1.0))
        b_old = np.asarray(prev.get("class_bias", [0.0] * len(old.classes)), np.float64)
        extra = np.asarray(record["head"]["extra_shift_on_served_logits"], np.float64)
        t_extra = float(record["head"]["extra_temperature"])
        serving_cal = {"temperature": t_old * t_extra, "class_bias": (b_old + t_old * extra).tolist(),
                       "max_val_fpr": record["head"]["budget"], "val_fpr": record["head"]["val_fpr"],
                       "val_ece_before": record["head"]["val_ece_before"],
                       "val_ece_after": record["head"]["val_ece_after"]}
        metrics = {role: e.report.to_dict() for role, e in ev.items()}
        card = old.model_copy(update={
            "version": "staging", "created_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "metrics": metrics, "latency_ms": latencies,
            "gates": {"passed": True, "forced": forced, "config": gates.model_dump(),
                      "checks": [c.to_dict() for c in checks]},
            "files": {role_of.get(n, n): file_entry(staging, n) for n in names},
            "evaluation": {name: {r: e.to_dict() for r, e in evs.items()} for name, evs in evaluations.items()},
            "probability_calibration": {**old.probability_calibration, "serving": serving_cal,
                                        "test_ece_int8_cpu": serving.ece,
                                        "recalibration": {"from_version": latest.version, "head": head.to_dict(),
                                                          **record}},
            "training": {**old.training, "recalibrated_from": latest.version,
                         "recalibration": "models.training.recalibrate (head appended; network unchanged)"},
        })
        card.save(staging)
        version, directory = registry.publish(modality, staging)
        return ModelCard.load(directory)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
