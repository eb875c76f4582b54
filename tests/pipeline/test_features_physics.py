"""Physics-normalised model inputs (features v3): what each one must be invariant to, and what it
must see. Hand-made signals and domain-randomised simulator samples."""

from __future__ import annotations

import numpy as np
import pytest

from linewatch.contract import decode_message, encode_message
from linewatch.simulator.domain import (
    DomainRenderer,
    domain_fleet,
    domain_registry_json,
    draw_domain_specs,
)
from models.inputs import InputMismatchError, input_array
from pipeline.features import FEATURES_VERSION
from pipeline.features.asset_profile import AssetProfile, load_profiles
from pipeline.features.audio_physics import (
    AUDIO_VECTOR_NAMES,
    AudioInputError,
    audio_vector,
)
from pipeline.features.messages import (
    audio_features_message,
    thermal_features_message,
    thermal_message_any_unit,
)
from pipeline.features.plc_physics import PLC_VECTOR_NAMES, plc_vector
from pipeline.features.plc_window import plc_feature_names
from pipeline.features.thermal_regions import (
    THERMAL_VECTOR_NAMES,
    ThermalInputError,
    frame_to_celsius,
    thermal_vector,
)

SR = 16_000


def test_asset_profile_accepts_schema_variants() -> None:
    geometry = AssetProfile.from_entry({"id": "A", "rpm": 1480, "bearing": {"n_balls": 9, "ball_diameter_mm": 7.94,
                                                                            "pitch_diameter_mm": 39.04}})
    known = AssetProfile.from_entry({"asset_id": "B", "poles": 4, "bearing": {"designation": "6205-2RS"}},
                                    {"line_frequency_hz": 60})
    freqs = AssetProfile.from_entry({"asset_id": "C", "nominal_shaft_hz": 25.0,
                                     "bearing_frequencies_hz": {"bpfo": 89.6}})
    assert geometry.nominal_shaft_hz == pytest.approx(1480 / 60)
    assert geometry.bearing_orders["bpfo"] == pytest.approx(3.585, abs=1e-3)
    assert known.bearing_orders["bpfo"] == pytest.approx(3.585, abs=1e-3)
    assert known.nominal_shaft_hz == pytest.approx(30.0 * 0.97)
    assert freqs.bearing_orders == {"bpfo": pytest.approx(3.584)}
    vfd = AssetProfile.from_entry({"asset_id": "D", "nominal_rpm": 1500, "speed_range_rpm": [600, 1800]})
    assert vfd.vfd and vfd.speed_search_hz() == pytest.approx((9.5, 31.5))
    boxes = AssetProfile.from_entry({"asset_id": "E", "regions": {"motor_body": {"x": 1, "y": 2, "w": 10, "h": 5}}})
    assert boxes.regions["motor_body"] == (1, 2, 11, 7)
    written = [AssetProfile.from_entry({"asset_id": "W", **e}) for e in (
        {"rpm": "1,480 rpm", "bearing": "SKF 6205-2RS1"}, {"motor_rpm": 1480, "bearing": {"model": "6205-2Z"}},
        {"rated_speed_rpm": "1480", "bearings": {"de": "6205 C3", "nde": "6204"}}, {"rpm": 1480, "de_bearing": "6205"})]
    for profile in written:
        assert profile.nominal_shaft_hz == pytest.approx(1480 / 60)
        assert profile.bearing_orders["bpfo"] == pytest.approx(3.585, abs=1e-3)
    assert AssetProfile.from_entry({"asset_id": "W", "bearing": "16205"}).bearing_orders == {}
    named = AssetProfile.from_entry({"asset_id": "F", "regions": {
        "Motor": [10, 20, 50, 40], "motor_body": [12, 20, 50, 40], "Drive-End Bearing": [50, 22, 56, 38],
        "NDE": [4, 22, 10, 38], "Junction Box": [20, 14, 30, 20], "pipe": [60, 0, 70, 60]}})
    assert named.regions == {"motor_body": (12, 20, 50, 40), "de_bearing": (50, 22, 56, 38), "nde_bearing": (4, 22, 10, 38),
                             "terminal_box": (20, 14, 30, 20), "pipe": (60, 0, 70, 60)}  # the exact name wins
    assert named.unknown_regions == ("pipe",) and not named.regions_relative
    relative = AssetProfile.from_entry({"asset_id": "G", "regions": {"motor_body": [0.25, 0.3, 0.75, 0.7]}})
    declared = AssetProfile.from_entry({"asset_id": "H", "regions": {"motor_body": [0.25, 0.3, 0.75, 0.7]},
                                        "frame": {"width": 80, "height": 60}})
    assert relative.regions_relative and not declared.regions_relative
    assert declared.regions["motor_body"] == pytest.approx((20, 18, 60, 42))
    profiles = load_profiles({"assets": {"M-1": {"poles": 2}, "M-2": {"nominal_rpm": 980}}})
    assert set(profiles) == {"M-1", "M-2"} and AssetProfile().bearing_orders == {}


