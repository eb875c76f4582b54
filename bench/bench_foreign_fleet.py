"""A foreign fleet: the shipped models on machines from an independent sensor generator.

    .venv/bin/python bench/bench_foreign_fleet.py --out bench/results/foreign_fleet.json

The models are checked by an outside party on data from another generator. This benchmark is our
own version of such a check. Its generator was written from textbook machinery physics WITHOUT
reading linewatch's simulator (``linewatch/simulator/``), its feature code (``pipeline/features/``),
its training code (``models/``) or the other audio/generalisation benches; the only linewatch
material used was the README, the ``assets.json`` user schema (``docs/simulator.md``) and the
``linewatch inspect`` section of ``docs/models.md``. Its conventions (severity scale, levels,
layouts, file formats) are therefore its own.

Fleet (``--machines``, default 40): centrifugal pumps, fans (direct and belt driven), screw and
piston compressors and gearbox drives, each on a three-phase induction motor (2/4/6/8 poles,
50 or 60 Hz mains, rated slip 1-4 %), about a third on a variable-speed drive running 40-105 % of
nameplate speed. Each machine has a catalogue rolling bearing (``BEARINGS``: deep-groove 62xx/63xx
and NU cylindrical-roller types, geometry from the catalogues as remembered), one to three
structural resonances (1.4-6.5 kHz, damping ratio 2-6 %), a microphone (gain -12..+12 dB, a
15-40 Hz high-pass, 16/22.05/44.1/48 kHz, PCM16/PCM24/float32, mono or stereo) and a thermal
camera (80x60 ... 640x512, its own placement, emissivity setting and radiometric encoding).

Audio signal model (per sample; levels in dB relative to the machine's own healthy sound)

* shaft harmonics 1x..6x with a slow 0.1-0.4 % speed wobble (phase integrated), 1x scaling with
  speed squared; magnetic hum at 2x the supply frequency and its harmonics, rotor-slot harmonics
  (N_r f_r +- 2 f_e), on drives a PWM carrier (2-8 kHz) with sidebands at +-2/4 f_e; the motor's
  cooling-fan noise (band-limited) and blade tone;
* the driven machine: pump vane pass + flow noise, fan blade pass + aerodynamic noise (+ belt),
  screw-compressor lobe pass, piston-compressor valve impacts (synchronous, ringing), gear mesh
  with +-1x sidebands;
* plant background (pink noise at a machine-specific level, neighbouring machines' tones,
  sometimes a mains pickup in the microphone cable) and, in a quarter of all samples healthy or
  not, transient events (a dropped tool, a compressed-air blow-off, a forklift beeper);
* bearing wear: an impact train at BPFO (outer race), BPFI (inner race, amplitude modulated by
  the load zone at shaft rate) or 2xBSF (rolling element, modulated at the cage rate FTF), with
  1-2 % slip below the kinematic rate and 1 % random jitter of each interval; every impact rings
  the machine's resonances. Its level is set as a band SNR: the impact train's RMS in the
  +-20 % band of the main resonance relative to the healthy sound's RMS in the same band,
  -9 dB at severity 0.45 to +3 dB at 1.0 (``BEARING_SNR_DB``), plus wear roughness noise;
* imbalance: the 1x tone raised +6 dB at severity 0.45 to +20 dB at 1.0 (``IMBALANCE_GAIN_DB``)
  over the machine's own 1x, 2x slightly, and the machine's broadband sound amplitude
  modulated at 1x (depth 3-15 %);
* cavitation (pumps): Poisson bursts (rate 150-1,000 /s, rising with severity, clustered at
  the vane pass) of 0.2-1 ms band-limited noise in 1.5-7 kHz, their RMS in 2-7 kHz -10 dB at
  severity 0.45 to +4 dB at 1.0 relative to the healthy sound in that band (``CAVITATION_SNR_DB``),
  plus an unsteady vane tone and more low-frequency flow noise;
* cooling failure: in half the cases a broken fan (its noise -2..-8 dB), else a blocked cowl
  (no audible change); electrical overheating: no audible change.

Thermal model: true surface temperatures of the motor (axial gradient from the fan end, fins,
a warmer top), fan cowl, bearing housings, terminal box, coupling, base and the driven machine
(pump casing at fluid temperature, hot compressor, warm gearbox) over a background at ambient
(0-40 C) with sometimes a hot pipe or lamp; surface emissivities 0.85-0.97 (bare metal 0.3-0.6)
with the cylinder's grazing-angle fall-off; the camera converts radiance (Planck at 10 um) with
its own emissivity setting and reflected temperature = ambient, blurs (optics), adds NETD noise
and fixed-pattern noise. Faults: a hot lug on the terminal box (peak +15..+80 K over the box,
severity 0.45..1) with the lid warming (healthy lugs: 0.5-4 K x load^2); cooling failure: the
body rise grows by +80..+200 % (a TEFC motor without its fan runs at about twice its rise) and
the axial gradient reverses; bearing wear: the affected housing +6..+25 K; imbalance: both
housings +1..+4 K. Healthy parts vary from sample to sample (rise +-8 %, +-1 K; drafts).

The fault levels above were set against the "expert" reference below only (never against the
models' results): at severity 0.45-0.6 it finds about three quarters of the bearing faults and
most of every other class, from 0.75 nearly all.

``assets.json`` follows the documented user schema with the variations real users produce:
alternative key names, speed as rated rpm / sync rpm / poles + mains / shaft Hz, bearings as a
designation, a geometry, orders or frequencies (or missing), resonance bands sometimes, regions
on the parts (drawn 3 % outside to 10 % inside each outline) / shifted (drawn roughly) / in a
half-size preview grid / missing, frame units declared or not.

Scoring: ``linewatch inspect --json``, one call per group holding one sample of each machine (a
call fuses all files of a machine), once without and (``--healthy-audio ref``, default ``both``)
once with a commissioning recording per machine; with ``--healthy-thermal ref`` / ``both`` also
with the commissioning visit's frame (healthy, 80 % load, ``--healthy-thermal``; records
``thermal@frame``, ``fused@frame``, ``fused@ref+frame``) and, with ``--thermal-twins``, against a
healthy frame of the same machine at the sample's own load (``thermal@twin``). Reported per modality and fused: recall per
class where the modality can name it, detection rate (any fault), healthy false-positive rate,
confusion matrices, recall per severity bin, errors and extrapolating records, and an "expert"
reference: audio read with the true frequencies and resonance (envelope spectrum at the bearing
rates, 1x level, burstiness of the 2-7 kHz band), thermal read in the true part outlines (hotter
housing over body, terminal-box hot-spot contrast, body over the hall temperature), each against
the machine's own healthy median and thresholded at the 99th percentile of the healthy samples,
so the reader can judge whether the faults are detectable at all.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import platform
import shutil
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray
from scipy.signal import oaconvolve

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from inspect_runner import code_snapshot, run_inspect  # noqa: E402  (bench/ is not a package)

Arr = NDArray[np.float64]

CLASSES = ("normal", "bearing_wear", "imbalance", "cavitation", "electrical_overheating", "cooling_failure")
FAULTS = CLASSES[1:]
SEVERITY_LO, SEVERITY_HI = 0.45, 1.0
SEVERITY_BINS = ((0.45, 0.6), (0.6, 0.75), (0.75, 0.9), (0.9, 1.0001))

# signal-to-noise at severity 0.45 and 1.0 (linear in between), dB
BEARING_SNR_DB = (-9.0, 3.0)
IMBALANCE_GAIN_DB = (6.0, 20.0)
CAVITATION_SNR_DB = (-10.0, 4.0)
# thermal: K at severity 0.45 and 1.0
LUG_RISE_K = (15.0, 80.0)
COOLING_EXTRA = (0.8, 2.0)  # fraction of the healthy body rise added (TEFC without its fan: about 2x)
BEARING_HOUSING_K = (6.0, 25.0)

SAMPLE_RATES = (16000, 22050, 44100, 48000)
SUBTYPES = ("PCM_16", "PCM_24", "FLOAT")
DURATIONS_S = (1.0, 1.5, 2.0, 3.0, 4.0)
FRAME_SIZES = ((80, 60), (160, 120), (160, 120), (240, 180), (320, 240), (384, 288), (464, 348), (640, 480), (640, 512))
START = datetime(2027, 3, 1, 6, 0, 0)


@dataclass(frozen=True)
class Bearing:
    designation: str
    n: int
    d_mm: float
    pitch_mm: float
    angle_deg: float = 0.0

    def orders(self) -> dict[str, float]:
        """Kinematic fault frequencies as multiples of the shaft speed (stationary outer race)."""
        r = self.d_mm / self.pitch_mm * math.cos(math.radians(self.angle_deg))
        return {"ftf": 0.5 * (1 - r), "bpfo": 0.5 * self.n * (1 - r), "bpfi": 0.5 * self.n * (1 + r),
                "bsf": self.pitch_mm / (2 * self.d_mm) * (1 - r * r)}


# Catalogue geometry as remembered (balls/rollers, element diameter, pitch diameter).
BEARINGS = (
    Bearing("6204", 8, 7.938, 33.5),
    Bearing("6205", 9, 7.94, 39.04),
    Bearing("6206", 9, 9.525, 46.0),
    Bearing("6308", 8, 15.081, 65.0),
    Bearing("6309", 8, 17.462, 72.5),
    Bearing("6312", 8, 22.225, 95.0),
    Bearing("6316", 8, 28.575, 125.0),
    Bearing("NU210", 14, 11.0, 70.0),
    Bearing("NU312", 13, 18.0, 95.0),
)
KNOWN_DESIGNATIONS = {"6204", "6205", "6206", "6308", "6309"}  # in the reader's documented list

KINDS = ("pump", "fan", "compressor", "gearbox")
KIND_WEIGHTS = (0.35, 0.25, 0.2, 0.2)
TYPE_NAMES = {
    "pump": ("centrifugal pump", "end-suction pump", "process pump (ANSI)", "booster pump set"),
    "fan": ("axial fan", "exhaust fan", "supply air fan", "cooling tower fan"),
    "screw": ("screw compressor", "rotary screw air compressor"),
    "piston": ("reciprocating compressor", "piston air compressor"),
    "gearbox": ("helical gearbox drive", "conveyor gear unit", "mixer drive"),
}
ID_PREFIX = {"pump": ("CP", "P", "PU"), "fan": ("EF", "FAN", "SF"), "compressor": ("AC", "K"),
             "gearbox": ("GB", "CV", "MX")}


@dataclass
class Camera:
    width: int
    height: int
    encoding: str  # uint16_ck | uint16_dk | uint16_flir | uint16_c_off | float32_k | float32_c | float32_f
    eps_setting: float
    netd_k: float
    blur_px: float
    fan_left: bool
    x0: float  # machine outline in frame fractions
    length: float
    yc: float
    diam: float  # motor diameter as a fraction of frame height
    region_mode: str  # exact | rough | preview | none
    region_inset: float  # how far inside the part's outline the user drew each box (negative: outside)
    declare_unit: bool
    fpn_seed: int


@dataclass
class Machine:
    index: int
    asset_id: str
    kind: str
    type_name: str
    subkind: str
    poles: int
    line_hz: float
    rated_slip: float
    vfd: bool
    power_kw: float
    bearing: Bearing
    bearing_at_de: bool
    modes_hz: tuple[float, ...]
    modes_zeta: tuple[float, ...]
    modes_gain: tuple[float, ...]
    mic_gain_db: float
    mic_hp_hz: float
    background_db: float
    levels_db: dict[str, float]
    counts: dict[str, float]
    rotor_bars: int
    pwm_hz: float
    mains_pickup: bool
    neighbour_hz: tuple[float, ...]
    wav_rate: int
    wav_subtype: str
    stereo: bool
    camera: Camera
    ambient_c: float
    body_rise_k: float
    driven_temp: float  # pump fluid C, or rise K for compressor/gearbox/fan
    eps_paint: float
    calibration: float = 1.0

    @property
    def sync_hz(self) -> float:
        return 2 * self.line_hz / self.poles

    @property
    def rated_shaft_hz(self) -> float:
        return self.sync_hz * (1 - self.rated_slip)


@dataclass
class Sample:
    asset_id: str
    machine_index: int
    index: int
    cls: str
    variant: str
    severity: float
    load: float
    speed_frac: float
    ambient_c: float
    duration_s: float
    stamp: str
    transients: bool
    extra: dict[str, Any] = field(default_factory=dict)


# ----------------------------------------------------------------------------------------- fleet


def _lin(pair: tuple[float, float], severity: float) -> float:
    t = (severity - SEVERITY_LO) / (SEVERITY_HI - SEVERITY_LO)
    return pair[0] + (pair[1] - pair[0]) * float(np.clip(t, 0.0, 1.0))


def _asset_id(kind: str, index: int, rng: np.random.Generator) -> str:
    prefix = str(rng.choice(ID_PREFIX[kind]))
    style = int(rng.integers(3))
    number = 100 + index * 7 + int(rng.integers(7))
    if style == 0:
        return f"{prefix}-{number}"
    if style == 1:
        return f"{prefix}{number}"
    return f"{prefix}-{index:02d}{'ABCD'[int(rng.integers(4))]}"


def _camera(rng: np.random.Generator) -> Camera:
    w, h = FRAME_SIZES[int(rng.integers(len(FRAME_SIZES)))]
    length = float(rng.uniform(0.55, 0.88))
    mode = str(rng.choice(["exact", "rough", "preview", "none"], p=[0.55, 0.2, 0.12, 0.13]))
    return Camera(
        width=w, height=h,
        encoding=str(rng.choice(["uint16_ck", "uint16_ck", "uint16_dk", "uint16_flir", "uint16_c_off",
                                 "float32_k", "float32_c", "float32_f"])),
        eps_setting=float(rng.choice([0.95, 0.95, 0.98, 1.0])),
        netd_k=float(rng.uniform(0.04, 0.1)), blur_px=float(rng.uniform(0.5, 0.9)),
        fan_left=bool(rng.random() < 0.5), x0=float(rng.uniform(0.03, 0.97 - length)), length=length,
        yc=float(rng.uniform(0.42, 0.62)), diam=float(rng.uniform(0.17, 0.24)) * length * w / h,
        region_mode=mode, region_inset=float(rng.uniform(-0.03, 0.1)), declare_unit=bool(rng.random() < 0.75), fpn_seed=int(rng.integers(2**31)))


def _levels(kind: str, subkind: str, rng: np.random.Generator) -> dict[str, float]:
    u = rng.uniform
    lv = {"shaft1x": u(-32, -22), "hum": u(-30, -18), "slot": u(-48, -38), "motor_fan": u(-22, -14),
          "pwm": u(-32, -22)}
    if kind == "pump":
        lv |= {"tone": u(-20, -12), "broad": u(-24, -16)}
    elif kind == "fan":
        lv |= {"tone": u(-18, -10), "broad": u(-14, -8), "belt": u(-36, -28)}
    elif subkind == "screw":
        lv |= {"tone": u(-14, -8), "broad": u(-18, -12)}
    elif subkind == "piston":
        lv |= {"tone": u(-18, -10), "broad": u(-24, -18), "valve": u(-16, -8)}
    else:
        lv |= {"tone": u(-20, -12), "broad": u(-26, -18)}
    return {k: float(v) for k, v in lv.items()}


def _counts(kind: str, subkind: str, rng: np.random.Generator) -> dict[str, float]:
    c: dict[str, float] = {"fan_blades": float(rng.integers(7, 13))}
    if kind == "pump":
        c["vanes"] = float(rng.integers(5, 8))
    elif kind == "fan":
        c["blades"] = float(rng.integers(5, 13))
        c["ratio"] = float(rng.uniform(0.5, 0.9)) if subkind == "belt" else 1.0
    elif subkind == "screw":
        c["lobes"] = 4.0
        c["ratio"] = float(rng.uniform(1.0, 1.6))
    elif subkind == "piston":
        c["cylinders"] = float(rng.integers(1, 3))
        c["valve_hz"] = float(rng.uniform(800, 2500))
    else:
        c["teeth"] = float(rng.integers(17, 32))
        c["teeth2"] = float(rng.integers(53, 97))
    return c


def draw_machine(index: int, seed: int) -> Machine:
    rng = np.random.default_rng([seed, 1, index])
    kind = str(rng.choice(KINDS, p=KIND_WEIGHTS))
    subkind = {"fan": str(rng.choice(["direct", "belt"], p=[0.7, 0.3])),
               "compressor": str(rng.choice(["screw", "piston"], p=[0.7, 0.3]))}.get(kind, kind)
    poles = int(rng.choice([2, 4, 6, 8], p=[0.35, 0.4, 0.17, 0.08]))
    if kind == "compressor" and poles > 4:
        poles = 4
    vfd = bool(rng.random() < 0.35) and poles <= 6 and subkind != "piston"
    power = float(rng.choice([1.5, 2.2, 4.0, 5.5, 7.5, 11, 15, 22, 30, 45, 55, 75, 90]))
    big = power >= 22
    pool = [b for b in BEARINGS if (b.pitch_mm >= 60) == big] or list(BEARINGS)
    bearing = pool[int(rng.integers(len(pool)))]
    n_modes = int(rng.integers(1, 4))
    modes = tuple(sorted(float(f) for f in rng.uniform(1400, 6500, n_modes)))
    return Machine(
        index=index, asset_id=_asset_id(kind, index, rng), kind=kind,
        type_name=str(rng.choice(TYPE_NAMES.get(subkind, TYPE_NAMES.get(kind, ("machine",))))), subkind=subkind,
        poles=poles,
        line_hz=float(rng.choice([50.0, 60.0], p=[0.65, 0.35])),
        rated_slip=float(rng.uniform(0.01, 0.04)) * (0.6 if big else 1.0), vfd=vfd, power_kw=power,
        bearing=bearing, bearing_at_de=bool(rng.random() < 0.7), modes_hz=modes,
        modes_zeta=tuple(float(z) for z in rng.uniform(0.02, 0.06, n_modes)),
        modes_gain=tuple(float(g) for g in rng.uniform(0.4, 1.0, n_modes)),
        mic_gain_db=float(rng.uniform(-12, 12)), mic_hp_hz=float(rng.uniform(15, 40)),
        background_db=float(rng.uniform(-26, -10)), levels_db=_levels(kind, subkind, rng),
        counts=_counts(kind, subkind, rng), rotor_bars=int(rng.choice([22, 28, 32, 36, 40, 46])),
        pwm_hz=float(rng.choice([2000, 3000, 4000, 6000, 8000])), mains_pickup=bool(rng.random() < 0.25),
        neighbour_hz=tuple(float(f) for f in rng.uniform(20, 400, int(rng.integers(0, 3)))),
        wav_rate=int(rng.choice(SAMPLE_RATES)), wav_subtype=str(rng.choice(SUBTYPES)),
        stereo=bool(rng.random() < 0.3), camera=_camera(rng), ambient_c=float(rng.uniform(5, 35)),
        body_rise_k=float(rng.uniform(20, 45)),
        driven_temp={"pump": float(rng.choice([rng.uniform(8, 25), rng.uniform(40, 80)])),
                     "fan": float(rng.uniform(1, 5)), "compressor": float(rng.uniform(40, 70)),
                     "gearbox": float(rng.uniform(20, 40))}[kind],
        eps_paint=float(rng.uniform(0.85, 0.97)))


# ----------------------------------------------------------------------------------- operating


def shaft_hz(m: Machine, s: Sample) -> float:
    if m.vfd:
        return m.rated_shaft_hz * s.speed_frac
    return m.sync_hz * (1 - m.rated_slip * s.load)


def supply_hz(m: Machine, s: Sample) -> float:
    if not m.vfd:
        return m.line_hz
    return shaft_hz(m, s) / (1 - m.rated_slip * s.load) * m.poles / 2


def fault_hz(m: Machine, fr: float, variant: str) -> float:
    o = m.bearing.orders()
    return fr * {"outer_race": o["bpfo"], "inner_race": o["bpfi"], "ball": 2 * o["bsf"]}[variant]


# ---------------------------------------------------------------------------------------- audio


def _db(x: float) -> float:
    return float(10 ** (x / 20))


def _shaped_noise(n: int, fs: float, rng: np.random.Generator, lo: float, hi: float, slope: float = 0.0) -> Arr:
    """Unit-RMS Gaussian noise band-limited to [lo, hi] Hz with a power slope of f^-slope."""
    spec = rng.standard_normal(n // 2 + 1) + 1j * rng.standard_normal(n // 2 + 1)
    f = np.fft.rfftfreq(n, 1 / fs)
    edge = 0.15
    gain = np.clip((f - lo * (1 - edge)) / (lo * edge + 1e-9), 0, 1) * np.clip((hi * (1 + edge) - f) / (hi * edge), 0, 1)
    gain = gain * np.where(f > 0, np.maximum(f, 1.0) ** (-slope / 2), 0.0)
    x = np.fft.irfft(spec * gain, n)
    return x / (np.std(x) + 1e-12)


def _phase(n: int, fs: float, f0: float, rng: np.random.Generator, wobble: float) -> Arr:
    t = np.arange(n) / fs
    rate = f0 * (1 + wobble * np.sin(2 * np.pi * rng.uniform(0.1, 0.5) * t + rng.uniform(0, 6.3))
                 + 0.5 * wobble * np.sin(2 * np.pi * rng.uniform(0.7, 1.9) * t + rng.uniform(0, 6.3)))
    return np.asarray(2 * np.pi * np.cumsum(rate) / fs + rng.uniform(0, 2 * np.pi), dtype=np.float64)


def _harmonics(phase: Arr, amps: list[float], rng: np.random.Generator) -> Arr:
    out = np.zeros_like(phase)
    for k, a in enumerate(amps, start=1):
        out += a * math.sqrt(2) * np.sin(k * phase + rng.uniform(0, 2 * np.pi))
    return out


def _tone(n: int, fs: float, f: float, amp: float, rng: np.random.Generator) -> Arr:
    if f <= 0 or f >= 0.47 * fs:
        return np.zeros(n)
    return np.asarray(amp * math.sqrt(2) * np.sin(2 * np.pi * f * np.arange(n) / fs + rng.uniform(0, 2 * np.pi)),
                      dtype=np.float64)


def _ring(fs: float, freqs: tuple[float, ...], zetas: tuple[float, ...], gains: tuple[float, ...]) -> Arr:
    """Impulse response of the structure: a sum of damped modes."""
    decay = min(2 * np.pi * f * z for f, z in zip(freqs, zetas))
    t = np.arange(int(fs * min(0.05, 7.0 / decay))) / fs
    h = np.zeros_like(t)
    for f, z, g in zip(freqs, zetas, gains):
        if f < 0.46 * fs:
            h += g * np.exp(-2 * np.pi * f * z * t) * np.sin(2 * np.pi * f * math.sqrt(1 - z * z) * t)
    return h


def _impulse_train(n: int, fs: float, rate: float, amp_fn: Any, rng: np.random.Generator, jitter: float) -> Arr:
    x = np.zeros(n)
    t = rng.uniform(0, 1 / rate)
    while t < n / fs:
        i = int(t * fs)
        x[i] += amp_fn(t) * (1 + 0.2 * rng.standard_normal())
        t += (1 + jitter * rng.standard_normal()) / rate
    return x


def _band_rms(x: Arr, fs: float, lo: float, hi: float) -> float:
    from scipy.signal import butter, sosfiltfilt

    hi = min(hi, 0.45 * fs)
    sos = butter(4, [lo, hi], btype="bandpass", fs=fs, output="sos")
    return float(np.sqrt(np.mean(sosfiltfilt(sos, x) ** 2)) + 1e-12)


def _load_zone(phase_fn: Any) -> Any:
    return lambda t: 0.25 + 0.75 * max(0.0, math.cos(phase_fn(t))) ** 1.5


def _healthy_parts(m: Machine, s: Sample, fs: float, n: int, rng: np.random.Generator) -> dict[str, Arr]:
    lv, c = m.levels_db, m.counts
    fr, fe = shaft_hz(m, s), supply_hz(m, s)
    sp = fr / m.rated_shaft_hz
    ph = _phase(n, fs, fr, rng, float(rng.uniform(0.001, 0.004)))
    a1 = _db(lv["shaft1x"]) * sp**2 * _db(rng.normal(0, 1.0))
    parts: dict[str, Arr] = {"shaft1x": _harmonics(ph, [a1], rng)}
    parts["shaft_h"] = _harmonics(ph, [0.0, 0.5 * a1, 0.25 * a1, 0.15 * a1, 0.1 * a1, 0.06 * a1], rng)
    hum = _db(lv["hum"]) * (0.6 + 0.4 * s.load)
    elec = sum((_tone(n, fs, k * 2 * fe, hum / k**1.5, rng) for k in (1, 2, 3)), np.zeros(n))
    for sign in (-1, 1):
        elec += _tone(n, fs, m.rotor_bars * fr + sign * 2 * fe, _db(lv["slot"]), rng)
    if m.vfd:
        for k, side in ((0, 1.0), (-2, 0.5), (2, 0.5), (-4, 0.25), (4, 0.25)):
            elec += _tone(n, fs, m.pwm_hz + k * fe, _db(lv["pwm"]) * side, rng)
    parts["elec"] = elec
    fan_level = _db(lv["motor_fan"]) * sp**2.5
    parts["motor_fan"] = fan_level * _shaped_noise(n, fs, rng, 200, 4000, 0.5) + _harmonics(
        ph * c["fan_blades"], [0.4 * fan_level], rng)
    parts |= _driven(m, s, fs, n, ph, sp, rng)
    return parts


def _driven(m: Machine, s: Sample, fs: float, n: int, ph: Arr, sp: float, rng: np.random.Generator) -> dict[str, Arr]:
    lv, c = m.levels_db, m.counts
    tone, broad = _db(lv["tone"]) * sp**2, _db(lv["broad"]) * sp**2 * (0.7 + 0.3 * s.load)
    out: dict[str, Arr] = {}
    if m.kind == "pump":
        out["tone"] = _harmonics(ph * c["vanes"], [tone, 0.35 * tone], rng)
        out["broad"] = broad * _shaped_noise(n, fs, rng, 60, 7000, 1.0)
    elif m.kind == "fan":
        fph = ph * c["ratio"]
        out["tone"] = _harmonics(fph * c["blades"], [tone, 0.5 * tone, 0.2 * tone], rng)
        out["broad"] = broad * _shaped_noise(n, fs, rng, 40, 7500, 0.8)
        if m.subkind == "belt":
            out["tone"] += _harmonics(ph * 0.37, [_db(lv["belt"]), 0.5 * _db(lv["belt"])], rng)
    elif m.subkind == "screw":
        out["tone"] = _harmonics(ph * c["ratio"] * c["lobes"], [tone, 0.6 * tone, 0.3 * tone, 0.2 * tone], rng)
        out["broad"] = broad * _shaped_noise(n, fs, rng, 80, 7500, 0.6)
    elif m.subkind == "piston":
        fr = shaft_hz(m, s)
        out["tone"] = _harmonics(ph, [0.0, tone, 0.5 * tone, 0.3 * tone], rng)
        clicks = _impulse_train(n, fs, fr * c["cylinders"] * 2, lambda t: 1.0, rng, 0.003)
        ring = _ring(fs, (c["valve_hz"], 1.7 * c["valve_hz"]), (0.04, 0.05), (1.0, 0.5))
        v = oaconvolve(clicks, ring)[:n]
        out["valve"] = _db(lv["valve"]) * v / (np.std(v) + 1e-12)
        out["broad"] = broad * _shaped_noise(n, fs, rng, 60, 6000, 1.0)
    else:
        mesh = ph * c["teeth"]
        am = 1 + 0.2 * np.sin(ph) + 0.1 * np.sin(ph * c["teeth"] / c["teeth2"])
        out["tone"] = am * _harmonics(mesh, [tone, 0.4 * tone], rng)
        out["broad"] = broad * _shaped_noise(n, fs, rng, 100, 7000, 0.7)
    return out


def _background(m: Machine, fs: float, n: int, rng: np.random.Generator) -> Arr:
    level = _db(m.background_db + rng.normal(0, 1.5))
    x = level * _shaped_noise(n, fs, rng, 20, 0.45 * fs, 1.0)
    for f in m.neighbour_hz:
        x += _harmonics(_phase(n, fs, f, rng, 0.001), [0.5 * level, 0.25 * level], rng)
    if m.mains_pickup:
        x += _tone(n, fs, m.line_hz, 0.3 * level, rng) + _tone(n, fs, 3 * m.line_hz, 0.15 * level, rng)
    return x


def _transients(fs: float, n: int, rng: np.random.Generator) -> Arr:
    x = np.zeros(n)
    for _ in range(int(rng.integers(1, 4))):
        kind = int(rng.integers(3))
        start = int(rng.integers(0, n))
        if kind == 0:  # dropped tool / clank
            t = np.arange(int(0.15 * fs)) / fs
            f = rng.uniform(500, min(5000, 0.4 * fs))
            burst = rng.uniform(0.3, 1.5) * np.exp(-t * rng.uniform(20, 80)) * np.sin(2 * np.pi * f * t)
        elif kind == 1:  # compressed-air blow-off
            length = int(rng.uniform(0.2, 0.8) * fs)
            burst = rng.uniform(0.1, 0.4) * _shaped_noise(length, fs, rng, 1000, 0.45 * fs, 0.0) * np.hanning(length)
        else:  # forklift beeper
            t = np.arange(int(rng.uniform(0.3, 1.0) * fs)) / fs
            burst = rng.uniform(0.05, 0.2) * np.sin(2 * np.pi * rng.uniform(2000, 3000) * t) * (np.sin(2 * np.pi * 2 * t) > 0)
        end = min(n, start + burst.size)
        x[start:end] += burst[: end - start]
    return x


def _bearing_fault(m: Machine, s: Sample, fs: float, n: int, healthy: Arr, rng: np.random.Generator) -> Arr:
    fr = shaft_hz(m, s)
    slip = float(rng.uniform(0.01, 0.02))
    rate = fault_hz(m, fr, s.variant) * (1 - slip)
    s.extra["fault_rate_hz"] = rate
    phi0 = float(rng.uniform(0, 2 * np.pi))
    if s.variant == "inner_race":
        amp = _load_zone(lambda t: 2 * np.pi * fr * t + phi0)
    elif s.variant == "ball":
        ftf = fr * m.bearing.orders()["ftf"]
        amp = _load_zone(lambda t: 2 * np.pi * ftf * t + phi0)
    else:
        amp = lambda t: 1.0  # noqa: E731
    train = _impulse_train(n, fs, rate, amp, rng, 0.01)
    x = oaconvolve(train, _ring(fs, m.modes_hz, m.modes_zeta, m.modes_gain))[:n]
    fn = _main_mode(m, fs)
    target = _band_rms(healthy, fs, 0.8 * fn, 1.2 * fn) * _db(_lin(BEARING_SNR_DB, s.severity))
    x *= target / _band_rms(x, fs, 0.8 * fn, 1.2 * fn)
    rough = _shaped_noise(n, fs, rng, 0.6 * fn, min(1.4 * fn, 0.45 * fs), 0.0)
    return np.asarray(x + 0.3 * target * s.severity * rough, dtype=np.float64)


def _main_mode(m: Machine, fs: float) -> float:
    usable = [(g, f) for f, g in zip(m.modes_hz, m.modes_gain) if f < 0.42 * fs]
    return max(usable)[1] if usable else m.modes_hz[0]


def _cavitation(m: Machine, s: Sample, fs: float, n: int, healthy: Arr, rng: np.random.Generator) -> Arr:
    fr = shaft_hz(m, s)
    vane = fr * m.counts["vanes"]
    rate = 150 + 850 * (s.severity - SEVERITY_LO) / (SEVERITY_HI - SEVERITY_LO)
    t = np.sort(rng.uniform(0, n / fs, rng.poisson(rate * n / fs)))
    keep = rng.random(t.size) < 0.5 + 0.5 * np.cos(2 * np.pi * vane * t) ** 2
    pulses = np.zeros(n)
    idx = (t[keep] * fs).astype(int)
    np.add.at(pulses, idx, rng.lognormal(0, 0.6, idx.size))
    tau = rng.uniform(0.2e-3, 1e-3)
    kernel = np.exp(-np.arange(int(6 * tau * fs) + 1) / (tau * fs))
    env = oaconvolve(pulses, kernel)[:n]
    x = env * _shaped_noise(n, fs, rng, 1500, min(7000, 0.45 * fs), 0.0)
    target = _band_rms(healthy, fs, 2000, 7000) * _db(_lin(CAVITATION_SNR_DB, s.severity))
    return np.asarray(x * target / _band_rms(x, fs, 2000, 7000), dtype=np.float64)


def render_audio(m: Machine, s: Sample, fs: float, rng: np.random.Generator) -> tuple[Arr, dict[str, float]]:
    """The microphone signal (before gain and encoding) and the expert reference values."""
    n = int(round(s.duration_s * fs))
    parts = _healthy_parts(m, s, fs, n, rng)
    sev = s.severity
    if s.cls == "imbalance":
        parts["shaft1x"] *= _db(_lin(IMBALANCE_GAIN_DB, sev))
        parts["shaft_h"] *= _db(3.0 * sev)
        depth = 0.03 + 0.12 * (sev - SEVERITY_LO) / (SEVERITY_HI - SEVERITY_LO)
        am = 1 + depth * np.sin(_phase(n, fs, shaft_hz(m, s), rng, 0.0))
        parts["broad"] = parts["broad"] * am
        parts["motor_fan"] = parts["motor_fan"] * am
    if s.cls == "cooling_failure" and s.variant == "fan_broken":
        parts["motor_fan"] *= _db(-(2 + 6 * sev))
    if s.cls == "cavitation":
        parts["tone"] *= 1 + 0.2 * sev * _shaped_noise(n, fs, rng, 0.5, 8, 0.0)
        parts["broad"] *= _db(3 * sev)
    healthy = sum(parts.values(), np.zeros(n)) + _background(m, fs, n, rng)
    x = healthy.copy()
    if s.cls == "bearing_wear":
        x += _bearing_fault(m, s, fs, n, healthy, rng)
    if s.cls == "cavitation":
        x += _cavitation(m, s, fs, n, healthy, rng)
    if s.transients:
        x += _transients(fs, n, rng) * float(np.std(healthy))
    x = _microphone(m, x, fs)
    return x, expert_reference(m, s, x, fs)


def _microphone(m: Machine, x: Arr, fs: float) -> Arr:
    from scipy.signal import butter, sosfilt

    sos = butter(2, m.mic_hp_hz, btype="highpass", fs=fs, output="sos")
    return np.asarray(sosfilt(sos, x), dtype=np.float64)


def _encode_wav(path: Path, x: Arr, m: Machine, fs: int, rng: np.random.Generator) -> dict[str, Any]:
    import soundfile as sf

    y = x * m.calibration * _db(m.mic_gain_db + rng.normal(0, 0.5))
    y = y + rng.normal(0, _db(-80), y.size)  # microphone self-noise
    if m.stereo:
        d = int(rng.integers(0, max(1, int(0.001 * fs))))
        second = np.roll(y, d) * _db(rng.uniform(-3, 3)) + rng.normal(0, _db(-60), y.size)
        y2 = np.stack([y, second], axis=1)
    else:
        y2 = y[:, None]
    clipped = float(np.mean(np.abs(y2) > 1.0))
    if m.wav_subtype != "FLOAT":
        y2 = np.clip(y2, -1.0, 1.0 - 1e-6)
    sf.write(str(path), y2.astype(np.float32), fs, subtype=m.wav_subtype)
    return {"sample_rate": fs, "subtype": m.wav_subtype, "channels": y2.shape[1], "clipped_frac": clipped,
            "rms_dbfs": float(20 * np.log10(np.std(y2) + 1e-12))}


# --------------------------------------------------------------------------- expert reference


def _envelope_peak_db(x: Arr, fs: float, band: tuple[float, float], f: float) -> float:
    from scipy.signal import butter, hilbert, sosfiltfilt

    lo, hi = band[0], min(band[1], 0.45 * fs)
    env = np.abs(hilbert(sosfiltfilt(butter(4, [lo, hi], btype="bandpass", fs=fs, output="sos"), x)))
    env = env - env.mean()
    spec = np.abs(np.fft.rfft(env * np.hanning(env.size)))
    freqs = np.fft.rfftfreq(env.size, 1 / fs)
    peaks = []
    for k in (1, 2):
        win = (freqs > k * f * 0.97) & (freqs < k * f * 1.03)
        if win.any():
            peaks.append(float(spec[win].max()))
    floor_sel = (freqs > 0.3 * f) & (freqs < 4 * f)
    floor = float(np.median(spec[floor_sel])) if floor_sel.any() else 1.0
    return 20 * math.log10(max(peaks or [floor]) / (floor + 1e-12))


def expert_reference(m: Machine, s: Sample, x: Arr, fs: float) -> dict[str, float]:
    """What an analyst with the true speed, bearing rates and resonance would measure."""
    fr = shaft_hz(m, s)
    fn = _main_mode(m, fs)
    band = (0.8 * fn, 1.2 * fn)
    slip = 0.985
    env = max(_envelope_peak_db(x, fs, band, fault_hz(m, fr, v) * slip) for v in ("outer_race", "inner_race", "ball"))
    n = x.size
    spec = np.abs(np.fft.rfft(x * np.hanning(n))) / n
    freqs = np.fft.rfftfreq(n, 1 / fs)
    half = max(0.03 * fr, 1.5 * fs / n)
    win = (freqs > fr - half) & (freqs < fr + half)
    one_x = float(spec[win].max()) if win.any() else 0.0
    speed_norm = (fr / m.rated_shaft_hz) ** 2
    from scipy.signal import butter, sosfiltfilt

    hf = sosfiltfilt(butter(4, [2000, min(7000, 0.45 * fs)], btype="bandpass", fs=fs, output="sos"), x)
    kurt = float(np.mean(hf**4) / (np.mean(hf**2) ** 2 + 1e-30))
    return {"env_peak_db": env, "one_x_db": 20 * math.log10(one_x / speed_norm + 1e-12),
            "hf_db": 10 * math.log10(np.mean(hf**2) / speed_norm**2 + 1e-30), "hf_kurtosis": kurt}


# -------------------------------------------------------------------------------------- thermal


def thermal_expert(app: Arr, scene: Scene, s: Sample) -> dict[str, float]:
    """What a thermographer with the true part outlines and a hall thermometer would read."""
    def px(name: str) -> Arr:
        x0, y0, x1, y1 = scene.boxes[name]
        sl = app[int(math.ceil(y0)):max(int(math.ceil(y0)) + 1, int(y1)), int(math.ceil(x0)):max(int(math.ceil(x0)) + 1, int(x1))]
        return sl.ravel()

    body = float(np.mean(px("motor_body")))
    rise = max(body - s.ambient_c, 1.0)
    housing = max(float(np.mean(px("de_bearing"))), float(np.mean(px("nde_bearing"))))
    box = px("terminal_box")
    return {"body_rise_k": body - s.ambient_c, "housing_over_body": (housing - s.ambient_c) / rise,
            "lug_contrast_k": float(box.max() - np.median(box))}


def _planck(t_k: Arr | float) -> Arr:
    return np.asarray(1.0 / (np.exp(14388.0 / (10.0 * np.asarray(t_k))) - 1.0), dtype=np.float64)


def _inv_planck(rad: Arr) -> Arr:
    return np.asarray(14388.0 / (10.0 * np.log1p(1.0 / np.maximum(rad, 1e-12))), dtype=np.float64)


@dataclass
class Scene:
    temp: Arr  # true surface temperature, C
    eps: Arr
    boxes: dict[str, tuple[float, float, float, float]]  # frame pixels (float, x1/y1 exclusive)


def _rect(xx: Arr, yy: Arr, box: tuple[float, float, float, float]) -> NDArray[np.bool_]:
    x0, y0, x1, y1 = box
    return (xx >= x0) & (xx < x1) & (yy >= y0) & (yy < y1)


def _ellipse(xx: Arr, yy: Arr, box: tuple[float, float, float, float]) -> NDArray[np.bool_]:
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return ((xx - cx) / ((box[2] - box[0]) / 2)) ** 2 + ((yy - cy) / ((box[3] - box[1]) / 2)) ** 2 < 1


def _layout(m: Machine) -> dict[str, tuple[float, float, float, float]]:
    """Part boxes in frame pixels, fan end on the left before mirroring."""
    cam = m.camera
    w, h = cam.width, cam.height
    x0, length, yc, d = cam.x0 * w, cam.length * w, cam.yc * h, cam.diam * h
    fr = {"cowl": 0.09, "nde": 0.05, "body": 0.34, "de": 0.055, "coupling": 0.075}
    xs = [x0]
    for k in ("cowl", "nde", "body", "de", "coupling"):
        xs.append(xs[-1] + fr[k] * length)
    driven_h = {"pump": 1.1, "fan": 1.6, "compressor": 1.3, "gearbox": 1.2}[m.kind] * d
    boxes = {
        "cowl": (xs[0], yc - 0.45 * d, xs[1], yc + 0.45 * d),
        "nde_bearing": (xs[1], yc - 0.3 * d, xs[2], yc + 0.3 * d),
        "motor_body": (xs[2], yc - 0.5 * d, xs[3], yc + 0.5 * d),
        "de_bearing": (xs[3], yc - 0.32 * d, xs[4], yc + 0.32 * d),
        "coupling": (xs[4], yc - 0.16 * d, xs[5], yc + 0.16 * d),
        "driven": (xs[5], yc + 0.5 * d - driven_h, x0 + length * (0.92 if m.kind == "pump" else 1.0), yc + 0.5 * d),
        "base": (xs[0], yc + 0.5 * d, x0 + length, yc + 0.62 * d),
    }
    tb_x, body_len = xs[2] + 0.55 * (xs[3] - xs[2]), xs[3] - xs[2]
    boxes["terminal_box"] = (tb_x - 0.16 * body_len, yc - 0.8 * d, tb_x + 0.16 * body_len, yc - 0.5 * d)
    if m.kind == "pump":
        boxes["pump_inlet"] = (x0 + 0.92 * length, yc - 0.05 * d, x0 + length, yc + 0.3 * d)
    if not cam.fan_left:
        boxes = {k: (2 * x0 + length - b[2], b[1], 2 * x0 + length - b[0], b[3]) for k, b in boxes.items()}
    return boxes


def _part_temps(m: Machine, s: Sample) -> dict[str, float]:
    rise = m.body_rise_k * (0.35 + 0.65 * s.load**2)
    amb = s.ambient_c
    t = {"body": amb + rise, "de_bearing": amb + 0.55 * rise, "nde_bearing": amb + 0.45 * rise,
         "terminal_box": amb + 0.35 * rise, "cowl": amb + 0.1 * rise, "coupling": amb + 0.15 * rise,
         "base": amb + 0.08 * rise}
    if m.kind == "pump":
        t["driven"] = m.driven_temp + 0.1 * (amb - m.driven_temp)
        t["pump_inlet"] = m.driven_temp
    elif m.kind == "fan":
        t["driven"] = amb + m.driven_temp
    else:
        t["driven"] = amb + m.driven_temp * (0.5 + 0.5 * s.load)
    return t


def _healthy_spread(t: dict[str, float], amb: float, rng: np.random.Generator) -> dict[str, float]:
    """Part-to-part variation of a healthy machine: lubrication, alignment, drafts, sun (rise +-8 %, +-1 K)."""
    return {k: amb + (v - amb) * float(rng.normal(1, 0.08)) + float(rng.normal(0, 1.0)) if k != "pump_inlet" else v
            for k, v in t.items()}


def _apply_thermal_fault(m: Machine, s: Sample, t: dict[str, float]) -> dict[str, float]:
    sev = s.severity
    rise = t["body"] - s.ambient_c
    t["gradient"] = 0.25
    if s.cls == "cooling_failure":
        extra = _lin(COOLING_EXTRA, sev) * rise
        t["body"] += extra
        t["de_bearing"] += 0.3 * extra
        t["nde_bearing"] += 0.4 * extra
        t["terminal_box"] += 0.3 * extra
        t["gradient"] = -0.15
        if s.variant == "fan_broken":
            t["cowl"] += 0.2 * extra
        s.extra["true_delta_k"] = extra
    elif s.cls == "bearing_wear":
        key = "de_bearing" if m.bearing_at_de else "nde_bearing"
        d = _lin(BEARING_HOUSING_K, sev)
        t[key] += d
        s.extra["true_delta_k"] = d
    elif s.cls == "imbalance":
        d = 1 + 3 * (sev - SEVERITY_LO) / (SEVERITY_HI - SEVERITY_LO)
        t["de_bearing"] += d
        t["nde_bearing"] += d
        s.extra["true_delta_k"] = d
    elif s.cls == "electrical_overheating":
        s.extra["true_delta_k"] = _lin(LUG_RISE_K, sev)
    return t


def build_scene(m: Machine, s: Sample, rng: np.random.Generator, sub: int) -> Scene:
    cam = m.camera
    w, h = cam.width * sub, cam.height * sub
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64) / sub
    amb = s.ambient_c
    temp = amb - 1.0 + 2.0 * yy / cam.height + rng.normal(0, 0.3)  # warmer wall at the top, floor below
    eps = np.full((h, w), 0.92)
    floor = yy > cam.height * (cam.yc + 0.2)
    temp[floor] = amb - 0.5
    if rng.random() < 0.3:  # hot pipe or lamp in the background
        y0 = rng.uniform(0.02, 0.2) * cam.height
        sel = (yy > y0) & (yy < y0 + rng.uniform(0.02, 0.05) * cam.height)
        temp[sel] = amb + rng.uniform(20, 60)
    boxes = _layout(m)
    t = _apply_thermal_fault(m, s, _healthy_spread(_part_temps(m, s), s.ambient_c, rng))
    for name in ("base", "driven", "coupling", "cowl", "nde_bearing", "de_bearing"):
        sel = _ellipse(xx, yy, boxes[name]) if name == "driven" and m.kind in ("pump", "fan") else _rect(xx, yy, boxes[name])
        temp[sel] = t[name] + rng.normal(0, 0.3)
        eps[sel] = 0.45 if name == "coupling" else m.eps_paint
    if "pump_inlet" in boxes:
        sel = _rect(xx, yy, boxes["pump_inlet"])
        temp[sel], eps[sel] = t["pump_inlet"], m.eps_paint
    _draw_body(m, s, t, boxes, xx, yy, temp, eps)
    _draw_terminal_box(m, s, t, boxes, xx, yy, temp, eps, rng)
    if rng.random() < 0.2:  # draft or sun: a gradient across the whole scene
        temp += rng.uniform(-2, 2) * (xx / cam.width - 0.5)
    return Scene(temp, eps, {k: v for k, v in boxes.items() if k not in ("base", "cowl")})


def _draw_body(m: Machine, s: Sample, t: dict[str, float], boxes: dict[str, tuple[float, float, float, float]],
               xx: Arr, yy: Arr, temp: Arr, eps: Arr) -> None:
    b = boxes["motor_body"]
    sel = _rect(xx, yy, b)
    u = (xx[sel] - b[0]) / (b[2] - b[0])
    if not m.camera.fan_left:
        u = 1 - u
    v = (yy[sel] - (b[1] + b[3]) / 2) / ((b[3] - b[1]) / 2)
    rise = t["body"] - s.ambient_c
    fins = 0.04 * np.cos(2 * np.pi * v * 6)
    temp[sel] = s.ambient_c + rise * (1 - t["gradient"] / 2 + t["gradient"] * u) * (1 + fins - 0.05 * v)
    eps[sel] = m.eps_paint * (1 - 0.35 * np.abs(v) ** 6)


def _draw_terminal_box(m: Machine, s: Sample, t: dict[str, float], boxes: dict[str, tuple[float, float, float, float]],
                       xx: Arr, yy: Arr, temp: Arr, eps: Arr, rng: np.random.Generator) -> None:
    b = boxes["terminal_box"]
    sel = _rect(xx, yy, b)
    temp[sel] = t["terminal_box"]
    eps[sel] = m.eps_paint
    if s.cls == "electrical_overheating":
        peak = s.extra["true_delta_k"]
        temp[sel] += 0.25 * peak
    else:  # normal I^2 R warmth of the lugs
        peak = float(rng.uniform(0.5, 4.0)) * s.load**2
    cx = rng.uniform(b[0] + 0.25 * (b[2] - b[0]), b[2] - 0.25 * (b[2] - b[0]))
    cy = rng.uniform(b[1] + 0.3 * (b[3] - b[1]), b[3] - 0.2 * (b[3] - b[1]))
    sigma = max(0.6, 0.015 * m.camera.length * m.camera.width * rng.uniform(0.7, 1.6))
    spot = peak * 0.75 * np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * sigma**2))
    near = sel | (spot > 0.2 * peak)
    temp[near] += spot[near]
    eps[near & ~sel] = 0.8


def render_frame(m: Machine, s: Sample, rng: np.random.Generator) -> tuple[Arr, Scene]:
    """Apparent temperature (C) as the camera reports it, at the camera's pixel grid."""
    from scipy.ndimage import gaussian_filter

    cam = m.camera
    sub = 3 if cam.width <= 320 else 2
    scene = build_scene(m, s, rng, sub)
    t_k = scene.temp + 273.15
    refl = _planck(s.ambient_c + 273.15)
    meas = scene.eps * _planck(t_k) + (1 - scene.eps) * refl
    obj = (meas - (1 - cam.eps_setting) * refl) / cam.eps_setting
    rad = obj.reshape(cam.height, sub, cam.width, sub).mean(axis=(1, 3))
    rad = gaussian_filter(rad, cam.blur_px)
    app = _inv_planck(rad) - 273.15
    fpn = np.random.default_rng(cam.fpn_seed).normal(0, cam.netd_k, app.shape)
    return app + fpn + rng.normal(0, cam.netd_k, app.shape), scene


