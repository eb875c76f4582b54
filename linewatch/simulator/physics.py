"""True (unmeasured) physical state of one asset on the PLC tick grid.

:class:`AssetPhysics` turns operating point + hidden health + drift into the
physical quantities every sensor observes: shaft speed, motor current,
component temperatures, vibration velocity and pressure.  Sensors
(:mod:`.plc`, :mod:`.thermal`, :mod:`.audio`) add their own errors on top.

Model summary (``L`` load fraction, ``sf`` speed fraction (0 stopped, 1 running),
``E_f = signature_gain * severity`` if fault ``f`` is present, else 0):

* speed: ``f_r = (2 f_line / p) (1 - s_rated L) sf``; ``sf`` follows ``run``
  with a first-order lag (1.2 s).
* current: ``I = I_r sqrt(i0^2 + (1 - i0^2) L'^2) + 5 I_r (1 - sf)^2`` while
  running (``i0 = 0.35`` magnetising current; second term = start-up inrush);
  ``L'`` is ``L`` raised by friction (bearing wear, imbalance), lowered by
  cavitation (less flow).
* temperatures: each steady state ``T_ss`` is approached by a first-order lag
  ``T[n] = a T[n-1] + (1 - a) T_ss[n]``, ``a = exp(-dt/tau)``:

  - DE bearing ``T_amb + R_b (0.35 + 0.65 L sf) sf + 40 E_bw^2 + 7 E_imb + 5 E_cool + 4 E_cav``
    (bearing wear heats late - P-F curve: the envelope spectrum sees it first)
  - winding ``T_amb + R_w (0.2 run + 0.8 (I/I_r)^2)(1 + 1.6 E_cool) + 6 E_elec``
  - terminal-box hotspot (above the box) ``70 E_elec (I/I_r)^2`` (I^2 R at a loose lug)

* vibration (ISO 10816 velocity RMS): ``v = sqrt(v_h^2 + (8 E_imb sf^2)^2 +
  (2.2 E_bw^1.5)^2 + (2.5 E_cav)^2 + ...)`` with healthy ``v_h ~ 1-3 mm/s``.
* pressure: pump discharge follows the affinity law ``P ~ n^2`` and drops by
  ``25 % E_cav`` with a fluctuation of ``4 % E_cav``; press hydraulic pressure follows the stroke;
  conveyor gearbox lube pressure follows speed.
* a variable-speed drive (``drive_fraction`` k: the speed it sets over the rated speed) moves the
  operating point as the machine's load curve says: a centrifugal machine (pump, fan) needs torque
  ``~ n^2`` (load ``L k^2``, so current and heat fall with speed), its discharge pressure follows
  ``k^2`` (affinity laws) over the share of it that static head and suction pressure hold
  (``s + (1 - s) k^2``, ``s`` 0-0.35 per machine); a constant-torque machine (conveyor, press,
  compressor) keeps its torque. Of the healthy vibration velocity a share ``a`` (0.15-0.6 per
  machine: flow, process, structure) does not follow speed, the rest goes with ``k^n`` (``n`` 1-2
  per machine: how the machine's mounting answers its rotor's forces), as does the vibration of an
  imbalance; bearing friction heat and gearbox lube pressure go with ``k``. At ``k = 1`` nothing
  changes.
* ``varied_cavitation`` (the domain-randomised fleets): how a pump shows cavitation is its own
  (its NPSH margin, its system): head lost ``0.05-0.30 E_cav`` and pressure pulsation
  ``0.03-0.12 E_cav`` of the nominal pressure per machine, instead of ``0.25`` and ``0.04``, and
  its cavitation vibration comes in bursts (each tick's level ``1 + b |N(0, 1)|`` times the steady
  one, ``b`` 0.2-0.9 per machine; from ``Asset.extra["cavitation_burst_floor"]`` instead of 0.2 where
  the domain sets it, e.g. 0: from steady to bursty) instead of steadily.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np
from scipy.signal import lfilter

from .assets import Asset, behaves_like
from .config import DifficultyProfile, SimulatorConfig
from .drift import DriftState
from .health import FAULT_CLASSES, FAULT_INDEX, HealthArrays
from .noise import hash_normal, hash_uniform, stream_key, value_noise

I0 = 0.35  # magnetising current as a fraction of rated current
_TEMP_STATES = ("bearing_c", "nde_c", "winding_c", "hotspot_k", "driven_c", "coupling_c")
_TAU_FACTOR = (1.0, 1.0, 0.75, 0.3, 2.0, 1.0)
# Fault heat at the bearing housings (K at effect 1; bearing wear goes with the effect squared).
BEARING_WEAR_DE_K = 40.0
BEARING_WEAR_NDE_K = 4.0
COOLING_DE_K = 5.0
COOLING_NDE_K = 14.0
#: The NDE bearing's friction rise as a share of the DE bearing's, unless the asset's ``extra`` has
#: its own ``thermal_nde_friction_share`` (:attr:`~.domain.DomainSpec.nde_friction_share`).
NDE_FRICTION_SHARE = 0.8
#: The least burstiness ``b`` of a pump's cavitation vibration under ``varied_cavitation`` (``b`` up to
#: 0.9), unless the asset's ``extra`` has its own ``cavitation_burst_floor``
#: (:attr:`~.domain.DomainSpec.cavitation_burst_floor`).
CAVITATION_BURST_FLOOR = 0.2
#: How a self-ventilated motor's forced-convection cooling grows with its fan's speed (turbulent heat
#: transfer goes with the 0.8 power of the air speed, Dittus-Boelter), and the least speed fraction it is read at.
FAN_COOLING_EXPONENT = 0.8
FAN_COOLING_MIN_SPEED = 0.1


def fan_cooling_share(drive_fraction: float, still_share: float | None) -> float:
    """The share of its rated cooling a motor has at ``drive_fraction`` of its rated speed: ``a + (1 - a)
    k^0.8`` for a self-ventilated motor that keeps ``a`` (``still_share``) with its fan stopped, below rated
    speed; 1 where ``still_share`` is None (the shipped domains and the plant: cooling that does not change
    with speed) or at or above rated speed.

    >>> [round(fan_cooling_share(k, 1 / 3), 3) for k in (1.0, 0.5, 0.3)], fan_cooling_share(0.5, None)
    ([1.0, 0.716, 0.588], 1.0)
    """
    if still_share is None or drive_fraction >= 1.0:
        return 1.0
    k = max(float(drive_fraction), FAN_COOLING_MIN_SPEED)
    return float(still_share) + (1.0 - float(still_share)) * k**FAN_COOLING_EXPONENT


@dataclass(frozen=True)
class Snapshot:
    """Physical state of one asset at one instant (input to frame/clip rendering)."""

    t: float
    run: float
    speed_frac: float
    load: float
    stroke: float
    shaft_hz: float
    current_a: float
    current_ratio: float
    bearing_c: float
    nde_c: float
    winding_c: float
    hotspot_k: float
    driven_c: float
    coupling_c: float
    ambient_c: float
    vibration_mm_s: float
    pressure_bar: float
    fault: str
    severity: float
    effect: float
    variant: str


@dataclass
class PhysicsBlock:
    """Physical state on a run of consecutive PLC ticks (all arrays share ``t``'s shape)."""

    t: np.ndarray
    idx: np.ndarray
    run: np.ndarray
    speed_frac: np.ndarray
    load: np.ndarray
    stroke: np.ndarray
    shaft_hz: np.ndarray
    current_a: np.ndarray
    bearing_c: np.ndarray
    nde_c: np.ndarray
    winding_c: np.ndarray
    hotspot_k: np.ndarray
    driven_c: np.ndarray
    coupling_c: np.ndarray
    ambient_c: np.ndarray
    vibration_mm_s: np.ndarray
    pressure_bar: np.ndarray
    code: np.ndarray
    severity: np.ndarray
    effect: np.ndarray
    variant: np.ndarray
    rated_current_a: float

    _ARRAYS = ("t", "idx", "run", "speed_frac", "load", "stroke", "shaft_hz", "current_a", "bearing_c",
               "nde_c", "winding_c", "hotspot_k", "driven_c", "coupling_c", "ambient_c", "vibration_mm_s",
               "pressure_bar", "code", "severity", "effect", "variant")

    def __len__(self) -> int:
        return int(self.t.shape[0])

    @classmethod
    def concat(cls, blocks: list[PhysicsBlock]) -> PhysicsBlock:
        """Join consecutive blocks."""
        if len(blocks) == 1:
            return blocks[0]
        kw = {f.name: getattr(blocks[-1], f.name) for f in fields(cls)}
        for name in cls._ARRAYS:
            kw[name] = np.concatenate([getattr(b, name) for b in blocks])
        return cls(**kw)

    def tail(self, start_t: float) -> PhysicsBlock:
        """The part of the block at or after ``start_t``."""
        keep = self.t >= start_t
        kw = {f.name: getattr(self, f.name) for f in fields(self)}
        for name in self._ARRAYS:
            kw[name] = kw[name][keep]
        return PhysicsBlock(**kw)

    def snapshot(self, t: float) -> Snapshot:
        """Linearly interpolated state at time ``t`` (fault/variant from the tick at or before ``t``)."""
        vals = {name: float(np.interp(t, self.t, getattr(self, name)))
                for name in ("run", "speed_frac", "load", "stroke", "shaft_hz", "current_a", "bearing_c",
                             "nde_c", "winding_c", "hotspot_k", "driven_c", "coupling_c", "ambient_c",
                             "vibration_mm_s", "pressure_bar", "severity", "effect")}
        i = int(np.clip(np.searchsorted(self.t, t, side="right") - 1, 0, len(self.t) - 1))
        fault = FAULT_CLASSES[int(self.code[i])]
        return Snapshot(t=float(t), fault=fault, variant=str(self.variant[i]) if fault != "normal" else "",
                        current_ratio=vals["current_a"] / self.rated_current_a, **vals)


def operating_load(asset: Asset, t: np.ndarray, key: int, spread: float = 1.0,
                   level: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Load fraction and press-stroke pulse (0..1, zeros for other types) at times ``t``.

    ``level`` in ``[-1, 1]`` shifts the operating point (dataset scenarios).
    """
    lp = asset.load
    stroke = np.zeros_like(t)
    if lp.kind == "cyclic":
        phase0 = hash_uniform(key, 1)[()] * lp.cycle_s
        ph = np.mod((t + phase0) / lp.cycle_s, 1.0)
        edge = 0.06
        stroke = np.clip(ph / edge, 0.0, 1.0) * np.clip((lp.duty - ph) / edge, 0.0, 1.0)
        high = lp.high * (1.0 + 0.05 * spread * level) + 0.03 * spread * value_noise(key + 3, t, 30.0)
        load = lp.low + (high - lp.low) * stroke + 0.01 * value_noise(key + 4, t, 0.7)
    elif lp.kind == "varying":
        mean = lp.mean * (1.0 + 0.25 * spread * level)
        load = (mean + lp.spread * spread * value_noise(key + 5, t, 8.0)
                + 0.05 * spread * value_noise(key + 6, t, 1.3))
    else:
        mean = lp.mean * (1.0 + 0.15 * spread * level)
        load = (mean + lp.spread * spread * value_noise(key + 7, t, 45.0)
                + 0.015 * value_noise(key + 8, t, 3.0))
    return np.clip(load, 0.05, 1.15), stroke


def run_schedule(t: np.ndarray, key: int, stops_per_hour: float, window_s: float = 120.0) -> np.ndarray:
    """1.0 while running, 0.0 during occasional unplanned stops (4-20 s each).

    Time is cut into ``window_s`` windows; each holds at most one stop with
    probability ``stops_per_hour * window_s / 3600`` (the first window never
    stops during its first 20 s so runs start in steady operation).
    """
    if stops_per_hour <= 0:
        return np.ones_like(t)
    w = np.floor(t / window_s).astype(np.int64)
    p = min(0.9, stops_per_hour * window_s / 3600.0)
    has = hash_uniform(key, w) < p
    start = 20.0 + hash_uniform(key + 1, w) * (window_s - 40.0)
    dur = 4.0 + 16.0 * hash_uniform(key + 2, w)
    local = t - w * window_s
    stopped = has & (local >= start) & (local < start + dur)
    return np.where(stopped, 0.0, 1.0)


def _lag(x: np.ndarray, a: float, y_prev: float) -> np.ndarray:
    """First-order lag ``y[n] = a y[n-1] + (1 - a) x[n]`` continuing from ``y_prev``."""
    y, _ = lfilter([1.0 - a], [1.0, -a], x, zi=[a * y_prev])
    return y


class AssetPhysics:
    """Stateful physics of one asset; call :meth:`step` with consecutive tick grids.

    ``force_run`` disables unplanned stops, ``load_level`` (-1..1) shifts the
    operating point and ``ambient_offset_c`` the hall temperature (used by
    dataset scenarios).  Thermal states start in equilibrium (the asset has
    been running like this for a while).
    """

    def __init__(self, asset: Asset, config: SimulatorConfig, profile: DifficultyProfile,
                 force_run: bool = False, load_level: float = 0.0, ambient_offset_c: float = 0.0,
                 drive_fraction: float = 1.0, varied_cavitation: bool = False) -> None:
        self.asset = asset
        self.varied_cavitation = varied_cavitation
        #: The speed a variable-speed drive sets, over the rated speed (1: line-fed). The caller
        #: runs ``asset`` at the drive's frequency (its ``line_frequency_hz`` scaled by it), so the
        #: shaft turns at that speed; this moves the load, pressure and vibration with it.
        self.drive_fraction = float(drive_fraction)
        self.config = config
        self.profile = profile
        self.force_run = force_run
        self.load_level = load_level
        self.ambient_offset_c = ambient_offset_c
        self.key = stream_key(config.seed, "physics", asset.asset_id)
        self.dt = 1.0 / config.plc_rate_hz
        self._speed_state: float | None = None
        self._temp_state: list[float] | None = None
        # the machine's laws, drawn once (pure functions of it); a line-fed machine needs none
        self._laws = self._speed_laws() if self.drive_fraction != 1.0 else (0.0, 2.0, 0.0)
        self._cavitation = self._cavitation_law()

    def _speed_laws(self) -> tuple[float, float, float]:
        """The machine's own answer to its drive's speed (a pure function of the machine): the share
        of its healthy vibration that does not follow speed, the exponent of the part that does, and
        the share of its discharge pressure that static head and suction pressure hold."""
        u = hash_uniform(self.key + 41, np.arange(3))
        return 0.15 + 0.45 * float(u[0]), 1.0 + float(u[1]), 0.35 * float(u[2])

    def _cavitation_law(self) -> tuple[float, float, float]:
        """Head lost and pressure pulsation at cavitation effect 1 (fractions of the nominal pressure),
        and how bursty its vibration is."""
        if not self.varied_cavitation:
            return 0.25, 0.04, 0.0
        u = hash_uniform(self.key + 43, np.arange(3))
        floor = float(self.asset.extra.get("cavitation_burst_floor", CAVITATION_BURST_FLOOR))
        return 0.05 + 0.25 * float(u[0]), 0.03 + 0.09 * float(u[1]), floor + (0.9 - floor) * float(u[2])

    def _load(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The operating load at the drive's speed (torque ``~ k^2`` on a centrifugal machine) and the
        press stroke."""
        load, stroke = operating_load(self.asset, t, self.key, self.profile.operating_spread, self.load_level)
        if self.drive_fraction != 1.0 and behaves_like(self.asset.asset_type) == "pump":
            load = np.clip(load * self.drive_fraction**2, 0.05, 1.15)
        return load, stroke

    def _effects(self, health: HealthArrays) -> tuple[np.ndarray, ...]:
        """``E_f`` arrays (signature gain x severity where fault ``f`` is present) in ``FAULTS`` order."""
        eff = np.clip(self.profile.signature_gain * health.severity, 0.0, 2.0)
        return (eff,) + tuple(np.where(health.code == FAULT_INDEX[n], eff, 0.0) for n in FAULT_CLASSES[1:])

    def _electrics_and_heat(self, t: np.ndarray, idx: np.ndarray, load: np.ndarray, run: np.ndarray,
                            sf: np.ndarray, health: HealthArrays, drift: DriftState) -> dict[str, np.ndarray]:
        """Speed, current, ambient and the thermal steady states ``ss`` (no lags)."""
        a = self.asset
        _, e_bw, e_el, e_cool, e_imb, e_cav = self._effects(health)
        misalign = health.variant == "misalignment"
        lf = load * sf
        shaft_hz = a.sync_rpm / 60.0 * (1.0 - a.rated_slip * load) * sf
        cav_noise = hash_normal(self.key + 21, idx)
        l_eff = load * (1.0 + 0.04 * e_imb + 0.03 * e_bw) * (1.0 - 0.08 * e_cav) + 0.03 * e_cav * cav_noise
        i_run = a.rated_current_a * np.sqrt(I0**2 + (1.0 - I0**2) * np.clip(l_eff, 0, None) ** 2)
        i_run = i_run * (1.0 + 0.01 * e_el * hash_normal(self.key + 22, idx))
        inrush = 5.0 * a.rated_current_a * (1.0 - sf) ** 2
        current = run * (i_run * sf + inrush)
        i_ratio = current / a.rated_current_a

        amb = (self.config.ambient_c + self.ambient_offset_c + np.asarray(drift.ambient_delta_k, dtype=np.float64)
               + 0.3 * value_noise(self.key + 31, t, 300.0))
        amb = np.broadcast_to(amb, t.shape).astype(np.float64)
        fric = a.bearing_rise_k * (0.35 + 0.65 * lf) * sf * self.drive_fraction
        bearing_ss = amb + fric + BEARING_WEAR_DE_K * e_bw**2 + 7.0 * e_imb + COOLING_DE_K * e_cool + 4.0 * e_cav
        nde_share = a.extra.get("thermal_nde_friction_share", NDE_FRICTION_SHARE)
        nde_ss = amb + nde_share * fric + COOLING_NDE_K * e_cool + 5.0 * e_imb + BEARING_WEAR_NDE_K * e_bw**2
        cool = (1.0 + 1.6 * e_cool) / fan_cooling_share(self.drive_fraction, a.extra.get("motor_fan_still_share"))
        winding_ss = amb + a.winding_rise_k * (0.2 * run + 0.8 * np.minimum(i_ratio, 2.0) ** 2) * cool + 6.0 * e_el
        hotspot_ss = 70.0 * e_el * np.minimum(i_ratio, 2.0) ** 2
        kind = behaves_like(a.asset_type)
        if kind == "pump":
            driven_ss = a.driven_base_c + 0.3 * (amb - 22.0) + 3.0 * lf
        elif kind == "press":
            driven_ss = amb + a.driven_rise_k * (0.5 + 0.5 * lf)
        else:
            driven_ss = amb + a.driven_rise_k * (0.3 + 0.7 * lf)
        coupling_ss = amb + 3.0 * lf + e_imb * np.where(misalign, 14.0, 3.0)
        return {"shaft_hz": shaft_hz, "current": current, "amb": amb, "cav_noise": cav_noise,
                "ss": (bearing_ss, nde_ss, winding_ss, hotspot_ss, driven_ss, coupling_ss)}

    def _initial_temperatures(self, t0: float, idx0: int, health: HealthArrays, drift: DriftState) -> list[float]:
        """Equilibrium temperatures: steady states averaged over a fixed warm-up window.

        The window (10 s, or two press cycles) starts at the first tick and
        uses that tick's health/drift, so the start state does not depend on
        how the timeline is chunked.
        """
        span = max(10.0, 2.0 * self.asset.load.cycle_s)
        n = int(round(span / self.dt))
        t = t0 + np.arange(n) * self.dt
        idx = idx0 + np.arange(n, dtype=np.int64)
        load, _ = self._load(t)
        ones = np.ones(n)
        h0 = HealthArrays(code=np.full(n, health.code[0], dtype=np.int8), severity=np.full(n, health.severity[0]),
                          variant=np.full(n, health.variant[0]))
        d = self._electrics_and_heat(t, idx, load, ones, ones, h0, drift.at(0))
        return [float(np.mean(x)) for x in d["ss"]]

    def step(self, t: np.ndarray, idx: np.ndarray, health: HealthArrays, drift: DriftState) -> PhysicsBlock:
        """Advance over ticks ``t`` (seconds, ascending, continuing the previous call)."""
        a = self.asset
        cfg = self.config
        load, stroke = self._load(t)
        run = np.ones_like(t) if self.force_run else run_schedule(t, self.key + 11, cfg.stops_per_hour)
        if self._speed_state is None:
            self._speed_state = float(run[0])
        sf = _lag(run, math.exp(-self.dt / 1.2), self._speed_state)
        self._speed_state = float(sf[-1])
        eff, e_bw, e_el, e_cool, e_imb, e_cav = self._effects(health)
        misalign = health.variant == "misalignment"
        broken_fan = health.variant == "broken_fan"
        d = self._electrics_and_heat(t, idx, load, run, sf, health, drift)
        shaft_hz, current, amb, cav_noise = d["shaft_hz"], d["current"], d["amb"], d["cav_noise"]
        if self._temp_state is None:
            self._temp_state = self._initial_temperatures(float(t[0]), int(idx[0]), health, drift)
        temps = []
        for k, (x, fac) in enumerate(zip(d["ss"], _TAU_FACTOR, strict=True)):
            ak = math.exp(-self.dt / (cfg.thermal_time_constant_s * fac))
            y = _lag(x, ak, self._temp_state[k])
            self._temp_state[k] = float(y[-1])
            temps.append(y)
        sev = health.severity

        # Vibration velocity RMS (mm/s)
        kd = self.drive_fraction
        still, power, static = self._laws
        follows = still + (1.0 - still) * kd**power
        lost, pulse, bursts = self._cavitation
        v_cav = 2.5 * e_cav * sf * (1.0 + bursts * np.abs(hash_normal(self.key + 24, idx))) if bursts else 2.5 * e_cav * sf
        v_h = a.vib_base_mm_s * (0.55 + 0.45 * load) * sf**2 * follows + 0.05
        v_imb = np.where(misalign, 6.0, 8.0) * e_imb * sf**2 * kd**power
        v = np.sqrt(v_h**2 + v_imb**2 + (2.2 * e_bw**1.5 * sf) ** 2 + v_cav**2
                    + (np.where(broken_fan, 1.5, 0.3) * e_cool * sf) ** 2 + (a.extra.get("stroke_vibration_mm_s", 0.6) * stroke) ** 2)

        # Pressure
        kind = behaves_like(a.asset_type)
        if kind == "pump":
            ref = (1.0 - a.rated_slip * a.load.mean) ** 2
            head = static + (1.0 - static) * kd**2
            p = a.pressure_nominal_bar * head * (sf * (1.0 - a.rated_slip * load)) ** 2 / ref
            p = p * (1.0 + 0.12 * (a.load.mean - load / kd**2))  # head falls with flow (at this speed's curve)
            p = p * (1.0 - lost * np.minimum(e_cav, 1.5)) + pulse * a.pressure_nominal_bar * e_cav * cav_noise * sf * head
        elif kind == "press":
            p = (0.1 * a.pressure_nominal_bar + 0.9 * a.pressure_nominal_bar * stroke) * sf if a.asset_type != "press" \
                else (12.0 + (a.pressure_nominal_bar - 12.0) * stroke) * sf
        else:
            p = a.pressure_nominal_bar * kd * sf * (1.0 - 0.004 * (temps[4] - 40.0))
        p = np.clip(p, 0.0, None)

        return PhysicsBlock(t=t, idx=idx, run=run, speed_frac=sf, load=load, stroke=stroke, shaft_hz=shaft_hz,
                            current_a=current, bearing_c=temps[0], nde_c=temps[1], winding_c=temps[2],
                            hotspot_k=temps[3], driven_c=temps[4], coupling_c=temps[5], ambient_c=amb,
                            vibration_mm_s=v, pressure_bar=p, code=health.code, severity=sev, effect=eff,
                            variant=health.variant, rated_current_a=a.rated_current_a)
