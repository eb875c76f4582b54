#!/usr/bin/env python3
"""Blind fleet benchmark: a machine-fleet sensor generator written without seeing linewatch's own
generators, and a scorer that runs the shipped models on it through ``linewatch inspect``.

Written blind
-------------
The author read only ``README.md``, the section "### `assets.json` for your own machines" of
``docs/simulator.md``, the section "## `linewatch inspect`" of ``docs/models.md`` and the output of
``linewatch inspect --help``. No simulator, pipeline, model, test, bench or script code, no other
docs and no git history were read. Signal models come from textbook machinery physics; the fault
levels were set from physics and checked against the expert reference below, never against what
linewatch predicts.

Fleet (``--machines``, default 30; ``--seed``, default 1)
--------------------------------------------------------
Twelve kinds, dealt round-robin in a seeded order: end-suction pump, multistage (boiler feed /
booster) pump on a drive, vertical in-line chilled-water pump (stands upright: fan on top), liquid
ring vacuum pump, direct-driven process/ID fan on a drive (gas 30-140 C), belt-driven AHU fan
(fan wheel at 0.55-0.85 x motor speed; its imbalance is on the fan shaft), oil-injected screw
compressor (load/unload or VSD), two-cylinder piston air compressor (belt to the crank at
0.45-0.6 x, 4-7.5 mm/s healthy: ISO 10816-6), agitator gear motor, belt conveyor drive (constant
torque, drive 30-100 %), liquid-cooled machine-tool motor spindle (2-pole, drive to 400 Hz, 7008/
7010 angular-contact bearings) and outdoor cooling-tower fan (right-angle gearbox, sky and sun in
view). Each machine is an induction motor: 2/4/6/8 poles, 50 or 60 Hz (400/460 V), rated slip
1.2-4 %, magnetising current 25-50 % of rated, some on variable-speed drives (PWM carrier 2-16 kHz
or random PWM), with catalogue DE/NDE bearings (62xx/63xx/NU214/70xx; BPFO/BPFI/BSF/FTF from
geometry), 3 structural modes (0.9-9 kHz, zeta 0.015-0.05).

Per machine: 12 healthy samples (load, ambient 0-40 C, drive speed and process temperature drawn
per sample), one healthy commissioning sample (rated load, ~20 C; the expert's and
``--with-healthy``'s reference) and, for each fault class the machine can have, three faulty
samples with severity drawn in (0.1, 0.45), (0.5, 0.75), (0.75, 1.0). A sample is one WAV, one
thermal TIFF and one PLC export of the same machine state.

Signal models and fault levels
------------------------------
Audio (per machine microphone: 8/11.025/16/22.05/44.1/48 kHz, PCM16/PCM24/float32, 15 % stereo,
1-10 s, distance 0.2-3 m, high-pass 20-80 Hz, 30 % cheap mics rolling off at 7-11 kHz, gain fixed
per machine so that its commissioning clip sits at -42..-12 dBFS RMS, 5 % at -8 dBFS):
machine broadband (pink, structural modes 10-20 dB over the floor), cooling-fan noise and blade
pass, 2x line hum, rotor slot harmonics, shaft 1x/2x/3x (1x level -26 dB re broadband at 1 mm/s
and 25 Hz, +20 log10 v, +20 log10 f), driven-machine tones (vane pass, blade pass, lobe pass, gear
mesh with 1x sidebands, piston valve knocks), drive carrier with +-2 f and +-4 f sidebands; room
noise 22..-2 dB under the machine (1/distance), a neighbouring machine for 15 %, transients
(clank, air leak hiss, reversing beeper) in 25 % of clips whatever the label.
- bearing_wear: impacts at BPFO (60 %), BPFI (25 %, load-zone modulated at 1x) or 2xBSF (15 %,
  cage-modulated), 1 % spacing jitter (slip), each ringing the machine's modes; impact peak =
  10^((-6 + 32 s)/20) x the machine's own RMS in its main mode's band (s = severity); s > 0.6
  adds (s - 0.6) x 8 dB of 2-8 kHz roughness. 75 % on the DE bearing.
- imbalance: a 1x vector of 8 s mm/s RMS (at rated speed, x speed^2) added at +-90 deg to the
  residual 1x (the fan shaft's 1x for the belt-driven fan).
- cavitation (pumps): Poisson bubble-collapse bursts (rate 300-3000/s, modulated by vane pass and
  a 1-5 Hz flow fluctuation), above 1 kHz, RMS in 2-8 kHz = -10 + 26 s dB re the machine's own.
- cooling_failure: three variants: fins clogged (inaudible), cowl inlet blocked (fan tone
  +3 s dB), fan broken (fan noise -12 s dB, 1x +0.3 s mm/s).
- electrical_overheating (loose terminal lug): not audible.
Thermal (per machine camera: 80x60 .. 640x512, NETD 0.03-0.06 K, column pattern noise, 1/4 power
vignetting, Gaussian optics blur, band-radiance T^4 model with true emissivities (paint 0.9-0.95,
bare housings 0.3-0.6, stainless casings 0.25-0.4), reflected ambient, the camera's emissivity
setting 0.9-1.0; exported as uint16 centikelvin, uint16 decikelvin, FLIR TLinear 0.04 K counts,
uint16 0.1 C counts offset -100 C, float32 C, float32 K or float32 F; TIFF raw/LZW/Deflate/
PackBits; 35 % hand-held route surveys with +-6 % position and +-8 % scale per visit, 15 % fixed
cameras moved since the regions were drawn): side view of fan cowl, NDE bearing hub, finned body
(fan end cooler than the drive end by 10-25 % of the body rise, grazing-angle emissivity drop),
terminal box, DE bearing hub, coupling guard, driven machine, base; background wall/floor, 25 %
a hot pipe, sky for the outdoor fan, sun load. Motor: winding rise at rated current 45-100 K,
body 35-50 % of it, scaling as 0.25 + 0.75 (I/I_rated)^2, x 1/(0.35 + 0.65 n^0.8) for
self-cooled motors on drives; current = I_r sqrt(m^2 + (1 - m^2) T^2).
- electrical_overheating: a hot spot on the terminal box, s x 30-55 K over the box, winding +12 s K,
  current +4 s %.
- cooling_failure: body and winding rise x (1 + 0.7 s) (fins clogged, gradient kept),
  x (1 + 0.9 s) with the fan-end gradient x (1 - s) (cowl blocked), x (1 + 1.0 s) with gradient
  x (1 - 1.3 s) (fan broken: the fan end ends up warmer); spindle coolant loss: housing rise
  x (1 + 3 s), winding x (1 + 0.8 s).
- bearing_wear: the faulty bearing's housing +22 s^1.5 K. imbalance, cavitation: not visible.
PLC (per machine: one of 9 export dialects: wide ISO CSV; European ';' + decimal comma + Zeit;
German tag names; US MM/DD/YYYY AM/PM with F, psi, in/s (some in/s peak); long timestamp/tag/value/
unit; AVEVA-style delta (deadband) DateTime/TagName/Value/Quality; Ignition-style epoch-ms tag
paths; tab-separated with Hz, K and kPa; JSON lines. Period 0.1-2 s, 60-120 s windows, a tag set
that varies: speed, current, winding, DE bearing, vibration, pressure, run state, flow, power,
suction, setpoints, counters): vibration velocity RMS healthy per ISO 10816-3 (0.6-2.8 mm/s, the
tower fan to 3.5, piston compressors 4-7.5) x n^1.2;
- imbalance: as audio (1x vector); bearing_wear: +1.5 s^2 mm/s, bearing RTD +22 s^1.5 K (x 0.2
  for an NDE fault); cavitation: pressure -25 s %, its fluctuation 1 % -> (1 + 7 s) %, current
  -6 s %, vibration +1.2 s mm/s, flow -20 s %; cooling/electrical: winding as above.

Expert reference
----------------
A detector that knows each machine's truth (shaft speed, bearing geometry, main mode, region masks,
encodings, ambient, the commissioning sample, the PLC tags in the file): audio envelope spectrum
in the main mode's band at BPFO/BPFI/2BSF (first two harmonics, SNR >= 10 dB over the median),
1x rise over commissioning corrected by speed^2 (>= 6 dB), 2-8 kHz rise over commissioning
(>= 4 dB, pumps) for cavitation; thermal terminal-box hot spot (max - median >= 6 K), body rise
vs expected from commissioning scaled with current (>= 1.25 x), bearing housing excess (>= 4 K);
PLC vibration ratio (>= 1.5 x speed-corrected), pressure (<= 0.9 x or fluctuation >= 3 x),
winding residual (>= 8 K and >= 1.2 x) and bearing RTD residual (>= 4 K). Fused: the modality
verdict with the largest score over its threshold.

Scoring
-------
``linewatch inspect --json --assets fleet/assets.json FILES`` with one sample per machine per
call (all three files of a sample in one call, so the tool fuses them; ~27 calls of 90 files).
Reported per modality (audio, thermal, plc) and fused: recall per class over faults with severity
>= 0.5, detection rate (any fault named) over those, healthy false-positive rate (top class not
``normal``), the confusion matrix over all samples; the same per machine kind; errors (rejected
files, crashes); warnings counted by text (numbers and names masked); withheld classes; audio
speed read within 2 % of the truth. ``--with-healthy`` also scores every sample with the machine's
commissioning files as ``--healthy-audio/--healthy-thermal/--healthy-plc``.

With ``--with-healthy`` the commissioning files are first checked: one that the tool refuses as a
reference (it stops the whole call with exit 2) is left out for its machine and listed under
``healthy_excluded`` with the tool's message.

Changes made while writing it (all before any linewatch result was seen): the cavitation level
was raised from -14 + 28 s to -10 + 26 s dB (the expert missed developed cavitation at the old
level), a constant 1x tone on the spindle was removed (a bug: it hid the imbalance 1x), and the
expert's thresholds were set on its own healthy false alarms. Nothing in the generator was
changed after linewatch's results were seen; only reporting code (error and warning grouping,
the healthy-reference check, the commit stamp).

Command
-------
    .venv/bin/python bench/bench_blind_fleet.py --machines 30 --seed 1 --fleet /tmp/blind/fleet1 \
        --out bench/results/blind_fleet.json
    .venv/bin/python bench/bench_blind_fleet.py --fleet /tmp/blind/fleet1 --skip-generate --with-healthy \
        --out bench/results/blind_fleet_with_healthy.json

Results and what they showed: docs/models.md, "A fleet written blind".

About 4.5 min on 2 cores (generation 80-110 s, 27 inspect calls of 4-8 s); ``--with-healthy``
(add ``--skip-generate`` to reuse the fleet) about 10.5 min. ``--print-report FILE`` reprints
the tables of a saved report. The report records the repository commit it scored.
``--records FILE`` also writes what ``inspect`` returned for every sample (per modality and fused:
class, probabilities, withheld classes, extrapolation flag) beside its truth, one JSON line each, for
study offline (replaying the fusion, say) without scoring the fleet again.
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import json
import math
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf
import tifffile
from scipy import ndimage, signal

CLASSES: tuple[str, ...] = (
    "normal",
    "bearing_wear",
    "imbalance",
    "cavitation",
    "electrical_overheating",
    "cooling_failure",
)
FAULTS: tuple[str, ...] = CLASSES[1:]
MODALITIES: tuple[str, ...] = ("audio", "thermal", "plc", "fused")
MODERATE = 0.5
SEVERITY_BINS: tuple[tuple[float, float], ...] = ((0.1, 0.45), (0.5, 0.75), (0.75, 1.0))
HEALTHY_PER_MACHINE = 12
REPO = Path(__file__).resolve().parents[1]
LINEWATCH = REPO / ".venv" / "bin" / "linewatch"

# --------------------------------------------------------------------------------------------
# Bearings: designation -> (rolling elements, element diameter mm, pitch diameter mm, contact deg)
# --------------------------------------------------------------------------------------------
BEARINGS: dict[str, tuple[int, float, float, float]] = {
    "6203": (8, 6.747, 28.5, 0.0),
    "6204": (8, 7.938, 33.5, 0.0),
    "6205": (9, 7.938, 39.0, 0.0),
    "6206": (9, 9.525, 46.0, 0.0),
    "6207": (9, 11.112, 53.5, 0.0),
    "6208": (9, 11.906, 60.0, 0.0),
    "6209": (10, 11.906, 65.0, 0.0),
    "6210": (10, 12.700, 70.0, 0.0),
    "6305": (7, 11.500, 44.5, 0.0),
    "6306": (8, 12.303, 51.0, 0.0),
    "6307": (8, 13.494, 58.5, 0.0),
    "6308": (8, 15.081, 65.0, 0.0),
    "6309": (8, 17.462, 72.5, 0.0),
    "6310": (8, 19.050, 80.0, 0.0),
    "6312": (8, 22.225, 95.0, 0.0),
    "6314": (8, 25.400, 110.0, 0.0),
    "NU214": (16, 16.000, 97.5, 0.0),
    "7008CD": (18, 7.144, 54.0, 15.0),
    "7010CD": (20, 7.938, 65.0, 15.0),
}


def bearing_orders(designation: str) -> dict[str, float]:
    """Defect frequencies as multiples of shaft speed (inner ring rotating, outer fixed)."""
    n, d, pd, alpha = BEARINGS[designation]
    r = d / pd * math.cos(math.radians(alpha))
    return {
        "ftf": 0.5 * (1 - r),
        "bpfo": n / 2 * (1 - r),
        "bpfi": n / 2 * (1 + r),
        "bsf": pd / (2 * d) * (1 - r * r),
    }


# --------------------------------------------------------------------------------------------
# Machine kinds
# --------------------------------------------------------------------------------------------
KINDS: dict[str, dict[str, Any]] = {
    "end_suction_pump": dict(
        prefix="P", types=["Centrifugal pump", "End-suction pump", "CW transfer pump", "pump, centrifugal"],
        pump=True, power=(4, 55), poles=[2, 4], vfd=0.2, vrange=(0.6, 1.0), ratio=(1.0, 1.0),
        driven="volute", tone="vane", vib=(0.7, 2.6), pressure=("discharge", 3.0, 10.0),
        process=("fluid", 8.0, 85.0), orient="h", law="quadratic", de=["6306", "6308", "6309", "6310"],
        nde=["6206", "6208", "6209"],
    ),
    "multistage_pump": dict(
        prefix="BFP", types=["Boiler feed pump", "Multistage booster pump", "Multi-stage pump (BFW)"],
        pump=True, power=(15, 160), poles=[2], vfd=0.8, vrange=(0.55, 1.0), ratio=(1.0, 1.0),
        driven="barrel", tone="vane", vib=(0.9, 2.6), pressure=("discharge", 10.0, 40.0),
        process=("fluid", 40.0, 110.0), orient="h", law="quadratic", de=["6312", "6314", "NU214"],
        nde=["6310", "6312"],
    ),
    "inline_pump": dict(
        prefix="CHP", types=["Inline circulator pump", "Vertical in-line pump (CHW)", "In-line pump"],
        pump=True, power=(2.2, 30), poles=[2, 4], vfd=0.3, vrange=(0.6, 1.0), ratio=(1.0, 1.0),
        driven="inline", tone="vane", vib=(0.8, 2.8), pressure=("discharge", 2.0, 6.0),
        process=("fluid", 5.0, 14.0), orient="v", law="quadratic", de=["6205", "6206", "6306", "6308"],
        nde=["6205", "6206"],
    ),
    "vacuum_pump": dict(
        prefix="VP", types=["Liquid ring vacuum pump", "LRVP vacuum pump"],
        pump=True, power=(5.5, 45), poles=[4, 6], vfd=0.1, vrange=(0.7, 1.0), ratio=(1.0, 1.0),
        driven="block", tone="vane_many", vib=(1.0, 2.8), pressure=("vacuum", 0.08, 0.3),
        process=("fluid", 15.0, 35.0), orient="h", law="constant", de=["6308", "6309", "6310"],
        nde=["6208", "6209"],
    ),
    "process_fan": dict(
        prefix="FAN", types=["ID fan", "Process exhaust fan", "Kiln ID fan", "Dust collector fan"],
        pump=False, power=(11, 132), poles=[4, 6], vfd=0.7, vrange=(0.4, 1.0), ratio=(1.0, 1.0),
        driven="fan_housing", tone="blade", vib=(1.0, 2.8), pressure=("static", 0.015, 0.06),
        process=("gas", 30.0, 140.0), orient="h", law="quadratic", de=["6310", "6312", "6314", "NU214"],
        nde=["6210", "6310"],
    ),
    "belt_fan": dict(
        prefix="AHU", types=["AHU supply fan", "Air handling unit fan (belt drive)", "Supply air fan, belt driven"],
        pump=False, power=(3, 30), poles=[4], vfd=0.5, vrange=(0.5, 1.0), ratio=(0.55, 0.85),
        driven="fan_housing", tone="blade_fc", vib=(0.7, 2.2), pressure=("static", 0.004, 0.015),
        process=("air", 14.0, 28.0), orient="h", law="quadratic", de=["6205", "6206", "6207", "6306"],
        nde=["6205", "6206"], driven_imbalance=True,
    ),
    "screw_compressor": dict(
        prefix="K", types=["Rotary screw compressor", "Screw air compressor", "Oil-injected screw compressor"],
        pump=False, power=(15, 110), poles=[2], vfd=0.4, vrange=(0.5, 1.0), ratio=(1.0, 1.6),
        driven="block", tone="lobe", vib=(1.1, 2.8), pressure=("discharge", 6.5, 10.0),
        process=("casing", 35.0, 55.0), orient="h", law="constant", de=["6310", "6312", "NU214"],
        nde=["6210", "6310"],
    ),
    "piston_compressor": dict(
        prefix="KP", types=["Piston air compressor", "Reciprocating compressor", "2-stage piston compressor"],
        pump=False, power=(5.5, 37), poles=[4], vfd=0.0, vrange=(1.0, 1.0), ratio=(0.45, 0.6),
        driven="piston", tone="knock", vib=(4.0, 7.5), pressure=("discharge", 7.0, 12.0),
        process=("casing", 20.0, 35.0), orient="h", law="constant", de=["6306", "6308", "6309"],
        nde=["6206", "6208"], reciprocating=True,
    ),
    "agitator": dict(
        prefix="AG", types=["Agitator drive (helical gearbox)", "Mixer gear motor", "Reactor agitator"],
        pump=False, power=(2.2, 30), poles=[4, 6], vfd=0.3, vrange=(0.5, 1.0), ratio=(1 / 40, 1 / 15),
        driven="gearbox", tone="mesh", vib=(0.7, 2.4), pressure=("none", 0.0, 0.0),
        process=("oil", 20.0, 45.0), orient="h", law="quadratic", de=["6205", "6206", "6306", "6308"],
        nde=["6204", "6205", "6206"],
    ),
    "conveyor": dict(
        prefix="CV", types=["Belt conveyor drive", "Conveyor head pulley drive", "Incline conveyor drive"],
        pump=False, power=(5.5, 75), poles=[4, 6], vfd=0.6, vrange=(0.3, 1.0), ratio=(1 / 30, 1 / 20),
        driven="conveyor", tone="mesh", vib=(0.9, 2.8), pressure=("none", 0.0, 0.0),
        process=("oil", 20.0, 45.0), orient="h", law="constant", de=["6308", "6309", "6310", "6312"],
        nde=["6208", "6209", "6210"],
    ),
    "spindle": dict(
        prefix="SP", types=["CNC spindle", "Machining centre motor spindle", "Motor spindle (HSK-A63)"],
        pump=False, power=(7.5, 30), poles=[2], vfd=1.0, vrange=(0.2, 1.0), ratio=(1.0, 1.0),
        driven="none", tone="none", vib=(0.3, 1.2), pressure=("none", 0.0, 0.0),
        process=("coolant", 2.0, 6.0), orient="h", law="spindle", de=["7008CD", "7010CD"],
        nde=["6206", "7008CD"], liquid=True,
    ),
    "cooling_tower_fan": dict(
        prefix="CT", types=["Cooling tower fan", "CT cell fan (gear drive)"],
        pump=False, power=(15, 90), poles=[6, 8], vfd=0.7, vrange=(0.3, 1.0), ratio=(1 / 14, 1 / 8),
        driven="gearbox", tone="mesh", vib=(1.0, 3.5), pressure=("none", 0.0, 0.0),
        process=("oil", 20.0, 40.0), orient="h", law="quadratic", de=["6310", "6312", "6314"],
        nde=["6210", "6310"], outdoor=True,
    ),
}

PLC_DIALECTS: list[tuple[str, float]] = [
    ("wide_iso", 0.2), ("wide_eu", 0.14), ("wide_de", 0.06), ("wide_us", 0.14), ("long_pi", 0.12),
    ("long_aveva", 0.1), ("wide_ignition", 0.1), ("wide_tab", 0.08), ("jsonl", 0.06),
]
ENCODINGS: list[tuple[str, float]] = [
    ("centikelvin", 0.25), ("decikelvin", 0.12), ("tlinear004", 0.15), ("counts_c01", 0.12),
    ("float_c", 0.18), ("float_k", 0.08), ("float_f", 0.10),
]
RESOLUTIONS: list[tuple[int, int, float]] = [
    (80, 60, 0.06), (160, 120, 0.05), (320, 240, 0.05), (382, 288, 0.04), (464, 348, 0.03),
    (640, 480, 0.03), (640, 512, 0.03),
]


def pick(rng: np.random.Generator, items: list[Any]) -> Any:
    return items[int(rng.integers(len(items)))]


def pick_w(rng: np.random.Generator, pairs: list[tuple[Any, float]]) -> Any:
    w = np.array([p[1] for p in pairs], float)
    return pairs[int(rng.choice(len(pairs), p=w / w.sum()))][0]


def logu(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


# --------------------------------------------------------------------------------------------
# Data classes
# --------------------------------------------------------------------------------------------
@dataclass
class Machine:
    index: int
    asset_id: str
    kind: str
    asset_type: str
    is_pump: bool
    reciprocating: bool
    orientation: str
    fan_side: str
    liquid_cooled: bool
    outdoor: bool
    power_kw: float
    poles: int
    line_hz: float
    voltage_v: float
    rated_slip: float
    rated_current_a: float
    mag_frac: float
    vfd: bool
    speed_range: tuple[float, float]
    ratio: float
    driven_imbalance: bool
    de_bearing: str
    nde_bearing: str
    modes: list[tuple[float, float, float]]
    main_mode: float
    tones: dict[str, float]
    vib_normal: float
    v1x_frac: float
    pressure_kind: str
    p_nom: float
    process_kind: str
    process_level: float
    insulated: bool
    stainless: bool
    bare_housings: bool
    wind_rise_rated: float
    body_ratio: float
    grad: float
    brg_friction: float
    law: str
    load_range: tuple[float, float]
    geom: dict[str, Any]
    mic: dict[str, Any] = field(default_factory=dict)
    camera: dict[str, Any] = field(default_factory=dict)
    plc: dict[str, Any] = field(default_factory=dict)
    naming: str = "landing"
    style: str = "full"

    @property
    def sync_rpm(self) -> float:
        return 120.0 * self.line_hz / self.poles

    @property
    def rated_rpm(self) -> float:
        return self.sync_rpm * (1 - self.rated_slip)


@dataclass
class Sample:
    machine: int
    index: int
    sample_id: str
    label: str
    severity: float
    variant: str
    load: float
    ambient: float
    speed_pu: float
    process: float
    stamp: str
    seed: int
    commissioning: bool = False
    state: dict[str, Any] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    truth: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------------------------
# Fleet
# --------------------------------------------------------------------------------------------
def make_machine(i: int, kind: str, rng: np.random.Generator, used_ids: set[str]) -> Machine:
    k = KINDS[kind]
    num = 100 * (1 + i % 7) + int(rng.integers(1, 40))
    asset_id = f"{k['prefix']}-{num}"
    while asset_id in used_ids:
        num += 1
        asset_id = f"{k['prefix']}-{num}"
    used_ids.add(asset_id)
    poles = int(pick(rng, k["poles"]))
    line_hz = 50.0 if rng.random() < 0.6 else 60.0
    power = round(logu(rng, *k["power"]), 1)
    if kind == "spindle":
        line_hz = float(pick(rng, [200.0, 300.0, 400.0]))
    voltage = (400.0 if line_hz == 50 else 460.0) if kind != "spindle" else 380.0
    if rng.random() < 0.1 and power > 60:
        voltage = 690.0 if line_hz == 50 else 575.0
    slip = (0.035 if power < 5 else 0.025 if power < 30 else 0.015) * rng.uniform(0.8, 1.2)
    if kind == "spindle":
        slip = rng.uniform(0.01, 0.02)
    eff = 0.85 + 0.04 * math.log10(power + 1)
    pf = rng.uniform(0.8, 0.88)
    i_rated = power * 1000 / (math.sqrt(3) * voltage * eff * pf)
    mag = rng.uniform(0.25, 0.35) if poles == 2 else rng.uniform(0.32, 0.5)
    vfd = bool(rng.random() < k["vfd"])
    vr = tuple(k["vrange"]) if vfd else (1.0, 1.0)
    ratio = float(rng.uniform(*k["ratio"])) if k["ratio"][0] != k["ratio"][1] else float(k["ratio"][0])
    orient = k["orient"]
    fan_side = ("top" if rng.random() < 0.85 else "bottom") if orient == "v" else pick(rng, ["left", "right"])
    modes = sorted(
        [
            (logu(rng, 900, 2500), rng.uniform(0.02, 0.05), rng.uniform(0.3, 0.6)),
            (logu(rng, 2500, 5000), rng.uniform(0.015, 0.04), 1.0),
            (logu(rng, 5000, 9000), rng.uniform(0.015, 0.04), rng.uniform(0.3, 0.7)),
        ]
    )
    main = modes[1][0] if rng.random() < 0.75 else modes[2][0]
    tones = {
        "fan_blades": float(pick(rng, [7, 8, 9, 10, 11, 12])),
        "rotor_bars": float(pick(rng, [28, 32, 40, 44, 46])),
        "vane": float(pick(rng, [5, 6, 7])),
        "vane_many": float(pick(rng, [12, 14, 16])),
        "blade": float(pick(rng, [8, 9, 10, 12])),
        "blade_fc": float(pick(rng, [24, 32, 40])),
        "lobe": float(pick(rng, [4, 5])),
        "teeth": float(pick(rng, [17, 19, 23, 27, 31])),
        "cylinders": 2.0,
        "carrier": float(pick(rng, [2000, 2500, 4000, 4000, 5000, 8000, 8000, 12000, 16000])),
        "random_pwm": float(rng.random() < 0.25),
    }
    pk, plo, phi = k["pressure"]
    p_nom = round(float(rng.uniform(plo, phi)), 3) if pk != "none" else 0.0
    proc_kind, lo, hi = k["process"]
    lm = 0.30 + 0.16 * power ** 0.33
    geom = {"lm": lm, "dm": 0.55 * lm, "lc": 0.22 * lm, "ld": {
        "volute": 0.9, "barrel": 1.6, "inline": 0.8, "block": 0.9, "fan_housing": 1.3, "piston": 1.2,
        "gearbox": 0.7, "conveyor": 1.1, "none": 0.0}[k["driven"]] * lm, "driven": k["driven"]}
    wind = float(rng.uniform(45, 100))
    m = Machine(
        index=i, asset_id=asset_id, kind=kind, asset_type=pick(rng, k["types"]), is_pump=k["pump"],
        reciprocating=bool(k.get("reciprocating", False)), orientation=orient, fan_side=fan_side,
        liquid_cooled=bool(k.get("liquid", False)), outdoor=bool(k.get("outdoor", False)),
        power_kw=power, poles=poles, line_hz=line_hz, voltage_v=voltage, rated_slip=float(slip),
        rated_current_a=round(i_rated, 1), mag_frac=float(mag), vfd=vfd, speed_range=(float(vr[0]), float(vr[1])),
        ratio=ratio, driven_imbalance=bool(k.get("driven_imbalance", False)),
        de_bearing=pick(rng, k["de"]), nde_bearing=pick(rng, k["nde"]),
        modes=[(float(a), float(b), float(c)) for a, b, c in modes], main_mode=float(main), tones=tones,
        vib_normal=float(rng.uniform(*k["vib"])), v1x_frac=float(rng.uniform(0.45, 0.75)),
        pressure_kind=pk, p_nom=p_nom, process_kind=proc_kind, process_level=float(rng.uniform(lo, hi)),
        insulated=bool(rng.random() < (0.5 if proc_kind in ("gas",) else 0.2 if proc_kind == "fluid" else 0.0)),
        stainless=bool(k["pump"] and rng.random() < 0.3), bare_housings=bool(rng.random() < 0.3),
        wind_rise_rated=wind, body_ratio=float(rng.uniform(0.35, 0.5)) if not k.get("liquid") else 0.08,
        grad=float(rng.uniform(0.10, 0.25)) if not k.get("liquid") else 0.0,
        brg_friction=float(rng.uniform(5, 14)), law=k["law"],
        load_range=(0.55, 1.0) if k["law"] != "constant" else (0.3, 1.0), geom=geom,
    )
    if kind == "spindle":
        m.load_range = (0.1, 0.8)
    # microphone
    fs = int(pick_w(rng, [(8000, 0.06), (11025, 0.06), (16000, 0.3), (22050, 0.1), (44100, 0.24), (48000, 0.24)]))
    m.mic = {
        "fs": fs,
        "subtype": pick_w(rng, [("PCM_16", 0.6), ("PCM_24", 0.2), ("FLOAT", 0.2)]),
        "channels": 2 if rng.random() < 0.15 else 1,
        "duration": float(pick_w(rng, [(1.0, 0.1), (2.0, 0.2), (3.0, 0.2), (5.0, 0.25), (8.0, 0.15), (10.0, 0.1)])),
        "distance_m": logu(rng, 0.2, 3.0),
        "hp_hz": float(rng.uniform(20, 80)),
        "lp_hz": float(rng.uniform(7000, 11000)) if rng.random() < 0.3 else 0.0,
        "target_dbfs": -8.0 if rng.random() < 0.05 else float(rng.uniform(-42, -12)),
        "neighbour": bool(rng.random() < 0.15),
        "gain": None,
    }
    w, h, netd = pick(rng, RESOLUTIONS)
    enc = pick_w(rng, ENCODINGS)
    m.camera = {
        "w": w, "h": h, "netd": netd, "encoding": enc,
        "eps_set": float(pick_w(rng, [(0.95, 0.6), (0.9, 0.15), (1.0, 0.15), (0.98, 0.1)])),
        "compression": pick_w(rng, [(None, 0.55), ("lzw", 0.15), ("zlib", 0.15), ("packbits", 0.15)]),
        "handheld": bool(rng.random() < 0.35),
        "moved": bool(rng.random() < 0.15),
        "span": float(rng.uniform(0.5, 0.8)),
        "blur": float(rng.uniform(0.5, 1.1)),
        "dead_px": int(rng.integers(5, 30)) if rng.random() < 0.15 else 0,
        "hot_pipe": bool(rng.random() < 0.25),
        "declare_unit": bool(rng.random() < 0.5),
        "region_scale": float(pick_w(rng, [(1.0, 0.8), (2.0, 0.1), (0.5, 0.1)])),
    }
    if m.camera["moved"]:
        m.camera["moved_px"] = (float(rng.uniform(-0.08, 0.08)), float(rng.uniform(-0.06, 0.06)))
    dialect = pick_w(rng, PLC_DIALECTS)
    period = float(pick_w(rng, [(0.1, 0.1), (0.2, 0.1), (0.5, 0.25), (1.0, 0.4), (2.0, 0.15)]))
    tags = ["current"]
    if not m.vfd or rng.random() < 0.75:
        tags.append("speed")
    if power > 30 or rng.random() < 0.55 or kind == "spindle":
        tags.append("winding")
    if kind != "spindle" and rng.random() < 0.6:
        tags.append("bearing")
    if kind != "spindle" and rng.random() < 0.85:
        tags.append("vibration")
    if pk != "none" and rng.random() < 0.85:
        tags.append("pressure")
    if rng.random() < 0.7:
        tags.append("run")
    extras = [t for t in ("flow", "power", "suction", "ambient", "setpoint", "run_hours", "alarm") if rng.random() < 0.25]
    if "flow" in extras and not m.is_pump:
        extras.remove("flow")
    if "suction" in extras and not m.is_pump:
        extras.remove("suction")
    if "setpoint" in extras and not m.vfd:
        extras.remove("setpoint")
    m.plc = {
        "dialect": dialect, "period": period, "window_s": 120.0 if period >= 2 else 60.0,
        "tags": tags + extras, "vib_peak": bool(dialect == "wide_us" and rng.random() < 0.35),
    }
    m.naming = pick_w(rng, [("landing", 0.45), ("camera_app", 0.3), ("date_first", 0.25)])
    m.style = pick_w(rng, [("full", 0.35), ("nameplate", 0.3), ("labelling", 0.2), ("minimal", 0.15)])
    return m


def make_fleet(n: int, seed: int) -> list[Machine]:
    rng = np.random.default_rng([seed, 7])
    kinds = list(KINDS)
    order: list[str] = []
    while len(order) < n:
        block = list(kinds)
        rng.shuffle(block)
        order += block
    used: set[str] = set()
    return [make_machine(i, order[i], np.random.default_rng([seed, 11, i]), used) for i in range(n)]


def fault_classes(m: Machine) -> list[str]:
    return [c for c in FAULTS if c != "cavitation" or m.is_pump]


def make_samples(m: Machine, seed: int) -> list[Sample]:
    rng = np.random.default_rng([seed, 13, m.index])
    plan: list[tuple[str, float]] = [("normal", 0.0)] * HEALTHY_PER_MACHINE
    for c in fault_classes(m):
        for lo, hi in SEVERITY_BINS:
            plan.append((c, round(float(rng.uniform(lo, hi)), 3)))
    order = rng.permutation(len(plan))
    start = dt.datetime(2027, 3, 1, tzinfo=dt.timezone.utc) + dt.timedelta(days=int(rng.integers(0, 20)))
    out: list[Sample] = []

    def new(idx: int, label: str, sev: float, commissioning: bool) -> Sample:
        if commissioning:
            load = 0.9 if m.law != "spindle" else 0.5
            amb = float(rng.uniform(17, 23))
            spd = 1.0 if not m.vfd else float(np.clip(0.5 * (m.speed_range[0] + m.speed_range[1]) + 0.15, 0.3, 1.0))
            when = start - dt.timedelta(days=30)
        else:
            load = float(rng.uniform(*m.load_range))
            amb = float(rng.uniform(0, 40))
            spd = 1.0 if not m.vfd else float(rng.uniform(*m.speed_range))
            when = start + dt.timedelta(days=int(idx), hours=float(rng.uniform(6, 20)))
        variant = ""
        if label == "bearing_wear":
            loc = pick_w(rng, [("outer", 0.6), ("inner", 0.25), ("ball", 0.15)])
            variant = f"{loc}:{'de' if rng.random() < 0.75 else 'nde'}"
        elif label == "cooling_failure":
            variant = "coolant" if m.liquid_cooled else pick(rng, ["fins_clogged", "cowl_blocked", "fan_broken"])
        proc = m.process_level + float(rng.normal(0, 2.0))
        sid = "comm" if commissioning else f"s{idx:02d}"
        when = when.replace(microsecond=int(rng.integers(0, 1000)) * 1000)
        return Sample(
            machine=m.index, index=idx, sample_id=sid, label=label, severity=sev, variant=variant, load=load,
            ambient=amb, speed_pu=spd, process=proc, stamp=when.isoformat(), seed=int(rng.integers(2**31)),
            commissioning=commissioning,
        )

    comm = new(-1, "normal", 0.0, True)
    for j, p in enumerate(order):
        label, sev = plan[int(p)]
        out.append(new(j, label, sev, False))
    return [comm] + out


# --------------------------------------------------------------------------------------------
# Physics: one operating state shared by the three modalities
# --------------------------------------------------------------------------------------------
def operating_state(m: Machine, s: Sample) -> dict[str, Any]:
    rng = np.random.default_rng([s.seed, 1])
    lab, sev = s.label, s.severity
    f_el = m.line_hz * s.speed_pu
    if m.law == "quadratic":
        torque = s.load * s.speed_pu ** 2
    elif m.law == "spindle":
        torque = s.load * 0.6
    else:
        torque = s.load
    slip_hz = m.rated_slip * m.line_hz * torque
    shaft_hz = (f_el - slip_hz) / (m.poles / 2)
    duty = 1.0
    if m.kind in ("screw_compressor", "piston_compressor") and not m.vfd:
        duty = float(np.clip(s.load, 0.3, 1.0))  # loaded share of a load/unload cycle
        torque_loaded = 1.0 * rng.uniform(0.85, 1.0)
        i_loaded = m.rated_current_a * math.sqrt(m.mag_frac ** 2 + (1 - m.mag_frac ** 2) * torque_loaded ** 2)
        i_unl = m.rated_current_a * math.sqrt(m.mag_frac ** 2 + (1 - m.mag_frac ** 2) * 0.12 ** 2)
        q = duty * (i_loaded / m.rated_current_a) ** 2 + (1 - duty) * (i_unl / m.rated_current_a) ** 2
        current = duty * i_loaded + (1 - duty) * i_unl
        slip_hz = m.rated_slip * m.line_hz * (duty * torque_loaded)
        shaft_hz = (f_el - slip_hz) / (m.poles / 2)
    else:
        i_loaded = i_unl = 0.0
        current = m.rated_current_a * math.sqrt(m.mag_frac ** 2 + (1 - m.mag_frac ** 2) * torque ** 2)
        q = (current / m.rated_current_a) ** 2
    if lab == "electrical_overheating":
        current *= 1 + 0.04 * sev
    if lab == "cavitation":
        current *= 1 - 0.06 * sev
    heat = 0.25 + 0.75 * q
    cool = 1.0
    if m.vfd and not m.liquid_cooled:
        cool = 1.0 / (0.35 + 0.65 * s.speed_pu ** 0.8)
    rise_w = m.wind_rise_rated * heat * cool
    rise_b = rise_w * m.body_ratio
    grad = m.grad
    fan_db = 0.0
    extra_1x = 0.0
    if lab == "cooling_failure":
        if s.variant == "fins_clogged":
            f = 1 + 0.7 * sev
        elif s.variant == "cowl_blocked":
            f, grad, fan_db = 1 + 0.9 * sev, m.grad * (1 - sev), 3.0 * sev
        elif s.variant == "fan_broken":
            f, grad, fan_db, extra_1x = 1 + 1.0 * sev, m.grad * (1 - 1.3 * sev), -12.0 * sev, 0.3 * sev
        else:  # spindle coolant loss
            f = 1 + 0.8 * sev
            rise_b *= 1 + 3.0 * sev
        rise_w *= f
        if s.variant != "coolant":
            rise_b *= f
    if lab == "electrical_overheating":
        rise_w += 12.0 * sev
    hot_k = sev * float(rng.uniform(30, 55)) if lab == "electrical_overheating" else 0.0
    n = s.speed_pu
    brg_fault = 22.0 * sev ** 1.5 if lab == "bearing_wear" else 0.0
    on_nde = s.variant.endswith("nde")
    de_rise = 0.45 * rise_b + m.brg_friction * n + (0.0 if on_nde else brg_fault)
    nde_rise = (0.30 if not m.liquid_cooled else 0.6) * rise_b + 0.7 * m.brg_friction * n + (brg_fault if on_nde else 0.0)
    if lab == "cooling_failure" and s.variant in ("cowl_blocked", "fan_broken"):
        nde_rise += 0.15 * rise_b * sev
    # vibration (mm/s RMS)
    v0 = m.vib_normal * n ** 1.2 * (1 + 0.08 * (s.load - 0.7))
    v1 = m.v1x_frac * v0
    v_other = math.sqrt(max(v0 ** 2 - v1 ** 2, 0.0))
    v_imb = 8.0 * sev * n ** 2 if lab == "imbalance" else 0.0
    phase = float(rng.uniform(-math.pi / 2, math.pi / 2))
    if m.driven_imbalance:
        v1_motor = v1 + extra_1x
        v1_driven = abs(0.3 * v1 + v_imb * complex(math.cos(phase), math.sin(phase)))
        v1_driven_healthy = 0.3 * v1
    else:
        v1_motor = abs(v1 + extra_1x + v_imb * complex(math.cos(phase), math.sin(phase)))
        v1_driven = v1_driven_healthy = 0.3 * v1
    v_other2 = v_other ** 2
    if lab == "bearing_wear":
        v_other2 += (1.5 * sev ** 2) ** 2 + 2 * v_other * 1.5 * sev ** 2
    if lab == "cavitation":
        v_other2 += (1.2 * sev) ** 2 + 2 * v_other * 1.2 * sev
    vib = math.sqrt(v1_motor ** 2 + v_other2 + (v1_driven ** 2 - v1_driven_healthy ** 2))
    # pressure (bar g; static bar for fans; bar abs for vacuum)
    pressure = 0.0
    p_std = 0.01
    if m.pressure_kind in ("discharge", "static"):
        pressure = m.p_nom * n ** 2 * (0.96 + 0.06 * s.load) if m.law == "quadratic" else m.p_nom
    elif m.pressure_kind == "vacuum":
        pressure = m.p_nom * (1.1 - 0.2 * s.load)
    if lab == "cavitation":
        pressure *= 1 - 0.25 * sev if m.pressure_kind != "vacuum" else 1 - 0.4 * sev
        p_std = 0.01 + 0.07 * sev
    amb = s.ambient
    proc = s.process
    if m.process_kind in ("casing", "oil"):
        proc_surface = amb + proc * (0.6 + 0.4 * s.load)
    elif m.process_kind == "coolant":
        proc_surface = amb + proc
    elif m.process_kind == "air":
        proc_surface = amb + 0.3 * (proc - amb)
    else:
        proc_surface = proc
    sun = float(rng.uniform(0, 12)) if m.outdoor and rng.random() < 0.5 else 0.0
    return {
        "f_el": f_el, "torque": torque, "shaft_hz": shaft_hz, "driven_hz": shaft_hz * m.ratio,
        "current": current, "duty": duty, "i_loaded": i_loaded, "i_unloaded": i_unl,
        "winding_c": amb + rise_w, "rise_w": rise_w, "rise_b": rise_b, "grad": grad, "de_rise": de_rise,
        "nde_rise": nde_rise, "hot_k": hot_k, "fan_db": fan_db, "vib": vib, "v1_motor": v1_motor,
        "v1_driven": v1_driven, "v0": v0, "pressure": pressure, "p_std": p_std, "ambient": amb,
        "proc_surface": proc_surface, "sun": sun, "bearing_c": amb + de_rise + 3.0 + 0.2 * (brg_fault if on_nde else 0.0),
        "flow_factor": (1 - 0.2 * sev) if lab == "cavitation" else 1.0,
    }


# --------------------------------------------------------------------------------------------
# Audio
# --------------------------------------------------------------------------------------------
def colored_noise(n: int, mag: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    spec = (rng.standard_normal(mag.size) + 1j * rng.standard_normal(mag.size)) * mag
    x = np.fft.irfft(spec, n)
    sd = float(x.std())
    return x / sd if sd > 0 else x


def band_rms(x: np.ndarray, fs: float, lo: float, hi: float) -> float:
    spec = np.fft.rfft(x)
    f = np.fft.rfftfreq(x.size, 1 / fs)
    sel = (f >= lo) & (f < min(hi, fs / 2))
    if not sel.any():
        return 0.0
    return float(np.sqrt(2 * np.sum(np.abs(spec[sel]) ** 2)) / x.size)


def mode_ir(m: Machine, fs: float, rng: np.random.Generator, main_weight: float = 1.0) -> np.ndarray:
    """Impulse response of the machine's structure seen by the microphone (peak 1)."""
    longest = max(1.0 / (z * 2 * math.pi * f) for f, z, _ in m.modes)
    t = np.arange(int(min(6 * longest, 0.05) * fs) + 8) / fs
    ir = np.zeros_like(t)
    for f, z, w in m.modes:
        if f >= 0.48 * fs:
            continue
        ww = main_weight if f == m.main_mode else w * 0.6
        ir += ww * np.exp(-z * 2 * math.pi * f * t) * np.sin(2 * math.pi * f * t + rng.uniform(0, 0.5))
    pk = float(np.abs(ir).max())
    return ir / pk if pk > 0 else ir


