"""The model card: everything known about one registered model version (JSON + Markdown).

Pure pydantic (no torch): runtimes and services read cards without the training stack.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

CARD_JSON = "card.json"
CARD_MD = "card.md"
CARD_SCHEMA_VERSION = 2


class FileEntry(BaseModel):
    """One file of a model version (path relative to the version directory)."""

    path: str
    bytes: int
    sha256: str


class Latency(BaseModel):
    """ONNX Runtime CPU latency of one file at one batch size (one intra-op thread)."""

    role: str
    batch: int
    median_ms: float
    p99_ms: float
    runs: int


class ModelCard(BaseModel):
    """Card of one model version. ``files`` maps a role (``student_int8_cpu``,
    ``student_int8_tensorrt``, ``student_fp32``, ``teacher_fp32``, ``reference``, ...) to a file."""

    card_schema_version: int = CARD_SCHEMA_VERSION
    name: str
    modality: str
    version: str
    created_at: str
    classes: list[str]
    input: dict[str, Any] = Field(description="InputSpec: name, per-sample shape, dtype, producer, versions.")
    features_version: int
    preprocessing_version: int
    output: dict[str, str] = Field(
        default_factory=lambda: {"name": "logits", "kind": "logits"},
        description="The single output: logits (apply softmax for probabilities).",
    )
    serving_role: str = Field(default="student_int8_cpu", description="The file runtimes should load by default.")
    teacher: dict[str, Any]
    student: dict[str, Any]
    metrics: dict[str, dict[str, Any]] = Field(description="role -> ClassificationReport on the test split.")
    gates: dict[str, Any]
    parity: dict[str, Any]
    quantization: dict[str, dict[str, Any]]
    calibration: dict[str, Any]
    dataset: dict[str, Any]
    reference: dict[str, Any] = Field(description="Reference training features for drift detection.")
    latency_ms: list[Latency] = Field(default_factory=list)
    files: dict[str, FileEntry] = Field(default_factory=dict)
    training: dict[str, Any] = Field(default_factory=dict)
    evaluation: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="split (test, unseen) -> role -> severity-aware Evaluation.")
    probability_calibration: dict[str, Any] = Field(
        default_factory=dict, description="Temperature + healthy prior shift fitted on validation, ECE before/after.")
    distillation: dict[str, Any] = Field(
        default_factory=dict, description="Teacher vs label-only vs distilled student: which was kept and why.")

    def macro_f1(self, role: str) -> float:
        """Test macro-F1 of ``role`` (``teacher``, ``student``, ``int8_cpu``, ``int8_tensorrt``)."""
        return float(self.metrics[role]["macro_f1"])

    def save(self, directory: Path) -> None:
        """Write ``card.json`` and ``card.md`` into ``directory``."""
        directory = Path(directory)
        (directory / CARD_JSON).write_text(json.dumps(self.model_dump(mode="json"), indent=2) + "\n")
        (directory / CARD_MD).write_text(render_markdown(self))

    @classmethod
    def load(cls, directory: Path) -> "ModelCard":
        path = Path(directory) / CARD_JSON
        if not path.is_file():
            raise FileNotFoundError(f"{path} does not exist: {directory} is not a model version directory")
        return cls.model_validate_json(path.read_text())


def _fmt_bytes(n: int) -> str:
    return f"{n / 1024:.1f} KiB" if n < 1024 * 1024 else f"{n / 1024 / 1024:.2f} MiB"


def _evaluation_lines(card: ModelCard) -> list[str]:
    """Severity-aware comparison, calibration and distillation sections (schema 2 cards)."""
    if not card.evaluation:
        return []
    lines = ["", "## Teacher, students, INT8 on the same splits", "",
             "Past moderate = healthy samples plus faults of severity >= 0.5; FPR = healthy machines "
             "flagged as faulty; ECE of the top-class probability.", "",
             "| split | model | macro-F1 | macro-F1 past moderate | healthy FPR | ECE |", "|---|---|---|---|---|---|"]
    for split, roles in card.evaluation.items():
        for role, ev in roles.items():
            lines.append(f"| {split} | {role} | {ev['report']['macro_f1']:.3f} | {ev['macro_f1_past_moderate']:.3f} | "
                         f"{ev['healthy_fpr']:.4f} | {ev['ece']:.3f} |")
    lines += ["", "Recall past moderate severity, INT8 student:", "",
              "| class | " + " | ".join(card.evaluation) + " |", "|---|" + "---|" * len(card.evaluation)]
    for c in card.classes[1:]:
        vals = [card.evaluation[s]["int8_cpu"]["recall_past_moderate"].get(c) for s in card.evaluation]
        lines.append(f"| {c} | " + " | ".join("–" if v is None or v != v else f"{v:.3f}" for v in vals) + " |")
    lines += ["", "![recall vs severity](recall_vs_severity.png)",
              "![reliability, raw](reliability.uncalibrated.png) ![reliability, calibrated](reliability.int8_cpu.png)"]
    pc = card.probability_calibration.get("serving")
    if pc:
        bias = ", ".join(f"{c} {b:+.2f}" for c, b in zip(card.classes, pc.get("class_bias", []), strict=False))
        lines += ["", "## Calibration (validation split)", "",
                  f"Temperature {pc['temperature']:.3f}; class log-prior shifts {bias} (validation healthy FPR "
                  f"{pc['val_fpr']:.4f}, budget {pc['max_val_fpr']}); validation ECE {pc['val_ece_before']:.3f} raw → "
                  f"{pc['val_ece_after']:.3f} calibrated; test ECE (INT8) "
                  f"{card.probability_calibration.get('test_ece_int8_cpu', float('nan')):.3f}."]
    d = card.distillation
    if d:
        helped = d.get("distillation_helped_on_val")
        lines += ["", "## Distillation", "",
                  f"Kept: **{d.get('kept')}** (rule: {d.get('rule')}; validation macro-F1 "
                  + ", ".join(f"{k} {v:.3f}" for k, v in d.get("val_macro_f1", {}).items()) + "). "
                  + ("Distillation beat the label-only student on validation." if helped else
                     "Distillation did not beat the label-only student on validation, so it was not kept.")]
    return lines


def render_markdown(card: ModelCard) -> str:
    """The human-readable card."""
    lines = [
        f"# {card.name} {card.version}",
        "",
        f"Modality **{card.modality}**, created {card.created_at}. Classes: {', '.join(card.classes)}.",
        "",
        "## Input",
        "",
        f"`{card.input['name']}` float32 `(batch, {', '.join(str(s) for s in card.input['shape'])})` = output of "
        f"`{card.input['producer']}` (features v{card.features_version}, preprocessing v{card.preprocessing_version}); "
        f"output `{card.input['output_name']}`: {card.input['output']}. Default file for serving: `{card.serving_role}`.",
        "",
        "## Test metrics (held-out split)",
        "",
        "| model | macro-F1 | accuracy | n |",
        "|---|---|---|---|",
    ]
    for role, report in card.metrics.items():
        lines.append(f"| {role} | {report['macro_f1']:.4f} | {report['accuracy']:.4f} | {report['n_samples']} |")
    lines += ["", "Per-class F1:", "", "| class | " + " | ".join(card.metrics) + " |", "|---|" + "---|" * len(card.metrics)]
    for c in card.classes:
        lines.append(f"| {c} | " + " | ".join(f"{r['per_class'][c]['f1']:.3f}" for r in card.metrics.values()) + " |")
    gate_lines = [f"- {g['name']}: {'pass' if g['passed'] else 'FAIL'} — {g['detail']}" for g in card.gates.get("checks", [])]
    lines += _evaluation_lines(card)
    forced = " (no-regression gate overridden with --force)" if card.gates.get("forced") else ""
    lines += ["", f"## Accuracy gates{forced}", "", *gate_lines, "", "## Models", ""]
    lines.append(f"- teacher: {card.teacher.get('architecture')} ({card.teacher.get('parameters'):,} parameters), source {card.teacher.get('source')}")
    if card.teacher.get("trained_on"):
        t = card.teacher["trained_on"]
        lines.append(f"- teacher and students trained on {t.get('device')} (torch {t.get('torch')}, "
                     f"{t.get('duration_s')} s for all three, calibration included)")
    lines.append(f"- student: {card.student.get('architecture')} ({card.student.get('parameters'):,} parameters)"
                 + (f", kept: {card.student['kept']}" if card.student.get("kept") else ""))
    lines.append(
        f"- ONNX parity (FP32 student vs torch): max |Δlogit| {card.parity.get('max_abs_diff', float('nan')):.2e} "
        f"(tolerance {card.parity.get('atol')} + 1e-3·max|logit|)"
    )
    for flavour, q in card.quantization.items():
        lines.append(
            f"- INT8 `{flavour}`: activations {q['activation_type']}, weights {q['weight_type']} "
            f"(per-channel {q['per_channel']}), extra {q['extra_options']}, FP32 nodes {q['nodes_excluded']}"
        )
    lines.append(
        f"- calibration: {card.calibration.get('n_samples')} training samples, sha256 `{card.calibration.get('digest')}`"
    )
    if card.latency_ms:
        lines += ["", "## Latency (ONNX Runtime CPU, 1 thread)", "", "| file | batch | median ms | p99 ms |", "|---|---|---|---|"]
        lines += [f"| {l.role} | {l.batch} | {l.median_ms:.3f} | {l.p99_ms:.3f} |" for l in card.latency_ms]
    lines += ["", "## Files", "", "| role | file | size | sha256 |", "|---|---|---|---|"]
    lines += [f"| {role} | {f.path} | {_fmt_bytes(f.bytes)} | `{f.sha256[:16]}…` |" for role, f in card.files.items()]
    ds = card.dataset
    lines += ["", "## Data", "", f"Source: {ds.get('source')}. Split train/val/test {ds.get('n_train')}/{ds.get('n_val')}/{ds.get('n_test')}, seed {card.training.get('seed')}."]
    lines += [f"Reference features for drift: `{card.reference.get('path')}` ({card.reference.get('n_samples')} samples, {card.reference.get('kind')})."]
    return "\n".join(lines) + "\n"
