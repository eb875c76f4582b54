"""The asset registry (``assets.json``) and the checks that need it.

Loads the simulator's schema (``{"schema_version": 1, "assets": [{"asset_id", "asset_type",
"tags": [{"tag", "name", "unit", "valid_min", "valid_max"}], "regions", "bearing_frequencies_hz",
"bearing_orders", "resonance_band_hz", ...}]}``) and tolerates a bare list of assets and
``min``/``max`` range keys.

Quality policy: a ``Bad`` sample is **kept but flagged**, not dead-lettered and not
range-checked — historians write Bad values on a rail (0, full scale) and a dead letter per
sample would flood the stream during a sensor outage. The window features treat it as
missing and report the share in ``bad_quality_frac``. ``Uncertain`` samples are checked and
used like ``Good`` ones.

>>> reg = AssetRegistry.from_dict({"assets": [{"asset_id": "PMP-01", "asset_type": "pump",
...     "tags": [{"name": "bearing_temp_c", "unit": "degC", "valid_min": -20, "valid_max": 150}]}]})
>>> from pipeline.decoders import TagSample
>>> reg.check_tag_sample(TagSample("PMP-01", "bearing_temp_c", 0, 180.0, "Good", "degC"), "f.csv:2")
InvalidRecord('out_of_range', 'PMP-01.bearing_temp_c = 180.0 degC is outside its valid range [-20.0, 150.0] degC', 'f.csv:2')
>>> reg.check_tag_sample(TagSample("PMP-01", "bearing_temp_c", 0, 180.0, "Bad", "degC"), "f.csv:2") is None
True
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from linewatch.contract import DeadLetterReason
from pipeline.decoders.alarms import AlarmEvent
from pipeline.decoders.plc import TagSample
from pipeline.decoders.thermal import FRAME_SHAPE
from pipeline.features.asset_profile import asset_entries, unknown_regions_note
from pipeline.features.audio_features import AssetAcoustics
from pipeline.features.region_boxes import unreadable_regions_note
from pipeline.features.thermal_regions import scaled_regions
from pipeline.validation.errors import InvalidRecord

log = logging.getLogger(__name__)

UNIT_ALIASES: Mapping[str, str] = {"°C": "degC", "C": "degC", "degc": "degC", "mm/sec": "mm/s", "RPM": "rpm"}


def canonical_unit(unit: str) -> str:
    """Unit spelling used for comparisons (``°C`` → ``degC``)."""
    text = unit.strip()
    return UNIT_ALIASES.get(text, text)


@dataclass(frozen=True)
class TagRange:
    """Unit and valid (sensor) range of one tag."""

    unit: str
    valid_min: float = -math.inf
    valid_max: float = math.inf


@dataclass(frozen=True)
class AssetInfo:
    """Everything the pipeline needs to know about one asset."""

    asset_id: str
    asset_type: str
    tags: Mapping[str, TagRange] = field(default_factory=dict)
    regions: Mapping[str, tuple[int, int, int, int]] = field(default_factory=dict)
    acoustics: AssetAcoustics = field(default_factory=AssetAcoustics)
    nominal_shaft_hz: float | None = None

    @classmethod
    def from_entry(cls, entry: Mapping[str, Any], top: Mapping[str, Any] | None = None) -> AssetInfo:
        """From one ``assets.json`` entry (unknown keys are ignored; ``top``: the whole document,
        whose ``frame`` applies to every entry). Id, type, regions and speed are read as
        ``linewatch inspect`` reads them (:meth:`AssetProfile.from_entry`: ``id`` / ``name``,
        ``type``, ``{x, y, w, h}`` boxes, region names users write, fractions of the frame, rpm); the
        regions are the boxes in the pixels of the pipeline's frame (:data:`FRAME_SHAPE`)."""
        acoustics = AssetAcoustics.from_registry_entry(entry, top)
        profile = acoustics.profile
        assert profile is not None
        asset_id = profile.asset_id
        if not asset_id:
            raise ValueError(f"asset entry without 'asset_id' (or 'id', 'name'): {sorted(entry)}")
        tags: dict[str, TagRange] = {}
        raw_tags = entry.get("tags") or []
        items = raw_tags.items() if isinstance(raw_tags, Mapping) else ((None, t) for t in raw_tags)
        for key, spec in items:
            name = str(key or spec.get("name") or str(spec.get("tag", "")).partition(".")[2])
            lo = spec.get("valid_min", spec.get("min"))
            hi = spec.get("valid_max", spec.get("max"))
            tags[name] = TagRange(canonical_unit(str(spec.get("unit", ""))),
                                  -math.inf if lo is None else float(lo), math.inf if hi is None else float(hi))
        if profile.unknown_regions:
            log.warning("asset %s: %s", asset_id, unknown_regions_note(profile.unknown_regions))
        if profile.unreadable_regions:
            log.warning("asset %s: %s", asset_id, unreadable_regions_note(profile.unreadable_regions))
        if profile.bearing_note:
            log.warning("asset %s: %s", asset_id, profile.bearing_note)
        return cls(asset_id, profile.asset_type, tags, scaled_regions(profile, FRAME_SHAPE), acoustics,
                   profile.nominal_shaft_hz)


