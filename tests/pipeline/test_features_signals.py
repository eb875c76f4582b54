"""Thermal and audio features against values checked by hand, and the contract messages."""

from __future__ import annotations

import numpy as np
import pytest

from linewatch.contract import AudioFeatures, PlcFeatures, ThermalFeatures, decode_message, encode_message
from pipeline.features.audio_features import (
    AUDIO_STAT_NAMES,
    AssetAcoustics,
    audio_features,
    audio_stats,
    hz_to_mel,
    logmel,
    mel_filterbank,
    mel_to_hz,
)
from pipeline.features import FEATURES_VERSION
from pipeline.features.messages import audio_features_message, plc_features_message, thermal_features_message
from pipeline.features.plc_window import PlcWindowBuffer, plc_feature_names
from pipeline.features.thermal_features import (
    THERMAL_MODEL_INPUT_SHAPE,
    ThermalBaseline,
    normalize_frame,
    thermal_stats,
)

SR = 16_000
T = np.arange(SR) / SR
AMBIENT_CK = 29_315  # 20 °C


def frame_with_hot_rectangle() -> np.ndarray:
    frame = np.full((120, 160), AMBIENT_CK, np.uint16)
    frame[30:50, 100:140] = 35_315  # 80 °C, rows 30..49, columns 100..139: 800 pixels
    return frame


def test_hot_rectangle_by_hand() -> None:
    s = thermal_stats(frame_with_hot_rectangle())
    assert s["max_c"] == pytest.approx(80.0)
    assert s["ambient_c"] == pytest.approx(20.0)
    assert s["max_above_ambient_k"] == pytest.approx(60.0)
    assert s["hotspot_area_frac"] == 800 / 19_200
    assert s["hotspot_cx"] == pytest.approx(120 / 160)  # centre of columns 100..139 is x = 120 (pixel edges)
    assert s["hotspot_cy"] == pytest.approx(40 / 120)
    assert s["mean_c"] == pytest.approx(20.0 + 60.0 * 800 / 19_200)
    assert s["p99_c"] == pytest.approx(80.0)  # 4.2 % of the pixels are hot
    assert s["baseline_available"] == 0.0 and s["delta_baseline_max_k"] == 0.0
    assert all(np.isfinite(v) for v in s.values())


def test_no_hotspot_centroid_is_the_hottest_pixel() -> None:
    frame = np.full((120, 160), AMBIENT_CK, np.uint16)
    frame[10, 20] = AMBIENT_CK + 500  # 5 K: below the 15 K hotspot delta
    s = thermal_stats(frame)
    assert s["hotspot_area_frac"] == 0.0
    assert (s["hotspot_cx"], s["hotspot_cy"]) == (20.5 / 160, 10.5 / 120)


def test_baseline_delta_and_regions() -> None:
    baseline = ThermalBaseline(alpha=0.1, min_frames=3)
    cool = np.full((120, 160), AMBIENT_CK, np.uint16)
    for _ in range(3):
        baseline.update(cool)
    assert baseline.baseline_ck is not None
    regions = {"de_bearing": (100, 30, 140, 50), "terminal_box": (0, 0, 10, 10), "not_a_region": (0, 0, 1, 1)}
    s = thermal_stats(frame_with_hot_rectangle(), baseline.baseline_ck, regions)
    assert s["baseline_available"] == 1.0
    assert s["delta_baseline_max_k"] == pytest.approx(60.0)
    assert s["delta_baseline_mean_k"] == pytest.approx(60.0 * 800 / 19_200, rel=1e-6)
    assert s["de_bearing.max_c"] == pytest.approx(80.0) and s["de_bearing.mean_c"] == pytest.approx(80.0)
    assert s["terminal_box.max_c"] == pytest.approx(20.0)
    assert "not_a_region.max_c" not in s
    baseline.update(frame_with_hot_rectangle())
    assert float(baseline.baseline_ck[40, 120]) == pytest.approx(AMBIENT_CK + 0.1 * 6_000)


def test_normalized_frame_is_relative_to_ambient() -> None:
    frame = frame_with_hot_rectangle()
    n = normalize_frame(frame)
    assert n.dtype == np.float16 and n.shape == THERMAL_MODEL_INPUT_SHAPE
    assert float(n[0, 0]) == 0.0 and float(n[40, 120]) == pytest.approx(2.4, abs=1e-3)  # 60 K / 25 K
    warmer_room = normalize_frame(frame + np.uint16(500))
    assert np.array_equal(n, warmer_room)  # a uniform offset (room, camera) does not change the input
    very_hot = frame.copy()
    very_hot[0, 0] = 50_000
    assert float(normalize_frame(very_hot)[0, 0]) == 4.0


def tone(freq: float, amplitude: float = 0.5) -> np.ndarray:
    return (amplitude * np.sin(2 * np.pi * freq * T)).astype(np.float32)


def mel_bands_covering(freq: float) -> set[int]:
    """Mel filters whose triangle contains ``freq`` (Slaney scale, 0–8 kHz, 64 bands)."""
    edges = mel_to_hz(np.linspace(hz_to_mel(0.0), hz_to_mel(8_000.0), 66))
    return {b for b in range(64) if edges[b] < freq < edges[b + 2]}


@pytest.mark.parametrize("freq", [440.0, 1_000.0, 3_150.0])
def test_sine_lands_in_its_mel_band_and_sets_the_centroid(freq: float) -> None:
    mel = logmel(tone(freq))
    assert mel.shape == (64, 101) and mel.dtype == np.float32
    assert int(np.argmax(mel[:, 10:-10].mean(axis=1))) in mel_bands_covering(freq)
    stats = audio_stats(tone(freq))
    assert stats["spectral_centroid_hz"] == pytest.approx(freq, rel=0.02)
    assert stats["rms"] == pytest.approx(0.5 / np.sqrt(2), rel=1e-3)
    assert stats["crest_factor"] == pytest.approx(np.sqrt(2), rel=1e-3)
    assert stats["clipping_frac"] == 0.0