def impulse_train(times: np.ndarray, amps: np.ndarray, n: int, fs: float) -> np.ndarray:
    x = np.zeros(n)
    idx = np.round(times * fs).astype(int)
    ok = (idx >= 0) & (idx < n)
    np.add.at(x, idx[ok], amps[ok])
    return x


def periodic_times(rate: float, dur: float, jitter: float, rng: np.random.Generator) -> np.ndarray:
    if rate <= 0:
        return np.zeros(0)
    k = int(dur * rate) + 3
    periods = (1.0 / rate) * (1 + jitter * rng.standard_normal(k))
    return rng.uniform(0, 1 / rate) + np.cumsum(periods) - 1 / rate


def tone(t: np.ndarray, phase: np.ndarray, order: float, level_db: float, rng: np.random.Generator) -> np.ndarray:
    return math.sqrt(2) * 10 ** (level_db / 20) * np.sin(order * phase + rng.uniform(0, 2 * math.pi))


def synth_audio(m: Machine, s: Sample, st: dict[str, Any]) -> tuple[np.ndarray, dict[str, float]]:
    """Returns the microphone signal (channels x samples, before gain) and a few truth numbers."""
    rng = np.random.default_rng([s.seed, 2])
    fs = float(m.mic["fs"])
    n = int(m.mic["duration"] * fs)
    t = np.arange(n) / fs
    f = np.fft.rfftfreq(n, 1 / fs)
    fr, fd, fe = st["shaft_hz"], st["driven_hz"], st["f_el"]
    wob = 1 + 0.002 * np.cumsum(rng.standard_normal(n)) / math.sqrt(n)
    ph_r = 2 * math.pi * np.cumsum(fr * wob) / fs
    ph_d = ph_r * m.ratio
    ph_e = 2 * math.pi * fe * t
    # machine broadband: pink-ish floor + structural modes
    shape = 1 / np.sqrt(1 + f / 150) * (f / (f + 30))
    for fm, z, w in m.modes:
        shape = shape * (1 + (2 + 6 * w) / np.sqrt(1 + ((f - fm) / (3 * z * fm)) ** 2))
    if m.kind in ("end_suction_pump", "multistage_pump", "inline_pump", "process_fan", "belt_fan"):
        shape = shape * (1 + 1.5 / np.sqrt(1 + ((f - 400) / 300) ** 2))
    broadband = colored_noise(n, shape, rng)
    fan = np.zeros(n)
    if not m.liquid_cooled:
        fan_shape = 1 / np.sqrt(1 + ((f - 1200) / 900) ** 2) * (f / (f + 100))
        fan = colored_noise(n, fan_shape, rng) * 10 ** (rng.uniform(-8, -2) / 20)
        fan += tone(t, ph_r, m.tones["fan_blades"], rng.uniform(-20, -10), rng)
        fan *= 10 ** (st["fan_db"] / 20)
    x = broadband + fan
    hum = rng.uniform(-18, -6)
    for k, dl in ((2, 0.0), (4, -8.0), (6, -12.0)):
        if k * fe < 0.45 * fs:
            x += tone(t, ph_e, k, hum + dl, rng)
    slot = m.tones["rotor_bars"] * fr + fe
    if slot < 0.45 * fs:
        x += math.sqrt(2) * 10 ** (rng.uniform(-26, -14) / 20) * np.sin(m.tones["rotor_bars"] * ph_r + ph_e)
    # shaft harmonics (structure-borne, radiated)
    def level_1x(v: float, hz: float) -> float:
        return float(np.clip(-26 + 20 * math.log10(max(v, 1e-3)) + 20 * math.log10(hz / 25), -60, -3))

    l1 = level_1x(st["v1_motor"], fr)
    x += tone(t, ph_r, 1, l1, rng)
    x += tone(t, ph_r, 2, level_1x(m.v1x_frac * st["v0"], fr) - rng.uniform(3, 10), rng)
    x += tone(t, ph_r, 3, level_1x(m.v1x_frac * st["v0"], fr) - rng.uniform(8, 16), rng)
    if m.ratio != 1.0 and m.driven_imbalance:
        x += tone(t, ph_d, 1, level_1x(st["v1_driven"], fd), rng)
    # driven-machine tones
    kind_tone = KINDS[m.kind]["tone"]
    if kind_tone in ("vane", "vane_many", "blade", "blade_fc", "lobe"):
        z = m.tones[kind_tone]
        lv = rng.uniform(-14, -4) if kind_tone != "lobe" else rng.uniform(-6, 0)
        for h, dl in ((1, 0.0), (2, -6.0), (3, -10.0)):
            if h * z * fd < 0.45 * fs:
                x += tone(t, ph_d, h * z, lv + dl, rng)
    elif kind_tone == "mesh":
        z = m.tones["teeth"]
        lv = rng.uniform(-14, -6)
        for h, dl in ((1, 0.0), (2, -6.0)):
            if (h * z + 1) * fr < 0.45 * fs:
                x += tone(t, ph_r, h * z, lv + dl, rng)
                x += tone(t, ph_r, h * z - 1, lv + dl - 10, rng)
                x += tone(t, ph_r, h * z + 1, lv + dl - 10, rng)
    elif kind_tone == "knock":
        # two cylinders, suction and discharge valve events per crank revolution each
        rate = fd * m.tones["cylinders"] * 2
        tk = periodic_times(rate, n / fs, 0.003, rng)
        knocks = signal.fftconvolve(impulse_train(tk, 1 + 0.2 * rng.standard_normal(tk.size), n, fs), mode_ir(m, fs, rng, 0.5))[:n]
        sd = float(knocks.std())
        if sd > 0:
            x += knocks / sd * 10 ** (rng.uniform(-6, 0) / 20)
    if m.kind == "conveyor":
        tk = np.sort(rng.uniform(0, n / fs, int(rng.integers(2, 8) * n / fs)))
        clicks = signal.fftconvolve(impulse_train(tk, rng.uniform(0.3, 1.0, tk.size), n, fs), mode_ir(m, fs, rng, 0.3))[:n]
        x += clicks * 0.3
    # drive carrier
    if m.vfd:
        fc = m.tones["carrier"]
        lc = rng.uniform(-24, -10)
        if m.tones["random_pwm"]:
            if fc < 0.45 * fs:
                hump = 1 / np.sqrt(1 + ((f - fc) / 400) ** 2)
                x += colored_noise(n, hump, rng) * 10 ** ((lc - 4) / 20)
        else:
            for fo, dl in ((0, 0.0), (2, -4.0), (-2, -4.0), (4, -10.0), (-4, -10.0)):
                if fc + fo * fe < 0.45 * fs:
                    x += math.sqrt(2) * 10 ** ((lc + dl) / 20) * np.sin(2 * math.pi * fc * t + fo * ph_e + rng.uniform(0, 6.28))
            if 2 * fc < 0.45 * fs:
                x += math.sqrt(2) * 10 ** ((lc - 8) / 20) * np.sin(2 * math.pi * 2 * fc * t + rng.uniform(0, 6.28))
    truth: dict[str, float] = {"l1_db": l1}
    main = m.main_mode
    b_res = band_rms(x, fs, 0.8 * main, 1.2 * main) if main < 0.45 * fs else band_rms(x, fs, 0.25 * fs, 0.45 * fs)
    b_hf = band_rms(x, fs, 2000, 8000)
    # faults
    if s.label == "bearing_wear":
        loc, side = s.variant.split(":")
        orders = bearing_orders(m.de_bearing if side == "de" else m.nde_bearing)
        rate = {"outer": orders["bpfo"], "inner": orders["bpfi"], "ball": 2 * orders["bsf"]}[loc] * fr
        tk = periodic_times(rate, n / fs, 0.01, rng)
        amp = np.ones(tk.size) * (1 + 0.15 * rng.standard_normal(tk.size))
        if loc == "inner":
            amp *= (0.5 + 0.5 * np.cos(2 * math.pi * fr * tk + rng.uniform(0, 6.28))) ** 1.5 + 0.05
        elif loc == "ball":
            amp *= 0.3 + 0.7 * (0.5 + 0.5 * np.cos(2 * math.pi * orders["ftf"] * fr * tk))
        a = b_res * 10 ** ((-6 + 32 * s.severity) / 20)
        x += a * signal.fftconvolve(impulse_train(tk, amp, n, fs), mode_ir(m, fs, rng))[:n]
        if s.severity > 0.6:
            rough = colored_noise(n, ((f > 2000) & (f < 8000)).astype(float) + 1e-6, rng)
            x += rough * b_hf * math.sqrt(10 ** ((s.severity - 0.6) * 8 / 10) - 1)
        truth["defect_hz"] = rate
    elif s.label == "cavitation":
        lam = logu(rng, 300, 3000)
        mod = (1 + 0.8 * np.cos(m.tones["vane"] * ph_d)) * np.exp(
            0.5 * signal.resample(rng.standard_normal(max(int(n / fs * 8), 8)), n)
        )
        p = np.clip(lam * mod / fs, 0, 1)
        hits = rng.random(n) < p
        bursts = np.zeros(n)
        bursts[hits] = rng.exponential(1.0, int(hits.sum())) * rng.choice([-1, 1], int(hits.sum()))
        hp = signal.butter(4, min(1000 / (fs / 2), 0.9), "highpass", output="sos")
        bursts = signal.sosfilt(hp, bursts)
        bursts += 0.3 * signal.fftconvolve(bursts, mode_ir(m, fs, rng), "full")[:n] * 0.05
        cur = band_rms(bursts, fs, 2000, 8000)
        if cur > 0:
            x += bursts * (b_hf * 10 ** ((-10 + 26 * s.severity) / 20) / cur)
    # room: background, neighbour machine, transients
    machine_rms = float(x.std())
    snr = 14 - 20 * math.log10(m.mic["distance_m"] / 0.5) + rng.uniform(-4, 4)
    room_shape = 1 / np.sqrt(1 + f / 60) * (f / (f + 15))
    room = colored_noise(n, room_shape, rng) * machine_rms * 10 ** (-snr / 20)
    if m.mic["neighbour"]:
        fn = fr * rng.uniform(0.985, 1.015)
        room += machine_rms * 10 ** ((l1 - 12) / 20) * math.sqrt(2) * np.sin(2 * math.pi * fn * t)
        room += machine_rms * 10 ** ((hum - 10) / 20) * math.sqrt(2) * np.sin(2 * math.pi * 2 * m.line_hz * t + 1.0)
    if rng.random() < 0.25:
        ev = pick(rng, ["clank", "hiss", "beeper"])
        t0 = rng.uniform(0, max(n / fs - 0.5, 0.01))
        i0 = int(t0 * fs)
        if ev == "clank":
            ir = np.exp(-np.arange(int(0.2 * fs)) / fs / 0.03) * np.sin(2 * math.pi * rng.uniform(800, 3000) * np.arange(int(0.2 * fs)) / fs)
            seg = ir[: n - i0] * machine_rms * rng.uniform(2, 8)
            x[i0 : i0 + seg.size] += seg
        elif ev == "hiss":
            ln = min(int(rng.uniform(0.3, 1.5) * fs), n - i0)
            hs = colored_noise(n, ((f > 2000) & (f < 10000)).astype(float) + 1e-6, rng)[:ln]
            x[i0 : i0 + ln] += hs * machine_rms * rng.uniform(0.3, 1.0)
        else:
            ln = min(int(0.25 * fs), n - i0)
            x[i0 : i0 + ln] += machine_rms * 0.5 * np.sin(2 * math.pi * 2800 * np.arange(ln) / fs)
    y = x + room
    # microphone response
    spec = np.fft.rfft(y)
    fh = m.mic["hp_hz"]
    hmag = (f / fh) ** 2 / np.sqrt(1 + (f / fh) ** 4)
    if m.mic["lp_hz"]:
        hmag = hmag / np.sqrt(1 + (f / m.mic["lp_hz"]) ** 4)
    y = np.fft.irfft(spec * hmag, n)
    chans = [y]
    if m.mic["channels"] == 2:
        other = np.roll(y, int(0.0004 * fs)) * 0.8 + colored_noise(n, room_shape, rng) * float(y.std()) * 0.1
        chans.append(other)
    return np.stack(chans), truth


