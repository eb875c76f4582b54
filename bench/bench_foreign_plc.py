"""A foreign PLC fleet: the shipped PLC model on historian files from an independent generator.

    .venv/bin/python bench/bench_foreign_plc.py --out bench/results/foreign_plc.json

The models are checked by an outside party on data from another generator. This benchmark is our
own version of such a check for the PLC modality. Its generator was written from textbook
machinery physics WITHOUT reading linewatch's simulator (``linewatch/simulator/``), its feature
code (``pipeline/features/``), its training code (``models/``), ``scripts/`` or the other benches
(``bench/bench_foreign_fleet.py`` was read for its harness conventions only: argument names, the
batched ``linewatch inspect --json`` calls, the report layout). The linewatch material used was the
README, ``docs/simulator.md`` (the ``assets.json`` user schema and the historian file format of
the landing zone), the "``linewatch inspect``" section of ``docs/models.md``, the contract's tag
names and units (``linewatch/contract/plc_tags.py``) and the historian names/units that inspect
reads (``models/inspect/historian_tags.py``). Its conventions (severity scale, levels, noise,
process models, file layouts) are therefore its own.

Fleet (``--machines``, default 40): centrifugal pumps, fans (centrifugal / axial), screw and
piston compressors and belt/chain conveyor gearbox drives, each on a three-phase induction motor:
2-8 poles, 50 Hz (400/415 V) or 60 Hz (460/480 V) mains, an IEC rating of 2.2-90 kW, efficiency
and power factor rising with size and falling with pole count, rated current
``I_r = P / (sqrt(3) V pf eta)``, rated slip 1.2-6 % (smaller on big motors), magnetising current
25-45 % of ``I_r``; about a third on a variable-speed drive (half of those with slip
compensation). Each machine is recorded by its PLC at a 100 ms or 1 s tick.

Per sample (30-60 s of steady running, no inrush), the process sets the load:

* pump: flow fraction of BEP ``q`` 0.6-1.1 (1.5 % turbulence), shaft power
  ``sizing * sf^3 * (0.45 + 0.55 q)``, discharge pressure
  ``p_suction + dp_nom * sf^2 * (1 + a - a q^2)`` (pump curve, affinity law; ``sf`` = speed
  fraction), 0.4-1 % pressure turbulence;
* fan: damper position, power ``sizing * sf^3 * (0.55 + 0.45 d)``, duct static pressure in mbar
  (only some fans have one, only in wide exports);
* compressor: fixed-speed units cycle load/unload (period 20-60 s, duty 0.4-0.9, unloaded power
  25-35 %, pressure a sawtooth between cut-in and cut-out) or run fully loaded; drive units hold
  the set pressure at a constant-torque speed; piston units add a torque ripple at the crank rate
  that the PLC samples aliased (with scan jitter);
* conveyor: constant torque, material load 0.3-0.95 with an 8 % slow wander, power
  ``torque * sf``; some gear units report a lube-oil pressure ``~ sf^2``.

Motor: torque fraction ``tau = L / sf``; current from the phasor sum of an active part
``pf_r (0.06 + 0.94 tau)`` and a reactive part ``i0 + (sin phi_r - i0) tau^2`` (both x ``I_r``),
CT noise 0.3-0.8 %; speed ``120 f / p`` minus the slip ``s_r n_s tau`` (x 0.1 with slip
compensation), encoder noise 0.3-2 rpm; winding rise
``R_w (c_fe (f/f_r)^1.5 + (1 - c_fe) (I/I_r)^2)`` (R_w 45-75 K, c_fe 0.2-0.35; self-ventilated
motors on a drive lose cooling at low speed); bearing rise = 20-35 % of the winding rise
(conduction) + friction 4-12 K ``sf^1.2 (0.7 + 0.3 tau)``; both first-order (tau_w 10-25 min,
tau_b 20-40 min) from the previous operating point, so they drift slowly; RTD noise 0.05-0.15 K
and a fixed offset; vibration velocity RMS at the machine class's ISO 10816 level (pumps 1-3
mm/s, fans 1.2-3.5, screw compressors 1.5-3.5, piston compressors 4-8, conveyors 0.8-2.5;
x 0.8 below 15 kW) ``x sf^1.5 (0.85 + 0.15 tau)``, 2-5 % slow wander and 2-5 % tick noise;
ambient 0-40 C (hall level per machine +- 6 K per sample). Run state 1 throughout.

Faults (severity uniform 0.45-1.0; levels linear in severity, from physics / expert thresholds,
never tuned against the model): imbalance: vibration RMS x 1.5-4 (bearings +1-3 K, current
+1 %); cavitation (pumps): differential pressure -4..-25 %, pressure fluctuation 3-10 % of the
differential, vibration x 1.3-2.5 with 15-25 % fluctuation, current -2..-8 % with 1.5-5 %
fluctuation; cooling failure: winding rise x 1.5-2.5, bearings +12 % of the extra winding rise;
bearing wear: bearing temperature +5..+25 K, vibration x 1.15-1.8 and spikier, current +1-2 %
(friction); electrical overheating (a loose lug): current flicker 0.5-2 %, winding +0.5-2 K,
little else visible in these tags.

Files (one format per machine, recorded): (a) the contract's historian long format exactly as
``docs/simulator.md`` describes (``plc-<ASSET>-<stamp>.csv``, ``timestamp,tag,value,quality,unit``,
``<ASSET>.<tag>``, rare Uncertain/Bad samples); (b) a historian *wide* CSV export with the plant's
own column names and units (three styles: ``words`` e.g. ``Motor Current (A)``, ``DE Bearing Temp
(°F)``, ``Vibration (in/s)``, ``Discharge Pressure psi``, ``Running`` RUNNING/STOPPED; ``codes`` e.g.
``MTR_AMPS``, ``DE_BRG_TEMP_F``, ``VIB_VEL_IPS``, ``DISCH_PRESS_KPA``, ``RUN_STS``; ``eu``: the
words style as a European spreadsheet writes it, ``;``-separated with decimal commas and
``dd.mm.yyyy`` times), with extra columns that are not tags (alarm flag, setpoint, oil level,
run hours, ambient, flow, NDE bearing, suction pressure), named ``<ASSET>_trend_<date>.csv`` or
``<ASSET>/export_<n>.csv``; (c) JSON lines of the long format (ISO or epoch-ms timestamps).
``assets.json`` entries are written as a user would (documented key variants; rated current,
nominal pressure and the speed given or left out).

Scoring: ``linewatch inspect FILE... --assets assets.json --json`` in batches (``--batch``, 60
files), ``--workers`` calls at a time. With ``--healthy-plc`` (added in linewatch's session 20, not by
the generator's author) one more healthy file per machine is written, a run at rated speed two days
before the samples from its own random stream (the scored files are unchanged), and every call gets
``--healthy-plc`` with those of the machines in it: what a user with a healthy day of the
historian gives. Reported: recall per class the PLC model names (the classes
the records ever give a probability), also past moderate severity (>= 0.5) and per severity bin,
detection (any fault class) per true class, healthy false-positive rate, the confusion matrix,
breakdowns by machine kind, file variant/style, tick, drive, and whether ``assets.json`` had the
rated current / nominal pressure; files with errors (with the text), warnings, and an "expert"
reference: each fault's true indicator (vibration ratio at the true speed, winding rise ratio over
the true ambient with the true rated current, bearing rise over ambient, pressure coefficient of
variation, current flicker) against the machine's own healthy median, thresholded at the 99th
percentile of all healthy samples.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import shutil
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.signal import lfilter

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from inspect_runner import code_snapshot, run_inspect  # noqa: E402  (bench/ is not a package)

Arr = NDArray[np.float64]

CLASSES = ("normal", "bearing_wear", "imbalance", "cavitation", "electrical_overheating", "cooling_failure")
FAULTS = CLASSES[1:]
SEV_LO, SEV_HI = 0.45, 1.0
MODERATE = 0.5
SEVERITY_BINS = ((0.45, 0.6), (0.6, 0.75), (0.75, 0.9), (0.9, 1.0001))
START = datetime(2027, 4, 5, 6, 0, 0, tzinfo=UTC)

# Fault levels at severity 0.45 and 1.0 (linear in between): physics / expert thresholds.
IMBALANCE_VIB_RATIO = (1.5, 4.0)      # ISO 10816: x1.5 moves a zone-B machine towards C; x4 is zone D
IMBALANCE_BEARING_K = (1.0, 3.0)
CAV_HEAD_DROP = (0.04, 0.25)          # of the differential (NPSH3 = 3 % drop; developed cavitation 10-30 %)
CAV_PRESSURE_STD = (0.03, 0.10)       # of the differential
CAV_VIB_RATIO = (1.3, 2.5)
CAV_VIB_FLUCT = (0.15, 0.25)
CAV_CURRENT_DROP = (0.02, 0.08)
CAV_CURRENT_STD = (0.015, 0.05)
COOLING_RISE_RATIO = (1.5, 2.5)       # TEFC motor without its fan: about twice its rise
COOLING_BEARING_SHARE = 0.12
BEARING_TEMP_K = (5.0, 25.0)
BEARING_VIB_RATIO = (1.15, 1.8)
BEARING_CURRENT = (0.01, 0.02)
ELEC_CURRENT_FLICKER = (0.005, 0.02)
ELEC_WINDING_K = (0.5, 2.0)

IEC_KW = (2.2, 3.0, 4.0, 5.5, 7.5, 11.0, 15.0, 18.5, 22.0, 30.0, 37.0, 45.0, 55.0, 75.0, 90.0)
KINDS = ("pump", "fan", "compressor", "conveyor")
KIND_WEIGHTS = (0.35, 0.2, 0.2, 0.25)
TYPE_NAMES = {
    "pump": ("centrifugal_pump", "centrifugal_pump", "end-suction pump", "process pump", "cooling water pump"),
    "fan": ("fan", "fan", "exhaust fan", "supply air fan", "axial fan"),
    "compressor": ("compressor", "compressor", "screw compressor", "air compressor"),
    "conveyor": ("conveyor", "conveyor", "belt conveyor", "conveyor drive"),
}
ID_PREFIX = {"pump": ("P", "PU", "CWP"), "fan": ("FAN", "EF", "AHU"), "compressor": ("AC", "CMP"),
             "conveyor": ("CV", "BC")}
VIB_BASE = {"pump": (1.0, 3.0), "fan": (1.2, 3.5), "screw": (1.5, 3.5), "piston": (4.0, 8.0),
            "conveyor": (0.8, 2.5)}
DECIMALS = {"motor_current_a": 2, "speed_rpm": 1, "bearing_temp_c": 2, "winding_temp_c": 2,
            "vibration_rms_mm_s": 3, "pressure_bar": 2, "run_state": 0}
UNITS = {"motor_current_a": "A", "speed_rpm": "rpm", "bearing_temp_c": "degC", "winding_temp_c": "degC",
         "vibration_rms_mm_s": "mm/s", "pressure_bar": "bar", "run_state": "bool"}
TAGS = tuple(UNITS)
SHORT = {"motor_current_a": "current", "speed_rpm": "speed", "bearing_temp_c": "bearing", "winding_temp_c": "winding",
         "vibration_rms_mm_s": "vibration", "pressure_bar": "pressure", "run_state": "run"}
VARIANTS = ("a", "b", "c")
VARIANT_DOC = {"a": "historian long CSV (contract)", "b": "historian wide CSV (plant names/units)",
               "c": "JSON lines (long format)"}


@dataclass
class Machine:
    index: int
    asset_id: str
    kind: str
    subkind: str
    type_name: str
    poles: int
    line_hz: float
    volts: float
    power_kw: float
    eta: float
    pf: float
    i_rated: float
    i0: float
    slip_rated: float
    vfd: bool
    slip_comp: bool
    forced_vent: bool
    sf_range: tuple[float, float]
    r_wdg: float
    c_fe: float
    tau_w: float
    brg_cond: float
    r_fric: float
    tau_b: float
    v_base: float
    v_wander: float
    v_white: float
    ct_noise: float
    rtd_noise: float
    rtd_off_b: float
    rtd_off_w: float
    speed_noise: float
    tick_s: float
    hall_c: float
    sizing: float
    has_pressure: bool
    pressure_kind: str  # discharge | air | lube | duct | none
    p_suction: float = 0.0
    dp_nom: float = 0.0
    head_a: float = 0.0
    p_cut_in: float = 0.0
    p_cut_out: float = 0.0
    unloaded: float = 0.0
    ripple: float = 0.0
    lube_bar: float = 0.0
    duct_mbar: float = 0.0
    variant: str = "a"
    style: str = "contract"
    columns: dict[str, Any] = field(default_factory=dict)
    assets_entry: dict[str, Any] = field(default_factory=dict)

    @property
    def sync_rpm(self) -> float:
        return 120.0 * self.line_hz / self.poles

    @property
    def rated_rpm(self) -> float:
        return self.sync_rpm * (1.0 - self.slip_rated)


@dataclass
class Sample:
    asset_id: str
    index: int
    cls: str
    severity: float
    ambient_c: float
    duration_s: float
    sf: float
    start: datetime
    process: dict[str, float]
    prev_load: float
    file: str = ""
    expert: dict[str, float] = field(default_factory=dict)
    truth: dict[str, float] = field(default_factory=dict)


# ----------------------------------------------------------------------------------------- fleet


def _lin(pair: tuple[float, float], severity: float) -> float:
    t = (severity - SEV_LO) / (SEV_HI - SEV_LO)
    return pair[0] + (pair[1] - pair[0]) * float(np.clip(t, 0.0, 1.0))


def _u(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(rng.uniform(lo, hi))


def _asset_id(kind: str, index: int, rng: np.random.Generator, width: int) -> str:
    prefix = str(rng.choice(ID_PREFIX[kind]))
    number = 100 + index * 3 + int(rng.integers(3))
    sep = "-" if rng.random() < 0.75 else ""
    return f"{prefix}{sep}{number:0{width}d}"


def draw_machine(index: int, seed: int, n_machines: int) -> Machine:
    rng = np.random.default_rng([seed, 11, index])
    kind = str(rng.choice(KINDS, p=KIND_WEIGHTS))
    subkind = {"pump": "centrifugal", "fan": str(rng.choice(["centrifugal", "axial"])),
               "compressor": str(rng.choice(["screw", "piston"], p=[0.65, 0.35])),
               "conveyor": str(rng.choice(["belt", "chain"]))}[kind]
    line_hz = 50.0 if rng.random() < 0.6 else 60.0
    volts = float(rng.choice([400.0, 400.0, 415.0])) if line_hz == 50.0 else float(rng.choice([460.0, 480.0]))
    poles = int(rng.choice({"pump": [2, 4], "fan": [2, 4, 6], "compressor": [2, 4], "conveyor": [4, 6, 8]}[kind]))
    power = float(rng.choice(IEC_KW))
    lg = (math.log10(power) - 0.3) / 1.65
    eta = 0.835 + 0.1 * lg - 0.008 * (poles - 2) / 2 + _u(rng, -0.01, 0.01)
    pf = 0.80 + 0.07 * lg - 0.03 * (poles - 2) / 2 + _u(rng, -0.02, 0.02)
    i_rated = power * 1000.0 / (math.sqrt(3) * volts * pf * eta)
    i0 = float(np.clip(0.25 + 0.05 * (poles - 2) / 2 + 0.05 * (1 - lg) + _u(rng, -0.03, 0.03), 0.2,
                       0.9 * math.sqrt(1 - pf * pf)))
    slip = float(np.clip((0.045 - 0.0075 * math.log(power / 2.2)) * _u(rng, 0.85, 1.15), 0.012, 0.06))
    vfd = bool(rng.random() < {"pump": 0.35, "fan": 0.45, "compressor": 0.3, "conveyor": 0.45}[kind])
    if kind == "compressor" and subkind == "piston":
        vfd = False
    sf_lo = {"pump": 0.55, "fan": 0.5, "compressor": 0.55, "conveyor": 0.45}[kind]
    width = max(3, len(str(100 + 3 * n_machines)))
    vb = VIB_BASE[subkind if kind == "compressor" else kind]
    m = Machine(
        index=index, asset_id=_asset_id(kind, index, rng, width), kind=kind, subkind=subkind,
        type_name=str(rng.choice(TYPE_NAMES[kind])), poles=poles, line_hz=line_hz, volts=volts, power_kw=power,
        eta=eta, pf=pf, i_rated=i_rated, i0=i0, slip_rated=slip, vfd=vfd, slip_comp=vfd and rng.random() < 0.5,
        forced_vent=vfd and rng.random() < 0.3, sf_range=(sf_lo, 1.0 if rng.random() < 0.7 else 1.05),
        r_wdg=_u(rng, 45, 75), c_fe=_u(rng, 0.2, 0.35), tau_w=_u(rng, 600, 1500),
        brg_cond=_u(rng, 0.2, 0.35), r_fric=_u(rng, 4, 12), tau_b=_u(rng, 1200, 2400),
        v_base=_u(rng, *vb) * (0.8 if power < 15 else 1.0), v_wander=_u(rng, 0.02, 0.05),
        v_white=_u(rng, 0.02, 0.05), ct_noise=_u(rng, 0.003, 0.008), rtd_noise=_u(rng, 0.05, 0.15),
        rtd_off_b=float(rng.normal(0, 0.8)), rtd_off_w=float(rng.normal(0, 1.0)), speed_noise=_u(rng, 0.3, 2.0),
        tick_s=0.1 if rng.random() < 0.55 else 1.0, hall_c=_u(rng, 6, 34), sizing=_u(rng, 0.7, 0.95),
        has_pressure=False, pressure_kind="none",
    )
    if kind == "pump":
        m.has_pressure, m.pressure_kind = True, "discharge"
        m.p_suction, m.dp_nom, m.head_a = _u(rng, 0.2, 2.0), _u(rng, 2.0, 10.0), _u(rng, 0.15, 0.3)
    elif kind == "compressor":
        m.has_pressure, m.pressure_kind = True, "air"
        m.p_cut_out = _u(rng, 7.0, 10.0)
        m.p_cut_in = m.p_cut_out - _u(rng, 0.5, 1.0)
        m.unloaded = _u(rng, 0.25, 0.35)
        m.ripple = _u(rng, 0.04, 0.08) if subkind == "piston" else 0.0
        m.sizing = _u(rng, 0.8, 0.95)
    elif kind == "conveyor" and rng.random() < 0.3:
        m.has_pressure, m.pressure_kind, m.lube_bar = True, "lube", _u(rng, 1.2, 2.5)
    m.variant = str(rng.choice(VARIANTS, p=[0.4, 0.35, 0.25]))
    if m.variant == "b":
        m.style = str(rng.choice(["words", "codes", "eu"], p=[0.45, 0.4, 0.15]))
        m.columns = _wide_columns(m, rng)
    elif m.variant == "c":
        m.style = "iso" if rng.random() < 0.7 else "epoch_ms"
    if kind == "fan" and m.variant == "b" and rng.random() < 0.4:
        m.has_pressure, m.pressure_kind, m.duct_mbar = True, "duct", _u(rng, 5.0, 25.0)
        m.columns = _wide_columns(m, rng)
    m.assets_entry = asset_entry(m, rng)
    return m


# -------------------------------------------------------------------------- wide export naming


def _wide_columns(m: Machine, rng: np.random.Generator) -> dict[str, Any]:
    """Column names, units and order of a plant historian's wide export of this machine."""
    codes = m.style == "codes"

    def pick(xs: list[Any]) -> Any:
        return xs[int(rng.integers(len(xs)))]

    cols: dict[str, tuple[str, str]] = {}  # tag -> (column, unit)
    cols["motor_current_a"] = pick([("MTR_AMPS", "A"), ("MTR_CURR_A", "A")] if codes else
                                   [("Motor Current (A)", "A"), ("Motor Amps", "A"), ("Current L1 [A]", "A")])
    cols["speed_rpm"] = pick([("MTR_SPEED_RPM", "rpm"), ("SHAFT_SPEED_HZ", "Hz"), ("MTR_SPD_RPM", "rpm"),
                              ("SHAFT_SPD_HZ", "Hz")] if codes else
                             [("Motor Speed (rpm)", "rpm"), ("Shaft Speed [Hz]", "Hz"), ("Speed (RPM)", "rpm")])
    cols["bearing_temp_c"] = pick([("DE_BRG_TEMP_F", "F"), ("DE_BRG_TEMP_C", "C")] if codes else
                                  [("DE Bearing Temp (°F)", "F"), ("Bearing Temperature DE [°C]", "C"),
                                   ("Brg Temp DE (C)", "C")])
    cols["winding_temp_c"] = pick([("WDG_TEMP_K", "K"), ("STATOR_TEMP_C", "C"), ("WDG_TEMP_DEGF", "F")] if codes else
                                  [("Winding Temp (K)", "K"), ("Stator Winding Temperature (°C)", "C"),
                                   ("Motor Winding Temp (F)", "F")])
    cols["vibration_rms_mm_s"] = pick([("VIB_VEL_IPS", "in/s"), ("VIB_VEL_MMS", "mm/s")] if codes else
                                      [("Vibration (in/s)", "in/s"), ("Vibration Velocity (mm/s)", "mm/s"),
                                       ("DE Vib RMS (mm/s)", "mm/s")])
    if m.has_pressure:
        if m.pressure_kind == "duct":
            cols["pressure_bar"] = ("DUCT_STATIC_PRESS_MBAR", "mbar") if codes else ("Duct Static Pressure (mbar)", "mbar")
        elif m.pressure_kind == "lube":
            cols["pressure_bar"] = ("GBX_OIL_PRESS_BAR", "bar") if codes else ("Gearbox Oil Pressure (bar)", "bar")
        else:
            cols["pressure_bar"] = pick([("DISCH_PRESS_PSI", "psi"), ("DISCH_PRESS_BAR", "bar"),
                                         ("DISCH_PRESS_KPA", "kPa")] if codes else
                                        [("Discharge Pressure psi", "psi"), ("Discharge Pressure (bar)", "bar"),
                                         ("Disch Press [kPa]", "kPa")])
    cols["run_state"] = pick([("RUN_STS", "01"), ("RUN_STS", "RUN/STOP")] if codes else
                             [("Running", "RUNNING/STOPPED"), ("Run Status", "On/Off"), ("Motor Running", "01")])
    extras: list[tuple[str, str]] = []  # (column, what)
    if rng.random() < 0.6:
        extras.append(("VIB_HI_ALM" if codes else "High Vibration Alarm", "alarm"))
    if m.vfd:
        extras.append(("SPD_SP" if codes else "Speed Setpoint (rpm)", "setpoint"))
    if rng.random() < 0.5:
        extras.append(("OIL_LVL_PCT" if codes else "Oil Level (%)", "oil"))
    if rng.random() < 0.4:
        extras.append(("RUN_HRS" if codes else "Run Hours", "hours"))
    if rng.random() < 0.5:
        extras.append(("AMB_TEMP_C" if codes else "Ambient Temp (°C)", "ambient"))
    if rng.random() < 0.5:
        extras.append(("NDE_BRG_TEMP_C" if codes else "NDE Bearing Temp (°C)", "nde"))
    if m.kind == "pump" and rng.random() < 0.5:
        extras.append(("SUCT_PRESS_BAR" if codes else "Suction Pressure (bar)", "suction"))
    if m.kind == "pump" and rng.random() < 0.5:
        extras.append(("FLOW_M3H" if codes else "Flow (m3/h)", "flow"))
    order: list[tuple[str, str, str]] = [(t, c, u) for t, (c, u) in cols.items()]
    rng.shuffle(order)  # type: ignore[arg-type]
    # a historian's first column of a quantity is read: keep DE before NDE, discharge before suction
    names = [("tag", *o) for o in order]
    for col, what in extras:
        pos = int(rng.integers(len(names) + 1))
        if what == "nde":
            pos = max(pos, 1 + next(i for i, x in enumerate(names) if x[1] == "bearing_temp_c"))
        if what == "suction":
            pos = max(pos, 1 + next(i for i, x in enumerate(names) if x[1] == "pressure_bar"))
        names.insert(pos, ("extra", what, col, ""))
    time_col = "Timestamp" if m.style == "codes" else "Time"
    if m.style == "words" and rng.random() < 0.5:
        time_col = "Date/Time"
    return {"time": time_col, "columns": [list(n) for n in names]}


