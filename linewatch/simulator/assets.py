"""Asset types, per-instance parameters and the asset registry.

Three asset types share one drive train (an induction motor with a drive-end
(DE) and non-drive-end (NDE) rolling bearing, a fan at the NDE and a terminal
box on top) and differ in the driven machine:

* ``pump``     - centrifugal pump, steady load, impeller blade-pass tone;
* ``press``    - hydraulic press (motor drives a hydraulic pump), cyclic strokes;
* ``conveyor`` - belt drive through a gearbox, load varies with material on the belt.

Every :class:`Asset` carries its physics parameters, the thermal camera's view
of it (:class:`ThermalLayout`) and its sensors' individual calibration
(:class:`Calibration`).  :func:`make_fleet` draws a deterministic fleet;
:func:`asset_registry_json` is what ``assets.json`` contains.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .config import SimulatorConfig
from .noise import make_rng
from .tags import PLC_TAGS, TAG_UNITS, TagSpec, tag_ranges

ASSET_TYPES: tuple[str, ...] = ("pump", "press", "conveyor")
ASSET_PREFIX: dict[str, str] = {"pump": "PMP", "press": "PRS", "conveyor": "CNV", "fan": "FAN", "compressor": "CMP"}
DRIVEN_KIND: dict[str, str] = {"pump": "pump_casing", "press": "hydraulic_unit", "conveyor": "gearbox",
                               "fan": "fan_housing", "compressor": "compressor_block"}
#: Which physics (pressure, driven-machine temperature) an asset type follows. ``fan`` and
#: ``compressor`` exist only in the domain-randomised test fleets (:mod:`.domain`): machine types
#: the models never saw in training.
BEHAVIOUR: dict[str, str] = {"pump": "pump", "press": "press", "conveyor": "conveyor", "fan": "pump",
                             "compressor": "press"}


def behaves_like(asset_type: str) -> str:
    """The plant type whose physics ``asset_type`` follows (``fan`` → ``pump``)."""
    return BEHAVIOUR.get(asset_type, "conveyor")
FRAME_WIDTH = 160
FRAME_HEIGHT = 120
#: Region names present for every asset (pumps add ``pump_inlet``).
REGION_NAMES: tuple[str, ...] = ("motor_body", "de_bearing", "nde_bearing", "terminal_box", "coupling", "driven")
SUPPLY_VOLTAGE_V = 400.0


@dataclass(frozen=True)
class BearingGeometry:
    """Rolling-element bearing geometry and its defect frequencies.

    With shaft frequency ``f_r``, ``n`` elements, ball diameter ``d``, pitch
    diameter ``D`` and contact angle ``phi`` (stationary outer race)::

        FTF  = f_r/2 * (1 - d/D cos phi)
        BPFO = n f_r/2 * (1 - d/D cos phi)
        BPFI = n f_r/2 * (1 + d/D cos phi)
        BSF  = D/(2d) * f_r * (1 - (d/D cos phi)^2)
    """

    designation: str
    n_elements: int
    ball_d_mm: float
    pitch_d_mm: float
    contact_angle_deg: float = 0.0

    @property
    def _r(self) -> float:
        return self.ball_d_mm / self.pitch_d_mm * math.cos(math.radians(self.contact_angle_deg))

    def ftf(self, shaft_hz: float | np.ndarray) -> float | np.ndarray:
        """Fundamental train (cage) frequency."""
        return shaft_hz / 2.0 * (1.0 - self._r)

    def bpfo(self, shaft_hz: float | np.ndarray) -> float | np.ndarray:
        """Ball-pass frequency, outer race."""
        return self.n_elements * shaft_hz / 2.0 * (1.0 - self._r)

    def bpfi(self, shaft_hz: float | np.ndarray) -> float | np.ndarray:
        """Ball-pass frequency, inner race."""
        return self.n_elements * shaft_hz / 2.0 * (1.0 + self._r)

    def bsf(self, shaft_hz: float | np.ndarray) -> float | np.ndarray:
        """Ball (rolling element) spin frequency."""
        return self.pitch_d_mm / (2.0 * self.ball_d_mm) * shaft_hz * (1.0 - self._r**2)

    def frequencies(self, shaft_hz: float) -> dict[str, float]:
        """All four defect frequencies (Hz) at ``shaft_hz``."""
        return {"ftf": float(self.ftf(shaft_hz)), "bpfo": float(self.bpfo(shaft_hz)),
                "bpfi": float(self.bpfi(shaft_hz)), "bsf": float(self.bsf(shaft_hz))}

    def orders(self) -> dict[str, float]:
        """Defect frequencies as multiples of shaft speed (speed-independent)."""
        return self.frequencies(1.0)


#: Approximate geometry of common deep-groove / angular-contact motor bearings.
BEARING_CATALOGUE: tuple[BearingGeometry, ...] = (
    BearingGeometry("6205", 9, 7.94, 39.04, 0.0),
    BearingGeometry("6206", 9, 9.53, 46.00, 0.0),
    BearingGeometry("6305", 8, 10.32, 44.50, 0.0),
    BearingGeometry("6308", 8, 15.08, 65.00, 0.0),
    BearingGeometry("6309", 8, 17.46, 72.50, 0.0),
    BearingGeometry("7306B", 10, 15.88, 52.50, 40.0),
)


@dataclass(frozen=True)
class LoadProfile:
    """How mechanical load (fraction of rated) varies.

    ``kind``: ``steady`` (pump), ``cyclic`` (press strokes: ``high`` for
    ``duty`` of each ``cycle_s``, ``low`` otherwise) or ``varying`` (conveyor:
    smooth random wander of width ``spread`` around ``mean``).
    """

    kind: str
    mean: float
    spread: float
    cycle_s: float = 0.0
    duty: float = 0.0
    high: float = 0.0
    low: float = 0.0


@dataclass(frozen=True)
class Calibration:
    """Individual sensor errors of one asset's sensors (hidden from consumers)."""

    bearing_temp_offset_c: float
    winding_temp_offset_c: float
    current_gain: float
    mic_gain_db: float
    mic_noise: float
    camera_seed: int
    camera_gain: float
    camera_offset_k: float


