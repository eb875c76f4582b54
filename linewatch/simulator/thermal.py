"""Radiometric thermal frames (160x120, uint16 centikelvin, FLIR Lepton TLinear style).

Rendering pipeline for one frame of one asset:

1. **Scene** (degC): hall background with a vertical gradient and static
   clutter (pipes, cabinets), a base plate, then the components painted in
   depth order with temperatures from the physics snapshot:

   - motor body ``T_amb + b (T_wind - T_amb)(1 + k (u - 0.5))`` where ``u`` runs 0 (fan end)
     -> 1 (drive end), with a cooling-fin ripple; ``b`` (0.5) and the axial slope ``k`` (0.3)
     are the machine's (:class:`ThermalStyle`). A cooling failure (the winding already runs
     hotter) adds ``6 E_cool u`` on plant machines; a randomised machine instead changes the
     slope by ``g E_cool`` with its own ``g`` per variant: a broken fan flattens or reverses
     the gradient (no air along the fins), blocked fins flatten or steepen it;
   - NDE / DE bearing housings ``T_amb + h (T_brg - T_amb)(r + c core)``, hottest at
     the centre (``h`` 0.85, ``r`` 0.8, ``c`` 0.4 on plant machines; bearing wear therefore heats the DE
     housing; on a randomised machine a share of the worn bearings are at the NDE, and only a
     share of the cooling failure's housing heat reaches them; a domain may also draw ``h`` and
     ``c`` per machine, off in the shipped domains: docs/models.md, "Thermal: housings cooler
     than the body");
   - terminal box ``T_amb + 0.3 (T_wind - T_amb)`` plus a small (sigma 1.2 px)
     hotspot of ``hotspot_k`` at the cable lug (electrical overheating);
   - coupling (raised by misalignment/imbalance), driven unit (pump casing at
     fluid temperature, gearbox or hydraulic unit); cavitation cools and mottles
     the pump suction inlet by ``2.5 E_cav`` K.

2. **Emissivity**: apparent ``T = eps T + (1 - eps) T_amb`` (bare-metal coupling
   ``eps = 0.5``, painted parts ``0.9-0.95``).
3. **Optics**: Gaussian blur (sigma 0.9 px), per-frame pose jitter (sub-pixel
   shift, camera shake).
4. **Detector**: per-pixel gain non-uniformity, column and row offsets and
   vignetting (fixed pattern, seeded per camera), camera gain/offset error and
   drift, temporal noise with the profile's NETD (about 50 mK).
5. Quantisation to ``round(K * 100)`` as ``uint16``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import ndimage

from .assets import FRAME_HEIGHT, FRAME_WIDTH, Asset
from .config import DifficultyProfile
from .drift import DriftState
from .noise import make_rng
from .physics import BEARING_WEAR_DE_K, BEARING_WEAR_NDE_K, COOLING_DE_K, COOLING_NDE_K, Snapshot

FRAME_SHAPE: tuple[int, int] = (FRAME_HEIGHT, FRAME_WIDTH)
KELVIN = 273.15
BLUR_SIGMA_PX = 0.9


def _ellipse(xx: np.ndarray, yy: np.ndarray, box: tuple[int, int, int, int], power: float = 2.0) -> np.ndarray:
    """Anti-aliased (super-)ellipse filling ``box``; power 2 = ellipse, large = rounded rectangle."""
    x0, y0, x1, y1 = box
    cx, cy = (x0 + x1) / 2.0, (y0 + y1) / 2.0
    rx, ry = max((x1 - x0) / 2.0, 0.5), max((y1 - y0) / 2.0, 0.5)
    r = (np.abs((xx - cx) / rx) ** power + np.abs((yy - cy) / ry) ** power) ** (1.0 / power)
    return np.clip((1.0 - r) * min(rx, ry) + 0.5, 0.0, 1.0).astype(np.float32)


def _gauss(xx: np.ndarray, yy: np.ndarray, cx: float, cy: float, sx: float, sy: float) -> np.ndarray:
    return np.exp(-0.5 * (((xx - cx) / sx) ** 2 + ((yy - cy) / sy) ** 2)).astype(np.float32)


def _shift_bilinear(img: np.ndarray, dy: float, dx: float) -> np.ndarray:
    """Sub-pixel shift (content moves by ``+dy, +dx``) with edge replication; cheap bilinear."""
    h, w = img.shape
    iy, ix = int(np.floor(dy)), int(np.floor(dx))
    fy, fx = dy - iy, dx - ix
    ys = np.clip(np.arange(h) - iy, 0, h - 1)
    ys1 = np.clip(ys - 1, 0, h - 1)
    xs = np.clip(np.arange(w) - ix, 0, w - 1)
    xs1 = np.clip(xs - 1, 0, w - 1)
    a = img[ys][:, xs]
    b = img[ys][:, xs1]
    c = img[ys1][:, xs]
    d = img[ys1][:, xs1]
    return ((1 - fy) * ((1 - fx) * a + fx * b) + fy * ((1 - fx) * c + fx * d)).astype(np.float32)


def region_boxes(asset: Asset) -> dict[str, tuple[int, int, int, int]]:
    """Pixel boxes ``(x0, y0, x1, y1)`` (end-exclusive) of the asset's components."""
    return dict(asset.layout.boxes)