# --------------------------------------------------------------------------------- assets.json


def asset_entry(m: Machine, rng: np.random.Generator) -> dict[str, Any]:
    """The machine as a user writes it in assets.json (documented keys, optional fields left out)."""
    e: dict[str, Any] = {}
    e["name" if rng.random() < 0.1 else "asset_id"] = m.asset_id
    e["asset_type" if rng.random() < 0.8 else "type"] = m.type_name
    style = int(rng.integers(4))
    nameplate_rpm = float(round(m.rated_rpm / 5) * 5)
    if style == 0:
        e["nominal_rpm"] = nameplate_rpm
    elif style == 1:
        e["rated_rpm"] = nameplate_rpm
        e["poles"] = m.poles
    elif style == 2:
        e["poles"] = m.poles
    else:
        e["sync_rpm"] = m.sync_rpm
    if rng.random() < 0.7 or "poles" in e:
        e["line_frequency_hz"] = m.line_hz
    if m.vfd:
        if rng.random() < 0.5:
            e["vfd"] = True
        else:
            e["drive"] = "vfd"
        if rng.random() < 0.5:
            e["speed_range_rpm"] = [round(m.sf_range[0] * m.rated_rpm), round(m.sf_range[1] * m.rated_rpm)]
    if m.line_hz == 60.0 and rng.random() < 0.5:
        e["rated_power_hp"] = round(m.power_kw / 0.7457)
    else:
        e["rated_power_kw" if rng.random() < 0.8 else "power_kw"] = m.power_kw
    if rng.random() < 0.7:
        e["rated_voltage_v"] = m.volts
    if rng.random() < 0.65:
        e[str(rng.choice(["rated_current_a", "rated_current_a", "nominal_current_a", "fla_a"]))] = round(m.i_rated, 1)
    if m.kind == "pump" and rng.random() < 0.65:
        e["pressure_nominal_bar" if rng.random() < 0.7 else "nominal_pressure_bar"] = round(m.p_suction + m.dp_nom, 1)
    if m.kind == "compressor" and rng.random() < 0.65:
        e["pressure_nominal_bar"] = round(m.p_cut_out, 1)
    if m.pressure_kind == "lube" and rng.random() < 0.5:
        e["pressure_nominal_bar"] = round(m.lube_bar, 1)
    if rng.random() < 0.6:
        e["load_profile"] = {"pump": "steady", "fan": "steady", "conveyor": "varying",
                             "compressor": "cyclic"}[m.kind]
    return e


