"""Domain randomisation: fleets that vary everything a real fleet varies, for models that generalise.

The plant of :func:`~.assets.make_fleet` is one factory: 50 Hz mains, three machine types, six
bearing designations, 160 x 120 cameras. A model trained there learns that factory. The fleets
here are drawn from broad ranges (a :class:`DomainSpec`), per machine and per sample:

* **speed**: 50 or 60 Hz mains, 2-8 poles, and on a share of machines a variable-speed drive
  (VFD) running anywhere from 45 to 108 % of nameplate speed (shaft 10-60 Hz overall); a drive
  adds its PWM carrier whine and moves the magnetic hum with its output frequency; ``assets.json``
  gives the *nameplate* speed only, so the running speed has to be found in the signal;
* **bearings**: random geometry (7-17 rolling elements, ball/pitch ratio, contact angle) and
  three defect types (outer race, inner race, rolling element);
* **sound**: structural resonance 1.5-7 kHz (damping 2-25 %), microphone gain ±12 dB (per machine
  and per clip), placement (distance = machine level against the hall; high-frequency
  roll-off), other machines of the hall running at their own speeds, rotation harmonics and
  tones of every level, background from near silence (tone-dominated machines) to loud halls,
  bearing impacts and cavitation bursts from muffled to violently impulsive;
* **camera**: frame size (60 x 80 to 300 x 400), distance (machine scale), position, mirror
  image, per-part emissivity, hot clutter in the background (lamps, steam pipes), hall ambient
  -2 ... 42 °C; lug hot spots of other sizes;
* **heat** per machine: the winding's rise at rated current (30-95 K: motors run up to their
  class B design rise and past it), the motor body's share of it and its axial gradient, how a
  cooling failure shows (a broken fan flattens or reverses the gradient, blocked fins flatten or
  steepen it; how much of its heat reaches the bearing housings) and at which end worn bearings
  are (:class:`~.thermal.ThermalStyle`); off in the shipped domains, how much of a bearing's rise
  its housing's surface shows, how evenly warm the housing is, and how far the motor body reaches
  under the housings; the driven machine's process heat (a pump's fluid at 5-95 °C, the others
  5-70 K over ambient at full load);
* **signature strength** per machine (how loud, how hot a fault of a given severity is);
* **``assets.json`` variants**: optional fields left out or spelled differently, as another tool
  might write them (resonance band, bearing orders, nominal shaft speed, rated current ...).

:data:`TRAIN_DOMAIN` is what models train on; :data:`UNSEEN_DOMAIN` holds machine *types*
(fan, compressor) and parameter ranges (many-element bearings, frame sizes, microphone gains)
that training never sees: the second test set.

>>> fleet = domain_fleet(4, seed=1, domain=TRAIN_DOMAIN)
>>> [a.asset_type for a in fleet], fleet[0].asset_id
(['pump', 'press', 'conveyor', 'pump'], 'PMP-T0001')
>>> sample = DomainRenderer(fleet, seed=1).render(draw_domain_specs(1, fleet, seed=1)[0])
>>> sample.frame.shape == fleet[sample.spec.asset_index].layout.frame_hw, sample.clip.dtype.name
(True, 'int16')
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np
from scipy.signal import lfilter

from .assets import (
    ASSET_PREFIX,
    FRAME_HEIGHT,
    FRAME_WIDTH,
    Asset,
    BearingGeometry,
    Calibration,
    LoadProfile,
    ThermalLayout,
    asset_registry_json,
)
from .audio import AudioRenderer, ClipDrive, _resonator
from .config import DifficultyProfile, SimulatorConfig
from .drift import DRIFT_KINDS, DriftState, constant_drift
from .health import (
    FAULT_CLASSES,
    FAULT_INDEX,
    LABEL_THRESHOLD,
    constant_health,
    faults_for,
)
from .noise import make_rng
from .physics import CAVITATION_BURST_FLOOR, AssetPhysics, PhysicsBlock, Snapshot
from .plc import SENSOR_NOISE_TAGS, PlcSamples, measure
from .thermal import ThermalCamera

#: Fault variants of the randomised domain (the plant has outer-race bearing defects only).
DOMAIN_VARIANTS: dict[str, tuple[str, ...]] = {
    "bearing_wear": ("outer_race", "inner_race", "ball"),
    "electrical_overheating": ("loose_lug",),
    "cooling_failure": ("blocked_fins", "broken_fan"),
    "imbalance": ("imbalance", "misalignment"),
    "cavitation": ("suction_starved",),
}


@dataclass(frozen=True)
class DomainSpec:
    """Ranges a randomised fleet is drawn from (see the module docstring)."""

    name: str
    asset_types: tuple[str, ...]
    vfd_share: float = 0.4
    vfd_fraction: tuple[float, float] = (0.45, 1.08)
    shaft_hz: tuple[float, float] = (10.0, 60.0)
    bearing_elements: tuple[int, int] = (7, 12)
    bearing_ratio: tuple[float, float] = (0.14, 0.32)
    resonance_hz: tuple[float, float] = (1_500.0, 7_000.0)
    mic_gain_db: tuple[float, float] = (-10.0, 10.0)
    mic_gain_exclude_db: float = 0.0
    frame_sizes: tuple[tuple[int, int], ...] = ((60, 80), (120, 160), (150, 200), (240, 320))
    machine_scale: tuple[float, float] = (0.5, 1.25)
    ambient_c: tuple[float, float] = (-2.0, 42.0)
    emissivity_painted: tuple[float, float] = (0.78, 0.97)
    emissivity_metal: tuple[float, float] = (0.3, 0.8)
    signature_gain: tuple[float, float] = (0.65, 1.5)
    background_machines: float = 1.2
    schema_dropout: float = 1.0
    incipient_share: float = 0.3
    drift_fraction: float = 0.3
    body_share: tuple[float, float] = (0.4, 0.7)
    axial_slope: tuple[float, float] = (0.1, 0.45)
    cooling_slope_broken_fan: tuple[float, float] = (-1.0, 0.2)
    cooling_slope_blocked_fins: tuple[float, float] = (-0.5, 0.6)
    cooling_housing_share: tuple[float, float] = (0.15, 1.0)
    bearing_wear_nde_share: float = 0.35
    #: Off (None) in the shipped domains (docs/models.md, "Thermal: housings cooler than the
    #: body"; run v6b drew (0.5, 0.95), (0.0, 0.5), (-3, 6) and (-3, 2)): the share of a bearing's
    #: rise its housing shows, the housing's centre-over-rim contrast, and how far (base-view
    #: pixels) the motor body reaches under the NDE / DE housings (6 / 2 when off).
    housing_share: tuple[float, float] | None = None
    housing_core: tuple[float, float] | None = None
    body_overlap_nde: tuple[float, float] | None = None
    body_overlap_de: tuple[float, float] | None = None
    sync_impact_share: float = 0.0
    sync_impacts_per_rev: tuple[int, int] = (1, 6)
    sync_impact_scale: tuple[float, float] = (0.5, 12.0)
    #: Off (None) in the shipped domains: how much a healthy machine's part temperatures differ
    #: from one day to the next at the same load and ambient (drafts, sun, lubrication, the fan's
    #: wear): each part's rise over ambient scaled by ``1 ± U(0, f)`` and offset by ``N(0, k)``
    #: kelvin per sample, ``(f, k)`` (:func:`day_to_day`; docs/models.md, "Thermal: what one frame
    #: can tell").
    thermal_day_spread: tuple[float, float] | None = None
    #: The motor winding's rise over ambient at rated current, kelvin, drawn per machine (the
    #: frame surface shows ``body_share`` of it). Up to 95 K since 2026-12-05: an insulation class F
    #: motor is commonly designed for a class B rise (80 K) and runs near it at rated load; the
    #: (30, 70) of before taught the PLC model that any winding hotter than that is a cooling
    #: failure (docs/models.md, "PLC v6: motors that run hot").
    winding_rise_k: tuple[float, float] = (30.0, 95.0)
    #: Off (None) in the shipped domains: the NDE bearing's friction rise as a share of the DE
    #: bearing's, drawn per machine (0.8 when off). Bearing sizes, preload, grease fill and the fan's
    #: draft differ from motor to motor; with one fixed share a model learns that a healthy NDE is
    #: never about as warm as the DE and calls such a machine's NDE bearing worn. Trained with
    #: (0.55, 1.1) and not shipped: a healthy NDE that warm hides a cooling failure's warm NDE end
    #: (docs/models.md, "Thermal: a healthy NDE bearing as warm as the DE").
    nde_friction_share: tuple[float, float] | None = None
    #: Off (None) in the shipped domains: the share of its rated cooling a self-ventilated motor (its fan on
    #: its own shaft, IC411) keeps with the fan stopped, drawn per machine. On a drive at speed fraction k
    #: its winding rises ``1 / (a + (1 - a) k^0.8)`` times as far for the same losses (the fan slows with the
    #: shaft; :func:`.physics.fan_cooling_share`), and the motor body in the frame with it. Real motors do;
    #: the shipped models learnt motors that cool the same at every speed (docs/models.md, "PLC: a drive's
    #: motor cools less at low speed").
    fan_still_share: tuple[float, float] | None = None
    #: Off (None) in the shipped domains: how noisy each machine's PLC transmitters read, a
    #: log-uniform factor per machine and tag on the profile's noise (current, speed, bearing and
    #: winding temperature, pressure): from a damped transmitter read through a filter to a noisy
    #: one. With one noise per tag the PLC model learnt each tag's noise level (a bearing temperature
    #: whose 60 s standard deviation is 0.12-0.21 K); trained with (0.05, 3.0), (0.1, 1.6) below and
    #: a burst floor of 0, and not shipped (docs/models.md, "PLC: transmitters that read smoother or
    #: noisier").
    sensor_noise: tuple[float, float] | None = None
    #: The vibration transmitter's noise, a log-uniform factor on the profile's 6 % per machine: a
    #: long RMS window (damped) to a short one.
    vibration_noise: tuple[float, float] = (0.3, 1.6)
    #: The least burstiness of a pump's cavitation vibration (:mod:`.physics`, ``varied_cavitation``:
    #: ``b`` from this to 0.9 per machine; 0: some pumps cavitate with a steady vibration).
    cavitation_burst_floor: float = CAVITATION_BURST_FLOOR
    #: The driven machine's surface, drawn per machine: a pump's casing sits near its fluid's
    #: temperature (°C: chilled water to hot water), the other driven machines run at this rise over
    #: ambient at full load (K: a conveyor's gearbox, a press's power pack, a screw compressor's
    #: casing at 60-100 °C). It is process heat, not a motor fault; until 2026-12-06 the ranges were
    #: (20, 50) °C and (10, 35) K, and the model read a compressor hotter than that as a worn bearing
    #: (docs/models.md, "Thermal v7: driven machines that run hot").
    driven_fluid_c: tuple[float, float] = (5.0, 95.0)
    driven_rise_k: tuple[float, float] = (5.0, 70.0)


TRAIN_DOMAIN = DomainSpec("train", ("pump", "press", "conveyor"))
UNSEEN_DOMAIN = DomainSpec(
    "unseen", ("fan", "compressor", "pump"), bearing_elements=(13, 17), bearing_ratio=(0.12, 0.2),
    mic_gain_db=(-14.0, 14.0), mic_gain_exclude_db=10.0,
    frame_sizes=((96, 128), (180, 240), (300, 400)), machine_scale=(0.45, 1.3))
DOMAINS: dict[str, DomainSpec] = {d.name: d for d in (TRAIN_DOMAIN, UNSEEN_DOMAIN)}

_BASE_BOXES: dict[str, tuple[float, float, float, float]] = {
    "nde_bearing": (17, 51, 28, 69), "motor_body": (22, 40, 84, 80), "terminal_box": (44, 27, 62, 40),
    "de_bearing": (82, 49, 94, 71), "coupling": (94, 54, 104, 66),
}
_DRIVEN_BOXES: dict[str, tuple[float, float, float, float]] = {
    "pump": (104, 36, 148, 86), "fan": (104, 28, 150, 92), "press": (104, 24, 140, 92),
    "compressor": (104, 30, 146, 88), "conveyor": (104, 38, 146, 84),
}


def _lu(rng: np.random.Generator, lo: float, hi: float) -> float:
    """Log-uniform draw."""
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


#: How far (base-view pixels) the motor body reaches under the NDE / DE housings in the base view.
BASE_BODY_OVERLAP: tuple[float, float] = (6.0, 2.0)


def _layout(rng: np.random.Generator, asset_type: str, spec: DomainSpec,
            body_overlap: tuple[float, float] = BASE_BODY_OVERLAP) -> ThermalLayout:
    """The machine's parts in its camera's frame. ``body_overlap``: how far (base-view pixels) the
    motor body reaches under the NDE / DE housings (6 / 2 in the base view; negative: a gap where
    the shaft shows), so that a housing's region sometimes holds body pixels and sometimes not."""
    h, w = spec.frame_sizes[int(rng.integers(len(spec.frame_sizes)))]
    base = dict(_BASE_BOXES)
    _, by0, _, by1 = base["motor_body"]
    base["motor_body"] = (base["nde_bearing"][2] - body_overlap[0], by0, base["de_bearing"][0] + body_overlap[1], by1)
    base["driven"] = _DRIVEN_BOXES[asset_type]
    if asset_type == "pump":
        base["pump_inlet"] = (136, 50, 150, 70)
    s = float(rng.uniform(*spec.machine_scale))
    k = s * min(w / FRAME_WIDTH, h / FRAME_HEIGHT)
    mirrored = bool(rng.random() < 0.5)
    # machine spans x 17..150, y 24..92 in the base view: keep it (mostly) inside the frame
    half_w, half_h = 67 * k, 34 * k
    cx = float(rng.uniform(min(half_w, w / 2), max(w - half_w, w / 2)))
    cy = float(rng.uniform(min(half_h + 4 * k, h / 2), max(h - half_h - 4 * k, h / 2)))
    boxes: dict[str, tuple[int, int, int, int]] = {}
    for name, (x0, y0, x1, y1) in base.items():
        xs = [(x - 83.5) * k for x in (x0, x1)]
        if mirrored:
            xs = [-x for x in xs][::-1]
        ys = [(y - 58.0) * k for y in (y0, y1)]
        bx0 = int(np.clip(round(cx + xs[0]), 0, w - 1))
        bx1 = int(np.clip(round(cx + xs[1]), bx0 + 1, w))
        by0 = int(np.clip(round(cy + ys[0]), 0, h - 1))
        by1 = int(np.clip(round(cy + ys[1]), by0 + 1, h))
        boxes[name] = (bx0, by0, bx1, by1)
    lug = (float(rng.uniform(0.25, 0.75)), float(rng.uniform(0.35, 0.75)))
    return ThermalLayout(boxes=boxes, fan_side=1 if mirrored else -1, scale=k, lug_uv=lug,
                         camera_offset_px=(cx - w / 2, cy - h / 2), frame_hw=(h, w))


