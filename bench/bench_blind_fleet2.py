#!/usr/bin/env python3
"""Independent (blind) test-fleet generator and scorer for `linewatch inspect`.

Written only from linewatch's README, the `assets.json` section of docs/simulator.md, the
`linewatch inspect` section of docs/models.md and `linewatch inspect --help`; no linewatch code,
simulator, bench or test was read. Everything below comes from textbook machinery physics and
common condition-monitoring / instrument practice.

Usage
-----
  python bench_blind_fleet2.py generate --seed 7 [--machines 30] [--out /tmp/blind2/fleet7]
  python bench_blind_fleet2.py expert   --fleet /tmp/blind2/fleet7
  python bench_blind_fleet2.py score    --fleet /tmp/blind2/fleet7 [--with-healthy]
                                        [--out report.json] [--records records.jsonl]

Fleet (one plant, two sites)
----------------------------
* Site "EU" on 50 Hz mains (400 V), site "US" on 60 Hz (460 V, °F / psi / in/s historians).
* Machine kinds (asset_type written as a user would): end-suction, split-case, multistage
  (boiler feed), vertical inline, slurry and triplex plunger pumps, an axial-piston hydraulic
  power unit, centrifugal / axial / cooling-tower fans, roots and side-channel blowers, screw and
  piston air compressors, agitators, gear drives, belt / screw conveyors, a CNC motor spindle
  (liquid cooled), a grinder and an extruder drive. 2/4/6-pole induction motors, rated slip 1-4 %
  (fixed speed: shaft = sync*(1 - slip*load)), ~40 % on variable-speed drives (speed drawn
  per sample in the drive's range, supply f = f_shaft*p/2/(1-slip)).
* Bearings: real catalogue deep-groove (6204..6316), cylindrical roller NU3xx, spherical
  roller 222xx and spindle angular-contact 70xx geometry (n, ball d, pitch D, contact angle);
  truth fault orders BPFO = n/2(1-d/D cos a), BPFI = n/2(1+d/D cos a), BSF = D/2d(1-(d/D cos a)^2),
  FTF = 1/2(1-d/D cos a). assets.json gives them in the ways a user does: designation
  (`SKF 6308-2Z/C3`), `bearings: {de, nde}`, geometry, `bearing_orders`, designations outside
  the tool's list with or without geometry, or nothing.
* One machine is deliberately left out of assets.json (a new machine nobody entered yet).

Samples
-------
Per machine: 10 healthy samples, 1 healthy commissioning sample, and for each fault class the
machine can have 3 samples with severities in (0.1,0.45), (0.5,0.75), (0.75,1.0). Every machine
can have bearing_wear, imbalance, electrical_overheating and cooling_failure; machines whose type
contains "pump" also cavitation. A sample is one WAV + one TIFF + one PLC export of one state
(load fraction, shaft speed, ambient, time stamp).

Audio model (mic 0.2-1.5 m from the machine; fs 11.025/16/22.05/44.1/48 kHz; PCM16/24/32,
float, one u-law logger; mono or stereo; 5-8 s; level -34..-14 dBFS):
  plant background pink noise + a neighbouring machine's tones; shaft 1x/2x/3x (1x amplitude
  ~ speed^2); magnetic hum at 2x supply frequency and harmonics; vane/blade pass (pumps, fans),
  gear mesh with 1x sidebands (gearboxes), lobe pass (screw/roots), valve knocks (reciprocating);
  TEFC cooling-fan broadband + fan blade tone (~speed^2.5); flow noise; VFD PWM carrier
  (2/2.5/3/4/5/8 kHz, sidebands fc+-2fs, fc+-4fs) or random PWM (no tone) on drives.
  Faults:
  - bearing_wear: impulse train at BPFO (60 %), BPFI (30 %, amplitude-modulated by 1x load zone)
    or 2xBSF (10 %, modulated at FTF), 1 % period jitter, each impulse ringing a structural
    resonance (2.2-6.5 kHz, zeta 0.03-0.07, plus a second mode at 1.6x); amplitude
    A = 2.2*sev^1.3 (x machine coupling 0.7-1.3) relative to background noise; broadband HF rise
    (+sev^2 * 60 % HF noise) late.
  - imbalance: 1x amplitude x (1 + 4*sev) (+5 dB at 0.2, +9.5 dB at 0.5, +14 dB at 1.0).
  - cavitation: Poisson bubble-collapse clicks (rate 300 + 2500*sev /s, rate modulated at
    vane pass, Pareto amplitudes, >1.5 kHz), amplitude 0.9*sev^1.2; vane tone unsteady (random AM);
    low-frequency flow rumble x(1+sev).
  - cooling_failure: 40 % broken fan (fan noise x(1-0.7 sev), 1x +3 dB*sev), 60 % clogged cowl
    (fan noise unchanged); electrical_overheating: no acoustic change.
Thermal model (cameras 80x60 Lepton, 160x120, 320x240, 382x288 Optris, 384x288, 464x348, 640x480,
640x512; fixed mount or handheld with +-5 % shift / +-5 % scale per visit; rendered 2x supersampled
then averaged, PSF blur 0.6-1.0 px, NETD 30-80 mK, column pattern noise, Lepton dead pixels):
  side view (or upright for inline pumps), parts fan cowl / NDE hub / finned motor body / terminal
  box on top / DE hub / coupling guard / driven machine / base; background with a vertical gradient,
  sometimes a hot pipe, for two machines a steam pipe running behind the machine at terminal-box
  height. Motor surface rise at load L: R = R_rated*(0.35+0.65 L^2)*vent (vent = (n_nom/n)^0.5 for
  self-ventilated motors on a drive), axial gradient fan end -> DE +-17 % of R, edge darkening,
  fin stripes. Apparent temperature from Stefan-Boltzmann radiance with true surface emissivity
  (painted 0.90-0.96, bare stainless casings 0.3) and camera settings (emissivity 0.95/0.9/1.0,
  reflected temperature left at 20 C). Encodings: FLIR uint16 centikelvin (TLinear 0.01 K),
  FLIR uint16 0.04 K counts, Lepton uint16 decikelvin-ish 0.1 K, Optris uint16 (T*10+1000),
  float32 C, float32 K, float32 F; TIFF none/LZW/deflate/packbits.
  Faults:
  - bearing_wear: the faulty hub (DE 70 % / NDE 30 %) + 22*sev^1.2 K.
  - imbalance: both hubs + 3*sev K.
  - electrical_overheating: hot spot on the terminal box (Gaussian, sigma 18 % of box height)
    of 45*sev^1.2 K, box wall + 15 % of that.
  - cooling_failure: body rise x (1 + 0.9*sev), axial gradient x (1 - 1.4*sev) (reverses past
    sev 0.7), NDE hub + 4*sev K.
  - cavitation: none.
PLC model (historian exports: wide ISO, EU `;`/decimal comma (one in German), US wide (°F, psi,
in/s pk, 12 h clock), AVEVA long (DateTime,TagName,Value,Quality, deadband storage), Ignition long
(tagpath, epoch ms), PI-style long, PLC abbreviated names, JSON lines; 0.5-5 s periods, 4-8 min;
tags missing as real plants lack them: winding RTDs only on larger motors, vibration transmitters
on critical machines, pressure only where there is one, speed on drives (or only the setpoint)):
  current I = I_r*(0.35 + 0.65*L); winding = Ta + W_r*(0.3+0.7 (I/I_r)^2)*vent; bearing = Ta +
  B0*(0.6+0.4 s); vibration v0 * s^1.5; pressure p_nom*s^2*(1 - 0.1(L-0.8)); compressors cycle
  load/unload. Faults: bearing + 18*sev^1.2 K, vibration + 1.2 sev^2 mm/s; imbalance: 1x share
  (60 % of v) x (1+4 sev); cavitation: pressure -25 %*sev, fluctuation 2-8 %*sev, current -5 %*sev,
  vibration x(1+0.8 sev) with fluctuation; cooling: winding rise x(1+0.8 sev), bearing +4 sev;
  electrical: winding + 4 sev, current + 2 % sev.

Expert (knows truth speed, bearing orders, part masks, tag availability, and the commissioning
sample; set the fault levels against it only): audio envelope spectrum (2-7 kHz band) at the
truth bearing orders vs commissioning, 1x level vs commissioning (speed^2 normalised),
HF band level / kurtosis vs commissioning; thermal region rises vs commissioning (load normalised);
PLC medians vs commissioning. Thresholds were set on the healthy samples of the same fleet.

Changes after first seeing the tool's results: none (see CHANGELOG at the end of this docstring).
CHANGELOG (scorer only; the generator is unchanged since the first look at the tool's output):
  - the scorer retries a call that exits 2 because one --healthy-* reference is unreadable, without
    that reference (the refusal is recorded as an error), so that the other machines are scored.
"""
import argparse
import collections
import datetime as dt
import json
import math
import os
import re
import subprocess
import time

import numpy as np
import soundfile as sf
import tifffile
from scipy import signal as sps

CLASSES = ["normal", "bearing_wear", "imbalance", "cavitation", "electrical_overheating", "cooling_failure"]
SEV_BINS = [(0.1, 0.45), (0.5, 0.75), (0.75, 1.0)]
N_HEALTHY = 10
LW = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ".venv", "bin", "linewatch")

# (n elements, element diameter mm, pitch diameter mm, contact angle deg)
BEARINGS = {
    "6204": (8, 7.938, 33.5, 0), "6205": (9, 7.938, 39.0, 0), "6206": (9, 9.525, 46.0, 0),
    "6207": (9, 11.112, 53.5, 0), "6208": (9, 12.7, 60.0, 0), "6209": (10, 12.7, 65.0, 0),
    "6210": (10, 12.7, 70.0, 0), "6305": (8, 10.319, 44.5, 0), "6306": (8, 11.509, 52.5, 0),
    "6307": (8, 13.494, 58.5, 0), "6308": (8, 15.081, 65.0, 0), "6309": (8, 17.462, 72.5, 0),
    "6310": (8, 19.05, 80.0, 0), "6311": (8, 20.638, 87.5, 0), "6312": (8, 22.225, 95.0, 0),
    "6313": (8, 23.812, 102.5, 0), "6314": (8, 25.4, 110.0, 0), "6316": (8, 28.575, 125.0, 0),
    "NU 314": (13, 25.0, 110.0, 0), "NU 316": (13, 28.0, 125.0, 0),
    "22216": (17, 15.5, 110.0, 10), "22218": (17, 18.0, 125.0, 10),
    "7014": (20, 11.1, 92.5, 15), "7012": (19, 9.5, 77.5, 15),
}
IN_TOOL_LIST = {f"62{i:02d}" for i in range(2, 11)} | {f"63{i:02d}" for i in range(5, 17)}


def orders_of(b):
    n, d, D, a = b
    r = d / D * math.cos(math.radians(a))
    return dict(bpfo=n / 2 * (1 - r), bpfi=n / 2 * (1 + r), bsf=D / (2 * d) * (1 - r * r), ftf=0.5 * (1 - r))