def write_assets(machines: list[Machine], path: Path, declare_reciprocating: bool = False) -> None:
    """``declare_reciprocating``: the piston compressors' entries say ``"reciprocating": true`` (what a
    user who knows the machine writes; the generated types call them "compressor" or "screw compressor")."""
    entries = [{**m.assets_entry, "reciprocating": True} if declare_reciprocating and m.subkind == "piston"
               else m.assets_entry for m in machines]
    path.write_text(json.dumps({"schema_version": 1, "assets": entries}, indent=1))


# ---------------------------------------------------------------------------------- samples


def plan_samples(m: Machine, seed: int, healthy: int, per_class: int) -> list[Sample]:
    rng = np.random.default_rng([seed, 12, m.index])
    classes = ["normal"] * healthy + [c for c in FAULTS if c != "cavitation" or m.kind == "pump"
                                      for _ in range(per_class)]
    rng.shuffle(classes)
    out = []
    t = START + timedelta(days=m.index % 28, hours=int(rng.integers(0, 12)))
    for k, cls in enumerate(classes):
        sev = _u(rng, SEV_LO, SEV_HI) if cls != "normal" else 0.0
        sf = _u(rng, *m.sf_range) if m.vfd else 1.0
        proc: dict[str, float] = {}
        if m.kind == "pump":
            proc["q"] = _u(rng, 0.6, 1.1)
        elif m.kind == "fan":
            proc["damper"] = _u(rng, 0.5, 1.0)
        elif m.kind == "compressor":
            proc["cycling"] = float(not m.vfd and rng.random() < 0.6)
            proc["period"], proc["duty"], proc["phase"] = _u(rng, 20, 60), _u(rng, 0.4, 0.9), _u(rng, 0, 1)
            proc["demand"] = _u(rng, 0.95, 1.0)
        else:
            proc["load"] = _u(rng, 0.3, 0.95)
        ms = int(rng.integers(0, 10)) * 100
        start = t + timedelta(milliseconds=ms)
        dur = float(rng.choice([30.0, 40.0, 45.0, 60.0]))
        out.append(Sample(asset_id=m.asset_id, index=k, cls=cls, severity=sev,
                          ambient_c=float(np.clip(m.hall_c + _u(rng, -6, 6), 0.0, 40.0)), duration_s=dur, sf=sf,
                          start=start, process=proc, prev_load=_u(rng, 0.8, 1.2)))
        t += timedelta(minutes=int(rng.integers(20, 200)))
    return out


