"""Scenario: which asset develops which fault and which sensors drift, and when.

Simulated time is cut into blocks of ``block_s`` seconds (a batch run is one
block; real-time mode uses ``config.realtime_episode_s``).  In every block
``round(fault_fraction * n)`` assets get one fault episode (faults are dealt
from a shuffled deck so a small fleet still shows variety; cavitation only on
pumps) and ``round(drift_fraction * n)`` assets get one drift event.  At the end
of a block faulty assets are repaired and drifting sensors recalibrated.
Block ``k`` depends only on ``(seed, k)``, so the scenario can be extended
lazily for endless real-time runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .assets import Asset
from .config import DifficultyProfile, SimulatorConfig
from .drift import DriftEvent, DriftState, active_kinds, draw_drift, drift_state
from .health import FAULTS, FaultEpisode, HealthArrays, draw_episode, faults_for, health_from_episodes, label_for
from .noise import make_rng


@dataclass
class Scenario:
    """Fault and drift timeline of a fleet, extended block by block."""

    fleet: list[Asset]
    config: SimulatorConfig
    profile: DifficultyProfile
    block_s: float
    episodes: dict[str, list[FaultEpisode]] = field(default_factory=dict)
    drifts: dict[str, list[DriftEvent]] = field(default_factory=dict)
    n_blocks: int = 0

    def __post_init__(self) -> None:
        for a in self.fleet:
            self.episodes.setdefault(a.asset_id, [])
            self.drifts.setdefault(a.asset_id, [])
        self.ensure(0.0)

    @property
    def horizon_s(self) -> float:
        """End of the last generated block (seconds)."""
        return self.n_blocks * self.block_s

    def ensure(self, t_s: float) -> bool:
        """Generate blocks until ``t_s`` is covered; return True if any were added."""
        added = False
        while t_s >= self.horizon_s:
            self._draw_block(self.n_blocks)
            self.n_blocks += 1
            added = True
        return added

    def _draw_block(self, k: int) -> None:
        cfg = self.config
        rng = make_rng(cfg.seed, "scenario", k)
        start = k * self.block_s
        n = len(self.fleet)
        n_fault = int(round(cfg.fault_fraction * n))
        order = rng.permutation(n)
        deck: list[str] = []
        for i in order[:n_fault]:
            asset = self.fleet[int(i)]
            options = faults_for(asset.asset_type)
            if not deck:
                deck = [str(f) for f in rng.permutation(FAULTS)]
            pick = next((f for f in deck if f in options), str(rng.choice(options)))
            if pick in deck:
                deck.remove(pick)
            self.episodes[asset.asset_id].append(draw_episode(rng, asset.asset_id, pick, start, self.block_s))
        n_drift = int(round(cfg.drift_fraction * n))
        for i in rng.permutation(n)[:n_drift]:
            aid = self.fleet[int(i)].asset_id
            self.drifts[aid].append(draw_drift(rng, aid, start, self.block_s, self.profile.drift_magnitude))

    def health(self, asset_id: str, t: np.ndarray) -> HealthArrays:
        """Physical fault/severity of an asset on a time grid."""
        return health_from_episodes(self.episodes[asset_id], t)

    def drift(self, asset_id: str, t: np.ndarray | float) -> DriftState:
        """Drift state of an asset's sensors at ``t``."""
        return drift_state(self.drifts[asset_id], t)

    def label_at(self, asset_id: str, t_s: float) -> str:
        """Observable fault label at simulated time ``t_s``."""
        h = self.health(asset_id, np.array([t_s]))
        return label_for(h.fault, float(h.severity[0]))

    def drift_kinds_at(self, asset_id: str, t_s: float) -> tuple[str, ...]:
        """Drift kinds active at ``t_s``."""
        return active_kinds(self.drifts[asset_id], t_s)
