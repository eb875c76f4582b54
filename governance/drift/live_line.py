"""A simulated line turned into the features messages the Flink job writes, in event-time order.

For the drift measurements of a live line (``bench/bench_drift_demo.py``) and the demo-drift scenario
test: the plant simulator's real-time scenario (``Factory._setup``, the same blocks, faults and drift
as ``linewatch demo``'s simulator) advanced second by second, each asset's PLC samples through the
pipeline's own window buffer and PLC feature code, its thermal frames through the pipeline's thermal
feature code with the running baseline the thermal handler keeps (not the learned healthy reference the
handler reads frames against once an asset has learnt one from 8 frames 60 s apart, so not within the
360 s drift runs; ``bench/bench_thermal_live_reference.py`` reads both), its audio clips through the audio
feature code (as ``pipeline.handlers.*`` call them). ``prepare(factory)`` runs after the scenario
exists and before the first sample: it adds the demo's drift or fault (what ``linewatch demo`` does to
its running simulator). Nothing here is a model of the features: they are the pipeline's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from linewatch.contract import AudioFeatures, PlcFeatures, ThermalFeatures
from linewatch.contract.plc_tags import PLC_TAGS
from linewatch.simulator.assets import asset_registry_json
from linewatch.simulator.config import SimulatorConfig
from linewatch.simulator.tags import QUALITIES
from pipeline.features import FEATURES_VERSION
from pipeline.features.audio_physics import audio_vector
from pipeline.features.messages import audio_features_message, plc_features_message, thermal_features_message
from pipeline.features.plc_window import PlcWindowBuffer
from pipeline.features.thermal_features import ThermalBaseline

if TYPE_CHECKING:
    from linewatch.simulator import Factory

FeaturesMessage = PlcFeatures | ThermalFeatures | AudioFeatures
T0_MS = 1_764_000_000_000  #: event time of simulated second 0


@dataclass(frozen=True)
class LineSample:
    """One features message of the line and the simulated second it belongs to."""

    t_s: float
    modality: str
    message: FeaturesMessage


def render_line(config: SimulatorConfig, n_assets: int, seconds: float,
                modalities: tuple[str, ...] = ("plc", "thermal", "audio"),
                prepare: Callable[[Factory], Any] | None = None, t0_ms: int = T0_MS,
                audio_vector_only: bool = False, only: set[str] | None = None) -> Iterator[LineSample]:
    """The features messages of ``seconds`` of a simulated line of ``n_assets``, second by second.

    ``audio_vector_only``: audio messages carry the model-input ``vector`` (the pipeline's
    ``audio_vector``, what drift reads) but no log-mel or statistics (a third of the cost).
    """
    from linewatch.simulator import Factory

    factory = Factory(config, n_assets=n_assets)
    _, streams = factory._setup(config.realtime_episode_s)
    if prepare is not None:
        prepare(factory)
    info = {a["asset_id"]: a for a in asset_registry_json(factory.fleet, config)["assets"]}
    buffers = {a.asset_id: PlcWindowBuffer(a.asset_id) for a in factory.fleet}
    baselines = {a.asset_id: ThermalBaseline() for a in factory.fleet}
    bad = QUALITIES.index("Bad")
    for k in range(int(seconds)):
        t_end = float(k + 1)
        for s in streams:
            if only is not None and s.asset.asset_id not in only:
                continue
            aid, kind = s.asset.asset_id, s.asset.asset_type
            out = s.advance(t_end)
            if "plc" in modalities:
                if out.plc is not None:
                    for i, t in enumerate(out.plc.t):
                        for j, tag in enumerate(PLC_TAGS):
                            buffers[aid].add(tag, t0_ms + int(round(t * 1000)), float(out.plc.values[i, j]),
                                             int(out.plc.quality[i, j]) == bad)
                for e in out.alarms:
                    buffers[aid].add_alarm(t0_ms + int(round(e.t * 1000)), e.code, e.state)
                for w in buffers[aid].advance(t0_ms + int(t_end * 1000) - 1):
                    yield LineSample(t_end, "plc", plc_features_message(w, kind, asset=info[aid]))
            if "thermal" in modalities:
                for tf, frame in out.frames:
                    msg = thermal_features_message(aid, kind, t0_ms + int(round(tf * 1000)), frame,
                                                   baselines[aid].baseline_ck, asset=info[aid])
                    baselines[aid].update(frame)
                    yield LineSample(tf, "thermal", msg)
            if "audio" in modalities:
                for tc, clip in out.clips:
                    x, t_ms = clip.astype(np.float32) / 32768.0, t0_ms + int(round(tc * 1000))
                    amsg = (AudioFeatures(asset_id=aid, asset_type=kind, event_time_ms=t_ms,
                                         features_version=FEATURES_VERSION, stats={},
                                         logmel=np.zeros((1, 1), np.float32), vector=audio_vector(x, 16_000, info[aid]))
                           if audio_vector_only else audio_features_message(aid, kind, t_ms, x, 16_000, asset=info[aid]))
                    yield LineSample(tc, "audio", amsg)
