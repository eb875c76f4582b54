"""Training data with region boxes as users hold them (models.data.user_boxes)."""

from __future__ import annotations

import numpy as np
import pytest

from models.data.domain_data import build_domain_dataset
from models.data.user_boxes import MODES, degrade_regions

EXACT = {"motor_body": (40.0, 30.0, 100.0, 70.0), "de_bearing": (100.0, 40.0, 112.0, 60.0),
         "terminal_box": (60.0, 18.0, 80.0, 30.0)}


def test_each_mode_degrades_the_boxes_the_way_it_says() -> None:
    rng = np.random.default_rng(1)
    for _ in range(50):
        assert degrade_regions(EXACT, rng, (160, 120), "none") == ("none", {})
        mode, rough = degrade_regions(EXACT, rng, (160, 120), "rough")
        scales = {round((b[2] - b[0]) / (e[2] - e[0]), 6) for b, e in zip(rough.values(), EXACT.values(), strict=True)}
        assert mode == "rough" and len(scales) == 1 and 0.8 <= scales.pop() <= 1.25  # one hand, one scale
        shifts = {(round(b[0] - e[0], 6), round(b[1] - e[1], 6))
                  for b, e in zip(degrade_regions(EXACT, rng, (160, 120), "moved")[1].values(), EXACT.values(), strict=True)}
        (dx, dy), = shifts  # the whole set moves together
        assert 0.04 * 160 <= abs(dx) <= 0.15 * 160 and 0.04 * 120 <= abs(dy) <= 0.15 * 120
    drawn = {degrade_regions(EXACT, rng, (160, 120))[0] for _ in range(60)}
    assert drawn == set(MODES)
    assert {degrade_regions(EXACT, rng, (160, 120), modes=("none", "moved"))[0] for _ in range(40)} == {"none", "moved"}
    with pytest.raises(ValueError, match="unknown box mode"):
        degrade_regions(EXACT, rng, (160, 120), "sideways")


def test_user_boxes_change_only_the_thermal_input_of_the_machines_drawn() -> None:
    exact = build_domain_dataset(2, n_assets=12, seed=5, workers=1)
    users = build_domain_dataset(2, n_assets=12, seed=5, workers=1, user_box_share=0.6)
    assert exact.thermal_boxes is None
    codes = users.thermal_boxes
    assert codes is not None and codes.shape == (users.n,)
    for name in ("plc", "audio", "y", "severity"):  # nothing else drawn moves
        assert np.array_equal(getattr(exact, name), getattr(users, name))
    exact_rows = codes == 0
    assert 0 < exact_rows.sum() < users.n
    np.testing.assert_array_equal(users.thermal[exact_rows], exact.thermal[exact_rows])
    assert np.all(np.abs(users.thermal[~exact_rows] - exact.thermal[~exact_rows]).max(axis=1) > 0)
    for g in set(users.groups.tolist()):  # a machine's boxes go wrong once, for all its frames
        assert len(set(codes[users.groups == g].tolist())) == 1
