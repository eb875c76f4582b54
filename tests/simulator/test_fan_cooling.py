"""A self-ventilated motor on a drive cools less at low speed (``DomainSpec.fan_still_share``, off in the
shipped domains): its winding, and the motor body in the frame, run warmer for the same losses."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from linewatch.simulator.domain import DomainRenderer, domain_fleet, draw_domain_specs
from linewatch.simulator.physics import fan_cooling_share
from linewatch.simulator.plc import PLC_TAGS
from tests.simulator.domain_draws import assert_drawn_only_when_set

SEED = 5
WINDING = PLC_TAGS.index("winding_temp_c")


def _pump_and_spec(drive_fraction: float, **extra: float):
    pump = next(a for a in domain_fleet(3, SEED) if a.asset_type == "pump")
    pump = replace(pump, extra={**pump.extra, **extra})
    spec = next(s for s in draw_domain_specs(2, [pump], SEED) if s.fault == "normal")
    return pump, replace(spec, asset_index=0, drift="none", drift_level=0.0, load_level=0.8,
                         drive_fraction=drive_fraction)


def _winding_c(pump, spec) -> float:
    return float(np.nanmedian(DomainRenderer([pump], SEED).render(spec, ("plc",)).plc.values[:, WINDING]))


def test_a_drive_s_self_ventilated_motor_runs_warmer_at_low_speed_by_its_lost_fan_cooling() -> None:
    plain, slow = _pump_and_spec(0.5)
    fanned, _ = _pump_and_spec(0.5, motor_fan_still_share=1 / 3)
    rise_plain, rise_fanned = _winding_c(plain, slow) - slow.ambient_c, _winding_c(fanned, slow) - slow.ambient_c
    assert rise_plain > 10.0
    # the winding's rise over the hall grows by 1 / share (1.40 here; the hall's slow wander aside)
    assert abs(rise_fanned / rise_plain - 1 / fan_cooling_share(0.5, 1 / 3)) < 0.08
    _, rated = _pump_and_spec(1.0)
    assert _winding_c(plain, rated) == _winding_c(fanned, rated)  # at rated speed the fan is the rated fan


def test_the_share_is_drawn_per_machine_only_when_the_domain_says_so() -> None:
    assert_drawn_only_when_set("fan_still_share", "motor_fan_still_share", 0.25, 0.45, SEED)
