"""Accuracy gates: INT8 must stay within ``int8_max_drop`` of the FP32 student, the student
within ``student_max_drop`` of the teacher (macro-F1 on the test split).

>>> from models.config import GateConfig
>>> checks = evaluate_gates(0.80, 0.79, {"cpu": 0.785}, GateConfig())
>>> [c.passed for c in checks]
[True, True]
>>> [c.passed for c in evaluate_gates(0.80, 0.79, {"cpu": 0.70}, GateConfig())]
[True, False]
"""

from __future__ import annotations

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
        super().__init__(
            f"{modality}: accuracy gate failed — {lines}. Nothing was registered. What to do: train longer or "
            "with more data (student), use more/representative calibration samples or keep more layers in FP32 "
            "(INT8), or loosen the gate in TrainConfig.gates knowingly."
        )


def evaluate_gates(
    teacher_f1: float, student_f1: float, int8_f1: dict[str, float], gates: GateConfig
) -> list[GateCheck]:
    """All gate checks (passed or not)."""
    checks = []
    threshold = teacher_f1 - gates.student_max_drop
    checks.append(
        GateCheck(
            "student_vs_teacher",
            student_f1 >= threshold - 1e-12,
            student_f1,
            threshold,
            f"student macro-F1 {student_f1:.4f} vs teacher {teacher_f1:.4f} (needs >= {threshold:.4f})",
        )
    )
    for flavour, f1 in int8_f1.items():
        threshold = student_f1 - gates.int8_max_drop
        checks.append(
            GateCheck(
                f"int8_{flavour}_vs_fp32",
                f1 >= threshold - 1e-12,
                f1,
                threshold,
                f"INT8 {flavour} macro-F1 {f1:.4f} vs FP32 student {student_f1:.4f} (needs >= {threshold:.4f})",
            )
        )
    return checks
