"""Calibrated probabilities and a healthy-false-alarm budget, both fitted on the validation split.

Fusion and alert thresholds consume probabilities, so they must mean what they say:

* **temperature scaling** (Guo et al. 2017): one scalar ``T`` minimising the validation negative
  log-likelihood of ``softmax(logits / T)``; it never changes the top class;
* **class prior shifts** ``b``: log-priors added to the logits, fitted on validation to the best
  macro-F1 whose false-positive rate on healthy machines (true class ``normal``, predicted
  anything else) stays within a budget. An operator tolerates few false alarms; this is how the
  models spend that budget (and a modality stops guessing classes it cannot see);
* **ECE** (expected calibration error, 15 equal-width confidence bins) says how far the top-class
  probability is from the observed accuracy.

Both are baked into the exported model (``models.training.fitting.CalibratedModel``): its
``logits`` output is ``(z + b) / T``, so every runtime's softmax gives calibrated probabilities.
Classes impossible for a machine (cavitation without a pump) are masked by the consumers
(``linewatch inspect``, fusion), and here in the fitting when ``possible`` is given.

>>> rng = np.random.default_rng(0)
>>> y = rng.integers(0, 3, 2000); wrong = np.where(rng.random(2000) < 0.3, rng.integers(0, 3, 2000), y)
>>> z = np.eye(3)[wrong] * 6.0 + rng.normal(0, 1.0, (2000, 3))  # confident, and wrong 20 % of the time
>>> t = fit_temperature(z, y); t > 1.0
True
>>> expected_calibration_error(softmax(z / t), y) < expected_calibration_error(softmax(z), y)
True
"""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from scipy.optimize import minimize_scalar

ECE_BINS = 15


def softmax(z: np.ndarray) -> np.ndarray:
    z = np.asarray(z, np.float64)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def nll(logits: np.ndarray, labels: np.ndarray) -> float:
    p = softmax(logits)
    return float(-np.mean(np.log(np.clip(p[np.arange(len(labels)), labels], 1e-12, 1.0))))


def fit_temperature(logits: np.ndarray, labels: np.ndarray) -> float:
    """Temperature in [0.05, 20] minimising the NLL of ``softmax(logits / T)``."""
    z = np.asarray(logits, np.float64)
    res = minimize_scalar(lambda log_t: nll(z / np.exp(log_t), labels), bounds=(np.log(0.05), np.log(20.0)),
                          method="bounded")
    return float(np.exp(res.x))


def healthy_fpr(pred: np.ndarray, labels: np.ndarray, normal: int = 0) -> float:
    """Share of truly healthy samples predicted as some fault (NaN without healthy samples)."""
    healthy = np.asarray(labels) == normal
    return float(np.mean(np.asarray(pred)[healthy] != normal)) if np.any(healthy) else float("nan")


def normal_bias_for_fpr(logits: np.ndarray, labels: np.ndarray, max_fpr: float, normal: int = 0,
                        max_bias: float = 12.0) -> float:
    """Smallest ``b ≥ 0`` whose shifted argmax keeps the healthy FPR ≤ ``max_fpr`` (bisection;
    ``max_bias`` if even that is not enough)."""
    z = np.asarray(logits, np.float64)

    def fpr(b: float) -> float:
        shifted = z.copy()
        shifted[:, normal] += b
        return healthy_fpr(shifted.argmax(1), labels, normal)

    if not np.any(np.asarray(labels) == normal) or fpr(0.0) <= max_fpr:
        return 0.0
    if fpr(max_bias) > max_fpr:
        return max_bias
    lo, hi = 0.0, max_bias
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if fpr(mid) <= max_fpr else (mid, hi)
    return float(hi)


def expected_calibration_error(probs: np.ndarray, labels: np.ndarray, bins: int = ECE_BINS) -> float:
    """Weighted mean |accuracy − confidence| over equal-width bins of the top-class probability."""
    p = np.asarray(probs, np.float64)
    conf, pred = p.max(axis=1), p.argmax(axis=1)
    correct = pred == np.asarray(labels)
    edges = np.linspace(0.0, 1.0, bins + 1)
    total = 0.0
    for lo, hi in itertools.pairwise(edges):
        sel = (conf > lo) & (conf <= hi)
        if np.any(sel):
            total += sel.mean() * abs(correct[sel].mean() - conf[sel].mean())
    return float(total)


def _macro_f1(y: np.ndarray, pred: np.ndarray, n: int) -> float:
    """Macro-F1 over the classes present in ``y`` (numpy only: called thousands of times)."""
    tp = np.bincount(y[pred == y], minlength=n).astype(float)
    true = np.bincount(y, minlength=n).astype(float)
    got = np.bincount(pred, minlength=n).astype(float)
    present = true > 0
    f1 = np.where(true + got > 0, 2 * tp / np.maximum(true + got, 1e-12), 0.0)
    return float(f1[present].mean()) if np.any(present) else 0.0


