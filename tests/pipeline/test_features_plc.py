"""PLC window features against hand-computed values, and the incremental window buffer."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from pipeline.decoders import AlarmEvent, TagSample
from pipeline.features import FEATURES_VERSION
from pipeline.features.plc_window import (
    ALARM_FAMILIES,
    PLC_TAGS,
    PlcWindowBuffer,
    plc_feature_names,
    plc_window_features,
    plc_windows,
)


def feature_dict(values: np.ndarray) -> dict[str, float]:
    return dict(zip(plc_feature_names(), (float(v) for v in values)))


def test_names_are_fixed_and_match_the_vector() -> None:
    names = plc_feature_names()
    assert len(names) == len(set(names)) == len(PLC_TAGS) * 4 + len(ALARM_FAMILIES) + 2
    assert names[:4] == ["motor_current_a.mean", "motor_current_a.std", "motor_current_a.max", "motor_current_a.slope"]
    out = plc_window_features(np.arange(3) * 100, np.zeros((3, len(PLC_TAGS))), [])
    assert out.dtype == np.float32 and out.shape == (len(names),)
    assert FEATURES_VERSION >= 1  # the window features are unchanged since v1; the version is the vectors'


def test_linear_ramp_by_hand() -> None:
    # bearing temp 40, 41, ..., 49 °C at t = 0, 1, ..., 9 s (a ramp of 1 K/s)
    t = np.arange(10) * 1000
    v = np.full((10, len(PLC_TAGS)), np.nan)
    v[:, PLC_TAGS.index("bearing_temp_c")] = 40.0 + np.arange(10)
    f = feature_dict(plc_window_features(t, v, []))
    assert f["bearing_temp_c.mean"] == 44.5
    # population std of 0..9: sqrt(sum((k - 4.5)^2) / 10) = sqrt(82.5 / 10)
    assert f["bearing_temp_c.std"] == pytest.approx(math.sqrt(8.25), rel=1e-6)
    assert f["bearing_temp_c.max"] == 49.0
    assert f["bearing_temp_c.slope"] == pytest.approx(1.0, rel=1e-6)
    assert f["n_samples"] == 10 and f["bad_quality_frac"] == 0.0
    # a tag without any value: every statistic is NaN, never a made-up number
    assert all(math.isnan(f[f"speed_rpm.{s}"]) for s in ("mean", "std", "max", "slope"))


def test_slope_is_per_second_and_ignores_nan() -> None:
    t = np.array([0, 500, 1000, 1500, 2000])
    v = np.full((5, len(PLC_TAGS)), np.nan)
    v[:, 0] = [10.0, np.nan, 11.0, 20.0, 12.0]  # the 20 at t=1.5 s is flagged Bad below
    bad = np.zeros(5, dtype=bool)
    bad[3] = True
    f = feature_dict(plc_window_features(t, v, ["A101", "A900", "X1"], bad_mask=bad))
    assert f["motor_current_a.slope"] == pytest.approx(1.0)  # (10, 11, 12) over (0, 1, 2) s
    assert f["motor_current_a.mean"] == pytest.approx(11.0) and f["motor_current_a.max"] == 12.0
    assert f["bad_quality_frac"] == pytest.approx(0.2)
    assert (f["alarms.A1xx"], f["alarms.A9xx"], f["alarms.other"], f["alarms.A2xx"]) == (1.0, 1.0, 1.0, 0.0)


def test_single_value_has_no_slope() -> None:
    v = np.full((1, len(PLC_TAGS)), np.nan)
    v[0, 1] = 1480.0
    f = feature_dict(plc_window_features(np.array([0]), v))
    assert f["speed_rpm.mean"] == 1480.0 and f["speed_rpm.std"] == 0.0 and math.isnan(f["speed_rpm.slope"])


def samples_10hz(asset: str, seconds: float, start_ms: int = 0) -> list[TagSample]:
    out = []
    for k in range(int(seconds * 10)):
        ms = start_ms + k * 100
        out.append(TagSample(asset, "motor_current_a", ms, 10.0 + ms / 1000.0, "Good", "A"))
        out.append(TagSample(asset, "run_state", ms, 1.0, "Good", "bool"))
    return out


def test_buffer_emits_each_window_once_when_the_watermark_passes_its_end() -> None:
    buf = PlcWindowBuffer("PMP-01")
    for s in samples_10hz("PMP-01", 15.0):
        buf.add_sample(s)
    assert buf.advance(998) == []  # window [-9 s, 1 s) is complete only at watermark 999
    first = buf.advance(999)
    assert [(w.start_ms, w.end_ms, w.n_samples) for w in first] == [(-9_000, 1_000, 20)]
    windows = buf.advance(12_000)
    assert [w.end_ms for w in windows] == list(range(2_000, 13_000, 1_000))
    full = windows[8]  # [0 s, 10 s): 100 ticks of two tags
    assert (full.start_ms, full.end_ms, full.n_samples) == (0, 10_000, 200)
    f = full.as_dict()
    assert f["motor_current_a.slope"] == pytest.approx(1.0) and f["motor_current_a.mean"] == pytest.approx(14.95)
    assert buf.advance(12_000) == []  # nothing twice
    # only what later windows need is kept: samples from 3 s on (next window [3 s, 13 s)) up to 14.9 s
    assert len(buf) == 120 * 2


def test_buffer_counts_alarm_activations_per_family() -> None:
    buf = PlcWindowBuffer("PMP-01")
    for s in samples_10hz("PMP-01", 3.0):
        buf.add_sample(s)
    buf.add_alarm_event(AlarmEvent("PMP-01", 1_500, "A101", "ACTIVE", "HIGH BEARING TEMP", 82.4, "degC"))
    buf.add_alarm_event(AlarmEvent("PMP-01", 1_600, "A101", "ACK", "HIGH BEARING TEMP", 82.4, "degC"))
    buf.add_alarm_event(AlarmEvent("PMP-01", 2_500, "A900", "ACTIVE", "COMMS RETRY", 0.0, "-"))
    windows = {w.end_ms: w for w in buf.flush()}
    assert windows[2_000].alarm_counts["A1xx"] == 1 and windows[2_000].alarm_counts["A9xx"] == 0
    assert windows[3_000].alarm_counts == {**dict.fromkeys(ALARM_FAMILIES, 0), "A1xx": 1, "A9xx": 1}


def test_gaps_and_late_samples() -> None:
    buf = PlcWindowBuffer("PMP-01")
    buf.add("speed_rpm", 500, 1500.0)
    buf.add("speed_rpm", 60_500, 1500.0)  # a minute later: no empty windows in between
    ends = [w.end_ms for w in buf.advance(70_000)]
    assert ends == list(range(1_000, 11_000, 1_000)) + list(range(61_000, 71_000, 1_000))
    assert buf.add("speed_rpm", 59_000, 1.0) is False and buf.dropped_late == 1
    assert buf.add("speed_rpm", 61_000, 1.0) is True  # its window ending at 71 s is still open
    assert buf.add("no_such_tag", 65_000, 1.0) is False


def test_buffer_memory_is_capped() -> None:
    buf = PlcWindowBuffer("PMP-01", max_samples=50)
    for k in range(200):
        buf.add("speed_rpm", k * 10, float(k))
    assert len(buf) == 50 and buf.dropped_overflow == 150


def test_state_round_trip_gives_the_same_windows() -> None:
    samples = samples_10hz("PMP-01", 20.0)
    ref = PlcWindowBuffer("PMP-01")
    other = PlcWindowBuffer("PMP-01")
    for s in samples[:150]:
        ref.add_sample(s)
        other.add_sample(s)
    other.add("bearing_temp_c", 1_000, float("nan"), bad=True)
    ref.add("bearing_temp_c", 1_000, float("nan"), bad=True)
    ref.advance(5_000)
    other.advance(5_000)
    restored = PlcWindowBuffer.from_state(json.loads(json.dumps(other.to_state())))
    for s in samples[150:]:
        ref.add_sample(s)
        restored.add_sample(s)
    a, b = ref.flush(), restored.flush()
    assert [w.end_ms for w in a] == [w.end_ms for w in b]
    assert all(np.array_equal(x.values, y.values, equal_nan=True) for x, y in zip(a, b))


def test_batch_helper_matches_the_incremental_buffer() -> None:
    samples = samples_10hz("PMP-01", 30.0) + samples_10hz("CNV-03", 12.0, start_ms=5_000)
    alarms = [AlarmEvent("PMP-01", 7_000, "A201", "ACTIVE", "HIGH VIBRATION", 7.5, "mm/s")]
    batch = plc_windows(list(reversed(samples)), alarms)
    assert sorted(batch) == ["CNV-03", "PMP-01"]
    buf = PlcWindowBuffer("PMP-01")
    for s in samples:
        if s.asset_id == "PMP-01":
            buf.add_sample(s)
    buf.add_alarm_event(alarms[0])
    incremental = buf.flush()
    assert [w.end_ms for w in batch["PMP-01"]] == [w.end_ms for w in incremental]
    assert all(np.array_equal(x.values, y.values, equal_nan=True) for x, y in zip(batch["PMP-01"], incremental))
    assert sum(w.alarm_counts["A2xx"] for w in batch["PMP-01"]) == 10  # one activation seen by 10 windows