def test_filterbank_is_slaney_normalised() -> None:
    fb = mel_filterbank()
    assert fb.shape == (64, 257) and not fb.flags.writeable
    assert np.all(fb.sum(axis=1) > 0)  # no empty band at n_fft 512
    # Slaney normalisation: each triangle has area 1 over its width in Hz (approximately on the FFT grid)
    freqs = np.fft.rfftfreq(512, 1 / SR)
    areas = fb.sum(axis=1) * (freqs[1] - freqs[0])
    assert np.allclose(areas, 1.0, rtol=0.11) and abs(areas[32:].mean() - 1.0) < 0.01


def bearing_clip(rate_hz: float, resonance_hz: float = 3_500.0, noise: float = 0.02) -> np.ndarray:
    """Impulses at ``rate_hz`` ringing a damped resonance, in white noise."""
    rng = np.random.default_rng(7)
    impulses = np.zeros(SR)
    impulses[(np.arange(0, SR, SR / rate_hz)).astype(int)] = 1.0
    ring = np.exp(-T[:400] * 600.0) * np.sin(2 * np.pi * resonance_hz * T[:400])
    x = np.convolve(impulses, ring)[:SR] * 0.3 + noise * rng.standard_normal(SR)
    return x.astype(np.float32)


def test_impulse_train_gives_an_envelope_peak_at_its_rate() -> None:
    acoustics = AssetAcoustics(bearing_frequencies_hz={"bpfo": 87.0, "bpfi": 131.0, "bsf": 56.0, "ftf": 11.5},
                               resonance_band_hz=(2_800.0, 4_200.0))
    stats = audio_stats(bearing_clip(87.0), SR, acoustics)
    assert stats["env_peak1_hz"] == pytest.approx(87.0, abs=1.0)
    assert {round(stats["env_peak2_hz"]), round(stats["env_peak3_hz"])} <= {174, 261}  # harmonics
    assert stats["env_peak1_rel"] > 20
    assert stats["env_ratio_bpfo"] > 0.3 and stats["env_ratio_bpfi"] < 0.01
    assert stats["bearing_freqs_available"] == 1.0
    noise = np.random.default_rng(3).standard_normal(SR).astype(np.float32) * np.float32(0.02)
    healthy = audio_stats(noise + tone(1_000, 0.05), SR, acoustics)
    assert healthy["env_ratio_bpfo"] < 0.05
    assert healthy["spectral_kurtosis_max"] < 1.0 < 3.0 < stats["spectral_kurtosis_max"]


def test_bearing_frequencies_follow_the_shaft_speed_when_orders_are_known() -> None:
    entry = {"bearing_frequencies_hz": {"bpfo": 80.0}, "bearing_orders": {"bpfo": 3.5},
             "resonance_band_hz": [2_800, 4_200]}
    at_speed = audio_stats(bearing_clip(87.5), SR, entry, shaft_hz=25.0)  # 3.5 × 25 Hz
    nominal = audio_stats(bearing_clip(87.5), SR, entry)
    assert at_speed["env_ratio_bpfo"] > 0.3 > nominal["env_ratio_bpfo"]


def test_stats_have_fixed_keys_and_are_finite_even_for_silence() -> None:
    for clip in (np.zeros(SR, np.float32), tone(300.0), bearing_clip(50.0)):
        mel, stats = audio_features(clip)
        assert tuple(stats) == AUDIO_STAT_NAMES
        assert all(np.isfinite(v) for v in stats.values()) and np.all(np.isfinite(mel))
        assert np.array_equal(mel, logmel(clip)) and stats == audio_stats(clip)


def test_clipping_is_measured() -> None:
    clipped = np.clip(tone(200.0, amplitude=2.0), -1.0, 1.0)
    assert audio_stats(clipped)["clipping_frac"] > 0.5


def test_messages_round_trip_through_the_contract() -> None:
    buf = PlcWindowBuffer("PMP-01")
    for ms in range(0, 2_000, 100):
        buf.add("speed_rpm", ms, 1480.0)
    window = buf.advance(1_999)[-1]
    plc = plc_features_message(window, "pump", source="plc/a.csv", ingest_time_ms=5)
    thermal = thermal_features_message("PMP-01", "pump", 1_000, frame_with_hot_rectangle())
    audio = audio_features_message("PMP-01", "pump", 1_000, bearing_clip(87.0),
                                   asset={"bearing_frequencies_hz": {"bpfo": 87.0}})
    for msg, cls in ((plc, PlcFeatures), (thermal, ThermalFeatures), (audio, AudioFeatures)):
        assert isinstance(msg, cls) and msg.features_version == FEATURES_VERSION and msg.vector.size
        back = decode_message(encode_message(msg))
        if cls is PlcFeatures:  # tags without values are NaN, and the contract's == treats NaN != NaN
            assert np.array_equal(back.values, msg.values, equal_nan=True)
            np.testing.assert_array_equal(back.vector, msg.vector)
            assert back.model_dump(exclude={"values", "vector"}) == msg.model_dump(exclude={"values", "vector"})
        else:
            assert back == msg
    assert plc.feature_names == plc_feature_names() and plc.event_time_ms == plc.window_end_ms == 2_000
    assert thermal.frame.dtype == np.float16 and audio.logmel.shape == (64, 101)