class AssetRegistry:
    """Known assets by id; the checks that depend on them return :class:`InvalidRecord` or None."""

    def __init__(self, assets: Mapping[str, AssetInfo]) -> None:
        self._assets = dict(assets)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | list[Any]) -> AssetRegistry:
        """From an ``assets.json`` document in any form ``linewatch inspect`` reads (:func:`asset_entries`)."""
        top = data if isinstance(data, Mapping) else {}
        infos = [AssetInfo.from_entry(e, top) for e in asset_entries(data)]
        return cls({info.asset_id: info for info in infos})

    @classmethod
    def from_file(cls, path: Path | str) -> AssetRegistry:
        """Load ``assets.json`` (the simulator writes it at the root of the landing directory)."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise FileNotFoundError(
                f"asset registry {path} not found: run the simulator (it writes assets.json into the landing dir) "
                "or point the pipeline at an existing registry") from None
        return cls.from_dict(data)

    def __contains__(self, asset_id: object) -> bool:
        return asset_id in self._assets

    def __len__(self) -> int:
        return len(self._assets)

    def ids(self) -> list[str]:
        return sorted(self._assets)

    def get(self, asset_id: str) -> AssetInfo | None:
        return self._assets.get(asset_id)

    def __getitem__(self, asset_id: str) -> AssetInfo:
        return self._assets[asset_id]

    def check_asset(self, asset_id: str, raw_ref: str, excerpt: str = "",
                    event_time_ms: int | None = None) -> InvalidRecord | None:
        """``unknown_asset`` if ``asset_id`` is not registered."""
        if asset_id in self._assets:
            return None
        return InvalidRecord(DeadLetterReason.UNKNOWN_ASSET,
                             f"asset {asset_id!r} is not in the registry ({len(self)} assets); add it to assets.json",
                             raw_ref, excerpt, asset_id=asset_id, event_time_ms=event_time_ms)

    def check_tag_sample(self, sample: TagSample, raw_ref: str) -> InvalidRecord | None:
        """Unknown asset → ``unknown_asset``; unknown tag → ``schema_error``; unit differing from
        the registry or a non-Bad value outside the valid range → ``out_of_range``."""
        unknown = self.check_asset(sample.asset_id, raw_ref, sample.full_tag, sample.timestamp_ms)
        if unknown is not None:
            return unknown
        info = self._assets[sample.asset_id]
        spec = info.tags.get(sample.tag)
        where: dict[str, Any] = dict(asset_id=sample.asset_id, event_time_ms=sample.timestamp_ms)
        if spec is None:
            return InvalidRecord(DeadLetterReason.SCHEMA_ERROR,
                                 f"tag {sample.full_tag!r} is not registered for {sample.asset_id} "
                                 f"(known: {sorted(info.tags)})", raw_ref, sample.full_tag, **where)
        if spec.unit and canonical_unit(sample.unit) != spec.unit:
            return InvalidRecord(DeadLetterReason.OUT_OF_RANGE,
                                 f"{sample.full_tag} has unit {sample.unit!r}, registry says {spec.unit!r}",
                                 raw_ref, sample.full_tag, **where)
        if sample.quality == "Bad" or math.isnan(sample.value):
            return None
        if not spec.valid_min <= sample.value <= spec.valid_max:
            return InvalidRecord(
                DeadLetterReason.OUT_OF_RANGE,
                f"{sample.full_tag} = {sample.value} {spec.unit} is outside its valid range "
                f"[{spec.valid_min}, {spec.valid_max}] {spec.unit}", raw_ref, **where)
        return None

    def check_alarm(self, event: AlarmEvent, raw_ref: str) -> InvalidRecord | None:
        """``unknown_asset`` for an alarm of an unregistered asset."""
        return self.check_asset(event.asset_id, raw_ref, event.code, event.timestamp_ms)


class RegistryCache:
    """``assets.json`` of the landing zone as an :class:`AssetRegistry`, reloaded (at most every
    ``reload_every_s``) when an unknown asset shows up."""

    def __init__(self, landing: Path, reload_every_s: float = 5.0) -> None:
        self.path = Path(landing) / "assets.json"
        self.reload_every_s = reload_every_s
        self.registry: AssetRegistry | None = None
        self._loaded_at = -1e18
        self.sample_rate = 16_000

    def _load(self) -> None:
        self._loaded_at = time.monotonic()
        try:
            self.registry = AssetRegistry.from_file(self.path)
            data = json.loads(self.path.read_text())
            self.sample_rate = int(data.get("audio", {}).get("sample_rate_hz", 16_000)) if isinstance(data, dict) else 16_000
        except (FileNotFoundError, json.JSONDecodeError, OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("asset registry %s not loaded: %s", self.path, exc)

    def get(self, asset_id: str) -> AssetInfo | None:
        """``AssetInfo`` of the asset, None if unknown; reloads the file when it may have changed."""
        stale = time.monotonic() - self._loaded_at >= self.reload_every_s
        if (self.registry is None or asset_id not in self.registry) and stale:
            self._load()
        return None if self.registry is None else self.registry.get(asset_id)