def test_a_reciprocating_machine_is_named_by_its_type_or_said_outright_and_its_audio_message_says_so() -> None:
    kinds = {"K-1": {"type": "Reciprocating compressor"}, "K-2": {"asset_type": "piston air compressor"},
             "K-3": {"asset_type": "screw compressor"}, "K-4": {"asset_type": "press", "reciprocating": "yes"},
             "K-5": {"asset_type": "triplex plunger pump", "reciprocating": False}, "K-6": {}}
    profiles = load_profiles({"assets": kinds})
    assert {k: p.reciprocating for k, p in profiles.items()} == {
        "K-1": True, "K-2": True, "K-3": False, "K-4": True, "K-5": False, "K-6": False}
    clip = _bearing_clip(24.5, 3.585, 0)
    stats = [audio_features_message(k, "compressor", 0, clip, SR, asset=profiles[k]).stats["reciprocating"]
             for k in ("K-1", "K-3")]
    assert stats == [1.0, 0.0]


def _bearing_clip(shaft_hz: float, bpfo_order: float, seed: int, amp: float = 0.4) -> np.ndarray:
    """1x tone + noise + a resonance rung by impacts at BPFO."""
    rng = np.random.default_rng(seed)
    t = np.arange(SR) / SR
    x = 0.05 * np.sin(2 * np.pi * shaft_hz * t) + 0.02 * np.sin(2 * np.pi * 2 * shaft_hz * t)
    x += 0.01 * rng.standard_normal(SR)
    imp = np.zeros(SR)
    if amp:
        imp[(np.arange(0, 1, 1 / (bpfo_order * shaft_hz)) * SR).astype(int)] = amp
    ring = np.exp(-np.arange(200) / 25.0) * np.sin(2 * np.pi * 3_000 * np.arange(200) / SR)
    return (x + np.convolve(imp, ring)[:SR]).astype(np.float32)


def test_audio_vector_is_gain_and_rate_invariant_and_sees_the_bearing_orders() -> None:
    from scipy.signal import resample_poly

    asset = {"asset_id": "M", "nominal_rpm": 1470, "bearing_orders": {"bpfo": 3.585, "bpfi": 5.415, "bsf": 2.357,
                                                                      "ftf": 0.398}}
    faulty = _bearing_clip(24.5, 3.585, 0)
    v = audio_vector(faulty, SR, asset)
    v12 = audio_vector(faulty * 10 ** (12 / 20), SR, asset)
    np.testing.assert_allclose(v, v12, atol=1e-3)  # +12 dB microphone: the same input
    v44 = audio_vector(resample_poly(faulty, 441, 160).astype(np.float32), 44_100, asset)
    i, speed = AUDIO_VECTOR_NAMES.index("env.bpfo.h1"), AUDIO_VECTOR_NAMES.index("speed.shaft_hz")
    assert abs(v44[i] - v[i]) < 0.5 and abs(v44[speed] - v[speed]) * 60 < 0.3  # 44.1 kHz: resampled, same input
    assert abs(v[speed] * 60 / 24.5 - 1) < 0.03  # the vector holds shaft Hz / 60
    healthy = audio_vector(_bearing_clip(24.5, 3.585, 1, amp=0.0), SR, asset)
    assert v[i] > healthy[i] + 1.0 and v[i] > 2.0
    with pytest.raises(AudioInputError, match="too short"):
        audio_vector(np.zeros(100, np.float32), SR, asset)
    with pytest.raises(AudioInputError, match="silent"):
        audio_vector(np.zeros(SR, np.float32), SR, asset)