def _poles_for(rng: np.random.Generator, asset_type: str) -> int:
    options = {"pump": (2, 4, 6), "fan": (2, 4, 6, 8), "press": (4, 6), "compressor": (2, 4), "conveyor": (4, 6, 8)}
    return int(rng.choice(options.get(asset_type, (2, 4, 6, 8))))


def _plc_style(i: int, seed: int, spec: DomainSpec) -> dict[str, float]:
    """Machine ``i``'s PLC instrumentation and process style as ``Asset.extra`` keys, from its own
    random stream (its other draws, and so its thermal and audio data, are unchanged): how noisy its
    vibration transmitter reads (``vibration_noise``, times the profile's 6 %: a short RMS window
    to a long one) and how much a press stroke or compressor load step shakes it
    (``stroke_vibration_mm_s``: from a machine whose cycles do not show in its vibration, e.g. a
    compressor unloading, to a press that jolts), and, with ``spec.sensor_noise``, how noisy its other
    transmitters read (``<tag>_noise`` for :data:`~.plc.SENSOR_NOISE_TAGS`, read by :func:`~.plc.measure`).

    >>> sorted(_plc_style(0, 11, TRAIN_DOMAIN))
    ['stroke_vibration_mm_s', 'vibration_noise']
    >>> style = _plc_style(0, 11, replace(TRAIN_DOMAIN, sensor_noise=(0.05, 3.0)))
    >>> sorted(k for k in style if k.endswith("_noise"))  # doctest: +NORMALIZE_WHITESPACE
    ['bearing_temp_c_noise', 'motor_current_a_noise', 'pressure_bar_noise', 'speed_rpm_noise',
     'vibration_noise', 'winding_temp_c_noise']
    >>> style["vibration_noise"] == _plc_style(0, 11, TRAIN_DOMAIN)["vibration_noise"]
    True
    """
    rng = make_rng(seed, "domain-plc-style", spec.name, i)
    style = {"vibration_noise": _lu(rng, *spec.vibration_noise), "stroke_vibration_mm_s": float(rng.uniform(0.0, 1.2))}
    if spec.sensor_noise is not None:  # the stream's last draws: the keys above are unchanged
        style.update({f"{tag}_noise": _lu(rng, *spec.sensor_noise) for tag in SENSOR_NOISE_TAGS})
    if spec.cavitation_burst_floor != CAVITATION_BURST_FLOOR:  # a constant, no draw
        style["cavitation_burst_floor"] = spec.cavitation_burst_floor
    return style