def masked(logits: np.ndarray, possible: np.ndarray | None) -> np.ndarray:
    """Logits with classes impossible for the sample's machine pushed to -1e4."""
    z = np.asarray(logits, np.float64)
    return z if possible is None else np.where(possible, z, -1e4)


def fit_class_bias(logits: np.ndarray, labels: np.ndarray, max_fpr: float, severity: np.ndarray | None = None,
                   possible: np.ndarray | None = None, normal: int = 0, passes: int = 3) -> np.ndarray:
    """Per-class log-prior shifts maximising validation macro-F1 (healthy + faults past moderate
    severity when ``severity`` is known) with the healthy FPR ≤ ``max_fpr``: coordinate ascent on
    a 0.25 grid in [-8, 8], starting from the smallest normal shift that meets the budget. A
    modality that cannot see a class (audio, a loose lug) learns to stop guessing it."""
    z = masked(logits, possible)
    y = np.asarray(labels)
    n = z.shape[1]
    from models.training.evaluation import SEVERITY_THRESHOLD

    score_rows = (y == normal) | (np.asarray(severity) >= SEVERITY_THRESHOLD) if severity is not None else np.ones(len(y), bool)
    healthy = y == normal

    def objective(b: np.ndarray) -> tuple[float, float]:
        pred = (z + b).argmax(1)
        fpr = float(np.mean(pred[healthy] != normal)) if np.any(healthy) else 0.0
        return _macro_f1(y[score_rows], pred[score_rows], n), fpr

    b = np.zeros(n)
    b[normal] = normal_bias_for_fpr(z, y, max_fpr, normal)
    best, fpr = objective(b)
    grid = np.arange(-8.0, 8.0001, 0.25)
    for _ in range(passes):
        improved = False
        for c in range(n):
            for g in sorted(grid, key=lambda v: abs(v - b[c])):
                trial = b.copy()
                trial[c] = g
                f1, fpr = objective(trial)
                if fpr <= max_fpr and f1 > best + 1e-9:
                    best, b, improved = f1, trial, True
        if not improved:
            break
    return b


@dataclass(frozen=True)
class Calibration:
    """What the validation split decided: per-class log-prior shifts (the healthy false-alarm
    budget), the temperature, and their effect."""

    temperature: float
    class_bias: tuple[float, ...]
    max_val_fpr: float
    val_fpr: float
    val_ece_before: float
    val_ece_after: float

    @property
    def normal_bias(self) -> float:
        return float(self.class_bias[0])

    def apply(self, logits: np.ndarray, possible: np.ndarray | None = None) -> np.ndarray:
        return masked(np.asarray(logits, np.float64) + np.asarray(self.class_bias), possible) / self.temperature

    def to_dict(self) -> dict[str, object]:
        out = asdict(self)
        out["class_bias"] = list(self.class_bias)
        return out


def calibrate(val_logits: np.ndarray, val_labels: np.ndarray, max_val_fpr: float, normal: int = 0,
              severity: np.ndarray | None = None, possible: np.ndarray | None = None) -> Calibration:
    """Class shifts for the false-alarm budget first (:func:`fit_class_bias`), then the
    temperature of the shifted logits."""
    bias = fit_class_bias(val_logits, val_labels, max_val_fpr, severity, possible, normal)
    shifted = masked(np.asarray(val_logits, np.float64) + bias, possible)
    t = fit_temperature(shifted, val_labels)
    return Calibration(t, tuple(float(v) for v in bias), max_val_fpr,
                       healthy_fpr(shifted.argmax(1), val_labels, normal),
                       expected_calibration_error(softmax(masked(val_logits, possible)), val_labels),
                       expected_calibration_error(softmax(shifted / t), val_labels))


def reliability_png(probs: np.ndarray, labels: np.ndarray, path: Path, title: str) -> Path:
    """Reliability diagram (accuracy vs confidence per bin) with the ECE in the title."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    p = np.asarray(probs, np.float64)
    conf, correct = p.max(axis=1), p.argmax(axis=1) == np.asarray(labels)
    edges = np.linspace(0.0, 1.0, ECE_BINS + 1)
    centres, accs, counts = [], [], []
    for lo, hi in itertools.pairwise(edges):
        sel = (conf > lo) & (conf <= hi)
        if np.any(sel):
            centres.append(conf[sel].mean())
            accs.append(correct[sel].mean())
            counts.append(int(sel.sum()))
    fig, ax = plt.subplots(figsize=(4.2, 4.0), dpi=70)
    ax.plot([0, 1], [0, 1], color="grey", lw=1, ls="--")
    ax.plot(centres, accs, marker="o")
    for c, a, n in zip(centres, accs, counts, strict=True):
        ax.annotate(str(n), (c, a), fontsize=6, textcoords="offset points", xytext=(2, -8))
    ax.set_xlabel("top-class probability")
    ax.set_ylabel("accuracy")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    ax.set_title(f"{title}\nECE {expected_calibration_error(p, labels):.3f}", fontsize=9)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path)
    plt.close(fig)
    return path
