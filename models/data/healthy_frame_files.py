"""Healthy thermal frames of a randomised fleet as landing-zone files, for checks that score them
through ``linewatch inspect``'s path (``tests/models/test_thermal_driven_heat.py``,
``bench/bench_thermal_driven_heat.py``).

``driven`` sets every machine's driven machine (rise over ambient at full load in K, a pump's fluid
in °C), so the same samples can be rendered with the driven machine cool and hot.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path


def write_healthy_frames(root: Path, domain: str, seed: int, frames: int, *, assets: int,
                         driven: tuple[float, float] | None = None) -> list[Path]:
    """Writes ``root/assets.json`` and up to ``frames`` healthy frames (``<ASSET>-<stamp>.tiff``) of
    ``assets`` machines of ``domain`` (seed ``seed``); returns the frame paths."""
    import tifffile

    from linewatch.simulator.domain import DOMAINS, DomainRenderer, domain_registry_json
    from models.data.domain_data import domain_world

    fleet, _, specs = domain_world(domain, assets, seed, 30)  # 30 samples per class, healthy ones taken
    if driven is not None:
        fleet = [replace(a, driven_rise_k=driven[0], driven_base_c=driven[1]) for a in fleet]
    renderer = DomainRenderer(fleet, seed)
    root.mkdir(parents=True, exist_ok=True)
    (root / "assets.json").write_text(json.dumps(domain_registry_json(fleet, seed, DOMAINS[domain])))
    paths = []
    for k, spec in enumerate([s for s in specs if s.fault == "normal"][:frames]):
        path = root / f"{spec.asset_id}-20261129T1400{k:05d}.tiff"
        tifffile.imwrite(path, renderer.render(spec, ("thermal",)).frame)
        paths.append(path)
    return paths