@dataclass(frozen=True)
class ThermalLayout:
    """Where each component sits in the 160x120 frame (camera pose per asset).

    ``boxes`` maps region name to ``(x0, y0, x1, y1)`` pixel bounds, ``x1`` and
    ``y1`` exclusive (``frame[y0:y1, x0:x1]``).  ``fan_side`` is ``-1`` if the
    fan (NDE) is on the left of the image, ``+1`` if the view is mirrored.
    """

    boxes: dict[str, tuple[int, int, int, int]]
    fan_side: int
    scale: float
    lug_uv: tuple[float, float]
    camera_offset_px: tuple[float, float]
    #: Frame (height, width) in pixels; the plant's cameras are 120 x 160.
    frame_hw: tuple[int, int] = (FRAME_HEIGHT, FRAME_WIDTH)


@dataclass(frozen=True)
class Asset:
    """One simulated machine with everything needed to render its sensors."""

    asset_id: str
    asset_type: str
    index: int
    line_frequency_hz: float
    poles: int
    rated_slip: float
    rated_power_kw: float
    rated_current_a: float
    bearing: BearingGeometry
    impeller_vanes: int
    gear_teeth: int
    hydraulic_pistons: int
    fan_blades: int
    resonance_hz: float
    resonance_damping: float
    load: LoadProfile
    bearing_rise_k: float
    winding_rise_k: float
    driven_base_c: float
    driven_rise_k: float
    vib_base_mm_s: float
    pressure_nominal_bar: float
    pressure_full_scale_bar: float
    harmonics: tuple[float, float, float]
    machine_level: float
    layout: ThermalLayout
    calibration: Calibration
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def sync_rpm(self) -> float:
        """Synchronous speed ``120 f / p``."""
        return 120.0 * self.line_frequency_hz / self.poles

    @property
    def nominal_rpm(self) -> float:
        """Rated (full-load) speed."""
        return self.sync_rpm * (1.0 - self.rated_slip)

    @property
    def nominal_shaft_hz(self) -> float:
        """Rated shaft rotation frequency in Hz."""
        return self.nominal_rpm / 60.0

    def shaft_hz(self, load: float | np.ndarray) -> float | np.ndarray:
        """Shaft frequency at a load fraction (slip is proportional to load)."""
        return self.sync_rpm / 60.0 * (1.0 - self.rated_slip * load)

    def bearing_frequencies(self, shaft_hz: float | None = None) -> dict[str, float]:
        """DE bearing defect frequencies at ``shaft_hz`` (default: rated speed)."""
        return self.bearing.frequencies(self.nominal_shaft_hz if shaft_hz is None else shaft_hz)

    def tag_specs(self) -> list[TagSpec]:
        """The asset's seven PLC tags with units and valid ranges."""
        ranges = tag_ranges(self.asset_type, self.rated_current_a, self.sync_rpm, self.pressure_full_scale_bar)
        return [TagSpec(f"{self.asset_id}.{t}", t, TAG_UNITS[t], *ranges[t]) for t in PLC_TAGS]