def write_audio(path: Path, m: Machine, data: np.ndarray) -> None:
    if m.mic["gain"] is None:
        m.mic["gain"] = 10 ** (m.mic["target_dbfs"] / 20) / float(np.sqrt(np.mean(data[0] ** 2)))
    g = m.mic["gain"]
    y = data.T * g
    if m.mic["subtype"] != "FLOAT":
        y = np.clip(y, -1.0, 1.0 - 2**-15)
    sf.write(str(path), y.astype(np.float32) if y.shape[1] > 1 else y[:, 0].astype(np.float32), int(m.mic["fs"]), subtype=m.mic["subtype"])


# --------------------------------------------------------------------------------------------
# Thermal
# --------------------------------------------------------------------------------------------
Part = tuple[str, str, float, float, float, float, str]  # name, shape, x0, y0, x1, y1, group


def machine_parts(m: Machine) -> tuple[list[Part], float, float]:
    """Side-view layout in metres: x from the fan end along the shaft, y up from the floor."""
    g = m.geom
    lm, dm, lc, ld, dk = g["lm"], g["dm"], g["lc"], g["ld"], g["driven"]
    hb = 0.12 * dm
    hs = hb + 0.6 * dm
    parts: list[Part] = []
    r = dm / 2
    if m.liquid_cooled:
        parts += [
            ("nde_bearing", "rect", 0.0, hs - 0.3 * dm, 0.12 * lm, hs + 0.3 * dm, "nde"),
            ("motor_body", "rect", 0.12 * lm, hs - r, 0.85 * lm, hs + r, "body"),
            ("terminal_box", "rect", 0.18 * lm, hs + r, 0.35 * lm, hs + r + 0.22 * dm, "tbox"),
            ("de_bearing", "rect", 0.85 * lm, hs - 0.4 * dm, lm, hs + 0.4 * dm, "de"),
            ("tool", "rect", lm, hs - 0.15 * dm, lm + 0.2 * lm, hs + 0.15 * dm, "coupling"),
        ]
        return parts, lm * 1.2, hs + r + 0.22 * dm
    parts += [
        ("fan_cowl", "rect", 0.0, hs - 0.45 * dm, 0.17 * lm, hs + 0.45 * dm, "cowl"),
        ("nde_bearing", "rect", 0.17 * lm, hs - 0.28 * dm, 0.25 * lm, hs + 0.28 * dm, "nde"),
        ("motor_body", "rect", 0.25 * lm, hs - r, 0.88 * lm, hs + r, "body"),
        ("terminal_box", "rect", 0.45 * lm, hs + r, 0.68 * lm, hs + r + 0.28 * dm, "tbox"),
        ("de_bearing", "rect", 0.88 * lm, hs - 0.28 * dm, 0.97 * lm, hs + 0.28 * dm, "de"),
        ("coupling", "rect", 0.97 * lm, hs - 0.2 * dm, 0.97 * lm + lc, hs + 0.2 * dm, "coupling"),
    ]
    if m.orientation == "h":
        parts.insert(0, ("base", "rect", -0.03 * lm, 0.0, lm + lc + ld + 0.05 * lm, hb, "base"))
        parts.insert(1, ("feet", "rect", 0.35 * lm, hb, 0.8 * lm, hs - 0.8 * r, "feet"))
    x0 = 0.97 * lm + lc
    top = hs + r + 0.28 * dm
    if dk == "volute":
        parts += [
            ("bearing_frame", "rect", x0, hs - 0.22 * dm, x0 + 0.35 * ld, hs + 0.22 * dm, "frame"),
            ("driven", "ellipse", x0 + 0.3 * ld, hs - 0.65 * dm, x0 + 0.3 * ld + 1.3 * dm, hs + 0.65 * dm, "driven"),
            ("pump_inlet", "rect", x0 + 0.3 * ld + 1.3 * dm, hs - 0.2 * dm, x0 + 0.3 * ld + 1.3 * dm + 0.25 * dm, hs + 0.2 * dm, "inlet"),
        ]
        top = max(top, hs + 0.65 * dm)
    elif dk in ("barrel", "inline"):
        parts += [("driven", "rect", x0, hs - 0.4 * dm, x0 + ld, hs + 0.4 * dm, "driven")]
        parts += [("pump_inlet", "rect", x0 + 0.7 * ld, hs + 0.4 * dm, x0 + 0.9 * ld, hs + 0.75 * dm, "inlet")]
    elif dk == "fan_housing":
        parts += [("driven", "ellipse", x0, hs - 1.0 * dm, x0 + ld, hs + 1.3 * dm, "driven")]
        top = max(top, hs + 1.3 * dm)
    elif dk == "piston":
        parts += [
            ("driven", "rect", x0, hb, x0 + ld, hs + 0.5 * dm, "driven"),
            ("heads", "rect", x0 + 0.1 * ld, hs + 0.5 * dm, x0 + 0.9 * ld, hs + 1.1 * dm, "heads"),
        ]
        top = max(top, hs + 1.1 * dm)
    elif dk in ("block", "gearbox"):
        parts += [("driven", "rect", x0, hb, x0 + ld, hs + 0.55 * dm, "driven")]
    elif dk == "conveyor":
        parts += [
            ("driven", "rect", x0, hb, x0 + 0.5 * ld, hs + 0.5 * dm, "driven"),
            ("pulley", "ellipse", x0 + 0.5 * ld, hs - 0.8 * dm, x0 + ld, hs + 0.8 * dm, "pulley"),
        ]
        top = max(top, hs + 0.8 * dm)
    length = max(p[4] for p in parts)
    return parts, length, top