def _thermal_style(i: int, seed: int, spec: DomainSpec) -> dict[str, float]:
    """Machine ``i``'s :class:`~.thermal.ThermalStyle` as ``Asset.extra`` keys, from its own
    random stream (the machine's other draws, and so its PLC and audio data, are unchanged)."""
    rng = make_rng(seed, "domain-thermal-style", spec.name, i)
    style = {"thermal_body_share": float(rng.uniform(*spec.body_share)),
             "thermal_axial_slope": float(rng.uniform(*spec.axial_slope)),
             "thermal_cooling_slope_broken_fan": float(rng.uniform(*spec.cooling_slope_broken_fan)),
             "thermal_cooling_slope_blocked_fins": float(rng.uniform(*spec.cooling_slope_blocked_fins)),
             "thermal_cooling_housing_share": float(rng.uniform(*spec.cooling_housing_share)),
             "thermal_bearing_wear_nde_share": spec.bearing_wear_nde_share}
    if spec.housing_share is not None:
        style["thermal_housing_share"] = float(rng.uniform(*spec.housing_share))
    if spec.housing_core is not None:
        contrast = float(rng.uniform(*spec.housing_core))
        style["thermal_housing_rim"], style["thermal_housing_peak"] = 1.0 - 0.5 * contrast, contrast
    if spec.thermal_day_spread is not None:  # constants, no draw: the machine's other keys are unchanged
        style["thermal_day_rise"], style["thermal_day_offset_k"] = spec.thermal_day_spread
    if spec.nde_friction_share is not None:  # the stream's last draw: the keys above are unchanged
        style["thermal_nde_friction_share"] = float(rng.uniform(*spec.nde_friction_share))
    if spec.fan_still_share is not None:  # after it: every key above is unchanged
        style["motor_fan_still_share"] = float(rng.uniform(*spec.fan_still_share))
    return style