def region_mean_c(frame: np.ndarray, box: tuple[int, int, int, int]) -> float:
    """Mean temperature (degC) of a centikelvin frame inside ``box``."""
    x0, y0, x1, y1 = box
    return float(frame[y0:y1, x0:x1].astype(np.float64).mean() / 100.0 - KELVIN)


@dataclass(frozen=True)
class ThermalStyle:
    """How one machine shows heat: the defaults are the plant's machines; a randomised fleet
    draws them per machine (:func:`linewatch.simulator.domain.domain_asset`, ``thermal_*`` keys
    of ``Asset.extra``), so a model cannot learn one way a fault shows.

    ``cooling_slope_change`` maps a cooling-failure variant to the change of the body's axial
    slope per unit effect; a variant without one adds the plant's ``6 E_cool u`` instead.
    """

    body_share: float = 0.5
    axial_slope: float = 0.3
    cooling_slope_change: dict[str, float] = field(default_factory=dict)
    cooling_housing_share: float = 1.0
    bearing_wear_nde_share: float = 0.0
    #: the share of the bearing's rise over ambient that its housing's surface shows
    housing_share: float = 0.85
    #: the housing's rim and how much hotter its centre is, as factors of that rise (rim + peak
    #: at the centre; 1, 0: evenly warm)
    housing_rim: float = 0.8
    housing_peak: float = 0.4

    @classmethod
    def of(cls, extra: dict[str, float]) -> ThermalStyle:
        """The style ``Asset.extra`` describes (plant defaults for missing keys)."""
        d = cls()
        return cls(body_share=extra.get("thermal_body_share", d.body_share),
                   axial_slope=extra.get("thermal_axial_slope", d.axial_slope),
                   cooling_slope_change={v: extra[f"thermal_cooling_slope_{v}"] for v in ("broken_fan", "blocked_fins")
                                         if f"thermal_cooling_slope_{v}" in extra},
                   cooling_housing_share=extra.get("thermal_cooling_housing_share", d.cooling_housing_share),
                   bearing_wear_nde_share=extra.get("thermal_bearing_wear_nde_share", d.bearing_wear_nde_share),
                   housing_share=extra.get("thermal_housing_share", d.housing_share),
                   housing_rim=extra.get("thermal_housing_rim", d.housing_rim),
                   housing_peak=extra.get("thermal_housing_peak", d.housing_peak))