def ar1(n: int, dt: float, tau: float, std: float, rng: np.random.Generator) -> Arr:
    """Stationary first-order autoregressive noise of standard deviation ``std``, correlation time ``tau``."""
    if std <= 0:
        return np.zeros(n)
    a = math.exp(-dt / tau)
    e = rng.standard_normal(n)
    e[0] /= math.sqrt(1 - a * a) if a < 1 else 1.0
    return np.asarray(lfilter([std * math.sqrt(1 - a * a)], [1.0, -a], e), dtype=np.float64)


def _motor_current(m: Machine, torque: Arr) -> Arr:
    sin_r = math.sqrt(1 - m.pf * m.pf)
    active = m.pf * (0.06 + 0.94 * torque)
    reactive = m.i0 + (sin_r - m.i0) * torque ** 2
    return m.i_rated * np.sqrt(active ** 2 + reactive ** 2)


def _winding_rise(m: Machine, s: Sample, i2: float) -> float:
    f_ratio = s.sf if m.vfd else 1.0
    vent = 1.0 if (not m.vfd or m.forced_vent) else 1.0 / (0.5 + 0.5 * s.sf)
    return m.r_wdg * (m.c_fe * f_ratio ** 1.5 + (1 - m.c_fe) * i2) * vent


def simulate(m: Machine, s: Sample, seed: int) -> dict[str, Arr]:
    """The PLC's tags over the recording, in the contract's units (true values + measurement)."""
    rng = np.random.default_rng([seed, 13, m.index, s.index])
    dt = m.tick_s
    n = int(round(s.duration_s / dt))
    t = np.arange(n) * dt
    sev, cls, sf = s.severity, s.cls, s.sf
    pressure: Arr | None = None
    # ---- process: shaft power fraction L(t) and pressure
    if m.kind == "pump":
        q = s.process["q"] * (1 + ar1(n, dt, 5.0, 0.015, rng))
        load = m.sizing * sf ** 3 * (0.45 + 0.55 * q)
        dp = m.dp_nom * sf ** 2 * (1 + m.head_a - m.head_a * q ** 2)
        pressure = m.p_suction + dp * (1 + ar1(n, dt, 0.5, _u(rng, 0.004, 0.01), rng))
        if cls == "cavitation":
            dp_n = m.dp_nom * sf ** 2
            pressure = pressure - _lin(CAV_HEAD_DROP, sev) * dp_n
            fl = ar1(n, dt, 0.3, 1.0, rng) + (rng.random(n) < 0.03) * rng.uniform(-2.5, -1.0, n)
            pressure = pressure + _lin(CAV_PRESSURE_STD, sev) * dp_n * fl / math.sqrt(1 + 0.03 * 3.2)
            load = load * (1 - _lin(CAV_CURRENT_DROP, sev)) * (1 + ar1(n, dt, 0.3, _lin(CAV_CURRENT_STD, sev), rng))
            pressure = np.maximum(pressure, 0.05)
    elif m.kind == "fan":
        d = s.process["damper"]
        load = m.sizing * sf ** 3 * (0.55 + 0.45 * d) * (1 + ar1(n, dt, 3.0, 0.01, rng))
        if m.has_pressure:
            pressure = m.duct_mbar / 1000.0 * sf ** 2 * (0.6 + 0.4 * d) * (1 + ar1(n, dt, 1.0, 0.02, rng))
    elif m.kind == "compressor":
        if m.vfd:
            load = m.sizing * sf * (1 + ar1(n, dt, 2.0, 0.01, rng))
            pressure = m.p_cut_out - 0.3 + ar1(n, dt, 2.0, 0.03, rng)
        elif s.process["cycling"]:
            x = (t / s.process["period"] + s.process["phase"]) % 1.0
            duty = s.process["duty"]
            loaded = x < duty
            span = m.p_cut_out - m.p_cut_in
            pressure = np.where(loaded, m.p_cut_in + span * x / duty, m.p_cut_out - span * (x - duty) / (1 - duty))
            target = np.where(loaded, m.sizing * (0.92 + 0.08 * (pressure - m.p_cut_in) / span), m.unloaded)
            a = math.exp(-dt / 1.5)
            load = np.asarray(lfilter([1 - a], [1.0, -a], target, zi=[a * target[0]])[0], dtype=np.float64)
            pressure = pressure + ar1(n, dt, 1.0, 0.02, rng)
        else:
            load = m.sizing * s.process["demand"] * (1 + ar1(n, dt, 2.0, 0.01, rng))
            pressure = m.p_cut_out - _u(rng, 0.2, 0.4) + ar1(n, dt, 5.0, 0.04, rng)
        if m.ripple:
            f_r = m.rated_rpm / 60.0
            tj = t + rng.normal(0, 0.004, n)
            load = load * (1 + m.ripple * np.sin(2 * np.pi * f_r * tj + _u(rng, 0, 6.28)))
    else:
        torque_l = np.clip(s.process["load"] * (1 + ar1(n, dt, 8.0, 0.08, rng)), 0.1, 1.1)
        load = torque_l * sf
        if m.has_pressure:
            pressure = m.lube_bar * sf ** 2 * (1 + ar1(n, dt, 2.0, 0.01, rng))
    # ---- motor
    torque = np.clip(load / sf, 0.02, 1.3)
    if cls == "bearing_wear":
        torque = torque * (1 + _lin(BEARING_CURRENT, sev))
    if cls == "imbalance":
        torque = torque * 1.01
    current = _motor_current(m, torque)
    if cls == "electrical_overheating":
        current = current * (1 + rng.normal(0, _lin(ELEC_CURRENT_FLICKER, sev), n))
    current_meas = current * (1 + rng.normal(0, m.ct_noise, n)) + rng.normal(0, 0.02, n)
    f_e = m.line_hz * (sf if m.vfd else 1.0)
    slip_rpm = m.slip_rated * m.sync_rpm * torque * (0.1 if m.slip_comp else 1.0)
    speed = 120 * f_e / m.poles - slip_rpm + rng.normal(0, m.speed_noise, n)
    # ---- temperatures (first order from the previous operating point)
    i2 = float(np.mean((current / m.i_rated) ** 2))
    rise_h = _winding_rise(m, s, i2)
    rise_prev_h = _winding_rise(m, s, i2 * s.prev_load)
    extra = extra_prev = 0.0
    if cls == "cooling_failure":
        k = _lin(COOLING_RISE_RATIO, sev) - 1
        extra, extra_prev = k * rise_h, k * rise_prev_h
    elec = _lin(ELEC_WINDING_K, sev) if cls == "electrical_overheating" else 0.0
    w_ss, w_0 = rise_h + extra + elec, rise_prev_h + extra_prev + elec
    winding = s.ambient_c + w_ss + (w_0 - w_ss) * np.exp(-t / m.tau_w)
    tau_mean = float(np.mean(torque))
    fric = m.r_fric * sf ** 1.2 * (0.7 + 0.3 * tau_mean)
    b_add = (_lin(BEARING_TEMP_K, sev) if cls == "bearing_wear" else 0.0) + (
        _lin(IMBALANCE_BEARING_K, sev) if cls == "imbalance" else 0.0)
    b_ss = m.brg_cond * rise_h + fric + COOLING_BEARING_SHARE * extra + b_add
    b_0 = m.brg_cond * rise_prev_h + fric + COOLING_BEARING_SHARE * extra_prev + b_add
    bearing = s.ambient_c + b_ss + (b_0 - b_ss) * np.exp(-t / m.tau_b)
    bearing_meas = bearing + m.rtd_off_b + rng.normal(0, m.rtd_noise, n)
    winding_meas = winding + m.rtd_off_w + rng.normal(0, m.rtd_noise, n)
    # ---- vibration (ISO 10816 velocity RMS)
    v_h = m.v_base * sf ** 1.5 * (0.85 + 0.15 * tau_mean)
    ratio, fluct = 1.0, 0.0
    if cls == "imbalance":
        ratio = _lin(IMBALANCE_VIB_RATIO, sev)
    elif cls == "bearing_wear":
        ratio, fluct = _lin(BEARING_VIB_RATIO, sev), 0.08 * (sev - 0.2)
    elif cls == "cavitation":
        ratio, fluct = _lin(CAV_VIB_RATIO, sev), _lin(CAV_VIB_FLUCT, sev)
    vib = v_h * ratio * (1 + ar1(n, dt, _u(rng, 2, 8), m.v_wander, rng)) * (1 + rng.normal(0, m.v_white, n))
    if fluct:
        vib = vib * np.exp(ar1(n, dt, 0.5, fluct, rng))
    vib = np.maximum(vib, 0.01)
    out = {"motor_current_a": np.maximum(current_meas, 0.0), "speed_rpm": speed, "bearing_temp_c": bearing_meas,
           "winding_temp_c": winding_meas, "vibration_rms_mm_s": vib, "run_state": np.ones(n), "t": t}
    if pressure is not None:
        out["pressure_bar"] = pressure * (1 + rng.normal(0, 0.002, n))
    s.truth = {"load_mean": float(np.mean(load)), "torque_mean": tau_mean, "i_over_ir": float(np.mean(current)) / m.i_rated,
               "speed_rpm": float(np.mean(speed)), "winding_rise_k": float(w_ss), "bearing_rise_k": float(b_ss),
               "vib_mm_s": float(np.mean(vib)), "ticks": n}
    if pressure is not None:
        s.truth["pressure_bar"] = float(np.mean(pressure))
    s.expert = expert_stats(m, s, out)
    return out