KINDS = [
    dict(key="es_pump", types=["Centrifugal pump, end suction", "End-suction process pump", "ANSI process pump"],
         pump=True, vanes=(5, 7), p=(3, 9), drv=("fluid", 12, 85), poles=(2, 4), vfd=0.4, kw=(5.5, 90)),
    dict(key="split_case", types=["Split-case pump", "Horizontal split case pump"], pump=True, vanes=(6, 7),
         p=(3, 8), drv=("fluid", 8, 35), poles=(4, 6), vfd=0.3, kw=(55, 315)),
    dict(key="multistage", types=["Multistage boiler feed pump", "Multistage centrifugal pump"], pump=True,
         vanes=(7, 7), p=(15, 45), drv=("fluid", 60, 105), poles=(2,), vfd=0.5, kw=(30, 200)),
    dict(key="inline", types=["Vertical inline pump", "Inline circulator pump"], pump=True, vertical=True,
         vanes=(5, 6), p=(2, 5), drv=("fluid", 6, 80), poles=(2, 4), vfd=0.6, kw=(2.2, 30)),
    dict(key="slurry", types=["Slurry pump", "Horizontal slurry pump (rubber lined)"], pump=True, vanes=(4, 5),
         p=(2, 6), drv=("fluid", 15, 45), poles=(4, 6), vfd=0.6, kw=(30, 160)),
    dict(key="plunger", types=["Triplex plunger pump", "Reciprocating plunger pump"], pump=True, recip=True,
         vanes=(3, 3), p=(60, 250), drv=("fluid", 15, 40), poles=(4, 6), vfd=0.2, gear=True, kw=(15, 110)),
    dict(key="hpu", types=["Hydraulic power unit (axial piston pump)"], pump=True, vanes=(9, 9), p=(120, 250),
         drv=("fluid", 40, 60), poles=(4,), vfd=0.0, kw=(11, 75)),
    dict(key="cf_fan", types=["Centrifugal fan", "Induced draft fan", "Process air fan"], vanes=(8, 12),
         drv=("rise", 0, 25), poles=(4, 6), vfd=0.6, kw=(7.5, 250)),
    dict(key="ax_fan", types=["Axial fan", "Exhaust fan"], vanes=(4, 9), drv=("rise", 0, 10), poles=(4, 6),
         vfd=0.5, kw=(3, 75)),
    dict(key="ct_fan", types=["Cooling tower fan (gearbox drive)"], vanes=(4, 8), gear=True, outdoor=True,
         drv=("rise", 5, 25), poles=(4, 6), vfd=0.5, kw=(15, 110)),
    dict(key="roots", types=["Roots blower", "Rotary lobe blower"], vanes=(6, 6), p=(0.3, 1.0),
         drv=("abs", 60, 120), poles=(2, 4), vfd=0.5, kw=(7.5, 110)),
    dict(key="side_channel", types=["Side channel blower"], vanes=(36, 44), p=(0.1, 0.5), drv=("rise", 10, 35),
         poles=(2,), vfd=0.3, kw=(1.5, 15)),
    dict(key="screw_comp", types=["Rotary screw compressor", "Oil-injected screw compressor"], vanes=(4, 4),
         p=(7, 10), drv=("abs", 70, 95), poles=(2, 4), vfd=0.4, kw=(22, 250), cyclic=True),
    dict(key="piston_comp", types=["Piston air compressor", "Reciprocating compressor"], recip=True,
         vanes=(2, 2), p=(8, 12), drv=("abs", 55, 90), poles=(4, 6), vfd=0.0, kw=(5.5, 45), cyclic=True),
    dict(key="mixer", types=["Agitator with helical gearbox", "Mixer drive"], vanes=(3, 4), gear=True,
         drv=("rise", 20, 45), poles=(4, 6), vfd=0.4, kw=(4, 75)),
    dict(key="gear_drive", types=["Gearbox drive", "Bevel-helical gear unit"], vanes=(1, 1), gear=True,
         drv=("rise", 25, 50), poles=(4,), vfd=0.3, kw=(11, 160)),
    dict(key="conveyor", types=["Belt conveyor drive", "Conveyor head drive"], vanes=(1, 1), gear=True,
         drv=("rise", 20, 40), poles=(4, 6), vfd=0.5, kw=(7.5, 132)),
    dict(key="screw_conv", types=["Screw conveyor"], vanes=(1, 1), gear=True, drv=("rise", 15, 35),
         poles=(4,), vfd=0.2, kw=(3, 22)),
    dict(key="spindle", types=["CNC machining centre spindle", "Motor spindle"], vanes=(1, 1), spindle=True,
         drv=("rise", 4, 12), poles=(2, 4), vfd=1.0, kw=(11, 40)),
    dict(key="grinder", types=["Surface grinder", "Grinding machine"], vanes=(1, 1), drv=("rise", 5, 15),
         poles=(2,), vfd=0.3, kw=(4, 30)),
    dict(key="extruder", types=["Extruder main drive"], vanes=(1, 1), gear=True, drv=("abs", 180, 230),
         poles=(4,), vfd=1.0, kw=(30, 200)),
]
PREFIX = {"es_pump": "P", "split_case": "P", "multistage": "BFP", "inline": "P", "slurry": "SP",
          "plunger": "PP", "hpu": "HPU", "cf_fan": "FAN", "ax_fan": "EF", "ct_fan": "CT", "roots": "BL",
          "side_channel": "SCB", "screw_comp": "CMP", "piston_comp": "AC", "mixer": "AG", "gear_drive": "GD",
          "conveyor": "CV", "screw_conv": "SC", "spindle": "SP-CNC", "grinder": "GR", "extruder": "EXT"}

CAMERAS = [  # name, w, h, encoding
    ("FLIR Lepton 3.5", 160, 120, "lepton"), ("FLIR Lepton 3", 80, 60, "lepton"),
    ("FLIR E8", 320, 240, "flir_ck"), ("FLIR A320", 320, 240, "flir_ck"),
    ("FLIR E86", 464, 348, "float_c"), ("FLIR A655sc", 640, 480, "flir_ck"),
    ("FLIR A700", 640, 480, "flir_04"), ("Optris PI 400i", 382, 288, "optris"),
    ("Optris PI 450i", 382, 288, "optris"), ("InfraTec VarioCAM", 640, 480, "float_k"),
    ("Testo 883", 320, 240, "float_c"), ("Fluke Ti480", 640, 480, "float_c"),
    ("FLIR T540", 464, 348, "float_f"), ("Seek Mosaic", 320, 240, "flir_ck"),
    ("Workswell WIC", 640, 512, "float_k"),
]


def u(rng, a, b):
    return float(rng.uniform(a, b))


# ---------------------------------------------------------------------------------------------
# Fleet design
# ---------------------------------------------------------------------------------------------
def design_fleet(seed, n_machines):
    rng = np.random.default_rng(seed)
    order = list(range(len(KINDS)))
    rng.shuffle(order)
    picks = (order * 3)[:n_machines]
    machines = []
    used_ids = set()
    hist_styles_eu = ["wide_iso", "wide_eu", "aveva_long", "ignition_long", "plc_abbrev", "jsonl", "wide_de",
                      "pi_long"]
    hist_styles_us = ["us_wide", "ignition_long", "aveva_long", "plc_abbrev", "pi_long"]
    steam_left = 2
    for i, ki in enumerate(picks):
        k = KINDS[ki]
        site = "US" if rng.random() < 0.4 else "EU"
        line_hz = 60.0 if site == "US" else 50.0
        while True:
            num = int(rng.integers(100, 999))
            aid = f"{PREFIX[k['key']]}-{num}" if rng.random() < 0.7 else f"{PREFIX[k['key']]}{num}"
            if aid not in used_ids:
                used_ids.add(aid)
                break
        kw = float(np.exp(rng.uniform(np.log(k["kw"][0]), np.log(k["kw"][1]))))
        poles = int(rng.choice(k["poles"]))
        vfd = bool(rng.random() < k["vfd"])
        slip = u(rng, 0.012, 0.04) if kw < 30 else u(rng, 0.006, 0.02)
        if k.get("spindle"):
            nominal_rpm = float(rng.choice([6000, 8000, 10000, 12000]))
            supply = nominal_rpm / 60 * poles / 2 / (1 - 0.01)
            slip = 0.01
        else:
            supply = line_hz
            nominal_rpm = 120 * line_hz / poles * (1 - slip)
        volts = 460.0 if site == "US" else 400.0
        eff, pf = 0.85 + 0.1 * min(1, kw / 100), 0.8 + 0.07 * min(1, kw / 100)
        i_rated = kw * 1000 / (math.sqrt(3) * volts * eff * pf)
        # bearing
        if k.get("spindle"):
            bdes = str(rng.choice(["7014", "7012"]))
        elif kw < 7:
            bdes = str(rng.choice(["6204", "6205", "6206", "6305"]))
        elif kw < 30:
            bdes = str(rng.choice(["6207", "6208", "6209", "6306", "6307", "6308"]))
        elif kw < 110:
            bdes = str(rng.choice(["6310", "6311", "6312", "6313", "NU 314", "6210"]))
        else:
            bdes = str(rng.choice(["6314", "6316", "NU 316", "22216", "22218"]))
        geo = BEARINGS[bdes]
        cooling = "water" if k.get("spindle") else str(rng.choice(["IC411"] * 6 + ["IC416"]))
        self_vent = cooling == "IC411"
        cam = CAMERAS[int(rng.integers(len(CAMERAS)))]
        if site == "US" and cam[3] == "float_c" and rng.random() < 0.5:
            cam = (cam[0], cam[1], cam[2], "float_f")
        fs = int(rng.choice([16000, 16000, 22050, 44100, 48000, 48000, 44100, 16000]))
        subtype = str(rng.choice(["PCM_16", "PCM_16", "PCM_24", "FLOAT", "PCM_32"]))
        if i == 5:
            fs, subtype = 11025, "PCM_16"       # a handheld logger below 16 kHz
        if i == 9:
            fs, subtype = 8000, "ULAW"          # a telemetry logger (u-law)
        hist = str(rng.choice(hist_styles_us if site == "US" else hist_styles_eu))
        vib_normal = u(rng, 0.6, 2.8)
        if k["key"] == "piston_comp":
            vib_normal = u(rng, 4.0, 7.0)
        if k["key"] == "plunger":
            vib_normal = u(rng, 2.5, 5.0)
        # tags available
        tags = {"current": True, "run": rng.random() < 0.8,
                "winding": kw >= 75 or rng.random() < 0.35 or k.get("spindle", False),
                "bearing": kw >= 30 or rng.random() < 0.4,
                "vib": rng.random() < 0.65,
                "pressure": "p" in k and rng.random() < 0.9,
                "speed": vfd and rng.random() < 0.75,
                "setpoint": vfd}
        if k.get("spindle"):
            rng_lo = 0.3
        else:
            rng_lo = u(rng, 0.5, 0.75)
        m = dict(
            asset_id=aid, kind=k["key"], asset_type=str(rng.choice(k["types"])), site=site, line_hz=line_hz,
            kw=kw, poles=poles, vfd=vfd, slip=slip, nominal_rpm=nominal_rpm, supply_nom=supply, volts=volts,
            i_rated=i_rated, bearing=bdes, geo=geo, orders=orders_of(geo), cooling=cooling, self_vent=self_vent,
            pump=bool(k.get("pump")), recip=bool(k.get("recip")), gear=bool(k.get("gear")),
            vertical=bool(k.get("vertical")), cyclic=bool(k.get("cyclic")), spindle=bool(k.get("spindle")),
            vanes=int(rng.integers(k["vanes"][0], k["vanes"][1] + 1)), speed_lo=rng_lo, speed_hi=1.0,
            p_nom=(u(rng, *k["p"]) if "p" in k else None), drv=k["drv"],
            drv_val=u(rng, k["drv"][1], k["drv"][2]), outdoor=bool(k.get("outdoor")),
            camera=dict(name=cam[0], w=cam[1], h=cam[2], enc=cam[3], handheld=bool(rng.random() < 0.5),
                        eps_set=float(rng.choice([0.95, 0.95, 0.9, 1.0])), blur=u(rng, 0.6, 1.0),
                        netd=u(rng, 0.03, 0.08), comp=str(rng.choice(["none", "zlib", "lzw", "packbits"])),
                        frac=u(rng, 0.55, 0.85), fan_left=bool(rng.random() < 0.5),
                        cy=u(rng, 0.45, 0.6), cx=u(rng, 0.45, 0.55), steam=False,
                        hot_pipe=bool(rng.random() < 0.3), bare_driven=bool(rng.random() < 0.2)),
            mic=dict(fs=fs, subtype=subtype, channels=int(rng.choice([1, 1, 1, 2])), dist=u(rng, 0.2, 1.5),
                     level_db=u(rng, -34, -14), dur=u(rng, 5.0, 8.0)),
            plc=dict(style=hist, period=float(rng.choice([0.5, 1, 1, 2, 5])), minutes=u(rng, 4, 8), tags=tags),
            ta_base=(u(rng, 5, 30) if k.get("outdoor") else u(rng, 18, 32)),
            load_mean=u(rng, 0.6, 0.9), rise_rated=u(rng, 22, 50), wdg_rise=u(rng, 40, 95),
            brg0=u(rng, 8, 25), vib0=vib_normal,
            a1=u(rng, 0.08, 0.25), a2=u(rng, 0.03, 0.12), hum=u(rng, 0.05, 0.3), tone=u(rng, 0.05, 0.4),
            fan_noise=u(rng, 0.05, 0.25), fan_blades=int(rng.integers(7, 13)),
            res_hz=u(rng, 2200, 6500), zeta=u(rng, 0.03, 0.07), coupling=u(rng, 0.7, 1.3),
            carrier=(float(rng.choice([2000, 2500, 3000, 4000, 4000, 5000, 8000, 0])) if (vfd) else 0.0),
            neighbour_hz=u(rng, 14, 60), gear_teeth=int(rng.integers(17, 41)),
            naming=str(rng.choice(["lz", "lz", "lz", "word", "folder"])),
            in_assets=True,
        )
        if m["camera"]["enc"] == "lepton" and rng.random() < 0.5:
            m["camera"]["enc"] = "lepton_ck"
        if steam_left > 0 and rng.random() < 0.15:
            m["camera"]["steam"] = True
            steam_left -= 1
        if m["carrier"] and m["carrier"] > 0.42 * fs:
            m["carrier"] = 2000.0 if fs >= 11025 else 0.0
        machines.append(m)
    # one machine missing from assets.json
    machines[-1]["in_assets"] = False
    machines[-1]["naming"] = "lz"
    return machines


