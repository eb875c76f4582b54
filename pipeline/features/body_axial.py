"""Which end of the motor body is warmer, read so that a region box drawn a little off cannot flip it.

A totally enclosed fan-cooled (TEFC) motor blows ambient air along its fins from the fan end (the
non-drive end) to the drive end: while the fan works, the fan end is the coolest part of the frame
and the body warms towards the drive end. A motor whose fan is broken or whose cowl or fins are
blocked loses that gradient, and often turns it round (textbook machinery thermography; both our
simulator and the other generator of ``bench/bench_foreign_fleet.py`` model it: our healthy
machines' axial slope is 0.1-0.45 of the body's rise, a broken fan moves it by -1.0 ... +0.2).

The thermal vector's ``rel.body_axial_gradient`` compares the outer thirds of the body box. A box
drawn 10-25 % off the body puts background or a housing into one of those thirds, and healthy frames
read through such boxes turned round in 5 of 13 (``bench_thermal_layouts.py``, case ``c_perturbed``,
boxes kept as given). :func:`mid_axial_k` reads the middle half of the box along the machine's axis
only, each axial position by the 75th percentile across the box (the body's warm surface, not a
strip of background above or below it), and fits a straight line: the body's drive end minus its
fan end over the box's length, in kelvin. A body box that runs over a bearing housing and past it (a
proposed box can reach into the coupling and the driven machine) is first cut back to the housing's
centre (:func:`between_housings`).

>>> import numpy as np
>>> from pipeline.features.asset_profile import AssetProfile
>>> frame = np.full((40, 60), 20.0, np.float32)
>>> frame[10:30, 10:50] = np.linspace(40.0, 50.0, 40)                  # warmer towards the drive end
>>> boxes = {"motor_body": (10, 10, 50, 30), "de_bearing": (50, 14, 54, 26)}
>>> round(mid_axial_k(frame, boxes, AssetProfile("M")), 1)
10.3
>>> round(mid_axial_k(frame[:, ::-1].copy(), {"motor_body": (10, 10, 50, 30)}, AssetProfile("M", fan_side="left")), 1)
-10.3
>>> mid_axial_k(frame, {"motor_body": (10, 10, 50, 30)}, AssetProfile("M")) is None   # which end is which?
True
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from pipeline.features.asset_profile import AssetProfile
from pipeline.features.thermal_regions import body_axis

#: The part of the body box along the axis that is read (from, to: fractions of its length).
MIDDLE = (0.25, 0.75)
#: Across the box, each axial position is read at this percentile.
ACROSS_PERCENTILE = 75.0
#: The features message's ``stats`` key of :func:`mid_axial_k` (absent: not read).
MID_AXIAL_STAT = "body_mid_axial_k"


def between_housings(body: tuple[int, int, int, int], boxes: Mapping[str, tuple[int, int, int, int]],
                     vertical: bool) -> tuple[int, int, int, int]:
    """``body`` with an end that runs over a bearing housing and past it, along the axis, cut back to
    the housing's centre: the motor body ends at its bearings, and what lies beyond the housing is the
    coupling and the driven machine (or the fan cowl). A box fitted to the frame (proposed from the
    typical layout, then refined) can run so far, and the driven machine's heat then reads as the
    body's end. A body box that ends on or before a housing is read as it is.

    >>> between_housings((35, 49, 122, 104), {"de_bearing": (92, 61, 108, 91)}, False)
    (35, 49, 100, 104)
    >>> between_housings((9, 49, 95, 104), {"de_bearing": (92, 61, 108, 91)}, False)   # ends on it: as it is
    (9, 49, 95, 104)
    """
    lo_i, hi_i = (1, 3) if vertical else (0, 2)
    lo, hi = body[lo_i], body[hi_i]
    mid = (lo + hi) / 2.0
    for name in ("de_bearing", "nde_bearing"):
        h = boxes.get(name)
        if h is None:
            continue
        c = (h[lo_i] + h[hi_i]) / 2.0
        if mid < c and hi > h[hi_i]:
            hi = int(round(c))
        elif c < mid and lo < h[lo_i]:
            lo = int(round(c))
    out = list(body)
    out[lo_i], out[hi_i] = lo, hi
    return out[0], out[1], out[2], out[3]


def mid_axial_k(frame_c: np.ndarray, boxes: Mapping[str, tuple[int, int, int, int]],
                profile: AssetProfile) -> float | None:
    """The motor body's drive end minus its fan end (K over the body box's length), from a straight
    line through the middle half of the box (its ends cut back to the housings where it runs past them,
    :func:`between_housings`); ``None`` without a body box of at least 4 pixels along the axis or without
    its orientation (:func:`~pipeline.features.thermal_regions.body_axis`)."""
    body = boxes.get("motor_body")
    axis = body_axis(boxes, profile)
    if body is None or axis is None:
        return None
    vertical, de_far = axis
    x0, y0, x1, y1 = between_housings(body, boxes, vertical)
    patch = np.asarray(frame_c[y0:y1, x0:x1], np.float64)
    if vertical:
        patch = patch.T  # axial positions along the columns
    length = patch.shape[1] if patch.ndim == 2 else 0
    if length < 4 or patch.shape[0] < 1:
        return None
    a, b = int(np.floor(MIDDLE[0] * length)), int(np.ceil(MIDDLE[1] * length))
    profile_k = np.percentile(patch[:, a:b], ACROSS_PERCENTILE, axis=0)
    u = (np.arange(a, b) + 0.5) / length
    slope = float(np.polyfit(u, profile_k, 1)[0]) if b - a >= 2 else 0.0
    return slope if de_far else -slope
