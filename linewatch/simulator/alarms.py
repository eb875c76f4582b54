"""Controller alarms derived from measured PLC tags.

Each rule filters its tag (exponential moving average, 2 s, ``Bad`` samples
held at the last good value), then applies a threshold with hysteresis: the
alarm goes ``ACTIVE`` when the filtered value crosses ``on`` and ``CLEARED``
when it comes back past ``off``.  An operator ``ACK`` follows each activation
after 5-45 s.  ``A900 COMMS RETRY`` nuisance alarms appear at random
(Poisson) and clear by themselves after 1-3 s.

Line format (one event per line)::

    <timestamp> <asset_id> <code> <ACTIVE|CLEARED|ACK> <MESSAGE WORDS> <value> <unit>
    2026-11-29T14:00:01.300Z PMP-01 A101 ACTIVE HIGH BEARING TEMP 82.4 degC
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.signal import lfilter

from .assets import Asset
from .config import DifficultyProfile, SimulatorConfig
from .noise import hash_uniform, stream_key
from .plc import BAD, PlcSamples
from .tags import PLC_TAGS

ALARM_STATES: tuple[str, ...] = ("ACTIVE", "CLEARED", "ACK")
ALARM_LINE_REGEX = r"^(\S+) (\S+) (A\d{3}) (ACTIVE|CLEARED|ACK) (.+) (-?\d+\.\d) (\S+)$"


@dataclass(frozen=True)
class AlarmRule:
    """Threshold alarm on one tag (``high``: fires above ``on``; ``low``: below)."""

    code: str
    message: str
    tag: str
    direction: str
    on: float
    off: float
    unit: str
    needs_running: bool = False


@dataclass(frozen=True)
class AlarmEvent:
    """One alarm state change."""

    t: float
    asset_id: str
    code: str
    state: str
    message: str
    value: float
    unit: str

    def line(self, timestamp: str) -> str:
        """The log line for this event with the given ISO timestamp."""
        return f"{timestamp} {self.asset_id} {self.code} {self.state} {self.message} {self.value:.1f} {self.unit}"


def alarm_rules(asset: Asset) -> list[AlarmRule]:
    """The alarm rules configured for an asset."""
    rules = [
        AlarmRule("A101", "HIGH BEARING TEMP", "bearing_temp_c", "high", 70.0, 66.0, "degC"),
        AlarmRule("A201", "HIGH VIBRATION", "vibration_rms_mm_s", "high", 7.1, 6.0, "mm/s"),
        AlarmRule("A401", "MOTOR OVERLOAD", "motor_current_a", "high", round(1.15 * asset.rated_current_a, 1),
                  round(1.05 * asset.rated_current_a, 1), "A", needs_running=True),
        AlarmRule("A501", "HIGH WINDING TEMP", "winding_temp_c", "high", 110.0, 105.0, "degC"),
    ]
    if asset.asset_type == "pump":
        p = asset.pressure_nominal_bar
        rules.insert(2, AlarmRule("A301", "LOW DISCHARGE PRESSURE", "pressure_bar", "low", round(0.8 * p, 2),
                                  round(0.86 * p, 2), "bar", needs_running=True))
    return rules


NUISANCE_CODE = "A900"
NUISANCE_MESSAGE = "COMMS RETRY"


class AlarmEngine:
    """Stateful alarm evaluation for one asset; feed consecutive :class:`PlcSamples`."""

    def __init__(self, asset: Asset, config: SimulatorConfig, profile: DifficultyProfile) -> None:
        self.asset = asset
        self.config = config
        self.rules = alarm_rules(asset)
        self.key = stream_key(config.seed, "alarms", asset.asset_id)
        self.dt = 1.0 / config.plc_rate_hz
        self.alpha = math.exp(-self.dt / 2.0)
        self.nuisance_p = config.nuisance_alarms_per_hour * profile.confounder_rate / 3600.0 * self.dt
        self._filt: dict[str, float] = {}
        self._last_good: dict[str, float] = {}
        self._state: dict[str, int] = {r.code: 0 for r in self.rules}
        self._pending: list[AlarmEvent] = []

    def _filtered(self, rule: AlarmRule, s: PlcSamples) -> np.ndarray:
        j = PLC_TAGS.index(rule.tag)
        x = s.values[:, j].astype(np.float64)
        bad = s.quality[:, j] == BAD
        if bad.any():
            x = np.where(bad, np.nan, x)
            first = self._last_good.get(rule.tag, float(np.nanmean(x)) if (~bad).any() else 0.0)
            idx = np.where(~np.isnan(x), np.arange(len(x)), -1)
            idx = np.maximum.accumulate(idx)
            x = np.where(idx >= 0, x[np.maximum(idx, 0)], first)
        self._last_good[rule.tag] = float(x[-1])
        y0 = self._filt.get(rule.tag, float(x[0]))
        y, _ = lfilter([1 - self.alpha], [1, -self.alpha], x, zi=[self.alpha * y0])
        self._filt[rule.tag] = float(y[-1])
        return y

    def update(self, s: PlcSamples) -> list[AlarmEvent]:
        """Evaluate the samples; return events up to ``s.t[-1]`` in time order."""
        if len(s) == 0:
            return []
        events: list[AlarmEvent] = []
        aid = self.asset.asset_id
        speed = s.column("speed_rpm")
        running = (s.column("run_state") > 0.5) & (speed > 0.9 * self.asset.nominal_rpm)
        for rule in self.rules:
            f = self._filtered(rule, s)
            raw = s.column(rule.tag)
            if rule.direction == "high":
                on, off = f > rule.on, f < rule.off
            else:
                on, off = f < rule.on, f > rule.off
            if rule.needs_running:
                on &= running
                off |= ~running
            mark = np.where(on, 1, np.where(off, 0, -1))
            pos = np.maximum.accumulate(np.where(mark >= 0, np.arange(len(mark)), -1))
            prev = self._state[rule.code]
            state = np.where(pos >= 0, mark[np.maximum(pos, 0)], prev)
            before = np.concatenate([[prev], state[:-1]])
            self._state[rule.code] = int(state[-1])
            for i in np.flatnonzero(state != before):
                t = float(s.t[i])
                if state[i] == 1:
                    events.append(AlarmEvent(t, aid, rule.code, "ACTIVE", rule.message, float(raw[i]), rule.unit))
                    tick = int(round(t / self.dt))
                    delay = 5.0 + 40.0 * float(hash_uniform(self.key + 1, tick))
                    self._pending.append(AlarmEvent(t + delay, aid, rule.code, "ACK", rule.message,
                                                    float(raw[i]), rule.unit))
                else:
                    events.append(AlarmEvent(t, aid, rule.code, "CLEARED", rule.message, float(raw[i]), rule.unit))
        # Nuisance comms alarms
        ticks = np.round(s.t / self.dt).astype(np.int64)
        for i in np.flatnonzero(hash_uniform(self.key + 2, ticks) < self.nuisance_p):
            t = float(s.t[i])
            retries = float(1 + int(5 * hash_uniform(self.key + 3, ticks[i])))
            events.append(AlarmEvent(t, aid, NUISANCE_CODE, "ACTIVE", NUISANCE_MESSAGE, retries, "retries"))
            dur = 1.0 + 2.0 * float(hash_uniform(self.key + 4, ticks[i]))
            self._pending.append(AlarmEvent(t + dur, aid, NUISANCE_CODE, "CLEARED", NUISANCE_MESSAGE, 0.0,
                                            "retries"))
        t_end = float(s.t[-1])
        due = [e for e in self._pending if e.t <= t_end]
        self._pending = [e for e in self._pending if e.t > t_end]
        events.extend(due)
        events.sort(key=lambda e: (e.t, e.code, ALARM_STATES.index(e.state)))
        return events