# ---------------------------------------------------------------------------------------------
# Per-sample state
# ---------------------------------------------------------------------------------------------
def draw_state(m, rng):
    load = float(np.clip(m["load_mean"] + rng.normal(0, 0.1), 0.35, 1.0))
    if m["vfd"]:
        s = u(rng, m["speed_lo"], m["speed_hi"])
        if m["pump"] or m["kind"] in ("cf_fan", "ax_fan", "ct_fan"):
            load = float(np.clip(load * s ** 3 / 0.9, 0.1, 1.0))
        f_r = m["nominal_rpm"] / 60 * s
        supply = f_r * m["poles"] / 2 / (1 - m["slip"] * load)
    else:
        sync = 120 * m["line_hz"] / m["poles"] / 60
        f_r = sync * (1 - m["slip"] * load / 1.0 * 1.0)
        s = f_r / (m["nominal_rpm"] / 60)
        supply = m["line_hz"]
    ta = m["ta_base"] + rng.normal(0, 2.0)
    return dict(load=load, s=float(s), f_r=float(f_r), supply=float(supply), ta=float(ta))


# ---------------------------------------------------------------------------------------------
# Audio
# ---------------------------------------------------------------------------------------------
def pink(n, rng, fs, fmin=20.0):
    X = np.fft.rfft(rng.standard_normal(n))
    f = np.fft.rfftfreq(n, 1 / fs)
    g = 1 / np.sqrt(np.maximum(f, fmin))
    g[f < 5] = 0
    y = np.fft.irfft(X * g, n)
    return y / (y.std() + 1e-12)


def bandnoise(n, rng, fs, lo, hi):
    hi = min(hi, 0.45 * fs)
    if lo >= hi:
        return np.zeros(n)
    sos = sps.butter(4, [lo, hi], btype="band", fs=fs, output="sos")
    y = sps.sosfilt(sos, rng.standard_normal(n))
    return y / (y.std() + 1e-12)


def ring_train(times, amps, fn, zeta, fs, n):
    if fn > 0.45 * fs or len(times) == 0:
        return np.zeros(n)
    tau = 1 / (2 * np.pi * fn * zeta)
    L = int(6 * tau * fs) + 1
    th = np.arange(L) / fs
    h = np.exp(-th / tau) * np.sin(2 * np.pi * fn * th)
    s = np.zeros(n)
    idx = (np.asarray(times) * fs).astype(int)
    ok = idx < n
    np.add.at(s, idx[ok], np.asarray(amps)[ok])
    return sps.fftconvolve(s, h)[:n]


def event_times(rate, dur, rng, jitter=0.01):
    if rate <= 0:
        return np.zeros(0)
    nper = int(dur * rate) + 3
    per = (1 / rate) * (1 + jitter * rng.standard_normal(nper))
    t = rng.uniform(0, 1 / rate) + np.cumsum(per)
    return t[t < dur]


def synth_audio(m, st, fault, sev, rng, extra):
    fs, dur = m["mic"]["fs"], m["mic"]["dur"]
    n = int(fs * dur)
    t = np.arange(n) / fs
    f_r = st["f_r"]
    wob = sps.sosfiltfilt(sps.butter(2, 2.0, fs=fs, output="sos"), rng.standard_normal(n))
    wob = wob / (wob.std() + 1e-12) * 0.0015
    ph = 2 * np.pi * np.cumsum(f_r * (1 + wob)) / fs
    prox = 1.0 / max(m["mic"]["dist"], 0.2) ** 0.7
    s = st["s"]
    mach = np.zeros(n)
    imb = 1.0
    if fault == "imbalance":
        imb = 1 + 4 * sev
    if fault == "cooling_failure" and extra.get("cool_mode") == "fan_broken":
        imb = 10 ** (3 * sev / 20)
    a1 = m["a1"] * s ** 2 * imb
    mach += a1 * np.sin(ph + rng.uniform(0, 6.3)) + m["a2"] * s ** 2 * np.sin(2 * ph + rng.uniform(0, 6.3))
    mach += 0.4 * m["a2"] * s ** 2 * np.sin(3 * ph + rng.uniform(0, 6.3))
    fsup = st["supply"]
    for k, a in ((2, 1.0), (4, 0.35), (6, 0.15)):
        if k * fsup < 0.45 * fs:
            mach += m["hum"] * a * (0.6 + 0.4 * st["load"]) * np.sin(2 * np.pi * k * fsup * t + rng.uniform(0, 6.3))
    # machine-specific tone
    Z = m["vanes"]
    tone_am = 1.0
    if fault == "cavitation":
        am = sps.sosfiltfilt(sps.butter(2, 8.0, fs=fs, output="sos"), rng.standard_normal(n))
        tone_am = 1 + 0.6 * sev * am / (am.std() + 1e-12)
    if m["kind"] in ("gear_drive", "conveyor", "screw_conv", "mixer", "extruder", "ct_fan", "plunger"):
        zm = m["gear_teeth"]
        for k, a in ((1, 1.0), (2, 0.4)):
            if k * zm * f_r < 0.45 * fs:
                mesh = np.sin(k * zm * ph) * (1 + 0.25 * np.sin(ph))
                mach += m["tone"] * a * s ** 1.5 * mesh
        mach += 0.5 * m["a1"] * np.sin(ph / 3.7)  # output shaft
    if m["recip"]:
        kt = event_times(f_r * Z, dur, rng, 0.003)
        mach += ring_train(kt, 1.2 * m["tone"] * (0.7 + 0.6 * rng.random(len(kt))), min(1800.0, 0.4 * fs), 0.08, fs, n)
        mach += m["tone"] * np.sin(Z * ph)
    elif Z > 1:
        for k, a in ((1, 1.0), (2, 0.35)):
            if k * Z * f_r < 0.45 * fs:
                mach += m["tone"] * a * s ** 2 * tone_am * np.sin(k * Z * ph + rng.uniform(0, 6.3))
    # motor cooling fan (TEFC) and flow noise
    fanfac = 1.0
    if fault == "cooling_failure" and extra.get("cool_mode") == "fan_broken":
        fanfac = 1 - 0.7 * sev
    if m["self_vent"]:
        mach += m["fan_noise"] * fanfac * s ** 2.5 * bandnoise(n, rng, fs, 600, 4000)
        fb = m["fan_blades"] * f_r
        if fb < 0.45 * fs:
            mach += 0.5 * m["fan_noise"] * fanfac * s ** 2.5 * np.sin(m["fan_blades"] * ph)
    flow = 0.3 * s ** 2.5 * pink(n, rng, fs)
    if fault == "cavitation":
        flow += 0.3 * sev * bandnoise(n, rng, fs, 10, 200)
    mach += flow + 0.06 * s ** 2 * bandnoise(n, rng, fs, 1000, 7500)
    # faults
    if fault == "bearing_wear":
        o = m["orders"]
        bt = extra["brg_type"]
        A = 2.2 * sev ** 1.3 * m["coupling"]
        if bt == "outer":
            tt = event_times(o["bpfo"] * f_r, dur, rng)
            aa = A * (1 + 0.1 * rng.standard_normal(len(tt)))
        elif bt == "inner":
            tt = event_times(o["bpfi"] * f_r, dur, rng)
            aa = A * (0.25 + 0.75 * (0.5 + 0.5 * np.cos(2 * np.pi * f_r * tt))) * 1.3
        else:
            tt = event_times(2 * o["bsf"] * f_r, dur, rng)
            aa = A * (0.3 + 0.7 * (0.5 + 0.5 * np.cos(2 * np.pi * o["ftf"] * f_r * tt))) * 1.3
        fn = min(m["res_hz"], 0.4 * fs)
        mach += ring_train(tt, aa, fn, m["zeta"], fs, n)
        mach += ring_train(tt, 0.5 * aa, 1.6 * fn, m["zeta"], fs, n)
        mach += 0.6 * sev ** 2 * 0.2 * bandnoise(n, rng, fs, 2000, 8000)
    if fault == "cavitation":
        rate = 300 + 2500 * sev
        vt = np.cumsum(rng.exponential(1 / rate, int(rate * dur * 1.5) + 10))
        vt = vt[vt < dur]
        keep = rng.random(len(vt)) < 0.5 * (1 + np.cos(Z * 2 * np.pi * f_r * vt))
        vt = vt[keep]
        clicks = np.zeros(n)
        np.add.at(clicks, (vt * fs).astype(int), (rng.pareto(2.5, len(vt)) + 0.3) * rng.choice([-1, 1], len(vt)))
        hp = sps.butter(2, min(1500, 0.3 * fs), btype="high", fs=fs, output="sos")
        clicks = sps.sosfilt(hp, clicks)
        clicks /= (np.sqrt(np.mean(clicks ** 2)) + 1e-12)
        mach += 0.9 * sev ** 1.2 * clicks * (0.6 + 0.4 * s)
    # drive carrier
    if m["vfd"]:
        if m["carrier"] > 0:
            fc = m["carrier"]
            car = 0.04 * np.sin(2 * np.pi * fc * t)
            for k, a in ((2, 0.6), (4, 0.25)):
                for sg in (-1, 1):
                    car += 0.04 * a * np.sin(2 * np.pi * (fc + sg * k * fsup) * t + rng.uniform(0, 6.3))
            mach += car
        else:
            mach += 0.02 * bandnoise(n, rng, fs, 2000, 6000)  # random PWM: spread
    bg = 0.25 * pink(n, rng, fs) + 0.03 * np.sin(2 * np.pi * m["neighbour_hz"] * t) \
        + 0.02 * np.sin(2 * np.pi * 2 * m["neighbour_hz"] * t)
    x = prox * mach + bg
    out = [x]
    if m["mic"]["channels"] == 2:
        d = int(0.0007 * fs)
        x2 = np.roll(prox * 0.8 * mach, d) + 0.25 * pink(n, rng, fs)
        out.append(x2)
    return np.stack(out, axis=1), fs


