"""How a machine shows heat (``ThermalStyle``): plant defaults, and the randomised fleet's ways."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from linewatch.simulator.domain import TRAIN_DOMAIN, DomainRenderer, domain_fleet, draw_domain_specs
from linewatch.simulator.thermal import ThermalStyle
from tests.simulator.domain_draws import assert_drawn_only_when_set

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
    """The mean of the middle third of a housing's box: the housing itself (the box's rim may hold
    the body, a gap or the background, whose edges move with camera shake)."""
    x0, y0, x1, y1 = pump.layout.boxes[part]
    dx, dy = max(1, (x1 - x0) // 3), max(1, (y1 - y0) // 3)
    return float(frame[y0 + dy:y1 - dy, x0 + dx:x1 - dx].mean())


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


def test_a_housing_shows_its_share_of_the_bearing_rise_from_evenly_warm_to_peaked() -> None:
    """``housing_share``: how much of the bearing's rise the housing's surface shows (a housing can
    run cooler than the motor body); ``housing_rim`` / ``housing_peak``: evenly warm to peaked."""

    def housing(**style: float) -> tuple[float, float]:
        pump, healthy = _machine(thermal_bearing_wear_nde_share=0.0, **style)
        frame = _frame_c(pump, _faulty(healthy, "bearing_wear", "outer_race"))
        x0, y0, x1, y1 = pump.layout.boxes["de_bearing"]
        cx, cy, rx, ry = (x0 + x1) // 2, (y0 + y1) // 2, max(1, (x1 - x0) // 6), max(1, (y1 - y0) // 6)
        centre = float(frame[cy - ry:cy + ry + 1, cx - rx:cx + rx + 1].mean())
        ring = float(frame[cy - 2 * ry:cy + 2 * ry + 1, cx - 2 * rx:cx + 2 * rx + 1].mean())
        return centre, centre - ring

    hot, peaked = housing(thermal_housing_share=0.95, thermal_housing_rim=0.75, thermal_housing_peak=0.5)
    cool, even = housing(thermal_housing_share=0.5, thermal_housing_rim=1.0, thermal_housing_peak=0.0)
    assert hot > cool + 5.0
    assert peaked > 1.0 and abs(even) < 0.5 * peaked


def test_the_motor_body_reaches_under_the_housings_or_leaves_a_gap() -> None:
    from linewatch.simulator.domain import _layout

    def boxes(overlap: tuple[float, float]) -> dict[str, tuple[int, int, int, int]]:
        return _layout(np.random.default_rng(0), "pump", TRAIN_DOMAIN, overlap).boxes

    def reach(b: dict[str, tuple[int, int, int, int]]) -> tuple[int, int]:
        body, nde, de = b["motor_body"], b["nde_bearing"], b["de_bearing"]
        left, right = (nde, de) if nde[0] < de[0] else (de, nde)
        return left[2] - body[0], body[2] - right[0]  # > 0: the body reaches under the housing

    assert min(reach(boxes((6.0, 2.0)))) > 0
    assert max(reach(boxes((-3.0, -3.0)))) < 0
    drawn = replace(TRAIN_DOMAIN, body_overlap_nde=(-3.0, 6.0), body_overlap_de=(-3.0, 2.0))
    styles = [a.layout.boxes for a in domain_fleet(30, SEED, drawn)]
    assert any(min(reach(b)) < 0 for b in styles) and any(min(reach(b)) > 0 for b in styles)
    # off in the shipped domains: every machine has the base view's reach, and the plant housings
    shipped = domain_fleet(30, SEED)
    assert all(min(reach(a.layout.boxes)) >= 0 for a in shipped)  # (small frames round 2 px to 0)
    assert all(not any(k.startswith("thermal_housing_") for k in a.extra) for a in shipped)
    assert [a.layout for a in domain_fleet(30, SEED, replace(TRAIN_DOMAIN, housing_share=(0.5, 0.95)))] == \
        [a.layout for a in shipped]  # its own random streams: the rest of the machine is unchanged


def test_a_healthy_machine_s_parts_differ_from_one_day_to_the_next_when_the_domain_says_so() -> None:
    """``DomainSpec.thermal_day_spread``: each sample's part rises scaled and offset from its own
    random stream (the same sample renders the same frame; PLC and audio are untouched); off in
    the shipped domains."""
    pump, spec = _machine(thermal_day_rise=0.1, thermal_day_offset_k=0.7)
    plain = replace(pump, extra={k: v for k, v in pump.extra.items() if not k.startswith("thermal_day_")})
    days = [_frame_c(pump, replace(spec, index=spec.index + k)) for k in range(6)]
    same_day = _frame_c(pump, spec)
    assert np.array_equal(days[0], same_day)
    x0, y0, x1, y1 = pump.layout.boxes["motor_body"]
    bodies = [d[y0:y1, x0:x1].mean() for d in days]
    plain_bodies = [_frame_c(plain, replace(spec, index=spec.index + k))[y0:y1, x0:x1].mean() for k in range(6)]
    assert np.ptp(bodies) > 3 * np.ptp(plain_bodies) and np.ptp(bodies) > 0.5  # kelvin
    r_day, r_plain = DomainRenderer([pump], SEED).render(spec), DomainRenderer([plain], SEED).render(spec)
    assert np.array_equal(r_day.clip, r_plain.clip) and np.array_equal(r_day.plc.values, r_plain.plc.values,
                                                                       equal_nan=True)
    shipped = domain_fleet(30, SEED)
    assert all(not any(k.startswith("thermal_day_") for k in a.extra) for a in shipped)
    assert [a.extra | {"thermal_day_rise": 0.1, "thermal_day_offset_k": 0.7} for a in shipped] == \
        [a.extra for a in domain_fleet(30, SEED, replace(TRAIN_DOMAIN, thermal_day_spread=(0.1, 0.7)))]


def test_running_baselines_can_show_their_machine_on_another_day_leaving_the_samples_as_they_were() -> None:
    """``build_domain_dataset(baseline_day_spread=...)``: only the baseline frames change (their
    ``baseline.*`` values), every sample's own frame and the PLC and audio data stay."""
    from models.data.domain_data import build_domain_dataset
    from pipeline.features.thermal_regions import THERMAL_VECTOR_NAMES

    plain = build_domain_dataset(3, n_assets=12, seed=5, workers=1)
    daily = build_domain_dataset(3, n_assets=12, seed=5, workers=1, baseline_day_spread=(0.1, 0.7))
    for name in ("plc", "audio", "y", "severity"):
        assert np.array_equal(getattr(plain, name), getattr(daily, name))
    base = np.array([n.startswith("baseline.") for n in THERMAL_VECTOR_NAMES])
    np.testing.assert_array_equal(plain.thermal[:, ~base], daily.thermal[:, ~base])
    with_baseline = plain.thermal[:, THERMAL_VECTOR_NAMES.index("baseline.baseline_available")] == 1
    assert 0 < with_baseline.sum() < plain.n
    np.testing.assert_array_equal(plain.thermal[~with_baseline], daily.thermal[~with_baseline])
    changed = np.abs(plain.thermal[with_baseline][:, base] - daily.thermal[with_baseline][:, base]).max(axis=1)
    assert np.all(changed > 0.05)


