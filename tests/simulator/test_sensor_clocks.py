"""Real-time mode's sensor clocks: independent phases per asset and sensor (the default, as on a
real line) or one shared clock (``sensor_clocks="synchronised"``, the ingestion job's worst case)."""

from __future__ import annotations

import json
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from linewatch.simulator import Factory, SimulatorConfig
from linewatch.simulator import SensorPhases


def test_phases_are_per_asset_and_sensor_and_reproducible() -> None:
    cfg = SimulatorConfig(seed=9)
    assert cfg.sensor_clocks == "independent"  # the default: real devices do not share a clock
    phases = Factory(cfg, n_assets=10).sensor_phases()
    assert phases == Factory(cfg, n_assets=10).sensor_phases()  # deterministic under the seed
    assert phases != Factory(cfg.model_copy(update={"seed": 10}), n_assets=10).sensor_phases()
    for kind, period in (("thermal", 1 / cfg.thermal_fps), ("audio", cfg.audio_chunk_s), ("plc", cfg.roll_seconds)):
        values = [getattr(p, kind) for p in phases.values()]
        assert all(0.0 <= v < period for v in values)
        assert len(set(values)) == 10  # every asset on its own phase
        assert max(values) - min(values) > period / 3
    assert all(len({p.thermal * cfg.thermal_fps, p.audio, p.plc}) == 3 for p in phases.values())
    synced = Factory(cfg.model_copy(update={"sensor_clocks": "synchronised"}), n_assets=10).sensor_phases()
    assert set(synced.values()) == {SensorPhases()}


def _stamp_s(value: str, start: datetime) -> float:
    return (pd.Timestamp(value).to_pydatetime() - start).total_seconds()


@pytest.mark.parametrize("clocks", ["independent", "synchronised"])
def test_realtime_files_close_at_each_sensors_phase_none_lost_or_reordered(tmp_path: Path, clocks: str) -> None:
    cfg = SimulatorConfig(seed=3, sensor_clocks=clocks)  # type: ignore[arg-type]
    factory = Factory(cfg, n_assets=3)
    closed: dict[str, float] = {}
    t0 = time.monotonic()
    duration = 3.2
    summary = factory.run_realtime(tmp_path, duration_s=duration,
                                   on_file=lambda p, k: closed.setdefault(str(p.relative_to(tmp_path)),
                                                                          time.monotonic() - t0))
    phases = factory.sensor_phases()
    lines = [json.loads(line) for m in sorted((tmp_path / "manifests").glob("*.jsonl"))
             for line in m.read_text().splitlines()]
    per_sensor: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for line in lines:
        per_sensor[(line["asset_id"], "plc" if line["kind"] == "alarms" else line["kind"])].append(line)
    start = summary.start_time
    frame_offsets: dict[str, list[float]] = {}
    for aid, ph in phases.items():
        frames = per_sensor[(aid, "thermal")]
        clips = per_sensor[(aid, "audio")]
        rolls = [line for line in per_sensor[(aid, "plc")] if line["kind"] == "plc"]
        # no file lost: every frame and clip due before the end, in order, one period apart
        assert len(frames) == int(np.ceil((duration - ph.thermal) * cfg.thermal_fps))
        assert len(clips) == int(np.floor((duration - ph.audio) / cfg.audio_chunk_s + 1e-9))
        assert [line["seq"] for line in frames] == list(range(len(frames)))
        frame_t = [_stamp_s(line["timestamp"], start) for line in frames]
        np.testing.assert_allclose(frame_t, ph.thermal + np.arange(len(frames)) / cfg.thermal_fps, atol=1e-3)
        clip_t = [_stamp_s(line["timestamp"], start) for line in clips]
        np.testing.assert_allclose(clip_t, ph.audio + np.arange(len(clips)) * cfg.audio_chunk_s, atol=1e-3)
        frame_offsets[aid] = [t % (1 / cfg.thermal_fps) for t in frame_t]
        # rolls: contiguous windows in order, closed at the historian's phase, every PLC row exactly once
        starts = [_stamp_s(line["timestamp"], start) for line in rolls]
        ends = [_stamp_s(line["end"], start) for line in rolls]
        assert starts[0] == 0.0 and starts[1:] == pytest.approx(ends[:-1], abs=2e-3)
        assert [line["seq"] for line in per_sensor[(aid, "plc")]] == list(range(len(per_sensor[(aid, "plc")])))
        for k, end in enumerate(ends[:-1], start=1):  # the closing roll aside: rolled once due, not before
            assert ph.plc + k * cfg.roll_seconds - 2e-3 <= end < ph.plc + (k + 1) * cfg.roll_seconds
        rows = pd.concat([pd.read_csv(tmp_path / line["path"]) for line in rolls])
        times = sorted({_stamp_s(t, start) for t in rows["timestamp"]})
        np.testing.assert_allclose(times, np.arange(len(times)) / cfg.plc_rate_hz, atol=1e-3)
        assert len(rows) == len(times) * 7 and times[-1] > duration - 0.2
        # closed only once due (its whole period had elapsed)
        for line, t in zip(clips, clip_t, strict=True):
            assert closed[line["path"]] >= t + cfg.audio_chunk_s
    if clocks == "independent":
        assert len({round(v[0], 3) for v in frame_offsets.values()}) == 3
    else:
        assert len({round(v[0], 3) for v in frame_offsets.values()}) == 1
