"""Per-asset fusion state: the latest prediction per modality and the k-of-n / m-clean hysteresis.

The rule itself (how modality probabilities combine) is ``models.fusion.fuse``; this module only
decides which predictions take part (the event-time window) and when a fault counts as raised
or cleared.

>>> h = Hysteresis(raise_k=2, raise_n=3, clear_m=2, hop_ms=1000)
>>> s = AssetState()
>>> outcomes = ["bearing_wear", "normal", "bearing_wear", "bearing_wear", "normal", "normal"]
>>> [h.step(s, o, 1000 * i) for i, o in enumerate(outcomes)]
['normal', 'normal', 'raised', 'raised', 'raised', 'cleared']
>>> s.raised is None, h.step(s, "normal", 6000)
(True, 'normal')
>>> s2 = AssetState()   # three sensors see the same noisy instant: it is one window, not three
>>> [h.step(s2, "imbalance", 7000 + dt) for dt in (0, 10, 20)]
['normal', 'normal', 'normal']
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
    withheld: list[str] = Field(default_factory=list, description="classes its input cannot show (Prediction.withheld)")
    beyond_training: dict[str, int] = Field(default_factory=dict, description=(
        "model inputs far outside its training range (Prediction.beyond_training)"))


class AssetState(BaseModel):
    """Stored as JSON in ``StreamNames.stage_state("fusion", shard)``, field = asset id."""

    asset_type: str = ""
    latest: dict[str, LatestPrediction] = Field(default_factory=dict)
    history: list[str] = Field(default_factory=list, description="outcome of each of the last windows")
    windows: list[int] = Field(default_factory=list, description="event-time window index of each history entry")
    raised: str | None = None
    clean_run: int = 0
    last_ids: dict[str, str] = Field(default_factory=dict, description="prediction stream -> last entry id fused")
    evaluations: int = 0


@dataclass(frozen=True)
class Hysteresis:
    """Raise a fault when it wins ``raise_k`` of the last ``raise_n`` windows; clear after ``clear_m``
    consecutive clean windows. Another fault winning k of n while one is raised replaces it.

    A window is ``hop_ms`` of event time: several evaluations in one window (one per arriving
    modality) replace each other, so one noisy instant counts once however many sensors saw it.
    """

    raise_k: int = 3
    raise_n: int = 5
    clear_m: int = 4
    hop_ms: int = 1000

    def __post_init__(self) -> None:
        if not 1 <= self.raise_k <= self.raise_n:
            raise ValueError(f"need 1 <= raise_k <= raise_n, got k={self.raise_k} n={self.raise_n}")

    def step(self, state: AssetState, outcome: str, event_time_ms: int | None = None) -> str:
        """Record one evaluation's outcome (a fault label or ``normal``) at ``event_time_ms``;
        return the verdict state ``normal`` | ``raised`` | ``cleared`` and update ``state.raised``."""
        window = (event_time_ms // self.hop_ms) if event_time_ms is not None else len(state.windows) + (
            state.windows[-1] + 1 if state.windows else 0)
        if state.windows and window <= state.windows[-1]:
            state.history[-1] = outcome  # a later evaluation of the same (or an older) window
        else:
            state.history.append(outcome)
            state.windows.append(window)
        keep = max(self.raise_n, self.clear_m)
        state.history, state.windows = state.history[-keep:], state.windows[-keep:]
        recent = state.history[-self.raise_n:]
        faults = Counter(o for o in recent if o != "normal")
        top, votes = faults.most_common(1)[0] if faults else ("normal", 0)
        if state.raised is None:
            if votes >= self.raise_k:
                state.raised = top
                return "raised"
            return "normal"
        clean = 0
        for o in reversed(state.history):
            if o != "normal":
                break
            clean += 1
        state.clean_run = clean
        if clean >= self.clear_m:
            state.raised = None
            state.history, state.windows = [], []
            return "cleared"
        if top != state.raised and votes >= self.raise_k and faults[state.raised] < self.raise_k:
            state.raised = top
        return "raised"
