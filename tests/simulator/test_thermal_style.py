"""How a machine shows heat (``ThermalStyle``): plant defaults, and the randomised fleet's ways."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from linewatch.simulator.domain import TRAIN_DOMAIN, DomainRenderer, domain_fleet, draw_domain_specs
from linewatch.simulator.thermal import ThermalStyle

SEED = 5


def _machine(**style: float):
    """A randomised pump with the given ``thermal_*`` style keys, and a healthy spec of it."""
    pump = next(a for a in domain_fleet(3, SEED) if a.asset_type == "pump")
    pump = replace(pump, extra={**pump.extra, **style})
    spec = next(s for s in draw_domain_specs(2, [pump], SEED) if s.fault == "normal")
    return pump, replace(spec, asset_index=0, drift="none", drift_level=0.0, load_level=0.8)


def _frame_c(pump, spec) -> np.ndarray:
    return DomainRenderer([pump], SEED).render(spec, ("thermal",)).frame.astype(np.float64) / 100.0 - 273.15


def _faulty(spec, fault: str, variant: str):
    return replace(spec, fault=fault, physical_fault=fault, variant=variant, severity=1.0)


def _axial_gradient_k(pump, frame: np.ndarray) -> float:
    """Drive-end third minus fan-end third of the motor body, along its middle rows."""
    x0, y0, x1, y1 = pump.layout.boxes["motor_body"]
    band = frame[y0 + (y1 - y0) // 3: y1 - (y1 - y0) // 3, x0:x1].mean(axis=0)
    third = max(1, (x1 - x0) // 3)
    left, right = band[:third].mean(), band[-third:].mean()
    return float(right - left if pump.layout.fan_side < 0 else left - right)


def _housing_c(pump, frame: np.ndarray, part: str) -> float:
    x0, y0, x1, y1 = pump.layout.boxes[part]
    return float(frame[y0:y1, x0:x1].max())


def test_plant_machines_keep_the_plant_style() -> None:
    assert ThermalStyle.of({}) == ThermalStyle()
    assert ThermalStyle().cooling_slope_change == {}  # the plant's 6 E_cool u, as before


def test_randomised_fleet_draws_its_styles_in_the_domain_ranges() -> None:
    styles = [ThermalStyle.of(a.extra) for a in domain_fleet(40, SEED)]
    slopes = [s.cooling_slope_change["broken_fan"] for s in styles]
    assert all(TRAIN_DOMAIN.cooling_slope_broken_fan[0] <= v <= TRAIN_DOMAIN.cooling_slope_broken_fan[1] for v in slopes)
    assert min(slopes) < -0.5 < 0.0 < max(slopes)  # some flatten or reverse the gradient, some do not
    assert len({s.body_share for s in styles}) == 40


def test_a_broken_fan_can_reverse_the_body_gradient() -> None:
    pump, healthy = _machine(thermal_axial_slope=0.3, thermal_cooling_slope_broken_fan=-1.0,
                             thermal_cooling_slope_blocked_fins=0.6)
    base = _frame_c(pump, healthy)
    broken = _frame_c(pump, _faulty(healthy, "cooling_failure", "broken_fan"))
    blocked = _frame_c(pump, _faulty(healthy, "cooling_failure", "blocked_fins"))
    body = pump.layout.boxes["motor_body"]
    assert _axial_gradient_k(pump, base) > 0.5                 # fan end coolest when healthy
    assert _axial_gradient_k(pump, broken) < -0.5              # reversed without the fan
    assert _axial_gradient_k(pump, blocked) > _axial_gradient_k(pump, base)  # steeper with blocked fins
    region = np.s_[body[1]:body[3], body[0]:body[2]]
    assert broken[region].mean() > base[region].mean() + 3.0  # and the body runs hotter either way


def test_worn_bearings_at_the_non_drive_end_heat_that_housing() -> None:
    for share, hot, cool in ((0.0, "de_bearing", "nde_bearing"), (1.0, "nde_bearing", "de_bearing")):
        pump, healthy = _machine(thermal_bearing_wear_nde_share=share)
        worn = _frame_c(pump, _faulty(healthy, "bearing_wear", "outer_race"))
        base = _frame_c(pump, healthy)
        assert _housing_c(pump, worn, hot) - _housing_c(pump, base, hot) > 10.0, share
        assert abs(_housing_c(pump, worn, cool) - _housing_c(pump, base, cool)) < 4.0, share
