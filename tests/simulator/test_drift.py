"""Sensor drift changes readings but never the fault label."""

from __future__ import annotations

from datetime import timezone

import numpy as np

from linewatch.simulator import DRIFT_KINDS, GroundTruth, SimulatorConfig, make_fleet, make_spec
from linewatch.simulator.dataset import SampleRenderer
from linewatch.simulator.engine import AssetStream
from linewatch.simulator.scenario import Scenario

CFG = SimulatorConfig(seed=5)
FLEET = make_fleet(3, CFG.seed, variation=CFG.profile.asset_variation)
RENDER = SampleRenderer(CFG, FLEET)


def _pair(kind: str, asset_index: int = 0):
    a = FLEET[asset_index]
    clean = RENDER.render(make_spec(a, "normal", 0.0, index=3))
    spec = make_spec(a, "normal", 0.0, index=3, drift=kind, drift_level=1.0)
    drifted = RENDER.render(spec)
    assert spec.fault == "normal"
    return clean, drifted


def test_plc_temperature_offset_creep() -> None:
    clean, drifted = _pair("plc_temp_offset")
    d = drifted.plc.column("bearing_temp_c") - clean.plc.column("bearing_temp_c")
    good = (clean.plc.quality[:, 2] == 0) & (drifted.plc.quality[:, 2] == 0)
    assert abs(np.median(d[good]) - 4.0) < 0.05
    assert np.array_equal(drifted.frame, clean.frame)
    assert np.array_equal(drifted.clip, clean.clip)


def test_camera_ageing_changes_frames_only() -> None:
    clean, drifted = _pair("camera_ageing")
    diff = drifted.frame.astype(np.float64) - clean.frame.astype(np.float64)
    assert abs(diff.mean()) > 100  # > 1 K in centikelvin
    assert np.array_equal(drifted.plc.values, clean.plc.values)


def test_ambient_shift_is_a_real_temperature_change() -> None:
    clean, drifted = _pair("ambient_shift")
    assert np.median(drifted.frame) - np.median(clean.frame) > 300
    assert drifted.plc.column("bearing_temp_c").mean() - clean.plc.column("bearing_temp_c").mean() > 3.0


def test_microphone_degradation_loses_gain_and_treble() -> None:
    def band(x: np.ndarray, lo: float, hi: float) -> float:
        p = np.abs(np.fft.rfft(x.astype(np.float64))) ** 2
        f = np.fft.rfftfreq(x.size, 1 / 16000)
        return float(p[(f >= lo) & (f < hi)].sum())

    treble = []
    for i in range(len(FLEET)):
        clean, drifted = _pair("mic_degradation", i)
        low = band(drifted.clip, 100, 800) / band(clean.clip, 100, 800)
        assert 0.2 < low < 0.3  # -6 dB sensitivity loss
        treble.append(band(drifted.clip, 3000, 6000) / band(clean.clip, 3000, 6000) / low)
    assert np.mean(treble) < 0.7  # high frequencies lost on top of the gain loss


def test_streaming_drift_without_faults_keeps_labels_normal() -> None:
    horizon = 30.0
    outs = {}
    for frac in (0.0, 1.0):
        cfg = SimulatorConfig(seed=5, fault_fraction=0.0, drift_fraction=frac, thermal_fps=1.0)
        scen = Scenario(FLEET, cfg, cfg.profile, block_s=horizon)
        res = {}
        for a in FLEET:
            st = AssetStream(a, scen, cfg, cfg.profile)
            o = st.advance(horizon)
            res[a.asset_id] = (o.plc.values, np.stack([f for _, f in o.frames]), np.stack([c for _, c in o.clips]))
        outs[frac] = (scen, res)
    scen, drifted = outs[1.0]
    _, clean = outs[0.0]
    kinds = {ev.kind for evs in scen.drifts.values() for ev in evs}
    assert kinds and kinds <= set(DRIFT_KINDS)
    assert all(evs and evs[0].onset_s < horizon for evs in scen.drifts.values())
    gt = GroundTruth.from_scenario(scen, CFG.start_time.astimezone(timezone.utc), horizon)
    assert {r.fault for r in gt} == {"normal"}
    assert any(r.drift for r in gt)
    modality = {"plc_temp_offset": 0, "ambient_shift": 0, "camera_ageing": 1, "mic_degradation": 2}
    for aid, evs in scen.drifts.items():
        m = modality[evs[0].kind]
        assert not np.array_equal(drifted[aid][m], clean[aid][m]), (aid, evs[0].kind)
        for t in np.linspace(0, horizon - 0.1, 9):
            assert scen.label_at(aid, float(t)) == "normal"
            assert gt.label_at(aid, float(t)) == "normal"
