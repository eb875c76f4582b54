"""Labelled model inputs of one modality, and the train/val/test split."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
from sklearn.model_selection import train_test_split


@dataclass(frozen=True)
class LabelledSamples:
    """Model inputs (exactly the feature functions' outputs, float32) and integer labels.

    ``reference`` holds one drift-summary row per sample (named by ``reference_names``):
    the PLC feature vector itself, or the ``stats`` dict the stream carries for thermal/audio.
    """

    modality: str
    inputs: np.ndarray
    labels: np.ndarray
    classes: tuple[str, ...]
    features_version: int
    source: str
    reference: np.ndarray | None = None
    reference_names: tuple[str, ...] = ()
    reference_kind: str = ""
    sample_ids: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if len(self.inputs) != len(self.labels):
            raise ValueError(f"{len(self.inputs)} inputs but {len(self.labels)} labels")
        if len(self.labels) and (self.labels.min() < 0 or self.labels.max() >= len(self.classes)):
            raise ValueError(f"labels must index classes {self.classes}, got range {self.labels.min()}..{self.labels.max()}")

    @property
    def sample_shape(self) -> tuple[int, ...]:
        return tuple(int(s) for s in self.inputs.shape[1:])

    def subset(self, idx: np.ndarray) -> "LabelledSamples":
        return LabelledSamples(
            self.modality,
            self.inputs[idx],
            self.labels[idx],
            self.classes,
            self.features_version,
            self.source,
            self.reference[idx] if self.reference is not None else None,
            self.reference_names,
            self.reference_kind,
            tuple(self.sample_ids[i] for i in idx) if self.sample_ids else (),
        )

    def class_counts(self) -> dict[str, int]:
        counts = np.bincount(self.labels, minlength=len(self.classes))
        return {c: int(n) for c, n in zip(self.classes, counts)}

    def digest(self) -> str:
        """SHA-256 over inputs and labels (identifies the exact data a model was trained on)."""
        h = hashlib.sha256()
        for a in (np.ascontiguousarray(self.inputs, np.float32), np.ascontiguousarray(self.labels, np.int64)):
            h.update(f"{a.dtype.str}{a.shape}".encode())
            h.update(a.tobytes())
        return h.hexdigest()


@dataclass(frozen=True)
class Split:
    train: LabelledSamples
    val: LabelledSamples
    test: LabelledSamples


def split_samples(data: LabelledSamples, val_fraction: float, test_fraction: float, seed: int) -> Split:
    """Stratified train/val/test split (falls back to unstratified for classes too small to stratify)."""
    idx = np.arange(len(data.labels))

    def _split(ids: np.ndarray, fraction: float, salt: int) -> tuple[np.ndarray, np.ndarray]:
        labels = data.labels[ids]
        counts = np.bincount(labels)
        stratify = labels if counts[counts > 0].min() >= 2 else None
        n_out = max(1, int(round(fraction * len(ids))))
        if stratify is not None and n_out < len(set(labels.tolist())):
            stratify = None
        a, b = train_test_split(ids, test_size=n_out, random_state=seed + salt, stratify=stratify)
        return np.sort(a), np.sort(b)

    rest, test = _split(idx, test_fraction, 0)
    train, val = _split(rest, val_fraction / (1.0 - test_fraction), 1)
    return Split(data.subset(train), data.subset(val), data.subset(test))
