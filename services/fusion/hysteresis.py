"""Per-asset fusion state: the latest prediction per modality and the k-of-n / m-clean hysteresis.

The rule itself (how modality probabilities combine) is ``models.fusion.fuse``; this module only
decides which predictions take part (the event-time window) and when a fault counts as raised
or cleared.

>>> h = Hysteresis(raise_k=2, raise_n=3, clear_m=2)
>>> s = AssetState()
>>> [h.step(s, o) for o in ["bearing_wear", "normal", "bearing_wear", "bearing_wear", "normal", "normal"]]
['normal', 'normal', 'raised', 'raised', 'raised', 'cleared']
>>> s.raised is None, h.step(s, "normal")
(True, 'normal')
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from pydantic import BaseModel, Field

from linewatch.contract import ModelRef


class LatestPrediction(BaseModel):
    """The newest prediction of one modality for an asset."""

    probabilities: dict[str, float]
    label: str
    event_time_ms: int
    entry_id: str
    model: ModelRef
    source: str = ""
    ingest_time_ms: int = 0


class AssetState(BaseModel):
    """Stored as JSON in ``StreamNames.stage_state("fusion", shard)``, field = asset id."""

    asset_type: str = ""
    latest: dict[str, LatestPrediction] = Field(default_factory=dict)
    history: list[str] = Field(default_factory=list, description="last n evaluation outcomes")
    raised: str | None = None
    clean_run: int = 0
    last_ids: dict[str, str] = Field(default_factory=dict, description="prediction stream -> last entry id fused")
    evaluations: int = 0


@dataclass(frozen=True)
class Hysteresis:
    """Raise a fault when it wins ``raise_k`` of the last ``raise_n`` evaluations; clear after
    ``clear_m`` consecutive clean ones. Another fault winning k of n while one is raised replaces it."""

    raise_k: int = 3
    raise_n: int = 5
    clear_m: int = 4

    def __post_init__(self) -> None:
        if not 1 <= self.raise_k <= self.raise_n:
            raise ValueError(f"need 1 <= raise_k <= raise_n, got k={self.raise_k} n={self.raise_n}")

    def step(self, state: AssetState, outcome: str) -> str:
        """Record one evaluation's outcome (a fault label or ``normal``); return the verdict state
        ``normal`` | ``raised`` | ``cleared`` and update ``state.raised``."""
        state.history = [*state.history, outcome][-self.raise_n:]
        faults = Counter(o for o in state.history if o != "normal")
        top, votes = faults.most_common(1)[0] if faults else ("normal", 0)
        if state.raised is None:
            state.clean_run = 0
            if votes >= self.raise_k:
                state.raised = top
                return "raised"
            return "normal"
        state.clean_run = state.clean_run + 1 if outcome == "normal" else 0
        if state.clean_run >= self.clear_m:
            state.raised = None
            state.clean_run = 0
            return "cleared"
        if top != state.raised and votes >= self.raise_k and faults[state.raised] < self.raise_k:
            state.raised = top
        return "raised"