def _layout(rng: np.random.Generator, asset_type: str, variation: float) -> ThermalLayout:
    """Component boxes in a side view, then a jittered camera pose."""
    base: dict[str, tuple[float, float, float, float]] = {
        "nde_bearing": (17, 51, 28, 69),
        "motor_body": (22, 40, 84, 80),
        "terminal_box": (44, 27, 62, 40),
        "de_bearing": (82, 49, 94, 71),
        "coupling": (94, 54, 104, 66),
    }
    if asset_type == "pump":
        base["driven"] = (104, 36, 148, 86)
        base["pump_inlet"] = (136, 50, 150, 70)
    elif asset_type == "press":
        base["driven"] = (104, 24, 140, 92)
    else:
        base["driven"] = (104, 38, 146, 84)
    mirrored = bool(rng.random() < 0.25 * min(variation, 1.5))
    scale = float(1.0 + 0.08 * variation * rng.uniform(-1, 1))
    dx = float(5.0 * variation * rng.uniform(-1, 1))
    dy = float(5.0 * variation * rng.uniform(-1, 1))
    boxes: dict[str, tuple[int, int, int, int]] = {}
    for name, (x0, y0, x1, y1) in base.items():
        xs = [80 + scale * (x - 80) for x in (x0, x1)]
        if mirrored:
            xs = [160 - x for x in xs][::-1]
        ys = [60 + scale * (y - 60) for y in (y0, y1)]
        bx0 = int(np.clip(round(xs[0] + dx), 0, FRAME_WIDTH - 1))
        bx1 = int(np.clip(round(xs[1] + dx), bx0 + 1, FRAME_WIDTH))
        by0 = int(np.clip(round(ys[0] + dy), 0, FRAME_HEIGHT - 1))
        by1 = int(np.clip(round(ys[1] + dy), by0 + 1, FRAME_HEIGHT))
        boxes[name] = (bx0, by0, bx1, by1)
    lug = (float(rng.uniform(0.3, 0.7)), float(rng.uniform(0.4, 0.7)))
    return ThermalLayout(boxes=boxes, fan_side=1 if mirrored else -1, scale=scale, lug_uv=lug,
                         camera_offset_px=(dx, dy))