def encode_frame(app_c: Arr, enc: str) -> NDArray[Any]:
    k = app_c + 273.15
    counts = {"uint16_ck": k * 100, "uint16_dk": k * 10, "uint16_flir": k / 0.04, "uint16_c_off": (app_c + 100.0) / 0.01}
    if enc in counts:
        return np.asarray(np.clip(np.round(counts[enc]), 0, 65535), dtype=np.uint16)
    if enc == "float32_k":
        return k.astype(np.float32)
    if enc == "float32_c":
        return app_c.astype(np.float32)
    return (app_c * 9 / 5 + 32).astype(np.float32)


FRAME_DECL: dict[str, dict[str, Any]] = {
    "uint16_ck": {"unit": "centikelvin"}, "uint16_dk": {"unit": "decikelvin"},
    "uint16_flir": {"unit": "kelvin", "scale": 0.04}, "uint16_c_off": {"unit": "celsius", "scale": 0.01, "offset": -100.0},
    "float32_k": {"unit": "kelvin"}, "float32_c": {"unit": "celsius"}, "float32_f": {"unit": "fahrenheit"},
}
INFERABLE = {"uint16_ck", "float32_k", "float32_c"}


# -------------------------------------------------------------------------------------- assets


def _bearing_entry(m: Machine, rng: np.random.Generator) -> dict[str, Any]:
    b = m.bearing
    choice = int(rng.integers(6))
    nominal = m.rated_shaft_hz
    if choice == 0 and b.designation in KNOWN_DESIGNATIONS:
        return {"bearing": {"designation": b.designation}}
    if choice <= 1:
        return {"bearing": {"designation": b.designation, "n_elements": b.n, "ball_d_mm": b.d_mm,
                            "pitch_d_mm": b.pitch_mm, "contact_angle_deg": b.angle_deg}}
    if choice == 2:
        return {"bearing": {"designation": b.designation, "balls": b.n, "ball_diameter_mm": b.d_mm,
                            "pitch_diameter_mm": b.pitch_mm}}
    if choice == 3:
        return {"bearing_orders": {k: round(v, 4) for k, v in b.orders().items()}}
    if choice == 4:
        return {"bearing_frequencies_hz": {k: round(v * nominal, 2) for k, v in b.orders().items()}}
    return {}


