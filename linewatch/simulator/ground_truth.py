"""Ground truth: per asset and time interval, the observable fault label, the
hidden severity at the interval's start and end, and the active drift kinds.

``ground_truth.csv`` columns: ``asset_id,start,end,fault,severity_start,severity_end,drift``
(ISO-8601 UTC ms timestamps, interval ``[start, end)``; ``fault`` is the
thresholded label - ``normal`` below ``LABEL_THRESHOLD`` even while a
sub-threshold fault grows, which the severity columns still show; ``drift`` is
``none`` or ``;``-joined kinds).  Intervals of one asset tile the run without
gaps; fault intervals are split every ``config.ground_truth_step_s`` seconds.
"""

from __future__ import annotations

import bisect
import csv
import io
import math
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np

from .scenario import Scenario
from .timefmt import parse_iso, to_datetime

GT_COLUMNS: tuple[str, ...] = ("asset_id", "start", "end", "fault", "severity_start", "severity_end", "drift")


@dataclass(frozen=True)
class GroundTruthInterval:
    """One row of ``ground_truth.csv``."""

    asset_id: str
    start: datetime
    end: datetime
    fault: str
    severity_start: float
    severity_end: float
    drift: tuple[str, ...]

    def row(self) -> list[str]:
        """CSV cells."""
        return [self.asset_id, _iso(self.start), _iso(self.end), self.fault, f"{self.severity_start:.4f}",
                f"{self.severity_end:.4f}", ";".join(self.drift) if self.drift else "none"]


def _iso(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


class GroundTruth:
    """Queryable ground truth (built from a scenario or read back from CSV)."""

    def __init__(self, intervals: list[GroundTruthInterval], start_time: datetime | None = None) -> None:
        self.intervals = sorted(intervals, key=lambda r: (r.asset_id, r.start))
        self.start_time = start_time
        self._by_asset: dict[str, list[GroundTruthInterval]] = {}
        for r in self.intervals:
            self._by_asset.setdefault(r.asset_id, []).append(r)
        self._starts = {k: [r.start for r in v] for k, v in self._by_asset.items()}

    def __len__(self) -> int:
        return len(self.intervals)

    def __iter__(self):
        return iter(self.intervals)

    @classmethod
    def from_scenario(cls, scenario: Scenario, start_time: datetime, until_s: float) -> GroundTruth:
        """Tabulate ``scenario`` over ``[0, until_s)`` seconds after ``start_time``."""
        step = scenario.config.ground_truth_step_s
        rows: list[GroundTruthInterval] = []
        for asset in scenario.fleet:
            aid = asset.asset_id
            cuts = {0.0, until_s}
            cuts.update(k * scenario.block_s for k in range(scenario.n_blocks + 1))
            for ep in scenario.episodes[aid]:
                lab = ep.label_onset_s
                full = ep.time_at_severity(1.0)
                cuts.update(x for x in (ep.onset_s, lab, full, ep.end_s) if math.isfinite(x))
                if math.isfinite(lab):
                    cuts.update(np.arange(lab, min(ep.end_s, until_s), step).tolist())
            for ev in scenario.drifts[aid]:
                cuts.update((ev.onset_s, ev.onset_s + ev.ramp_s, ev.end_s))
            pts = sorted({round(c, 3) for c in cuts if 0.0 <= c <= until_s})
            segs: list[list] = []
            for a, b in zip(pts[:-1], pts[1:], strict=True):
                if b <= a:
                    continue
                mid = 0.5 * (a + b)
                label = scenario.label_at(aid, mid)
                drift = scenario.drift_kinds_at(aid, mid)
                sev = scenario.health(aid, np.array([a, mid, max(a, b - 1e-6)])).severity
                if segs and label == "normal" and segs[-1][3] == "normal" and segs[-1][6] == drift:
                    segs[-1][2] = b
                    segs[-1][5] = float(sev[2])
                else:
                    segs.append([aid, a, b, label, float(sev[0]), float(sev[2]), drift])
            for aid_, a, b, label, s0, s1, drift in segs:
                rows.append(GroundTruthInterval(aid_, to_datetime(start_time, a), to_datetime(start_time, b),
                                                label, s0, s1, drift))
        return cls(rows, start_time)

    def to_csv_text(self) -> str:
        """CSV text with header."""
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(GT_COLUMNS)
        for r in self.intervals:
            w.writerow(r.row())
        return buf.getvalue()

    @classmethod
    def read_csv(cls, path: str | Path) -> GroundTruth:
        """Read ``ground_truth.csv``."""
        rows = []
        with open(path, newline="") as fh:
            for rec in csv.DictReader(fh):
                drift = () if rec["drift"] in ("", "none") else tuple(rec["drift"].split(";"))
                rows.append(GroundTruthInterval(rec["asset_id"], parse_iso(rec["start"]), parse_iso(rec["end"]),
                                                rec["fault"], float(rec["severity_start"]),
                                                float(rec["severity_end"]), drift))
        start = min((r.start for r in rows), default=None)
        return cls(rows, start)

    def interval_at(self, asset_id: str, t: datetime | str | float) -> GroundTruthInterval | None:
        """The interval containing ``t`` (datetime, ISO string, or seconds after the start)."""
        when = self._as_datetime(t)
        starts = self._starts.get(asset_id, [])
        i = bisect.bisect_right(starts, when) - 1
        if i < 0:
            return None
        r = self._by_asset[asset_id][i]
        return r if r.start <= when < r.end else None

    def label_at(self, asset_id: str, t: datetime | str | float) -> str:
        """Fault label at ``t`` (``normal`` outside the tabulated range)."""
        r = self.interval_at(asset_id, t)
        return r.fault if r is not None else "normal"

    def _as_datetime(self, t: datetime | str | float) -> datetime:
        if isinstance(t, datetime):
            return t if t.tzinfo else parse_iso(t.isoformat() + "Z")
        if isinstance(t, str):
            return parse_iso(t)
        if self.start_time is None:
            raise ValueError("numeric time needs a start_time")
        return to_datetime(self.start_time, float(t))

