"""Feature messages of a simulated machine (linewatch.simulator → pipeline.features), for the explain tests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from linewatch.contract import AudioFeatures, PlcFeatures, ThermalFeatures
from linewatch.simulator.assets import asset_registry_json, make_fleet
from linewatch.simulator.config import SimulatorConfig
from linewatch.simulator.dataset import RenderedSample, SampleRenderer, make_spec
from linewatch.simulator.tags import QUALITIES
from pipeline.features import FEATURES_VERSION
from pipeline.features.asset_profile import AssetProfile, load_profiles
from pipeline.features.messages import audio_features_message, thermal_features_message
from pipeline.features.plc_physics import plc_vector
from pipeline.features.plc_window import plc_feature_names
from models.data.featurize import plc_input


@dataclass
class SimulatedCase:
    asset_id: str
    asset_type: str
    assets_json: dict[str, Any]
    profiles: dict[str, AssetProfile]
    messages: dict[str, PlcFeatures | ThermalFeatures | AudioFeatures]
    frame_ck: np.ndarray | None = None  #: the raw thermal frame (uint16 centikelvin)
    entry: dict[str, Any] | None = None  #: the asset's assets.json entry


def simulated_case(fault: str, severity: float = 0.8, index: int = 41, t_ms: int = 1_764_000_000_000,
                   asset: int = 0) -> SimulatedCase:
    """Machine ``asset`` of the plant simulator (seed 7; 0: pump PMP-01, 3: pump PMP-04 at high load) with
    ``fault`` at ``severity``: one PLC window, one thermal frame and one audio clip, turned into the
    features messages the Flink job writes."""
    cfg = SimulatorConfig(seed=7)
    fleet = make_fleet(6, seed=7)
    pump = fleet[asset]
    doc = asset_registry_json(fleet, cfg)
    profiles = load_profiles(doc)
    entry = next(a for a in doc["assets"] if a["asset_id"] == pump.asset_id)
    r = SampleRenderer(cfg, fleet).render(make_spec(pump, fault, severity if fault != "normal" else 0.0, index=index))
    return SimulatedCase(pump.asset_id, pump.asset_type, doc, profiles, featurize(r, entry, t_ms), r.frame, entry)


def featurize(r: RenderedSample, entry: dict[str, Any], t_ms: int = 1_764_000_000_000
              ) -> dict[str, PlcFeatures | ThermalFeatures | AudioFeatures]:
    """The features messages the Flink job would write for one rendered sample of the asset ``entry``."""
    assert r.plc is not None and r.frame is not None and r.clip is not None
    asset_id, asset_type = str(entry["asset_id"]), str(entry.get("asset_type", "unknown"))
    thermal = thermal_features_message(asset_id, asset_type, t_ms, r.frame, asset=entry)
    audio = audio_features_message(asset_id, asset_type, t_ms, r.clip.astype(np.float32) / 32768.0, 16_000,
                                   asset=entry)
    t_rel = np.round((r.plc.t - r.plc.t[-1]) * 1000.0).astype(np.int64)
    raw = plc_input(t_rel, r.plc.values.astype(np.float64), r.plc.quality == QUALITIES.index("Bad"))
    plc = PlcFeatures(asset_id=asset_id, asset_type=asset_type, window_start_ms=t_ms - 10_000,
                      window_end_ms=t_ms, event_time_ms=t_ms, features_version=FEATURES_VERSION,
                      feature_names=list(plc_feature_names()), values=np.asarray(raw, np.float32),
                      n_samples=len(r.plc), vector=plc_vector(raw, entry))
    return {"plc": plc, "thermal": thermal, "audio": audio}
