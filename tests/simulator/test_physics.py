"""The physics is visible in the sensor data (fault vs the same asset healthy)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.signal import butter, hilbert, sosfiltfilt

from linewatch.simulator import (
    BEARING_CATALOGUE,
    SimulatorConfig,
    asset_registry_json,
    make_fleet,
    make_spec,
    region_mean_c,
    tone_amplitude,
)
from linewatch.simulator.dataset import SampleRenderer

CFG = SimulatorConfig(seed=21)
FLEET = make_fleet(6, CFG.seed, variation=CFG.profile.asset_variation)
REG = {a["asset_id"]: a for a in asset_registry_json(FLEET)["assets"]}
RENDER = SampleRenderer(CFG, FLEET)
PUMP, PRESS, CONVEYOR = FLEET[0], FLEET[1], FLEET[2]


def _render(asset, fault, severity, index, **kw):
    return RENDER.render(make_spec(asset, fault, severity, index=index, **kw))


def _speed_hz(sample) -> float:
    return float(sample.plc.column("speed_rpm")[-10:].mean() / 60.0)


def _envelope(x: np.ndarray, fs: float, band: list[float]) -> tuple[np.ndarray, np.ndarray]:
    sos = butter(4, band, btype="bandpass", fs=fs, output="sos")
    env = np.abs(hilbert(sosfiltfilt(sos, x.astype(np.float64))))
    env -= env.mean()
    mag = np.abs(np.fft.rfft(env * np.hanning(env.size)))
    return np.fft.rfftfreq(env.size, 1 / fs), mag


def test_bearing_frequency_formulas() -> None:
    b = next(b for b in BEARING_CATALOGUE if b.designation == "6205")
    o = b.orders()
    assert o["bpfo"] == pytest.approx(3.585, abs=0.005)
    assert o["bpfi"] == pytest.approx(5.415, abs=0.005)
    assert o["ftf"] == pytest.approx(0.398, abs=0.002)
    assert o["bsf"] == pytest.approx(2.357, abs=0.005)
    f = PUMP.bearing_frequencies()
    assert f["bpfo"] == pytest.approx(PUMP.bearing.orders()["bpfo"] * PUMP.nominal_rpm / 60)
    assert REG[PUMP.asset_id]["bearing_frequencies_hz"]["bpfo"] == pytest.approx(f["bpfo"], abs=1e-3)


@pytest.mark.parametrize("asset", [PUMP, CONVEYOR], ids=lambda a: a.asset_id)
def test_bearing_fault_shows_bpfo_in_envelope_spectrum(asset) -> None:
    reg = REG[asset.asset_id]
    band = reg["resonance_band_hz"]
    ratios = {}
    for fault, sev in (("normal", 0.0), ("bearing_wear", 0.7)):
        specs, peaks = [], []
        for i in range(3):
            s = _render(asset, fault, sev, index=100 + i)
            bpfo = reg["bearing_orders"]["bpfo"] * _speed_hz(s)
            f, mag = _envelope(s.clip, 16000, band)
            near = np.abs(f - bpfo) <= 0.03 * bpfo
            ref = (np.abs(f - bpfo) <= 40) & ~near
            peaks.append(mag[near].max() / np.median(mag[ref]))
            specs.append((f, mag, bpfo))
        ratios[fault] = float(np.mean(peaks))
        if fault == "bearing_wear":
            f, mag, bpfo = specs[0]
            window = (f > 0.5 * bpfo) & (f < 1.5 * bpfo)
            assert abs(f[window][np.argmax(mag[window])] - bpfo) <= 0.03 * bpfo
    assert ratios["bearing_wear"] > 4.0
    assert ratios["bearing_wear"] > 2.5 * ratios["normal"]


def test_bearing_fault_heats_de_bearing_region_and_tag() -> None:
    box = REG[PUMP.asset_id]["regions"]["de_bearing"]
    healthy = _render(PUMP, "normal", 0.0, index=7)
    faulty = _render(PUMP, "bearing_wear", 0.8, index=7)
    d_region = region_mean_c(faulty.frame, box) - region_mean_c(healthy.frame, box)
    assert d_region > 5.0
    # far from the bearing (fan-end bearing) barely changes
    nde = REG[PUMP.asset_id]["regions"]["nde_bearing"]
    assert abs(region_mean_c(faulty.frame, nde) - region_mean_c(healthy.frame, nde)) < d_region / 3
    d_tag = faulty.plc.column("bearing_temp_c").mean() - healthy.plc.column("bearing_temp_c").mean()
    assert d_tag > 10.0


def test_imbalance_raises_1x_and_misalignment_2x() -> None:
    def orders(fault, sev, variant=None):
        a1, a2 = [], []
        for i in range(3):
            s = _render(CONVEYOR, fault, sev, index=300 + i, variant=variant)
            fr = _speed_hz(s)
            x = s.clip.astype(np.float64)
            a1.append(tone_amplitude(x, 16000, fr, 0.02 * fr))
            a2.append(tone_amplitude(x, 16000, 2 * fr, 0.02 * fr))
        return np.mean(a1), np.mean(a2)

    h1, h2 = orders("normal", 0.0)
    i1, _ = orders("imbalance", 0.5, "imbalance")
    _, m2 = orders("imbalance", 0.5, "misalignment")
    assert i1 > 2.0 * h1
    assert m2 > 2.0 * h2
    vib_h = _render(CONVEYOR, "normal", 0.0, index=1).plc.column("vibration_rms_mm_s").mean()
    vib_i = _render(CONVEYOR, "imbalance", 0.6, index=1).plc.column("vibration_rms_mm_s").mean()
    assert vib_i > 1.5 * vib_h


def test_electrical_overheating_hotspot_in_terminal_box() -> None:
    x0, y0, x1, y1 = REG[PRESS.asset_id]["regions"]["terminal_box"]

    def contrast(fault: str, sev: float) -> float:
        box = _render(PRESS, fault, sev, index=5).frame[y0:y1, x0:x1].astype(np.float64) / 100.0
        return float(box.max() - np.median(box))

    assert contrast("electrical_overheating", 0.6) - contrast("normal", 0.0) > 3.0


def test_cooling_failure_raises_winding_temperature() -> None:
    h = _render(PRESS, "normal", 0.0, index=9).plc.column("winding_temp_c").mean()
    f = _render(PRESS, "cooling_failure", 0.6, index=9).plc.column("winding_temp_c").mean()
    assert f - h > 10.0


def test_cavitation_lowers_and_disturbs_discharge_pressure() -> None:
    h = _render(PUMP, "normal", 0.0, index=4).plc.column("pressure_bar")
    c = _render(PUMP, "cavitation", 0.7, index=4).plc.column("pressure_bar")
    assert np.median(c) < 0.9 * np.median(h)
    assert np.std(np.diff(c)) > 2.0 * np.std(np.diff(h))


def test_healthy_readings_are_plausible() -> None:
    for asset in FLEET:
        s = _render(asset, "normal", 0.0, index=asset.index)
        vib = s.plc.column("vibration_rms_mm_s")
        assert 0.5 < np.median(vib) < 3.5
        assert 25.0 < np.median(s.plc.column("bearing_temp_c")) < 60.0
        rpm = np.median(s.plc.column("speed_rpm"))
        assert 0.95 * asset.sync_rpm < rpm < asset.sync_rpm
        amb_ck = np.median(s.frame)
        assert 28_800 < amb_ck < 30_500


def _driven(asset, fraction: float):
    """The physics block of ``asset`` on a variable-speed drive at ``fraction`` of its rated speed
    (the drive sets the frequency, as the domain fleets run it)."""
    from dataclasses import replace

    from linewatch.simulator.drift import constant_drift
    from linewatch.simulator.health import constant_health
    from linewatch.simulator.physics import AssetPhysics

    driven = replace(asset, line_frequency_hz=asset.line_frequency_hz * fraction)
    phys = AssetPhysics(driven, CFG, CFG.profile, force_run=True, drive_fraction=fraction)
    t = np.arange(600) / CFG.plc_rate_hz
    return phys.step(t, np.arange(600), constant_health("normal", 0.0, "", 600), constant_drift("none", 0.0, 1.0, 0.0))


def test_a_drive_moves_a_centrifugal_pump_along_its_affinity_laws() -> None:
    full, slow = _driven(PUMP, 1.0), _driven(PUMP, 0.6)
    assert np.median(slow.shaft_hz) / np.median(full.shaft_hz) == pytest.approx(0.6, abs=0.01)
    # the pump's head ~ n^2 over what static head and suction pressure hold (up to 35 %)
    assert 0.36 * 0.95 < np.median(slow.pressure_bar) / np.median(full.pressure_bar) < 0.36 + 0.35 * 0.64 + 0.03
    # torque ~ n^2: less current, a cooler winding, less vibration
    assert np.median(slow.current_a) < 0.85 * np.median(full.current_a)
    assert np.median(slow.winding_c) < np.median(full.winding_c) - 1.0
    assert np.median(slow.vibration_mm_s) < 0.9 * np.median(full.vibration_mm_s)


def test_machines_answer_a_drive_each_their_own_way() -> None:
    from linewatch.simulator.physics import AssetPhysics

    laws = {AssetPhysics(a, CFG, CFG.profile, drive_fraction=0.7)._speed_laws() for a in FLEET}
    assert len(laws) == len(FLEET)
    for still, power, static in laws:
        assert 0.15 <= still <= 0.6 and 1.0 <= power <= 2.0 and 0.0 <= static <= 0.35


def test_pumps_of_the_randomised_fleets_cavitate_each_their_own_way() -> None:
    from linewatch.simulator.drift import constant_drift
    from linewatch.simulator.health import constant_health
    from linewatch.simulator.physics import AssetPhysics

    laws = [AssetPhysics(a, CFG, CFG.profile, varied_cavitation=True)._cavitation_law() for a in FLEET]
    assert len(set(laws)) == len(FLEET)
    assert all(0.05 <= lost <= 0.30 and 0.03 <= pulse <= 0.12 and 0.2 <= b <= 0.9 for lost, pulse, b in laws)
    t = np.arange(600) / CFG.plc_rate_hz
    drift = constant_drift("none", 0.0)

    def block(fault: str, varied: bool):
        phys = AssetPhysics(PUMP, CFG, CFG.profile, force_run=True, varied_cavitation=varied)
        return phys.step(t, np.arange(600), constant_health(fault, 0.8 if fault != "normal" else 0.0, "", 600), drift)

    def pressure(fault: str, varied: bool) -> np.ndarray:
        return block(fault, varied).pressure_bar

    lost, pulse, _ = AssetPhysics(PUMP, CFG, CFG.profile, varied_cavitation=True)._cavitation_law()
    healthy, cavitating = pressure("normal", True), pressure("cavitation", True)
    e = np.clip(CFG.profile.signature_gain * 0.8, 0.0, 1.5)
    assert 1 - np.mean(cavitating) / np.mean(healthy) == pytest.approx(lost * e, abs=0.03)
    assert np.std(cavitating) > np.std(healthy) + 0.5 * pulse * e * PUMP.pressure_nominal_bar
    np.testing.assert_array_equal(pressure("normal", True), pressure("normal", False))  # a healthy pump: no change
    # its vibration comes in bursts, where the plant simulator's cavitation vibrates steadily
    bursty, steady = block("cavitation", True).vibration_mm_s, block("cavitation", False).vibration_mm_s
    assert np.std(bursty) / np.mean(bursty) > 2.0 * np.std(steady) / np.mean(steady)


def test_randomised_fleets_vary_how_a_machine_s_cycles_and_transmitter_show_in_its_vibration() -> None:
    from dataclasses import replace

    from linewatch.simulator.domain import TRAIN_DOMAIN, domain_fleet
    from linewatch.simulator.drift import constant_drift
    from linewatch.simulator.health import constant_health
    from linewatch.simulator.physics import AssetPhysics

    fleet = domain_fleet(12, 3, TRAIN_DOMAIN)
    noise = [a.extra["vibration_noise"] for a in fleet]
    stroke = [a.extra["stroke_vibration_mm_s"] for a in fleet]
    assert len(set(noise)) == 12 and all(0.3 <= v <= 1.6 for v in noise) and all(0.0 <= v <= 1.2 for v in stroke)
    press = next(a for a in fleet if a.asset_type == "press")
    t = np.arange(600) / CFG.plc_rate_hz

    def vibration(stroke_mm_s: float) -> np.ndarray:
        machine = replace(press, extra={**press.extra, "stroke_vibration_mm_s": stroke_mm_s})
        return AssetPhysics(machine, CFG, CFG.profile, force_run=True).step(
            t, np.arange(600), constant_health("normal", 0.0, "", 600), constant_drift("none", 0.0)).vibration_mm_s

    assert np.std(vibration(0.0)) < 0.5 * np.std(vibration(1.2))  # its strokes shake it, or they do not