def write_audio(path, y, fs, m, gain):
    y = y * gain
    y = np.clip(y, -0.999, 0.999)
    sf.write(path, y if y.shape[1] > 1 else y[:, 0], fs, subtype=m["mic"]["subtype"])


# ---------------------------------------------------------------------------------------------
# Thermal
# ---------------------------------------------------------------------------------------------
def layout(m, jit):
    """Part boxes in frame pixels (x0, y0, x1, y1) as floats; jit = (dx, dy, scale) fraction."""
    cam = m["camera"]
    W, H = cam["w"], cam["h"]
    vertical = m["vertical"]
    Lm = cam["frac"] * (H if vertical else W) * jit[2]
    if vertical:
        Lm = min(Lm, 0.9 * H)
    # along-axis u (0 = fan end), across v (0 = shaft line), in units of Lm
    parts = {"cowl": (0.0, 0.12, -0.095, 0.095), "nde_bearing": (0.11, 0.155, -0.05, 0.05),
             "motor_body": (0.15, 0.52, -0.105, 0.105), "terminal_box": (0.27, 0.39, -0.175, -0.105),
             "de_bearing": (0.52, 0.57, -0.05, 0.05), "coupling": (0.57, 0.66, -0.04, 0.04)}
    dk = m["kind"]
    dh = {"es_pump": 0.14, "split_case": 0.16, "multistage": 0.11, "inline": 0.14, "slurry": 0.17,
          "plunger": 0.15, "hpu": 0.09, "cf_fan": 0.3, "ax_fan": 0.2, "ct_fan": 0.13, "roots": 0.14,
          "side_channel": 0.18, "screw_comp": 0.15, "piston_comp": 0.2, "mixer": 0.14, "gear_drive": 0.15,
          "conveyor": 0.13, "screw_conv": 0.08, "spindle": 0.12, "grinder": 0.12, "extruder": 0.1}[dk]
    parts["driven"] = (0.66, 1.0, -dh, dh)
    parts["base"] = (0.0, 1.0, 0.11 if dh < 0.11 else dh, (0.11 if dh < 0.11 else dh) + 0.035)
    cx = (cam["cx"] + jit[0]) * W
    cy = (cam["cy"] + jit[1]) * H
    boxes = {}
    fan_first = cam["fan_left"]
    for name, (u0, u1, v0, v1) in parts.items():
        if not fan_first:
            u0, u1 = 1 - u1, 1 - u0
        if vertical:  # fan at top, terminal box to the right side
            y0, y1 = cy + (u0 - 0.5) * Lm, cy + (u1 - 0.5) * Lm
            x0, x1 = cx - v1 * Lm, cx - v0 * Lm
            if not fan_first:  # vertical machines always have fan on top
                y0, y1 = cy + ((1 - u1) - 0.5) * Lm, cy + ((1 - u0) - 0.5) * Lm
        else:
            x0, x1 = cx + (u0 - 0.5) * Lm, cx + (u1 - 0.5) * Lm
            y0, y1 = cy + v0 * Lm, cy + v1 * Lm
        boxes[name] = (x0, y0, x1, y1)
    return boxes


def fan_side(m):
    if m["vertical"]:
        return "top"
    return "left" if m["camera"]["fan_left"] else "right"


def render_frame(m, st, fault, sev, rng, extra, jit):
    cam = m["camera"]
    W, H = cam["w"], cam["h"]
    ss = 2
    Ws, Hs = W * ss, H * ss
    ta = st["ta"]
    yy, xx = np.mgrid[0:Hs, 0:Ws].astype(np.float32) / ss
    T = ta + 0.8 * (0.5 - yy / H) + 0.3 * np.sin(xx / W * 3 + 1.3)
    eps = np.full((Hs, Ws), 0.92, np.float32)
    floor = yy > 0.85 * H
    T[floor] -= 1.0
    if cam["hot_pipe"]:
        py = (0.12 + 0.1 * (m["neighbour_hz"] % 1)) * H
        band = np.abs(yy - py) < 0.02 * H + 0.7
        T[band] = ta + 35 + 40 * (m["neighbour_hz"] % 1)
    boxes = layout(m, jit)
    load = st["load"]
    vent = (1 / max(st["s"], 0.3)) ** 0.5 if (m["vfd"] and m["self_vent"]) else 1.0
    rise = m["rise_rated"] * (0.35 + 0.65 * load ** 2) * vent
    grad = 0.35
    hub_extra = {"de_bearing": 0.0, "nde_bearing": 0.0}
    tb_spot = 0.0
    if fault == "cooling_failure":
        rise *= (1 + 0.9 * sev)
        grad *= (1 - 1.4 * sev)
        hub_extra["nde_bearing"] += 4 * sev
    if fault == "bearing_wear":
        hub_extra[extra["brg_side"]] += 22 * sev ** 1.2
    if fault == "imbalance":
        hub_extra["de_bearing"] += 3 * sev
        hub_extra["nde_bearing"] += 3 * sev
    if fault == "electrical_overheating":
        tb_spot = 45 * sev ** 1.2
    if cam["steam"]:
        tb = boxes["terminal_box"]
        py = (tb[1] + tb[3]) / 2
        band = np.abs(yy - py) < max(0.012 * H, 0.8)
        T[band] = 140.0 + (m["neighbour_hz"] % 10)
    fl = fan_side(m)

    def rect(b):
        x0, y0, x1, y1 = b
        return (xx >= x0) & (xx < x1) & (yy >= y0) & (yy < y1)

    def axial(b):  # 0 at fan end, 1 at the other end
        x0, y0, x1, y1 = b
        if fl == "left":
            return np.clip((xx - x0) / (x1 - x0), 0, 1)
        if fl == "right":
            return np.clip((x1 - xx) / (x1 - x0), 0, 1)
        return np.clip((yy - y0) / (y1 - y0), 0, 1)

    def across(b):
        x0, y0, x1, y1 = b
        if fl == "top":
            return np.clip(2 * (xx - x0) / (x1 - x0) - 1, -1, 1)
        return np.clip(2 * (yy - y0) / (y1 - y0) - 1, -1, 1)

    # base
    r = rect(boxes["base"])
    T[r] = ta + 1.0
    eps[r] = 0.9
    # driven machine
    kind, a = m["drv"][0], m["drv_val"]
    dtemp = {"fluid": a, "rise": ta + a * (0.5 + 0.5 * load), "abs": a}[kind]
    r = rect(boxes["driven"])
    v = across(boxes["driven"])
    T[r] = (ta + (dtemp - ta) * (1 - 0.15 * v ** 4))[r]
    eps[r] = 0.3 if cam["bare_driven"] else 0.93
    r = rect(boxes["coupling"])
    T[r] = ta + 2 + 0.1 * rise
    eps[r] = 0.94
    for hub in ("nde_bearing", "de_bearing"):
        r = rect(boxes[hub])
        T[r] = ta + (0.55 if hub == "nde_bearing" else 0.7) * rise + 3 + hub_extra[hub]
        eps[r] = 0.9
    bb = boxes["motor_body"]
    r = rect(bb)
    ua, va = axial(bb), across(bb)
    fins = 0.03 * np.sin(va * np.pi * 9)
    Tb = ta + rise * (1 + grad * (ua - 0.5) + fins) * (1 - 0.2 * va ** 6)
    T[r] = Tb[r]
    eps[r] = 0.93
    r = rect(boxes["cowl"])
    T[r] = (ta + 0.15 * rise + 0.5 * rise * 0.1 * (np.sin(xx * 3.0) > 0.6))[r]
    eps[r] = 0.93
    tbx = boxes["terminal_box"]
    r = rect(tbx)
    T[r] = ta + 0.55 * rise + 0.15 * tb_spot
    if tb_spot > 0:
        x0, y0, x1, y1 = tbx
        hx = x0 + (x1 - x0) * extra["spot_u"]
        hy = y0 + (y1 - y0) * extra["spot_v"]
        sig = 0.18 * min(x1 - x0, y1 - y0) + 0.3
        spot = tb_spot * np.exp(-((xx - hx) ** 2 + (yy - hy) ** 2) / (2 * sig ** 2))
        T[r] += spot[r]
    eps[r] = 0.93
    # radiometric measurement: W ~ eps*T^4 + (1-eps)*Tenv^4; camera inverts with its settings
    Tk = T + 273.15
    Tenv = ta + 273.15
    Wm = eps * Tk ** 4 + (1 - eps) * Tenv ** 4
    es = cam["eps_set"]
    Trefl = 293.15
    Tapp = np.power(np.maximum((Wm - (1 - es) * Trefl ** 4) / es, 1.0), 0.25) - 273.15
    Tapp = Tapp.reshape(H, ss, W, ss).mean(axis=(1, 3))
    from scipy.ndimage import gaussian_filter
    Tapp = gaussian_filter(Tapp, cam["blur"])
    Tapp = Tapp + rng.normal(0, cam["netd"], Tapp.shape) + rng.normal(0, 0.05, (1, W))
    if cam["enc"].startswith("lepton") and rng.random() < 0.5:
        k = max(1, int(0.001 * W * H))
        Tapp[rng.integers(0, H, k), rng.integers(0, W, k)] = -273.15
    return Tapp.astype(np.float32), boxes


def encode_frame(T, cam):
    enc = cam["enc"]
    if enc == "flir_ck" or enc == "lepton_ck":
        return np.clip(np.round((T + 273.15) * 100), 0, 65535).astype(np.uint16)
    if enc == "flir_04":
        return np.clip(np.round((T + 273.15) / 0.04), 0, 65535).astype(np.uint16)
    if enc == "lepton":
        return np.clip(np.round((T + 273.15) * 10), 0, 65535).astype(np.uint16)
    if enc == "optris":
        return np.clip(np.round(T * 10 + 1000), 0, 65535).astype(np.uint16)
    if enc == "float_c":
        return T.astype(np.float32)
    if enc == "float_k":
        return (T + 273.15).astype(np.float32)
    if enc == "float_f":
        return (T * 9 / 5 + 32).astype(np.float32)
    raise ValueError(enc)


def frame_decl(cam, rng):
    """What a user would write in assets.json `frame` for this camera (or None)."""
    enc = cam["enc"]
    d = {"width": cam["w"], "height": cam["h"]}
    if enc == "flir_04":
        d.update(unit="kelvin", scale=0.04)
    elif enc == "optris":
        d.update(unit="celsius", scale=0.1, offset=-100)
    elif enc == "lepton":
        d.update(unit="decikelvin")
    elif enc == "float_f":
        d.update(unit="fahrenheit")
    elif enc in ("flir_ck", "lepton_ck") and rng.random() < 0.5:
        d.update(unit="centikelvin")
    elif enc == "float_k" and rng.random() < 0.5:
        d.update(unit="kelvin")
    return d


