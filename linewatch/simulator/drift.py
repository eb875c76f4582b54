"""Injectable sensor/environment drift that is *not* a fault.

Drift changes readings but never the fault label.  Each :class:`DriftEvent`
ramps linearly from ``onset_s`` over ``ramp_s`` to its ``magnitude`` (1.0 is a
"typical, clearly noticeable" drift; the difficulty profile scales it) and
stays until ``end_s`` (the end of the scenario block, when the sensor is
recalibrated).  At drift level ``m`` the kinds do:

=================== ============================================================
``camera_ageing``   radiometric gain ``1 + 0.012 m s`` about 0 degC and offset
                    ``+1.5 m s`` K (``s`` = +-1 per event)
``ambient_shift``   hall ambient ``+6 m`` K (sometimes ``-``) plus a
                    ``1.5 m`` K oscillation (compressed day cycle, 240 s); a real
                    temperature change, seen by every temperature sensor
``mic_degradation`` gain ``-6 m`` dB, second-order high-frequency roll-off with
                    cutoff ``8 kHz / (1 + 3 m)``, noise floor ``x (1 + m)``
``plc_temp_offset`` bearing/winding RTD offset creep ``+4 m s`` degC
=================== ============================================================
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DRIFT_KINDS: tuple[str, ...] = ("camera_ageing", "ambient_shift", "mic_degradation", "plc_temp_offset")
DAY_CYCLE_S = 240.0


@dataclass(frozen=True)
class DriftEvent:
    """One drift of one kind on one asset's sensors (simulated seconds)."""

    asset_id: str
    kind: str
    onset_s: float
    ramp_s: float
    end_s: float
    magnitude: float
    sign: float = 1.0

    def level(self, t: np.ndarray | float) -> np.ndarray:
        """Drift level at ``t``: 0 before onset/after end, ramping to ``magnitude``."""
        t = np.asarray(t, dtype=np.float64)
        ramp = np.clip((t - self.onset_s) / max(self.ramp_s, 1e-9), 0.0, 1.0)
        return np.where((t >= self.onset_s) & (t < self.end_s), self.magnitude * ramp, 0.0)


@dataclass(frozen=True)
class DriftState:
    """Effect of all active drift on sensors at one time or on a time grid.

    Fields are floats or arrays broadcastable to the time grid.
    ``mic_cutoff_hz`` is ``inf`` when there is no roll-off.
    """

    camera_gain: np.ndarray | float = 1.0
    camera_offset_k: np.ndarray | float = 0.0
    ambient_delta_k: np.ndarray | float = 0.0
    mic_gain: np.ndarray | float = 1.0
    mic_cutoff_hz: np.ndarray | float = float("inf")
    mic_noise_mult: np.ndarray | float = 1.0
    plc_temp_offset_c: np.ndarray | float = 0.0

    def at(self, i: int) -> DriftState:
        """Scalar state at grid index ``i`` (fields that are scalars are kept)."""
        def pick(x: np.ndarray | float) -> float:
            return float(np.asarray(x).reshape(-1)[i]) if np.ndim(x) else float(x)
        return DriftState(*(pick(getattr(self, f)) for f in self.__dataclass_fields__))


def _effects(kind: str, level: np.ndarray, sign: float, t: np.ndarray) -> dict[str, np.ndarray]:
    if kind == "camera_ageing":
        return {"camera_gain": 1.0 + 0.012 * level * sign, "camera_offset_k": 1.5 * level * sign}
    if kind == "ambient_shift":
        return {"ambient_delta_k": 6.0 * level * sign + 1.5 * level * np.sin(2 * np.pi * t / DAY_CYCLE_S)}
    if kind == "mic_degradation":
        cutoff = np.where(level > 0, 8000.0 / (1.0 + 3.0 * level), np.inf)
        return {"mic_gain": 10.0 ** (-6.0 * level / 20.0), "mic_cutoff_hz": cutoff,
                "mic_noise_mult": 1.0 + 1.0 * level}
    if kind == "plc_temp_offset":
        return {"plc_temp_offset_c": 4.0 * level * sign}
    raise ValueError(f"unknown drift kind {kind!r}")


_MULTIPLICATIVE = {"camera_gain", "mic_gain", "mic_noise_mult"}


def drift_state(events: list[DriftEvent], t: np.ndarray | float) -> DriftState:
    """Combine the events of one asset into a :class:`DriftState` at ``t``."""
    t_arr = np.asarray(t, dtype=np.float64)
    fields: dict[str, np.ndarray | float] = {}
    for ev in events:
        level = ev.level(t_arr)
        if not np.any(level > 0):
            continue
        for name, val in _effects(ev.kind, level, ev.sign, t_arr).items():
            if name not in fields:
                fields[name] = val
            elif name in _MULTIPLICATIVE:
                fields[name] = fields[name] * val
            elif name == "mic_cutoff_hz":
                fields[name] = np.minimum(fields[name], val)
            else:
                fields[name] = fields[name] + val
    if np.ndim(t) == 0:
        fields = {k: float(np.asarray(v)) for k, v in fields.items()}
    return DriftState(**fields)


def constant_drift(kind: str | None, level: float, sign: float = 1.0, t: float = 0.0) -> DriftState:
    """Drift state of a single kind at a fixed level (dataset samples)."""
    if kind is None or kind == "none" or level <= 0:
        return DriftState()
    eff = _effects(kind, np.asarray(level, dtype=np.float64), sign, np.asarray(t, dtype=np.float64))
    return DriftState(**{k: float(np.asarray(v)) for k, v in eff.items()})


def active_kinds(events: list[DriftEvent], t: float) -> tuple[str, ...]:
    """Sorted drift kinds with non-zero level at ``t``."""
    return tuple(sorted({ev.kind for ev in events if float(ev.level(t)) > 0.0}))


def draw_drift(rng: np.random.Generator, asset_id: str, block_start: float, block_len: float,
               magnitude_scale: float, kind: str | None = None) -> DriftEvent:
    """Draw one drift event inside a scenario block."""
    kind = kind or str(rng.choice(DRIFT_KINDS))
    onset = block_start + rng.uniform(0.05, 0.6) * block_len
    ramp = rng.uniform(0.1, 0.4) * block_len
    sign = 1.0 if (kind == "ambient_shift" and rng.random() < 0.75) else float(rng.choice([-1.0, 1.0]))
    return DriftEvent(asset_id=asset_id, kind=kind, onset_s=float(onset), ramp_s=float(ramp),
                      end_s=float(block_start + block_len),
                      magnitude=float(rng.uniform(0.5, 1.0) * magnitude_scale), sign=sign)