def camera_pose(m: Machine, s: Sample, length: float, height: float) -> dict[str, float]:
    c = m.camera
    w, h = c["w"], c["h"]
    along, across = (w, h) if m.orientation == "h" else (h, w)
    ppm = min(c["span"] * along / length, 0.8 * across / (height + 0.1))
    rng = np.random.default_rng([m.index, 99])
    ox = (w - (length if m.orientation == "h" else height) * ppm) / 2 + rng.uniform(-0.05, 0.05) * w
    oy = (h + (height if m.orientation == "h" else -length) * ppm) / 2 + rng.uniform(-0.04, 0.04) * h
    if not s.commissioning:
        srng = np.random.default_rng([s.seed, 5])
        if c["handheld"]:
            sc = srng.uniform(0.92, 1.08)
            ppm *= sc
            ox += srng.uniform(-0.06, 0.06) * w
            oy += srng.uniform(-0.06, 0.06) * h
        if c.get("moved"):
            ox += c["moved_px"][0] * w
            oy += c["moved_px"][1] * h
    return {"ppm": ppm, "ox": ox, "oy": oy}


def to_pixels(m: Machine, pose: dict[str, float], p: Part, length: float) -> tuple[float, float, float, float]:
    _, _, x0, y0, x1, y1, _ = p
    s, ox, oy = pose["ppm"], pose["ox"], pose["oy"]
    if m.orientation == "h":
        if m.fan_side == "right":
            x0, x1 = length - x1, length - x0
        return ox + s * x0, oy - s * y1, ox + s * x1, oy - s * y0
    if m.fan_side == "bottom":
        x0, x1 = length - x1, length - x0
    return ox + s * y0, oy + s * x0, ox + s * y1, oy + s * x1


def radiance(tc: np.ndarray | float) -> np.ndarray | float:
    return (np.asarray(tc) + 273.15) ** 4


