"""Open fault episodes from the fusion verdicts, so that drift caused by a real fault is called a fault.

A bearing that really wears moves its asset's features and its models' predictions: the feature
windows of that asset and the fleet's predicted-label mix drift, and "the model is stale" or "a sensor
is ageing" would be the wrong thing to tell an operator. :class:`FaultEpisodes` follows the verdicts
(``state`` raised while fusion holds a fault, cleared when it lets go) and answers which assets had a
fault open during a window; :func:`prediction_fault_share` says how much of a predicted-label shift came
from those assets.

>>> eps = FaultEpisodes()
>>> eps.update("PMP-01", "bearing_wear", "raised", 10_000)
>>> eps.update("PMP-01", "bearing_wear", "raised", 20_000)
>>> eps.update("PMP-01", "normal", "cleared", 90_000)
>>> [(e.asset_id, e.label, e.start_ms, e.end_ms) for e in eps.open_during(0, 50_000)]
[('PMP-01', 'bearing_wear', 10000, 90000)]
>>> eps.open_during(100_000, 200_000)
[]
>>> prediction_fault_share({"A": {"normal": 50}, "B": {"normal": 50}},
...                        {"A": {"normal": 10, "bearing_wear": 40}, "B": {"normal": 50}}, {"A"})
(1.0, {'A': 40.0})
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass


@dataclass
class FaultEpisode:
    asset_id: str
    label: str
    start_ms: int  #: event time of the first raised verdict
    last_ms: int  #: event time of the latest raised verdict
    end_ms: int | None = None  #: event time of the clearing verdict; None while open

    def describe(self) -> str:
        return f"{self.label} on {self.asset_id}" + (" (cleared)" if self.end_ms is not None else "")


class FaultEpisodes:
    """Fault episodes per asset from the verdicts' ``state`` (raised / cleared), kept ``horizon_ms`` after
    they end."""

    def __init__(self, horizon_ms: int = 3_600_000) -> None:
        self.horizon_ms = horizon_ms
        self._episodes: dict[str, list[FaultEpisode]] = {}

    def update(self, asset_id: str, label: str, state: str, time_ms: int) -> None:
        eps = self._episodes.setdefault(asset_id, [])
        current = eps[-1] if eps and eps[-1].end_ms is None else None
        if state == "raised" and label != "normal":
            if current is not None and current.label != label:  # fusion switched faults: a new episode
                current.end_ms = time_ms
                current = None
            if current is None:
                eps.append(FaultEpisode(asset_id, label, time_ms, time_ms))
            else:
                current.last_ms = max(current.last_ms, time_ms)
        elif current is not None and (state == "cleared" or label == "normal"):
            current.end_ms = time_ms
        self._episodes[asset_id] = [e for e in eps if e.end_ms is None or time_ms - e.end_ms <= self.horizon_ms]

    def open_during(self, start_ms: int, end_ms: int, asset_id: str | None = None) -> list[FaultEpisode]:
        """Episodes (of ``asset_id``, or of every asset) open at some time in [start_ms, end_ms]."""
        assets = [asset_id] if asset_id is not None else list(self._episodes)
        return [e for a in assets for e in self._episodes.get(a, [])
                if e.start_ms <= end_ms and (e.end_ms is None or e.end_ms >= start_ms)]


def prediction_fault_share(reference: Mapping[str, Mapping[str, int]], live: Mapping[str, Mapping[str, int]],
                           faulted: Set[str]) -> tuple[float, dict[str, float]]:
    """Share of a predicted-label shift that the ``faulted`` assets account for, and each asset's part.

    Per asset, its excess of the labels that grew in the pooled mix (live count minus what its own
    reference share would give, ``reference`` and ``live`` being ``asset -> label -> count``); the share is
    the faulted assets' positive excess over every asset's. An asset without a reference of its own counts
    against the pooled reference."""
    def shares(counts: Mapping[str, Mapping[str, int]]) -> dict[str, float]:
        tot: dict[str, int] = {}
        for c in counts.values():
            for k, n in c.items():
                tot[k] = tot.get(k, 0) + n
        total = sum(tot.values()) or 1
        return {k: n / total for k, n in tot.items()}

    pooled_ref, pooled_live = shares(reference), shares(live)
    grown = {k for k, v in pooled_live.items() if v > pooled_ref.get(k, 0.0)}
    excess: dict[str, float] = {}
    for a, counts in live.items():
        n = sum(counts.values())
        ref = reference.get(a)
        ref_n = sum(ref.values()) if ref else 0
        own = {k: v / ref_n for k, v in ref.items()} if ref and ref_n else pooled_ref
        e = sum(counts.get(k, 0) - n * own.get(k, 0.0) for k in grown)
        if e > 0:
            excess[a] = e
    total = sum(excess.values())
    share = sum(v for a, v in excess.items() if a in faulted) / total if total > 0 else 0.0
    return share, {a: v for a, v in sorted(excess.items(), key=lambda kv: -kv[1]) if a in faulted}