def _knocky_bearing_clip(shaft_hz: float, rate_hz: float, seed: int, amp: float, load_zone: bool = False) -> np.ndarray:
    """Tones, noise, random healthy knocks and (amp > 0) a defect rate 1.5 % below kinematics
    (rolling-element slip), optionally modulated once per turn (inner race in the load zone)."""
    rng = np.random.default_rng(seed)
    t = np.arange(SR) / SR
    x = 0.05 * np.sin(2 * np.pi * shaft_hz * t) + 0.02 * np.sin(2 * np.pi * 2 * shaft_hz * t)
    x += 0.02 * rng.standard_normal(SR)
    imp = np.zeros(SR)
    imp[rng.integers(0, SR, 40)] = 0.3 * np.abs(rng.standard_normal(40))  # random knocks, no period
    if amp:
        times = np.arange(rng.uniform(0, 0.01), 1, 1 / (rate_hz * 0.985))
        a = amp * (1 - 0.7 * 0.5 * (1 - np.cos(2 * np.pi * shaft_hz * times))) if load_zone else np.full(times.size, amp)
        np.add.at(imp, (times * SR).astype(int), a)
    ring = np.exp(-np.arange(200) / 25.0) * np.sin(2 * np.pi * 4_200 * np.arange(200) / SR)
    return (x + np.convolve(imp, ring)[:SR]).astype(np.float32)


def test_fault_combs_see_a_slipping_defect_among_random_knocks() -> None:
    """Features v3: kurtogram band + comb with a shared slip find BPFI (load-zone modulated) in a
    clip whose random knocks are as loud as the defect; a bearing of unknown geometry is found by
    the blind comb at its order."""
    orders = {"bpfo": 3.585, "bpfi": 5.415, "bsf": 2.357, "ftf": 0.398}
    asset = {"asset_id": "M", "nominal_rpm": 1470, "bearing_orders": orders}
    unknown = {"asset_id": "M", "nominal_rpm": 1470}
    f_r = 24.5
    comb, blind, order = (AUDIO_VECTOR_NAMES.index(n) for n in ("comb.bpfi", "comb.blind", "comb.blind_order"))
    healthy = [audio_vector(_knocky_bearing_clip(f_r, 0, s, 0.0), SR, asset) for s in range(4)]
    inner = [audio_vector(_knocky_bearing_clip(f_r, 5.415 * f_r, s, 0.3, load_zone=True), SR, asset) for s in range(4)]
    assert min(v[comb] for v in inner) > max(v[comb] for v in healthy) + 0.5
    outer = audio_vector(_knocky_bearing_clip(f_r, 3.585 * f_r, 9, 0.3), SR, unknown)
    blank = audio_vector(_knocky_bearing_clip(f_r, 0, 9, 0.0), SR, unknown)
    assert outer[blind] > blank[blind] + 0.5
    assert abs(outer[order] * 12 - 3.585 * 0.985) < 0.1  # the order it found: BPFO, slipped
    assert outer[AUDIO_VECTOR_NAMES.index("comb.bpfo")] == 0.0  # no geometry: no targeted comb


def test_the_blind_comb_sees_an_eight_ball_bearing_near_a_whole_order() -> None:
    """A 6308's outer race (BPFO 3.07 orders) on a machine whose ``assets.json`` names no bearing: the
    blind comb finds it, though it lies near 3 x the shaft speed. Until 2026-12-06 orders within 0.08
    of a whole number were left out: only a sub-comb at 7.5 orders was found (1.4-1.7 against 1.9-2.0)."""
    unknown = {"asset_id": "M", "nominal_rpm": 1470}
    f_r = 24.5
    blind = AUDIO_VECTOR_NAMES.index("comb.blind")
    outer = [audio_vector(_knocky_bearing_clip(f_r, 3.07 / 0.985 * f_r, s, 0.3), SR, unknown) for s in range(4)]
    blank = [audio_vector(_knocky_bearing_clip(f_r, 0, s, 0.0), SR, unknown) for s in range(4)]
    assert min(v[blind] for v in outer) > max(v[blind] for v in blank) + 0.8


