"""What the web app reads: verdicts, features, explanations and drift reports from the streams, model cards
from the registry. Read-only; stream names only through ``StreamNames``.

Each reader decodes entries with the contract (``decode_message``) and skips entries it cannot decode
(they are another writer's dead letters, not the web app's to judge).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray
import redis

from linewatch.contract import (
    AudioFeatures,
    ContractError,
    DeadLetter,
    DriftReport,
    Explanation,
    Message,
    Modality,
    PlcFeatures,
    StreamNames,
    ThermalFeatures,
    Verdict,
    decode_message,
)

M = TypeVar("M", bound=Message)

#: Thermal model input: (frame - ambient) / 25 K, clipped to [-1, 4] (pipeline.features.thermal_features,
#: docs/features.md). The web app maps it back to degrees Celsius with the frame's ``ambient_c`` stat.
THERMAL_SCALE_K = 25.0
THERMAL_CLIP = (-1.0, 4.0)
_PNG_NAME = re.compile(r"^[A-Za-z0-9_.-]+\.png$")


def _sid(entry_id: bytes | str) -> str:
    return entry_id.decode() if isinstance(entry_id, bytes) else entry_id


def decoded(entries: Any, cls: type[M]) -> list[tuple[str, M]]:
    """(entry id, message) of the entries that decode to ``cls`` (redis-py's XRANGE/XREAD rows)."""
    out = []
    for eid, fields in entries:
        try:
            msg = decode_message(fields)
        except ContractError:
            continue
        if isinstance(msg, cls):
            out.append((_sid(eid), msg))
    return out


def frame_celsius(features: ThermalFeatures) -> tuple[NDArray[np.float32], bool]:
    """The frame in degrees Celsius, and whether it is exact: ``ambient_c + 25 K x normalised``.

    Pixels at the clip limits are *at least* 100 K above (or 25 K below) ambient; the second value is
    False when any pixel is clipped (the page says so; ``max_c`` in the stats is the true maximum).
    float16 keeps about 3 significant digits: 0.1 K steps near ambient + 100 K.

    >>> import numpy as np
    >>> f = ThermalFeatures(asset_id="P", asset_type="pump", event_time_ms=0, features_version=3,
    ...                     stats={"ambient_c": 20.0}, frame=np.array([[0.0, 1.0], [0.5, 4.0]], np.float16))
    >>> c, exact = frame_celsius(f)
    >>> c.tolist(), exact
    ([[20.0, 45.0], [32.5, 120.0]], False)
    """
    ambient = float(features.stats.get("ambient_c", 0.0))
    norm = features.frame.astype(np.float32)
    exact = bool(((norm > THERMAL_CLIP[0]) & (norm < THERMAL_CLIP[1])).all())
    return ambient + THERMAL_SCALE_K * norm, exact


@dataclass
class LineReader:
    """Reads the streams the web app shows (see the module docstring)."""

    client: redis.Redis
    names: StreamNames
    verdict_scan: int = 2000

    # -- verdicts -------------------------------------------------------------------------------------
    def latest_verdicts(self) -> dict[str, tuple[str, Verdict]]:
        """asset -> (entry id, newest verdict), from the newest ``verdict_scan`` entries of every shard."""
        latest: dict[str, tuple[str, Verdict]] = {}
        for stream in self.names.all_verdict_streams():
            for eid, v in reversed(decoded(self.client.xrevrange(stream, count=self.verdict_scan), Verdict)):
                latest[v.asset_id] = (eid, v)
        return latest

    def verdict_history(self, asset_id: str, limit: int = 50) -> list[tuple[str, Verdict]]:
        """The asset's newest verdicts (newest first), at most ``limit``."""
        stream = self.names.verdicts(asset_id)
        rows = [(e, v) for e, v in decoded(self.client.xrevrange(stream, count=self.verdict_scan), Verdict)
                if v.asset_id == asset_id]
        return rows[:limit]

    def verdict(self, entry_id: str) -> Verdict | None:
        for stream in self.names.all_verdict_streams():
            got = decoded(self.client.xrange(stream, entry_id, entry_id), Verdict)
            if got:
                return got[0][1]
        return None

    def refused_inputs(self, asset_id: str, limit: int = 10, scan: int = 2000) -> list[tuple[str, DeadLetter]]:
        """The asset's newest dead letters (newest first, at most ``limit``) among the dead-letter
        stream's newest ``scan`` entries: why a frame, clip or PLC file of it was not read (a covered
        lens, a frozen camera, a truncated file ...)."""
        rows = decoded(self.client.xrevrange(self.names.deadletter, count=scan), DeadLetter)
        return [(e, d) for e, d in rows if d.asset_id == asset_id][:limit]

    # -- features -------------------------------------------------------------------------------------
    def latest_features(self, modality: Modality, asset_id: str, scan: int = 500,
                        page: int = 16) -> tuple[str, Message] | None:
        """The asset's newest features entry of ``modality``: pages back through its shard's stream (newest
        first, ``page`` entries at a time, at most ``scan``) and stops at the first of the asset."""
        classes: dict[Modality, type[Message]] = {Modality.THERMAL: ThermalFeatures, Modality.AUDIO: AudioFeatures,
                                                  Modality.PLC: PlcFeatures}
        cls = classes[modality]
        stream = self.names.features(modality, asset_id)
        end, seen = "+", 0
        while seen < scan:
            rows: Any = self.client.xrevrange(stream, max=end, count=page)
            if not rows:
                return None
            for eid, msg in decoded(rows, cls):
                if getattr(msg, "asset_id", None) == asset_id:
                    return eid, msg
            seen += len(rows)
            last = rows[-1][0]
            end = "(" + (last.decode() if isinstance(last, bytes) else str(last))
        return None

    def features_entry(self, modality: str, asset_id: str, entry_id: str) -> Message | None:
        """One features entry by id (the input an explanation explained)."""
        try:
            stream = self.names.features(modality, asset_id)
        except ValueError:
            return None
        got = decoded(self.client.xrange(stream, entry_id, entry_id), Message)
        return got[0][1] if got else None

    def plc_window(self, asset_id: str, seconds: float = 3600.0, max_entries: int = 20_000) -> list[PlcFeatures]:
        """The asset's PLC feature windows of the last ``seconds`` (by stream entry time), oldest first."""
        start = int((time.time() - seconds) * 1000)
        stream = self.names.features(Modality.PLC, asset_id)
        rows = decoded(self.client.xrange(stream, f"{start}-0", "+", count=max_entries), PlcFeatures)
        return [m for _, m in rows if m.asset_id == asset_id]

    def live_vectors(self, modality: Modality, limit: int = 200) -> NDArray[np.float32]:
        """The newest model-input vectors of a modality across every asset (for drift comparisons)."""
        per = max(1, limit // self.names.shards)
        vecs = []
        for shard in range(self.names.shards):
            for _, m in decoded(self.client.xrevrange(self.names.features_shard(modality, shard), count=per), Message):
                v = getattr(m, "vector", None)
                if isinstance(v, np.ndarray) and v.size:
                    vecs.append(v.astype(np.float32))
        if not vecs:
            return np.zeros((0, 0), np.float32)
        width = max(v.size for v in vecs)
        return np.stack([v for v in vecs if v.size == width])

    # -- governance outputs ---------------------------------------------------------------------------
    def explanations(self, count: int = 200) -> list[tuple[str, Explanation]]:
        """Newest explanations first."""
        return decoded(self.client.xrevrange(self.names.explanations(), count=count), Explanation)

    def explanation_at(self, entry_id: str) -> Explanation | None:
        got = decoded(self.client.xrange(self.names.explanations(), entry_id, entry_id), Explanation)
        return got[0][1] if got else None

    def explanation(self, explanation_id: str, scan: int = 200) -> Explanation | None:
        """Search the newest ``scan`` explanations (each carries its heatmaps: keep the scan short)."""
        for _, e in decoded(self.client.xrevrange(self.names.explanations(), count=scan), Explanation):
            if e.explanation_id == explanation_id:
                return e
        return None

    def drift_reports(self, count: int = 2000) -> list[tuple[str, DriftReport]]:
        """Drift reports, oldest first (the newest ``count``)."""
        return list(reversed(decoded(self.client.xrevrange(self.names.drift(), count=count), DriftReport)))


@dataclass
class ModelCards:
    """Model cards of a registry directory (``<root>/<modality>/<version>/card.json`` + PNG plots)."""

    root: Path

    def versions(self) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        if not self.root.is_dir():
            return out
        for mdir in sorted(p for p in self.root.iterdir() if p.is_dir()):
            for vdir in sorted((p for p in mdir.iterdir() if (p / "card.json").is_file()),
                               key=lambda p: int(p.name[1:]) if p.name[1:].isdigit() else 0):
                out.append((mdir.name, vdir.name))
        return out

    def latest(self) -> list[tuple[str, str]]:
        newest: dict[str, str] = {}
        for modality, version in self.versions():
            newest[modality] = version
        return sorted(newest.items())

    def card(self, modality: str, version: str) -> dict[str, Any] | None:
        if (modality, version) not in self.versions():
            return None
        data = json.loads((self.root / modality / version / "card.json").read_text())
        return data if isinstance(data, dict) else None

    def plots(self, modality: str, version: str) -> list[str]:
        if (modality, version) not in self.versions():
            return []
        return sorted(p.name for p in (self.root / modality / version).glob("*.png"))

    def plot_path(self, modality: str, version: str, name: str) -> Path | None:
        """The PNG file, only if it is one of the card directory's own plots (no path tricks)."""
        if not _PNG_NAME.match(name) or name not in self.plots(modality, version):
            return None
        return self.root / modality / version / name

    def reference(self, modality: str) -> tuple[NDArray[np.float32], list[str]] | None:
        """The newest card's drift reference sample (``reference.npz``: features + names)."""
        version = dict(self.latest()).get(modality)
        if version is None:
            return None
        path = self.root / modality / version / "reference.npz"
        if not path.is_file():
            return None
        with np.load(path, allow_pickle=False) as z:
            return np.asarray(z["features"], np.float32), [str(n) for n in z["names"]]
