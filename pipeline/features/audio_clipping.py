"""Clipping of a recording: samples piled up at its peak, where the microphone or converter ran out.

A recorder driven past full scale flattens every crest at one level. The flat tops add odd
harmonics and sharp edges that the envelope and comb features read as impacts, so a clipped
healthy clip looks like bearing wear or cavitation. A clipped recording shows as a pile-up in the
amplitude histogram. Many samples sit within :data:`TOP_BAND` of the peak, at least
:data:`PILE_UP` times as many as in the band just below it. A smooth crest has fewer: a sine's
arcsine density puts about 2.4 times as many there, noise fewer. The test needs no knowledge of the
format's full scale, so it also finds a recording that was clipped in the analogue stage and
scaled afterwards.

>>> import numpy as np
>>> t = np.arange(16_000) / 16_000
>>> tone = np.sin(2 * np.pi * 50.0 * t) + 0.05 * np.random.default_rng(0).standard_normal(t.size)
>>> round(clipped_fraction(tone), 4), round(clipped_fraction(np.clip(3.0 * tone, -1.0, 1.0)), 3)
(0.0, 0.785)
"""

from __future__ import annotations

import numpy as np

#: The band below the peak (a fraction of it) where clipped samples pile up.
TOP_BAND = 0.002
#: A pile-up holds at least this many times the samples of the band just below it.
PILE_UP = 5.0
#: Share of samples in a pile-up from which a recording counts as clipped (16 a second at 16 kHz).
CLIPPED_SHARE = 0.001


def clipped_fraction(samples: np.ndarray) -> float:
    """Share of the samples piled up at the recording's peak (both polarities), 0.0 when the
    crests are smooth (see the module docstring)."""
    x = np.abs(np.asarray(samples, dtype=np.float64).ravel())
    if x.size == 0:
        return 0.0
    peak = float(x.max())
    if peak <= 0.0:
        return 0.0
    top = int(np.count_nonzero(x >= peak * (1.0 - TOP_BAND)))
    below = int(np.count_nonzero((x >= peak * (1.0 - 2.0 * TOP_BAND)) & (x < peak * (1.0 - TOP_BAND))))
    return top / x.size if top >= PILE_UP * max(below, 1) else 0.0


def is_clipped(samples: np.ndarray) -> bool:
    """Whether at least :data:`CLIPPED_SHARE` of the samples pile up at the peak."""
    return clipped_fraction(samples) >= CLIPPED_SHARE