def test_running_speed_is_found_on_variable_speed_drives() -> None:
    """VFD machines of the randomised domain: the nameplate speed says little, the signal tells."""
    fleet = domain_fleet(12, seed=3)
    profiles = load_profiles(domain_registry_json(fleet, 3))
    renderer = DomainRenderer(fleet, 3)
    errors = []
    for spec in [s for s in draw_domain_specs(4, fleet, 3) if fleet[s.asset_index].extra["vfd"]][:12]:
        sample = renderer.render(spec, ("plc", "audio"))
        v = audio_vector(sample.clip.astype(np.float32) / 32768, SR, profiles[spec.asset_id])
        errors.append(abs(v[AUDIO_VECTOR_NAMES.index("speed.shaft_hz")] * 60 / sample.shaft_hz - 1))
    assert len(errors) >= 6 and np.median(errors) < 0.01 and np.mean(np.array(errors) < 0.03) >= 0.8


def test_a_direct_on_line_machine_is_read_in_its_slip_window() -> None:
    """A 2-pole 60 Hz compressor at 3520 rpm turns at 58.7-60 Hz; a louder tone train at multiples of
    53.4 Hz (a neighbour's, or the driven machine's) lies inside the old 90-106 % window and outside the
    motor's slip window."""
    window = AssetProfile.from_entry({"id": "K", "rpm": 3520, "poles": 2, "line_frequency_hz": 60}).slip_window_hz()
    assert window is not None and window[0] < 58.6 < 60.0 < window[1] and window[0] > 53.5
    assert AssetProfile.from_entry({"id": "K", "rpm": 3520}).slip_window_hz() == pytest.approx(window)
    # a nameplate speed that fits no synchronous speed, or a drive: no window, the search range as before
    assert AssetProfile.from_entry({"id": "X", "rpm": 2000, "line_frequency_hz": 50}).slip_window_hz() is None
    assert AssetProfile.from_entry({"id": "D", "rpm": 3520, "vfd": True}).slip_window_hz() is None
    t = np.arange(SR) / SR
    rng = np.random.default_rng(5)
    shaft, lobe = 58.9, 53.42
    x = sum(0.02 * np.sin(2 * np.pi * k * shaft * t + rng.uniform(0, 6.3)) for k in range(1, 4))
    x = x + sum(0.05 * np.sin(2 * np.pi * k * lobe * t + rng.uniform(0, 6.3)) for k in range(1, 13))
    x = (x + 0.01 * rng.standard_normal(SR)).astype(np.float32)
    entry = {"asset_id": "K", "asset_type": "screw compressor", "rpm": 3520, "poles": 2, "line_frequency_hz": 60}
    read = audio_vector(x, SR, AssetProfile.from_entry(entry))[AUDIO_VECTOR_NAMES.index("speed.shaft_hz")] * 60
    wide = audio_vector(x, SR, AssetProfile(asset_id="K", nominal_shaft_hz=3520 / 60))
    assert read == pytest.approx(shaft, rel=0.01)
    assert wide[AUDIO_VECTOR_NAMES.index("speed.shaft_hz")] * 60 == pytest.approx(lobe, rel=0.01)


def test_thermal_vector_is_size_and_unit_invariant() -> None:
    fleet = domain_fleet(3, seed=8)
    doc = domain_registry_json(fleet, 8)
    entry = doc["assets"][0]
    spec = next(s for s in draw_domain_specs(3, fleet, 8) if s.asset_index == 0 and s.fault == "electrical_overheating")
    frame = DomainRenderer(fleet, 8).render(spec, ("thermal",)).frame
    v = thermal_vector(frame, entry)
    kelvin = frame.astype(np.float32) / 100.0
    big = np.kron(kelvin, np.ones((2, 2), np.float32))
    meta = {"width": entry["frame"]["width"], "height": entry["frame"]["height"], "unit": "kelvin"}
    v_big = thermal_vector(big, {**entry, "frame": meta})
    close = [THERMAL_VECTOR_NAMES.index(n) for n in ("motor_body.mean_rise", "de_bearing.max_rise",
                                                     "terminal_box.hotspot_excess", "global.ambient_c_over_40")]
    np.testing.assert_allclose(v[close], v_big[close], rtol=0.05, atol=0.3)
    celsius = frame_to_celsius(frame, entry["frame"])  # this project's schema: unit centikelvin, scale 0.01
    assert 10 < float(np.median(celsius)) < 60
    np.testing.assert_allclose(frame_to_celsius(celsius), celsius)  # float °C: recognised by its range
    with pytest.raises(ThermalInputError, match="unit"):
        frame_to_celsius(np.full((16, 16), 1e6, np.float32))