def test_a_machine_s_nde_housing_runs_at_its_own_share_of_the_de_friction_when_the_domain_says_so() -> None:
    """``DomainSpec.nde_friction_share``: drawn per machine as the last draw of its thermal style (its
    other keys unchanged); only the NDE housing moves (PLC and audio untouched); off in the shipped
    domains, where every machine runs at ``NDE_FRICTION_SHARE``."""
    from linewatch.simulator.physics import NDE_FRICTION_SHARE

    cool, spec = _machine(thermal_nde_friction_share=0.6)
    warm, _ = _machine(thermal_nde_friction_share=1.0)
    f_cool, f_warm = _frame_c(cool, spec), _frame_c(warm, spec)
    nde = _housing_c(warm, f_warm, "nde_bearing") - _housing_c(cool, f_cool, "nde_bearing")
    de = _housing_c(warm, f_warm, "de_bearing") - _housing_c(cool, f_cool, "de_bearing")
    assert nde > 1.0 and abs(de) < 0.1 * nde  # kelvin
    r_cool, r_warm = DomainRenderer([cool], SEED).render(spec), DomainRenderer([warm], SEED).render(spec)
    assert np.array_equal(r_cool.clip, r_warm.clip) and np.array_equal(r_cool.plc.values, r_warm.plc.values,
                                                                       equal_nan=True)
    plain, _ = _machine()
    shares = [_frame_c(plain, spec), _frame_c(replace(plain, extra={**plain.extra,
                                                                  "thermal_nde_friction_share": NDE_FRICTION_SHARE}), spec)]
    assert np.array_equal(*shares)
    assert_drawn_only_when_set("nde_friction_share", "thermal_nde_friction_share", 0.65, 1.0, SEED)
