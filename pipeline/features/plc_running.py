"""Whether a PLC window shows its machine running throughout, from its run-state tag.

The PLC model learnt machines that run: every window of its training data is a machine at an
operating point. A window in which the machine stops or starts (its ``run_state`` mean below
:data:`RUNNING_THROUGHOUT`) holds a run-down or a run-up: the current falls to zero, the speed
and the pressure collapse, the winding cools. Read as a running machine, such windows of healthy
machines are called faulty at 6.9 % (cooling failure; running windows of the same machines 0.04 %;
docs/models.md, "PLC: windows with a stop"). Condition monitoring judges a machine in steady
running, so the features message of such a window carries ``stats[NOT_RUNNING_STAT] = 1`` and the
PLC prediction withholds every fault (:mod:`models.withheld_classes`). A machine whose historian has
no run-state tag is read as before (the stat is absent).

>>> from pipeline.features.plc_window import plc_feature_names
>>> names = plc_feature_names(); values = np.zeros(len(names), np.float32)
>>> values[names.index("run_state.mean")] = 0.8  # stood still for 2 s of 10
>>> plc_running_stats(values, names)
{'not_running': 1.0}
>>> values[names.index("run_state.mean")] = 1.0; plc_running_stats(values, names)
{'not_running': 0.0}
>>> values[names.index("run_state.mean")] = np.nan; plc_running_stats(values, names)  # no run-state tag
{}
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: The PLC features message's ``stats`` key: 1.0 when the machine stood still in part of the window.
NOT_RUNNING_STAT = "not_running"
#: The lowest ``run_state`` mean of a window whose machine ran throughout (the job's learned PLC
#: baseline takes windows from the same level up: :class:`pipeline.features.plc_baseline.BaselineRules`).
RUNNING_THROUGHOUT = 0.99


def plc_running_stats(values: np.ndarray, names: Sequence[str]) -> dict[str, float]:
    """``{NOT_RUNNING_STAT: 1.0 or 0.0}`` from a window's raw features (``plc_feature_names``
    order), or ``{}`` when the window has no run state."""
    run = float(values[list(names).index("run_state.mean")])
    if not np.isfinite(run):
        return {}
    return {NOT_RUNNING_STAT: float(run < RUNNING_THROUGHOUT)}
