"""Calibration data for static quantization: a stratified sample of the training split."""

from __future__ import annotations

import hashlib

import numpy as np
from onnxruntime.quantization import CalibrationDataReader

from models.specs import INPUT_NAME


def calibration_indices(labels: np.ndarray, n: int, seed: int) -> np.ndarray:
    """Up to ``n`` indices of ``labels``, drawn per class in proportion (sorted, reproducible).

    >>> calibration_indices(np.array([0, 0, 1, 1, 1, 1]), 3, seed=0).size
    3
    """
    rng = np.random.default_rng(seed)
    n = min(n, len(labels))
    classes, counts = np.unique(labels, return_counts=True)
    quota = np.maximum(1, np.floor(counts / counts.sum() * n)).astype(int)
    chosen = [rng.choice(np.flatnonzero(labels == c), size=min(q, cnt), replace=False) for c, q, cnt in zip(classes, quota, counts)]
    picked = np.concatenate(chosen)
    if picked.size < n:
        rest = np.setdiff1d(np.arange(len(labels)), picked)
        picked = np.concatenate([picked, rng.choice(rest, size=n - picked.size, replace=False)])
    return np.sort(picked[:n])


def array_digest(array: np.ndarray) -> str:
    """SHA-256 of an array's dtype, shape and bytes (what the card records for the calibration set).

    >>> array_digest(np.zeros(2, np.float32))[:12]
    '30f4359060e2'
    """
    a = np.ascontiguousarray(array)
    h = hashlib.sha256()
    h.update(f"{a.dtype.str}{a.shape}".encode())
    h.update(a.tobytes())
    return h.hexdigest()


class ArrayCalibrationReader(CalibrationDataReader):
    """Feeds ``inputs`` (n, ...) to ONNX Runtime's calibrator in equal batches of at most
    ``batch_size`` (the largest divisor of n).

    >>> ArrayCalibrationReader(np.zeros((126, 2)))._batch_size
    21
    """

    def __init__(self, inputs: np.ndarray, batch_size: int = 32) -> None:
        self._inputs = np.ascontiguousarray(inputs, np.float32)
        # Equal batches: ORT's histogram (Percentile) calibrator cannot stack a short last batch.
        n = len(self._inputs)
        self._batch_size = next(b for b in range(min(batch_size, max(n, 1)), 0, -1) if n % b == 0) if n else 1
        self._next = 0

    def get_next(self) -> dict[str, np.ndarray] | None:
        if self._next >= len(self._inputs):
            return None
        batch = self._inputs[self._next : self._next + self._batch_size]
        self._next += self._batch_size
        return {INPUT_NAME: batch}

    def __len__(self) -> int:
        return -(-len(self._inputs) // self._batch_size)

    def rewind(self) -> None:
        self._next = 0
