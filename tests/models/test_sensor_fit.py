"""Training data from machines whose historians lack some PLC tags (models.data.sensor_fit)."""

from __future__ import annotations

import numpy as np

from models.data.domain_data import build_domain_dataset
from pipeline.features.plc_physics import PLC_VECTOR_NAMES


def test_absent_tags_change_only_the_plc_input_of_the_machines_drawn_and_say_so() -> None:
    full = build_domain_dataset(2, n_assets=12, seed=5, workers=1)
    fleet = build_domain_dataset(2, n_assets=12, seed=5, workers=1, plc_absent_share=0.6)
    for name in ("thermal", "audio", "y", "severity"):  # nothing else drawn moves
        assert np.array_equal(getattr(full, name), getattr(fleet, name))
    missing = np.array([i for i, n in enumerate(PLC_VECTOR_NAMES) if n.startswith("missing.")])
    assert not full.plc[:, missing].any()  # the contract's seven tags on every machine, as before
    flags = fleet.plc[:, missing]
    changed = np.abs(fleet.plc - full.plc).max(axis=1) > 0
    assert 0 < changed.sum() < fleet.n
    assert np.all(changed[flags.any(axis=1)])  # a missing tag changes the row (run_state has no flag of its own)
    for g in set(fleet.groups.tolist()):  # a machine's instrumentation is the same in all its windows
        assert len({tuple(r) for r in flags[fleet.groups == g]}) == 1
    vib = PLC_VECTOR_NAMES.index("missing.vibration")
    if flags[:, missing.tolist().index(vib)].any():
        rows = fleet.plc[:, vib] == 1
        assert not fleet.plc[rows][:, PLC_VECTOR_NAMES.index("vib.mean_log")].any()
