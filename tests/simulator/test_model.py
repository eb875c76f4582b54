"""Unit checks of assets, health episodes, ground truth and the atomic writer."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from linewatch.simulator import (
    FAULT_CLASSES,
    LABEL_THRESHOLD,
    REGION_NAMES,
    GroundTruth,
    SimulatorConfig,
    atomic_write_text,
    faults_for,
    label_for,
    make_fleet,
)
from linewatch.simulator.health import draw_episode
from linewatch.simulator.noise import hash_normal, make_rng, value_noise
from linewatch.simulator.scenario import Scenario


def test_fleet_ids_types_and_variation() -> None:
    fleet = make_fleet(7, seed=1)
    assert [a.asset_id for a in fleet] == ["PMP-01", "PRS-02", "CNV-03", "PMP-04", "PRS-05", "CNV-06", "PMP-07"]
    assert [a.asset_type for a in fleet[:3]] == ["pump", "press", "conveyor"]
    assert make_fleet(3, seed=1)[2] == fleet[2]  # asset i does not depend on n
    for a in fleet:
        assert 1400 < a.nominal_rpm < 1500 or 2850 < a.nominal_rpm < 3000
        assert 2000 <= a.resonance_hz <= 5000
        assert set(REGION_NAMES) <= set(a.layout.boxes)
        assert ("pump_inlet" in a.layout.boxes) == (a.asset_type == "pump")
        assert (a.impeller_vanes > 0) == (a.asset_type == "pump")
    # cameras see each asset from a slightly different pose
    assert len({a.layout.boxes["de_bearing"] for a in fleet}) == len(fleet)
    assert len({round(a.calibration.bearing_temp_offset_c, 6) for a in fleet}) == len(fleet)


def test_cavitation_only_for_pumps() -> None:
    assert "cavitation" in faults_for("pump")
    assert "cavitation" not in faults_for("press") and "cavitation" not in faults_for("conveyor")
    assert FAULT_CLASSES[0] == "normal" and len(FAULT_CLASSES) == 6


def test_episode_growth_is_monotone_and_labelled_by_threshold() -> None:
    ep = draw_episode(make_rng(1), "PMP-01", "bearing_wear", 0.0, 600.0)
    t = np.linspace(0, 600, 6001)
    s = ep.severity(t)
    assert (s[t < ep.onset_s] == 0).all()
    inside = s[(t >= ep.onset_s) & (t < ep.end_s)]
    assert (np.diff(inside) >= -1e-12).all() and 0.01 <= inside.min() and inside.max() <= 1.0
    assert ep.severity(ep.end_s) == 0.0  # repaired at the end of the block
    t_lab = ep.label_onset_s
    assert math.isfinite(t_lab)
    assert ep.severity(t_lab + 1e-3) >= LABEL_THRESHOLD > ep.severity(t_lab - 1e-3)
    assert label_for("bearing_wear", 0.049) == "normal" and label_for("bearing_wear", 0.05) == "bearing_wear"


def test_scenario_and_ground_truth_agree() -> None:
    cfg = SimulatorConfig(seed=8, fault_fraction=0.5, drift_fraction=0.5)
    fleet = make_fleet(6, cfg.seed)
    scen = Scenario(fleet, cfg, cfg.profile, block_s=120.0)
    faulty = [aid for aid, eps in scen.episodes.items() if eps]
    assert len(faulty) == 3
    gt = GroundTruth.from_scenario(scen, cfg.start_time, 120.0)
    rng = np.random.default_rng(0)
    for t in rng.uniform(0, 120, 200):
        for a in fleet:
            assert gt.label_at(a.asset_id, float(t)) == scen.label_at(a.asset_id, float(t))
    text = gt.to_csv_text()
    assert text.splitlines()[0] == "asset_id,start,end,fault,severity_start,severity_end,drift"


def test_scenario_blocks_extend_lazily() -> None:
    cfg = SimulatorConfig(seed=8)
    scen = Scenario(make_fleet(3, 8), cfg, cfg.profile, block_s=60.0)
    assert scen.n_blocks == 1
    assert scen.ensure(150.0) and scen.n_blocks == 3
    assert not scen.ensure(10.0)


def test_counter_noise_is_chunk_independent() -> None:
    idx = np.arange(1000)
    assert np.array_equal(hash_normal(5, idx)[300:400], hash_normal(5, idx[300:400]))
    z = hash_normal(5, np.arange(200_000))
    assert abs(z.mean()) < 0.01 and abs(z.std() - 1) < 0.01
    v = value_noise(3, np.linspace(0, 100, 1001), 10.0)
    assert v.min() >= -1 and v.max() <= 1 and np.abs(np.diff(v)).max() < 0.2


def test_atomic_write_leaves_no_temp(tmp_path: Path) -> None:
    p = atomic_write_text(tmp_path / "sub" / "x.csv", "a,b\n")
    assert p.read_text() == "a,b\n"
    assert [q.name for q in (tmp_path / "sub").iterdir()] == ["x.csv"]
