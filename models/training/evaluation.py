"""Severity-aware evaluation: what an operator needs to know about a fault detector.

Macro-F1 over every sample mixes faults nobody could see yet (severity just above the label
threshold) with developed ones. The targets of this project are stated *past moderate severity*
(:data:`SEVERITY_THRESHOLD`): recall per class on faults at or above it, macro-F1 on the healthy
samples plus those faults, and the healthy false-positive rate over every healthy sample;
recall-vs-severity curves show the rest.

:data:`VISIBLE_CLASSES` lists the faults a modality is expected to see (the physics decides:
a microphone hears a bearing but not a loose lug; a camera sees the lug, not cavitation noise);
per-class floors apply to those.

>>> probs = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.1, 0.9]])
>>> e = evaluate(probs, np.array([0, 1, 1, 1]), np.array([0.0, 0.7, 0.1, 0.9]), ("normal", "bearing_wear"))
>>> e.recall_past_moderate["bearing_wear"], e.healthy_fpr, round(e.macro_f1_past_moderate, 3)
(1.0, 0.0, 1.0)
"""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from models.training.calibration import expected_calibration_error
from models.training.metrics import ClassificationReport, classification_report

#: "Past moderate severity": faults at or above this hidden severity (0..1).
SEVERITY_THRESHOLD = 0.5
SEVERITY_EDGES: tuple[float, ...] = (0.05, 0.15, 0.25, 0.35, 0.5, 0.65, 0.8, 1.0001)
VISIBLE_CLASSES: dict[str, tuple[str, ...]] = {
    # Imbalance: from one clip alone a raised 1x tone cannot be told from a machine whose 1x is loud
    # anyway (healthy 1x spans ~12 dB); against the machine's own learned healthy levels (features
    # v4, pipeline.features.audio_baseline) it can (docs/models.md, "Audio imbalance").
    "audio": ("bearing_wear", "imbalance", "cavitation"),
    "thermal": ("bearing_wear", "electrical_overheating", "cooling_failure"),
    "plc": ("cooling_failure", "imbalance", "cavitation"),
    "fused": ("bearing_wear", "electrical_overheating", "cooling_failure", "imbalance", "cavitation"),
}


def possible_mask(asset_types: np.ndarray | None, classes: tuple[str, ...]) -> np.ndarray | None:
    """(N, C) bool: the classes each sample's machine can have (cavitation needs a pump: the
    asset type names one); None without asset types.

    >>> possible_mask(np.array(["pump", "fan"]), ("normal", "cavitation")).tolist()
    [[True, True], [True, False]]
    """
    if asset_types is None:
        return None
    mask = np.ones((len(asset_types), len(classes)), bool)
    if "cavitation" in classes:
        mask[:, classes.index("cavitation")] = np.array(["pump" in str(t).lower() or str(t) in ("", "unknown")
                                                         for t in asset_types])
    return mask


def apply_mask(probs: np.ndarray, possible: np.ndarray | None) -> np.ndarray:
    """Probabilities renormalised over the possible classes."""
    if possible is None:
        return probs
    p = np.where(possible, probs, 0.0)
    return p / np.maximum(p.sum(axis=1, keepdims=True), 1e-12)


@dataclass
class Evaluation:
    """Metrics of one model (or the fusion) on one split."""

    report: ClassificationReport
    healthy_fpr: float
    ece: float
    macro_f1_past_moderate: float
    recall_past_moderate: dict[str, float]
    n_past_moderate: dict[str, int]
    recall_by_severity: dict[str, list[tuple[float, float, float, int]]] = field(default_factory=dict)

    @property
    def macro_f1(self) -> float:
        return self.report.macro_f1

    def to_dict(self) -> dict[str, object]:
        out = asdict(self)
        out["report"] = self.report.to_dict()
        return out


def past_moderate_mask(labels: np.ndarray, severity: np.ndarray, normal: int = 0) -> np.ndarray:
    """Healthy samples plus faults at or above :data:`SEVERITY_THRESHOLD`."""
    return (np.asarray(labels) == normal) | (np.asarray(severity) >= SEVERITY_THRESHOLD)


def evaluate(probs: np.ndarray, labels: np.ndarray, severity: np.ndarray | None, classes: tuple[str, ...],
             pred: np.ndarray | None = None) -> Evaluation:
    """All metrics of :class:`Evaluation` from class probabilities (``pred`` defaults to argmax)."""
    labels = np.asarray(labels)
    probs = np.asarray(probs, np.float64)
    pred = probs.argmax(axis=1) if pred is None else np.asarray(pred)
    sev = np.where(labels == 0, 0.0, 1.0) if severity is None else np.asarray(severity, np.float64)
    report = classification_report(labels, pred, classes)
    healthy = labels == 0
    fpr = float(np.mean(pred[healthy] != 0)) if np.any(healthy) else float("nan")
    mask = past_moderate_mask(labels, sev)
    strong = classification_report(labels[mask], pred[mask], classes).macro_f1 if np.any(mask) else float("nan")
    recall, counts, curves = {}, {}, {}
    for i, c in enumerate(classes):
        if i == 0:
            continue
        sel = (labels == i) & (sev >= SEVERITY_THRESHOLD)
        counts[c] = int(sel.sum())
        recall[c] = float(np.mean(pred[sel] == i)) if np.any(sel) else float("nan")
        rows = []
        for lo, hi in itertools.pairwise(SEVERITY_EDGES):
            b = (labels == i) & (sev >= lo) & (sev < hi)
            rows.append((lo, min(hi, 1.0), float(np.mean(pred[b] == i)) if np.any(b) else float("nan"), int(b.sum())))
        curves[c] = rows
    return Evaluation(report, fpr, expected_calibration_error(probs, labels), float(strong), recall, counts, curves)


def severity_curves_png(evaluations: dict[str, Evaluation], path: Path, title: str) -> Path:
    """Recall vs fault severity per class, one panel per evaluated role/split."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(evaluations)
    fig, axes = plt.subplots(1, n, figsize=(4.4 * n, 3.6), dpi=70, squeeze=False)
    for ax, (name, ev) in zip(axes[0], evaluations.items(), strict=True):
        for cls, rows in ev.recall_by_severity.items():
            xs = [(lo + hi) / 2 for lo, hi, r, k in rows if k > 0]
            ys = [r for lo, hi, r, k in rows if k > 0]
            if xs:
                ax.plot(xs, ys, marker="o", ms=3, label=cls)
        ax.axvline(SEVERITY_THRESHOLD, color="grey", ls=":", lw=1)
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlim(0, 1)
        ax.set_xlabel("fault severity")
        ax.set_ylabel("recall")
        ax.set_title(f"{name}: healthy FPR {ev.healthy_fpr:.3f}", fontsize=9)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7, loc="lower right")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path)
    plt.close(fig)
    return path
