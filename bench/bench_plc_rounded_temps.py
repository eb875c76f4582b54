"""The shipped PLC model on exports whose historian rounds the temperatures: as read until 2026-12-06
against the rounded-away noise read at the healthy median.

    .venv/bin/python bench/bench_plc_rounded_temps.py --out bench/results/plc_rounded_temps.json

Renders PLC windows of fresh fleets of our simulator (the training types, seed 4242, and the unseen
types, seed 3131; no model learnt from either; every tag present), as
``bench/bench_plc_missing_tags.py`` does, and stores the bearing and winding temperatures as
historians do: as measured, rounded to 0.1 K, rounded to 1 K, and only when they move 0.5 K or more
from the last stored value (a deadband, held between changes as the historian's stair-step retrieval
returns it). A temperature's standard deviation over a window is its RTD's noise (bearings and
windings warm over minutes); the shipped model learnt one simulated noise, and a rounded one is
about 0. The registered PLC model (INT8, as served: impossible and withheld classes dropped, only its
visible classes named) reads each window two ways:

- ``raw``: the vector as the features job writes it, as every reader did until 2026-12-06 (every tag is
  present, so the missing-tag fill did nothing);
- ``filled``: :class:`models.missing_tags.HealthyFill` as ``linewatch inspect``, the inference service
  and LIME apply it since: the bearing temperature's standard deviation always, and the winding
  temperature's where it lies below half the steadiest healthy reference window's, read at the healthy
  median.

Reported per fleet and storage: healthy false-alarm rate, recall past moderate severity (0.5) of each
visible class, and the share of windows whose temperature noise reads as rounded away (those
``inspect`` warns about).
"""

from __future__ import annotations

import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

FLEETS = (("train", 240, 4242), ("unseen", 120, 3131))
TEMPERATURES = ("bearing_temp_c", "winding_temp_c")
#: storage name -> (rounding step K, deadband K); 0: not applied
STORAGES: dict[str, tuple[float, float]] = {"as measured": (0.0, 0.0), "rounded to 0.1 K": (0.1, 0.0),
                                           "rounded to 1 K": (1.0, 0.0), "stored on a 0.5 K change": (0.0, 0.5)}


def stored(values: np.ndarray, step: float, deadband: float) -> np.ndarray:
    """A temperature column as a historian stores and returns it: rounded to ``step``, or a value kept
    until the reading moves ``deadband`` or more from it (NaN, a sample the PLC did not send, kept).

    >>> stored(np.array([20.04, 20.26, 20.61, np.nan, 21.2]), 0.1, 0.0).round(2).tolist()
    [20.0, 20.3, 20.6, nan, 21.2]
    >>> stored(np.array([20.0, 20.3, 20.6, np.nan, 20.7, 21.2]), 0.0, 0.5).tolist()
    [20.0, 20.0, 20.6, nan, 20.6, 21.2]
    """
    if step > 0:
        return np.round(values / step) * step
    if deadband <= 0:
        return values
    out, last = values.copy(), np.nan
    for k, v in enumerate(values):
        if np.isnan(v):
            continue
        if np.isnan(last) or abs(v - last) >= deadband:
            last = v
        out[k] = last
    return out


def _chunk(args: tuple[str, int, int, int, list[int]]) -> tuple[list[int], dict[str, np.ndarray]]:
    from linewatch.contract.plc_tags import PLC_TAGS
    from linewatch.simulator.domain import DomainRenderer
    from models.data.domain_data import _wide_rows, domain_world
    from models.data.featurize import plc_input
    from pipeline.features.plc_physics import plc_vector

    domain, n_assets, seed, per_class, indices = args
    fleet, profiles, specs = domain_world(domain, n_assets, seed, per_class)
    renderer = DomainRenderer(fleet, seed)
    vectors: dict[str, list[np.ndarray]] = {name: [] for name in STORAGES}
    for i in indices:
        spec = specs[i]
        ts, wide, bad = _wide_rows(renderer.render(spec, ("plc",)).plc)
        for name, (step, deadband) in STORAGES.items():
            w = wide.copy()
            for tag in TEMPERATURES:
                w[:, PLC_TAGS.index(tag)] = stored(w[:, PLC_TAGS.index(tag)], step, deadband)
            vectors[name].append(plc_vector(plc_input(ts, w, bad), profiles[spec.asset_id]))
    return indices, {name: np.stack(v) for name, v in vectors.items()}


def main() -> None:
    from bench_plc_missing_tags import fleet_arguments, rendered, score_line, served_plc  # that bench's PLC as served

    args = fleet_arguments(__doc__, "bench/results/plc_rounded_temps.json")
    t0 = time.time()
    served = served_plc(args.registry)
    model, classes, fill = served.model, served.classes, served.fill
    result: dict[str, Any] = {"command": " ".join([".venv/bin/python", "bench/bench_plc_rounded_temps.py", *sys.argv[1:]]),
                              "machine": {"platform": platform.platform(), "cpus": 2},
                              "model": f"plc {model.version} ({model.card.serving_role})",
                              "noise_floor": {n: round(float(v), 4) for n, v in zip(fill.names, fill.noise_floor, strict=True)
                                              if v > 0},
                              "fleets": {}}
    for domain, n_assets, seed in FLEETS:
        specs, parts = rendered(_chunk, domain, n_assets, seed, args.per_class, args.workers)
        n = len(specs)
        y = np.array([classes.index(s.fault) for s in specs])
        severity = np.array([s.severity for s in specs], np.float32)
        types = np.array([s.asset_type for s in specs])
        fleet: dict[str, Any] = {"windows": n, "machines": n_assets}
        for name in STORAGES:
            x = np.zeros((n, parts[0][1][name].shape[1]), np.float32)
            for idx, vectors in parts:
                x[idx] = vectors[name]
            rounded = float(np.mean([bool(fill.steadied(v)) for v in x]))
            fleet[name] = {"rounded_away": round(rounded, 3)}
            for mode in ("raw", "filled"):
                model_x = x if mode == "raw" else np.stack([fill.apply(v) for v in x])
                fleet[name][mode] = served.score(served.predict(x, model_x, types), x, y, severity)
        result["fleets"][f"{domain} (seed {seed})"] = fleet
    result["seconds"] = round(time.time() - t0, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    for fleet_name, fleet in result["fleets"].items():
        print(f"{fleet_name}: {fleet['windows']} windows")
        for name in STORAGES:
            for mode in ("raw", "filled"):
                print(f"  {name:26s} {mode:7s} {score_line(fleet[name][mode])}; "
                      f"noise rounded away in {100 * fleet[name]['rounded_away']:.0f} %")
    print(f"{result['seconds']:.0f} s; {args.out}")


if __name__ == "__main__":
    main()
