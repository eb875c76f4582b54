"""Dead pixels of a thermal camera in the live line: a few are read from their neighbours (the frame
is kept), many refuse the frame with a reason (the ingestor the Flink function runs, real landing
zone)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from linewatch.contract import DeadLetter, DeadLetterReason
from pipeline.features.dead_pixels import fill_pixels
from pipeline.features.thermal_regions import THERMAL_VECTOR_NAMES, frame_to_celsius
from tests.pipeline.conftest import tiff_bytes
from tests.pipeline.test_no_signal import read as read_blobs
from tests.pipeline.test_thermal_reference import motor_frame

DE_HOTSPOT = THERMAL_VECTOR_NAMES.index("de_bearing.hotspot_excess")


def read(tmp_path: Path, frames: list[np.ndarray]) -> list[tuple[object, dict[str, int]]]:
    """Each frame as the first of its machine (its own landing zone, ingestor and asset state):
    (the message, the counters)."""
    return read_blobs(tmp_path, [("thermal", tiff_bytes(frame)) for frame in frames])


def test_a_few_dead_pixels_are_read_from_their_neighbours_and_the_frame_is_kept(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    clean = motor_frame(rng, 20.0)
    clean[60:66, 112:116] += 1_500  # a worn DE bearing's hot spot, 15 K over the housing
    dead = clean.copy()
    dead[62, 113] = 0  # a dead pixel in the hot spot, a stuck one in the body, one saturated
    dead[65, 80] = 0
    dead[10, 10] = 65_535
    (ok, _), (repaired, counters) = read(tmp_path, [clean, dead])
    assert not isinstance(repaired, DeadLetter)
    assert counters.get("thermal_dead_pixels_filled") == 3 and repaired.stats["dead_pixels"] == 3.0
    assert ok.stats["dead_pixels"] == 0.0
    assert abs(repaired.vector[DE_HOTSPOT] - ok.vector[DE_HOTSPOT]) < 0.5  # the hot spot is still there
    assert np.allclose(repaired.vector, ok.vector, atol=0.5)


def test_more_dead_pixels_than_a_camera_may_have_refuse_the_frame_with_the_count(tmp_path: Path) -> None:
    frame = motor_frame(np.random.default_rng(6), 20.0)
    frame.reshape(-1)[::50] = 0  # 2 % of the pixels
    [(letter, counters)] = read(tmp_path, [frame])
    assert isinstance(letter, DeadLetter) and letter.reason is DeadLetterReason.OUT_OF_RANGE
    assert "384 of 19200 pixels (2.0%)" in letter.detail and "up to 1%" in letter.detail
    assert "thermal_dead_pixels_filled" not in counters


def test_inspect_and_the_live_line_fill_alike() -> None:
    frame = motor_frame(np.random.default_rng(7), 20.0).astype(np.float32)
    frame[60, 113] = 0
    notes: list[str] = []
    celsius = frame_to_celsius(frame.astype(np.uint16), notes=notes)  # 0 cK: -273 °C, no temperature
    expected = fill_pixels(frame, frame == 0)[60, 113] / 100 - 273.15
    assert abs(float(celsius[60, 113]) - expected) < 1e-3 and "neighbours" in notes[0]