def render_frame(m: Machine, s: Sample, st: dict[str, Any]) -> tuple[np.ndarray, dict[str, list[int]]]:
    """Apparent temperature (C) as the camera computes it, and the true pixel boxes of the parts."""
    rng = np.random.default_rng([s.seed, 3])
    c = m.camera
    w, h = c["w"], c["h"]
    amb = st["ambient"]
    parts, length, height = machine_parts(m)
    pose = camera_pose(m, s, length, height)
    yy, xx = np.mgrid[0:h, 0:w].astype(float)
    # background: wall with a vertical gradient, floor, sky outdoors
    temp = amb + 1.5 * (1 - yy / h) + 0.3 * rng.standard_normal((1, 1))
    eps = np.full((h, w), 0.92)
    floor_y = pose["oy"] if m.orientation == "h" else pose["oy"] + length * pose["ppm"]
    floor = yy > floor_y
    temp = np.where(floor, amb - 1.0, temp)
    if m.outdoor:
        sky_y = 0.3 * h + rng.uniform(-0.1, 0.1) * h
        sky = yy < sky_y
        temp = np.where(sky, amb - rng.uniform(15, 35), temp)
        eps = np.where(sky, 1.0, eps)
    if c["hot_pipe"]:
        py = int(rng.uniform(0.08, 0.3) * h)
        th = max(2, int(0.04 * h))
        temp[py : py + th, :] = rng.uniform(90, 160)
        eps[py : py + th, :] = 0.85
    rb, grad = st["rise_b"], st["grad"]
    proc = st["proc_surface"]
    group_temp = {
        "cowl": amb + 0.15 * rb,
        "nde": amb + st["nde_rise"],
        "de": amb + st["de_rise"],
        "tbox": amb + 0.55 * rb,
        "coupling": amb + rng.uniform(2, 6),
        "base": amb + rng.uniform(1, 3),
        "feet": amb + 0.4 * rb,
        "frame": 0.5 * (proc + amb) + 5,
        "driven": proc if not m.insulated else amb + 0.2 * (proc - amb),
        "inlet": proc,
        "heads": amb + rng.uniform(60, 100) * (0.6 + 0.4 * s.load),
        "pulley": amb + rng.uniform(2, 6),
    }
    bare = 0.3 + 0.3 * rng.random()
    group_eps = {
        "cowl": 0.92, "nde": bare if m.bare_housings else 0.9, "de": bare if m.bare_housings else 0.9,
        "tbox": 0.92, "coupling": 0.9, "base": 0.9, "feet": 0.92, "frame": 0.9,
        "driven": rng.uniform(0.25, 0.4) if m.stainless else 0.9, "inlet": rng.uniform(0.25, 0.4) if m.stainless else 0.9,
        "heads": 0.85, "pulley": 0.9, "body": rng.uniform(0.9, 0.95),
    }
    boxes: dict[str, list[int]] = {}
    for p in parts:
        name, shape, *_ , grp = p
        X0, Y0, X1, Y1 = to_pixels(m, pose, p, length)
        xa, xb = int(max(0, math.floor(X0))), int(min(w, math.ceil(X1)))
        ya, yb = int(max(0, math.floor(Y0))), int(min(h, math.ceil(Y1)))
        if xb <= xa or yb <= ya:
            continue
        sub_x = xx[ya:yb, xa:xb]
        sub_y = yy[ya:yb, xa:xb]
        cx, cy = (X0 + X1) / 2, (Y0 + Y1) / 2
        mask = np.ones_like(sub_x, bool)
        if shape == "ellipse":
            mask = ((sub_x + 0.5 - cx) / ((X1 - X0) / 2)) ** 2 + ((sub_y + 0.5 - cy) / ((Y1 - Y0) / 2)) ** 2 <= 1
        if grp == "body":
            # axial position from the fan end (0) to the drive end (1), radial from the axis
            if m.orientation == "h":
                u = (sub_x + 0.5 - X0) / (X1 - X0)
                u = u if m.fan_side == "left" else 1 - u
                rad = (sub_y + 0.5 - cy) / ((Y1 - Y0) / 2)
            else:
                u = (sub_y + 0.5 - Y0) / (Y1 - Y0)
                u = u if m.fan_side == "top" else 1 - u
                rad = (sub_x + 0.5 - cx) / ((X1 - X0) / 2)
            fins = 0.03 * rb * np.sign(np.sin(np.abs(rad) * 9 * math.pi))
            top_warm = 0.05 * rb * (-rad if m.orientation == "h" else 0)
            tv = amb + rb * (1 + grad * (u - 0.5)) + fins + top_warm + st["sun"] * (rad < -0.3)
            ev = group_eps["body"] * (1 - 0.35 * np.abs(rad) ** 4)
        else:
            tv = np.full(sub_x.shape, group_temp[grp]) + (st["sun"] * 0.5 if grp in ("driven", "tbox") else 0.0)
            ev = np.full(sub_x.shape, group_eps[grp])
            if grp == "tbox" and st["hot_k"] > 0:
                hx = X0 + (X1 - X0) * rng.uniform(0.3, 0.7)
                hy = Y0 + (Y1 - Y0) * rng.uniform(0.45, 0.75)
                sig = max(0.15 * min(X1 - X0, Y1 - Y0), 0.6)
                tv = tv + st["hot_k"] * np.exp(-((sub_x + 0.5 - hx) ** 2 + (sub_y + 0.5 - hy) ** 2) / (2 * sig**2))
        temp[ya:yb, xa:xb] = np.where(mask, tv, temp[ya:yb, xa:xb])
        eps[ya:yb, xa:xb] = np.where(mask, ev, eps[ya:yb, xa:xb])
        if name in ("motor_body", "de_bearing", "nde_bearing", "terminal_box", "coupling", "driven", "pump_inlet"):
            boxes[name] = [int(round(X0)), int(round(Y0)), int(round(X1)), int(round(Y1))]
    # radiometry: object + reflected ambient, atmosphere, optics, detector, camera inversion
    dist = c["w"] / (pose["ppm"] * 2 * math.tan(math.radians(24)))
    tau = math.exp(-0.008 * dist)
    t_refl = amb + 2.0
    w_obj = eps * radiance(temp) + (1 - eps) * radiance(t_refl)
    w_meas = tau * w_obj + (1 - tau) * radiance(amb)
    w_meas = ndimage.gaussian_filter(w_meas, c["blur"])
    # the camera compensates with its own settings: emissivity, reflected 20 C, atmosphere at 20 C
    eps_set = c["eps_set"]
    w_obj_est = (w_meas - (1 - tau) * radiance(20.0)) / tau
    w_est = (w_obj_est - (1 - eps_set) * radiance(20.0)) / eps_set
    app = np.power(np.maximum(w_est, 1.0), 0.25) - 273.15
    vign = 0.3 * (((xx - w / 2) / (w / 2)) ** 2 + ((yy - h / 2) / (h / 2)) ** 2)
    app = app - vign + c["netd"] * rng.standard_normal((h, w)) + 0.1 * np.random.default_rng([m.index, 4]).standard_normal((1, w))
    return app.astype(np.float32), boxes


def encode_frame(m: Machine, app_c: np.ndarray) -> np.ndarray:
    enc = m.camera["encoding"]
    tk = app_c.astype(np.float64) + 273.15
    if enc == "centikelvin":
        out = np.round(tk * 100).clip(0, 65535).astype(np.uint16)
    elif enc == "decikelvin":
        out = np.round(tk * 10).clip(0, 65535).astype(np.uint16)
    elif enc == "tlinear004":
        out = np.round(tk / 0.04).clip(0, 65535).astype(np.uint16)
    elif enc == "counts_c01":
        out = np.round((app_c + 100.0) / 0.1).clip(0, 65535).astype(np.uint16)
    elif enc == "float_k":
        out = tk.astype(np.float32)
    elif enc == "float_f":
        out = (app_c * 9 / 5 + 32).astype(np.float32)
    else:
        out = app_c.astype(np.float32)
    if m.camera["dead_px"]:
        rng = np.random.default_rng([m.index, 6])
        ys = rng.integers(0, out.shape[0], m.camera["dead_px"])
        xs = rng.integers(0, out.shape[1], m.camera["dead_px"])
        out[ys, xs] = 0 if out.dtype == np.uint16 else np.float32(np.nan)
    return out


def decode_frame(m: Machine, raw: np.ndarray) -> np.ndarray:
    enc = m.camera["encoding"]
    x = raw.astype(np.float64)
    if enc == "centikelvin":
        c = x / 100 - 273.15
    elif enc == "decikelvin":
        c = x / 10 - 273.15
    elif enc == "tlinear004":
        c = x * 0.04 - 273.15
    elif enc == "counts_c01":
        c = x * 0.1 - 100
    elif enc == "float_k":
        c = x - 273.15
    elif enc == "float_f":
        c = (x - 32) * 5 / 9
    else:
        c = x
    if raw.dtype == np.uint16:
        c[raw == 0] = np.nan
    return c


def frame_unit(m: Machine) -> dict[str, Any]:
    enc = m.camera["encoding"]
    if enc == "tlinear004":
        return {"unit": "kelvin", "scale": 0.04}
    if enc == "counts_c01":
        return {"unit": "celsius", "scale": 0.1, "offset": -100}
    if not m.camera["declare_unit"]:
        return {}
    return {
        "centikelvin": {"unit": "centikelvin"}, "decikelvin": {"unit": "decikelvin"}, "float_k": {"unit": "kelvin"},
        "float_f": {"unit": "fahrenheit"}, "float_c": {"unit": "celsius"},
    }[enc]


# --------------------------------------------------------------------------------------------
# PLC
# --------------------------------------------------------------------------------------------
def ar1(n: int, rho: float, rng: np.random.Generator) -> np.ndarray:
    e = rng.standard_normal(n) * math.sqrt(1 - rho**2)
    return signal.lfilter([1.0], [1.0, -rho], e)


