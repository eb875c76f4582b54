"""Pixels of a radiometric frame that are no temperature, filled from their neighbours.

A microbolometer ships with some pixels that read nothing useful: makers quote an *operability*
of 99 % or better, i.e. up to 1 % dead or stuck pixels. An exporter writes NaN or a fill value
(0 K, 1e6) where a pixel had no reading. Such a pixel is read as the median of the valid pixels
around it (its 3×3 neighbourhood, growing to 5×5 and 7×7 where a cluster leaves none, else the
frame's median), the usual bad-pixel replacement of thermal cameras. A neighbour's median keeps a
dead pixel in a warm bearing housing from reading as a cold spot (the frame's median would) and
adds no hot spot.

>>> f = np.full((6, 6), 30.0, np.float32); f[1:5, 1:5] = 50.0; f[2, 2] = np.nan
>>> float(fill_pixels(f, ~np.isfinite(f))[2, 2])
50.0
>>> f[2:4, 2:4] = 1e6; float(fill_pixels(f, f > 2000)[3, 3])
50.0
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

#: The largest share of a frame's pixels that the live line fills (more is a dead letter: a wrong
#: unit or a broken camera, not dead pixels); a camera's operability of 99 %.
MAX_DEAD_SHARE = 0.01

#: Neighbourhood radii tried in turn (3×3, 5×5, 7×7).
RADII = (1, 2, 3)


def fill_pixels(values: np.ndarray, bad: np.ndarray) -> np.ndarray:
    """``float32`` copy of the 2-D ``values`` with each ``bad`` pixel read as the median of the
    valid pixels around it (:data:`RADII`), else of the whole frame. ``ValueError`` when no pixel
    is valid."""
    out = np.asarray(values, dtype=np.float32).copy()
    if not bad.any():
        return out
    if bad.all():
        raise ValueError("no valid pixel to fill from")
    masked = np.where(bad, np.float32(np.nan), out)
    ys, xs = np.nonzero(bad)
    todo = np.ones(len(ys), bool)
    for r in RADII:
        padded = np.pad(masked, r, constant_values=np.nan)
        windows = sliding_window_view(padded, (2 * r + 1, 2 * r + 1))[ys[todo], xs[todo]]
        valid = np.isfinite(windows).any(axis=(1, 2))
        idx = np.flatnonzero(todo)[valid]
        if idx.size:
            out[ys[idx], xs[idx]] = np.nanmedian(windows[valid], axis=(1, 2))
        todo[idx] = False
        if not todo.any():
            return out
    out[ys[todo], xs[todo]] = np.float32(np.median(out[~bad]))
    return out
