"""One modality's evidence over several predictions of the same machine state.

A microphone delivers one 1 s clip per second; a longer recording is cut into 1 s segments. Each
clip or segment gets its own calibrated class probabilities from the model. :func:`combine` turns
``k`` of them into one distribution:

- ``mean_log``: the normalised geometric mean, ``p(c) ∝ exp(mean_i log p_i(c))`` (a product of
  experts taken to the power ``1/k``: as sharp as one prediction when they agree, so a fusion or a
  threshold that reads it sees probabilities on the scale it was fitted on). Probabilities are
  floored at :data:`~models.fusion.log_linear.PROBABILITY_FLOOR` before the log, as ``fuse`` does;
  a class every prediction gives 0 (masked: cavitation on a conveyor) stays 0.
- ``mean``: the arithmetic mean of the probabilities.

Measured against the median of the segments' feature vectors and against one clip in
``bench/bench_audio_evidence.py`` (docs/models.md, "Audio: more than one clip per decision").

>>> p = np.array([[0.6, 0.4, 0.0], [0.2, 0.8, 0.0]])
>>> combine(p, "mean").round(3).tolist()
[0.4, 0.6, 0.0]
>>> combine(p, "mean_log").round(3).tolist()
[0.38, 0.62, 0.0]
>>> combine(p[:1], "mean_log").round(3).tolist()  # one prediction: unchanged
[0.6, 0.4, 0.0]
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from models.fusion.log_linear import PROBABILITY_FLOOR

Rule = Literal["mean_log", "mean"]
RULES: tuple[Rule, ...] = ("mean_log", "mean")


def combine(probs: np.ndarray, rule: Rule = "mean_log", axis: int = -2) -> np.ndarray:
    """Combine the predictions along ``axis`` (default: ``(..., k, C)`` → ``(..., C)``), rows summing to 1."""
    p = np.maximum(np.asarray(probs, np.float64), 0.0)
    if p.shape[axis] == 0:
        raise ValueError("combine needs at least one prediction")
    if rule == "mean":
        out = p.mean(axis=axis)
    elif rule == "mean_log":
        out = np.exp(np.log(np.maximum(p, PROBABILITY_FLOOR)).mean(axis=axis))
        out = np.where(np.all(p == 0.0, axis=axis), 0.0, out)
    else:
        raise ValueError(f"unknown rule {rule!r}: use one of {RULES}")
    return out / np.maximum(out.sum(axis=-1, keepdims=True), 1e-300)