def day_to_day(snap: Snapshot, extra: dict[str, float], seed: int, index: int) -> Snapshot:
    """``snap`` with the part temperatures of one day of a machine whose ``extra`` has a
    ``thermal_day_rise`` / ``thermal_day_offset_k`` (:attr:`DomainSpec.thermal_day_spread`), from
    sample ``index``'s own random stream; else ``snap`` itself."""
    f, k = extra.get("thermal_day_rise", 0.0), extra.get("thermal_day_offset_k", 0.0)
    if not f and not k:
        return snap
    rng = make_rng(seed, "domain-thermal-day", index)
    amb = snap.ambient_c

    def day(t: float) -> float:
        return amb + (t - amb) * (1.0 + float(rng.uniform(-f, f))) + float(rng.normal(0.0, k))

    return replace(snap, winding_c=day(snap.winding_c), bearing_c=day(snap.bearing_c), nde_c=day(snap.nde_c),
                   coupling_c=day(snap.coupling_c), driven_c=day(snap.driven_c))


def _body_overlap(i: int, seed: int, spec: DomainSpec) -> tuple[float, float]:
    """Machine ``i``'s motor-body reach under its NDE / DE housings (base-view pixels; 6 / 2, the
    base view, when the domain does not draw it), from its own random stream (the layout's other
    draws, and the machine's PLC and audio data, are unchanged)."""
    if spec.body_overlap_nde is None and spec.body_overlap_de is None:
        return BASE_BODY_OVERLAP
    rng = make_rng(seed, "domain-thermal-geometry", spec.name, i)
    nde, de = BASE_BODY_OVERLAP
    return (float(rng.uniform(*spec.body_overlap_nde)) if spec.body_overlap_nde else nde,
            float(rng.uniform(*spec.body_overlap_de)) if spec.body_overlap_de else de)