def write_tiff(path, arr, cam):
    comp = {"none": None, "zlib": "zlib", "lzw": "lzw", "packbits": "packbits"}[cam["comp"]]
    if arr.dtype == np.float32 and comp == "packbits":
        comp = None
    tifffile.imwrite(path, arr, compression=comp, photometric="minisblack")


# ---------------------------------------------------------------------------------------------
# PLC
# ---------------------------------------------------------------------------------------------
def plc_series(m, st, fault, sev, rng, extra):
    p = m["plc"]
    per = p["period"]
    n = int(p["minutes"] * 60 / per)
    tt = np.arange(n) * per
    ta = st["ta"]
    load = np.full(n, st["load"])
    if m["cyclic"]:
        cyc = u(rng, 40, 90)
        loaded = ((tt + rng.uniform(0, cyc)) % cyc) < cyc * u(rng, 0.5, 0.8)
        load = np.where(loaded, min(1.0, st["load"] + 0.2), 0.35)
    else:
        load = load * (1 + 0.02 * sps.lfilter([0.1], [1, -0.9], rng.standard_normal(n)))
    s = st["s"]
    cur_ratio = 0.35 + 0.65 * load
    if fault == "cavitation":
        cur_ratio = cur_ratio * (1 - 0.05 * sev)
    if fault == "electrical_overheating":
        cur_ratio = cur_ratio * (1 + 0.02 * sev)
    cur = m["i_rated"] * cur_ratio * (1 + 0.005 * rng.standard_normal(n))
    vent = (1 / max(s, 0.3)) ** 0.5 if (m["vfd"] and m["self_vent"]) else 1.0
    mean_ratio = 0.35 + 0.65 * np.mean(load)
    wr = m["wdg_rise"] * (0.3 + 0.7 * mean_ratio ** 2) * vent
    if fault == "cooling_failure":
        wr *= (1 + 0.8 * sev)
    if fault == "electrical_overheating":
        wr += 4 * sev
    wdg = ta + wr + 0.2 * rng.standard_normal(n)
    brg = ta + m["brg0"] * (0.6 + 0.4 * s)
    if fault == "bearing_wear":
        brg += 18 * sev ** 1.2
    if fault == "cooling_failure":
        brg += 4 * sev
    if fault == "imbalance":
        brg += 2 * sev
    brg = brg + 0.15 * rng.standard_normal(n)
    v0 = m["vib0"] * s ** 1.5
    one = 0.6 * v0
    rest = math.sqrt(max(v0 ** 2 - one ** 2, 0))
    if fault == "imbalance":
        one *= 1 + 4 * sev
    if fault == "bearing_wear":
        rest = math.sqrt(rest ** 2 + (1.2 * sev ** 2) ** 2)
    vib = math.sqrt(one ** 2 + rest ** 2)
    vib = vib * (1 + 0.04 * rng.standard_normal(n))
    if fault == "cavitation":
        vib = vib * (1 + 0.8 * sev) * (1 + 0.15 * sev * rng.standard_normal(n))
    if m["p_nom"] is not None:
        if m["cyclic"]:
            pr = m["p_nom"] * (0.9 + 0.1 * ((tt % 60) / 60)) * np.where(load > 0.5, 1.0, 0.97)
        else:
            pr = m["p_nom"] * s ** 2 * (1 - 0.1 * (load - 0.8))
        pr = pr * (1 + 0.005 * rng.standard_normal(n))
        if fault == "cavitation":
            pr = pr * (1 - 0.25 * sev) * (1 + u(rng, 0.02, 0.08) * sev * rng.standard_normal(n))
    else:
        pr = None
    rpm = st["f_r"] * 60 * (1 + 0.001 * rng.standard_normal(n))
    setp = np.full(n, round(st["f_r"] * 60 / 10) * 10.0)
    return dict(t=tt, current=cur, winding=wdg, bearing=brg, vib=vib, pressure=pr, speed=rpm, setpoint=setp,
                run=np.ones(n, bool))


TAGNAMES = {
    "wide_iso": dict(time="timestamp", current="Motor Current (A)", winding="Winding Temperature (°C)",
                     bearing="DE Bearing Temperature (°C)", vib="Vibration Velocity RMS (mm/s)",
                     pressure="Discharge Pressure (bar)", speed="Shaft Speed (rpm)", setpoint="Speed Setpoint (rpm)",
                     run="Run Status"),
    "wide_eu": dict(time="Datum/Zeit", current="Motor Current [A]", winding="Winding Temp [°C]",
                    bearing="Bearing Temp DE [°C]", vib="Vibration [mm/s]", pressure="Discharge Pressure [kPa]",
                    speed="Speed [rpm]", setpoint="Speed Setpoint [rpm]", run="Running"),
    "wide_de": dict(time="Zeit", current="Motorstrom [A]", winding="Wicklungstemperatur [°C]",
                    bearing="Lagertemperatur AS [°C]", vib="Schwinggeschwindigkeit [mm/s]",
                    pressure="Druck [bar]", speed="Drehzahl [1/min]", setpoint="Drehzahl Sollwert [1/min]",
                    run="Betrieb"),
    "us_wide": dict(time="Date/Time", current="Motor Amps", winding="Winding Temp (F)", bearing="DE_BRG_TEMP_F",
                    vib="Vibration [in/s pk]", pressure="Discharge Pressure psi", speed="Speed RPM",
                    setpoint="Speed Setpoint RPM", run="Running"),
}


