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
    #: The machine of each sample (splits never put one machine in two splits), optional.
    groups: np.ndarray | None = None
    #: Hidden fault severity of each sample (0 for healthy), optional: recall-vs-severity curves.
    severity: np.ndarray | None = None
    asset_types: np.ndarray | None = None

    def __post_init__(self) -> None:
        if len(self.inputs) != len(self.labels):
            raise ValueError(f"{len(self.inputs)} inputs but {len(self.labels)} labels")
        if len(self.labels) and (self.labels.min() < 0 or self.labels.max() >= len(self.classes)):
            raise ValueError(f"labels must index classes {self.classes}, got range {self.labels.min()}..{self.labels.max()}")

    @property
    def sample_shape(self) -> tuple[int, ...]:
        return tuple(int(s) for s in self.inputs.shape[1:])

    def subset(self, idx: np.ndarray) -> LabelledSamples:
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
            None if self.groups is None else self.groups[idx],
            None if self.severity is None else self.severity[idx],
            None if self.asset_types is None else self.asset_types[idx],
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


def grouped_split_indices(groups: np.ndarray, val_fraction: float, test_fraction: float, seed: int
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Train/val/test indices with every group (machine) in exactly one split.

    Groups are shuffled (``seed``) and dealt to test, then validation, until each holds its
    share of the *samples*; the rest train.

    >>> g = np.repeat(np.array(["a", "b", "c", "d", "e"]), 4)
    >>> tr, va, te = grouped_split_indices(g, 0.2, 0.2, seed=0)
    >>> len(tr), len(va), len(te), set(g[tr]) & set(g[te]), set(g[va]) & set(g[te])
    (12, 4, 4, set(), set())
    """
    groups = np.asarray(groups)
    names, inverse, counts = np.unique(groups, return_inverse=True, return_counts=True)
    if len(names) < 3:
        raise ValueError(f"a grouped split needs at least 3 groups (machines), got {len(names)}")
    order = np.random.default_rng(seed).permutation(len(names))
    n = len(groups)
    assign = np.zeros(len(names), np.int8)  # 0 train, 1 val, 2 test
    filled = {2: 0, 1: 0}
    targets = {2: test_fraction * n, 1: val_fraction * n}
    for g in order:
        split = 2 if filled[2] < targets[2] else (1 if filled[1] < targets[1] else 0)
        assign[g] = split
        if split:
            filled[split] += int(counts[g])
    for split in (2, 1):  # never leave a split empty
        if not np.any(assign == split):
            assign[order[-1 if split == 2 else -2]] = split
    per_sample = assign[inverse]
    return (np.flatnonzero(per_sample == 0), np.flatnonzero(per_sample == 1), np.flatnonzero(per_sample == 2))


def split_samples(data: LabelledSamples, val_fraction: float, test_fraction: float, seed: int) -> Split:
    """Train/val/test split: grouped by machine when ``data.groups`` is known (no machine in two
    splits: test scores are on machines never seen in training), else stratified by class
    (falls back to unstratified for classes too small to stratify)."""
    if data.groups is not None:
        train, val, test = grouped_split_indices(data.groups, val_fraction, test_fraction, seed)
        return Split(data.subset(train), data.subset(val), data.subset(test))
    idx = np.arange(len(data.labels))

    def _split(ids: np.ndarray, fraction: float, salt: int) -> tuple[np.ndarray, np.ndarray]:
        labels = data.labels[ids]
        counts = np.bincount(labels)
        stratify = labels if counts[counts > 0].min() >= 2 else None
        n_out = max(1, round(fraction * len(ids)))
        if stratify is not None and n_out < len(set(labels.tolist())):
            stratify = None
        a, b = train_test_split(ids, test_size=n_out, random_state=seed + salt, stratify=stratify)
        return np.sort(a), np.sort(b)

    rest, test = _split(idx, test_fraction, 0)
    train, val = _split(rest, val_fraction / (1.0 - test_fraction), 1)
    return Split(data.subset(train), data.subset(val), data.subset(test))