def plc_series(m: Machine, s: Sample, st: dict[str, Any]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    rng = np.random.default_rng([s.seed, 4])
    per, win = m.plc["period"], m.plc["window_s"]
    t = np.arange(0, win, per)
    n = t.size
    rho = math.exp(-per / 3.0)
    cur = np.full(n, st["current"])
    pres = np.full(n, st["pressure"])
    if st["i_loaded"] > 0:  # load/unload compressor
        cyc = rng.uniform(30, 90)
        phase = ((t / cyc + rng.uniform(0, 1)) % 1.0)
        loaded = phase < st["duty"]
        cur = np.where(loaded, st["i_loaded"], st["i_unloaded"])
        p_lo = m.p_nom - 0.5
        ramp = np.where(loaded, phase / max(st["duty"], 1e-3), 1 - (phase - st["duty"]) / max(1 - st["duty"], 1e-3))
        pres = p_lo + 0.5 * ramp
    cur = cur * (1 + 0.01 * ar1(n, rho, rng))
    if s.label == "cavitation":
        cur = cur * (1 + 0.03 * s.severity * ar1(n, 0.5, rng))
    if m.kind == "conveyor":
        cur = cur * (1 + 0.06 * ar1(n, math.exp(-per / 10), rng))
    pres = pres * (1 + st["p_std"] * ar1(n, 0.6 if st["p_std"] > 0.02 else rho, rng))
    vib = st["vib"] * (1 + 0.04 * ar1(n, rho, rng))
    speed_rpm = st["shaft_hz"] * 60 * (1 + 0.0005 * ar1(n, rho, rng))
    series = {
        "current": cur,
        "speed": speed_rpm,
        "winding": st["winding_c"] + 0.1 * ar1(n, 0.99, rng),
        "bearing": st["bearing_c"] + 0.1 * ar1(n, 0.99, rng),
        "vibration": vib,
        "pressure": pres,
        "run": np.ones(n),
        "flow": 100 * m.power_kw / max(m.p_nom, 1) * s.speed_pu * st["flow_factor"] * (1 + 0.01 * ar1(n, rho, rng)),
        "power": math.sqrt(3) * m.voltage_v * cur * 0.85 / 1000,
        "suction": np.full(n, 0.8) + 0.02 * ar1(n, rho, rng) - (0.3 * s.severity if s.label == "cavitation" else 0.0),
        "ambient": np.full(n, st["ambient"]) + 0.05 * ar1(n, 0.99, rng),
        "setpoint": np.full(n, m.rated_rpm * s.speed_pu),
        "run_hours": 12000 + rng.uniform(0, 20000) + t / 3600,
        "alarm": np.zeros(n),
    }
    return t, {k: series[k] for k in m.plc["tags"]}


def _unit_conv(tag: str, unit: str, v: np.ndarray) -> np.ndarray:
    if unit in ("°F", "degF", "F"):
        return v * 9 / 5 + 32
    if unit == "K":
        return v + 273.15
    if unit == "in/s":
        return v / 25.4
    if unit == "in/s pk":
        return v / 25.4 * math.sqrt(2)
    if unit == "psi":
        return v * 14.5038
    if unit == "kPa":
        return v * 100
    if unit == "mbar":
        return v * 1000
    if unit == "Pa":
        return v * 1e5
    if unit == "inH2O":
        return v * 401.463
    if unit == "Hz" and tag in ("speed", "setpoint"):
        return v / 60
    return v


# canonical tag -> {dialect family: (name, unit)}
def plc_columns(m: Machine) -> dict[str, tuple[str, str]]:
    d = m.plc["dialect"]
    pk = m.pressure_kind
    press_name = {"discharge": "Discharge Pressure", "static": "Static Pressure", "vacuum": "Vacuum Level"}.get(pk, "Pressure")
    aid = m.asset_id
    plain = aid.replace("-", "")
    if d in ("wide_iso", "long_pi", "jsonl"):
        names = {
            "current": ("Motor Current", "A"), "speed": ("Motor Speed", "rpm"), "winding": ("Stator Winding Temperature", "°C"),
            "bearing": ("DE Bearing Temperature", "°C"), "vibration": ("Vibration Velocity RMS", "mm/s"),
            "pressure": (press_name, "mbar" if pk in ("static",) else "mbar abs" if pk == "vacuum" else "bar"), "run": ("Running", ""),
            "flow": ("Flow", "m3/h"), "power": ("Active Power", "kW"), "suction": ("Suction Pressure", "bar"),
            "ambient": ("Ambient Temperature", "°C"), "setpoint": ("Speed Setpoint", "rpm"), "run_hours": ("Run Hours", "h"),
            "alarm": ("Bearing Temp High Alarm", ""),
        }
        if d in ("long_pi", "jsonl"):
            names = {k: (f"{aid}.{v[0].replace(' ', '_')}", v[1]) for k, v in names.items()}
        return names
    if d == "wide_eu":
        return {
            "current": ("Motor Current", "A"), "speed": ("Speed", "rpm"), "winding": ("Winding Temp", "°C"),
            "bearing": ("Bearing Temp DE", "°C"), "vibration": ("Vibration", "mm/s"),
            "pressure": ("Pressure", "mbar" if pk == "static" else "mbar" if pk == "vacuum" else "bar"), "run": ("Run", ""),
            "flow": ("Flow", "m3/h"), "power": ("Power", "kW"), "suction": ("Suction Pressure", "bar"),
            "ambient": ("Ambient Temp", "°C"), "setpoint": ("Speed Setpoint", "rpm"), "run_hours": ("Operating Hours", "h"),
            "alarm": ("Vibration Alarm", ""),
        }
    if d == "wide_de":
        return {
            "current": ("Motorstrom", "A"), "speed": ("Drehzahl", "U/min"), "winding": ("Wicklungstemperatur", "°C"),
            "bearing": ("Lagertemperatur AS", "°C"), "vibration": ("Schwinggeschwindigkeit", "mm/s"),
            "pressure": ("Druck" if pk != "vacuum" else "Vakuum", "mbar" if pk in ("static", "vacuum") else "bar"), "run": ("Betrieb", ""),
            "flow": ("Durchfluss", "m3/h"), "power": ("Wirkleistung", "kW"), "suction": ("Saugdruck", "bar"),
            "ambient": ("Umgebungstemperatur", "°C"), "setpoint": ("Drehzahl Sollwert", "U/min"),
            "run_hours": ("Betriebsstunden", "h"), "alarm": ("Störung", ""),
        }
    if d == "wide_us":
        return {
            "current": ("Motor Amps", ""), "speed": ("Speed", "RPM"), "winding": ("Winding Temp", "°F"),
            "bearing": ("DE Brg Temp", "°F"), "vibration": ("Vib Velocity", "in/s pk" if m.plc["vib_peak"] else "in/s"),
            "pressure": (press_name, "inH2O" if pk == "static" else "psi"), "run": ("Run Status", ""),
            "flow": ("Flow", "GPM"), "power": ("Motor kW", ""), "suction": ("Suction Pressure", "psi"),
            "ambient": ("Ambient Temp", "°F"), "setpoint": ("Speed Setpoint", "RPM"), "run_hours": ("Run Hours", ""),
            "alarm": ("High Vib Alarm", ""),
        }
    if d == "long_aveva":
        return {
            "current": (f"{plain}_MTR_CUR_A", ""), "speed": (f"{plain}_SPD_RPM", ""), "winding": (f"{plain}_WDG_TEMP_DEGC", ""),
            "bearing": (f"{plain}_BRG_DE_TEMP_DEGC", ""), "vibration": (f"{plain}_VIB_VEL_MMS", ""),
            "pressure": (f"{plain}_{'STAT_PRESS_MBAR' if pk == 'static' else 'VAC_MBARA' if pk == 'vacuum' else 'DISCH_PRESS_BARG'}", ""),
            "run": (f"{plain}_RUNNING", ""), "flow": (f"{plain}_FLOW_M3H", ""), "power": (f"{plain}_PWR_KW", ""),
            "suction": (f"{plain}_SUCT_PRESS_BARG", ""), "ambient": (f"{plain}_AMB_TEMP_DEGC", ""),
            "setpoint": (f"{plain}_SPD_SP_RPM", ""), "run_hours": (f"{plain}_RUN_HRS", ""), "alarm": (f"{plain}_VIB_HI_ALM", ""),
        }
    if d == "wide_ignition":
        base = f"[default]Site/Line2/{aid}"
        return {
            "current": (f"{base}/Motor/Current", ""), "speed": (f"{base}/Motor/Speed", ""), "winding": (f"{base}/Motor/WindingTemp", ""),
            "bearing": (f"{base}/Motor/DEBearingTemp", ""), "vibration": (f"{base}/Motor/Vibration", ""),
            "pressure": (f"{base}/Process/{press_name.replace(' ', '')}", ""), "run": (f"{base}/Motor/Running", ""),
            "flow": (f"{base}/Process/Flow", ""), "power": (f"{base}/Motor/Power", ""), "suction": (f"{base}/Process/SuctionPressure", ""),
            "ambient": (f"{base}/Area/AmbientTemp", ""), "setpoint": (f"{base}/Drive/SpeedSetpoint", ""),
            "run_hours": (f"{base}/Motor/RunHours", ""), "alarm": (f"{base}/Motor/VibAlarm", ""),
        }
    # wide_tab
    return {
        "current": ("Current", "A"), "speed": ("Shaft Speed", "Hz"), "winding": ("Winding Temperature", "K"),
        "bearing": ("Bearing Temperature DE", "K"), "vibration": ("Vibration velocity", "mm/s"),
        "pressure": (press_name, "kPa"), "run": ("Run", ""), "flow": ("Flow", "m3/h"), "power": ("Power", "kW"),
        "suction": ("Suction Pressure", "kPa"), "ambient": ("Ambient", "K"), "setpoint": ("Speed Setpoint", "Hz"),
        "run_hours": ("Run Hours", "h"), "alarm": ("Alarm", ""),
    }


def _decimals(tag: str, unit: str) -> int:
    return {"current": 2, "speed": 1, "winding": 1, "bearing": 1, "vibration": 3 if "in/s" in unit else 2,
            "pressure": 3, "run": 0, "flow": 1, "power": 2, "suction": 3, "ambient": 1, "setpoint": 0,
            "run_hours": 2, "alarm": 0}[tag]


def write_plc(path: Path, m: Machine, s: Sample, st: dict[str, Any]) -> dict[str, float]:
    t, series = plc_series(m, s, st)
    cols = plc_columns(m)
    d = m.plc["dialect"]
    t0 = dt.datetime.fromisoformat(s.stamp)
    conv: dict[str, np.ndarray] = {}
    units: dict[str, str] = {}
    for tag, v in series.items():
        name, unit = cols[tag]
        if tag == "pressure" and unit in ("mbar abs",):
            vv = v * 1000
        else:
            vv = _unit_conv(tag, unit, v)
        conv[tag] = vv
        units[tag] = unit
    medians = {tag: float(np.median(v)) for tag, v in series.items()}
    lines: list[str] = []

    def fmt(tag: str, x: float, dec_comma: bool = False) -> str:
        if tag == "run":
            if d == "wide_us":
                return "RUNNING" if x > 0.5 else "STOPPED"
            return "1" if x > 0.5 else "0"
        sv = f"{x:.{_decimals(tag, units[tag])}f}"
        return sv.replace(".", ",") if dec_comma else sv

    def stamp(i: int, style: str) -> str:
        ts = t0 + dt.timedelta(seconds=float(t[i]))
        if style == "iso_z":
            return ts.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ts.microsecond // 1000:03d}Z"
        if style == "naive":
            return ts.strftime("%Y-%m-%d %H:%M:%S.") + f"{ts.microsecond // 1000:03d}"
        if style == "de":
            return ts.strftime("%d.%m.%Y %H:%M:%S,") + f"{ts.microsecond // 1000:03d}"
        if style == "us":
            return ts.strftime("%m/%d/%Y %I:%M:%S.") + f"{ts.microsecond // 1000:03d} " + ts.strftime("%p")
        if style == "epoch_ms":
            return str(int(ts.timestamp() * 1000))
        return ts.strftime("%Y-%m-%d %H:%M:%S")

    tags = list(series)

    def header_name(tag: str) -> str:
        name, unit = cols[tag]
        if d == "wide_iso":
            return f"{name} ({unit})" if unit else name
        if d in ("wide_eu", "wide_de", "wide_tab"):
            return f"{name} [{unit}]" if unit else name
        if d == "wide_us":
            return f"{name} ({unit})" if unit else name
        return name

    if d in ("wide_iso", "wide_eu", "wide_de", "wide_us", "wide_ignition", "wide_tab"):
        sep = {"wide_eu": ";", "wide_de": ";", "wide_tab": "\t"}.get(d, ",")
        tcol = {"wide_iso": "Timestamp", "wide_eu": "Zeit", "wide_de": "Zeitstempel", "wide_us": "Date/Time",
                "wide_ignition": "t_stamp", "wide_tab": "Time"}[d]
        tstyle = {"wide_iso": "iso_z", "wide_eu": "de", "wide_de": "de", "wide_us": "us", "wide_ignition": "epoch_ms",
                  "wide_tab": "naive"}[d]
        lines.append(sep.join([tcol] + [header_name(tg) for tg in tags]))
        for i in range(t.size):
            lines.append(sep.join([stamp(i, tstyle)] + [fmt(tg, float(conv[tg][i]), sep == ";") for tg in tags]))
    elif d == "long_pi":
        lines.append("timestamp,tag,value,unit")
        for i in range(t.size):
            for tg in tags:
                lines.append(f"{stamp(i, 'naive')},{cols[tg][0]},{fmt(tg, float(conv[tg][i]))},{units[tg]}")
    elif d == "jsonl":
        for i in range(t.size):
            for tg in tags:
                rec = {"timestamp": stamp(i, "iso_z"), "tag": cols[tg][0], "value": float(fmt(tg, float(conv[tg][i]))), "unit": units[tg]}
                lines.append(json.dumps(rec, ensure_ascii=False))
    else:  # long_aveva: delta retrieval, deadband per tag, 30 s heartbeat
        lines.append("DateTime,TagName,Value,Quality")
        rows: list[tuple[float, str]] = []
        dead = {"current": 0.005, "speed": 0.001, "winding": 0.002, "bearing": 0.002, "vibration": 0.02, "pressure": 0.005}
        for tg in tags:
            last_v, last_t = None, -1e9
            for i in range(t.size):
                v = float(conv[tg][i])
                rel = dead.get(tg, 0.01)
                if last_v is None or abs(v - last_v) > rel * max(abs(last_v), 1e-6) or t[i] - last_t >= 30:
                    rows.append((float(t[i]), f"{stamp(i, 'naive')},{cols[tg][0]},{fmt(tg, v)},Good"))
                    last_v, last_t = v, float(t[i])
        rows.sort(key=lambda r: r[0])
        lines += [r[1] for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return medians


# --------------------------------------------------------------------------------------------
# File names and assets.json
# --------------------------------------------------------------------------------------------
def file_names(m: Machine, s: Sample) -> dict[str, str]:
    ts = dt.datetime.fromisoformat(s.stamp)
    land = ts.strftime("%Y%m%dT%H%M%S") + f"{ts.microsecond // 1000:03d}"
    aid = m.asset_id
    plc_ext = "jsonl" if m.plc["dialect"] == "jsonl" else "csv"
    if m.naming == "landing":
        return {"audio": f"{aid}-{land}.wav", "thermal": f"{aid}-{land}.tiff", "plc": f"plc-{aid}-{land}.{plc_ext}"}
    if m.naming == "camera_app":
        return {
            "audio": f"{aid}_{ts:%Y-%m-%d_%H-%M-%S}.wav",
            "thermal": f"IR_{aid}_{ts:%Y%m%d_%H%M%S}.tif",
            "plc": f"{aid} historian {ts:%Y-%m-%d %H%M}.{plc_ext}",
        }
    low = aid.lower()
    return {"audio": f"{ts:%Y%m%d_%H%M%S}_{low}.wav", "thermal": f"{ts:%Y%m%d_%H%M%S}_{low}.tiff", "plc": f"{ts:%Y%m%d}_{low}_trend.{plc_ext}"}


ALIASES: dict[str, list[str]] = {
    "motor_body": ["Motor", "motor body", "Motor"],
    "de_bearing": ["Drive End Bearing", "DE", "DE bearing"],
    "nde_bearing": ["Non Drive End Bearing", "NDE", "NDE bearing"],
    "terminal_box": ["Junction Box", "Terminal box", "terminal box"],
    "coupling": ["Coupling", "coupling guard", "Coupling"],
    "driven": ["pump", "Driven machine", "driven"],
    "pump_inlet": ["suction", "Pump inlet", "pump inlet"],
}


def user_regions(m: Machine, boxes: dict[str, list[int]], rng: np.random.Generator) -> tuple[Any, dict[str, Any]]:
    """Regions as this machine's user would write them (drawn slightly inside each part)."""
    sc = m.camera["region_scale"]
    fw, fh = int(m.camera["w"] * sc), int(m.camera["h"] * sc)
    shrunk: dict[str, tuple[float, float, float, float]] = {}
    for name, (x0, y0, x1, y1) in boxes.items():
        dx, dy = 0.05 * (x1 - x0), 0.05 * (y1 - y0)
        x0c, y0c = max(0, x0 + dx), max(0, y0 + dy)
        x1c, y1c = min(m.camera["w"], x1 - dx), min(m.camera["h"], y1 - dy)
        if x1c - x0c < 1 or y1c - y0c < 1:
            continue
        shrunk[name] = (x0c * sc, y0c * sc, x1c * sc, y1c * sc)
    frame: dict[str, Any] = {"width": fw, "height": fh}
    style = m.style
    form = int(rng.integers(0, 3))
    if style == "full":
        return {k: [int(round(v)) for v in b] for k, b in shrunk.items()}, frame
    if style == "nameplate":
        out = []
        for k, (x0, y0, x1, y1) in shrunk.items():
            nm = ALIASES[k][form] if not (k == "driven" and not m.is_pump) else ("Driven machine" if form != 2 else "driven")
            out.append({"name": nm, "x": int(round(x0)), "y": int(round(y0)), "w": int(round(x1 - x0)), "h": int(round(y1 - y0))})
        return out, frame
    # labelling tools
    if form == 0:  # LabelMe rectangles
        return [{"label": ALIASES[k][0] if k != "driven" or m.is_pump else "Driven machine",
                 "points": [[round(x0, 1), round(y0, 1)], [round(x1, 1), round(y1, 1)]], "shape_type": "rectangle"}
                for k, (x0, y0, x1, y1) in shrunk.items()], frame
    if form == 1:  # Pascal VOC
        return {k: {"xmin": int(x0), "ymin": int(y0), "xmax": int(math.ceil(x1)), "ymax": int(math.ceil(y1))}
                for k, (x0, y0, x1, y1) in shrunk.items()}, frame
    # fractions of the frame
    return {k: [round(x0 / fw, 4), round(y0 / fh, 4), round(x1 / fw, 4), round(y1 / fh, 4)]
            for k, (x0, y0, x1, y1) in shrunk.items()}, {}


def assets_entry(m: Machine, boxes: dict[str, list[int]], healthy_vib: float) -> dict[str, Any]:
    rng = np.random.default_rng([m.index, 77])
    st = m.style
    e: dict[str, Any] = {}
    id_key = {"full": "asset_id", "nameplate": "id", "labelling": "name", "minimal": "asset_id"}[st]
    e[id_key] = m.asset_id
    e["asset_type" if st in ("full", "minimal") else "type"] = m.asset_type
    rpm = round(m.rated_rpm)
    us = m.line_hz == 60
    if st == "full":
        e["nominal_rpm"] = rpm
        e["poles"] = m.poles
        e["line_frequency_hz"] = m.line_hz
        e["rated_current_a"] = m.rated_current_a
        e["rated_power_kw"] = m.power_kw
        if m.pressure_kind in ("discharge",) and m.p_nom:
            e["pressure_nominal_bar"] = m.p_nom
        if m.pressure_kind == "static":
            e["pressure_nominal_bar"] = m.p_nom
        e["load_profile"] = "cyclic" if m.kind in ("screw_compressor", "piston_compressor") else "varying" if m.kind == "conveyor" else "steady"
        if rng.random() < 0.5 or m.reciprocating:
            e["vibration_normal_mm_s"] = round(healthy_vib * rng.uniform(0.9, 1.1), 2)
        if rng.random() < 0.4:
            e["resonance_band_hz"] = [round(0.85 * m.main_mode), round(1.15 * m.main_mode)]
        geo = BEARINGS[m.de_bearing]
        if rng.random() < 0.5:
            e["bearing"] = {"n_balls": geo[0], "ball_d_mm": geo[1], "pitch_d_mm": geo[2], "contact_angle_deg": geo[3]}
        else:
            e["bearing_orders"] = {k: round(v, 4) for k, v in bearing_orders(m.de_bearing).items()}
        if m.reciprocating:
            e["reciprocating"] = True
    elif st == "nameplate":
        e["rated_rpm"] = f"{rpm:,} rpm" if rpm >= 1000 and us else f"{rpm} rpm"
        e["power_kw"] = f"{m.power_kw:.1f} kW".replace(".", ",") if not us else f"{m.power_kw:.1f} kW"
        e["rated_voltage_v"] = m.voltage_v
        e["line_frequency_hz"] = m.line_hz
        if rng.random() < 0.5:
            e["fla_a"] = f"{m.rated_current_a:.1f} A"
        if m.de_bearing in BEARINGS and not m.de_bearing.startswith(("NU", "70")):
            suffix = pick(rng, ["-2Z/C3", " 2RS C3", "-2RS1", " C3", ""])
            if rng.random() < 0.5:
                e["bearing"] = f"SKF {m.de_bearing}{suffix}"
            else:
                e["bearings"] = {"de": f"{m.de_bearing}{suffix}", "nde": f"{m.nde_bearing}-2Z"}
        else:
            e["bearing"] = f"{m.de_bearing}"
        if m.pressure_kind == "discharge" and rng.random() < 0.5:
            e["nominal_pressure_bar"] = m.p_nom
        if us and rng.random() < 0.4:
            e["vibration_normal_in_s"] = round(healthy_vib / 25.4, 3)
    elif st == "labelling":
        if rng.random() < 0.5:
            e["sync_rpm"] = round(m.sync_rpm)
        else:
            e["poles"] = m.poles
            e["line_frequency_hz"] = m.line_hz
        if rng.random() < 0.5:
            e["de_bearing"] = f"{m.de_bearing}-2RS1" if not m.de_bearing.startswith(("NU", "70")) else m.de_bearing
    # minimal: id and type only (plus what the camera needs)
    if m.vfd and st != "minimal":
        if st == "full" or rng.random() < 0.5:
            e["vfd"] = True
        else:
            e["drive"] = "vfd"
        lo, hi = m.speed_range
        if st == "full" and rng.random() < 0.7:
            e["speed_range_rpm"] = [round(lo * m.sync_rpm * 0.98), round(hi * m.sync_rpm)]
        elif rng.random() < 0.4:
            e["speed_range_hz"] = [round(lo * m.sync_rpm / 60 * 0.98, 1), round(hi * m.sync_rpm / 60, 1)]
    elif m.vfd:
        e["vfd"] = True
    unit = frame_unit(m)
    if st != "minimal" and boxes:
        regions, frame = user_regions(m, boxes, rng)
        frame.update(unit)
        if st == "labelling" and rng.random() < 0.5:
            e["camera"] = {"frame": frame, "regions": regions} if frame else {"regions": regions}
        else:
            e["regions"] = regions
            if frame:
                e["frame"] = frame
        if rng.random() < 0.6 or st == "full":
            e["fan_side"] = m.fan_side
    elif unit:
        e["frame"] = unit
    return e


# --------------------------------------------------------------------------------------------
# Expert reference
# --------------------------------------------------------------------------------------------
def env_spectrum(x: np.ndarray, fs: float, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
    hi = min(hi, 0.45 * fs)
    lo = min(lo, 0.7 * hi)
    sos = signal.butter(4, [lo / (fs / 2), hi / (fs / 2)], "bandpass", output="sos")
    env = np.abs(signal.hilbert(signal.sosfiltfilt(sos, x)))
    env = env - env.mean()
    sp = np.abs(np.fft.rfft(env * np.hanning(env.size)))
    return np.fft.rfftfreq(env.size, 1 / fs), sp


def expert_band(m: Machine, fr: float) -> tuple[float, float]:
    """Demodulation band around the main mode, wide enough for the fastest defect rate."""
    rate = max(bearing_orders(d)["bpfi"] for d in (m.de_bearing, m.nde_bearing)) * fr * 2
    half = max(0.2 * m.main_mode, 1.3 * rate)
    return max(m.main_mode - half, 200.0), m.main_mode + half


def peak_db(fq: np.ndarray, sp: np.ndarray, f0: float, tol: float) -> tuple[float, float]:
    """Peak level near f0 (within tol, relative) and its prominence over the median of +-40 %."""
    sel = (fq > f0 * (1 - tol)) & (fq < f0 * (1 + tol))
    ref = (fq > f0 * 0.6) & (fq < f0 * 1.4)
    if not sel.any() or ref.sum() < 10:
        return -200.0, 0.0
    pk = float(sp[sel].max())
    return 20 * math.log10(pk + 1e-12), 20 * math.log10(pk / (float(np.median(sp[ref])) + 1e-12) + 1e-12)


def audio_features(m: Machine, path: Path, st: dict[str, Any]) -> dict[str, float]:
    x, fs = sf.read(str(path), always_2d=True)
    x = x.mean(axis=1)
    fr = st["shaft_hz"]
    lo, hi = expert_band(m, fr)
    f_env, sp = env_spectrum(x, fs, lo, hi)
    best = 0.0
    for des in (m.de_bearing, m.nde_bearing):
        o = bearing_orders(des)
        for rate in (o["bpfo"] * fr, o["bpfi"] * fr, 2 * o["bsf"] * fr):
            if 2.2 * rate > f_env[-1]:
                continue
            snr = 0.0
            for h in (1, 2):
                _, prom = peak_db(f_env, sp, h * rate, 0.02)
                # a synchronous line (vane pass, mesh, knock) next to the defect rate is not a bearing
                for shaft in {fr, st["driven_hz"]}:
                    k = round(h * rate / shaft)
                    if k >= 1 and abs(h * rate - k * shaft) < 0.03 * h * rate:
                        _, sync = peak_db(f_env, sp, k * shaft, 0.004)
                        if sync >= prom:
                            prom = 0.0
                snr += prom
            best = max(best, snr / 2)
    spec = np.abs(np.fft.rfft(x * np.hanning(x.size)))
    fq = np.fft.rfftfreq(x.size, 1 / fs)
    one = st["driven_hz"] if m.driven_imbalance else fr
    l1, prom1 = peak_db(fq, spec, one, 0.015)
    vane = 0.0
    if m.is_pump:
        zv = m.tones["vane_many"] if m.kind == "vacuum_pump" else m.tones["vane"]
        _, vane = peak_db(f_env, sp, zv * st["driven_hz"], 0.01) if zv * st["driven_hz"] < f_env[-1] else (0.0, 0.0)
    hf = 20 * math.log10(band_rms(x, fs, 2000, 8000) + 1e-12)
    return {"env_snr": best, "l1": l1, "l1_prom": prom1, "hf": hf, "one_hz": one, "vane_env": vane}


def thermal_features(m: Machine, path: Path, boxes: dict[str, list[int]]) -> dict[str, float]:
    c = decode_frame(m, tifffile.imread(str(path)))
    out: dict[str, float] = {}
    for name, (x0, y0, x1, y1) in boxes.items():
        dx, dy = max(1, (x1 - x0) // 8), max(1, (y1 - y0) // 8)
        sub = c[max(0, y0 + dy) : max(0, y1 - dy), max(0, x0 + dx) : max(0, x1 - dx)]
        if sub.size == 0 or np.isnan(sub).all():
            sub = c[max(0, y0) : max(0, y1), max(0, x0) : max(0, x1)]
        if sub.size == 0 or np.isnan(sub).all():
            continue
        out[name + "_med"] = float(np.nanmedian(sub))
        out[name + "_max"] = float(np.nanpercentile(sub, 99))
    return out


def expert_verdicts(m: Machine, s: Sample, comm: Sample) -> dict[str, tuple[str, float]]:
    """Each modality's expert call (class, score over threshold) with the machine's truth."""
    st, cs = s.state, comm.state
    fa, ca = s.truth["audio_feat"], comm.truth["audio_feat"]
    res: dict[str, tuple[str, float]] = {}
    # audio
    cands: list[tuple[str, float]] = []
    cands.append(("bearing_wear", fa["env_snr"] / 12.0))
    n_ratio = fa["one_hz"] / ca["one_hz"]
    rise = fa["l1"] - ca["l1"] - 44 * math.log10(n_ratio)
    if fa["l1_prom"] >= 10:
        cands.append(("imbalance", rise / 6.0))
    if m.is_pump and m.mic["fs"] >= 16000:
        cands.append(("cavitation", (fa["hf"] - ca["hf"]) / 4.0))
    res["audio"] = max(cands, key=lambda c: c[1])
    # thermal
    ft, ct = s.truth["thermal_feat"], comm.truth["thermal_feat"]
    amb, camb = st["ambient"], cs["ambient"]
    heat = (0.25 + 0.75 * (st["current"] / m.rated_current_a) ** 2) / (0.25 + 0.75 * (cs["current"] / m.rated_current_a) ** 2)
    cands = []
    if "terminal_box_max" in ft:
        cands.append(("electrical_overheating", (ft["terminal_box_max"] - ft["terminal_box_med"]) / 6.0))
    if "motor_body_med" in ft and "motor_body_med" in ct:
        exp_rise = max((ct["motor_body_med"] - camb) * heat, 1.0)
        rise_now = ft["motor_body_med"] - amb
        cands.append(("cooling_failure", min((rise_now / exp_rise) / 1.25, (rise_now - exp_rise) / 4.0)))
    exc = 0.0
    for b in ("de_bearing", "nde_bearing"):
        if b + "_med" in ft and b + "_med" in ct and "motor_body_med" in ft:
            body_exp = max((ct["motor_body_med"] - camb) * heat, 1.0)
            body_fac = (ft["motor_body_med"] - amb) / body_exp
            exp_b = (ct[b + "_med"] - camb) * max(body_fac, 1.0) ** 0.5 * (st["shaft_hz"] / cs["shaft_hz"]) ** 0.5
            exc = max(exc, ft[b + "_med"] - amb - exp_b)
    cands.append(("bearing_wear", exc / 4.0))
    res["thermal"] = max(cands, key=lambda c: c[1]) if cands else ("normal", 0.0)
    # plc (only the tags in the file)
    pm, cm = s.truth["plc_medians"], comm.truth["plc_medians"]
    cands = []
    n_r = st["shaft_hz"] / cs["shaft_hz"]
    if "vibration" in pm:
        cands.append(("imbalance", (pm["vibration"] / (cm["vibration"] * n_r**1.2)) / 1.5))
    if "pressure" in pm and m.pressure_kind != "none" and m.is_pump:
        exp_p = cm["pressure"] * (n_r**2 if m.law == "quadratic" else 1.0)
        cands.append(("cavitation", (exp_p / max(pm["pressure"], 1e-6)) / (1 / 0.9)))
    if "winding" in pm:
        exp_r = (cm["winding"] - camb) * heat * ((0.35 + 0.65 * comm.speed_pu**0.8) / (0.35 + 0.65 * s.speed_pu**0.8) if m.vfd and not m.liquid_cooled else 1.0)
        resid = pm["winding"] - amb - exp_r
        ratio = (pm["winding"] - amb) / max(exp_r, 1.0)
        cands.append(("cooling_failure", min(resid / 8.0, ratio / 1.2)))
    if "bearing" in pm:
        exp_b = (cm["bearing"] - camb) * (0.7 + 0.3 * heat)
        cands.append(("bearing_wear", (pm["bearing"] - amb - exp_b) / 4.0))
    res["plc"] = max(cands, key=lambda c: c[1]) if cands else ("normal", 0.0)
    out: dict[str, tuple[str, float]] = {}
    for mod, (cls, sc) in res.items():
        out[mod] = (cls, sc) if sc >= 1.0 else ("normal", sc)
    fused = max(((c, sc) for c, sc in out.values() if c != "normal"), key=lambda c: c[1], default=("normal", 0.0))
    out["fused"] = fused
    return out


# --------------------------------------------------------------------------------------------
# Generation driver
# --------------------------------------------------------------------------------------------
def generate(fleet_dir: Path, n_machines: int, seed: int) -> tuple[list[Machine], list[list[Sample]]]:
    fleet_dir.mkdir(parents=True, exist_ok=True)
    machines = make_fleet(n_machines, seed)
    all_samples: list[list[Sample]] = []
    entries: list[dict[str, Any]] = []
    t0 = time.time()
    for m in machines:
        mdir = fleet_dir / m.asset_id
        samples = make_samples(m, seed)
        comm_boxes: dict[str, list[int]] = {}
        for s in samples:
            sdir = mdir / s.sample_id
            sdir.mkdir(parents=True, exist_ok=True)
            s.state = operating_state(m, s)
            names = file_names(m, s)
            if s.commissioning:
                names = {k: "commissioning_" + v for k, v in names.items()}
            audio, atruth = synth_audio(m, s, s.state)
            write_audio(sdir / names["audio"], m, audio)
            app, boxes = render_frame(m, s, s.state)
            raw = encode_frame(m, app)
            comp = m.camera["compression"]
            tifffile.imwrite(str(sdir / names["thermal"]), raw, photometric="minisblack", compression=comp)
            if s.commissioning:
                comm_boxes = boxes
            med = write_plc(sdir / names["plc"], m, s, s.state)
            s.files = {k: str(sdir / v) for k, v in names.items()}
            s.truth = {
                "audio": atruth, "boxes": boxes, "plc_medians": med,
                "audio_feat": audio_features(m, sdir / names["audio"], s.state),
                "thermal_feat": thermal_features(m, sdir / names["thermal"], boxes),
            }
        comm = samples[0]
        healthy_vib = float(comm.state["vib"])
        entries.append(assets_entry(m, comm_boxes, healthy_vib))
        for s in samples[1:]:
            s.truth["expert"] = {k: list(v) for k, v in expert_verdicts(m, s, comm).items()}
        all_samples.append(samples)
        print(f"  generated {m.asset_id:10s} {m.kind:18s} {len(samples) - 1} samples  ({time.time() - t0:5.1f} s)", flush=True)
    doc = {"assets": entries}
    (fleet_dir / "assets.json").write_text(json.dumps(doc, indent=1, ensure_ascii=False), encoding="utf-8")
    truth = {
        "machines": [asdict(m) for m in machines],
        "samples": [[asdict(s) for s in ss] for ss in all_samples],
    }
    (fleet_dir / "truth.json").write_text(json.dumps(truth, default=float), encoding="utf-8")
    return machines, all_samples


def ensure_fleet(fleet_dir: Path, n_machines: int = 30, seed: int = 1) -> None:
    """Generate the fleet in ``fleet_dir`` unless it is there (its ``truth.json``): for the benches that
    read this fleet's files (``bench_speed_mains_hum.py``, ``bench_region_fit.py``)."""
    if not (fleet_dir / "truth.json").exists():
        print(f"generating the blind fleet in {fleet_dir} ...", flush=True)
        generate(fleet_dir, n_machines, seed)


def load_fleet(fleet_dir: Path) -> tuple[list[Machine], list[list[Sample]]]:
    truth = json.loads((fleet_dir / "truth.json").read_text(encoding="utf-8"))
    machines = []
    for d in truth["machines"]:
        d["speed_range"] = tuple(d["speed_range"])
        d["load_range"] = tuple(d["load_range"])
        d["modes"] = [tuple(x) for x in d["modes"]]
        machines.append(Machine(**d))
    samples = [[Sample(**s) for s in ss] for ss in truth["samples"]]
    return machines, samples


# --------------------------------------------------------------------------------------------
# Scoring
# --------------------------------------------------------------------------------------------
def run_inspect(files: list[str], assets: Path, extra: list[str], timeout: float) -> tuple[list[dict[str, Any]] | None, str, int, float]:
    cmd = [str(LINEWATCH), "inspect", "--json", "--assets", str(assets), *extra, *files]
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=str(REPO))
    except subprocess.TimeoutExpired:
        return None, f"timeout after {timeout:.0f} s", -1, time.time() - t0
    wall = time.time() - t0
    try:
        recs = json.loads(p.stdout)
        if not isinstance(recs, list):
            raise ValueError("not a list")
    except (json.JSONDecodeError, ValueError):
        return None, (p.stderr[-3000:] or p.stdout[-3000:]), p.returncode, wall
    return recs, p.stderr, p.returncode, wall


def norm_warning(text: str, ids: list[str]) -> str:
    t = re.sub(r"/tmp/\S+", "<file>", text)
    for aid in sorted(ids, key=len, reverse=True):
        t = re.sub(re.escape(aid), "<asset>", t, flags=re.IGNORECASE)
    t = re.sub(r"[-+]?\d+(?:[.,]\d+)?", "#", t)
    return t[:240]


def warning_family(normalised: str) -> str:
    """The kind of a warning: its text up to the first list, quote or colon."""
    head = re.split(r"[:(\[{]", normalised, maxsplit=1)[0].strip()
    return head[:120] or normalised[:120]


def score(
    machines: list[Machine], samples: list[list[Sample]], fleet_dir: Path, with_healthy: bool, timeout: float,
    registry: Path | None = None,
) -> dict[str, Any]:
    assets = fleet_dir / "assets.json"
    base = ["--registry", str(registry)] if registry else []  # the models to score (default: the shipped ones)
    by_file: dict[str, tuple[int, int, str]] = {}
    rounds = max(len(ss) - 1 for ss in samples)
    results: dict[str, dict[tuple[int, int], dict[str, Any]]] = {"plain": {}}
    if with_healthy:
        results["healthy_ref"] = {}
    errors: list[dict[str, Any]] = []
    crashes: list[dict[str, Any]] = []
    warn_counts: dict[str, collections.Counter[str]] = {k: collections.Counter() for k in results}
    warn_example: dict[str, str] = {}
    fam_counts: dict[str, collections.Counter[str]] = {k: collections.Counter() for k in results}
    ids = [m.asset_id for m in machines]
    call_times: list[float] = []
    for mi, ss in enumerate(samples):
        for si, s in enumerate(ss[1:]):
            for mod, fpath in s.files.items():
                by_file[fpath] = (mi, si, mod)
    healthy_excluded: list[dict[str, Any]] = []
    healthy_opts: dict[int, list[str]] = {}
    if with_healthy:
        # a commissioning file the tool cannot read as an input would fail the whole call as a
        # --healthy-* reference: find those first (one call) and leave them out, reported
        comm_files = [f for ss in samples for f in ss[0].files.values()]
        recs, stderr, rc, wall = run_inspect(comm_files, assets, base, timeout)
        call_times.append(wall)
        bad = {str(r.get("file")): str(r.get("error")) for r in (recs or []) if r.get("error")}
        for mi, ss in enumerate(samples):
            opts: list[str] = []
            for mod, opt in (("audio", "--healthy-audio"), ("thermal", "--healthy-thermal"), ("plc", "--healthy-plc")):
                f = ss[0].files[mod]
                if f in bad:
                    healthy_excluded.append({"asset": ids[mi], "file": f, "error": bad[f][:400]})
                else:
                    opts += [opt, f]
            healthy_opts[mi] = opts
        # a reference the tool refuses as a healthy reference (e.g. a PLC export with no window of
        # normal running) stops the whole call with exit 2: find them one by one and leave them out
        probe = [samples[0][1].files["audio"]]
        for _ in range(3 * len(samples)):
            extra = [x for mi in range(len(samples)) for x in healthy_opts[mi]]
            recs, stderr, rc, wall = run_inspect(probe, assets, base + extra, timeout)
            call_times.append(wall)
            if recs is not None or rc != 2:
                break
            msg = stderr.strip().splitlines()[-1] if stderr.strip() else ""
            hit = [mi for mi, aid in enumerate(ids) if re.search(rf"(?<![\w-]){re.escape(aid)}(?![\w-])", msg)]
            hit += [mi for mi in range(len(samples)) if any(f in msg for f in healthy_opts[mi][1::2])]
            if not hit:
                healthy_excluded.append({"asset": None, "file": None, "error": "unattributed refusal: " + msg[:400]})
                for mi in range(len(samples)):
                    healthy_opts[mi] = []
                break
            mi = hit[0]
            low = msg.lower()
            mod = "plc" if "plc" in low else "thermal" if ("frame" in low or "thermal" in low) else "audio" if (
                "sound" in low or "recording" in low or "audio" in low) else None
            opt = {"plc": "--healthy-plc", "thermal": "--healthy-thermal", "audio": "--healthy-audio"}.get(mod or "")
            before = list(healthy_opts[mi])
            if opt and opt in before:
                k = before.index(opt)
                healthy_opts[mi] = before[:k] + before[k + 2 :]
                healthy_excluded.append({"asset": ids[mi], "file": before[k + 1], "error": msg[:400]})
            else:
                healthy_opts[mi] = []
                healthy_excluded.append({"asset": ids[mi], "file": "all", "error": msg[:400]})
        print(f"  healthy references left out: {len(healthy_excluded)}", flush=True)
    for mode in results:
        extra: list[str] = []
        if mode == "healthy_ref":
            for mi in range(len(samples)):
                extra += healthy_opts[mi]
        for r in range(rounds):
            groups = [(mi, r) for mi, ss in enumerate(samples) if r + 1 < len(ss)]
            files = [samples[mi][r + 1].files[k] for mi, _ in groups for k in ("audio", "thermal", "plc")]
            recs, stderr, rc, wall = run_inspect(files, assets, base + extra, timeout)
            call_times.append(wall)
            print(f"  [{mode}] call {r + 1}/{rounds}: {len(files)} files, rc={rc}, {wall:5.1f} s", flush=True)
            todo: list[tuple[list[str], list[dict[str, Any]] | None, str, int]] = [(files, recs, stderr, rc)]
            if recs is None:
                crashes.append({"mode": mode, "round": r, "rc": rc, "message": stderr[-2000:], "files": len(files)})
                print(f"    crash/unparsable output (rc={rc}); rescoring machine by machine", flush=True)
                todo = []
                for mi, _ in groups:
                    fl = [samples[mi][r + 1].files[k] for k in ("audio", "thermal", "plc")]
                    ex = healthy_opts[mi] if mode == "healthy_ref" else extra
                    rr, se, rcc, _ = run_inspect(fl, assets, base + ex, timeout)
                    if rr is None:
                        crashes.append({"mode": mode, "round": r, "asset": ids[mi], "rc": rcc, "message": se[-2000:], "files": fl})
                    todo.append((fl, rr, se, rcc))
            for fl, rr, _se, _rc in todo:
                if rr is None:
                    continue
                for rec in rr:
                    key = str(Path(rec.get("file", "")).resolve()) if rec.get("file") else ""
                    hit = by_file.get(key) or by_file.get(str(rec.get("file")))
                    if hit is None:
                        continue
                    mi, si, mod = hit
                    entry = results[mode].setdefault((mi, si), {})
                    entry[mod] = {
                        "class": rec.get("class"), "probabilities": rec.get("probabilities"), "withheld": rec.get("withheld"),
                        "ruled_out": rec.get("ruled_out"), "extrapolating": rec.get("extrapolating"),
                        "shaft_hz": rec.get("shaft_hz"), "speed_source": rec.get("speed_source"), "error": rec.get("error"),
                        "asset_id": rec.get("asset_id"), "modality": rec.get("modality"),
                    }
                    if rec.get("error"):
                        errors.append({"mode": mode, "asset": ids[mi], "file": rec.get("file"), "modality": mod, "error": rec["error"]})
                    for w in rec.get("warnings") or []:
                        nw = norm_warning(str(w), ids)
                        warn_counts[mode][nw] += 1
                        warn_example.setdefault(nw, str(w)[:600])
                        fam = warning_family(nw)
                        fam_counts[mode][fam] += 1
                        warn_example.setdefault(fam, str(w)[:600])
                    fu = rec.get("fused")
                    if fu and "fused" not in entry:
                        entry["fused"] = {"class": fu.get("class"), "probabilities": fu.get("probabilities"),
                                          "confidence": fu.get("confidence"), "coverage": fu.get("coverage"),
                                          "modalities": fu.get("modalities"), "withheld": fu.get("withheld")}
    return {
        "results": results, "errors": errors, "crashes": crashes, "call_times": call_times,
        "warnings": {mode: [{"text": t, "count": c, "example": warn_example[t]} for t, c in wc.most_common()] for mode, wc in warn_counts.items()},
        "warning_families": {mode: [{"family": t, "count": c, "example": warn_example[t]} for t, c in wc.most_common()] for mode, wc in fam_counts.items()},
        "healthy_excluded": healthy_excluded,
    }


def metrics(rows: list[tuple[str, float, str | None]]) -> dict[str, Any]:
    """rows: (true label, severity, predicted class or None)."""
    conf: dict[str, collections.Counter[str]] = {c: collections.Counter() for c in CLASSES}
    for lab, _sev, pred in rows:
        conf[lab][pred or "missing"] += 1
    recall: dict[str, float | None] = {}
    counts: dict[str, int] = {}
    det_n = det_hit = 0
    low: dict[str, float | None] = {}
    for c in FAULTS:
        hi = [p for lab, sev, p in rows if lab == c and sev >= MODERATE]
        lo = [p for lab, sev, p in rows if lab == c and sev < MODERATE]
        counts[c] = len(hi)
        recall[c] = round(sum(p == c for p in hi) / len(hi), 3) if hi else None
        low[c] = round(sum(p == c for p in lo) / len(lo), 3) if lo else None
        det_n += len(hi)
        det_hit += sum(p not in (None, "normal", "missing", "error") for p in hi)
    healthy = [p for lab, _s, p in rows if lab == "normal"]
    fp = sum(p not in ("normal", None, "error") for p in healthy)
    missing_h = sum(p in (None, "error") for p in healthy)
    return {
        "recall_moderate": recall,
        "n_moderate": counts,
        "recall_low_severity": low,
        "detection_rate_moderate": round(det_hit / det_n, 3) if det_n else None,
        "healthy_fpr": round(fp / max(len(healthy) - missing_h, 1), 3),
        "n_healthy": len(healthy),
        "missing_healthy": missing_h,
        "errors_or_missing": sum(p in (None, "error") for _l, _s, p in rows),
        "confusion": {c: dict(conf[c]) for c in CLASSES if conf[c]},
    }


def write_records(path: Path, machines: list[Machine], samples: list[list[Sample]], sc: dict[str, Any]) -> None:
    """One JSON line per mode and scored sample: the machine, the truth and what inspect returned."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for mode, res in sc["results"].items():
            for mi, ss in enumerate(samples):
                for si, s in enumerate(ss[1:]):
                    out.write(json.dumps({"mode": mode, "asset": machines[mi].asset_id, "kind": machines[mi].kind,
                                          "asset_type": machines[mi].asset_type, "sample": s.sample_id,
                                          "label": s.label, "severity": s.severity, "variant": s.variant,
                                          "records": res.get((mi, si), {})}, default=str) + "\n")


def build_report(
    machines: list[Machine], samples: list[list[Sample]], sc: dict[str, Any], meta: dict[str, Any]
) -> dict[str, Any]:
    report: dict[str, Any] = dict(meta)
    report["severity_moderate"] = MODERATE
    report["fleet"] = [
        {
            "asset_id": m.asset_id, "kind": m.kind, "asset_type": m.asset_type, "poles": m.poles, "line_hz": m.line_hz,
            "power_kw": m.power_kw, "vfd": m.vfd, "speed_range": m.speed_range, "ratio": round(m.ratio, 3),
            "de_bearing": m.de_bearing, "nde_bearing": m.nde_bearing, "main_mode_hz": round(m.main_mode),
            "mic": {k: m.mic[k] for k in ("fs", "subtype", "channels", "duration", "target_dbfs")} | {"distance_m": round(m.mic["distance_m"], 2)},
            "camera": {k: m.camera[k] for k in ("w", "h", "encoding", "eps_set", "compression", "handheld", "moved", "declare_unit")},
            "plc": m.plc, "naming": m.naming, "assets_style": m.style, "vib_normal": round(m.vib_normal, 2),
        }
        for m in machines
    ]
    for mode, res in sc["results"].items():
        block: dict[str, Any] = {}
        rows: dict[str, list[tuple[str, float, str | None]]] = {mod: [] for mod in MODALITIES}
        kind_rows: dict[str, dict[str, list[tuple[str, float, str | None]]]] = {}
        withheld: dict[str, collections.Counter[str]] = {mod: collections.Counter() for mod in MODALITIES}
        speed_ok: dict[str, list[bool]] = collections.defaultdict(list)
        speed_machine: dict[str, dict[str, Any]] = {}
        extrap: collections.Counter[str] = collections.Counter()
        dialect_rows: dict[str, list[tuple[str, float, str | None]]] = collections.defaultdict(list)
        enc_rows: dict[str, list[tuple[str, float, str | None]]] = collections.defaultdict(list)
        fs_rows: dict[str, list[tuple[str, float, str | None]]] = collections.defaultdict(list)
        per_sample: list[dict[str, Any]] = []
        for mi, ss in enumerate(samples):
            m = machines[mi]
            for si, s in enumerate(ss[1:]):
                got = res.get((mi, si), {})
                preds: dict[str, str | None] = {}
                for mod in MODALITIES:
                    r = got.get(mod)
                    p = None if r is None else (r.get("class") if not r.get("error") else "error")
                    preds[mod] = p
                    rows[mod].append((s.label, s.severity, p))
                    kind_rows.setdefault(m.kind, {x: [] for x in MODALITIES})[mod].append((s.label, s.severity, p))
                    if r and r.get("withheld"):
                        wl = r["withheld"] if isinstance(r["withheld"], list) else [c for v in r["withheld"].values() for c in v]
                        for c in wl:
                            withheld[mod][c] += 1
                for mod in ("audio", "thermal", "plc"):
                    if (got.get(mod) or {}).get("extrapolating"):
                        extrap[mod] += 1
                ra = got.get("audio")
                if ra and ra.get("shaft_hz"):
                    ok = abs(float(ra["shaft_hz"]) - s.state["shaft_hz"]) / s.state["shaft_hz"] < 0.02
                    speed_ok[m.kind].append(ok)
                    speed_ok["all"].append(ok)
                    sm = speed_machine.setdefault(m.asset_id, {"kind": m.kind, "vfd": m.vfd, "read": 0, "wrong": 0,
                                                              "sources": collections.Counter(), "examples": []})
                    sm["read"] += 1
                    sm["sources"][str(ra.get("speed_source"))] += 1
                    if not ok:
                        sm["wrong"] += 1
                        if len(sm["examples"]) < 4:
                            sm["examples"].append([round(float(ra["shaft_hz"]), 2), round(s.state["shaft_hz"], 2)])
                dialect_rows[m.plc["dialect"]].append((s.label, s.severity, preds["plc"]))
                enc_rows[m.camera["encoding"]].append((s.label, s.severity, preds["thermal"]))
                fs_rows[str(m.mic["fs"])].append((s.label, s.severity, preds["audio"]))
                per_sample.append({
                    "asset": m.asset_id, "sample": s.sample_id, "label": s.label, "severity": s.severity, "variant": s.variant,
                    "pred": preds, "expert": {k: v[0] for k, v in s.truth.get("expert", {}).items()},
                    "audio_shaft_hz": ra.get("shaft_hz") if ra else None, "true_shaft_hz": round(s.state["shaft_hz"], 3),
                    "speed_source": ra.get("speed_source") if ra else None,
                })
        block["overall"] = {mod: metrics(rows[mod]) for mod in MODALITIES}
        block["by_kind"] = {k: {mod: metrics(v[mod]) for mod in MODALITIES} for k, v in kind_rows.items()}
        block["withheld"] = {mod: dict(c) for mod, c in withheld.items()}
        block["audio_speed_within_2pct"] = {k: round(sum(v) / len(v), 3) for k, v in speed_ok.items() if v}
        block["audio_speed_by_machine"] = {k: v | {"sources": dict(v["sources"])} for k, v in speed_machine.items()}
        block["extrapolating_records"] = dict(extrap)

        def short(rws: list[tuple[str, float, str | None]]) -> dict[str, Any]:
            mm = metrics(rws)
            return {"detection_rate_moderate": mm["detection_rate_moderate"], "healthy_fpr": mm["healthy_fpr"], "recall_moderate": mm["recall_moderate"]}

        block["plc_by_dialect"] = {k: short(v) for k, v in dialect_rows.items()}
        block["thermal_by_encoding"] = {k: short(v) for k, v in enc_rows.items()}
        block["audio_by_rate"] = {k: short(v) for k, v in fs_rows.items()}
        block["samples"] = per_sample
        report[mode] = block
    # expert reference
    ex_rows: dict[str, list[tuple[str, float, str | None]]] = {mod: [] for mod in MODALITIES}
    ex_kind: dict[str, dict[str, list[tuple[str, float, str | None]]]] = {}
    for mi, ss in enumerate(samples):
        for s in ss[1:]:
            for mod in MODALITIES:
                p = s.truth["expert"][mod][0]
                ex_rows[mod].append((s.label, s.severity, p))
                ex_kind.setdefault(machines[mi].kind, {x: [] for x in MODALITIES})[mod].append((s.label, s.severity, p))
    report["expert"] = {
        "overall": {mod: metrics(ex_rows[mod]) for mod in MODALITIES},
        "by_kind": {k: {mod: metrics(v[mod]) for mod in MODALITIES} for k, v in ex_kind.items()},
    }
    report["errors"] = sc["errors"]
    report["crashes"] = sc["crashes"]
    report["warnings"] = sc["warnings"]
    report["warning_families"] = sc["warning_families"]
    report["healthy_excluded"] = sc["healthy_excluded"]
    report["inspect_call_seconds"] = [round(x, 1) for x in sc["call_times"]]
    return report


def fmt_r(x: float | None) -> str:
    return "  -  " if x is None else f"{x:5.2f}"


def print_tables(report: dict[str, Any]) -> None:
    short = {"bearing_wear": "bear", "imbalance": "imbal", "cavitation": "cavit", "electrical_overheating": "elec", "cooling_failure": "cool"}
    for mode in ("plain", "healthy_ref", "expert"):
        if mode not in report:
            continue
        ov = report[mode]["overall"]
        title = {"plain": "linewatch inspect", "healthy_ref": "linewatch inspect + --healthy-*", "expert": "expert reference"}[mode]
        print(f"\n== {title}: recall at severity >= {MODERATE} / detection / healthy FPR ==")
        print(f"{'modality':9s} " + " ".join(f"{short[c]:>5s}" for c in FAULTS) + "   detect  h-FPR")
        for mod in MODALITIES:
            mm = ov[mod]
            print(f"{mod:9s} " + " ".join(fmt_r(mm["recall_moderate"][c]) for c in FAULTS)
                  + f"   {fmt_r(mm['detection_rate_moderate'])}  {fmt_r(mm['healthy_fpr'])}")
    if "plain" in report:
        print("\n== fused by machine kind (linewatch / expert): detection, healthy FPR ==")
        for kind, blk in report["plain"]["by_kind"].items():
            f = blk["fused"]
            e = report["expert"]["by_kind"][kind]["fused"]
            print(f"{kind:18s} det {fmt_r(f['detection_rate_moderate'])} FPR {fmt_r(f['healthy_fpr'])}   |  expert det {fmt_r(e['detection_rate_moderate'])} FPR {fmt_r(e['healthy_fpr'])}")
        errs = collections.Counter(
            (e["asset"], e["modality"], str(e["error"]).replace(str(e["file"]), "<file>")[:160]) for e in report["errors"]
        )
        print(f"\nerrors: {len(report['errors'])} records, crashes: {len(report['crashes'])}")
        for (aid, mod, msg), n in errs.most_common():
            print(f"  {n:4d} x {aid} {mod}: {msg}")
        for c in report["crashes"]:
            print(f"  crash: {c['message'][-300:]}")
        print("most frequent warnings (by kind):")
        for w in report["warning_families"]["plain"][:8]:
            print(f"  {w['count']:4d} x {w['family'][:150]}")


def repo_commit() -> str:
    """The checked-out commit of the repository scored (the tool may change between runs)."""
    try:
        out = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--machines", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--fleet", type=Path, default=None, help="fleet folder (default /tmp/blind/fleet<seed>)")
    ap.add_argument("--out", type=Path, default=Path("/tmp/blind/report.json"))
    ap.add_argument("--with-healthy", action="store_true", help="also score with the commissioning files as --healthy-*")
    ap.add_argument("--skip-generate", action="store_true", help="reuse the fleet folder")
    ap.add_argument("--print-report", type=Path, default=None, help="print the tables of a saved report and exit")
    ap.add_argument("--generate-only", action="store_true")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per inspect call")
    ap.add_argument("--registry", type=Path, default=None, help="score these models (default: the shipped registry)")
    ap.add_argument("--records", type=Path, default=None,
                    help="also write every scored sample's inspect records (per modality and fused: class, "
                         "probabilities, withheld, extrapolating) with its truth, one JSON line each, for offline study")
    a = ap.parse_args(argv)
    if a.print_report:
        print_tables(json.loads(a.print_report.read_text(encoding="utf-8")))
        return 0
    fleet_dir = (a.fleet or Path(f"/tmp/blind/fleet{a.seed}")).resolve()
    t0 = time.time()
    commit_at_start = repo_commit()
    if a.skip_generate:
        machines, samples = load_fleet(fleet_dir)
    else:
        print(f"generating {a.machines} machines into {fleet_dir}", flush=True)
        machines, samples = generate(fleet_dir, a.machines, a.seed)
    t_gen = time.time() - t0
    n_s = sum(len(ss) - 1 for ss in samples)
    print(f"fleet: {len(machines)} machines, {n_s} samples, {3 * n_s} files ({t_gen:.0f} s)", flush=True)
    if a.generate_only:
        return 0
    sc = score(machines, samples, fleet_dir, a.with_healthy, a.timeout, a.registry)
    t_all = time.time() - t0
    meta = {
        "command": " ".join([".venv/bin/python", "bench/bench_blind_fleet.py", *(argv if argv is not None else sys.argv[1:])]),
        "seed": a.seed, "machines": len(machines), "samples": n_s, "fleet_dir": str(fleet_dir),
        "generate_s": round(t_gen, 1), "total_s": round(t_all, 1), "registry": str(a.registry or "models/default"),
    }
    meta["linewatch_commit"] = repo_commit()
    if meta["linewatch_commit"] != commit_at_start:
        meta["linewatch_commit_at_start"] = commit_at_start
        print(f"WARNING: the repository moved from {commit_at_start[:10]} to {meta['linewatch_commit'][:10]} during this run")
    report = build_report(machines, samples, sc, meta)
    if a.records:
        write_records(a.records, machines, samples, sc)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(report, indent=1, default=str), encoding="utf-8")
    print_tables(report)
    print(f"\nreport: {a.out}  (total {t_all:.0f} s: generation {t_gen:.0f} s, scoring {t_all - t_gen:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
