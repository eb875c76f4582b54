"""Training data rendered by the simulator (``linewatch.simulator.dataset.generate_arrays``)."""

from __future__ import annotations

import numpy as np

from linewatch.simulator.config import SimulatorConfig
from models.data.featurize import (
    FEATURES_VERSION,
    audio_inputs,
    plc_inputs,
    thermal_inputs,
)
from models.data.samples import LabelledSamples
from models.specs import MODALITIES, check_modality


def simulated_samples(
    samples_per_class: int,
    sim_config: SimulatorConfig | None = None,
    modalities: tuple[str, ...] = MODALITIES,
    progress: bool = False,
) -> dict[str, LabelledSamples]:
    """Render ``samples_per_class`` samples per fault class and featurise each modality."""
    from linewatch.simulator.assets import asset_registry_json
    from linewatch.simulator.dataset import generate_arrays

    for m in modalities:
        check_modality(m)
    cfg = sim_config or SimulatorConfig()
    arrays = generate_arrays(samples_per_class, cfg, tuple(modalities), progress=progress)
    classes = tuple(arrays.classes)
    source = f"simulator generate_arrays(samples_per_class={samples_per_class}, seed={cfg.seed}, difficulty={cfg.difficulty})"
    ids = tuple(s.sample_id for s in arrays.specs)
    registry = {e["asset_id"]: e for e in asset_registry_json(arrays.fleet)["assets"]}
    assets = [registry.get(s.asset_id) for s in arrays.specs]
    extra = {"groups": np.array([s.asset_id for s in arrays.specs]),
             "severity": np.array([s.severity for s in arrays.specs], np.float32),
             "asset_types": np.array([s.asset_type for s in arrays.specs])}
    kind = "model-input vector"
    out: dict[str, LabelledSamples] = {}
    if "plc" in modalities:
        from linewatch.simulator.tags import QUALITIES

        n_ticks = arrays.plc.shape[1]
        t_ms = np.round((np.arange(n_ticks) - (n_ticks - 1)) * 1000.0 / cfg.plc_rate_hz).astype(np.int64)
        bad = arrays.plc_quality == QUALITIES.index("Bad")
        x, ref, names = plc_inputs(t_ms, arrays.plc, bad, assets)
        out["plc"] = LabelledSamples("plc", x, arrays.y, classes, FEATURES_VERSION, source, ref, names, kind, ids, **extra)
    if "thermal" in modalities:
        x, ref, names = thermal_inputs(arrays.thermal, assets)
        out["thermal"] = LabelledSamples("thermal", x, arrays.y, classes, FEATURES_VERSION, source, ref, names, kind, ids,
                                         **extra)
    if "audio" in modalities:
        x, ref, names = audio_inputs(arrays.audio, cfg.audio_rate_hz, assets)
        out["audio"] = LabelledSamples("audio", x, arrays.y, classes, FEATURES_VERSION, source, ref, names, kind, ids,
                                       **extra)
    return out
