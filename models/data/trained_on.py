"""Is this the data a registered model was trained on? (before refitting its calibration or the fusion)

A card records the SHA-256 of its training inputs and labels (``dataset.digest``). A fleet
re-rendered from the same seeds on another machine, or on the same kind of machine with other
library builds, can differ from it in the last bits of a few float32 values (FFTs and BLAS reduce
in another order): the digest differs though the samples are the same. :func:`check_trained_on`
accepts the data when the digest is equal; otherwise when the sample count and class counts are
the card's and every row of the card's ``reference.npz`` (256 training rows) is found in the
data, with its label, within ``atol``. Anything else is refused with what differs.

>>> import numpy as np
>>> near_rows_found(np.array([[1.0, 2.0]]), np.array([[0.0, 0.0], [1.0, 2.0 + 1e-7]]), atol=1e-5)
1
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from models.data.samples import LabelledSamples
from models.registry.card import ModelCard

ATOL = 1e-4
"""Largest difference of one value accepted as float rounding (the model inputs are O(1) physics
ratios and dB). Measured: the same thermal samples rendered here and on the GPU host differ by up
to 2.3e-5; the 256 audio v4 reference rows lie within 6e-6 (median 3.6e-7) of a later GPU-host
render of the same fleet."""


class DataMismatchError(ValueError):
    """The data is not what the model was trained on."""


def near_rows_found(rows: np.ndarray, data: np.ndarray, atol: float = ATOL) -> int:
    """How many of ``rows`` have a row of ``data`` within ``atol`` in every value."""
    found = 0
    for start in range(0, len(rows), 32):
        block = rows[start:start + 32]
        diff = np.abs(data[None, :, :] - block[:, None, :]).max(axis=2)
        found += int((diff.min(axis=1) <= atol).sum())
    return found


def check_trained_on(data: LabelledSamples, card: ModelCard, model_dir: Path, atol: float = ATOL,
                     rerendered: bool = False) -> str:
    """``"digest"`` or ``"reference rows"`` (how the data was recognised); raises
    :class:`DataMismatchError` when it is not the card's training data. ``rerendered``: the data is
    the card's fleet and samples (same seeds, sample and class counts) rendered by a changed
    simulator, so its rows may differ: reference rows not found are reported
    (``"re-rendered: k of n reference rows unchanged"``), not refused; the counts still must match."""
    if data.digest() == card.dataset["digest"]:
        return "digest"
    what = f"{data.modality}: the data is not what {card.version} was trained on"
    if len(data.labels) != int(card.dataset["n_total"]) or data.class_counts() != card.dataset["class_counts"]:
        raise DataMismatchError(f"{what} (dataset digest, sample or class counts differ): use the run the card names "
                                f"({card.dataset['source']})")
    with np.load(Path(model_dir) / "reference.npz", allow_pickle=False) as z:
        ref, labels = z["features"].astype(np.float32), z["labels"]
    inputs = np.asarray(data.inputs, np.float32)
    found = 0
    for label in np.unique(labels):
        found += near_rows_found(ref[labels == label], inputs[data.labels == label], atol)
    if found != len(ref) and rerendered:
        return f"re-rendered: {found} of {len(ref)} reference rows unchanged"
    if found != len(ref):
        raise DataMismatchError(f"{what}: {len(ref) - found} of its {len(ref)} reference rows are not in the data "
                                f"within {atol}")
    return "reference rows"
