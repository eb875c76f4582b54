"""Accuracy gates: a version is registered only when every check passes (test split, scored once).

* INT8 within ``int8_max_drop`` macro-F1 of the FP32 student (both flavours);
* the student within ``student_max_drop`` of the teacher;
* absolute floors (set before training, never tuned on the test split): macro-F1 past moderate
  severity, recall past moderate severity of every class the modality can see, healthy
  false-positive rate;
* no regression against the registered latest version (``regression_tolerance``), unless the
  caller forces it (``--force``), which the card records.

>>> from models.config import GateConfig
>>> checks = evaluate_gates(0.80, 0.79, {"cpu": 0.785}, GateConfig())
>>> [c.passed for c in checks]
[True, True]
>>> [c.passed for c in evaluate_gates(0.80, 0.79, {"cpu": 0.70}, GateConfig())]
[True, False]
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from models.config import GateConfig


@dataclass(frozen=True)
class GateCheck:
    name: str
    passed: bool
    value: float
    threshold: float
    detail: str

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


class AccuracyGateError(RuntimeError):
    """A trained model failed an accuracy gate; nothing was registered."""

    def __init__(self, modality: str, failures: list[GateCheck]) -> None:
        self.modality = modality
        self.failures = failures
        lines = "; ".join(f.detail for f in failures)
        regression = any(f.name == "no_regression" for f in failures)
        super().__init__(
            f"{modality}: accuracy gate failed — {lines}. Nothing was registered. What to do: train longer or "
            "with more data (student), use more/representative calibration samples or keep more layers in FP32 "
            "(INT8), or loosen the gate in TrainConfig.gates knowingly"
            + (" (a deliberate replacement of a better registered model needs --force)." if regression else ".")
        )


def _check(name: str, value: float, threshold: float, detail: str, higher_is_better: bool = True) -> GateCheck:
    ok = value >= threshold - 1e-12 if higher_is_better else value <= threshold + 1e-12
    return GateCheck(name, bool(ok), float(value), float(threshold), detail)


def evaluate_gates(
    teacher_f1: float, student_f1: float, int8_f1: dict[str, float], gates: GateConfig
) -> list[GateCheck]:
    """The relative checks: student vs teacher, INT8 vs FP32 (macro-F1)."""
    threshold = teacher_f1 - gates.student_max_drop
    checks = [_check("student_vs_teacher", student_f1, threshold,
                     f"student macro-F1 {student_f1:.4f} vs teacher {teacher_f1:.4f} (needs >= {threshold:.4f})")]
    for flavour, f1 in int8_f1.items():
        threshold = student_f1 - gates.int8_max_drop
        checks.append(_check(f"int8_{flavour}_vs_fp32", f1, threshold,
                             f"INT8 {flavour} macro-F1 {f1:.4f} vs FP32 student {student_f1:.4f} "
                             f"(needs >= {threshold:.4f})"))
    return checks


def floor_checks(macro_f1_strong: float, visible_recall: dict[str, float], healthy_fpr: float,
                 gates: GateConfig) -> list[GateCheck]:
    """The absolute floors of the serving model (see module docstring); NaN recalls (no such
    fault in the test split) are skipped.

    >>> [c.passed for c in floor_checks(0.7, {"bearing_wear": 0.9, "imbalance": 0.4}, 0.01, GateConfig())]
    [True, True, False, True]
    """
    checks = [_check("floor_macro_f1", macro_f1_strong, gates.min_macro_f1,
                     f"macro-F1 past moderate severity {macro_f1_strong:.4f} (floor {gates.min_macro_f1})")]
    for cls, recall in visible_recall.items():
        if not math.isnan(recall):
            checks.append(_check(f"floor_recall_{cls}", recall, gates.min_visible_recall,
                                 f"{cls} recall past moderate severity {recall:.4f} (floor {gates.min_visible_recall})"))
    checks.append(_check("floor_healthy_fpr", healthy_fpr, gates.max_healthy_fpr,
                         f"healthy false-positive rate {healthy_fpr:.4f} (at most {gates.max_healthy_fpr})",
                         higher_is_better=False))
    return checks


def regression_check(new_f1: float, registered_f1: float, registered_version: str, basis: str,
                     gates: GateConfig) -> GateCheck:
    """The new serving model may not lose more than ``regression_tolerance`` against the registered one.

    >>> regression_check(0.80, 0.85, "v3", "re-scored", GateConfig()).passed
    False
    """
    threshold = registered_f1 - gates.regression_tolerance
    return _check("no_regression", new_f1, threshold,
                  f"serving macro-F1 {new_f1:.4f} vs registered {registered_version} {registered_f1:.4f} "
                  f"({basis}; needs >= {threshold:.4f})")


def enforce_gates(modality: str, checks: list[GateCheck], regression: GateCheck | None, force: bool) -> bool:
    """Append the no-regression check to ``checks`` and raise :class:`AccuracyGateError` on any
    failure; ``force`` overrides only the no-regression gate. Returns whether it did."""
    forced = False
    if regression is not None:
        checks.append(regression)
        forced = force and not regression.passed
    failures = [c for c in checks if not c.passed and not (forced and c.name == "no_regression")]
    if failures:
        raise AccuracyGateError(modality, failures)
    return forced
