"""The driven machine's own heat is process heat, not a motor fault: the shipped thermal model reads
the same healthy machines alike whether their pump pumps hot water or their compressor's casing runs
hot (docs/models.md, "Thermal v7: driven machines that run hot"). Thermal v6, trained on driven
machines of at most 50 °C / 35 K, read a hotter one as a worn bearing: on these frames its
bearing-wear probability rose by 0.066 on average, and on another generator's hot compressors it
raised 11 of its 17 false alarms."""

from __future__ import annotations

import numpy as np
import pytest
import tifffile

from models.data.healthy_frame_files import write_healthy_frames
from models.inspect import Inspector
from models.inspect.readers import load_assets
from models.registry import default_registry

pytestmark = pytest.mark.skipif(not default_registry().modalities(), reason="no shipped models")

SEED = 4322  #: a fleet seed no model was trained on
#: (rise over ambient at full load in K, a pump's fluid in °C) of the driven machine
COOL, HOT = (15.0, 30.0), (70.0, 90.0)


def test_a_hot_driven_machine_is_not_read_as_a_worn_bearing(tmp_path) -> None:
    from pipeline.features.thermal_regions import THERMAL_VECTOR_NAMES, thermal_vector

    driven_rise = THERMAL_VECTOR_NAMES.index("driven.mean_rise")
    readings = {}
    for name, driven in (("cool", COOL), ("hot", HOT)):
        root = tmp_path / name  # the same 30 healthy samples of 12 machines of the training domain
        paths = write_healthy_frames(root, "train", SEED, 30, assets=12, driven=driven)
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