@pytest.mark.parametrize("turn", [1, 3])
def test_thermal_vector_is_the_same_for_a_vertical_machine(turn: int) -> None:
    """A machine standing upright (or a camera mounted in portrait): the frame turned by 90 degrees
    and the boxes drawn on it give the same vector, the motor body's axial gradient included (it
    runs from the fan end to the drive end, up or down the frame); with region fitting on too."""
    fleet = domain_fleet(3, seed=8)
    doc = domain_registry_json(fleet, 8)
    for spec in [s for s in draw_domain_specs(3, fleet, 8) if s.asset_index < 3][::5]:
        entry = doc["assets"][spec.asset_index]
        frame = DomainRenderer(fleet, 8).render(spec, ("thermal",)).frame
        h, w = frame.shape

        def turned(box: list[float]) -> list[float]:
            x0, y0, x1, y1 = box
            return [y0, w - x1, y1, w - x0] if turn == 1 else [h - y1, x0, h - y0, x1]

        upright = {**entry, "regions": {k: turned(b) for k, b in entry["regions"].items()},
                   "frame": {**entry["frame"], "width": h, "height": w}}
        for fit in (False, True):
            v = thermal_vector(frame, entry, fit=fit)
            u = thermal_vector(np.rot90(frame, turn).copy(), upright, fit=fit)
            np.testing.assert_allclose(u, v, atol=1e-3, err_msg=f"{spec.fault}, fit {fit}")
        assert v[THERMAL_VECTOR_NAMES.index("global.orientation_known")] == 1.0


