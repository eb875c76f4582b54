"""Audio clips of a fleet of our randomised simulator (``linewatch.simulator.domain``), rendered one
by one for the audio benches (``bench_speed_estimate.py``, ``bench_audio_drive_carrier.py``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np


def rendered_clips(domain: str, n_assets: int, seed: int, per_class: int, indices: Sequence[int]
                   ) -> Iterator[tuple[Any, Any, Any, float, np.ndarray]]:
    """``(spec, asset, profile, true shaft Hz, clip)`` of the fleet's samples ``indices`` (the
    ``models.data.domain_data`` world of these arguments); the clip as float32 in [-1, 1]."""
    from linewatch.simulator.domain import DomainRenderer
    from models.data.domain_data import domain_world

    fleet, profiles, specs = domain_world(domain, n_assets, seed, per_class)
    renderer = DomainRenderer(fleet, seed)
    by_id = {a.asset_id: a for a in fleet}
    for i in indices:
        spec = specs[i]
        sample = renderer.render(spec, modalities=("audio",))
        yield (spec, by_id[spec.asset_id], profiles[spec.asset_id], float(sample.shaft_hz),
               sample.clip.astype(np.float32) / 32768.0)
