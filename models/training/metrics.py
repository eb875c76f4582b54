"""Per-class classification metrics and the confusion-matrix PNG.

>>> r = classification_report(np.array([0, 0, 1, 1]), np.array([0, 1, 1, 1]), ("a", "b"))
>>> round(r.macro_f1, 3), r.accuracy, r.confusion
(0.733, 0.75, [[1, 1], [0, 2]])
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from sklearn.metrics import confusion_matrix, f1_score, precision_recall_fscore_support


@dataclass(frozen=True)
class ClassMetrics:
    precision: float
    recall: float
    f1: float
    support: int


@dataclass(frozen=True)
class ClassificationReport:
    """Macro-F1, accuracy, per-class precision/recall/F1 and the confusion matrix (rows: truth)."""

    n_samples: int
    macro_f1: float
    accuracy: float
    per_class: dict[str, ClassMetrics]
    confusion: list[list[int]]
    classes: tuple[str, ...]

    def to_dict(self) -> dict[str, object]:
        data = asdict(self)
        data["classes"] = list(self.classes)
        return data


def classification_report(y_true: np.ndarray, y_pred: np.ndarray, classes: tuple[str, ...]) -> ClassificationReport:
    """Metrics of ``y_pred`` against ``y_true`` (class indices into ``classes``).

    Macro-F1 averages over every class of ``classes``; a class absent from both truth and
    prediction counts as F1 0 only if it is in the truth, so a missing class cannot inflate it.
    """
    labels = list(range(len(classes)))
    present = sorted(set(np.asarray(y_true).tolist()))
    p, r, f, s = precision_recall_fscore_support(y_true, y_pred, labels=labels, zero_division=0)
    return ClassificationReport(
        n_samples=len(y_true),
        macro_f1=float(f1_score(y_true, y_pred, labels=present, average="macro", zero_division=0)),
        accuracy=float(np.mean(np.asarray(y_true) == np.asarray(y_pred))) if len(y_true) else 0.0,
        per_class={
            c: ClassMetrics(float(p[i]), float(r[i]), float(f[i]), int(s[i])) for i, c in enumerate(classes)
        },
        confusion=confusion_matrix(y_true, y_pred, labels=labels).tolist(),
        classes=tuple(classes),
    )


def confusion_png(report: ClassificationReport, path: Path, title: str) -> Path:
    """Write the row-normalised confusion matrix (with counts) as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cm = np.asarray(report.confusion, dtype=float)
    norm = cm / np.maximum(cm.sum(axis=1, keepdims=True), 1)
    n = len(report.classes)
    fig, ax = plt.subplots(figsize=(1.2 * n + 2, 1.1 * n + 1.5), dpi=60)
    ax.imshow(norm, cmap="Blues", vmin=0, vmax=1)
    ax.set_xticks(range(n), report.classes, rotation=40, ha="right", fontsize=8)
    ax.set_yticks(range(n), report.classes, fontsize=8)
    ax.set_xlabel("predicted")
    ax.set_ylabel("true")
    for i in range(n):
        for j in range(n):
            ax.text(j, i, int(cm[i, j]), ha="center", va="center", fontsize=8, color="white" if norm[i, j] > 0.5 else "black")
    ax.set_title(f"{title}\nmacro-F1 {report.macro_f1:.3f}, accuracy {report.accuracy:.3f}", fontsize=9)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
