"""Incremental simulation of one asset, shared by batch and real-time modes.

:class:`AssetStream` owns an asset's physics, sensors and alarm logic and is
advanced with :meth:`AssetStream.advance` to a simulated time; it returns
what became available before that time: PLC samples, alarm events, thermal
frames (at ``phase + j / thermal_fps``) and audio clips (covering
``[phase + c * chunk, phase + (c + 1) * chunk)``, returned once complete; the phases are 0 unless
the stream is given :class:`SensorPhases`: real-time mode with independent sensor clocks).  All randomness is
keyed by tick / frame / clip index, so the output does not depend on how
often ``advance`` is called - batch mode (1 s steps) and real-time mode (wall
clock steps) render the same content for the same simulated times.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .alarms import AlarmEngine, AlarmEvent
from .assets import Asset
from .audio import AudioRenderer, ClipDrive
from .config import DifficultyProfile, SimulatorConfig
from .noise import make_rng
from .physics import AssetPhysics, PhysicsBlock
from .plc import PlcSamples, measure
from .scenario import Scenario
from .thermal import ThermalCamera


@dataclass
class StreamOutput:
    """What one :meth:`AssetStream.advance` call produced (times in simulated seconds)."""

    asset_id: str
    plc: PlcSamples | None = None
    alarms: list[AlarmEvent] = field(default_factory=list)
    frames: list[tuple[float, np.ndarray]] = field(default_factory=list)
    clips: list[tuple[float, np.ndarray]] = field(default_factory=list)


@dataclass(frozen=True)
class SensorPhases:
    """Where in its period each sensor of one asset closes its files (seconds after the period's
    start): the camera's frames at ``thermal + j / fps``, the microphone's clips end at
    ``audio + (c + 1) * chunk``, the historian's rolls at ``plc + k * roll``. All 0: the line's
    devices share one clock."""

    thermal: float = 0.0
    audio: float = 0.0
    plc: float = 0.0


class AssetStream:
    """Physics + sensors + alarms of one asset, advanced step by step."""

    def __init__(self, asset: Asset, scenario: Scenario, config: SimulatorConfig,
                 profile: DifficultyProfile, phases: SensorPhases | None = None) -> None:
        self.asset = asset
        self.scenario = scenario
        self.config = config
        self.profile = profile
        self.physics = AssetPhysics(asset, config, profile)
        self.camera = ThermalCamera(asset, profile)
        self.audio = AudioRenderer(asset, config, profile)
        self.alarm_engine = AlarmEngine(asset, config, profile)
        self.phases = phases or SensorPhases()
        self.dt = 1.0 / config.plc_rate_hz
        self.n_audio = int(round(config.audio_chunk_s * config.audio_rate_hz))
        self._n_ticks = 0
        self._hist: PhysicsBlock | None = None
        self._plc: list[PlcSamples] = []
        self._alarms: list[AlarmEvent] = []
        self._frame_j = 0
        self._clip_j = 0

    def _compute_to(self, n_ticks: int) -> None:
        if n_ticks <= self._n_ticks:
            return
        idx = np.arange(self._n_ticks, n_ticks, dtype=np.int64)
        t = idx * self.dt
        aid = self.asset.asset_id
        self.scenario.ensure(float(t[-1]))
        drift = self.scenario.drift(aid, t)
        blk = self.physics.step(t, idx, self.scenario.health(aid, t), drift)
        plc = measure(self.asset, blk, drift, self.profile, self.config)
        self._plc.append(plc)
        self._alarms.extend(self.alarm_engine.update(plc))
        self._hist = blk if self._hist is None else PhysicsBlock.concat([self._hist, blk])
        self._n_ticks = n_ticks

    def _trim(self, t_end: float) -> None:
        # the next frame and clip may lie ahead of t_end (a sensor's first period starts at its phase)
        keep_from = min(self.next_frame_s, self.phases.audio + self._clip_j * self.config.audio_chunk_s, t_end)
        if self._hist is not None and self._hist.t[0] < keep_from - 2 * self.dt:
            self._hist = self._hist.tail(keep_from - 2 * self.dt)

    @property
    def next_frame_s(self) -> float:
        """Simulated time of the next frame."""
        return self.phases.thermal + self._frame_j / self.config.thermal_fps

    @property
    def next_clip_end_s(self) -> float:
        """Simulated time at which the next clip is complete."""
        return self.phases.audio + (self._clip_j + 1) * self.config.audio_chunk_s

    def advance(self, t_end: float) -> StreamOutput:
        """Produce everything timed before ``t_end`` (simulated seconds) not yet produced."""
        cfg = self.config
        aid = self.asset.asset_id
        self._compute_to(int(math.floor(t_end / self.dt)) + 2)
        out = StreamOutput(aid)

        # PLC rows strictly before t_end.
        parts = []
        while self._plc:
            p = self._plc[0]
            m = p.t < t_end
            if m.all():
                parts.append(self._plc.pop(0))
                continue
            if m.any():
                parts.append(p.select(m))
                self._plc[0] = p.select(~m)
            break
        if parts:
            out.plc = PlcSamples(aid, np.concatenate([p.t for p in parts]),
                                 np.concatenate([p.values for p in parts]),
                                 np.concatenate([p.quality for p in parts]))
        out.alarms = [e for e in self._alarms if e.t < t_end]
        self._alarms = [e for e in self._alarms if e.t >= t_end]

        hist = self._hist
        assert hist is not None
        while self.next_frame_s < t_end:
            tf = self.next_frame_s
            rng = make_rng(cfg.seed, "thermal", aid, self._frame_j)
            frame = self.camera.render(hist.snapshot(tf), self.scenario.drift(aid, tf), rng)
            out.frames.append((tf, frame))
            self._frame_j += 1
        while self.next_clip_end_s <= t_end + 1e-9:
            t0 = self.phases.audio + self._clip_j * cfg.audio_chunk_s
            ts = t0 + np.arange(self.n_audio) / cfg.audio_rate_hz
            snap = hist.snapshot(t0 + 0.5 * cfg.audio_chunk_s)
            rng = make_rng(cfg.seed, "audio", aid, self._clip_j)
            clip = self.audio.render(ClipDrive.from_block(hist, ts), snap,
                                     self.scenario.drift(aid, t0 + 0.5 * cfg.audio_chunk_s), rng)
            out.clips.append((t0, clip))
            self._clip_j += 1
        self._trim(t_end)
        return out
