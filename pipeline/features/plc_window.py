"""PLC window features: per-asset tag windows of 10 s sliding by 1 s (event time).

Per tag (in ``PLC_TAGS`` order): ``mean``, ``std`` (population, ddof=0), ``max`` and
``slope`` (least-squares units per second); then one count per alarm family of the alarm
activations in the window; then ``n_samples`` and ``bad_quality_frac``. Missing values
(NaN in ``values``, or samples of Bad quality) are ignored; a statistic that cannot be
computed (no valid value of a tag; fewer than two distinct times for a slope) is NaN —
models impute it (see docs/features.md).

Windows are ``[end - 10 s, end)`` with ``end`` a multiple of 1 s; :class:`PlcWindowBuffer`
emits a window once the watermark reaches ``end - 1`` (Flink's rule for event-time windows).

>>> t = np.array([0, 1000, 2000, 3000])
>>> v = np.full((4, len(PLC_TAGS)), np.nan); v[:, 0] = [10.0, 12.0, 14.0, 16.0]
>>> f = dict(zip(plc_feature_names(), plc_window_features(t, v, ["A101", "A101", "A900"])))
>>> [float(f[k]) for k in ("motor_current_a.mean", "motor_current_a.slope", "alarms.A1xx", "alarms.A9xx")]
[13.0, 2.0, 2.0, 1.0]
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from linewatch.contract.plc_tags import PLC_TAGS



TAG_STATS: tuple[str, ...] = ("mean", "std", "max", "slope")

ALARM_FAMILIES: tuple[str, ...] = ("A1xx", "A2xx", "A3xx", "A4xx", "A5xx", "A9xx", "other")
"""Alarm families by the code's hundreds (``A101`` → ``A1xx``): A1xx bearing temperature,
A2xx vibration, A3xx pressure, A4xx motor overload, A5xx winding temperature, A9xx
communication/nuisance; any other code → ``other``."""

WINDOW_MS = 10_000
SLIDE_MS = 1_000
ACTIVE_STATES: frozenset[str] = frozenset({"ACTIVE"})
"""Alarm states counted as an activation."""

_FAMILY = re.compile(r"^A([1-9])\d\d$")


def alarm_family(code: str) -> str:
    """``"A101"`` → ``"A1xx"``; codes outside ``A100``–``A999`` → ``"other"``.

    >>> alarm_family("A905"), alarm_family("E17")
    ('A9xx', 'other')
    """
    match = _FAMILY.match(code.strip().upper())
    family = f"A{match.group(1)}xx" if match else "other"
    return family if family in ALARM_FAMILIES else "other"


def plc_feature_names() -> list[str]:
    """The fixed, ordered names of :func:`plc_window_features`' output (length 37)."""
    names = [f"{tag}.{stat}" for tag in PLC_TAGS for stat in TAG_STATS]
    names += [f"alarms.{family}" for family in ALARM_FAMILIES]
    names += ["n_samples", "bad_quality_frac"]
    return names


def alarm_counts(alarm_codes: Sequence[str]) -> dict[str, int]:
    """Activations per family (every family present, zeros included)."""
    counts = dict.fromkeys(ALARM_FAMILIES, 0)
    for code in alarm_codes:
        counts[alarm_family(code)] += 1
    return counts


