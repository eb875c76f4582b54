"""The driven machine's own heat is process heat, not a motor fault: the shipped thermal model reads
the same healthy machines alike whether their pump pumps hot water or their compressor's casing runs
hot (docs/models.md, "Thermal v7: driven machines that run hot"). Thermal v6, trained on driven
machines of at most 50 °C / 35 K, read a hotter one as a worn bearing: on these frames its
bearing-wear probability rose by 0.066 on average, and on another generator's hot compressors it
raised 11 of its 17 false alarms."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import tifffile

from models.inspect import Inspector
from models.inspect.readers import load_assets
from models.registry import default_registry

pytestmark = pytest.mark.skipif(not default_registry().modalities(), reason="no shipped models")

SEED = 4322  #: a fleet seed no model was trained on
#: (rise over ambient at full load in K, a pump's fluid in °C) of the driven machine
COOL, HOT = (15.0, 30.0), (70.0, 90.0)


def _render(tmp: Path, driven: tuple[float, float], n: int) -> tuple[Path, list[Path]]:
    """``n`` healthy frames of a fleet of the training domain, every driven machine at ``driven``."""
    from linewatch.simulator.domain import DOMAINS, DomainRenderer, domain_registry_json
    from models.data.domain_data import _world

    fleet, _, specs = _world("train", 12, SEED, 30)
    fleet = [replace(a, driven_rise_k=driven[0], driven_base_c=driven[1]) for a in fleet]
    renderer = DomainRenderer(fleet, SEED)
    tmp.mkdir()
    (tmp / "assets.json").write_text(json.dumps(domain_registry_json(fleet, SEED, DOMAINS["train"])))
    paths = []
    for k, spec in enumerate([s for s in specs if s.fault == "normal"][:n]):
        path = tmp / f"{spec.asset_id}-20261129T1400{k:05d}.tiff"
        tifffile.imwrite(path, renderer.render(spec, ("thermal",)).frame)
        paths.append(path)
    return tmp, paths


def test_a_hot_driven_machine_is_not_read_as_a_worn_bearing(tmp_path) -> None:
    from pipeline.features.thermal_regions import THERMAL_VECTOR_NAMES, thermal_vector

    driven_rise = THERMAL_VECTOR_NAMES.index("driven.mean_rise")
    readings = {}
    for name, driven in (("cool", COOL), ("hot", HOT)):
        root, paths = _render(tmp_path / name, driven, 30)
        assets = load_assets(root / "assets.json")
        results = Inspector(assets=assets).score(paths)[0]
        assert all(r.error is None for r in results)
        rises = [float(thermal_vector(tifffile.imread(p), assets[r.asset_id])[driven_rise])
                 for p, r in zip(paths, results, strict=True)]
        readings[name] = (np.mean(rises), np.array([r.probabilities["bearing_wear"] for r in results]),
                          [r.label for r in results])
    (cool_rise, cool_p, _), (hot_rise, hot_p, hot_labels) = readings["cool"], readings["hot"]
    assert hot_rise > cool_rise + 30.0  # the same samples, their driven machines really that much hotter
    assert hot_p.mean() - cool_p.mean() < 0.03, (cool_p.mean(), hot_p.mean())
    assert sum(label != "normal" for label in hot_labels) <= 1, hot_labels