class ThermalCamera:
    """The fixed camera watching one asset; precomputes geometry and fixed-pattern noise."""

    def __init__(self, asset: Asset, profile: DifficultyProfile) -> None:
        self.asset = asset
        self.profile = profile
        self.style = ThermalStyle.of(asset.extra)
        self.h, self.w = asset.layout.frame_hw
        self.shape = (self.h, self.w)
        yy, xx = np.mgrid[0:self.h, 0:self.w].astype(np.float32) + 0.5
        b = asset.layout.boxes
        self.masks: dict[str, np.ndarray] = {
            "motor_body": _ellipse(xx, yy, b["motor_body"], power=6.0),
            "nde_bearing": _ellipse(xx, yy, b["nde_bearing"]),
            "de_bearing": _ellipse(xx, yy, b["de_bearing"]),
            "terminal_box": _ellipse(xx, yy, b["terminal_box"], power=8.0),
            "coupling": _ellipse(xx, yy, b["coupling"], power=8.0),
            "driven": _ellipse(xx, yy, b["driven"], power=2.0 if asset.asset_type in ("pump", "fan") else 8.0),
        }
        # Base plate under the machine.
        ys = [bx[3] for bx in b.values()]
        xs0, xs1 = min(bx[0] for bx in b.values()), max(bx[2] for bx in b.values())
        base_y = min(max(ys) - 4, self.h - 2)
        self.masks["base"] = _ellipse(xx, yy, (max(xs0 - 4, 0), base_y, min(xs1 + 4, self.w),
                                               min(base_y + 10, self.h)), power=10.0)
        x0, y0, x1, y1 = b["motor_body"]
        u = np.clip((xx - x0) / max(x1 - x0, 1), 0.0, 1.0)
        self.u_body = (u if asset.layout.fan_side < 0 else 1.0 - u).astype(np.float32)
        self.fins = (1.0 + 0.05 * np.sin(2 * np.pi * yy / 3.2)).astype(np.float32)
        de = b["de_bearing"]
        self.de_core = _gauss(xx, yy, (de[0] + de[2]) / 2, (de[1] + de[3]) / 2, (de[2] - de[0]) / 3.5,
                              (de[3] - de[1]) / 3.5)
        nde = b["nde_bearing"]
        self.nde_core = _gauss(xx, yy, (nde[0] + nde[2]) / 2, (nde[1] + nde[3]) / 2, (nde[2] - nde[0]) / 3.5,
                               (nde[3] - nde[1]) / 3.5)
        tb = b["terminal_box"]
        lu, lv = asset.layout.lug_uv
        # the lug's hot spot is a few millimetres: 1.2 px on the plant's cameras (domain assets
        # scale it with their camera distance and resolution)
        lug_px = max(0.8, 1.2 * asset.extra.get("lug_scale", 1.0))
        self.lug = _gauss(xx, yy, tb[0] + lu * (tb[2] - tb[0]), tb[1] + lv * (tb[3] - tb[1]), lug_px, lug_px)
        self.inlet: np.ndarray | None = None
        if "pump_inlet" in b:
            pi = b["pump_inlet"]
            self.inlet = _gauss(xx, yy, (pi[0] + pi[2]) / 2, (pi[1] + pi[3]) / 2, (pi[2] - pi[0]) / 2.5,
                                (pi[3] - pi[1]) / 2.5)
        self.xx, self.yy = xx, yy

        # Static background: vertical gradient + clutter, seeded per camera.
        rng = make_rng(asset.calibration.camera_seed, "scene")
        bg = 0.8 - 1.3 * (yy / self.h)
        size = self.w / 160.0
        for _ in range(int(round(2 + 2 * profile.confounder_rate))):
            cx, cy = rng.uniform(0, self.w), rng.uniform(0, self.h)
            sx, sy = rng.uniform(2, 25) * size, rng.uniform(2, 25) * size
            bg = bg + rng.uniform(-2.0, 6.0) * _gauss(xx, yy, cx, cy, sx, sy)
        for _ in range(int(asset.extra.get("hot_clutter", 0))):  # lamps, steam pipes, other machines
            cx, cy = rng.uniform(0, self.w), rng.uniform(0, self.h)
            sx, sy = rng.uniform(1, 8) * size, rng.uniform(1, 8) * size
            bg = bg + rng.uniform(8.0, 45.0) * _gauss(xx, yy, cx, cy, sx, sy)
        self.background = bg.astype(np.float32)

        # Emissivity map (static).
        eps = np.full(self.shape, 0.95, np.float32)
        ex = asset.extra
        for name, e in (("base", 0.9), ("driven", 0.9), ("motor_body", 0.93), ("nde_bearing", 0.9),
                        ("terminal_box", 0.92), ("de_bearing", 0.9), ("coupling", 0.5)):
            e = ex.get(f"emissivity_{name}", e)
            m = self.masks[name]
            eps = eps * (1 - m) + e * m
        self.emissivity = eps

        # Detector fixed pattern (non-uniformity correction residuals).
        f = profile.fpn_scale
        det = make_rng(asset.calibration.camera_seed, "fpn")
        self.col_off = det.normal(0.0, 0.12 * f, self.w).astype(np.float32)[None, :]
        self.row_off = det.normal(0.0, 0.06 * f, self.h).astype(np.float32)[:, None]
        self.pix_gain = (1.0 + det.normal(0.0, 0.003 * f, self.shape)).astype(np.float32)
        r2 = ((xx - self.w / 2) / (self.w / 2)) ** 2 + ((yy - self.h / 2) / (self.h / 2)) ** 2
        self.vignette = (det.choice([-1.0, 1.0]) * 0.35 * f * r2).astype(np.float32)

    def scene_c(self, s: Snapshot, rng: np.random.Generator | None = None) -> np.ndarray:
        """True scene temperature (degC) before emissivity, optics and detector."""
        amb = s.ambient_c
        e = s.effect
        T = amb + self.background
        layers: list[tuple[str, np.ndarray | float]] = [("base", amb + 1.0)]
        if self.asset.asset_type == "pump":
            driven = np.full(self.shape, s.driven_c, np.float32)
            if self.inlet is not None and s.fault == "cavitation":
                cool = -2.5 * e * self.inlet
                if rng is not None:
                    mottle = ndimage.gaussian_filter(rng.standard_normal(self.shape).astype(np.float32), 1.5)
                    cool = cool + 1.5 * e * mottle * self.inlet
                driven = driven + cool
            layers.append(("driven", driven))
        else:
            layers.append(("driven", s.driven_c))
        st = self.style
        body_rise = st.body_share * (s.winding_c - amb)
        slope = st.axial_slope
        de_c, nde_c = s.bearing_c, s.nde_c
        cooling_extra: np.ndarray | float = 0.0
        if s.fault == "cooling_failure":
            if s.variant in st.cooling_slope_change:
                slope = slope + st.cooling_slope_change[s.variant] * e
            else:  # the plant's pattern
                cooling_extra = 6.0 * e * self.u_body
            unseen = 1.0 - st.cooling_housing_share  # the part of the housings' cooling heat not shown
            de_c, nde_c = de_c - unseen * COOLING_DE_K * e, nde_c - unseen * COOLING_NDE_K * e
        elif s.fault == "bearing_wear" and st.bearing_wear_nde_share > 0 and rng is not None \
                and rng.random() < st.bearing_wear_nde_share:  # the worn bearing is the NDE one
            moved = (BEARING_WEAR_DE_K - BEARING_WEAR_NDE_K) * e**2
            de_c, nde_c = de_c - moved, nde_c + moved
        body = amb + body_rise * ((1.0 - 0.5 * slope) + slope * self.u_body) * self.fins + cooling_extra
        layers.append(("motor_body", body))
        h, rim, peak = st.housing_share, st.housing_rim, st.housing_peak
        layers.append(("nde_bearing", amb + h * (nde_c - amb) * (rim + peak * self.nde_core)))
        tbox = amb + 0.3 * (s.winding_c - amb) + s.hotspot_k * self.lug
        layers.append(("terminal_box", tbox))
        layers.append(("de_bearing", amb + h * (de_c - amb) * (rim + peak * self.de_core)))
        layers.append(("coupling", s.coupling_c))
        for name, val in layers:
            m = self.masks[name]
            T = T * (1 - m) + m * val
        if rng is not None and rng.random() < 0.02 * self.profile.confounder_rate:
            # A person or vehicle passing in front of the camera.
            cx, cy = rng.uniform(0, self.w), rng.uniform(self.h / 6, self.h)
            m = _gauss(self.xx, self.yy, cx, cy, rng.uniform(4, 10) * self.w / 160, rng.uniform(10, 25) * self.h / 120)
            T = T * (1 - m) + m * 31.0
        return T.astype(np.float32)

    def render(self, s: Snapshot, drift: DriftState, rng: np.random.Generator) -> np.ndarray:
        """One ``uint16`` centikelvin frame of shape ``layout.frame_hw`` (plant cameras: ``(120, 160)``)."""
        T = self.scene_c(s, rng)
        apparent = self.emissivity * T + (1.0 - self.emissivity) * s.ambient_c
        img = ndimage.gaussian_filter(apparent, BLUR_SIGMA_PX, mode="nearest")
        jit = self.profile.pose_jitter_px
        if jit > 0:
            dy, dx = rng.normal(0.0, jit, 2)
            img = _shift_bilinear(img, float(dy), float(dx))
        cal = self.asset.calibration
        gain = self.pix_gain * cal.camera_gain * float(drift.camera_gain)
        meas = (img * gain + self.col_off + self.row_off + self.vignette + cal.camera_offset_k
                + float(drift.camera_offset_k) + rng.normal(0.0, self.profile.netd_k, self.shape))
        ck = np.rint((meas + KELVIN) * 100.0)
        return np.clip(ck, 0, 65535).astype(np.uint16)
