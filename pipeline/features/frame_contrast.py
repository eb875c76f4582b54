"""A thermal frame that shows nothing: no contrast across the scene.

A covered lens (a cap left on, a dust cover), a closed shutter (a camera stuck in its flat-field
correction), a camera or exporter that repeats one fill value, a scene all at one temperature:
such a frame cannot show a fault, and read like any other it scores as a healthy machine. The
live line refuses it with the reason ``no_signal`` (:func:`pipeline.validation.check_frame`) and
``linewatch inspect`` says why (:func:`pipeline.features.thermal_regions.thermal_vector_fit`).

The contrast is the span from the 1st to the 99th percentile of the frame's 2 × 2 pixel means: a
camera's temporal noise (NETD 0.03–0.1 K) halves, dead pixels and a lug of a few pixels fall
outside the percentiles (``thermal.check_frame`` in ``bench/bench_features.py``: 60 µs on a
160 × 120 frame here). Our simulated machines span 1.6 K and more stopped at their hall's
temperature (the hall's gradient and clutter; ``tests/pipeline/test_no_signal.py``) and 8 K and
more running (a one-off probe of 150 randomised samples); a capped camera of NETD 0.1 K with a
0.2 K vignette spans 0.3 K.

>>> import numpy as np
>>> cap = 21.0 + np.random.default_rng(0).normal(0.0, 0.1, (120, 160))  # lens cap, NETD 100 mK
>>> frame_contrast_k(cap) < MIN_CONTRAST_K
True
>>> scene = cap.copy()
>>> scene[40:80, 30:120] += 1.0                                      # a machine 1 K over its hall
>>> frame_contrast_k(scene) > MIN_CONTRAST_K
True
>>> print(no_contrast_detail(np.full((60, 80), 23.5)))  # doctest: +NORMALIZE_WHITESPACE
the frame has no contrast: 98 % of it spans 0.00 K, at 23.5 °C (at least 0.5 K is needed); a covered
lens, a closed shutter, a camera that repeats one value, or a scene all at one temperature shows no
fault: check the camera's view
"""

from __future__ import annotations

import numpy as np

#: Frames whose 1st–99th percentile span of 2 × 2 pixel means is below this (kelvin) have no contrast.
MIN_CONTRAST_K = 0.5


def frame_contrast_k(frame_c: np.ndarray) -> float:
    """The 1st–99th percentile span (kelvin) of the 2 × 2 pixel means of ``frame_c`` (°C or kelvin)."""
    x = np.asarray(frame_c, dtype=np.float32)
    if x.shape[0] < 2 or x.shape[1] < 2:
        return float(np.ptp(x)) if x.size else 0.0
    x = x[: x.shape[0] // 2 * 2, : x.shape[1] // 2 * 2]
    sums = (x[0::2, 0::2] + x[1::2, 0::2] + x[0::2, 1::2] + x[1::2, 1::2]).ravel()
    lo, hi = int(0.01 * (sums.size - 1)), int(np.ceil(0.99 * (sums.size - 1)))
    part = np.partition(sums, (lo, hi))
    return float(part[hi] - part[lo]) / 4.0


def no_contrast_detail(frame_c: np.ndarray, min_contrast_k: float = MIN_CONTRAST_K) -> str | None:
    """What to tell the user about a frame (°C) without contrast; None for a frame with it."""
    span = frame_contrast_k(frame_c)
    if span >= min_contrast_k:
        return None
    level = float(np.median(frame_c))
    return (f"the frame has no contrast: 98 % of it spans {span:.2f} K, at {level:.1f} °C (at least "
            f"{min_contrast_k:g} K is needed); a covered lens, a closed shutter, a camera that repeats one value, "
            "or a scene all at one temperature shows no fault: check the camera's view")
