"""Registry, event-time, frame and clip checks."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from linewatch.contract import DeadLetterReason as R
from pipeline.decoders import AlarmEvent, TagSample
from pipeline.validation import (
    AssetRegistry,
    EventTimePolicy,
    InvalidRecord,
    check_clip,
    check_frame,
    repair_frame,
)

REGISTRY = {
    "schema_version": 1,
    "assets": [
        {
            "asset_id": "PMP-01", "asset_type": "pump", "nominal_shaft_hz": 24.4,
            "bearing_frequencies_hz": {"bpfo": 87.3, "bpfi": 132.1}, "bearing_orders": {"bpfo": 3.58},
            "resonance_band_hz": [2800.0, 4200.0],
            "regions": {"de_bearing": [82, 49, 94, 71]},
            "tags": [
                {"tag": "PMP-01.bearing_temp_c", "name": "bearing_temp_c", "unit": "degC", "valid_min": -20.0,
                 "valid_max": 150.0},
                {"tag": "PMP-01.speed_rpm", "name": "speed_rpm", "unit": "rpm", "valid_min": 0.0, "valid_max": 1650.0},
            ],
        }
    ],
}


@pytest.fixture
def registry(tmp_path: Path) -> AssetRegistry:
    path = tmp_path / "assets.json"
    path.write_text(json.dumps(REGISTRY))
    return AssetRegistry.from_file(path)


def sample(value: float, quality: str = "Good", unit: str = "degC", tag: str = "bearing_temp_c",
           asset: str = "PMP-01") -> TagSample:
    return TagSample(asset, tag, 1_000, value, quality, unit)


def test_registry_loads_the_simulator_schema(registry: AssetRegistry) -> None:
    info = registry["PMP-01"]
    assert registry.ids() == ["PMP-01"] and info.asset_type == "pump"
    assert info.tags["speed_rpm"].valid_max == 1650.0
    assert info.regions["de_bearing"] == (82, 49, 94, 71)
    assert info.acoustics.resonance_band_hz == (2800.0, 4200.0)
    assert info.acoustics.frequencies(25.0) == {"bpfo": pytest.approx(89.5)}


def test_registry_reads_assets_json_as_inspect_does(caplog: pytest.LogCaptureFixture) -> None:
    """The forms an assets.json takes when users write it, which ``linewatch inspect`` reads, load in
    the pipeline too (they used to stop the job at start): machines keyed by id, a ``name`` instead
    of ``asset_id``, ``type``, boxes as ``{x, y, w, h}``, region names of their own, boxes as
    fractions of the frame, boxes for another frame size; a name that is no part is logged."""
    doc = {"frame": {"width": 320, "height": 240}, "assets": {
        "P-1": {"type": "Pump", "rpm": 1480, "regions": {"Motor Body": {"x": 146, "y": 80, "w": 128, "h": 84},
                                                         "DE bearing": [124, 96, 150, 142], "lamp": [0, 0, 10, 10]}}}}
    info = AssetRegistry.from_dict(doc)["P-1"]
    assert info.asset_type == "pump" and info.nominal_shaft_hz == pytest.approx(1480 / 60)
    assert info.regions == {"motor_body": (73, 40, 137, 82), "de_bearing": (62, 48, 75, 71), "lamp": (0, 0, 5, 5)}
    assert "lamp" in caplog.text and "no part the thermal model reads" in caplog.text
    listed = AssetRegistry.from_dict({"machines": [{"name": "F-2", "asset_type": "fan",
                                                    "regions": {"junction_box": [0.5, 0.1, 0.6, 0.2]}}]})
    assert listed.ids() == ["F-2"] and listed["F-2"].regions == {"terminal_box": (80, 12, 96, 24)}


def test_missing_registry_file_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="run the simulator"):
        AssetRegistry.from_file(tmp_path / "assets.json")


def test_tag_checks(registry: AssetRegistry) -> None:
    def reason(s: TagSample) -> str | None:
        problem = registry.check_tag_sample(s, "plc/a.csv:2")
        return None if problem is None else problem.reason.value

    assert reason(sample(60.0)) is None
    assert reason(sample(60.0, unit="°C")) is None  # alias of degC
    assert reason(sample(60.0, asset="XYZ-99")) == "unknown_asset"
    assert reason(sample(60.0, tag="oil_level")) == "schema_error"
    assert reason(sample(60.0, unit="degF")) == "out_of_range"
    assert reason(sample(151.0)) == "out_of_range"
    assert reason(sample(-21.0, quality="Uncertain")) == "out_of_range"
    assert reason(sample(-999.0, quality="Bad")) is None  # kept, flagged by its quality
    assert reason(sample(math.nan)) is None  # missing value: not a range violation
    problem = registry.check_tag_sample(sample(151.0), "plc/a.csv:2")
    assert isinstance(problem, InvalidRecord)
    dead = problem.to_dead_letter("pipeline.plc", failed_at_ms=7)
    assert (dead.asset_id, dead.event_time_ms, dead.raw_ref) == ("PMP-01", 1_000, "plc/a.csv:2")


def test_alarm_of_unknown_asset(registry: AssetRegistry) -> None:
    event = AlarmEvent("ZZZ-01", 0, "A101", "ACTIVE", "HIGH BEARING TEMP", 80.0, "degC")
    assert registry.check_alarm(event, "alarms/a.log:1").reason is R.UNKNOWN_ASSET
    assert registry.check_alarm(AlarmEvent("PMP-01", 0, "A101", "ACTIVE", "X"), "a:1") is None


def test_one_event_time_policy() -> None:
    policy = EventTimePolicy(future_tolerance_ms=1_000)
    now = 100_000
    assert policy.future(101_000, now, "a:1") is None  # at the tolerance
    assert policy.future(101_001, now, "a:2", "PMP-01").reason is R.FUTURE
    assert policy.after_last(50_000, None, "thermal", "f", "PMP-01") is None
    assert policy.after_last(50_001, 50_000, "thermal", "f", "PMP-01") is None
    assert policy.after_last(50_000, 50_000, "thermal", "f", "PMP-01").reason is R.DUPLICATE
    assert policy.after_last(49_999, 50_000, "thermal", "f", "PMP-01").reason is R.LATE
    # PLC windows close up to the file's end (else its newest row), never past the clock
    assert policy.watermark(newest_ms=90_000, end_ms=None, now_ms=now) == 90_000
    assert policy.watermark(newest_ms=90_000, end_ms=95_000, now_ms=now) == 94_999
    assert policy.watermark(newest_ms=10**15, end_ms=None, now_ms=now) == now
    assert policy.watermark(newest_ms=None, end_ms=None, now_ms=now) is None


def test_frame_checks() -> None:
    good = np.full((120, 160), 30_000, np.uint16)
    good[50:80, 60:110] = 31_500  # a machine 15 K over its hall
    assert check_frame(good, "f") is None
    assert check_frame(good.T, "f").reason is R.BAD_SHAPE
    assert check_frame(good.astype(np.float32), "f").reason is R.BAD_SHAPE
    dead_pixels = good.copy()
    dead_pixels.reshape(-1)[:192] = 0  # 1 % of the pixels: dead pixels, read from their neighbours
    assert check_frame(dead_pixels, "f") is None
    repaired, n = repair_frame(dead_pixels)
    assert n == 192 and repaired.dtype == np.uint16 and np.array_equal(repaired, good)
    assert repair_frame(good) == (good, 0)
    dead_pixels.reshape(-1)[192] = 0  # one more: a broken camera or a wrong unit, refused
    problem = check_frame(dead_pixels, "f", asset_id="PMP-01", event_time_ms=3)
    assert problem.reason is R.OUT_OF_RANGE and problem.asset_id == "PMP-01" and "-273.1" in problem.detail
    hot = good.copy()
    hot.reshape(-1)[:193] = 50_001
    assert check_frame(hot, "f").reason is R.OUT_OF_RANGE


def test_clip_checks() -> None:
    clip = (0.2 * np.sin(np.arange(16_000) / 5.0)).astype(np.float32)
    assert check_clip(clip, 16_000, "a") is None
    assert check_clip(clip, 44_100, "a").detail == "expected 16000 Hz mono of 16000 frames, got 44100 Hz mono of 16000 frames"
    assert check_clip(np.stack([clip, clip], axis=1), 16_000, "a").reason is R.BAD_SHAPE
    assert check_clip(clip[:100], 16_000, "a").reason is R.BAD_SHAPE
    with_nan = clip.copy()
    with_nan[3] = np.nan
    assert check_clip(with_nan, 16_000, "a").reason is R.OUT_OF_RANGE
    assert check_clip(np.clip(clip * 10, -1, 1), 16_000, "a").reason is R.OUT_OF_RANGE