def _sync_impacts(i: int, seed: int, spec: DomainSpec) -> dict[str, float]:
    """Machine ``i``'s healthy shaft-locked knocks as ``Asset.extra`` keys, from its own random
    stream (the machine's other draws are unchanged): on a ``sync_impact_share`` of the machines,
    1-6 knocks per revolution (valve clicks, a cam, a coupling with play) at 0.5-12x the level of
    the machine's random knocks, ringing the same structural resonance as a bearing defect.
    ``sync_impacts_per_rev`` 0: none. The share is 0 in ``TRAIN_DOMAIN`` / ``UNSEEN_DOMAIN`` (the
    shipped models' fleets); ``bench/bench_audio_sync_impacts.py`` and docs/models.md ("Audio:
    machines that knock in step with the shaft") use it."""
    rng = make_rng(seed, "domain-sync-impacts", spec.name, i)
    present = bool(rng.random() < spec.sync_impact_share)
    per_rev = int(rng.integers(spec.sync_impacts_per_rev[0], spec.sync_impacts_per_rev[1] + 1))
    return {"sync_impacts_per_rev": float(per_rev if present else 0),
            "sync_impact_scale": _lu(rng, *spec.sync_impact_scale),
            "sync_impact_phase": float(rng.uniform(0.0, 1.0))}


def domain_asset(i: int, seed: int, spec: DomainSpec) -> Asset:
    """Machine ``i`` of a randomised fleet (deterministic in ``(i, seed, spec.name)``)."""
    rng = make_rng(seed, "domain-asset", spec.name, i)
    asset_type = spec.asset_types[i % len(spec.asset_types)]
    line = float(rng.choice([50.0, 60.0]))
    poles = _poles_for(rng, asset_type)
    power = _lu(rng, 1.5, 90.0)
    rated_slip = float(np.clip(0.05 - 0.008 * math.log(power) + rng.normal(0, 0.004), 0.008, 0.06))
    volts = 400.0 if line == 50.0 else 460.0
    rated_current = power * 1000.0 / (math.sqrt(3.0) * volts * rng.uniform(0.8, 0.9) * rng.uniform(0.85, 0.95))
    n_el = int(rng.integers(spec.bearing_elements[0], spec.bearing_elements[1] + 1))
    pitch = float(rng.uniform(30.0, 120.0))
    ratio = float(rng.uniform(*spec.bearing_ratio))
    angle = 0.0 if rng.random() < 0.7 else float(rng.uniform(12.0, 40.0))
    bearing = BearingGeometry(f"X{n_el}-{pitch:.0f}", n_el, round(ratio * pitch, 2), round(pitch, 2), round(angle, 1))
    if asset_type in ("pump", "fan"):
        load = LoadProfile("steady", mean=float(rng.uniform(0.5, 0.95)), spread=float(rng.uniform(0.02, 0.08)))
    elif asset_type in ("press", "compressor"):
        load = LoadProfile("cyclic", mean=0.55, spread=0.03, cycle_s=float(rng.uniform(3.0, 12.0)),
                           duty=float(rng.uniform(0.25, 0.6)), high=float(rng.uniform(0.75, 1.0)),
                           low=float(rng.uniform(0.1, 0.4)))
    else:
        load = LoadProfile("varying", mean=float(rng.uniform(0.45, 0.85)), spread=float(rng.uniform(0.08, 0.25)))
    p_nom, p_fs = {"pump": (rng.uniform(1.5, 12.0), 25.0), "fan": (rng.uniform(0.01, 0.08), 0.2),
                   "press": (rng.uniform(90.0, 250.0), 320.0), "compressor": (rng.uniform(6.0, 12.0), 16.0),
                   "conveyor": (rng.uniform(1.0, 3.0), 6.0)}[asset_type]
    layout = _layout(rng, asset_type, spec, _body_overlap(i, seed, spec))
    g_lo, g_hi = spec.mic_gain_db
    gain_db = float(rng.uniform(g_lo, g_hi))
    while abs(gain_db) < spec.mic_gain_exclude_db:
        gain_db = float(rng.uniform(g_lo, g_hi))
    cal = Calibration(
        bearing_temp_offset_c=float(rng.normal(0.0, 1.0)), winding_temp_offset_c=float(rng.normal(0.0, 1.5)),
        current_gain=float(1.0 + rng.normal(0.0, 0.015)), mic_gain_db=gain_db,
        mic_noise=float(rng.uniform(1.0, 2.5)), camera_seed=int(rng.integers(0, 2**31 - 1)),
        camera_gain=float(1.0 + rng.normal(0.0, 0.005)), camera_offset_k=float(rng.normal(0.0, 0.8)))
    vfd = bool(rng.random() < spec.vfd_share)
    painted = spec.emissivity_painted
    extra = {
        "vfd": float(vfd),
        "pwm_carrier_hz": float(rng.choice([2_000.0, 4_000.0, 5_000.0, 8_000.0])) if vfd and rng.random() < 0.6 else 0.0,
        "pwm_level": _lu(rng, 0.0005, 0.006),
        "signature_gain": float(rng.uniform(*spec.signature_gain)),
        "hall_level": _lu(rng, 0.1, 3.0),
        # sound style: from tone-dominated quiet machines to noisy halls, and bearing impacts /
        # cavitation bursts from muffled to violently impulsive (what another simulator may do)
        "background_scale": _lu(rng, 0.08, 2.5),
        "hiss_scale": _lu(rng, 0.1, 3.0),
        "knock_scale": _lu(rng, 0.2, 4.0),
        "impact_scale": _lu(rng, 0.5, 8.0),
        "burst_scale": _lu(rng, 0.3, 3.0),
        "hot_clutter": float(rng.poisson(0.6)),
        "lug_scale": float(layout.scale * rng.uniform(0.7, 1.8)),
        **{f"emissivity_{part}": float(rng.uniform(*painted))
           for part in ("base", "driven", "motor_body", "nde_bearing", "terminal_box", "de_bearing")},
        "emissivity_coupling": float(rng.uniform(*spec.emissivity_metal)),
        **_thermal_style(i, seed, spec),
        **_plc_style(i, seed, spec),
        **_sync_impacts(i, seed, spec),
    }
    return Asset(
        asset_id=f"{ASSET_PREFIX[asset_type]}-{spec.name[0].upper()}{i + 1:04d}",
        asset_type=asset_type, index=i, line_frequency_hz=line, poles=poles, rated_slip=rated_slip,
        rated_power_kw=round(power, 2), rated_current_a=round(rated_current, 2), bearing=bearing,
        impeller_vanes=int(rng.integers(3, 10)) if asset_type in ("pump", "fan") else 0,
        gear_teeth=int(rng.integers(13, 42)) if asset_type == "conveyor" else 0,
        hydraulic_pistons=int(rng.integers(7, 10)) if asset_type == "press" else (
            int(rng.integers(2, 5)) if asset_type == "compressor" else 0),
        fan_blades=int(rng.integers(5, 14)),
        resonance_hz=float(rng.uniform(*spec.resonance_hz)), resonance_damping=_lu(rng, 0.02, 0.25),
        load=load, bearing_rise_k=float(rng.uniform(10.0, 30.0)), winding_rise_k=float(rng.uniform(*spec.winding_rise_k)),
        driven_base_c=float(rng.uniform(*spec.driven_fluid_c)), driven_rise_k=float(rng.uniform(*spec.driven_rise_k)),
        vib_base_mm_s=float(rng.uniform(0.6, 3.5)), pressure_nominal_bar=round(float(p_nom), 3),
        pressure_full_scale_bar=float(p_fs),
        harmonics=(0.022 * _lu(rng, 0.3, 4.0), 0.009 * _lu(rng, 0.25, 4.0), 0.004 * _lu(rng, 0.25, 4.0)),
        machine_level=_lu(rng, 0.5, 2.0), layout=layout, calibration=cal, extra=extra)