def expert_stats(m: Machine, s: Sample, x: dict[str, Arr]) -> dict[str, float]:
    """What an analyst computes knowing the true ambient, rated current and speed (the indicators)."""
    sf_meas = float(np.mean(x["speed_rpm"])) / m.rated_rpm
    i2 = float(np.mean((x["motor_current_a"] / m.i_rated) ** 2))
    e = {"vib_norm": float(np.mean(x["vibration_rms_mm_s"])) / max(sf_meas, 0.3) ** 1.5,
         "winding_rise_norm": float(np.mean(x["winding_temp_c"]) - s.ambient_c) / (0.25 + 0.75 * i2),
         "bearing_rise_k": float(np.mean(x["bearing_temp_c"]) - s.ambient_c),
         "current_flicker": float(np.std(np.diff(x["motor_current_a"])) / np.mean(x["motor_current_a"]))}
    if "pressure_bar" in x:
        p = x["pressure_bar"]
        e["pressure_cv"] = float(np.std(p) / max(np.mean(p), 1e-6))
    return e


# --------------------------------------------------------------------------------------- files


def _stamp(d: datetime) -> str:
    return d.strftime("%Y%m%dT%H%M%S") + f"{d.microsecond // 1000:03d}"


def _iso(d: datetime) -> str:
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + f"{d.microsecond // 1000:03d}Z"


def _quality(rng: np.random.Generator, n: int) -> NDArray[Any]:
    u = rng.random(n)
    return np.where(u < 0.0005, "Bad", np.where(u < 0.0035, "Uncertain", "Good"))


def _long_rows(m: Machine, s: Sample, x: dict[str, Arr], rng: np.random.Generator) -> list[tuple[datetime, str, float, str, str]]:
    tags = [t for t in TAGS if t in x]
    n = len(x["t"])
    rows = []
    qual = {t: _quality(rng, n) for t in tags}
    for i in range(n):
        ts = s.start + timedelta(seconds=float(x["t"][i]))
        for tag in tags:
            q = str(qual[tag][i]) if tag != "run_state" else "Good"
            v = float(x[tag][i])
            if q == "Bad":
                v = 0.0
            rows.append((ts, f"{m.asset_id}.{tag}", round(v, DECIMALS[tag]), q, UNITS[tag]))
    return rows


def _fmt(v: float, d: int) -> str:
    return f"{v:.{d}f}" if d else str(int(round(v)))


def write_long_csv(m: Machine, s: Sample, x: dict[str, Arr], out: Path, rng: np.random.Generator) -> Path:
    path = out / "plc" / f"plc-{m.asset_id}-{_stamp(s.start)}.csv"
    lines = ["timestamp,tag,value,quality,unit"]
    for ts, tag, v, q, u in _long_rows(m, s, x, rng):
        lines.append(f"{_iso(ts)},{tag},{_fmt(v, DECIMALS[tag.split('.', 1)[1]])},{q},{u}")
    path.write_text("\n".join(lines) + "\n")
    return path


def write_jsonl(m: Machine, s: Sample, x: dict[str, Arr], out: Path, rng: np.random.Generator) -> Path:
    path = out / "plc" / f"plc-{m.asset_id}-{_stamp(s.start)}.jsonl"
    lines = []
    for ts, tag, v, q, u in _long_rows(m, s, x, rng):
        stamp: Any = _iso(ts) if m.style == "iso" else int(round(ts.timestamp() * 1000))
        val: Any = int(v) if DECIMALS[tag.split(".", 1)[1]] == 0 else v
        lines.append(json.dumps({"timestamp": stamp, "tag": tag, "value": val, "quality": q, "unit": u}))
    path.write_text("\n".join(lines) + "\n")
    return path


def _to_unit(tag: str, unit: str, v: Arr) -> tuple[Arr, int]:
    """Contract values → the plant's unit, with the decimals a historian writes."""
    if tag.endswith("_temp_c"):
        return {"F": (v * 9 / 5 + 32, 1), "K": (v + 273.15, 2), "C": (v, 1)}[unit]
    if tag == "vibration_rms_mm_s":
        return (v / 25.4, 4) if unit == "in/s" else (v, 2)
    if tag == "pressure_bar":
        return {"psi": (v / 0.0689476, 1), "kPa": (v * 100, 1), "bar": (v, 2), "mbar": (v * 1000, 1)}[unit]
    if tag == "speed_rpm":
        return (v / 60.0, 2) if unit == "Hz" else (v, 1)
    if tag == "motor_current_a":
        return v, 1
    return v, 0


