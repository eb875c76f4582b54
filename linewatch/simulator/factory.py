"""The simulated factory: a fleet streaming into a landing directory.

:meth:`Factory.run_batch` simulates as fast as possible (simulated clock,
epoch ``config.start_time``, rolling files every ``config.batch_roll_seconds``).
:meth:`Factory.run_realtime` paces the same rendering by the wall clock as an
edge gateway would (timestamps = wall-clock UTC, rolling files closed every
``config.roll_seconds``).  Both announce every closed blob in
``<out_dir>/manifests/`` (see :mod:`.manifests`).  Both share :class:`~.engine.AssetStream` and
:class:`~.sink.LandingSink`; they differ only in the clock and the cadence.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

from tqdm import tqdm

from .assets import Asset, make_fleet
from .config import SimulatorConfig
from .engine import AssetStream, SensorPhases
from .ground_truth import GroundTruth
from .noise import make_rng
from .scenario import Scenario
from .sink import FileCallback, LandingSink
from .timefmt import now_utc_ms


@dataclass
class RunSummary:
    """What a run produced."""

    mode: str
    out_dir: Path
    n_assets: int
    start_time: datetime
    sim_seconds: float
    wall_seconds: float
    plc_rows: int
    plc_files: int
    alarm_lines: int
    alarm_files: int
    thermal_frames: int
    audio_clips: int
    manifest_files: int

    def counts(self) -> dict[str, int]:
        """Counts per modality/file kind."""
        return {k: v for k, v in asdict(self).items() if isinstance(v, int) and k != "n_assets"}


class Factory:
    """A fleet of ``n_assets`` simulated machines (see module docstring)."""

    def __init__(self, config: SimulatorConfig | None = None, n_assets: int = 6) -> None:
        self.config = config or SimulatorConfig()
        self.profile = self.config.profile
        self.n_assets = n_assets
        self.fleet: list[Asset] = make_fleet(n_assets, self.config.seed,
                                             line_frequency_hz=self.config.line_frequency_hz,
                                             variation=self.profile.asset_variation)
        self.scenario: Scenario | None = None

    def _setup(self, block_s: float) -> tuple[Scenario, list[AssetStream]]:
        scenario = Scenario(self.fleet, self.config, self.profile, block_s)
        streams = [AssetStream(a, scenario, self.config, self.profile) for a in self.fleet]
        self.scenario = scenario
        return scenario, streams

    def _summary(self, mode: str, sink: LandingSink, sim_s: float, wall_s: float) -> RunSummary:
        c = sink.counts
        return RunSummary(mode=mode, out_dir=sink.root, n_assets=self.n_assets, start_time=sink.start_time,
                          sim_seconds=sim_s, wall_seconds=wall_s, plc_rows=c.plc_rows, plc_files=c.plc_files,
                          alarm_lines=c.alarm_lines, alarm_files=c.alarm_files, thermal_frames=c.thermal_frames,
                          audio_clips=c.audio_clips, manifest_files=c.manifest_files)

    def run_batch(self, out_dir: str | Path, minutes: float, progress: bool = True,
                  on_file: FileCallback | None = None) -> RunSummary:
        """Simulate ``minutes`` of plant time as fast as possible into ``out_dir``.

        The whole run is one scenario block.  Timestamps start at
        ``config.start_time``.  With ``config.write_manifests`` one manifest per
        roll (``batch_roll_seconds``) announces everything closed in it; the
        manifests' epoch is ``config.start_time`` in ms, so two runs into the
        same directory would reuse names (blob names collide too): use a fresh
        directory or another ``start_time``.  Output is byte-identical for the
        same config.
        """
        if minutes <= 0:
            raise ValueError("minutes must be > 0")
        wall0 = time.perf_counter()
        total = minutes * 60.0
        scenario, streams = self._setup(total)
        sink = LandingSink(out_dir, self.config, self.config.start_time, on_file)
        sink.write_assets(self.fleet)
        sink.write_ground_truth(GroundTruth.from_scenario(scenario, self.config.start_time, total))
        roll = self.config.batch_roll_seconds
        window = 0.0
        steps = math.ceil(total - 1e-9)
        for k in tqdm(range(steps), desc="simulating", unit="sim-s", disable=not progress):
            t_end = min(float(k + 1), total)
            for s in streams:
                sink.add(s.advance(t_end))
            if t_end >= window + roll - 1e-9 or t_end >= total:
                sink.roll(window, t_end)
                sink.publish()
                window = t_end
        return self._summary("batch", sink, total, time.perf_counter() - wall0)

    def sensor_phases(self) -> dict[str, SensorPhases]:
        """Per asset, where in its period each sensor closes its files in real-time mode.

        ``config.sensor_clocks`` "independent": drawn uniformly from each period (frame period, clip
        length, roll) by ``config.seed`` and the asset id, so a run is reproducible and the line's
        cameras, microphones and historians close at different instants; "synchronised": all 0.
        """
        cfg = self.config
        if cfg.sensor_clocks == "synchronised":
            return {a.asset_id: SensorPhases() for a in self.fleet}
        out = {}
        for a in self.fleet:
            u = make_rng(cfg.seed, "sensor-clock", a.asset_id).random(3)
            out[a.asset_id] = SensorPhases(thermal=float(u[0]) / cfg.thermal_fps, audio=float(u[1]) * cfg.audio_chunk_s,
                                           plc=float(u[2]) * cfg.roll_seconds)
        return out

    def run_realtime(self, out_dir: str | Path, duration_s: float | None = None,
                     stop: threading.Event | None = None, on_file: FileCallback | None = None) -> RunSummary:
        """Stream at wall-clock pace into the landing directory ``out_dir``.

        Runs until ``duration_s`` elapsed or ``stop`` is set (at least one must
        be given, or it runs forever).  Frames and clips are closed when due (the loop wakes at the
        next frame, clip end or roll of any asset, at least every 100 ms); each asset's rolling
        PLC/alarm files are closed every ``config.roll_seconds``, at the asset's historian phase
        (:meth:`sensor_phases`: ``config.sensor_clocks``).  With ``config.write_manifests`` each tick
        ends with a manifest announcing what closed in it and is still unannounced; within a tick, the
        lines pending are published as soon as the oldest is ``config.manifest_max_delay_ms`` old
        (checked as each blob closes; 0 = one manifest per blob), as a gateway announces a file it closed.
        ``on_file(path, kind)`` is called after each file becomes visible.  ``ground_truth.csv`` is written at start (for
        the first scenario block), extended when a new block starts, and
        truncated to the elapsed time at the end.
        """
        cfg = self.config
        start = now_utc_ms()
        m0 = time.monotonic()
        phases = self.sensor_phases()
        scenario = Scenario(self.fleet, cfg, self.profile, cfg.realtime_episode_s)
        streams = [AssetStream(a, scenario, cfg, self.profile, phases[a.asset_id]) for a in self.fleet]
        self.scenario = scenario
        sink = LandingSink(out_dir, cfg, start, on_file)
        sink.publish_after_s = cfg.manifest_max_delay_ms / 1000
        sink.write_assets(self.fleet)
        sink.write_ground_truth(GroundTruth.from_scenario(scenario, start, scenario.horizon_s))
        blocks = scenario.n_blocks
        roll = cfg.roll_seconds
        window = dict.fromkeys(phases, 0.0)  # start of each asset's open roll
        next_roll = {aid: p.plc + roll for aid, p in phases.items()}
        t_end = 0.0
        while True:
            el = time.monotonic() - m0
            done = (duration_s is not None and el >= duration_s) or (stop is not None and stop.is_set())
            t_end = min(el, duration_s) if duration_s is not None else el
            for s in streams:
                sink.add(s.advance(t_end))
            if scenario.n_blocks != blocks:
                blocks = scenario.n_blocks
                sink.write_ground_truth(GroundTruth.from_scenario(scenario, start, scenario.horizon_s))
            if done:
                for aid in phases:
                    sink.roll(window[aid], t_end, [aid])
                sink.publish()
                break
            due = [aid for aid, t in next_roll.items() if el >= t]
            for w in sorted({window[a] for a in due}):  # historians rolling together share one roll
                same = [a for a in due if window[a] == w]
                sink.roll(w, t_end, same)
                for aid in same:
                    window[aid] = t_end
                    next_roll[aid] = phases[aid].plc + (math.floor((el - phases[aid].plc) / roll) + 1) * roll
            sink.publish()  # this tick's frames and clips (and the roll's files), one manifest
            now = time.monotonic() - m0
            next_due = min(min(next_roll.values()), *(min(s.next_frame_s, s.next_clip_end_s) for s in streams))
            wait = min(max(next_due - now, 0.001), 0.1)
            if duration_s is not None:
                wait = min(wait, max(duration_s - now, 0.0) + 0.001)
            if stop is not None:
                stop.wait(wait)
            else:
                time.sleep(wait)
        sink.write_ground_truth(GroundTruth.from_scenario(scenario, start, max(t_end, 1e-3)))
        return self._summary("realtime", sink, t_end, time.monotonic() - m0)
