"""``FaultEpisode.time_at_severity`` for an open-ended episode (``end_s`` = inf, the fault
``linewatch demo --fault`` injects): the same time as a long finite episode, not ``inf``."""

from __future__ import annotations

import math
import warnings
from dataclasses import replace

import numpy as np
import pytest

from linewatch.simulator.health import FaultEpisode


def test_an_open_ended_episode_reaches_full_severity_when_a_finite_one_does() -> None:
    finite = FaultEpisode(asset_id="PMP-01", fault="bearing_wear", variant="outer_race", onset_s=4.0,
                          end_s=10_000.0, s0=0.05, rate=math.log(20.0) / 22.0,
                          warp_amp=(0.1, 0.05), warp_omega=(0.3, 0.07), warp_phase=(0.2, 1.1))
    open_ended = replace(finite, end_s=math.inf)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # sin(inf) warned and the answer was inf
        full = open_ended.time_at_severity(1.0)
    assert math.isfinite(full) and full == pytest.approx(finite.time_at_severity(1.0), abs=1e-6)
    assert open_ended.severity(np.array([full - 0.5]))[0] < 1.0 <= open_ended.severity(np.array([full + 1e-6]))[0]