def domain_fleet(n: int, seed: int, domain: DomainSpec = TRAIN_DOMAIN) -> list[Asset]:
    """``n`` randomised machines cycling ``domain.asset_types``."""
    return [domain_asset(i, seed, domain) for i in range(n)]


def _drop_optional(entry: dict, rng: np.random.Generator, strength: float) -> dict:
    """Leave out / rename optional fields as another tool's ``assets.json`` might."""
    e = dict(entry)
    if rng.random() < 0.35 * strength:
        e.pop("resonance_band_hz", None)
    r = rng.random()
    if r < 0.3 * strength:  # geometry only (orders computed from it), maybe with other key names
        e.pop("bearing_orders", None)
        e.pop("bearing_frequencies_hz", None)
        if rng.random() < 0.5:
            b = dict(e["bearing"])
            e["bearing"] = {"designation": b["designation"], "n_balls": b["n_elements"],
                            "ball_diameter_mm": b["ball_d_mm"], "pitch_diameter_mm": b["pitch_d_mm"],
                            "contact_angle_deg": b["contact_angle_deg"]}
    elif r < 0.38 * strength:  # an unknown bearing: no geometry at all
        e.pop("bearing_orders", None)
        e.pop("bearing_frequencies_hz", None)
        e["bearing"] = {"designation": e["bearing"]["designation"]}
    if rng.random() < 0.3 * strength:
        e.pop("nominal_shaft_hz", None)
    if rng.random() < 0.1 * strength:
        e.pop("rated_current_a", None)
    if rng.random() < 0.15 * strength:
        e.pop("pressure_nominal_bar", None)
    if rng.random() < 0.1 * strength:
        e.pop("load_profile", None)
    return e


def domain_registry_json(fleet: list[Asset], seed: int = 0, domain: DomainSpec = TRAIN_DOMAIN,
                         config: SimulatorConfig | None = None) -> dict:
    """``assets.json`` of a randomised fleet: nameplate values (a VFD machine says ``"vfd": true``
    and its nameplate speed, not the speed it runs at), each machine's own ``frame`` size, and
    optional fields left out on some machines (``domain.schema_dropout``)."""
    doc = asset_registry_json(fleet, config)
    for a, entry in zip(fleet, doc["assets"], strict=True):
        h, w = a.layout.frame_hw
        entry["frame"] = {"width": w, "height": h, "dtype": "uint16", "unit": "centikelvin", "scale": 0.01}
        if a.extra.get("vfd"):
            entry["vfd"] = True
    rng = make_rng(seed, "domain-schema", domain.name)
    doc["assets"] = [_drop_optional(e, rng, domain.schema_dropout) for e in doc["assets"]]
    return doc