def write_wide(m: Machine, s: Sample, x: dict[str, Arr], out: Path, rng: np.random.Generator) -> Path:
    n = len(x["t"])
    eu = m.style == "eu"
    sep = ";" if eu else ","
    spec = m.columns
    header = [spec["time"]]
    cells: list[list[str]] = []
    for entry in spec["columns"]:
        what, key, col, unit = entry
        header.append(col)
        if what == "tag":
            if key == "run_state":
                words = {"RUNNING/STOPPED": ("RUNNING", "STOPPED"), "On/Off": ("On", "Off"), "01": ("1", "0"),
                         "RUN/STOP": ("RUN", "STOP")}[unit]
                cells.append([words[0] if v > 0.5 else words[1] for v in x["run_state"]])
            elif key in x:
                vals, d = _to_unit(key, unit, x[key])
                cells.append([_fmt(float(v), d) for v in vals])
            else:
                cells.append([""] * n)
        else:
            cells.append(_extra_column(m, s, x, key, rng))
    lines = [sep.join(header)]
    for i in range(n):
        ts = (s.start + timedelta(seconds=float(x["t"][i]))).replace(tzinfo=None)
        frac = f"{ts.microsecond // 1000:03d}"
        if eu:
            stamp = ts.strftime("%d.%m.%Y %H:%M:%S") + ("," + frac if m.tick_s < 1 else "")
        elif m.style == "codes":
            stamp = ts.strftime("%Y-%m-%dT%H:%M:%S") + ("." + frac if m.tick_s < 1 else "")
        else:
            stamp = ts.strftime("%Y-%m-%d %H:%M:%S") + ("." + frac if m.tick_s < 1 else "")
        row = [stamp] + [c[i] for c in cells]
        if eu:
            row = [stamp] + [c.replace(".", ",") for c in row[1:]]
        lines.append(sep.join(row))
    if (m.index + s.index) % 2:
        path = out / "plc" / f"{m.asset_id}_trend_{s.start.strftime('%Y%m%d_%H%M%S')}.csv"
    else:
        (out / "plc" / m.asset_id).mkdir(exist_ok=True)
        path = out / "plc" / m.asset_id / f"export_{s.index:03d}.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _extra_column(m: Machine, s: Sample, x: dict[str, Arr], what: str, rng: np.random.Generator) -> list[str]:
    n = len(x["t"])
    if what == "alarm":
        return ["1" if v > 7.1 else "0" for v in x["vibration_rms_mm_s"]]
    if what == "setpoint":
        return [f"{s.sf * m.rated_rpm:.0f}"] * n
    if what == "oil":
        lvl = _u(rng, 55, 90)
        return [f"{lvl + d:.1f}" for d in rng.normal(0, 0.2, n)]
    if what == "hours":
        h0 = 1000 + 97 * m.index + 13 * s.index
        return [f"{h0 + float(t) / 3600:.2f}" for t in x["t"]]
    if what == "ambient":
        return [f"{s.ambient_c + d:.1f}" for d in rng.normal(0, 0.1, n)]
    if what == "nde":
        base = x["bearing_temp_c"] - _u(rng, 2, 6)
        return [f"{v:.1f}" for v in base]
    if what == "suction":
        return [f"{m.p_suction + d:.2f}" for d in rng.normal(0, 0.02, n)]
    if what == "flow":
        qn = _u(rng, 20, 400)
        return [f"{qn * s.process.get('q', 1.0) * s.sf * (1 + d):.1f}" for d in rng.normal(0, 0.01, n)]
    return [""] * n


def commissioning_sample(m: Machine, seed: int) -> Sample:
    """A healthy run of the machine at its rated speed, two days before the scored samples (what a
    commissioning export or a healthy day of the historian gives; ``--healthy-plc``). Its own random
    stream: the scored samples are the same with or without it."""
    s = plan_samples(m, seed + 7919, 1, 0)[0]
    return replace(s, index=999, sf=1.0, duration_s=60.0, start=START - timedelta(days=2, hours=m.index % 12))


def generate_machine(job: tuple[int, int, int, int, int, str, bool]) -> dict[str, Any]:
    index, seed, n_machines, healthy, per_class, data, commissioning = job
    m = draw_machine(index, seed, n_machines)
    out = Path(data)
    samples = plan_samples(m, seed, healthy, per_class)
    rng = np.random.default_rng([seed, 14, m.index])
    writer = {"a": write_long_csv, "b": write_wide, "c": write_jsonl}[m.variant]
    recs = []
    for s in samples:
        x = simulate(m, s, seed)
        s.file = str(writer(m, s, x, out, rng))
        d = asdict(s)
        d["start"] = _iso(s.start)
        recs.append(d)
    reference = None
    if commissioning:
        c = commissioning_sample(m, seed)
        (out / "commissioning" / "plc").mkdir(parents=True, exist_ok=True)
        reference = str(writer(m, c, simulate(m, c, seed), out / "commissioning", np.random.default_rng([seed, 16, m.index])))
    return {"machine": machine_summary(m), "samples": recs, "commissioning": reference}


def machine_summary(m: Machine) -> dict[str, Any]:
    keys = ("asset_id", "kind", "subkind", "type_name", "poles", "line_hz", "volts", "power_kw", "i_rated",
            "slip_rated", "vfd", "slip_comp", "tick_s", "v_base", "r_wdg", "pressure_kind", "variant", "style")
    d = {k: getattr(m, k) for k in keys}
    d["has_rated_current"] = any(k in m.assets_entry for k in ("rated_current_a", "nominal_current_a", "fla_a"))
    d["has_nominal_pressure"] = any(k in m.assets_entry for k in ("pressure_nominal_bar", "nominal_pressure_bar"))
    if m.columns:
        d["columns"] = [m.columns["time"]] + [c[2] for c in m.columns["columns"]]
    d["written_tags"] = [t for t in TAGS if t != "pressure_bar" or m.has_pressure]
    return d


# -------------------------------------------------------------------------------------- scoring


def score(samples: list[dict[str, Any]], assets: Path, workers: int, batch: int, seed: int, code: Path | None,
          registry: Path | None, references: dict[str, str] | None = None
          ) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """inspect calls of ``batch`` files each (machines mixed), ``workers`` at a time; ``references``
    (asset -> its commissioning export) go with each call as ``--healthy-plc`` for the machines in it."""
    from tqdm import tqdm

    files = [s["file"] for s in samples]
    order = np.random.default_rng([seed, 15]).permutation(len(files))
    files = [files[i] for i in order]
    calls = [files[i:i + batch] for i in range(0, len(files), batch)]
    by_file: dict[str, dict[str, Any]] = {}
    logs: list[dict[str, Any]] = []
    with ThreadPoolExecutor(workers) as pool, tqdm(total=len(calls), desc="inspect", unit="call") as bar:
        asset_of = {s["file"]: s["asset_id"] for s in samples}
        extras = [[a for aid in sorted({asset_of[f] for f in c} & set(references or {}))
                   for a in ("--healthy-plc", (references or {})[aid])] for c in calls]
        futures = [pool.submit(run_inspect, c, assets, code, registry, e) for c, e in zip(calls, extras, strict=True)]
        for call, fut in zip(calls, futures, strict=True):
            recs, stderr, rc, secs = fut.result()
            for r in recs:
                by_file[str(Path(r["file"]).resolve())] = r
            logs.append({"files": len(call), "rc": rc, "records": len(recs), "seconds": round(secs, 1),
                         "stderr_lines": stderr.count("\n"), "stderr_tail": stderr[-1500:] if rc not in (0, 1) else ""})
            bar.update(1)
    return by_file, logs


def what_if_pressure(rows: list[dict[str, Any]], data: Path, assets: Path, workers: int, batch: int, seed: int,
                     code: Path | None, registry: Path | None) -> dict[str, Any]:
    """Diagnostic: the contract-format files of machines WITHOUT a pressure tag, rescored with a constant
    1.0 bar ``pressure_bar`` tag added (a value that carries no information): does the missing tag alone
    change the verdicts?"""
    picked = [r for r in rows if r["variant"] == "a" and "pressure" in r["tags_missing"].split(",")]
    if not picked:
        return {}
    out_dir = data / "what_if_pressure"
    out_dir.mkdir(exist_ok=True)
    copies = []
    for r in picked:
        lines = (data / r["file"]).read_text().splitlines()
        new = [lines[0]]
        for line in lines[1:]:
            ts, tag = line.split(",", 2)[:2]
            if tag.endswith(".run_state"):
                new.append(f"{ts},{r['asset_id']}.pressure_bar,1.00,Good,bar")
            new.append(line)
        path = out_dir / Path(r["file"]).name
        path.write_text("\n".join(new) + "\n")
        copies.append({"sample": {"file": str(path)}, "row": r})
    by_file, _ = score([c["sample"] for c in copies], assets, workers, batch, seed, code, registry)
    before: dict[str, list[bool]] = defaultdict(list)
    after: dict[str, list[bool]] = defaultdict(list)
    for c in copies:
        r, rec = c["row"], by_file.get(str(Path(c["sample"]["file"]).resolve()), {})
        if r["pred"] is None or rec.get("class") is None:
            continue
        before[r["true"]].append(r["pred"] == r["true"])
        after[r["true"]].append(rec["class"] == r["true"])
    return {"doc": "contract-format (a) files of machines without a pressure tag, rescored with a constant "
                   "1.0 bar pressure_bar tag added; 'rate' = correct verdicts (healthy: normal)",
            "machines": sorted({c["row"]["asset_id"] for c in copies}),
            "before": {k: _rate(v) for k, v in before.items()}, "after": {k: _rate(v) for k, v in after.items()}}


# -------------------------------------------------------------------------------------- metrics


def _sev_bin(sev: float) -> str:
    for lo, hi in SEVERITY_BINS:
        if lo <= sev < hi:
            return f"{lo:.2f}-{min(hi, 1.0):.2f}"
    return "none"


def _rate(flags: list[bool]) -> dict[str, Any]:
    return {"rate": (sum(flags) / len(flags)) if flags else None, "k": int(sum(flags)), "n": len(flags)}