def _speed_entry(m: Machine, rng: np.random.Generator) -> dict[str, Any]:
    rated_rpm = round(m.rated_shaft_hz * 60)
    e: dict[str, Any] = {}
    choice = int(rng.integers(6))
    if choice == 0:
        e["nominal_rpm"] = rated_rpm
    elif choice == 1:
        e[str(rng.choice(["rated_rpm", "nameplate_rpm", "rpm", "speed_rpm"]))] = rated_rpm
    elif choice == 2:
        e["sync_rpm"] = round(m.sync_hz * 60)
    elif choice == 3:
        e["nominal_shaft_hz"] = round(m.rated_shaft_hz, 2)
    if choice >= 4 or rng.random() < 0.5:
        e["poles"] = m.poles
    if m.line_hz != 50.0 or rng.random() < 0.3:
        e["line_frequency_hz"] = m.line_hz
    if m.vfd:
        e |= {"vfd": True} if rng.random() < 0.6 else {"drive": "vfd"}
        if rng.random() < 0.4:
            e["speed_range_rpm"] = [round(0.4 * rated_rpm), round(1.05 * rated_rpm)]
    return e


def _camera_entry(m: Machine, rng: np.random.Generator) -> dict[str, Any]:
    cam = m.camera
    e: dict[str, Any] = {}
    grid = (cam.width // 2, cam.height // 2) if cam.region_mode == "preview" else (cam.width, cam.height)
    frame: dict[str, Any] = {}
    if (cam.width, cam.height) != (160, 120) or cam.region_mode == "preview":
        frame |= {"width": grid[0], "height": grid[1]}
    if cam.encoding not in INFERABLE or (cam.declare_unit and cam.encoding != "uint16_ck"):
        frame |= FRAME_DECL[cam.encoding]
    if frame:
        e["frame"] = frame
    if cam.region_mode != "none":
        e["regions"] = _region_boxes(m, grid, rng)
    if rng.random() < 0.5:
        e["fan_side"] = "left" if cam.fan_left else "right"
    if cam.region_mode == "exact" and rng.random() < 0.15:
        e["region_fit"] = False
    return e


def _region_boxes(m: Machine, grid: tuple[int, int], rng: np.random.Generator) -> dict[str, Any]:
    cam = m.camera
    sx, sy = grid[0] / cam.width, grid[1] / cam.height
    boxes = {k: v for k, v in _layout(m).items() if k not in ("base", "cowl")}
    out: dict[str, Any] = {}
    as_dict = rng.random() < 0.2
    dx = dy = 0.0
    if cam.region_mode == "rough":
        dx, dy = rng.uniform(-0.04, 0.04) * cam.width, rng.uniform(-0.04, 0.04) * cam.height
    for name, (x0, y0, x1, y1) in boxes.items():
        # drawn just inside the part's outline
        mx, my = cam.region_inset * (x1 - x0), cam.region_inset * (y1 - y0)
        bx0, bx1 = _span((x0 + mx + dx) * sx, (x1 - mx + dx) * sx)
        by0, by1 = _span((y0 + my + dy) * sy, (y1 - my + dy) * sy)
        out[name] = {"x": bx0, "y": by0, "w": bx1 - bx0, "h": by1 - by0} if as_dict else [bx0, by0, bx1, by1]
    return out


def _span(a: float, b: float, least: int = 2) -> tuple[int, int]:
    """Integer pixel span [lo, hi) of at least `least` pixels, as a user would draw it."""
    lo, hi = int(round(a)), int(round(b))
    if hi - lo < least:
        mid = (a + b) / 2
        lo = int(math.floor(mid - least / 2 + 0.5))
        hi = lo + least
    return max(lo, 0), hi


def asset_entry(m: Machine, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng([seed, 2, m.index])
    id_key = str(rng.choice(["asset_id", "asset_id", "asset_id", "id", "name"]))
    e: dict[str, Any] = {id_key: m.asset_id}
    if m.kind == "pump" or rng.random() < 0.9:
        e["asset_type" if rng.random() < 0.8 else "type"] = m.type_name
    e |= _speed_entry(m, rng)
    e |= _bearing_entry(m, rng)
    if rng.random() < 0.5:
        fn = m.modes_hz[int(np.argmax(m.modes_gain))] * rng.uniform(0.9, 1.1)
        e["resonance_band_hz"] = [round(0.8 * fn, -2), round(1.2 * fn, -2)]
    if rng.random() < 0.7:
        e["rated_power_kw"] = m.power_kw
    if rng.random() < 0.5:
        volts = 400.0 if m.line_hz == 50 else 460.0
        key = str(rng.choice(["rated_current_a", "fla_a", "nominal_current_a"]))
        e[key] = round(m.power_kw * 1000 / (math.sqrt(3) * volts * 0.86 * 0.9), 1)
    if m.kind in ("pump", "compressor") and rng.random() < 0.5:
        e["pressure_nominal_bar"] = round(float(rng.uniform(2, 10)), 1)
    if rng.random() < 0.4:
        e["load_profile"] = "varying" if m.vfd else "steady"
    if rng.random() < 0.5:  # keys the reader does not know, as users add them
        e["location"] = f"hall {1 + m.index % 3}, bay {1 + m.index % 7}"
        e["impeller_vanes" if m.kind == "pump" else "notes"] = int(m.counts.get("vanes", 0)) or "see CMMS"
    e |= _camera_entry(m, rng)
    return e


def write_assets(machines: list[Machine], seed: int, path: Path) -> None:
    doc = {"schema_version": 1,
           "frame": {"width": 160, "height": 120, "dtype": "uint16", "unit": "centikelvin", "scale": 0.01},
           "line_frequency_hz": 50.0,
           "assets": [asset_entry(m, seed) for m in machines]}
    path.write_text(json.dumps(doc, indent=1))


# ------------------------------------------------------------------------------------- samples


def plan_samples(m: Machine, seed: int, per_class: int, healthy: int) -> list[Sample]:
    rng = np.random.default_rng([seed, 3, m.index])
    plan: list[tuple[str, str, float]] = [("normal", "", 0.0)] * healthy
    for cls in FAULTS:
        if cls == "cavitation" and m.kind != "pump":
            continue
        n = per_class + (1 if cls == "bearing_wear" else 0)
        variants = {"bearing_wear": ["outer_race", "inner_race", "ball"],
                    "cooling_failure": ["fan_broken", "cowl_blocked"]}.get(cls, [""])
        start = int(rng.integers(len(variants)))
        for i in range(n):
            sev = SEVERITY_LO + (SEVERITY_HI - SEVERITY_LO) * (i + rng.uniform()) / n
            plan.append((cls, variants[(start + i) % len(variants)], sev))
    order = rng.permutation(len(plan))
    samples = []
    for k, j in enumerate(order):
        cls, variant, sev = plan[j]
        samples.append(_operating_point(m, k, cls, variant, sev, rng))
    return samples


def _operating_point(m: Machine, k: int, cls: str, variant: str, sev: float, rng: np.random.Generator) -> Sample:
    speed = float(rng.uniform(0.4, 1.05)) if m.vfd else 1.0
    if m.vfd and m.kind in ("pump", "fan"):
        load = float(np.clip(speed**3 * rng.uniform(0.85, 1.05), 0.15, 1.0))
    else:
        load = float(rng.uniform(0.45, 1.0))
    stamp = START + timedelta(days=int(rng.integers(0, 60)), seconds=int(rng.integers(0, 86400)),
                              milliseconds=int(rng.integers(0, 1000)))
    return Sample(asset_id=m.asset_id, machine_index=m.index, index=k, cls=cls, variant=variant,
                  severity=sev, load=load, speed_frac=speed,
                  ambient_c=float(np.clip(m.ambient_c + rng.uniform(-5, 5), 0, 40)),
                  duration_s=float(rng.choice(DURATIONS_S)), stamp=stamp.strftime("%Y%m%dT%H%M%S%f")[:-3],
                  transients=bool(rng.random() < 0.25))


def _calibrate(m: Machine, seed: int) -> None:
    """Fix the machine's microphone chain so its healthy nominal sound sits at -26 dBFS before gain."""
    s = _reference_sample(m)
    x, _ = render_audio(m, s, m.wav_rate, np.random.default_rng([seed, 4, m.index]))
    m.calibration = _db(-26.0) / (float(np.std(x)) + 1e-12)


def _reference_sample(m: Machine) -> Sample:
    return Sample(asset_id=m.asset_id, machine_index=m.index, index=-1, cls="normal", variant="", severity=0.0,
                  load=0.8, speed_frac=1.0 if not m.vfd else 0.9, ambient_c=m.ambient_c, duration_s=4.0,
                  stamp=(START - timedelta(days=30)).strftime("%Y%m%dT%H%M%S%f")[:-3], transients=False)


def generate_machine(args: tuple[int, int, int, int, str]) -> dict[str, Any]:
    """Render every sample of one machine (a worker process); returns its records."""
    index, seed, per_class, healthy, out_dir = args
    out = Path(out_dir)
    m = draw_machine(index, seed)
    _calibrate(m, seed)
    ref = _reference_sample(m)
    rng_ref = np.random.default_rng([seed, 5, index])
    x, _ = render_audio(m, ref, m.wav_rate, rng_ref)
    ref_path = out / "reference" / f"{m.asset_id}-{ref.stamp}.wav"
    _encode_wav(ref_path, x, m, m.wav_rate, rng_ref)
    import tifffile

    app, _ = render_frame(m, ref, rng_ref)  # the same commissioning visit's frame (after the WAV: its draws unchanged)
    ref_tiff = out / "reference" / f"{m.asset_id}-{ref.stamp}.tiff"
    tifffile.imwrite(str(ref_tiff), encode_frame(app, m.camera.encoding))
    records = []
    for s in plan_samples(m, seed, per_class, healthy):
        records.append(_render_sample(m, s, seed, out))
    return {"machine": machine_summary(m), "reference_wav": str(ref_path), "reference_tiff": str(ref_tiff),
            "samples": records}


def _render_sample(m: Machine, s: Sample, seed: int, out: Path) -> dict[str, Any]:
    import tifffile

    rng = np.random.default_rng([seed, 6, m.index, s.index])
    x, expert = render_audio(m, s, m.wav_rate, rng)
    wav = out / "files" / f"{s.asset_id}-{s.stamp}.wav"
    wav_info = _encode_wav(wav, x, m, m.wav_rate, rng)
    app, scene = render_frame(m, s, rng)
    expert |= thermal_expert(app, scene, s)
    tiff = out / "files" / f"{s.asset_id}-{s.stamp}.tiff"
    tifffile.imwrite(str(tiff), encode_frame(app, m.camera.encoding),
                     compression="zlib" if m.index % 3 == 0 else None)
    # the same machine healthy at the same load and speed on another day (a load-matched reference
    # frame; its own random stream, so nothing above changes)
    twin = dataclasses.replace(s, cls="normal", variant="", severity=0.0, extra={},
                               ambient_c=float(np.clip(m.ambient_c + np.random.default_rng([seed, 8, m.index, s.index])
                                                       .uniform(-5, 5), 0, 40)))
    twin_app, _ = render_frame(m, twin, np.random.default_rng([seed, 9, m.index, s.index]))
    twin_tiff = out / "twins" / f"{s.asset_id}-{s.stamp}.tiff"
    twin_tiff.parent.mkdir(exist_ok=True)
    tifffile.imwrite(str(twin_tiff), encode_frame(twin_app, m.camera.encoding))
    rec = dataclasses.asdict(s)
    rec |= {"wav": str(wav), "tiff": str(tiff), "twin_tiff": str(twin_tiff), "wav_info": wav_info, "expert": expert,
            "shaft_hz": shaft_hz(m, s), "frame_c": {"min": float(app.min()), "max": float(app.max())}}
    return rec


def machine_summary(m: Machine) -> dict[str, Any]:
    d = dataclasses.asdict(m)
    d["bearing_orders"] = m.bearing.orders()
    d["rated_shaft_hz"] = m.rated_shaft_hz
    return d


# ------------------------------------------------------------------------------------- scoring


def score(samples: list[dict[str, Any]], refs: dict[str, dict[str, str]], assets: Path, with_refs: tuple[str, ...],
          workers: int, label: str, code: Path | None, registry: Path | None = None,
          speed_given: bool = False) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """One inspect call per group of samples holding at most one sample per machine; ``with_refs``:
    the commissioning files given with them (``audio``: ``--healthy-audio``, ``thermal``:
    ``--healthy-thermal``; ``twin``: ``--healthy-thermal`` with the sample's own healthy twin, the
    same machine at the same load on another day); ``speed_given``: each sample's running speed
    as a drive display shows it (whole rpm) with ``--speed-rpm ASSET=RPM``."""
    from tqdm import tqdm

    groups: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for s in samples:
        groups[s["index"]].append(s)
    calls = []
    for k in sorted(groups):
        files = [f for s in groups[k] for f in (s["wav"], s["tiff"])]
        use = [a for s in groups[k] for m in with_refs
               for a in (("--healthy-thermal", s["twin_tiff"]) if m == "twin" else (f"--healthy-{m}", refs[s["asset_id"]][m]))]
        if speed_given:
            use += [a for s in groups[k] for a in ("--speed-rpm", f"{s['asset_id']}={round(60.0 * s['shaft_hz'])}")]
        calls.append((files, use))
    by_file: dict[str, dict[str, Any]] = {}
    logs: list[dict[str, Any]] = []
    with ThreadPoolExecutor(workers) as pool, tqdm(total=len(calls), desc=f"inspect ({label})", unit="call") as bar:
        futures = [pool.submit(run_inspect, f, assets, code, registry, r) for f, r in calls]
        for (files, _), fut in zip(calls, futures):
            recs, stderr, rc, _ = fut.result()
            for r in recs:
                by_file[str(Path(r["file"]).name)] = r
            logs.append({"files": len(files), "rc": rc, "records": len(recs), "stderr_lines": stderr.count("\n"),
                         "stderr_head": stderr[-2000:] if rc not in (0, 1) else ""})
            bar.update(1)
    return by_file, logs


# ------------------------------------------------------------------------------------- metrics


def _sev_bin(sev: float) -> str:
    for lo, hi in SEVERITY_BINS:
        if lo <= sev < hi:
            return f"{lo:.2f}-{min(hi, 1.0):.2f}"
    return "none"


def attach(samples: list[dict[str, Any]], by_file: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for s in samples:
        a = by_file.get(Path(s["wav"]).name, {})
        t = by_file.get(Path(s["tiff"]).name, {})
        fused = a.get("fused") or t.get("fused") or {}
        rows.append({"sample": f"{s['asset_id']}#{s['index']}", "asset_id": s["asset_id"], "true": s["cls"],
                     "variant": s["variant"], "severity": round(s["severity"], 3),
                     "wav": Path(s["wav"]).name, "tiff": Path(s["tiff"]).name,
                     "audio": _pred(a), "thermal": _pred(t),
                     "fused": {"class": fused.get("class"), "probabilities": fused.get("probabilities"),
                               "confidence": fused.get("confidence"), "modalities": fused.get("modalities"),
                               "files": len(fused.get("files", []))},
                     "asset_seen": {"audio": a.get("asset_id"), "thermal": t.get("asset_id")}})
    return rows


def _pred(r: dict[str, Any]) -> dict[str, Any]:
    if not r:
        return {"class": None, "error": "no record", "extrapolating": False, "warnings": []}
    out = {"class": r.get("class"), "probabilities": r.get("probabilities"), "error": r.get("error"),
           "extrapolating": bool(r.get("extrapolating")), "warnings": [_short(w) for w in r.get("warnings") or []],
           "withheld": list(r.get("withheld") or [])}
    if r.get("shaft_hz") is not None:  # audio: the running speed it read the clip at
        out["shaft_hz"] = r["shaft_hz"]
    return out


def _short(warning: str) -> str:
    """A compact code for one of inspect's warnings (the full texts are counted in the metrics)."""
    if "model inputs lie far outside" in warning:
        names = warning.split("(", 1)[-1].split(")", 1)[0]
        return f"outside_training_range: {names}"
    if "registered onto the frame" in warning:
        return "regions_registered" + (": " + warning.split("(", 1)[1].split(")", 1)[0] if "(" in warning else "")
    if "no thermal regions" in warning:
        return "regions_proposed"
    if "without the machine's healthy sound" in warning:
        return "no_healthy_audio"
    if "a drive machine read at" in warning:
        return "drive_speed_from_sound"
    return warning[:160]


def visible_classes(rows: list[dict[str, Any]], modality: str) -> list[str]:
    seen: set[str] = set()
    for r in rows:
        p = r[modality].get("probabilities") or {}
        seen |= {c for c, v in p.items() if v and v > 0}
    return [c for c in CLASSES if c in seen]


def metrics(rows: list[dict[str, Any]], modality: str, visible: list[str]) -> dict[str, Any]:
    pred = [(r["true"], r[modality]["class"] if modality != "fused" else r["fused"]["class"], r) for r in rows]
    healthy = [p for t, p, _ in pred if t == "normal" and p is not None]
    out: dict[str, Any] = {"visible": visible,
                           "healthy_fpr": _rate([p != "normal" for p in healthy]), "healthy_n": len(healthy)}
    recall, detect, by_sev = {}, {}, {}
    for cls in FAULTS:
        hits = [(p, r) for t, p, r in pred if t == cls and p is not None]
        detect[cls] = _rate([p != "normal" for p, _ in hits])
        if cls not in visible:
            continue
        recall[cls] = _rate([p == cls for p, _ in hits])
        recall[cls]["n"] = len(hits)
        by_sev[cls] = {b: _rate([p == cls for p, r in hits if _sev_bin(r["severity"]) == b])
                       for b in sorted({_sev_bin(r["severity"]) for _, r in hits})}
    out |= {"recall": recall, "detected_any_fault": detect, "recall_by_severity": by_sev}
    labels = list(CLASSES) + ["none"]
    conf = {t: dict.fromkeys(labels, 0) for t in CLASSES}
    for t, p, _ in pred:
        conf[t][p if p in labels else "none"] += 1
    out["confusion"] = conf
    if modality != "fused":
        out["errors"] = sum(1 for r in rows if r[modality].get("error"))
        out["extrapolating"] = sum(1 for r in rows if r[modality].get("extrapolating"))
        out["missing_records"] = sum(1 for r in rows if r[modality].get("error") == "no record")
        out["asset_mismatch"] = sum(1 for r in rows if r["asset_seen"][modality] not in (None, r["asset_id"]))
        out["warnings"] = _warning_kinds(rows, modality)
    return out


def _rate(flags: list[bool]) -> dict[str, Any]:
    return {"rate": (sum(flags) / len(flags)) if flags else None, "k": int(sum(flags)), "n": len(flags)}


def _warning_kinds(rows: list[dict[str, Any]], modality: str) -> dict[str, int]:
    c: Counter[str] = Counter()
    for r in rows:
        for w in r[modality].get("warnings", []):
            c[w.split(":")[0][:70]] += 1
    return dict(c.most_common(12))


def merge_records(samples: list[dict[str, Any]], rows_by_run: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """One record per sample: what was generated, and each run's per-file and fused verdicts."""
    out = []
    for i, s in enumerate(samples):
        rec = {k: v for k, v in s.items() if k not in ("machine_index", "extra") and v not in ("", None)}
        rec |= s["extra"]
        for label, rows in rows_by_run.items():
            r = rows[i]
            suffix = RUN_SUFFIXES[label]
            if label in ("single_recording", "with_healthy_audio"):
                rec["audio" + suffix] = _slim(r["audio"])
            if label in ("single_recording", "with_healthy_frame", "with_healthy_frame_at_its_load"):
                rec["thermal" + suffix] = _slim(r["thermal"])
            f = r["fused"]
            rec["fused" + suffix] = {"class": f["class"], "p": _plist(f["probabilities"]),
                                     "modalities": f["modalities"]}
            if any(v not in (None, r["asset_id"]) for v in r["asset_seen"].values()):
                rec["asset_seen"] = r["asset_seen"]
        out.append(rec)
    return out


def _plist(p: dict[str, float] | None) -> list[float] | None:
    return None if p is None else [round(float(p.get(c, 0.0)), 3) for c in CLASSES]


def _slim(pred: dict[str, Any]) -> dict[str, Any]:
    out = {"class": pred["class"], "p": _plist(pred.get("probabilities"))}
    for key in ("error", "extrapolating", "warnings", "shaft_hz", "withheld"):
        if pred.get(key) and pred[key] != ["no_healthy_audio"]:
            out[key] = pred[key]
    return out


def breakdowns(rows: list[dict[str, Any]], samples: list[dict[str, Any]], machines: dict[str, dict[str, Any]]
               ) -> dict[str, Any]:
    """Fused/audio/thermal accuracy split by recording format and machine kind (healthy FPR and fault recall)."""
    by_id = {f"{s['asset_id']}#{s['index']}": s for s in samples}
    keys: dict[str, Callable[[dict[str, Any], dict[str, Any]], Any]] = {
        "kind": lambda s, m: m["kind"], "sample_rate": lambda s, m: s["wav_info"]["sample_rate"],
        "subtype": lambda s, m: s["wav_info"]["subtype"], "channels": lambda s, m: s["wav_info"]["channels"],
        "frame_encoding": lambda s, m: m["camera"]["encoding"], "frame_size": lambda s, m: f"{m['camera']['width']}x{m['camera']['height']}",
        "region_mode": lambda s, m: m["camera"]["region_mode"], "vfd_speed": lambda s, m: (
            "fixed" if not m["vfd"] else ("<0.6" if s["speed_frac"] < 0.6 else ">=0.6")),
        "poles": lambda s, m: m["poles"], "bearing_variant": lambda s, m: s["variant"] or "-",
    }
    out: dict[str, Any] = {}
    for name, fn in keys.items():
        acc: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
        for r in rows:
            s = by_id[r["sample"]]
            g = str(fn(s, machines[r["asset_id"]]))
            for mod in ("audio", "thermal", "fused"):
                p = r[mod]["class"] if mod != "fused" else r["fused"]["class"]
                if r["true"] == "normal":
                    acc[g][f"{mod}_healthy_fp"].append(p != "normal")
                else:
                    acc[g][f"{mod}_correct"].append(p == r["true"])
        out[name] = {g: {k: round(sum(v) / len(v), 3) for k, v in d.items() if v} | {"n": len(d["fused_correct"]) + len(d["fused_healthy_fp"])}
                     for g, d in sorted(acc.items())}
    return out


EXPERT_KEYS = {"bearing_wear": "env_peak_db", "imbalance": "one_x_db", "cavitation": "hf_kurtosis_db",
               "bearing_wear/thermal": "housing_over_body", "electrical_overheating": "lug_contrast_k",
               "cooling_failure": "body_rise_k"}
THERMAL_EXPERT = {"housing_over_body", "lug_contrast_k", "body_rise_k"}
EXPERT_DOC = {
    "env_peak_db": "envelope peak over floor at the true BPFO/BPFI/2xBSF in the true main resonance band, dB",
    "one_x_db": "1x amplitude at the true shaft speed (speed-squared normalised), dB",
    "hf_kurtosis_db": "kurtosis of the 2-7 kHz band, dB",
    "housing_over_body": "hotter bearing housing's rise over the motor body's rise (true boxes), ratio",
    "lug_contrast_k": "terminal box max minus its median (true box), K",
    "body_rise_k": "motor body mean over the hall thermometer, K",
}


def _expert_value(s: dict[str, Any], key: str) -> float:
    e = s["expert"]
    if key == "hf_kurtosis_db":
        return float(10 * math.log10(max(e["hf_kurtosis"], 1e-6)))
    return float(e[key])


def expert_metrics(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Detection by an analyst who knows the true rates and resonance, at the 99th healthy percentile."""
    healthy = [s for s in samples if s["cls"] == "normal"]
    keys = EXPERT_KEYS
    ref: dict[tuple[str, str], list[float]] = defaultdict(list)
    for s in healthy:
        for key in keys.values():
            ref[(s["asset_id"], key)].append(_expert_value(s, key))
    med = {k: float(np.median(v)) for k, v in ref.items()}

    def stat(s: dict[str, Any], cls: str) -> float:
        return _expert_value(s, keys[cls]) - med[(s["asset_id"], keys[cls])]

    out: dict[str, Any] = {}
    pumps = {x["asset_id"] for x in samples if x["cls"] == "cavitation"}
    for cls, key in keys.items():
        pool = [s for s in healthy if cls != "cavitation" or s["asset_id"] in pumps]
        thr = float(np.percentile([stat(s, cls) for s in pool], 99)) if pool else float("nan")
        faulty = [s for s in samples if s["cls"] == cls.split("/")[0]]
        out[cls] = {"statistic": EXPERT_DOC[key], "modality": "thermal" if key in THERMAL_EXPERT else "audio",
                    "threshold": thr, "detected": _rate([stat(s, cls) > thr for s in faulty]),
                    "by_severity": {b: _rate([stat(s, cls) > thr for s in faulty if _sev_bin(s["severity"]) == b])
                                    for b in sorted({_sev_bin(s["severity"]) for s in faulty})},
                    "median_faulty": float(np.median([stat(s, cls) for s in faulty])) if faulty else None}
    return out


# -------------------------------------------------------------------------------------- report


def plot(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = report["runs"]
    fig, axes = plt.subplots(1, len(runs), figsize=(7 * len(runs), 4.6), squeeze=False)
    for ax, (name, run) in zip(axes[0], runs.items()):
        mods = ("audio", "thermal", "fused")
        x = np.arange(len(FAULTS) + 1)
        for j, mod in enumerate(mods):
            met = run["metrics"][mod]
            vals = [(met["recall"].get(c) or {}).get("rate") for c in FAULTS]
            vals.append(met["healthy_fpr"]["rate"])
            ax.bar(x + (j - 1) * 0.27, [v if v is not None else 0 for v in vals], 0.27, label=mod)
            for xi, v in zip(x, vals):
                if v is None:
                    ax.text(xi + (j - 1) * 0.27, 0.01, "-", ha="center", fontsize=7)
        for j, mod in ((0, "audio"), (1, "thermal")):
            for xi, cls in enumerate(FAULTS):
                ex = _expert_rate(report, cls, mod)
                if ex != "-":
                    ax.plot(xi + (j - 1) * 0.27, float(ex), "k_", ms=14, mew=2,
                            label="expert reference" if (xi, j) == (0, 0) else None)
        ax.set_xticks(x, [c.replace("_", "\n") for c in FAULTS] + ["healthy\nFPR"], fontsize=8)
        ax.set_ylim(0, 1.05)
        ax.set_title(f"{name}: recall per class ('-': the modality cannot name it); healthy FPR", fontsize=9)
        ax.legend(fontsize=8)
    fig.suptitle(f"Foreign fleet: {report['counts']['machines']} machines, {report['counts']['samples']} samples, "
                 f"seed {report['seed']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _expert_rate(report: dict[str, Any], cls: str, modality: str) -> str:
    for key, e in report["expert"].items():
        if key.split("/")[0] == cls and e["modality"] == modality and e["detected"]["rate"] is not None:
            return f"{e['detected']['rate']:.3f}"
    return "-"


def summary(report: dict[str, Any]) -> str:
    lines = [f"foreign fleet: {report['counts']}", ""]
    for name, run in report["runs"].items():
        met = run["metrics"]
        lines.append(f"== {name} ==")
        lines.append(f"{'class':24s} {'audio':>14s} {'thermal':>14s} {'fused':>14s}   expert audio / thermal")
        for cls in FAULTS:
            cells = []
            for mod in ("audio", "thermal", "fused"):
                r = met[mod]["recall"].get(cls)
                cells.append(f"{r['rate']:.3f} ({r['k']}/{r['n']})" if r and r["rate"] is not None else "-")
            ex = [_expert_rate(report, cls, mod) for mod in ("audio", "thermal")]
            lines.append(f"{cls:24s} {cells[0]:>14s} {cells[1]:>14s} {cells[2]:>14s}   {ex[0]:>5s} / {ex[1]}")
        fpr = [met[m]["healthy_fpr"] for m in ("audio", "thermal", "fused")]
        lines.append(f"{'healthy FPR':24s} " + " ".join(f"{f['rate']:.3f} ({f['k']}/{f['n']})".rjust(14) for f in fpr))
        lines.append(f"errors audio/thermal: {met['audio']['errors']}/{met['thermal']['errors']}; "
                     f"extrapolating audio/thermal: {met['audio']['extrapolating']}/{met['thermal']['extrapolating']}; "
                     f"asset id mismatches: {met['audio']['asset_mismatch']}/{met['thermal']['asset_mismatch']}")
        for split in ("kind", "region_mode"):
            cells = [f"{g} {d.get('audio_healthy_fp', 0):.2f}/{d.get('thermal_healthy_fp', 0):.2f}/"
                     f"{d.get('fused_healthy_fp', 0):.2f}" for g, d in run["breakdowns"][split].items()]
            lines.append(f"healthy FPR a/t/f by {split}: " + ", ".join(cells))
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "foreign_fleet.json")
    ap.add_argument("--seed", type=int, default=20270301)
    ap.add_argument("--machines", type=int, default=40)
    ap.add_argument("--per-class", type=int, default=2, help="faulty samples per machine and class (bearing: +1)")
    ap.add_argument("--healthy", type=int, default=12, help="healthy samples per machine")
    ap.add_argument("--speed-given", action="store_true",
                    help="give inspect each recording's running speed as a drive display shows it (--speed-rpm "
                         "ASSET=RPM, whole rpm) instead of leaving audio to find it in the sound")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--healthy-audio", choices=("none", "ref", "both"), default="both",
                    help="score without / with a commissioning recording per machine (--healthy-audio)")
    ap.add_argument("--healthy-thermal", choices=("none", "ref", "both"), default="none",
                    help="score without / with a commissioning frame per machine (--healthy-thermal; healthy, at "
                         "80 %% load); 'both' with --healthy-audio both scores the four combinations")
    ap.add_argument("--thermal-twins", action="store_true",
                    help="also score each frame against a healthy frame of its machine at the same load "
                         "(another day's ambient): what a load-matched reference gives")
    ap.add_argument("--data", type=Path, default=None, help="where to write the fleet (default: a temp dir, removed)")
    ap.add_argument("--code", choices=("tree", "head"), default="tree",
                    help="score with the working tree's linewatch, or with HEAD exported by `git archive` (a tree "
                         "that others are editing during the run)")
    ap.add_argument("--registry", type=Path, default=None,
                    help="score with this model registry (working tree's code; default: the shipped models)")
    args = ap.parse_args()
    if args.registry is not None and args.code != "tree":
        ap.error("--registry scores with the working tree's code: leave --code at tree")
    t0 = time.time()
    data = args.data or Path(os.environ.get("TMPDIR", "/tmp")) / f"foreign_fleet_{args.seed}"
    if data.exists():
        shutil.rmtree(data)
    (data / "files").mkdir(parents=True)
    (data / "reference").mkdir()
    machines_list = [draw_machine(i, args.seed) for i in range(args.machines)]
    assets = data / "assets.json"
    write_assets(machines_list, args.seed, assets)
    code, code_info = code_snapshot(args.code, data)
    results = _generate(args, data)
    t_gen = time.time() - t0
    samples = [s for r in results for s in r["samples"]]
    machines = {r["machine"]["asset_id"]: r["machine"] for r in results}
    refs = {r["machine"]["asset_id"]: {"audio": r["reference_wav"], "thermal": r["reference_tiff"]} for r in results}
    choice = {"none": [False], "ref": [True], "both": [False, True]}
    modes = [tuple(m for m, on in (("audio", a), ("thermal", t)) if on)
             for t in choice[args.healthy_thermal] for a in choice[args.healthy_audio]]
    if args.thermal_twins:
        modes.append(("twin",))
    runs: dict[str, Any] = {}
    rows_by_run: dict[str, list[dict[str, Any]]] = {}
    for with_refs in modes:
        label = RUN_LABELS[with_refs]
        t1 = time.time()
        by_file, logs = score(samples, refs, assets, with_refs, args.workers, label, code, args.registry,
                              args.speed_given)
        rows = attach(samples, by_file)
        vis = {m: visible_classes(rows, m) for m in ("audio", "thermal")}
        vis["fused"] = [c for c in CLASSES if c in vis["audio"] or c in vis["thermal"]]
        runs[label] = {"seconds": round(time.time() - t1, 1), "calls": logs,
                       "metrics": {m: metrics(rows, m, vis[m]) for m in ("audio", "thermal", "fused")},
                       "breakdowns": breakdowns(rows, samples, machines)}
        rows_by_run[label] = rows
    report = {
        "command": " ".join([".venv/bin/python", "bench/bench_foreign_fleet.py", *sys.argv[1:]]),
        "seed": args.seed, "code": code_info, "host": platform.node(), "cpus": os.cpu_count(),
        "generation_s": round(t_gen, 1), "total_s": None,
        "counts": {"machines": len(machines), "samples": len(samples), "files": 2 * len(samples),
                   "per_class": dict(Counter(s["cls"] for s in samples)),
                   "kinds": dict(Counter(m["kind"] for m in machines.values()))},
        "signal_to_noise": {"bearing_band_snr_db": BEARING_SNR_DB, "imbalance_1x_gain_db": IMBALANCE_GAIN_DB,
                            "cavitation_band_snr_db": CAVITATION_SNR_DB, "lug_rise_k": LUG_RISE_K,
                            "cooling_extra_of_body_rise": COOLING_EXTRA, "bearing_housing_k": BEARING_HOUSING_K,
                            "severity_range": [SEVERITY_LO, SEVERITY_HI]},
        "expert": expert_metrics(samples), "assets_json": json.loads(assets.read_text()),
        "machines": machines, "runs": runs, "class_order": list(CLASSES),
        "records": merge_records(samples, rows_by_run),
    }
    report["total_s"] = round(time.time() - t0, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(_compact(report), separators=(",", ":"), default=_json_default))
    plot(report, args.out.with_suffix(".png"))
    print(summary(report))
    print(f"generation {t_gen:.0f} s, total {report['total_s']:.0f} s; report {args.out}")
    if args.data is None:
        shutil.rmtree(data)


#: A run's name in the report by the commissioning files it gives inspect.
RUN_LABELS = {(): "single_recording", ("audio",): "with_healthy_audio", ("thermal",): "with_healthy_frame",
              ("audio", "thermal"): "with_healthy_audio_and_frame", ("twin",): "with_healthy_frame_at_its_load"}
#: The suffix of a run's per-file and fused verdicts in a report's ``records``.
RUN_SUFFIXES = {"single_recording": "", "with_healthy_audio": "@ref", "with_healthy_frame": "@frame",
                "with_healthy_audio_and_frame": "@ref+frame", "with_healthy_frame_at_its_load": "@twin"}


def _generate(args: argparse.Namespace, data: Path) -> list[dict[str, Any]]:
    from tqdm import tqdm

    jobs = [(i, args.seed, args.per_class, args.healthy, str(data)) for i in range(args.machines)]
    with ProcessPoolExecutor(args.workers) as pool:
        return list(tqdm(pool.map(generate_machine, jobs), total=len(jobs), desc="generate", unit="machine"))


def _compact(o: Any) -> Any:
    """Floats to 4 significant digits, temp paths to file names (the report is committed)."""
    if isinstance(o, float):
        return float(f"{o:.4g}") if math.isfinite(o) else None
    if isinstance(o, dict):
        return {k: (Path(v).name if k in ("wav", "tiff", "reference_wav", "reference_tiff", "twin_tiff") and isinstance(v, str) else _compact(v))
                for k, v in o.items()}
    if isinstance(o, list | tuple):
        return [_compact(v) for v in o]
    if isinstance(o, np.generic):
        return _compact(o.item())
    return o


def _json_default(o: Any) -> Any:
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, tuple):
        return list(o)
    raise TypeError(type(o))


if __name__ == "__main__":
    main()