@dataclass(frozen=True)
class DomainSampleSpec:
    """One drawn sample of a randomised fleet."""

    index: int
    asset_index: int
    asset_id: str
    asset_type: str
    fault: str
    physical_fault: str
    severity: float
    variant: str
    drift: str
    drift_level: float
    drift_sign: float
    load_level: float
    ambient_c: float
    drive_fraction: float
    mic_gain_jitter_db: float
    mic_cutoff_hz: float
    t_s: float


def draw_domain_specs(samples_per_class: int, fleet: list[Asset], seed: int,
                      domain: DomainSpec = TRAIN_DOMAIN) -> list[DomainSampleSpec]:
    """Balanced, shuffled samples: severities half uniform on [0.05, 1], half early-stage heavy
    (``0.05 + 0.95 Beta(1.2, 2.2)``); ``domain.incipient_share`` of ``normal`` samples carry a
    sub-threshold fault; cavitation only on pumps."""
    rng = make_rng(seed, "domain-specs", domain.name)
    pumps = [i for i, a in enumerate(fleet) if a.asset_type == "pump"]
    raw = []
    for label in FAULT_CLASSES:
        pool = pumps if label == "cavitation" else list(range(len(fleet)))
        if not pool:
            continue
        for _ in range(samples_per_class):
            ai = pool[int(rng.integers(len(pool)))]
            a = fleet[ai]
            if label == "normal":
                if rng.random() < domain.incipient_share:
                    phys = str(rng.choice(faults_for(a.asset_type)))
                    sev = float(rng.uniform(0.005, LABEL_THRESHOLD * 0.98))
                else:
                    phys, sev = "normal", 0.0
            else:
                phys = label
                sev = float(rng.uniform(LABEL_THRESHOLD, 1.0)) if rng.random() < 0.5 else float(
                    LABEL_THRESHOLD + (1 - LABEL_THRESHOLD) * rng.beta(1.2, 2.2))
            variant = str(rng.choice(DOMAIN_VARIANTS[phys])) if phys != "normal" else ""
            if rng.random() < domain.drift_fraction:
                drift = str(rng.choice(DRIFT_KINDS))
                level, sign = float(rng.uniform(0.3, 1.0)), float(rng.choice([-1.0, 1.0]))
            else:
                drift, level, sign = "none", 0.0, 1.0
            shaft_nom = a.nominal_shaft_hz
            if a.extra.get("vfd"):
                lo, hi = domain.vfd_fraction
                lo = max(lo, domain.shaft_hz[0] / shaft_nom)
                hi = min(hi, domain.shaft_hz[1] / shaft_nom)
                frac = float(rng.uniform(lo, max(hi, lo + 1e-3)))
            else:
                frac = 1.0
            cutoff = float(rng.uniform(3_000.0, 7_500.0)) if rng.random() < 0.2 else float("inf")
            raw.append((ai, a, label, phys, sev, variant, drift, level, sign, float(rng.uniform(-1.0, 1.0)),
                        float(rng.uniform(*domain.ambient_c)), frac, float(rng.normal(0.0, 2.0)), cutoff,
                        float(np.round(rng.uniform(60.0, 86_400.0) * 10.0) / 10.0)))
    order = rng.permutation(len(raw))
    return [DomainSampleSpec(i, r[0], r[1].asset_id, r[1].asset_type, *r[2:]) for i, r in
            enumerate(raw[int(j)] for j in order)]


@dataclass
class DomainSample:
    """Rendered sensor data of one sample (``None`` for modalities not requested)."""

    spec: DomainSampleSpec
    plc: PlcSamples | None
    frame: np.ndarray | None
    clip: np.ndarray | None
    shaft_hz: float