def plc_window_features(
    timestamps_ms: np.ndarray,
    values: np.ndarray,
    alarm_codes: Sequence[str] = (),
    bad_mask: np.ndarray | None = None,
) -> np.ndarray:
    """Features of one window as ``float32`` aligned with :func:`plc_feature_names`.

    ``timestamps_ms`` ``(n,)``; ``values`` ``(n, len(PLC_TAGS))`` with NaN where a row has no
    value of that tag (long-format samples become one row each); ``alarm_codes`` the codes
    of the alarm activations in the window; ``bad_mask`` ``(n, len(PLC_TAGS))`` or ``(n,)``
    True where the historian flagged the value Bad (treated as missing, counted in
    ``bad_quality_frac``).
    """
    t = np.asarray(timestamps_ms, dtype=np.float64)
    v = np.array(values, dtype=np.float64, copy=True)
    if v.ndim != 2 or v.shape[1] != len(PLC_TAGS) or v.shape[0] != t.shape[0]:
        raise ValueError(f"values must be (n, {len(PLC_TAGS)}) matching timestamps (n,), got {v.shape} and {t.shape}")
    n_rows = v.shape[0]
    n_bad = 0
    if bad_mask is not None:
        bad = np.asarray(bad_mask, dtype=bool)
        bad2 = np.broadcast_to(bad[:, None] if bad.ndim == 1 else bad, v.shape)
        n_bad = int(bad2.any(axis=1).sum())
        v[bad2] = np.nan
    valid = ~np.isnan(v)
    count = valid.sum(axis=0)
    zero = np.where(valid, v, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = zero.sum(axis=0) / count
        dev = np.where(valid, v - mean, 0.0)
        std = np.sqrt((dev * dev).sum(axis=0) / count)
        vmax = np.where(valid, v, -np.inf).max(axis=0, initial=-np.inf)
        vmax[count == 0] = np.nan
        seconds = (t - (t.min() if n_rows else 0.0)) / 1000.0
        ts = np.where(valid, seconds[:, None], 0.0)
        t_mean = ts.sum(axis=0) / count
        t_dev = np.where(valid, seconds[:, None] - t_mean, 0.0)
        denom = (t_dev * t_dev).sum(axis=0)
        slope = (t_dev * dev).sum(axis=0) / denom
        slope[~(denom > 0)] = np.nan
    per_tag = np.stack([mean, std, vmax, slope], axis=1).reshape(-1)  # tag-major, TAG_STATS order
    counts = alarm_counts(alarm_codes)
    tail = [float(counts[f]) for f in ALARM_FAMILIES]
    tail += [float(n_rows), (n_bad / n_rows) if n_rows else 0.0]
    return np.concatenate([per_tag, np.asarray(tail)]).astype(np.float32)


class TagSampleLike(Protocol):
    """What the buffer reads from a :class:`pipeline.decoders.TagSample`."""

    @property
    def asset_id(self) -> str: ...
    @property
    def tag(self) -> str: ...
    @property
    def timestamp_ms(self) -> int: ...
    @property
    def value(self) -> float: ...
    @property
    def quality(self) -> str: ...


class AlarmLike(Protocol):
    """What the buffer reads from a :class:`pipeline.decoders.AlarmEvent`."""

    @property
    def asset_id(self) -> str: ...
    @property
    def timestamp_ms(self) -> int: ...
    @property
    def code(self) -> str: ...
    @property
    def state(self) -> str: ...


@dataclass(frozen=True)
class PlcWindow:
    """One completed window of one asset and its features (``values`` aligned with
    :func:`plc_feature_names`)."""

    asset_id: str
    start_ms: int
    end_ms: int
    values: np.ndarray
    n_samples: int
    alarm_counts: dict[str, int] = field(default_factory=dict)
    first_sample_ms: int = 0
    last_sample_ms: int = 0

    def as_dict(self) -> dict[str, float]:
        return dict(zip(plc_feature_names(), (float(x) for x in self.values)))


_TAG_INDEX = {tag: i for i, tag in enumerate(PLC_TAGS)}


class PlcWindowBuffer:
    """Incremental sliding windows of one asset, for a Flink keyed process function.

    Append samples/alarms in any order, call :meth:`advance` with the watermark; it returns
    every window ``[end - window_ms, end)`` with ``end`` a multiple of ``slide_ms`` and
    ``end - 1 <= watermark`` that holds at least one sample, each exactly once, in order.
    Memory is bounded: samples no later window needs are dropped at each advance, and at most
    ``max_samples`` are kept (oldest dropped first, counted in ``dropped_overflow``). A
    sample whose every window was already emitted is refused (``dropped_late``).
    Deterministic: the same inputs give the same windows. :meth:`to_state` /
    :meth:`from_state` give a JSON-able snapshot for Flink ``ValueState``.

    >>> buf = PlcWindowBuffer("PMP-01")
    >>> for ms in range(0, 12_000, 100):
    ...     _ = buf.add("motor_current_a", ms, 10.0)
    >>> [(w.start_ms, w.end_ms, w.n_samples) for w in buf.advance(2_500)]
    [(-9000, 1000, 10), (-8000, 2000, 20)]
    >>> len(buf.advance(10_999)), buf.add("motor_current_a", 500, 1.0), buf.add("motor_current_a", 2500, 1.0)
    (9, False, True)
    """

    def __init__(self, asset_id: str, window_ms: int = WINDOW_MS, slide_ms: int = SLIDE_MS,
                 max_samples: int = 50_000) -> None:
        if window_ms <= 0 or slide_ms <= 0 or window_ms % slide_ms:
            raise ValueError("window_ms and slide_ms must be positive and window_ms a multiple of slide_ms")
        self.asset_id = asset_id
        self.window_ms = window_ms
        self.slide_ms = slide_ms
        self.max_samples = max_samples
        self._ts: list[int] = []
        self._col: list[int] = []
        self._val: list[float] = []
        self._bad: list[bool] = []
        self._alarms: list[tuple[int, str]] = []
        self.last_closed_end: int | None = None
        self.dropped_late = 0
        self.dropped_overflow = 0

    def __len__(self) -> int:
        return len(self._ts)

    def _too_late(self, timestamp_ms: int) -> bool:
        if self.last_closed_end is None:
            return False
        last_end_containing = (timestamp_ms // self.slide_ms) * self.slide_ms + self.window_ms
        return last_end_containing <= self.last_closed_end

    def add(self, tag: str, timestamp_ms: int, value: float, bad: bool = False) -> bool:
        """Buffer one value; False (and nothing stored) for an unknown tag or a too-late sample."""
        col = _TAG_INDEX.get(tag)
        if col is None:
            return False
        if self._too_late(timestamp_ms):
            self.dropped_late += 1
            return False
        self._ts.append(int(timestamp_ms))
        self._col.append(col)
        self._val.append(float(value))
        self._bad.append(bool(bad))
        if len(self._ts) > self.max_samples:
            oldest = int(np.argmin(self._ts))
            for column in (self._ts, self._col, self._val, self._bad):
                column.pop(oldest)
            self.dropped_overflow += 1
        return True

    def add_sample(self, sample: TagSampleLike) -> bool:
        """Buffer a :class:`pipeline.decoders.TagSample` (Bad quality → missing, flagged)."""
        return self.add(sample.tag, sample.timestamp_ms, sample.value, sample.quality == "Bad")

    def add_alarm(self, timestamp_ms: int, code: str, state: str = "ACTIVE") -> bool:
        """Buffer an alarm state change; only activations are counted."""
        if state.upper() not in ACTIVE_STATES:
            return False
        if self._too_late(timestamp_ms):
            self.dropped_late += 1
            return False
        self._alarms.append((int(timestamp_ms), code))
        if len(self._alarms) > self.max_samples:
            self._alarms.remove(min(self._alarms))
            self.dropped_overflow += 1
        return True

    def add_alarm_event(self, event: AlarmLike) -> bool:
        """Buffer a :class:`pipeline.decoders.AlarmEvent`."""
        return self.add_alarm(event.timestamp_ms, event.code, event.state)

    def advance(self, watermark_ms: int) -> list[PlcWindow]:
        """Emit every window complete at ``watermark_ms`` (``end - 1 <= watermark``)."""
        out: list[PlcWindow] = []
        if not self._ts:
            return out
        ts = np.asarray(self._ts, dtype=np.int64)
        cols = np.asarray(self._col, dtype=np.int64)
        vals = np.asarray(self._val, dtype=np.float64)
        bads = np.asarray(self._bad, dtype=bool)
        alarm_ts = np.asarray([a[0] for a in self._alarms], dtype=np.int64)
        alarm_codes = [a[1] for a in self._alarms]
        keep = np.ones(ts.shape[0], dtype=bool)
        while keep.any():
            first = int(ts[keep].min())
            end = (first // self.slide_ms + 1) * self.slide_ms
            if self.last_closed_end is not None:
                end = max(end, self.last_closed_end + self.slide_ms)
            if watermark_ms < end - 1:
                break
            start = end - self.window_ms
            sel = keep & (ts >= start) & (ts < end)
            idx = np.flatnonzero(sel)
            order = idx[np.argsort(ts[idx], kind="stable")]
            wide = np.full((order.shape[0], len(PLC_TAGS)), np.nan)
            wide[np.arange(order.shape[0]), cols[order]] = vals[order]
            codes = [alarm_codes[i] for i in np.flatnonzero((alarm_ts >= start) & (alarm_ts < end))]
            features = plc_window_features(ts[order], wide, codes, bad_mask=bads[order])
            out.append(PlcWindow(self.asset_id, start, end, features, int(order.shape[0]), alarm_counts(codes),
                                 int(ts[order[0]]), int(ts[order[-1]])))
            self.last_closed_end = end
            keep &= ts >= end + self.slide_ms - self.window_ms
        if out:
            kept = np.flatnonzero(keep)
            self._ts = ts[kept].tolist()
            self._col = cols[kept].tolist()
            self._val = vals[kept].tolist()
            self._bad = bads[kept].tolist()
            horizon = self.last_closed_end + self.slide_ms - self.window_ms  # type: ignore[operator]
            self._alarms = [a for a in self._alarms if a[0] >= horizon]
        return out

    def flush(self) -> list[PlcWindow]:
        """Emit every remaining window that holds a sample (end of input)."""
        if not self._ts:
            return []
        return self.advance(max(self._ts) + self.window_ms)

    def to_state(self) -> dict[str, object]:
        """JSON-able snapshot (NaN values are written as None)."""
        return {
            "asset_id": self.asset_id, "window_ms": self.window_ms, "slide_ms": self.slide_ms,
            "max_samples": self.max_samples, "ts": list(self._ts), "col": list(self._col),
            "val": [None if math.isnan(x) else x for x in self._val], "bad": list(self._bad),
            "alarms": [list(a) for a in self._alarms], "last_closed_end": self.last_closed_end,
            "dropped_late": self.dropped_late, "dropped_overflow": self.dropped_overflow,
        }

    @classmethod
    def from_state(cls, state: dict[str, object]) -> PlcWindowBuffer:
        """Rebuild a buffer from :meth:`to_state`'s output."""
        buf = cls(str(state["asset_id"]), int(state["window_ms"]), int(state["slide_ms"]),  # type: ignore[arg-type]
                  int(state["max_samples"]))  # type: ignore[arg-type]
        buf._ts = [int(x) for x in state["ts"]]  # type: ignore[union-attr]
        buf._col = [int(x) for x in state["col"]]  # type: ignore[union-attr]
        buf._val = [math.nan if x is None else float(x) for x in state["val"]]  # type: ignore[union-attr]
        buf._bad = [bool(x) for x in state["bad"]]  # type: ignore[union-attr]
        buf._alarms = [(int(a[0]), str(a[1])) for a in state["alarms"]]  # type: ignore[union-attr]
        last = state["last_closed_end"]
        buf.last_closed_end = None if last is None else int(last)  # type: ignore[arg-type]
        buf.dropped_late = int(state["dropped_late"])  # type: ignore[arg-type]
        buf.dropped_overflow = int(state["dropped_overflow"])  # type: ignore[arg-type]
        return buf


def plc_windows(samples: Iterable[TagSampleLike], alarms: Iterable[AlarmLike] = (), *,
                window_ms: int = WINDOW_MS, slide_ms: int = SLIDE_MS) -> dict[str, list[PlcWindow]]:
    """Batch helper (training, tests): every window of every asset in ``samples``
    (:class:`~pipeline.decoders.TagSample`) and ``alarms`` (:class:`~pipeline.decoders.AlarmEvent`).

    Edge windows at the start/end of the data hold less than ``window_ms`` of samples: filter
    on ``first_sample_ms``/``last_sample_ms`` if only full windows are wanted.
    """
    events: list[tuple[int, int, TagSampleLike | AlarmLike]] = [(s.timestamp_ms, 0, s) for s in samples]
    events += [(a.timestamp_ms, 1, a) for a in alarms]
    events.sort(key=lambda e: (e[0], e[1]))
    buffers: dict[str, PlcWindowBuffer] = {}
    out: dict[str, list[PlcWindow]] = {}
    next_advance: dict[str, int] = {}
    for ts, kind, item in events:
        asset = item.asset_id
        buf = buffers.get(asset)
        if buf is None:
            if kind == 1:
                continue  # alarms of an asset without samples make no window
            buf = buffers[asset] = PlcWindowBuffer(asset, window_ms, slide_ms, max_samples=1 << 40)
            out[asset] = []
            next_advance[asset] = ts + 60_000
        if ts >= next_advance[asset]:  # time-ordered input: everything before ts is complete
            out[asset] += buf.advance(ts - 1)
            next_advance[asset] = ts + 60_000
        if kind == 0:
            buf.add_sample(item)  # type: ignore[arg-type]
        else:
            buf.add_alarm_event(item)  # type: ignore[arg-type]
    for asset, buf in buffers.items():
        out[asset] += buf.flush()
    return dict(sorted(out.items()))
