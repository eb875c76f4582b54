"""The fused distribution's temperature (models.fusion.fit.fit_fused_temperature): fitted on one
draw it makes overconfident pooled experts honest on another, it never changes a label, and a
fusion.json written before it existed still loads (temperature 1)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from models.fusion import FusionWeights, fuse
from models.fusion.fit import fit_fused_temperature, fuse_arrays
from models.registry.store import DEFAULT_ROOT
from models.training.calibration import expected_calibration_error

CLASSES = ("normal", "bearing_wear", "imbalance")


def _experts(seed: int, n: int = 1500) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Three sure experts that share their mistakes (one noisy reading of the machine): pooled, they
    are far surer than they are right."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, len(CLASSES), n)
    seen = np.where(rng.random(n) < 0.6, y, rng.integers(0, len(CLASSES), n))
    per = {}
    for m, sure in (("audio", 0.85), ("plc", 0.75), ("thermal", 0.8)):
        own = np.where(rng.random(n) < 0.9, seen, rng.integers(0, len(CLASSES), n))
        per[m] = np.eye(len(CLASSES))[own] * sure + (1 - sure) / len(CLASSES)
    return per, y


def test_a_temperature_fitted_on_validation_calibrates_another_draw_without_changing_a_label() -> None:
    val, y_val = _experts(1)
    test, y_test = _experts(2)
    t = fit_fused_temperature(val, FusionWeights(), y_val, CLASSES)
    assert t > 1.2, t  # the pooled experts are overconfident
    plain = fuse_arrays(test, FusionWeights(), CLASSES)
    tempered = fuse_arrays(test, FusionWeights(temperature=t), CLASSES)
    assert np.array_equal(plain.argmax(1), tempered.argmax(1))
    before, after = expected_calibration_error(plain, y_test), expected_calibration_error(tempered, y_test)
    assert after < before - 0.05, (before, after)  # measured 0.250 -> 0.146


def test_temperature_round_trips_and_old_files_load_as_one(tmp_path: Path) -> None:
    path = tmp_path / "fusion.json"
    path.write_text(json.dumps(FusionWeights(temperature=2.5, bias={"normal": 1.0}).to_json()))
    assert FusionWeights.load(path).temperature == 2.5
    old = FusionWeights(bias={"normal": 1.0}).to_json()
    del old["temperature"]
    path.write_text(json.dumps(old))
    assert FusionWeights.load(path).temperature == 1.0
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="refit the fusion"):
            FusionWeights(temperature=bad)


@pytest.mark.skipif(not (DEFAULT_ROOT / "fusion.json").exists(), reason="no shipped fusion.json")
def test_the_shipped_temperature_changes_confidence_not_verdicts() -> None:
    shipped = FusionWeights.load(DEFAULT_ROOT / "fusion.json")
    assert shipped.temperature > 0
    classes = ("normal", "bearing_wear", "electrical_overheating", "cooling_failure", "imbalance", "cavitation")
    rng = np.random.default_rng(5)
    untempered = FusionWeights(**{**shipped.__dict__, "temperature": 1.0})
    for _ in range(50):
        per = {m: dict(zip(classes, rng.dirichlet(np.ones(len(classes)) * 0.3).tolist(), strict=True))
               for m in ("plc", "thermal", "audio")}
        a = fuse(per, classes=classes, weights=shipped, asset_type="pump")
        b = fuse(per, classes=classes, weights=untempered, asset_type="pump")
        assert a.label == b.label
        assert (a.probabilities[a.label] <= b.probabilities[b.label] + 1e-12) == (shipped.temperature >= 1.0)
