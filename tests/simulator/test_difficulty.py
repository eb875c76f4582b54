"""`hard` is measurably harder than `easy`: simple per-class features separate less."""

from __future__ import annotations

import numpy as np
import pytest

from linewatch.simulator import (
    PROFILES,
    SimulatorConfig,
    asset_registry_json,
    envelope_spectrum,
    make_spec,
    peak_ratio,
    region_mean_c,
)
from linewatch.simulator.dataset import SampleRenderer, dataset_fleet, draw_specs


def _auc(pos: list[float], neg: list[float]) -> float:
    p, n = np.asarray(pos)[:, None], np.asarray(neg)[None, :]
    return float((p > n).mean() + 0.5 * (p == n).mean())


def _separation(difficulty: str, severity: float = 0.25, n: int = 24) -> tuple[float, float]:
    """AUC of (DE-bearing temperature above scene median, BPFO envelope peak ratio):
    healthy vs early bearing wear on random assets and operating points."""
    cfg = SimulatorConfig(seed=13, difficulty=difficulty)
    fleet = dataset_fleet(cfg)
    reg = {a["asset_id"]: a for a in asset_registry_json(fleet)["assets"]}
    renderer = SampleRenderer(cfg, fleet)
    rng = np.random.default_rng(0)
    feats: dict[str, tuple[list[float], list[float]]] = {"normal": ([], []), "bearing_wear": ([], [])}
    for i in range(n):
        asset = fleet[i % len(fleet)]
        r = reg[asset.asset_id]
        load, amb = rng.uniform(-1, 1), rng.uniform(-6, 8)
        for fault, sev in (("normal", 0.0), ("bearing_wear", severity)):
            x = renderer.render(make_spec(asset, fault, sev, index=1000 + i, load_level=load, ambient_offset_c=amb))
            th = region_mean_c(x.frame, r["regions"]["de_bearing"]) - (float(np.median(x.frame)) / 100 - 273.15)
            f, m = envelope_spectrum(x.clip, 16000, r["resonance_band_hz"])
            bpfo = r["bearing_orders"]["bpfo"] * x.plc.column("speed_rpm")[-10:].mean() / 60
            feats[fault][0].append(th)
            feats[fault][1].append(peak_ratio(f, m, bpfo, 0.03 * bpfo, 40.0))
    return (_auc(feats["bearing_wear"][0], feats["normal"][0]),
            _auc(feats["bearing_wear"][1], feats["normal"][1]))


def test_profiles_are_ordered() -> None:
    e, r, h = PROFILES["easy"], PROFILES["realistic"], PROFILES["hard"]
    assert e.signature_gain > r.signature_gain > h.signature_gain
    assert e.netd_k < r.netd_k < h.netd_k
    assert e.asset_variation < r.asset_variation < h.asset_variation


def test_hard_separates_early_faults_less_than_easy() -> None:
    easy, real, hard = (_separation(d) for d in ("easy", "realistic", "hard"))
    for k, name in enumerate(("thermal DE-bearing", "envelope BPFO")):
        assert easy[k] - hard[k] > 0.2, (name, easy, hard)
        assert hard[k] - 0.05 <= real[k] <= easy[k] + 0.05, (name, easy, real, hard)


@pytest.mark.parametrize("difficulty", ["easy", "hard"])
def test_severity_distribution_follows_profile(difficulty: str) -> None:
    cfg = SimulatorConfig(seed=2, difficulty=difficulty)
    specs = draw_specs(60, cfg, dataset_fleet(cfg))
    sev = np.array([s.severity for s in specs if s.fault != "normal"])
    frac_early = float((sev < 0.2).mean())
    if difficulty == "easy":
        assert frac_early < 0.15
    else:
        assert frac_early > 0.3
