"""Input standardisation baked into every model as buffers.

Statistics come from the training split only. NaN inputs (a missing PLC tag) become 0 after
standardisation, i.e. the training mean, so one missing tag does not poison the whole output.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


class InputStandardizer(nn.Module):
    """``(x - mean) / std``, NaN/inf replaced by 0 when ``nan_to_zero`` (vectors with missing
    tags; images skip it to keep the graph lean). ``mean``/``std`` broadcast over the batch.

    >>> s = InputStandardizer(np.zeros(3), np.array([1.0, 1.0, 0.0]))
    >>> s(torch.tensor([[1.0, float("nan"), 2.0]])).tolist()
    [[1.0, 0.0, 0.0]]
    """

    def __init__(self, mean: np.ndarray, std: np.ndarray, nan_to_zero: bool = True, clip: float | None = None) -> None:
        super().__init__()
        self.nan_to_zero = nan_to_zero
        #: standardised values are clamped to ±clip (vectors: a machine far outside the training
        #: range must not drive a model with one extreme value; it still reads as "very high")
        self.clip = clip
        std = np.asarray(std, dtype=np.float64)
        # A feature that was constant in training carries no information the model could have
        # learnt: scale it by 0 so unseen values at serving time cannot reach untrained weights.
        inv_std = np.where(std > 1e-6, 1.0 / np.maximum(std, 1e-6), 0.0)
        self.register_buffer("mean", torch.as_tensor(np.asarray(mean, dtype=np.float32)).unsqueeze(0))
        self.register_buffer("inv_std", torch.as_tensor(inv_std.astype(np.float32)).unsqueeze(0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = (x - self.mean) * self.inv_std
        if self.nan_to_zero:
            z = torch.nan_to_num(z, nan=0.0, posinf=0.0, neginf=0.0)
        return z.clamp(-self.clip, self.clip) if self.clip is not None else z

    def stats(self) -> dict[str, list[float]]:
        """Mean and std as plain lists (for JSON)."""
        inv = self.inv_std.squeeze(0).flatten()
        std = torch.where(inv > 0, 1.0 / torch.where(inv > 0, inv, torch.ones_like(inv)), torch.zeros_like(inv))
        return {"mean": self.mean.squeeze(0).flatten().tolist(), "std": std.tolist()}


def fit_standardizer(inputs: np.ndarray, per_feature: bool) -> tuple[np.ndarray, np.ndarray]:
    """Mean/std of training ``inputs`` (n, ...): per feature (vectors) or one scalar (images).

    Returns arrays shaped like one sample (per feature) or ``(1,)*ndim`` (scalar), NaN-safe.

    >>> m, s = fit_standardizer(np.array([[0.0, 10.0], [2.0, np.nan]]), per_feature=True)
    >>> m.tolist(), s.tolist()
    ([1.0, 10.0], [1.0, 0.0])
    """
    x = np.asarray(inputs, dtype=np.float64)
    if per_feature:
        mean = np.nanmean(x, axis=0)
        std = np.nanstd(x, axis=0)
        mean = np.where(np.isfinite(mean), mean, 0.0)
        std = np.where(np.isfinite(std), std, 0.0)  # constant / all-missing: ignored by the model
        return mean.astype(np.float32), std.astype(np.float32)
    shape = (1,) * (x.ndim - 1)
    mean = float(np.nanmean(x))
    std = float(np.nanstd(x)) or 1.0
    return np.full(shape, mean, np.float32), np.full(shape, std, np.float32)