@dataclass
class DomainRenderer:
    """Renders :class:`DomainSampleSpec` samples of one randomised fleet."""

    fleet: list[Asset]
    seed: int
    config: SimulatorConfig = field(default_factory=SimulatorConfig)
    _cams: dict[str, ThermalCamera] = field(default_factory=dict)

    def _hall(self, a: Asset, n: int, fs: float, rng: np.random.Generator) -> np.ndarray:
        """Other machines of the hall at their own speeds, and a distant periodic knock."""
        t = np.arange(n) / fs
        x = np.zeros(n)
        level = a.extra.get("hall_level", 1.0)
        for _ in range(int(rng.poisson(1.2))):
            f0 = float(rng.uniform(8.0, 60.0))
            for k in range(1, 9):
                x += 0.004 * level * _lu(rng, 0.05, 1.0) / k * np.sin(2 * np.pi * k * f0 * t + rng.uniform(0, 6.3))
        if rng.random() < 0.1:
            period = float(rng.uniform(0.02, 0.2))
            pos = (np.arange(rng.uniform(0, period), n / fs, period) * fs).astype(int)
            imp = np.zeros(n)
            imp[pos[pos < n]] = 0.01 * level * float(rng.uniform(0.3, 1.0))
            b, a_ = _resonator(float(rng.uniform(1_500.0, 6_000.0)), float(rng.uniform(0.03, 0.1)), fs)
            x += lfilter(b, a_, imp)
        return x

    def _physics(self, spec: DomainSampleSpec
                 ) -> tuple[Asset, Asset, DifficultyProfile, DriftState, PhysicsBlock, float]:
        """The sample's machine (as built, as driven), its profile, drift and physics block over its
        PLC window, and the window's last tick T."""
        cfg = self.config
        base = self.fleet[spec.asset_index]
        asset = replace(base, line_frequency_hz=base.line_frequency_hz * spec.drive_fraction) \
            if spec.drive_fraction != 1.0 else base
        prof = replace(cfg.profile, signature_gain=cfg.profile.signature_gain * base.extra.get("signature_gain", 1.0))
        n = max(round(cfg.dataset_plc_window_s * cfg.plc_rate_hz), 2)
        end_tick = round(spec.t_s * cfg.plc_rate_hz)
        idx = np.arange(end_tick - n + 1, end_tick + 1, dtype=np.int64)
        t = idx / cfg.plc_rate_hz
        T = float(t[-1])
        phys = AssetPhysics(asset, cfg, prof, force_run=True, load_level=spec.load_level,
                            ambient_offset_c=spec.ambient_c - cfg.ambient_c, drive_fraction=spec.drive_fraction,
                            varied_cavitation=True)
        drift = constant_drift(spec.drift, spec.drift_level, spec.drift_sign, T)
        health = constant_health(spec.physical_fault, spec.severity, spec.variant, n)
        blk = phys.step(t, idx + spec.index * 10_000_000, health, drift)
        return base, asset, prof, drift, blk, T

    def _clip(self, spec: DomainSampleSpec, base: Asset, asset: Asset, prof: DifficultyProfile, drift: DriftState,
              blk: PhysicsBlock, end_s: float, rng: np.random.Generator) -> np.ndarray:
        """One audio clip of the sample ending at ``end_s``."""
        cfg = self.config
        mic_drift = DriftState(
            mic_gain=float(drift.mic_gain) * 10 ** (spec.mic_gain_jitter_db / 20.0),
            mic_cutoff_hz=min(float(drift.mic_cutoff_hz), spec.mic_cutoff_hz),
            mic_noise_mult=float(drift.mic_noise_mult))
        fs = float(cfg.audio_rate_hz)
        n_audio = round(cfg.audio_chunk_s * fs)
        ts = end_s - cfg.audio_chunk_s + np.arange(n_audio) / fs
        mic = AudioRenderer(asset, cfg, prof)
        return mic.render(ClipDrive.from_block(blk, ts), blk.snapshot(end_s - 0.5 * cfg.audio_chunk_s), mic_drift, rng,
                          background=self._hall(base, n_audio, fs, rng))

    def render(self, spec: DomainSampleSpec, modalities: tuple[str, ...] = ("plc", "thermal", "audio"),
               day_spread: tuple[float, float] | None = None) -> DomainSample:
        """The sample's PLC window, thermal frame and audio clip (those in ``modalities``).
        ``day_spread``: this frame's day-to-day part variation (:func:`day_to_day`) instead of the
        machine's own (:attr:`DomainSpec.thermal_day_spread`)."""
        cfg = self.config
        base, asset, prof, drift, blk, T = self._physics(spec)
        plc = measure(asset, blk, drift, prof, cfg) if "plc" in modalities else None
        frame = clip = None
        if "thermal" in modalities:
            cam = self._cams.get(base.asset_id) or self._cams.setdefault(base.asset_id, ThermalCamera(base, prof))
            extra = base.extra if day_spread is None else \
                {**base.extra, "thermal_day_rise": day_spread[0], "thermal_day_offset_k": day_spread[1]}
            snap = day_to_day(blk.snapshot(T), extra, self.seed, spec.index)
            frame = cam.render(snap, drift, make_rng(self.seed, "domain-thermal", spec.index))
        if "audio" in modalities:
            clip = self._clip(spec, base, asset, prof, drift, blk, T, make_rng(self.seed, "domain-audio", spec.index))
        return DomainSample(spec, plc, frame, clip, float(np.mean(blk.shaft_hz)))

    def audio_clips(self, spec: DomainSampleSpec, count: int) -> list[np.ndarray]:
        """``count`` consecutive clips of the sample's machine state, oldest first, as a line's
        microphone delivers them (one per ``audio_chunk_s``, each rendered with its own noise, as
        the plant engine does); the last one is :meth:`render`'s clip. At most the PLC window.
        (A longer ``audio_chunk_s`` is no substitute: the renderer draws its random events,
        healthy knocks and cavitation bursts among them, per clip, not per second.)"""
        cfg = self.config
        if count < 1 or count * cfg.audio_chunk_s > cfg.dataset_plc_window_s:
            raise ValueError(f"1..{int(cfg.dataset_plc_window_s / cfg.audio_chunk_s)} clips fit the window, "
                             f"asked for {count}")
        base, asset, prof, drift, blk, T = self._physics(spec)
        out = []
        for j in range(count - 1, -1, -1):
            rng = make_rng(self.seed, "domain-audio", spec.index) if j == 0 else make_rng(
                self.seed, "domain-audio", spec.index, "clip", j)
            out.append(self._clip(spec, base, asset, prof, drift, blk, T - j * cfg.audio_chunk_s, rng))
        return out


def label_index(spec: DomainSampleSpec) -> int:
    """Class index of a sample's label in ``FAULT_CLASSES``."""
    return FAULT_INDEX[spec.fault]