def _make_asset(i: int, asset_type: str, seed: int, line_hz: float, variation: float) -> Asset:
    rng = make_rng(seed, "asset", i)
    v = variation

    def vary(mean: float, rel: float) -> float:
        return float(mean * (1.0 + rel * v * rng.uniform(-1.0, 1.0)))

    if asset_type == "pump":
        poles = int(rng.choice([2, 4]))
        power = float(rng.choice([11.0, 15.0, 18.5, 22.0, 30.0]))
        load = LoadProfile("steady", mean=vary(0.78, 0.12), spread=0.04)
        p_nom = vary(5.5, 0.3)
        p_fs = 16.0
        driven_base, driven_rise = vary(32.0, 0.2), 3.0
    elif asset_type == "press":
        poles = 4
        power = float(rng.choice([15.0, 18.5, 22.0, 30.0, 37.0]))
        load = LoadProfile("cyclic", mean=0.55, spread=0.03, cycle_s=vary(6.5, 0.3), duty=vary(0.42, 0.15),
                           high=vary(0.93, 0.05), low=vary(0.27, 0.2))
        p_nom = vary(180.0, 0.12)
        p_fs = 250.0
        driven_base, driven_rise = 0.0, vary(24.0, 0.2)
    else:
        poles = 4
        power = float(rng.choice([5.5, 7.5, 11.0, 15.0]))
        load = LoadProfile("varying", mean=vary(0.65, 0.12), spread=0.18)
        p_nom = vary(2.0, 0.2)
        p_fs = 6.0
        driven_base, driven_rise = 0.0, vary(20.0, 0.2)
    rated_slip = float(np.clip(0.045 - 0.0009 * power + 0.004 * v * rng.uniform(-1, 1), 0.012, 0.05))
    pf, eff = 0.86, 0.92
    rated_current = power * 1000.0 / (math.sqrt(3.0) * SUPPLY_VOLTAGE_V * pf * eff)
    bearing = BEARING_CATALOGUE[int(rng.integers(len(BEARING_CATALOGUE)))]
    layout = _layout(rng, asset_type, v)
    cal = Calibration(
        bearing_temp_offset_c=float(rng.normal(0.0, 0.8 * v)),
        winding_temp_offset_c=float(rng.normal(0.0, 1.2 * v)),
        current_gain=float(1.0 + rng.normal(0.0, 0.01 * v)),
        mic_gain_db=float(rng.normal(0.0, 2.5 * v)),
        mic_noise=float(1.0 + 0.4 * v * rng.random()),
        camera_seed=int(rng.integers(0, 2**31 - 1)),
        camera_gain=float(1.0 + rng.normal(0.0, 0.003 * v)),
        camera_offset_k=float(rng.normal(0.0, 0.4 * v)),
    )
    prefix = ASSET_PREFIX[asset_type]
    return Asset(
        asset_id=f"{prefix}-{i + 1:02d}",
        asset_type=asset_type,
        index=i,
        line_frequency_hz=float(line_hz),
        poles=poles,
        rated_slip=rated_slip,
        rated_power_kw=power,
        rated_current_a=round(rated_current, 2),
        bearing=bearing,
        impeller_vanes=int(rng.integers(5, 8)) if asset_type == "pump" else 0,
        gear_teeth=int(rng.integers(17, 32)) if asset_type == "conveyor" else 0,
        hydraulic_pistons=9 if asset_type == "press" else 0,
        fan_blades=int(rng.integers(7, 12)),
        resonance_hz=float(rng.uniform(2000.0, 5000.0)),
        resonance_damping=float(rng.uniform(0.03, 0.07)),
        load=load,
        bearing_rise_k=vary(19.0, 0.2),
        winding_rise_k=vary(50.0, 0.15),
        driven_base_c=driven_base,
        driven_rise_k=driven_rise,
        vib_base_mm_s=vary(1.6 if asset_type != "press" else 2.0, 0.3),
        pressure_nominal_bar=round(p_nom, 2),
        pressure_full_scale_bar=p_fs,
        harmonics=(vary(0.022, 0.35), vary(0.009, 0.4), vary(0.004, 0.4)),
        machine_level=float(np.exp(rng.normal(0.0, 0.2 * v))),
        layout=layout,
        calibration=cal,
    )


