"""Which PLC tags a machine's historian carries: real fleets are not instrumented alike.

A fan or a conveyor seldom has a pressure transmitter, a small motor no winding RTD, a fixed-speed
drive no speed encoder; the contract's seven tags (``linewatch.contract.plc_tags``) are what a
machine *may* report. The PLC model reads a missing tag as ``missing.*`` = 1 with its statistics 0
(:mod:`pipeline.features.plc_physics`); a model that never saw a missing tag in training reads a
machine without a pressure tag as nothing it knows (an independent PLC fleet: imbalance recall
1 of 26 on such machines, ``bench/bench_foreign_plc.py``). :func:`absent_tags` draws, for one
machine, the tags its historian lacks, with the probabilities of :data:`ABSENT`.

>>> rng = np.random.default_rng(3)
>>> sorted({t for _ in range(200) for t in absent_tags("fan", False, rng)}) == sorted(ABSENT)
True
>>> pumps = [absent_tags("centrifugal_pump", True, rng) for _ in range(1000)]
>>> fans = [absent_tags("fan", False, rng) for _ in range(1000)]
>>> bool(0.05 < np.mean(["pressure_bar" in t for t in pumps]) < 0.15 < 0.45 < np.mean(["pressure_bar" in t for t in fans]))
True
"""

from __future__ import annotations

import numpy as np

from linewatch.contract.plc_tags import PLC_TAGS

#: Probability that a machine's historian lacks a tag: ``(pumps, other machines)``; speed:
#: ``(variable-speed drives, fixed speed)`` (a drive reports its speed, a fixed-speed motor needs an encoder).
ABSENT: dict[str, tuple[float, float]] = {
    "pressure_bar": (0.1, 0.55),
    "winding_temp_c": (0.3, 0.3),
    "bearing_temp_c": (0.25, 0.25),
    "vibration_rms_mm_s": (0.15, 0.15),
    "speed_rpm": (0.05, 0.35),
    "motor_current_a": (0.05, 0.05),
    "run_state": (0.2, 0.2),
}


def absent_tags(asset_type: str, vfd: bool, rng: np.random.Generator) -> tuple[str, ...]:
    """The tags (in ``PLC_TAGS`` order) one machine's historian lacks; never all of them."""
    out = []
    for tag in PLC_TAGS:
        pump_or_drive, other = ABSENT[tag]
        first = vfd if tag == "speed_rpm" else "pump" in asset_type
        if rng.random() < (pump_or_drive if first else other):
            out.append(tag)
    return tuple(out) if len(out) < len(PLC_TAGS) else tuple(out[1:])