def attach(samples: list[dict[str, Any]], by_file: dict[str, dict[str, Any]],
           machines: dict[str, dict[str, Any]], data: Path) -> list[dict[str, Any]]:
    rows = []
    for s in samples:
        r = by_file.get(str(Path(s["file"]).resolve()), {})
        m = machines[s["asset_id"]]
        rows.append({
            "sample": f"{s['asset_id']}#{s['index']}", "asset_id": s["asset_id"], "true": s["cls"],
            "severity": round(s["severity"], 3), "file": os.path.relpath(s["file"], data),
            "kind": m["kind"], "variant": m["variant"], "style": m["style"], "tick_s": m["tick_s"], "vfd": m["vfd"],
            "has_rated_current": m["has_rated_current"], "has_nominal_pressure": m["has_nominal_pressure"],
            "pred": r.get("class") if r else None, "probabilities": r.get("probabilities"),
            "windows": r.get("windows"), "error": r.get("error") if r else "no record",
            "extrapolating": bool(r.get("extrapolating")), "warnings": list(r.get("warnings") or []),
            "asset_seen": r.get("asset_id"), "modality": r.get("modality"), "expert": s["expert"],
            "op": {"speed_fraction": round(s["sf"], 3), "ambient_c": round(s["ambient_c"], 1),
                   "duration_s": s["duration_s"], **{k: round(v, 3) for k, v in s["process"].items()}},
            "truth": s["truth"]})
        written = m["written_tags"]
        got = _read_tags(r, written) if r and not r.get("error") else []
        rows[-1]["tags_missing"] = (",".join(SHORT[t] for t in TAGS if t not in got) or "none") if got else "unread"
    return rows


def visible_classes(rows: list[dict[str, Any]]) -> list[str]:
    seen: set[str] = set()
    for r in rows:
        seen |= {c for c, v in (r["probabilities"] or {}).items() if v and v > 0}
    return [c for c in FAULTS if c in seen]


def metrics(rows: list[dict[str, Any]], visible: list[str]) -> dict[str, Any]:
    scored = [r for r in rows if r["pred"] is not None]
    healthy = [r for r in scored if r["true"] == "normal"]
    out: dict[str, Any] = {"visible": visible, "scored": len(scored), "unscored": len(rows) - len(scored),
                           "healthy_fpr": _rate([r["pred"] != "normal" for r in healthy])}
    recall, recall_mod, detect, by_sev = {}, {}, {}, {}
    for cls in FAULTS:
        hits = [r for r in scored if r["true"] == cls]
        detect[cls] = _rate([r["pred"] != "normal" for r in hits])
        if cls not in visible:
            continue
        recall[cls] = _rate([r["pred"] == cls for r in hits])
        recall_mod[cls] = _rate([r["pred"] == cls for r in hits if r["severity"] >= MODERATE])
        by_sev[cls] = {b: _rate([r["pred"] == cls for r in hits if _sev_bin(r["severity"]) == b])
                       for b in sorted({_sev_bin(r["severity"]) for r in hits})}
    out |= {"recall": recall, f"recall_severity_ge_{MODERATE}": recall_mod, "detected_any_fault": detect,
            "recall_by_severity": by_sev}
    labels = [*CLASSES, "none"]
    conf = {t: dict.fromkeys(labels, 0) for t in CLASSES}
    for r in rows:
        conf[r["true"]][r["pred"] if r["pred"] in labels else "none"] += 1
    out["confusion"] = conf
    out["errors"] = sum(1 for r in rows if r["error"])
    out["extrapolating"] = sum(1 for r in rows if r["extrapolating"])
    out["asset_mismatch"] = sum(1 for r in rows if r["asset_seen"] not in (None, r["asset_id"]))
    wk: Counter[str] = Counter()
    for r in rows:
        for w in r["warnings"]:
            wk[_warning_kind(w)] += 1
    out["warnings"] = dict(wk.most_common(25))
    out["outside_training_range_inputs"] = dict(Counter(x for r in rows for w in r["warnings"]
                                                        for x in _outside_inputs(w)).most_common())
    return out


def _warning_kind(w: str) -> str:
    if "model inputs lie far outside" in w:
        return "outside_training_range: " + w.split("(", 1)[-1].split(")", 1)[0][:100]
    if w.startswith("columns read as PLC tags"):
        return "columns read as PLC tags"
    if w.startswith("columns not read"):
        return "columns not read: " + ", ".join(re.findall(r"'([^']+)' \(also", w))
    return w[:110]


def _outside_inputs(w: str) -> list[str]:
    if "model inputs lie far outside" not in w:
        return []
    return [x.strip() for x in w.split("(", 1)[-1].split(")", 1)[0].split(",")]


def _read_tags(r: dict[str, Any], written: list[str]) -> list[str]:
    """The tags inspect read from the file: its mapping warning for a historian's names, else those written."""
    for w in r.get("warnings") or []:
        if w.startswith("columns read as PLC tags"):
            return sorted(set(re.findall(r"→ (\w+)", w)))
    return written


BREAKDOWNS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "kind": lambda r: r["kind"], "variant": lambda r: r["variant"], "style": lambda r: f"{r['variant']}:{r['style']}",
    "tick_s": lambda r: r["tick_s"], "vfd": lambda r: "vfd" if r["vfd"] else "fixed",
    "has_rated_current": lambda r: r["has_rated_current"], "tags_missing (as read)": lambda r: r["tags_missing"],
    "has_nominal_pressure (pumps, compressors)": lambda r: (r["has_nominal_pressure"]
                                                           if r["kind"] in ("pump", "compressor") else None),
}