def make_fleet(n: int, seed: int, *, line_frequency_hz: float = 50.0, variation: float = 1.0) -> list[Asset]:
    """Draw ``n`` assets cycling pump, press, conveyor (``PMP-01, PRS-02, CNV-03, PMP-04, ...``).

    ``variation`` scales asset-to-asset differences (the difficulty profile's
    ``asset_variation``).  Deterministic in ``(n, seed, line_frequency_hz, variation)``;
    asset ``i`` does not depend on ``n``.
    """
    if n < 1:
        raise ValueError("n must be >= 1")
    return [_make_asset(i, ASSET_TYPES[i % 3], seed, line_frequency_hz, variation) for i in range(n)]


def asset_registry_json(assets: list[Asset], config: SimulatorConfig | None = None) -> dict:
    """The content of ``assets.json``: everything downstream needs per asset.

    Includes speed, bearing geometry and defect frequencies at rated speed
    (and as shaft orders, since speed varies with load), blade-pass / gear-mesh
    frequencies, an approximate structural-resonance band for envelope
    analysis, the thermal region boxes and the tag list with units and ranges.
    Calibration errors and exact resonances are physical secrets and are not
    included.
    """
    out: dict = {"schema_version": 1,
                 "frame": {"width": FRAME_WIDTH, "height": FRAME_HEIGHT, "dtype": "uint16",
                           "unit": "centikelvin", "scale": 0.01},
                 "assets": []}
    if config is not None:
        out["audio"] = {"sample_rate_hz": config.audio_rate_hz,
                        "chunk_s": config.audio_chunk_s, "channels": 1, "subtype": "PCM_16"}
        out["plc_rate_hz"] = config.plc_rate_hz
        out["thermal_fps"] = config.thermal_fps
        out["line_frequency_hz"] = config.line_frequency_hz
    for a in assets:
        f_r = a.nominal_shaft_hz
        band_lo = round(a.resonance_hz * 0.8 / 100.0) * 100.0
        band_hi = round(a.resonance_hz * 1.2 / 100.0) * 100.0
        out["assets"].append({
            "asset_id": a.asset_id,
            "asset_type": a.asset_type,
            "driven_kind": DRIVEN_KIND[a.asset_type],
            "line_frequency_hz": a.line_frequency_hz,
            "poles": a.poles,
            "sync_rpm": round(a.sync_rpm, 1),
            "nominal_rpm": round(a.nominal_rpm, 1),
            "nominal_shaft_hz": round(f_r, 4),
            "rated_power_kw": a.rated_power_kw,
            "rated_current_a": a.rated_current_a,
            "bearing": {"designation": a.bearing.designation, "n_elements": a.bearing.n_elements,
                        "ball_d_mm": a.bearing.ball_d_mm, "pitch_d_mm": a.bearing.pitch_d_mm,
                        "contact_angle_deg": a.bearing.contact_angle_deg},
            "bearing_frequencies_hz": {k: round(v, 3) for k, v in a.bearing_frequencies().items()},
            "bearing_orders": {k: round(v, 5) for k, v in a.bearing.orders().items()},
            "impeller_vanes": a.impeller_vanes,
            "blade_pass_hz": round(a.impeller_vanes * f_r, 3) if a.impeller_vanes else None,
            "gear_teeth": a.gear_teeth,
            "gear_mesh_hz": round(a.gear_teeth * f_r, 3) if a.gear_teeth else None,
            "fan_blades": a.fan_blades,
            "resonance_band_hz": [band_lo, band_hi],
            "load_profile": a.load.kind,
            "pressure_nominal_bar": a.pressure_nominal_bar,
            "regions": {k: list(v) for k, v in a.layout.boxes.items()},
            "fan_side": "left" if a.layout.fan_side < 0 else "right",
            "tags": [t.as_dict() for t in a.tag_specs()],
        })
    return out
