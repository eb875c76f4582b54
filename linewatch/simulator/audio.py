"""Microphone clips (16 kHz mono int16) of one asset.

Signal model, all terms summed in full-scale units before the microphone::

    x(t) = sum_k a_k sin(k phi(t) + theta_k)              rotation harmonics 1x, 2x, 3x
         + h100 sin(2 pi 2 f_line t) + h50 sin(2 pi f_line t)   magnetostriction hum
         + blade-pass (pump) / gear-mesh with sidebands (conveyor) / piston ripple
           and stroke thumps (press)
         + fan blade tone + band-limited airflow hiss
         + factory background (pink + brown noise) and random foreign events
         + R * [ bearing impulses + random healthy impacts ]      structural resonance
         + cavitation bursts, arcing crackle (faults)

``phi(t) = 2 pi \\int f_r dt`` follows the instantaneous shaft speed.  ``R`` is
a two-pole resonator at the asset's structural resonance (2-5 kHz, damping
3-7 %).  A bearing outer-race defect is an impulse train at
``BPFO * (1 - slip)`` (slip 1-2 %, per-impulse timing jitter 1 %), amplitude
``0.05 E`` with 30 % lognormal scatter, each impulse ringing the resonance: the
envelope spectrum of the resonance band shows BPFO and its harmonics.
Imbalance raises 1x (misalignment mostly 2x), cavitation adds broadband
high-frequency bursts, a failed cooling fan changes the fan tone and hiss,
electrical overheating slightly raises the 100 Hz hum and crackles when
severe.  The microphone applies its gain (per asset, plus drift), optional
high-frequency roll-off (degradation drift, 2nd-order low-pass) and
self-noise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.signal import butter, lfilter, sosfilt

from .assets import Asset
from .config import DifficultyProfile, SimulatorConfig
from .drift import DriftState
from .noise import mixed_coloured_noise
from .physics import PhysicsBlock, Snapshot


@dataclass(frozen=True)
class ClipDrive:
    """Per-audio-sample drive signals interpolated from the physics ticks."""

    shaft_hz: np.ndarray
    speed_frac: np.ndarray
    stroke: np.ndarray

    @classmethod
    def from_block(cls, block: PhysicsBlock, t_samples: np.ndarray) -> ClipDrive:
        """Interpolate the physics block at the audio sample times."""
        return cls(shaft_hz=np.interp(t_samples, block.t, block.shaft_hz),
                   speed_frac=np.interp(t_samples, block.t, block.speed_frac),
                   stroke=np.interp(t_samples, block.t, block.stroke))


def _resonator(f0: float, zeta: float, fs: float) -> tuple[np.ndarray, np.ndarray]:
    """Two-pole resonator with unit-peak impulse response (a damped sinusoid)."""
    w = 2 * math.pi * f0 / fs
    r = math.exp(-zeta * w)
    theta = w * math.sqrt(1 - zeta**2)
    return np.array([math.sin(theta)]), np.array([1.0, -2 * r * math.cos(theta), r * r])


def _impulses(n: int, positions: np.ndarray, amps: np.ndarray) -> np.ndarray:
    x = np.zeros(n)
    ok = (positions >= 0) & (positions < n)
    np.add.at(x, positions[ok], amps[ok])
    return x


class AudioRenderer:
    """Renders clips for one asset; filters are designed once per asset."""

    def __init__(self, asset: Asset, config: SimulatorConfig, profile: DifficultyProfile) -> None:
        self.asset = asset
        self.config = config
        self.profile = profile
        self.fs = float(config.audio_rate_hz)
        nyq = self.fs / 2
        self.res_hz = min(asset.resonance_hz, 0.42 * self.fs)
        self.res_b, self.res_a = _resonator(self.res_hz, asset.resonance_damping, self.fs)
        self.hiss_sos = butter(2, [600.0, min(3500.0, 0.9 * nyq)], btype="bandpass", fs=self.fs, output="sos")
        self.cav_sos = butter(2, [1500.0, min(7000.0, 0.9 * nyq)], btype="bandpass", fs=self.fs, output="sos")
        self.crackle_sos = butter(2, 2000.0, btype="highpass", fs=self.fs, output="sos")
        self.mic_gain = 10 ** (asset.calibration.mic_gain_db / 20.0)
        self._lp_cache: dict[int, np.ndarray] = {}

    def _lowpass(self, cutoff: float) -> np.ndarray:
        key = int(round(cutoff / 50.0) * 50)
        if key not in self._lp_cache:
            self._lp_cache[key] = butter(2, min(max(key, 100), 0.45 * self.fs), btype="lowpass", fs=self.fs,
                                         output="sos")
        return self._lp_cache[key]

    def render(self, drive: ClipDrive, s: Snapshot, drift: DriftState, rng: np.random.Generator,
               background: np.ndarray | None = None) -> np.ndarray:
        """One clip as ``int16`` (length = ``len(drive.shaft_hz)``).

        ``background``: extra sound at the microphone in full-scale units (other machines of a
        domain-randomised hall, :mod:`.domain`), added before the microphone's gain.
        """
        a = self.asset
        p = self.profile
        fs = self.fs
        n = drive.shaft_hz.shape[0]
        t = np.arange(n) / fs
        sf = drive.speed_frac
        f_r = drive.shaft_hz
        phi = 2 * np.pi * np.cumsum(f_r) / fs + rng.uniform(0, 2 * np.pi)
        e = s.effect
        fault = s.fault
        var = s.variant
        energised = 1.0 if s.run > 0.5 else 0.0
        x = np.zeros(n)

        # Rotation harmonics (centrifugal forces ~ speed^2).
        a1, a2, a3 = a.harmonics
        if fault == "imbalance":
            if var == "misalignment":
                a1, a2, a3 = a1 * (1 + 1.5 * e), a2 * (1 + 8.0 * e), a3 * (1 + 3.0 * e)
            else:
                a1 = a1 * (1 + 5.0 * e)
        if fault == "cooling_failure" and var == "broken_fan":
            a1 = a1 * (1 + 1.0 * e)
        th = rng.uniform(0, 2 * np.pi, 3)
        x += sf**2 * (a1 * np.sin(phi + th[0]) + a2 * np.sin(2 * phi + th[1]) + a3 * np.sin(3 * phi + th[2]))

        # Mains hum (magnetostriction at 2 f_line, some f_line).
        fl = a.line_frequency_hz  # the supply of this motor: mains, or a drive's output frequency
        h100 = 0.010 * (0.6 + 0.4 * min(s.current_ratio, 1.5))
        if fault == "electrical_overheating":
            h100 *= 1 + 0.4 * e
        x += energised * (h100 * np.sin(2 * np.pi * 2 * fl * t + th[0]) + 0.3 * h100 * np.sin(2 * np.pi * fl * t))

        # Driven machine tones.
        if a.asset_type == "pump":
            bp = 0.012 * (0.5 + s.load) * sf**2
            if fault == "cavitation":
                bp = bp * (1 + 0.6 * e * np.interp(t, np.linspace(0, t[-1], 20), rng.standard_normal(20)))
            x += bp * np.sin(a.impeller_vanes * phi + th[1])
        elif a.asset_type == "conveyor":
            gm = 0.009 * (0.3 + s.load) * sf**2
            x += gm * np.sin(a.gear_teeth * phi + th[2]) * (1 + 0.3 * np.sin(phi))
        elif a.asset_type == "fan":
            bp = 0.02 * (0.4 + s.load) * sf**2
            x += bp * np.sin(a.impeller_vanes * phi + th[1]) + 0.3 * bp * np.sin(2 * a.impeller_vanes * phi)
            x += 0.012 * sf**2 * sosfilt(self.hiss_sos, rng.standard_normal(n)) * 2.5
        elif a.asset_type == "compressor":
            x += 0.01 * (0.3 + drive.stroke) * sf**2 * np.sin(a.hydraulic_pistons * phi + th[2])
            beats = np.flatnonzero(np.diff(np.floor(a.hydraulic_pistons * phi / (2 * np.pi))) > 0)
            valve = _impulses(n, beats, np.full(beats.size, 0.01))
            x += lfilter(*_resonator(900.0, 0.15, fs), valve)
        else:
            x += 0.008 * (0.3 + drive.stroke) * sf**2 * np.sin(a.hydraulic_pistons * phi + th[2])
            starts = np.flatnonzero((drive.stroke[1:] >= 0.5) & (drive.stroke[:-1] < 0.5)) + 1
            for i0 in starts:
                tt = t[i0:] - t[i0]
                x[i0:] += 0.06 * np.exp(-tt / 0.08) * np.sin(2 * np.pi * 60.0 * tt)

        # Cooling fan tone and airflow hiss.
        ex = a.extra  # per-machine style of a domain-randomised fleet (all 1.0 in the plant)
        tone, hiss = 0.006, 0.006 * ex.get("hiss_scale", 1.0)
        if fault == "cooling_failure":
            if var == "broken_fan":
                tone, hiss = tone * (1 - 0.8 * min(e, 1)), hiss * (1 - 0.5 * min(e, 1))
            else:
                tone, hiss = tone * (1 - 0.3 * min(e, 1)), hiss * (1 - 0.6 * min(e, 1))
        x += tone * sf**2 * np.sin(a.fan_blades * phi + th[1])
        x += hiss * sf**2 * sosfilt(self.hiss_sos, rng.standard_normal(n)) * 2.5

        # Factory background (per-clip level varies).
        bg = p.audio_noise * rng.uniform(0.8, 1.25) * ex.get("background_scale", 1.0)
        x += mixed_coloured_noise(rng, n, fs, ((1.0, 0.018 * bg), (2.0, 0.011 * bg)))

        # Impacts ringing the structural resonance: healthy random knocks + bearing defect train.
        k_h = rng.poisson(40.0 * max(sf.mean(), 0.05))
        imp = _impulses(n, rng.integers(0, n, k_h), 0.006 * ex.get("knock_scale", 1.0) * np.abs(rng.standard_normal(k_h)))
        per_rev = int(ex.get("sync_impacts_per_rev", 0.0))
        if per_rev:
            # shaft-locked knocks of a healthy machine (valve clicks, a cam, a coupling with play):
            # per_rev a revolution, ringing the same structure as a bearing defect does
            turns = per_rev * (phi - phi[0]) / (2 * np.pi) + ex.get("sync_impact_phase", 0.0)
            beats = np.flatnonzero(np.diff(np.floor(turns)) > 0) + 1
            level = 0.006 * ex.get("knock_scale", 1.0) * ex.get("sync_impact_scale", 1.0)
            imp += _impulses(n, beats, level * rng.lognormal(0.0, 0.25, beats.size))
        if fault == "bearing_wear" and e > 0:
            # outer race: impacts at BPFO; inner race: at BPFI, amplitude modulated by the load zone
            # once per revolution; rolling element: at 2 x BSF (it strikes both races), modulated
            # at the cage frequency FTF.
            slip = rng.uniform(0.01, 0.02)
            if var == "inner_race":
                rate = a.bearing.bpfi(f_r) * (1 - slip)
            elif var == "ball":
                rate = 2.0 * a.bearing.bsf(f_r) * (1 - slip)
            else:
                rate = a.bearing.bpfo(f_r) * (1 - slip)
            psi = np.cumsum(rate) / fs + rng.uniform(0, 1)
            k = np.floor(psi)
            pos = np.flatnonzero(np.diff(k) > 0) + 1
            if pos.size:
                per = fs / max(float(np.mean(rate)), 1.0)
                pos = pos + np.rint(rng.normal(0, 0.01 * per, pos.size)).astype(np.int64)
                amp = 0.05 * e * ex.get("impact_scale", 1.0) * rng.lognormal(0.0, 0.3, pos.size)
                if var in ("inner_race", "ball"):
                    mod_phase = phi if var == "inner_race" else np.cumsum(a.bearing.ftf(f_r)) / fs * 2 * np.pi
                    depth = rng.uniform(0.4, 0.9)
                    amp = amp * (1.0 - depth * 0.5 * (1.0 - np.cos(mod_phase[np.clip(pos, 0, n - 1)])))
                imp += _impulses(n, pos, amp)
            x += 0.004 * e * sf * sosfilt(self.cav_sos, rng.standard_normal(n))
        x += lfilter(self.res_b, self.res_a, imp)

        if fault == "cavitation" and e > 0:
            k_c = rng.poisson(40.0 * e + 3.0)
            env = _impulses(n, rng.integers(0, n, k_c),
                            0.05 * e * ex.get("burst_scale", 1.0) * rng.lognormal(0, 0.5, k_c))
            decay = math.exp(-1.0 / (0.006 * fs))
            env = lfilter([1.0], [1.0, -decay], env)
            x += sosfilt(self.cav_sos, rng.standard_normal(n)) * (env + 0.006 * e)

        if fault == "electrical_overheating" and e > 0.4:
            k_a = rng.poisson(15.0 * (e - 0.4))
            clicks = _impulses(n, rng.integers(0, n, k_a), 0.08 * rng.uniform(0.3, 1.0, k_a))
            x += sosfilt(self.crackle_sos, clicks)

        # Foreign events: reversing beeper, hammering on another machine.
        cr = p.confounder_rate
        if rng.random() < 0.08 * cr:
            f_b = rng.uniform(2500, 3200)
            gate = (np.mod(t + rng.uniform(0, 0.3), 0.3) < 0.15).astype(np.float64)
            x += rng.uniform(0.01, 0.04) * gate * np.sin(2 * np.pi * f_b * t)
        if rng.random() < 0.10 * cr:
            rate = rng.uniform(1.0, 5.0)
            k_f = rng.poisson(rate)
            b2, a2_ = _resonator(rng.uniform(1500, min(6000, 0.42 * fs)), rng.uniform(0.02, 0.08), fs)
            x += lfilter(b2, a2_, _impulses(n, rng.integers(0, n, k_f), rng.uniform(0.02, 0.08, k_f)))

        # Variable-speed drive: PWM carrier whine with sidebands at +-2 x the output frequency.
        carrier = a.extra.get("pwm_carrier_hz", 0.0)
        if carrier and energised:
            lvl = a.extra.get("pwm_level", 0.003)
            for off, g in ((0.0, 1.0), (2 * fl, 0.5), (-2 * fl, 0.5)):
                x += lvl * g * np.sin(2 * np.pi * (carrier + off) * t + rng.uniform(0, 2 * np.pi))

        # Microphone: level, degradation roll-off, self-noise.
        x = x * a.machine_level
        if background is not None:
            x = x + background[:n]
        if np.isfinite(float(drift.mic_cutoff_hz)):
            x = sosfilt(self._lowpass(float(drift.mic_cutoff_hz)), x)
        x = x * self.mic_gain * float(drift.mic_gain)
        x += (0.0012 * a.calibration.mic_noise * float(drift.mic_noise_mult) * p.audio_noise
              * rng.standard_normal(n))
        return np.clip(np.rint(x * 32767.0), -32768, 32767).astype(np.int16)
