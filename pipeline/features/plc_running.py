"""Whether a PLC window shows its machine running throughout, from its run-state tag.

The PLC model learnt machines that run: every window of its training data is a machine at an
operating point. A window in which the machine stops or starts (its ``run_state`` mean below
:data:`RUNNING_THROUGHOUT`) holds a run-down or a run-up: the current falls to zero, the speed
and the pressure collapse, the winding cools. Read as a running machine, such windows of healthy
machines are called faulty at 5.2-8.6 % (cooling failure, mostly; running windows of the same
machines 0.07-0.16 %; ``bench/bench_plc_stops.py``, docs/models.md "PLC: windows with a stop"). Condition monitoring judges a machine in steady
running, so the features message of such a window carries ``stats[NOT_RUNNING_STAT] = 1`` and the
PLC prediction withholds every fault (:mod:`models.withheld_classes`). So do the windows that start
within :data:`RUN_UP_MS` after a standstill (:func:`follow_run`: the run-up, where the process has
not settled yet). A machine whose historian has no run-state tag is read as before (the stat is
absent).

>>> from pipeline.features.plc_window import plc_feature_names
>>> names = plc_feature_names(); values = np.zeros(len(names), np.float32)
>>> values[names.index("run_state.mean")] = 0.8  # stood still for 2 s of 10
>>> plc_running_stats(values, names)
{'not_running': 1.0}
>>> values[names.index("run_state.mean")] = 1.0; plc_running_stats(values, names)
{'not_running': 0.0}
>>> values[names.index("run_state.mean")] = np.nan; plc_running_stats(values, names)  # no run-state tag
{}
>>> standstill = None  # windows of one machine in time order: a stop in the one starting at 30 s
>>> for start_s, stood in ((20, 0.0), (30, 1.0), (40, 0.0), (50, 0.0), (60, 0.0)):
...     stats = {NOT_RUNNING_STAT: stood}; standstill = follow_run(stats, 1000 * start_s, standstill)
...     print(start_s, stats[NOT_RUNNING_STAT])
20 0.0
30 1.0
40 1.0
50 1.0
60 0.0
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: The PLC features message's ``stats`` key: 1.0 when the machine stood still in part of the window.
NOT_RUNNING_STAT = "not_running"
#: How long after the start of a window with a standstill the machine's windows still count as not
#: running (its run-up). On the simulator's fleets the healthy windows that start 0-20 s after a restart
#: are called faulty at 1.9-4.5 %, those 20-60 s after at 0-0.1 %, running ones at 0.1-0.2 %
#: (``bench/bench_plc_stops.py``; the 20 s were read off those bins, so they fit the simulator's run-up:
#: the live line's ``flink.plc_run_up_s`` sets it per site).
RUN_UP_MS = 20_000
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


def follow_run(stats: dict[str, float], start_ms: int, standstill_ms: int | None,
               run_up_ms: int = RUN_UP_MS) -> int | None:
    """Marks (in ``stats``) a running window that starts within ``run_up_ms`` after the start of the
    machine's last window with a standstill (``standstill_ms``) as not running; returns the start of
    the machine's newest window with a standstill. Call it on a machine's windows in time order."""
    if NOT_RUNNING_STAT not in stats:
        return standstill_ms
    if stats[NOT_RUNNING_STAT] >= 0.5:
        return start_ms
    if standstill_ms is not None and 0 <= start_ms - standstill_ms <= run_up_ms:
        stats[NOT_RUNNING_STAT] = 1.0
    return standstill_ms
