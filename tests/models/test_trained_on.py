"""A refit (fusion, calibration) refuses data that is not the registered model's training data,
and accepts the same fleet re-rendered elsewhere (equal up to float rounding)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from models.data.samples import LabelledSamples
from models.data.trained_on import DataMismatchError, check_trained_on
from models.registry import ModelRegistry

REGISTRY = Path(__file__).resolve().parents[2] / "models" / "default"


def _fleet_like(card, model_dir: Path, rng: np.random.Generator) -> LabelledSamples:
    """Data of the card's sample and class counts holding its reference rows (other rows random)."""
    with np.load(model_dir / "reference.npz") as z:
        ref, ref_labels = z["features"].astype(np.float32), z["labels"].astype(np.int64)
    classes = tuple(card.classes)
    labels = np.concatenate([np.full(card.dataset["class_counts"][c], i) for i, c in enumerate(classes)])
    inputs = rng.normal(0, 1, (len(labels), ref.shape[1])).astype(np.float32)
    for i, label in enumerate(ref_labels):  # each reference row onto its own row of its class
        inputs[np.flatnonzero(labels == label)[i]] = ref[i]
    return LabelledSamples(card.modality, inputs, labels, classes, card.features_version, "test")


def test_the_same_fleet_up_to_rounding_is_accepted_and_other_data_refused() -> None:
    registry = ModelRegistry(REGISTRY)
    card = registry.load_card("thermal")
    model_dir = registry.version_dir("thermal", card.version)
    data = _fleet_like(card, model_dir, np.random.default_rng(0))
    assert data.digest() != card.dataset["digest"]
    rounded = dataclasses.replace(data, inputs=data.inputs * np.float32(1 + 1e-7))
    assert check_trained_on(rounded, card, model_dir) == "reference rows"
    moved = data.inputs.copy()
    with np.load(model_dir / "reference.npz") as z:
        first = z["features"][0].astype(np.float32)
    moved[np.flatnonzero(np.all(moved == first, axis=1))[0], 0] += 0.01
    with pytest.raises(DataMismatchError, match="1 of its 256 reference rows"):
        check_trained_on(dataclasses.replace(data, inputs=moved), card, model_dir)
    fewer = data.subset(np.arange(data.labels.size - 1))
    with pytest.raises(DataMismatchError, match="sample or class counts differ"):
        check_trained_on(fewer, card, model_dir)


def test_a_fleet_re_rendered_by_a_changed_simulator_is_accepted_only_when_asked_and_only_on_its_counts() -> None:
    registry = ModelRegistry(REGISTRY)
    card = registry.load_card("thermal")
    model_dir = registry.version_dir("thermal", card.version)
    data = _fleet_like(card, model_dir, np.random.default_rng(1))
    changed = data.inputs.copy()
    changed[: changed.shape[0] // 2] += 0.5  # half the rows (machines on drives) render differently
    rerendered = dataclasses.replace(data, inputs=changed)
    with pytest.raises(DataMismatchError, match="reference rows are not in the data"):
        check_trained_on(rerendered, card, model_dir)
    how = check_trained_on(rerendered, card, model_dir, rerendered=True)
    assert how.startswith("re-rendered: ") and how.endswith(" of 256 reference rows unchanged")
    assert 0 < int(how.split()[1]) < 256
    with pytest.raises(DataMismatchError, match="sample or class counts differ"):
        check_trained_on(rerendered.subset(np.arange(data.labels.size - 1)), card, model_dir, rerendered=True)
