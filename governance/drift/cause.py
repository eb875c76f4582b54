"""Suspected cause of feature drift, from which assets and which features moved.

* ``fleet``: at least ``fleet_fraction`` of the evaluated assets (and at least ``min_fleet_assets``)
  drifted in the same period: ambient, process, or a firmware / feature-code change.
* ``machine``: one asset drifting in more than one modality at once (its PLC *and* its thermal
  image, say): the machine itself changed (a repair, a new load, a different product).
* ``sensor``: one asset, one modality, and either the modality is one device (``single_device``:
  the thermal camera, the microphone — camera ageing, a degraded microphone) or its drifted
  features all belong to at most ``sensor_max_groups`` feature groups (the name before the first
  dot: ``temp``, ``vib``, ``current`` ...: one PLC sensor ageing or fouling, an RTD offset).
* ``machine`` too: one asset moving on PLC features of several groups.

>>> feature_group("temp.bearing_c_over_100"), feature_group("missing.current")
('temp', 'missing')
>>> rules = CauseRules()
>>> rules.cause("A", {"A": {"temp.bearing_c_over_100", "temp.winding_c_over_100"}, "B": set(), "C": set()}).cause
'sensor'
>>> rules.cause("A", {"A": {"temp.bearing_std", "vib.mean_log", "current.mean_over_rated"}, "B": set(), "C": set()}).cause
'machine'
>>> rules.cause("A", {"A": {"temp.bearing_std"}, "B": {"temp.bearing_std"}, "C": {"vib.mean_log"}}).cause
'fleet'
>>> rules.cause("A", {"A": {"global.ambient_c_over_40", "de_bearing.max_rise"}, "B": set(), "C": set()},
...             single_device="thermal camera").cause
'sensor'
>>> rules.cause("A", {"A": {"temp.bearing_c_over_100"}, "B": set(), "C": set()}, other_modalities={"thermal"}).cause
'machine'
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass


def feature_group(name: str) -> str:
    """The sensor / feature group of a model-input feature (the part before the first dot)."""
    return name.split(".", 1)[0]


@dataclass(frozen=True)
class CauseHint:
    cause: str  #: sensor | machine | fleet
    detail: str


@dataclass(frozen=True)
class CauseRules:
    fleet_fraction: float = 0.6
    min_fleet_assets: int = 3
    sensor_max_groups: int = 1

    def fleet_drifted(self, drifted: Mapping[str, Set[str]]) -> tuple[bool, int, int]:
        """(is fleet-wide, drifted assets, evaluated assets) for ``asset -> drifted features``."""
        n = len(drifted)
        k = sum(1 for feats in drifted.values() if feats)
        return (n >= self.min_fleet_assets and k >= self.fleet_fraction * n), k, n

    def cause(self, asset_id: str, drifted: Mapping[str, Set[str]], single_device: str | None = None,
              other_modalities: Set[str] = frozenset()) -> CauseHint:
        """Cause for ``asset_id``'s drift given every evaluated asset's latest drifted features (of this
        modality), the device when the whole modality is one sensor, and the asset's other modalities that
        drifted in the same period."""
        fleet, k, n = self.fleet_drifted(drifted)
        if fleet:
            return CauseHint("fleet", f"{k} of {n} assets drifted together (ambient, process or a "
                                      "firmware/feature change)")
        feats = sorted(drifted.get(asset_id, set()))
        if other_modalities:
            return CauseHint("machine", f"{asset_id} drifted in {', '.join(sorted(other_modalities))} too: the "
                                        "machine changed, not one sensor")
        if single_device:
            return CauseHint("sensor", f"only {asset_id}'s {single_device} moved ({len(feats)} features, no other "
                                       "modality of the asset): the device ageing or fouling")
        groups = sorted({feature_group(f) for f in feats})
        if len(groups) <= self.sensor_max_groups:
            return CauseHint("sensor", f"only {asset_id}'s {'/'.join(groups) or '-'} features moved "
                                       f"({len(feats)} features): a sensor ageing or fouling")
        return CauseHint("machine", f"{asset_id} moved on {len(feats)} features in {len(groups)} groups "
                                    f"({', '.join(groups[:6])}): the machine changed")