def test_a_second_machine_in_the_frame_does_not_change_the_vector() -> None:
    """A fixed camera that also sees a hotter machine beside this one: the ambient and the
    frame-wide values are read around this machine's boxes (``machine_roi``), so the vector is the
    one of the frame without the neighbour (it used to read the neighbour's heat as this machine's)."""
    fleet = domain_fleet(3, seed=8)
    doc = domain_registry_json(fleet, 8)
    spec = next(s for s in draw_domain_specs(3, fleet, 8) if s.asset_index == 0 and s.fault == "normal")
    entry = doc["assets"][0]
    frame = DomainRenderer(fleet, 8).render(spec, ("thermal",)).frame
    h, w = frame.shape
    background = int(np.median(frame))
    hot = np.full((h, 2 * w), background, np.uint16)  # the neighbour: +60 K, far enough to the right
    hot[h // 4: 3 * h // 4, w + w // 2: 2 * w - 4] = background + 6000
    wide = np.concatenate([frame, hot], axis=1)
    meta = {**entry["frame"], "width": 3 * entry["frame"]["width"]}
    alone = thermal_vector(np.concatenate([frame, np.full((h, 2 * w), background, np.uint16)], axis=1),
                           {**entry, "frame": meta}, fit=False)
    beside = thermal_vector(wide, {**entry, "frame": meta}, fit=False)
    np.testing.assert_allclose(beside, alone, atol=1e-4)
    # this machine's own hottest part (its driven machine, up to 70 K over ambient since 2026-12-06),
    # not the neighbour's +60 K
    assert beside[THERMAL_VECTOR_NAMES.index("global.frame_max_rise")] < 55.0


def test_plc_vector_is_relative_to_the_nameplate() -> None:
    raw = dict.fromkeys(plc_feature_names(), np.nan)
    raw.update({"motor_current_a.mean": 40.0, "speed_rpm.mean": 2950.0, "pressure_bar.mean": 3.0})
    values = np.array(list(raw.values()), np.float32)
    small = plc_vector(values, {"asset_id": "S", "rated_current_a": 50.0, "nominal_rpm": 2950, "pressure_nominal_bar": 4})
    assert small[PLC_VECTOR_NAMES.index("current.mean_over_rated")] == pytest.approx(0.8)
    assert small[PLC_VECTOR_NAMES.index("pressure.mean_over_nominal")] == pytest.approx(0.75)
    assert small[PLC_VECTOR_NAMES.index("missing.winding_temp")] == 1.0 and np.all(np.isfinite(small))
    # features v3: no rated current on the nameplate entry -> estimated from rated power and voltage
    kw = plc_vector(values, {"asset_id": "K", "rated_power_kw": 22.0, "line_frequency_hz": 50, "nominal_rpm": 2950})
    expected = 40.0 / (22_000 / (3**0.5 * 400 * 0.76))
    assert kw[PLC_VECTOR_NAMES.index("current.mean_over_rated")] == pytest.approx(expected, rel=1e-4)
    assert kw[PLC_VECTOR_NAMES.index("flag.rated_current_known")] == 0.0
    # a drive at 70 % speed: 49 % of nominal pressure is what the affinity laws expect (ratio 1)
    raw.update({"speed_rpm.mean": 0.7 * 2950, "pressure_bar.mean": 0.49 * 4})
    vfd = plc_vector(np.array(list(raw.values()), np.float32),
                     {"asset_id": "V", "nominal_rpm": 2950, "pressure_nominal_bar": 4, "vfd": True})
    assert vfd[PLC_VECTOR_NAMES.index("pressure.affinity_ratio")] == pytest.approx(1.0, rel=1e-3)
    assert vfd[PLC_VECTOR_NAMES.index("flag.vfd")] == 1.0


def test_a_drive_s_winding_is_read_as_its_fan_would_cool_it_at_nominal_speed() -> None:
    """A self-ventilated motor on a drive at half speed keeps 1/3 + 2/3 x 0.5^0.8 of its rated cooling: its
    winding-over-bearing difference is read times that share (the model learnt motors that cool the same at
    every speed). On the mains, at nominal speed, with forced cooling or without a nameplate speed: as measured."""
    raw = dict.fromkeys(plc_feature_names(), np.nan)
    raw.update({"motor_current_a.mean": 40.0, "speed_rpm.mean": 0.5 * 1480, "bearing_temp_c.mean": 50.0,
                "winding_temp_c.mean": 110.0})
    values = np.array(list(raw.values()), np.float32)
    diff = PLC_VECTOR_NAMES.index("temp.winding_minus_bearing")
    winding = PLC_VECTOR_NAMES.index("temp.winding_c_over_100")

    def read(**entry: object) -> np.ndarray:
        return plc_vector(values, {"asset_id": "F", "rated_current_a": 50.0, **entry})

    share = 1 / 3 + 2 / 3 * 0.5**0.8
    slow = read(nominal_rpm=1480, vfd=True)
    assert slow[diff] == pytest.approx(60.0 * share, rel=1e-5)
    assert slow[winding] == pytest.approx((50.0 + 60.0 * share) / 100.0, rel=1e-5)
    for as_measured in (read(nominal_rpm=1480), read(nominal_rpm=1480, vfd=True, cooling="IC416 (blower)"),
                        read(nominal_rpm=740, vfd=True), read(vfd=True),
                        read(nominal_rpm=1480, vfd=True, asset_type="Motor spindle")):
        assert as_measured[diff] == pytest.approx(60.0)


def test_messages_carry_the_vector_and_input_array_reads_it() -> None:
    frame = np.full((120, 160), 30_000, np.uint16)
    frame[50:80, 60:110] = 31_500  # a machine 15 K over its hall
    thermal = thermal_features_message("PMP-01", "pump", 1_000, frame)
    audio = audio_features_message("PMP-01", "pump", 1_000, _bearing_clip(24.5, 3.585, 0), SR,
                                   asset={"asset_id": "PMP-01", "nominal_rpm": 1470})
    assert thermal.features_version == FEATURES_VERSION and thermal.vector.shape == (len(THERMAL_VECTOR_NAMES),)
    for msg, modality in ((thermal, "thermal"), (audio, "audio")):
        back = decode_message(encode_message(msg))
        assert back == msg
        np.testing.assert_array_equal(input_array(modality, back), msg.vector)
    old = thermal.model_copy(update={"features_version": 1, "vector": np.zeros(0, np.float32)})
    with pytest.raises(InputMismatchError, match="upgrade"):
        input_array("thermal", old)
    celsius = np.full((60, 80), 26.85, np.float32)
    celsius[25:40, 30:55] = 41.85
    any_unit = thermal_message_any_unit("X", "pump", 0, celsius)
    np.testing.assert_allclose(any_unit.vector, thermal_vector(celsius), atol=1e-4)
