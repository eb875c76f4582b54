"""Turn a classifier's raw output into probabilities: softmax for logits, nothing otherwise.

Every runtime applies the same rule, so a model served by Triton (which returns the raw ONNX
output, like Triton's onnxruntime backend) gives the same numbers as ONNX Runtime in-process.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

OutputKind = Literal["logits", "probabilities"]

_PROBABILITY_WORDS = ("prob", "softmax", "score")
_LOGIT_WORDS = ("logit",)


def output_kind_from_name(output_name: str, declared: str | None = None) -> OutputKind:
    """Decide whether an output holds logits or probabilities.

    The model card's declaration wins; otherwise the output name decides ("probabilities",
    "probs", "softmax", "scores" -> probabilities); anything else is treated as logits, the
    usual output of a torch classifier.

    >>> output_kind_from_name("logits"), output_kind_from_name("probabilities")
    ('logits', 'probabilities')
    >>> output_kind_from_name("output"), output_kind_from_name("output", declared="softmax")
    ('logits', 'probabilities')
    """
    if declared:
        d = declared.lower()
        if any(w in d for w in _PROBABILITY_WORDS):
            return "probabilities"
        if any(w in d for w in _LOGIT_WORDS):
            return "logits"
        raise ValueError(
            f"model card declares output kind {declared!r}: use 'logits' or 'probabilities'"
        )
    name = output_name.lower()
    if any(w in name for w in _PROBABILITY_WORDS):
        return "probabilities"
    return "logits"


def softmax(logits: np.ndarray) -> np.ndarray:
    """Numerically stable softmax over the last axis, float32.

    >>> softmax(np.array([[0.0, 0.0], [1000.0, 0.0]])).round(3).tolist()
    [[0.5, 0.5], [1.0, 0.0]]
    """
    x = np.asarray(logits, dtype=np.float32)
    x = x - x.max(axis=-1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=-1, keepdims=True)


def to_probabilities(raw: np.ndarray, kind: OutputKind) -> np.ndarray:
    """(n, n_classes) float32 probabilities from a raw model output.

    >>> to_probabilities(np.array([[0.2, 0.8]]), "probabilities").tolist()
    [[0.20000000298023224, 0.800000011920929]]
    """
    out = np.asarray(raw)
    out = out.reshape(out.shape[0], -1)
    return softmax(out) if kind == "logits" else out.astype(np.float32, copy=False)
