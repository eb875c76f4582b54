"""Hidden health state: fault classes, fault episodes and labelling.

A fault episode starts at ``onset_s`` with a tiny severity ``s0`` and grows
roughly exponentially until it saturates at 1::

    severity(t) = min(1, s0 * exp(r * w(t - onset)))      for onset <= t < end
    w(tau)      = tau + sum_k a_k/omega_k * (sin(omega_k tau + phi_k) - sin(phi_k))

``w`` is a randomly warped clock (sum a_k < 1, so it is strictly increasing):
growth speeds up and slows down like real wear, but severity never decreases
within an episode.  The observable label is the fault only once severity
reaches :data:`LABEL_THRESHOLD`; before that the asset is labelled ``normal``
even though a (sub-threshold) fault is physically present.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: Class names, index = class id used by in-memory datasets.
FAULT_CLASSES: tuple[str, ...] = (
    "normal",
    "bearing_wear",
    "electrical_overheating",
    "cooling_failure",
    "imbalance",
    "cavitation",
)
FAULTS: tuple[str, ...] = FAULT_CLASSES[1:]
FAULT_INDEX: dict[str, int] = {name: i for i, name in enumerate(FAULT_CLASSES)}

#: Severity at and above which the fault label is emitted (below: ``normal``).
LABEL_THRESHOLD = 0.05

#: Sub-variants that change how a fault manifests (not part of the label).
VARIANTS: dict[str, tuple[str, ...]] = {
    "bearing_wear": ("outer_race",),
    "electrical_overheating": ("loose_lug",),
    "cooling_failure": ("blocked_fins", "broken_fan"),
    "imbalance": ("imbalance", "misalignment"),
    "cavitation": ("suction_starved",),
}


def faults_for(asset_type: str) -> tuple[str, ...]:
    """Faults an asset type can develop (cavitation needs a pump)."""
    return FAULTS if asset_type == "pump" else tuple(f for f in FAULTS if f != "cavitation")


def label_for(fault: str, severity: float) -> str:
    """Observable label: ``fault`` if ``severity >= LABEL_THRESHOLD`` else ``normal``."""
    return fault if (fault != "normal" and severity >= LABEL_THRESHOLD) else "normal"


@dataclass(frozen=True)
class FaultEpisode:
    """One fault developing on one asset between ``onset_s`` and ``end_s`` (simulated seconds)."""

    asset_id: str
    fault: str
    variant: str
    onset_s: float
    end_s: float
    s0: float
    rate: float
    warp_amp: tuple[float, ...]
    warp_omega: tuple[float, ...]
    warp_phase: tuple[float, ...]

    def _warp(self, tau: np.ndarray) -> np.ndarray:
        w = tau.copy()
        for a, om, ph in zip(self.warp_amp, self.warp_omega, self.warp_phase, strict=True):
            w += a / om * (np.sin(om * tau + ph) - math.sin(ph))
        return w

    def severity(self, t: np.ndarray | float) -> np.ndarray:
        """Hidden severity in ``[0, 1]`` at times ``t`` (0 outside the episode)."""
        t = np.asarray(t, dtype=np.float64)
        tau = np.maximum(t - self.onset_s, 0.0)
        s = np.minimum(1.0, self.s0 * np.exp(self.rate * self._warp(tau)))
        return np.where((t >= self.onset_s) & (t < self.end_s), s, 0.0)

    def time_at_severity(self, level: float) -> float:
        """First time severity reaches ``level`` (``inf`` if not within the episode)."""
        if level <= self.s0:
            return self.onset_s
        target = math.log(level / self.s0) / self.rate
        lo, hi = 0.0, self.end_s - self.onset_s
        if math.isinf(hi):  # an open-ended episode (the demo's injected fault): bracket the time first
            hi = 1.0
            while self._warp(np.array([hi]))[0] < target and hi < 1e12:  # w(tau) >= tau (1 - sum a): it grows
                lo, hi = hi, 2.0 * hi
        if self._warp(np.array([hi]))[0] < target:
            return math.inf
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            if self._warp(np.array([mid]))[0] < target:
                lo = mid
            else:
                hi = mid
        return self.onset_s + hi

    @property
    def label_onset_s(self) -> float:
        """When the observable label switches from ``normal`` to the fault."""
        return self.time_at_severity(LABEL_THRESHOLD)


def draw_episode(rng: np.random.Generator, asset_id: str, fault: str, block_start: float,
                 block_len: float) -> FaultEpisode:
    """Draw a fault episode inside one scenario block.

    Onset falls in the first 5-45 % of the block; the fault grows from
    ``s0 = 0.01`` to saturation in 35-80 % of the block length, so a run
    shows the healthy state, the subtle early stage and a developed fault.
    """
    onset = block_start + rng.uniform(0.05, 0.45) * block_len
    ramp = rng.uniform(0.35, 0.8) * block_len
    s0 = 0.01
    rate = math.log(1.0 / s0) / ramp
    k = 3
    amp = rng.dirichlet(np.ones(k)) * rng.uniform(0.2, 0.6)
    omega = 2.0 * math.pi / (ramp * rng.uniform(0.08, 0.35, size=k))
    phase = rng.uniform(0, 2 * math.pi, size=k)
    variant = str(rng.choice(VARIANTS[fault]))
    return FaultEpisode(asset_id=asset_id, fault=fault, variant=variant, onset_s=float(onset),
                        end_s=float(block_start + block_len), s0=s0, rate=float(rate),
                        warp_amp=tuple(float(x) for x in amp), warp_omega=tuple(float(x) for x in omega),
                        warp_phase=tuple(float(x) for x in phase))


@dataclass(frozen=True)
class HealthArrays:
    """Health sampled on a time grid: fault index, severity and fault variant per sample."""

    code: np.ndarray
    severity: np.ndarray
    variant: np.ndarray

    @property
    def fault(self) -> str:
        """Most recent (last-sample) physical fault name (``normal`` if none)."""
        return FAULT_CLASSES[int(self.code[-1])] if len(self.code) else "normal"


def health_from_episodes(episodes: list[FaultEpisode], t: np.ndarray) -> HealthArrays:
    """Physical fault and severity at times ``t`` from an asset's episodes."""
    t = np.asarray(t, dtype=np.float64)
    code = np.zeros(t.shape, dtype=np.int8)
    sev = np.zeros(t.shape, dtype=np.float64)
    variant = np.full(t.shape, "", dtype="<U16")
    if t.size == 0:
        return HealthArrays(code=code, severity=sev, variant=variant)
    for ep in episodes:
        if ep.end_s <= t[0] or ep.onset_s > t[-1]:
            continue
        s = ep.severity(t)
        inside = (t >= ep.onset_s) & (t < ep.end_s)
        code = np.where(inside, FAULT_INDEX[ep.fault], code).astype(np.int8)
        sev = np.where(inside, s, sev)
        variant = np.where(inside, ep.variant, variant)
    return HealthArrays(code=code, severity=sev, variant=variant)


def constant_health(fault: str, severity: float, variant: str, n: int) -> HealthArrays:
    """Health arrays for a fixed fault/severity (dataset samples)."""
    code = np.full(n, FAULT_INDEX[fault], dtype=np.int8)
    return HealthArrays(code=code, severity=np.full(n, float(severity)), variant=np.full(n, variant, dtype="<U16"))