def breakdowns(rows: list[dict[str, Any]], visible: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, fn in BREAKDOWNS.items():
        groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in rows:
            g = fn(r)
            if g is not None:
                groups[str(g)].append(r)
        out[name] = {}
        for g, rs in sorted(groups.items()):
            ok = [r for r in rs if r["pred"] is not None]
            d: dict[str, Any] = {"n": len(rs), "errors": sum(1 for r in rs if r["error"]),
                                 "healthy_fpr": _rate([r["pred"] != "normal" for r in ok if r["true"] == "normal"]),
                                 "visible_recall": _rate([r["pred"] == r["true"] for r in ok if r["true"] in visible])}
            d["recall"] = {c: _rate([r["pred"] == c for r in ok if r["true"] == c]) for c in visible
                           if any(r["true"] == c for r in ok)}
            out[name][g] = d
    return out


EXPERT = {  # class -> (statistic, how it is compared with the machine's own healthy median, doc)
    "imbalance": ("vib_norm", "ratio", "mean vibration velocity / (speed fraction)^1.5, over the healthy median"),
    "cavitation": ("pressure_cv", "ratio", "pressure std / mean, over the healthy median (pumps)"),
    "cooling_failure": ("winding_rise_norm", "ratio",
                        "winding rise over true ambient / (0.25 + 0.75 (I/I_r)^2), over the healthy median"),
    "bearing_wear": ("bearing_rise_k", "diff", "bearing rise over true ambient minus the healthy median, K"),
    "electrical_overheating": ("current_flicker", "ratio",
                               "std of tick-to-tick current change / mean current, over the healthy median"),
}


def expert_metrics(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Detection by an analyst with the true indicators, at the 99th percentile of the healthy samples."""
    healthy = [s for s in samples if s["cls"] == "normal"]
    out: dict[str, Any] = {}
    for cls, (key, how, doc) in EXPERT.items():
        ref: dict[str, list[float]] = defaultdict(list)
        for s in healthy:
            if key in s["expert"]:
                ref[s["asset_id"]].append(s["expert"][key])
        med = {a: float(np.median(v)) for a, v in ref.items()}

        def stat(s: dict[str, Any], key: str = key, how: str = how, med: dict[str, float] = med) -> float:
            v = s["expert"][key]
            return v / med[s["asset_id"]] if how == "ratio" else v - med[s["asset_id"]]

        pool = [s for s in healthy if key in s["expert"] and s["asset_id"] in med]
        thr = float(np.percentile([stat(s) for s in pool], 99))
        faulty = [s for s in samples if s["cls"] == cls and key in s["expert"]]
        out[cls] = {"statistic": doc, "threshold": thr, "healthy_exceed": _rate([stat(s) > thr for s in pool]),
                    "detected": _rate([stat(s) > thr for s in faulty]),
                    f"detected_severity_ge_{MODERATE}": _rate([stat(s) > thr for s in faulty
                                                               if s["severity"] >= MODERATE]),
                    "by_severity": {b: _rate([stat(s) > thr for s in faulty if _sev_bin(s["severity"]) == b])
                                    for b in sorted({_sev_bin(s["severity"]) for s in faulty})},
                    "median_faulty": float(np.median([stat(s) for s in faulty])) if faulty else None,
                    "median_healthy": float(np.median([stat(s) for s in pool]))}
    return out


# --------------------------------------------------------------------------------------- report


def summary(report: dict[str, Any]) -> str:
    met = report["metrics"]
    ex = report["expert"]
    mod = f"recall_severity_ge_{MODERATE}"
    lines = [f"foreign PLC fleet: {report['counts']}", f"visible classes: {met['visible']}", "",
             f"{'class':24s} {'model recall':>16s} {'sev>=0.5':>16s} {'any fault':>16s}   expert"]
    for cls in FAULTS:
        r, rm, d = met["recall"].get(cls), met[mod].get(cls), met["detected_any_fault"][cls]
        lines.append(f"{cls:24s} {_cell(r):>16s} {_cell(rm):>16s} {_cell(d):>16s}   {_cell(ex[cls]['detected'])}")
    f = met["healthy_fpr"]
    lines.append(f"{'healthy FPR':24s} {f['rate']:.3f} ({f['k']}/{f['n']})")
    lines.append(f"errors {met['errors']}, extrapolating {met['extrapolating']}, asset mismatches {met['asset_mismatch']}, "
                 f"unscored {met['unscored']}")
    lines.append("confusion (rows true, columns predicted " + " ".join(c[:6] for c in [*CLASSES, "none"]) + "):")
    for t, row in met["confusion"].items():
        lines.append(f"  {t:24s} " + " ".join(f"{v:6d}" for v in row.values()))
    for split in BREAKDOWNS:
        cells = []
        for g, d in report["breakdowns"][split].items():
            fpr, rec = d["healthy_fpr"], d["visible_recall"]
            cells.append(f"{g}: FPR {_r(fpr)} recall {_r(rec)} err {d['errors']}/{d['n']}")
        lines.append(f"by {split}: " + "; ".join(cells))
    if report["error_examples"]:
        lines.append("errors:")
        for e, n in report["error_kinds"].items():
            lines.append(f"  {n:4d} x {e}")
    return "\n".join(lines)


def _cell(x: dict[str, Any] | None) -> str:
    return f"{x['rate']:.3f} ({x['k']}/{x['n']})" if x and x["rate"] is not None else "-"


def _r(x: dict[str, Any]) -> str:
    return "-" if x["rate"] is None else f"{x['rate']:.2f} ({x['k']}/{x['n']})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "foreign_plc.json")
    ap.add_argument("--seed", type=int, default=20270405)
    ap.add_argument("--machines", type=int, default=40)
    ap.add_argument("--per-class", type=int, default=2, help="faulty samples per machine and class")
    ap.add_argument("--healthy", type=int, default=12, help="healthy samples per machine")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=60, help="files per inspect call")
    ap.add_argument("--data", type=Path, default=None, help="where to write the files (default: a temp dir, removed)")
    ap.add_argument("--code", choices=("tree", "head"), default="tree",
                    help="score with the working tree's linewatch, or with HEAD exported by `git archive`")
    ap.add_argument("--registry", type=Path, default=None,
                    help="score with this model registry (working tree's code; default: the shipped models)")
    ap.add_argument("--healthy-plc", action="store_true",
                    help="write a healthy commissioning export per machine (rated speed, two days before the "
                    "samples) and score every file with it (linewatch inspect --healthy-plc)")
    ap.add_argument("--declare-reciprocating", action="store_true",
                    help="assets.json declares the piston compressors reciprocating (\"reciprocating\": true)")
    ap.add_argument("--no-what-if", dest="what_if", action="store_false",
                    help="skip the diagnostic rescoring of pressure-less machines with a constant pressure tag")
    args = ap.parse_args()
    if args.registry is not None and args.code != "tree":
        ap.error("--registry scores with the working tree's code: leave --code at tree")
    if args.healthy_plc and args.code != "tree":
        ap.error("--healthy-plc needs the working tree's linewatch inspect: leave --code at tree")
    t0 = time.time()
    data = args.data or Path(os.environ.get("TMPDIR", "/tmp")) / f"foreign_plc_{args.seed}"
    if data.exists():
        shutil.rmtree(data)
    (data / "plc").mkdir(parents=True)
    machines_list = [draw_machine(i, args.seed, args.machines) for i in range(args.machines)]
    ids = [m.asset_id for m in machines_list]
    assert len(set(ids)) == len(ids) and not any(a != b and b.startswith(a) for a in ids for b in ids), ids
    assets = data / "assets.json"
    write_assets(machines_list, assets, args.declare_reciprocating)
    code, code_info = code_snapshot(args.code, data)
    jobs = [(i, args.seed, args.machines, args.healthy, args.per_class, str(data), args.healthy_plc)
            for i in range(args.machines)]
    with ProcessPoolExecutor(max(1, min(args.workers, 2))) as pool:
        results = list(pool.map(generate_machine, jobs))
    t_gen = time.time() - t0
    samples = [s for r in results for s in r["samples"]]
    machines = {r["machine"]["asset_id"]: r["machine"] for r in results}
    t1 = time.time()
    references = {r["machine"]["asset_id"]: r["commissioning"] for r in results if r["commissioning"]}
    by_file, logs = score(samples, assets, args.workers, args.batch, args.seed, code, args.registry, references)
    t_score = time.time() - t1
    rows = attach(samples, by_file, machines, data)
    visible = visible_classes(rows)
    what_if = (what_if_pressure(rows, data, assets, args.workers, args.batch, args.seed, code, args.registry)
               if args.what_if else {})
    errors = [{"file": r["file"], "variant": f"{r['variant']}:{r['style']}",
               "error": r["error"].replace(str(data / r["file"]) + ": ", "")} for r in rows if r["error"]]
    report = {
        "command": " ".join([".venv/bin/python", "bench/bench_foreign_plc.py", *sys.argv[1:]]),
        "seed": args.seed, "code": code_info, "registry": str(args.registry) if args.registry else "models/default",
        "healthy_plc": "a commissioning export per machine (--healthy-plc)" if args.healthy_plc else None,
        "host": platform.node(), "cpus": os.cpu_count(), "workers": args.workers, "batch": args.batch,
        "generation_s": round(t_gen, 1), "scoring_s": round(t_score, 1), "total_s": None,
        "counts": {"machines": len(machines), "files": len(samples),
                   "per_class": dict(Counter(s["cls"] for s in samples)),
                   "kinds": dict(Counter(m["kind"] for m in machines.values())),
                   "variants": dict(Counter(f"{m['variant']}:{m['style']}" for m in machines.values())),
                   "ticks": dict(Counter(str(m["tick_s"]) for m in machines.values()))},
        "variant_doc": VARIANT_DOC,
        "fault_levels": {"severity_range": [SEV_LO, SEV_HI], "imbalance_vibration_ratio": IMBALANCE_VIB_RATIO,
                         "imbalance_bearing_k": IMBALANCE_BEARING_K, "cavitation_head_drop": CAV_HEAD_DROP,
                         "cavitation_pressure_std": CAV_PRESSURE_STD, "cavitation_vibration_ratio": CAV_VIB_RATIO,
                         "cavitation_current_drop": CAV_CURRENT_DROP, "cavitation_current_std": CAV_CURRENT_STD,
                         "cooling_winding_rise_ratio": COOLING_RISE_RATIO,
                         "cooling_bearing_share_of_extra_rise": COOLING_BEARING_SHARE,
                         "bearing_wear_temp_k": BEARING_TEMP_K, "bearing_wear_vibration_ratio": BEARING_VIB_RATIO,
                         "electrical_current_flicker": ELEC_CURRENT_FLICKER, "electrical_winding_k": ELEC_WINDING_K},
        "metrics": metrics(rows, visible), "breakdowns": breakdowns(rows, visible),
        "expert": expert_metrics(samples),
        "what_if_constant_pressure_tag": what_if,
        "error_kinds": dict(Counter(e["error"][:160] for e in errors).most_common(20)),
        "error_examples": errors[:40], "calls": logs,
        "assets_json": json.loads(assets.read_text()), "machines": machines,
        "class_order": list(CLASSES),
        "records": [{k: v for k, v in r.items() if k not in ("warnings",)}
                    | {"warnings": sorted({_warning_kind(w) for w in r["warnings"]}),
                       "probabilities": [round(float((r["probabilities"] or {}).get(c, 0.0)), 3) for c in CLASSES]}
                    for r in rows],
    }
    report["total_s"] = round(time.time() - t0, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(_compact(report), separators=(",", ":"), default=_json_default))
    print(summary(report))
    if what_if:
        print("what if a constant 1.0 bar pressure tag is added (contract files of machines without one): "
              + "; ".join(f"{k} {_r(what_if['before'][k])} -> {_r(what_if['after'][k])}" for k in what_if["before"]))
    print(f"generation {t_gen:.0f} s, scoring {t_score:.0f} s, total {report['total_s']:.0f} s; report {args.out}")
    if args.data is None:
        shutil.rmtree(data)


def _compact(o: Any) -> Any:
    """Floats to 4 significant digits (the report is committed)."""
    if isinstance(o, float):
        return float(f"{o:.4g}") if math.isfinite(o) else None
    if isinstance(o, dict):
        return {k: _compact(v) for k, v in o.items()}
    if isinstance(o, list | tuple):
        return [_compact(v) for v in o]
    if isinstance(o, np.generic):
        return _compact(o.item())
    return o


def _json_default(o: Any) -> Any:
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, datetime):
        return _iso(o)
    raise TypeError(type(o))


if __name__ == "__main__":
    main()