def fmt_time(style, t0, sec):
    ts = t0 + dt.timedelta(seconds=float(sec))
    if style in ("wide_iso",):
        return ts.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ts.microsecond // 1000:03d}Z"
    if style in ("wide_eu", "wide_de"):
        return ts.strftime("%d.%m.%Y %H:%M:%S,") + f"{ts.microsecond // 1000:03d}"
    if style == "us_wide":
        return ts.strftime("%m/%d/%Y %I:%M:%S.") + f"{ts.microsecond // 1000:03d}" + ts.strftime(" %p")
    if style == "aveva_long":
        return ts.strftime("%Y-%m-%d %H:%M:%S.") + f"{ts.microsecond // 1000:03d}"
    if style == "ignition_long":
        return str(int(ts.replace(tzinfo=dt.timezone.utc).timestamp() * 1000))
    if style == "pi_long":
        return ts.strftime("%d-%b-%Y %H:%M:%S")
    if style == "plc_abbrev":
        return ts.strftime("%Y/%m/%d %H:%M:%S")
    if style == "jsonl":
        return (ts + dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ts.microsecond // 1000:03d}+01:00"
    raise ValueError(style)


def write_plc(path, m, ser, t0):
    p = m["plc"]
    style = p["style"]
    tags = p["tags"]
    aid = m["asset_id"]
    present = [k for k in ("current", "winding", "bearing", "vib", "pressure", "speed", "setpoint", "run")
               if tags.get(k) and (k != "pressure" or ser["pressure"] is not None)]
    n = len(ser["t"])

    def val(k, i):
        if k == "run":
            return ser["run"][i]
        return float(ser[k][i])

    def conv(k, v):  # to the export's unit
        if style == "us_wide" or (m["site"] == "US" and style != "ignition_long"):
            if k in ("winding", "bearing"):
                return v * 9 / 5 + 32
            if k == "vib":
                return v * math.sqrt(2) / 25.4
            if k == "pressure":
                return v * 14.5038
        if style == "wide_eu" and k == "pressure":
            return v * 100.0
        return v

    lines = []
    if style in TAGNAMES:
        names = TAGNAMES[style]
        sep = ";" if style in ("wide_eu", "wide_de") else ","
        lines.append(sep.join([names["time"]] + [names[k] for k in present]))
        for i in range(n):
            row = [fmt_time(style, t0, ser["t"][i])]
            for k in present:
                v = val(k, i)
                if k == "run":
                    row.append({"wide_iso": "RUNNING", "wide_eu": "1", "wide_de": "1", "us_wide": "TRUE"}[style])
                    continue
                v = conv(k, v)
                dec = 1 if k in ("winding", "bearing") and style == "us_wide" else (0 if k in ("speed", "setpoint") else 2)
                sv = f"{v:.{dec}f}"
                if sep == ";":
                    sv = sv.replace(".", ",")
                row.append(sv)
            lines.append(sep.join(row))
        open(path, "w", encoding="utf-8").write("\n".join(lines) + "\n")
        return
    short = re.sub(r"[^A-Za-z0-9]", "", aid)
    if style == "plc_abbrev":
        nm = dict(current=f"{short}_MTR_CUR_A", winding=f"{short}_WDG_TEMP_DEGC", bearing=f"{short}_BRG_DE_TEMP_DEGC",
                  vib=f"{short}_VIB_MMS", pressure=f"{short}_DISCH_PRESS_BAR", speed=f"{short}_SPD_RPM",
                  setpoint=f"{short}_SPD_SP_RPM", run=f"{short}_RUN")
        if m["site"] == "US":
            nm.update(winding=f"{short}_WDG_TEMP_DEGF", bearing=f"{short}_BRG_DE_TEMP_DEGF", vib=f"{short}_VIB_INS_PK",
                      pressure=f"{short}_DISCH_PRESS_PSI")
        lines.append(",".join(["TIME"] + [nm[k] for k in present]))
        for i in range(n):
            row = [fmt_time(style, t0, ser["t"][i])]
            for k in present:
                row.append("1" if k == "run" else f"{conv(k, val(k, i)):.2f}")
            lines.append(",".join(row))
        open(path, "w").write("\n".join(lines) + "\n")
        return
    if style == "jsonl":
        nm = TAGNAMES["wide_iso"]
        with open(path, "w") as f:
            for i in range(n):
                rec = {"timestamp": fmt_time(style, t0, ser["t"][i]), "asset": aid}
                for k in present:
                    rec[nm[k]] = ("RUNNING" if k == "run" else round(conv(k, val(k, i)), 3))
                f.write(json.dumps(rec, ensure_ascii=False) + "\n")
        return
    # long formats
    if style == "aveva_long":
        nm = dict(current="MotorCurrent", winding="WindingTemp", bearing="DEBearingTemp", vib="VibrationVelocity",
                  pressure="DischargePressure", speed="MotorSpeed", setpoint="SpeedSetpoint", run="RunStatus")
        tag = {k: f"{short}.{v}" for k, v in nm.items()}
        header = "DateTime,TagName,Value,Quality"
    elif style == "ignition_long":
        nm = dict(current="Motor/Current", winding="Motor/WindingTemp", bearing="Bearings/DEBearingTemp",
                  vib="Vibration/Velocity", pressure="Process/DischargePressure", speed="Motor/Speed",
                  setpoint="Motor/SpeedSetpoint", run="Motor/Running")
        tag = {k: f"[default]Site/Line{1 + (len(aid) % 3)}/{aid}/{v}" for k, v in nm.items()}
        header = "tagpath,value,quality,t_stamp"
    else:  # pi_long
        nm = dict(current="AMPS", winding="WDG.TEMP", bearing="BRG.DE.TEMP", vib="VIB.VEL", pressure="DISCH.PRESS",
                  speed="SPEED", setpoint="SPEED.SP", run="RUN.STATUS")
        tag = {k: f"{aid}.{v}" for k, v in nm.items()}
        header = "Tag,Timestamp,Value"
    rows = []
    deadband = {"current": 0.2, "winding": 0.5, "bearing": 0.5, "vib": 0.05, "pressure": 0.02, "speed": 2,
                "setpoint": 0.5, "run": 0.5}
    for k in present:
        last = None
        for i in range(n):
            v = val(k, i)
            v = (1.0 if v else 0.0) if k == "run" else conv(k, v)
            if style == "aveva_long" and last is not None and abs(v - last) < deadband[k] and i % 60:
                continue
            last = v
            ts = fmt_time(style, t0, ser["t"][i])
            sv = (("Running" if v else "Stopped") if (k == "run" and style == "pi_long") else f"{v:.3f}")
            if style == "aveva_long":
                rows.append((ser["t"][i], f"{ts},{tag[k]},{sv},192"))
            elif style == "ignition_long":
                rows.append((ser["t"][i], f"{tag[k]},{sv},192,{ts}"))
            else:
                rows.append((ser["t"][i], f"{tag[k]},{ts},{sv}"))
    rows.sort(key=lambda r: r[0])
    open(path, "w").write(header + "\n" + "\n".join(r[1] for r in rows) + "\n")


# ---------------------------------------------------------------------------------------------
# assets.json entry as a user writes it
# ---------------------------------------------------------------------------------------------
def regions_for(m, boxes, rng):
    cam = m["camera"]
    W, H = cam["w"], cam["h"]
    style = str(rng.choice(["xyxy", "xywh", "voc", "labelme", "cvat", "frac", "list", "none", "xyxy_ref2x"]))
    if m["asset_id"].startswith("SC") or (m["kind"] in ("grinder",)):
        style = "none"
    if style == "none":
        return None, None, style
    names_alias = rng.random() < 0.4
    alias = {"motor_body": "Motor", "de_bearing": "Drive End Bearing", "nde_bearing": "NDE",
             "terminal_box": "Junction Box", "coupling": "Coupling", "driven": "pump" if m["pump"] else "driven"}
    use = ["motor_body", "de_bearing", "nde_bearing", "terminal_box", "coupling", "driven"]
    if rng.random() < 0.25:
        use = ["motor_body", "de_bearing", "terminal_box"]
    out = {}
    ref = 2.0 if style == "xyxy_ref2x" else 1.0
    for name in use:
        x0, y0, x1, y1 = boxes[name]
        w, h = x1 - x0, y1 - y0
        sh = u(rng, 0.03, 0.08)
        x0, x1 = x0 + sh * w + rng.normal(0, 0.5), x1 - sh * w + rng.normal(0, 0.5)
        y0, y1 = y0 + sh * h + rng.normal(0, 0.5), y1 - sh * h + rng.normal(0, 0.5)
        x0, y0, x1, y1 = [int(round(v * ref)) for v in (x0, y0, x1, y1)]
        x1, y1 = max(x1, x0 + 1), max(y1, y0 + 1)
        key = alias[name] if names_alias else name
        if style in ("xyxy", "xyxy_ref2x"):
            out[key] = [x0, y0, x1, y1]
        elif style == "xywh":
            out[key] = {"x": x0, "y": y0, "w": x1 - x0, "h": y1 - y0}
        elif style == "voc":
            out[key] = {"xmin": x0, "ymin": y0, "xmax": x1, "ymax": y1}
        elif style == "cvat":
            out[key] = {"xtl": x0, "ytl": y0, "xbr": x1, "ybr": y1}
        elif style == "frac":
            out[key] = [round(x0 / W, 4), round(y0 / H, 4), round(x1 / W, 4), round(y1 / H, 4)]
        elif style in ("labelme", "list"):
            out[key] = [[x0, y0], [x1, y1]]
    if style == "labelme":
        out = [{"label": k, "points": v, "shape_type": "rectangle"} for k, v in out.items()]
    elif style == "list":
        out = [{"name": k, "x": v[0][0], "y": v[0][1], "width": v[1][0] - v[0][0], "height": v[1][1] - v[0][1]}
               for k, v in out.items()]
    return out, ref, style


def asset_entry(m, boxes, rng):
    e = {}
    e[str(rng.choice(["asset_id", "asset_id", "id", "name"]))] = m["asset_id"]
    e["asset_type"] = m["asset_type"]
    e["manufacturer"] = str(rng.choice(["WEG", "Siemens", "ABB", "Baldor", "SEW", "Nord", "Grundfos", "KSB"]))
    st = int(rng.integers(4))
    rpm = int(round(m["nominal_rpm"]))
    if st == 0:
        e["nominal_rpm"] = rpm
    elif st == 1:
        e["rated_rpm"] = f"{rpm:,} rpm" if rpm >= 1000 else f"{rpm} rpm"
    elif st == 2:
        e["poles"] = m["poles"]
        e["line_frequency_hz"] = m["line_hz"]
        if m["spindle"] or m["vfd"]:
            e["nameplate_rpm"] = rpm
    else:
        e["motor"] = {"rpm": rpm}  # nested motor section: unknown to the tool's schema? real users do it
        e["speed_rpm"] = rpm
    if m["vfd"]:
        if rng.random() < 0.5:
            e["vfd"] = True
        else:
            e["drive"] = "vfd"
        if rng.random() < 0.5:
            e["speed_range_rpm"] = [int(rpm * m["speed_lo"]), int(rpm * m["speed_hi"])]
    if m["recip"] and rng.random() < 0.5:
        e["reciprocating"] = True
    # bearing
    b = m["bearing"]
    bs = int(rng.integers(6))
    if bs == 0:
        e["bearing"] = str(rng.choice([f"SKF {b}-2Z/C3", f"{b} 2Z C3", f"FAG {b}", f"{b}-2RS1"]))
    elif bs == 1:
        e["bearings"] = {"de": f"{b} C3", "nde": f"{b} C3"}
    elif bs == 2:
        n, d, D, a = m["geo"]
        e["bearing"] = {"designation": b, "n_balls": n, "ball_d_mm": d, "pitch_d_mm": D, "contact_angle_deg": a}
    elif bs == 3:
        e["bearing_orders"] = {k: round(v, 3) for k, v in m["orders"].items()}
    elif bs == 4:
        e["bearing_designation"] = f"{b} C3"
    # bs 5: no bearing information
    # electrics
    es = int(rng.integers(4))
    if es == 0:
        e["rated_current_a"] = round(m["i_rated"], 1)
    elif es == 1:
        e["fla_a"] = round(m["i_rated"], 1)
    elif es == 2:
        if m["site"] == "US":
            e["rated_power_hp"] = round(m["kw"] / 0.7457, 0)
            e["rated_voltage_v"] = 460
        else:
            e["rated_power_kw"] = f"{m['kw']:.1f} kW".replace(".", ",") if rng.random() < 0.5 else round(m["kw"], 1)
    e["line_frequency_hz"] = m["line_hz"] if "line_frequency_hz" not in e and rng.random() < 0.6 else e.get(
        "line_frequency_hz", None)
    if e.get("line_frequency_hz") is None:
        e.pop("line_frequency_hz", None)
    if rng.random() < 0.6 or m["spindle"]:
        e["cooling"] = {"IC411": str(rng.choice(["IC411", "TEFC"])), "IC416": str(rng.choice(["IC416", "TEBC"])),
                        "water": "water"}[m["cooling"]]
    if m["p_nom"] is not None and rng.random() < 0.5:
        e["pressure_nominal_bar"] = round(m["p_nom"], 2)
    if m["cyclic"]:
        e["load_profile"] = "cyclic"
    if m["kind"] == "piston_comp" and rng.random() < 0.6:
        e["vibration_normal_mm_s"] = round(m["vib0"], 1)
    regs, ref, rstyle = regions_for(m, boxes, rng)
    m["regions_style"] = rstyle
    if regs is not None:
        frame = frame_decl(m["camera"], rng)
        if ref != 1.0:
            frame["width"] = int(frame["width"] * ref)
            frame["height"] = int(frame["height"] * ref)
        if rng.random() < 0.3:
            e["camera"] = {"model": m["camera"]["name"], "frame": frame, "regions": regs}
        else:
            e["regions"] = regs
            e["frame"] = frame
        if rng.random() < 0.5:
            e["fan_side"] = fan_side(m)
    else:
        frame = frame_decl(m["camera"], rng)
        if "unit" in frame:
            e["frame"] = frame
    return e


# ---------------------------------------------------------------------------------------------
# Expert features
# ---------------------------------------------------------------------------------------------
def expert_audio(y, fs, m, st):
    x = y[:, 0].astype(np.float64)
    f_r = st["f_r"]
    out = {}
    hi = min(7000, 0.45 * fs)
    lo = min(2000, 0.2 * fs)
    sos = sps.butter(4, [lo, hi], btype="band", fs=fs, output="sos")
    xb = sps.sosfilt(sos, x)
    env = np.abs(sps.hilbert(xb))
    env -= env.mean()
    E = np.abs(np.fft.rfft(env * np.hanning(len(env))))
    fe = np.fft.rfftfreq(len(env), 1 / fs)
    best = 0.0
    for key in ("bpfo", "bpfi", "bsf"):
        fd = m["orders"][key] * f_r * (2 if key == "bsf" else 1)
        rs = []
        for k in (1, 2, 3):
            sel = np.abs(fe - k * fd) < 0.015 * k * fd + 0.3
            ref = (fe > 0.5 * fd) & (fe < 4 * fd)
            if sel.sum() == 0:
                continue
            rs.append(E[sel].max() / (np.median(E[ref]) + 1e-12))
        best = max(best, float(np.mean(rs)) if rs else 0.0)
    out["brg"] = best
    X = np.abs(np.fft.rfft(x * np.hanning(len(x))))
    fx = np.fft.rfftfreq(len(x), 1 / fs)
    sel = np.abs(fx - f_r) < 0.01 * f_r + 0.2
    out["a1_db"] = float(20 * np.log10(X[sel].max() + 1e-12) - 40 * np.log10(st["s"]))
    hb = sps.sosfilt(sps.butter(4, [min(2500, 0.25 * fs), min(7000, 0.45 * fs)], btype="band", fs=fs,
                                output="sos"), x)
    if m["carrier"]:
        for fc in (m["carrier"],):
            for off in (0, -2, 2, -4, 4):
                f0 = fc + off * st["supply"]
                if 50 < f0 < 0.45 * fs:
                    hb = sps.filtfilt(*sps.iirnotch(f0, 30, fs), hb)
    out["hf_db"] = float(10 * np.log10(np.mean(hb ** 2) + 1e-18) - 50 * np.log10(st["s"]))
    from scipy.stats import kurtosis
    out["hf_kurt"] = float(kurtosis(hb))
    return out


def expert_thermal(T, boxes, st, ambient_known):
    H, W = T.shape
    def reg(b, shrink=0.15):
        x0, y0, x1, y1 = b
        w, h = x1 - x0, y1 - y0
        xa, xb = int(math.ceil(x0 + shrink * w)), int(math.floor(x1 - shrink * w))
        ya, yb = int(math.ceil(y0 + shrink * h)), int(math.floor(y1 - shrink * h))
        xa, ya = max(xa, 0), max(ya, 0)
        xb, yb = min(max(xb, xa + 1), W), min(max(yb, ya + 1), H)
        return T[ya:yb, xa:xb]
    ta = ambient_known
    Lf = 0.35 + 0.65 * st["load"] ** 2
    body = reg(boxes["motor_body"])
    rise = float(np.median(body) - ta)
    de = float(np.max(reg(boxes["de_bearing"], 0.1)) - ta)
    nde = float(np.max(reg(boxes["nde_bearing"], 0.1)) - ta)
    tb = reg(boxes["terminal_box"], 0.05)
    spot = float(np.max(tb) - np.median(tb))
    return dict(rise_n=rise / Lf, de_x=(de - 0.7 * rise), nde_x=(nde - 0.55 * rise), spot=spot)


def expert_plc(ser, m, st):
    tags = m["plc"]["tags"]
    out = {}
    if tags["vib"]:
        out["vib_n"] = float(np.median(ser["vib"]) / st["s"] ** 1.5)
        out["vib_cv"] = float(np.std(ser["vib"]) / np.mean(ser["vib"]))
    if tags["bearing"]:
        out["brg"] = float(np.median(ser["bearing"]) - st["ta"] - m["brg0"] * 0.4 * st["s"])
    if tags["winding"]:
        vent = (1 / max(st["s"], 0.3)) ** 0.5 if (m["vfd"] and m["self_vent"]) else 1.0
        ir = np.mean(ser["current"]) / m["i_rated"]
        out["wdg_n"] = float((np.median(ser["winding"]) - st["ta"]) / ((0.3 + 0.7 * ir ** 2) * vent))
    if tags["pressure"] and ser["pressure"] is not None and not m["cyclic"]:
        out["p_n"] = float(np.median(ser["pressure"]) / st["s"] ** 2)
        out["p_cv"] = float(np.std(ser["pressure"]) / np.mean(ser["pressure"]))
    return out


def expert_flags(f, c, m):
    """f: features of the sample, c: of the commissioning sample; returns {modality: set(classes)}."""
    fl = {"audio": set(), "thermal": set(), "plc": set()}
    a, ac = f["audio"], c["audio"]
    if m["mic"]["fs"] >= 11025:
        if a["brg"] > max(2.0 * ac["brg"], 5.0):
            fl["audio"].add("bearing_wear")
    if a["a1_db"] - ac["a1_db"] > 5.0:
        fl["audio"].add("imbalance")
    if m["pump"] and m["mic"]["fs"] >= 11025 and (a["hf_db"] - ac["hf_db"] > 1.5 or a["hf_kurt"] > ac["hf_kurt"] + 1.0):
        if "bearing_wear" not in fl["audio"]:
            fl["audio"].add("cavitation")
    t, tc = f["thermal"], c["thermal"]
    if t["de_x"] - tc["de_x"] > 4.0 or t["nde_x"] - tc["nde_x"] > 5.0:
        fl["thermal"].add("bearing_wear")
    if t["spot"] - tc["spot"] > 4.0:
        fl["thermal"].add("electrical_overheating")
    if t["rise_n"] > 1.2 * tc["rise_n"] + 2:
        fl["thermal"].add("cooling_failure")
    p, pc = f["plc"], c["plc"]
    if "p_n" in p and (p["p_n"] < 0.93 * pc["p_n"] or p["p_cv"] > 2 * pc["p_cv"] + 0.01):
        fl["plc"].add("cavitation")
    if "vib_n" in p and p["vib_n"] > 1.45 * pc["vib_n"] and "cavitation" not in fl["plc"]:
        fl["plc"].add("imbalance")
    if "brg" in p and p["brg"] - pc["brg"] > 4.0:
        fl["plc"].add("bearing_wear")
    if "wdg_n" in p and p["wdg_n"] > 1.15 * pc["wdg_n"] + 2:
        fl["plc"].add("cooling_failure")
    return fl


# ---------------------------------------------------------------------------------------------
# Generate
# ---------------------------------------------------------------------------------------------
def classes_of(m):
    cl = ["bearing_wear", "imbalance", "electrical_overheating", "cooling_failure"]
    if "pump" in m["asset_type"].lower():
        cl.insert(2, "cavitation")
    return cl


def fname(m, kind, stamp, ext):
    aid = m["asset_id"]
    s = stamp.strftime("%Y%m%dT%H%M%S") + f"{stamp.microsecond // 1000:03d}"
    if m["naming"] == "lz":
        return (f"plc-{aid}-{s}.{ext}" if kind == "plc" else f"{aid}-{s}.{ext}")
    if m["naming"] == "word":
        d = stamp.strftime("%Y%m%d_%H%M")
        return {"audio": f"{d}_{aid.lower()}_DE.{ext}", "thermal": f"{aid}_thermal_{d}.{ext}",
                "plc": f"{aid} historian export {stamp.strftime('%Y-%m-%d')}.{ext}"}[kind]
    # folder: files named by the devices
    num = (stamp.minute * 60 + stamp.second) % 9999
    return {"audio": f"ZOOM{num:04d}.WAV", "thermal": f"FLIR{num:04d}.tiff", "plc": f"export.{ext}"}[kind]


def generate(args):
    t_start = time.time()
    machines = design_fleet(args.seed, args.machines)
    out = args.out or f"/tmp/blind2/fleet{args.seed}"
    os.makedirs(out, exist_ok=True)
    assets = []
    truth = {"seed": args.seed, "machines": [], "samples": []}
    base_day = dt.datetime(2026, 11, 2, 6, 0, 0)
    for mi, m in enumerate(machines):
        mrng = np.random.default_rng([args.seed, mi])
        plan = [("commissioning", "normal", 0.0)] + [(f"h{j:02d}", "normal", 0.0) for j in range(N_HEALTHY)]
        for c in classes_of(m):
            for bi, (lo, hi) in enumerate(SEV_BINS):
                plan.append((f"{c[:4]}{bi}", c, u(mrng, lo, hi)))
        gain = None
        boxes0 = layout(m, (0.0, 0.0, 1.0))
        ent = asset_entry(m, boxes0, mrng)
        if m["in_assets"]:
            assets.append(ent)
        for si, (sid, cls, sev) in enumerate(plan):
            st = draw_state(m, mrng)
            if sid == "commissioning":
                stamp = base_day - dt.timedelta(days=90) + dt.timedelta(hours=mi, milliseconds=int(mrng.integers(0, 999)))
            else:
                stamp = base_day + dt.timedelta(days=si, hours=mi % 12, minutes=int(mrng.integers(0, 59)),
                                                seconds=int(mrng.integers(0, 59)), milliseconds=int(mrng.integers(0, 999)))
            extra = dict(brg_type=str(mrng.choice(["outer"] * 6 + ["inner"] * 3 + ["ball"])),
                         brg_side=str(mrng.choice(["de_bearing"] * 7 + ["nde_bearing"] * 3)),
                         cool_mode=str(mrng.choice(["fan_broken"] * 4 + ["clogged"] * 6)),
                         spot_u=u(mrng, 0.25, 0.75), spot_v=u(mrng, 0.3, 0.7))
            cam = m["camera"]
            jit = (0.0, 0.0, 1.0)
            if cam["handheld"] and sid != "commissioning":
                jit = (mrng.normal(0, 0.025), mrng.normal(0, 0.025), float(np.clip(mrng.normal(1, 0.04), 0.9, 1.1)))
            y, fs = synth_audio(m, st, cls, sev, mrng, extra)
            if gain is None:
                gain = 10 ** (m["mic"]["level_db"] / 20) / (np.sqrt(np.mean(y[:, 0] ** 2)) + 1e-12)
            T, boxes = render_frame(m, st, cls, sev, mrng, extra, jit)
            ser = plc_series(m, st, cls, sev, mrng, extra)
            if m["naming"] == "folder":
                d = os.path.join(out, f"visit_{stamp.strftime('%Y-%m-%d_%H%M')}_{sid}", m["asset_id"])
            else:
                d = os.path.join(out, m["asset_id"], sid)
            os.makedirs(d, exist_ok=True)
            plc_ext = "jsonl" if m["plc"]["style"] == "jsonl" else "csv"
            fa = os.path.join(d, fname(m, "audio", stamp, "wav"))
            ft = os.path.join(d, fname(m, "thermal", stamp, "tiff"))
            fp = os.path.join(d, fname(m, "plc", stamp, plc_ext))
            write_audio(fa, y, fs, m, gain)
            write_tiff(ft, encode_frame(T, cam), cam)
            write_plc(fp, m, ser, stamp - dt.timedelta(seconds=m["plc"]["minutes"] * 60 / 2))
            # expert features computed from what was written (audio re-read: quantisation, clipping)
            yr, fsr = sf.read(fa, always_2d=True)
            feat = {"audio": expert_audio(yr, fsr, m, st),
                    "thermal": expert_thermal(T, boxes, st, st["ta"]),
                    "plc": expert_plc(ser, m, st)}
            rec = dict(asset_id=m["asset_id"], sample=sid, cls=cls, severity=round(sev, 3), files=dict(
                audio=fa, thermal=ft, plc=fp), state=st, extra=extra if cls != "normal" else {}, expert=feat,
                commissioning=(sid == "commissioning"))
            truth["samples"].append(rec)
        mm = {k: v for k, v in m.items()}
        mm["assets_entry"] = ent if m["in_assets"] else None
        mm["classes"] = classes_of(m)
        truth["machines"].append(mm)
        print(f"[{time.time() - t_start:6.1f}s] {m['asset_id']:10s} {m['kind']:12s} {m['asset_type'][:34]:34s} "
              f"{'VFD' if m['vfd'] else 'fix'} fs={m['mic']['fs']} cam={cam['name']}({cam['enc']}) "
              f"plc={m['plc']['style']} regions={m['regions_style']} naming={m['naming']}", flush=True)
    json.dump({"assets": assets}, open(os.path.join(out, "assets.json"), "w"), indent=1, ensure_ascii=False)
    truth["expert_summary"] = expert_report(truth)
    json.dump(truth, open(os.path.join(out, "truth.json"), "w"), indent=1, default=float)
    print(f"wrote {len(truth['samples'])} samples of {len(machines)} machines to {out} in {time.time() - t_start:.0f}s")


def expert_report(truth):
    mach = {m["asset_id"]: m for m in truth["machines"]}
    comm = {s["asset_id"]: s for s in truth["samples"] if s["commissioning"]}
    res = collections.defaultdict(lambda: [0, 0])
    modal = collections.defaultdict(lambda: [0, 0])
    fp = [0, 0]
    fpm = collections.defaultdict(lambda: [0, 0])
    for s in truth["samples"]:
        if s["commissioning"]:
            continue
        fl = expert_flags(s["expert"], comm[s["asset_id"]]["expert"], mach[s["asset_id"]])
        anyf = set().union(*fl.values())
        s["expert_flags"] = {k: sorted(v) for k, v in fl.items()}
        if s["cls"] == "normal":
            fp[1] += 1
            fp[0] += bool(anyf)
            for mo in fl:
                fpm[mo][1] += 1
                fpm[mo][0] += bool(fl[mo])
            continue
        b = 0 if s["severity"] < 0.5 else 1
        res[(s["cls"], b)][1] += 1
        res[(s["cls"], b)][0] += bool(anyf)
        res[(s["cls"], "cls", b)][1] += 1
        res[(s["cls"], "cls", b)][0] += s["cls"] in anyf
        for mo in fl:
            modal[(mo, s["cls"], b)][1] += 1
            modal[(mo, s["cls"], b)][0] += s["cls"] in fl[mo]
    print("\nEXPERT (knows speed, bearing geometry, part masks, commissioning sample)")
    print(f"{'class':24s} {'det<0.5':>9s} {'det>=0.5':>9s} {'cls>=0.5':>9s}  per modality (class right, >=0.5)")
    tot = [0, 0]
    for c in CLASSES[1:]:
        lo, hi, hc = res[(c, 0)], res[(c, 1)], res[(c, "cls", 1)]
        if hi[1] == 0:
            continue
        tot[0] += hi[0]
        tot[1] += hi[1]
        pm = "  ".join(f"{mo}={modal[(mo, c, 1)][0]}/{modal[(mo, c, 1)][1]}" for mo in ("audio", "thermal", "plc"))
        print(f"{c:24s} {lo[0] / max(lo[1], 1):9.2f} {hi[0] / hi[1]:9.2f} {hc[0] / hc[1]:9.2f}  {pm}")
    print(f"detection past moderate: {tot[0]}/{tot[1]} = {tot[0] / max(tot[1], 1):.2f}; "
          f"healthy FPR {fp[0]}/{fp[1]} = {fp[0] / max(fp[1], 1):.3f} "
          + " ".join(f"{mo}:{v[0]}/{v[1]}" for mo, v in fpm.items()))
    return dict(detection=tot[0] / max(tot[1], 1), fpr=fp[0] / max(fp[1], 1),
                per_class={c: res[(c, 1)][0] / max(res[(c, 1)][1], 1) for c in CLASSES[1:] if res[(c, 1)][1]},
                per_class_right={c: res[(c, "cls", 1)][0] / max(res[(c, "cls", 1)][1], 1) for c in CLASSES[1:]
                                 if res[(c, "cls", 1)][1]},
                per_modality_fpr={mo: v[0] / max(v[1], 1) for mo, v in fpm.items()})


# ---------------------------------------------------------------------------------------------
# Scoring
# ---------------------------------------------------------------------------------------------
def run_inspect(files, assets, healthy):
    cmd = [LW, "inspect", "--json", "--assets", assets]
    for kind, f in healthy:
        cmd += [f"--healthy-{kind}", f]
    cmd += files
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    return p, time.time() - t0, cmd


def score(args):
    fleet = args.fleet
    truth = json.load(open(os.path.join(fleet, "truth.json")))
    mach = {m["asset_id"]: m for m in truth["machines"]}
    assets = os.path.join(fleet, "assets.json")
    by_m = collections.defaultdict(list)
    comm = {}
    for s in truth["samples"]:
        if s["commissioning"]:
            comm[s["asset_id"]] = s
        else:
            by_m[s["asset_id"]].append(s)
    rounds = max(len(v) for v in by_m.values())
    ids = sorted(by_m)
    groups = [ids[i::args.groups] for i in range(args.groups)]
    errors = []
    warn_counter = collections.Counter()
    warn_examples = {}
    stderr_counter = collections.Counter()
    records = []
    total_t = 0.0
    calls = 0
    recf = open(args.records, "w") if args.records else None
    refused = set()  # healthy references the tool refused once: not passed again
    for r in range(rounds):
        for g in groups:
            samples = [by_m[a][r] for a in g if r < len(by_m[a])]
            if not samples:
                continue
            files, healthy = [], []
            for s in samples:
                files += [s["files"]["audio"], s["files"]["thermal"], s["files"]["plc"]]
                if args.with_healthy:
                    c = comm[s["asset_id"]]["files"]
                    healthy += [h for h in (("audio", c["audio"]), ("thermal", c["thermal"]), ("plc", c["plc"]))
                                if h[1] not in refused]
            p, el, cmd = run_inspect(files, assets, healthy)
            total_t += el
            calls += 1
            # exit 2 refuses the whole call when one --healthy-* file cannot be read: record it, drop that
            # reference and call again so that the other machines are still scored
            for _retry in range(12):
                if p.returncode != 2 or not healthy:
                    break
                bad = [h for h in healthy if h[1] in p.stderr]
                if not bad:
                    break
                for h in bad:
                    errors.append(dict(kind="healthy-ref-refused(call exit 2)", file=h[1], option=f"--healthy-{h[0]}",
                                       error=p.stderr.strip()[-600:], round=r))
                    healthy.remove(h)
                    refused.add(h[1])
                p, el, cmd = run_inspect(files, assets, healthy)
                total_t += el
                calls += 1
            for line in p.stderr.splitlines():
                line = line.strip()
                if line:
                    stderr_counter[re.sub(r"\d+(\.\d+)?", "#", line)[:200]] += 1
            try:
                out = json.loads(p.stdout)
            except Exception as e:
                errors.append(dict(kind="crash/no-json", rc=p.returncode, round=r, files=files,
                                   stderr=p.stderr[-3000:], stdout=p.stdout[-1000:], msg=str(e)))
                for s in samples:
                    records.append(dict(truth=s, crashed=True))
                print(f"round {r}: rc={p.returncode} NO JSON ({el:.1f}s): {p.stderr[-300:]}", flush=True)
                continue
            if p.returncode != 0:
                errors.append(dict(kind="nonzero-exit", rc=p.returncode, round=r, n_files=len(files),
                                   stderr_tail=p.stderr[-1500:]))
            byfile = {}
            for rec in out:
                byfile[os.path.abspath(rec.get("file", ""))] = rec
                for w in rec.get("warnings") or []:
                    key = re.sub(r"\d+(\.\d+)?", "#", str(w))[:160]
                    warn_counter[(rec.get("modality"), key)] += 1
                    warn_examples.setdefault((rec.get("modality"), key), (rec.get("file"), str(w)[:600]))
                if rec.get("error"):
                    errors.append(dict(kind="file-error", file=rec.get("file"), asset=rec.get("asset_id"),
                                       modality=rec.get("modality"), error=rec.get("error")))
            for s in samples:
                got = {}
                for mo in ("audio", "thermal", "plc"):
                    rec = byfile.get(os.path.abspath(s["files"][mo]))
                    if rec is None:
                        got[mo] = None
                        errors.append(dict(kind="missing-record", file=s["files"][mo], asset=s["asset_id"]))
                    else:
                        got[mo] = {k: rec.get(k) for k in ("asset_id", "modality", "class", "probabilities",
                                                           "withheld", "ruled_out", "shaft_hz", "speed_source",
                                                           "extrapolating", "warnings", "error", "fused")}
                fused = None
                for mo in ("audio", "thermal", "plc"):
                    if got[mo] and got[mo].get("fused"):
                        fused = got[mo]["fused"]
                        break
                row = dict(truth={k: s[k] for k in ("asset_id", "sample", "cls", "severity", "files", "state")},
                           expert_flags=s.get("expert_flags"), got=got, fused=fused,
                           true_shaft_hz=s["state"]["f_r"], with_healthy=bool(args.with_healthy))
                records.append(row)
                if recf:
                    recf.write(json.dumps(row, default=float) + "\n")
            print(f"round {r:2d} group {groups.index(g)}: {len(samples)} samples rc={p.returncode} {el:5.1f}s",
                  flush=True)
    if recf:
        recf.close()
    rep = summarise(records, mach, errors, warn_counter, warn_examples, stderr_counter, total_t, calls, args)
    if args.out:
        json.dump(rep, open(args.out, "w"), indent=1, default=str)
    return rep


def pred_of(row, mo):
    if mo == "fused":
        f = row.get("fused")
        return f.get("class") if f else None
    g = row["got"].get(mo)
    if not g or g.get("error"):
        return None
    return g.get("class")


def summarise(records, mach, errors, warn_counter, warn_examples, stderr_counter, total_t, calls, args):
    rep = {"calls": calls, "tool_seconds": round(total_t, 1), "with_healthy": bool(args.with_healthy),
           "modalities": {}, "errors": errors,
           "warnings": [dict(modality=k[0], text=k[1], count=v, example=warn_examples[k])
                        for k, v in warn_counter.most_common()],
           "stderr": [dict(text=k, count=v) for k, v in stderr_counter.most_common(60)]}
    print(f"\n=== linewatch inspect on the blind fleet ({'WITH' if args.with_healthy else 'without'} healthy refs);"
          f" {calls} calls, {total_t:.0f}s ===")
    for mo in ("audio", "thermal", "plc", "fused"):
        conf = collections.defaultdict(collections.Counter)
        rec_c = collections.defaultdict(lambda: [0, 0])
        det = [0, 0]
        fpr = [0, 0]
        none = 0
        for row in records:
            if row.get("crashed"):
                continue
            t = row["truth"]
            p = pred_of(row, mo)
            if p is None:
                none += 1
            conf[t["cls"]][p or "-"] += 1
            if t["cls"] == "normal":
                fpr[1] += 1
                fpr[0] += (p is not None and p != "normal")
            elif t["severity"] >= 0.5:
                rec_c[t["cls"]][1] += 1
                rec_c[t["cls"]][0] += (p == t["cls"])
                det[1] += 1
                det[0] += (p is not None and p != "normal")
        d = {"recall_ge_0.5": {c: round(v[0] / v[1], 3) for c, v in rec_c.items() if v[1]},
             "n_ge_0.5": {c: v[1] for c, v in rec_c.items()},
             "detection_ge_0.5": round(det[0] / max(det[1], 1), 3), "n_faulty_ge_0.5": det[1],
             "healthy_fpr": round(fpr[0] / max(fpr[1], 1), 3), "n_healthy": fpr[1], "no_result": none,
             "confusion": {k: dict(v) for k, v in conf.items()}}
        rep["modalities"][mo] = d
        print(f"\n-- {mo}: detection>=0.5 {d['detection_ge_0.5']:.3f} (n={det[1]}), healthy FPR "
              f"{d['healthy_fpr']:.3f} (n={fpr[1]}), no result {none}")
        print("   recall>=0.5: " + ", ".join(f"{c}={v:.2f}(n={d['n_ge_0.5'][c]})" for c, v in d["recall_ge_0.5"].items()))
        cols = CLASSES + ["-"]
        print("   " + "truth\\pred".ljust(24) + "".join(f"{c[:8]:>9s}" for c in cols))
        for c in CLASSES:
            if c in conf:
                print("   " + c.ljust(24) + "".join(f"{conf[c].get(k, 0):9d}" for k in cols))
    print(f"\nerrors: {len(errors)}")
    ec = collections.Counter()
    who = collections.defaultdict(set)
    for e in errors:
        if e["kind"] == "nonzero-exit":
            key = (e["kind"], f"exit code {e['rc']}")
        else:
            msg = str(e.get("error", e.get("msg", "")))
            msg = re.sub(r"/tmp/.*?\.(csv|jsonl|wav|WAV|tiff)", "<file>", msg)
            key = (e["kind"], re.sub(r"\d+(\.\d+)?", "#", msg)[:260])
        ec[key] += 1
        if e.get("asset") or e.get("file"):
            who[key].add(e.get("asset") or [x for x in e.get("file", "").split("/") if x][-3 if "commissioning" in e.get("file", "") and "visit_" not in e.get("file", "") else -2])
    for (k, msg), n in ec.most_common():
        print(f"  {n:4d} x {k}: {msg}\n         machines/folders: {sorted(who[(k, msg)])}")
    print("\nwarnings (grouped):")
    for w in rep["warnings"][:60]:
        print(f"  {w['count']:4d} x [{w['modality']}] {w['text'][:150]}")
    return rep


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate")
    g.add_argument("--seed", type=int, default=7)
    g.add_argument("--machines", type=int, default=30)
    g.add_argument("--out")
    e = sub.add_parser("expert")
    e.add_argument("--fleet", required=True)
    s = sub.add_parser("score")
    s.add_argument("--fleet", required=True)
    s.add_argument("--with-healthy", action="store_true")
    s.add_argument("--out")
    s.add_argument("--records")
    s.add_argument("--groups", type=int, default=1, help="split each round's machines into this many calls")
    a = ap.parse_args()
    if a.cmd == "generate":
        generate(a)
    elif a.cmd == "expert":
        expert_report(json.load(open(os.path.join(a.fleet, "truth.json"))))
    else:
        score(a)


if __name__ == "__main__":
    main()
