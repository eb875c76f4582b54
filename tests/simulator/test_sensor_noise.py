"""The domain fleets' PLC transmitters read smoother or noisier per machine (docs/simulator.md)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from linewatch.simulator import SimulatorConfig
from linewatch.simulator.domain import TRAIN_DOMAIN, domain_fleet
from linewatch.simulator.drift import DriftState, constant_drift
from linewatch.simulator.health import constant_health
from linewatch.simulator.physics import AssetPhysics
from linewatch.simulator.plc import GOOD, SENSOR_NOISE_TAGS, measure
from linewatch.simulator.tags import PLC_TAGS

CFG = SimulatorConfig(seed=5)


NOISY = replace(TRAIN_DOMAIN, sensor_noise=(0.05, 3.0))


def test_each_machine_draws_a_noise_factor_per_tag_and_nothing_else_moves() -> None:
    fleet = domain_fleet(20, 3, NOISY)
    lo, hi = NOISY.sensor_noise or (1.0, 1.0)
    for tag in SENSOR_NOISE_TAGS:
        factors = [a.extra[f"{tag}_noise"] for a in fleet]
        assert len(set(factors)) == 20 and all(lo <= f <= hi for f in factors)
    # off: no keys, and every other draw of every machine is what it was
    plain = domain_fleet(20, 3, TRAIN_DOMAIN)  # off in the shipped domains
    for a, b in zip(fleet, plain, strict=True):
        assert not any(k.endswith("_noise") and k != "vibration_noise" for k in b.extra)
        assert {k: v for k, v in a.extra.items() if k not in {f"{t}_noise" for t in SENSOR_NOISE_TAGS}} == b.extra
        assert replace(a, extra={}) == replace(b, extra={})


def _measured(machine, drift: DriftState):
    n = 600
    block = AssetPhysics(machine, CFG, CFG.profile, force_run=True).step(
        np.arange(n) / CFG.plc_rate_hz, np.arange(n), constant_health("normal", 0.0, "", n), drift)
    return measure(machine, block, drift, CFG.profile, CFG)


def _good(samples, tag: str) -> np.ndarray:
    """The tag's readings with Good quality (a Bad one sits on a rail value)."""
    return samples.column(tag)[samples.quality[:, PLC_TAGS.index(tag)] == GOOD]


def test_the_factor_scales_what_the_transmitter_reads() -> None:
    asset = domain_fleet(3, 3, NOISY)[0]
    drift = constant_drift("none", 0.0)
    for tag in ("bearing_temp_c", "motor_current_a"):
        damped, noisy = (_good(_measured(replace(asset, extra={**asset.extra, f"{tag}_noise": f}), drift), tag)
                         for f in (0.05, 3.0))
        # the same physics under both: the difference is the transmitter's noise alone
        assert abs(float(np.mean(noisy) - np.mean(damped))) < 0.1 * float(np.std(noisy)) + 0.02
        assert float(np.std(np.diff(noisy))) > 10.0 * float(np.std(np.diff(damped))) + 1e-9, tag
    # the other tags read as they did
    noisy_bearing = _measured(replace(asset, extra={**asset.extra, "bearing_temp_c_noise": 3.0}), drift)
    for tag in PLC_TAGS:
        if tag != "bearing_temp_c":
            np.testing.assert_array_equal(noisy_bearing.column(tag), _measured(asset, drift).column(tag))
