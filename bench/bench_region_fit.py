"""Thermal region boxes against the parts they stand for: where ``fit_regions`` puts them, on three
generators' frames, with the edge map as shipped and as before 2026-12-06.

    .venv/bin/python bench/bench_region_fit.py --out bench/results/region_fit.json

:func:`pipeline.features.thermal_fit.fit_regions` moves ``assets.json`` boxes onto the machine when
they do not sit on it (a camera that moved, a hand-held survey) by matching their outlines to the
frame's temperature edges. Since 2026-12-06 :func:`~pipeline.features.thermal_fit.edge_map`
saturates those edges well above the camera's noise and weighs each by its local peak; before, it
normalised them to their 99th percentile, so that the hottest edges in the frame (a steam pipe
across the hall) outweighed a machine a few kelvin over ambient. Each frame is fitted both ways (the old map is a copy kept here,
:func:`edge_map_p99`), against the true part boxes its generator knows:

- **blind**: every frame of ``bench/bench_blind_fleet.py``'s fleet that has ``regions`` in its
  ``assets.json`` (``--fleet``, generated here if missing): fixed cameras, cameras moved since the
  boxes were drawn, hand-held survey routes (+-6 % position, +-8 % scale per visit), a quarter of
  the cameras with a hot pipe in view; the boxes drawn 5 % inside each part;
- **foreign**: ``bench/bench_foreign_fleet.py``'s machines (another generator), their boxes as its
  ``assets.json`` gives them (exact, drawn inside or outside, rough: +-4 % off; fixed cameras);
- **ours**: our simulator's fresh fleets (``bench_generalisation.py``'s seeds, training and unseen
  types), each frame with its exact boxes and again with them moved (+-12 % / +-10 %) and scaled
  (0.92-1.08) as a moved camera would see them.

Per source and camera: frames whose boxes were registered (moved), and of the bearing housings,
motor body and terminal box the share whose fitted box lies at least half inside its true part
("on the part"), and their mean IoU with it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

PARTS = ("de_bearing", "nde_bearing", "motor_body", "terminal_box")
Box = tuple[float, float, float, float]


def edge_map_p99(frame_c: np.ndarray) -> np.ndarray | None:
    """:func:`pipeline.features.thermal_fit.edge_map` as it was before 2026-12-06: the gradient
    normalised to its 99th percentile and capped at 1."""
    from pipeline.features import thermal_fit as tf

    g, spread = tf.gradient(frame_c)
    p99 = float(np.percentile(g, 99.0))
    if spread < tf.MIN_EDGE_CONTRAST_K or p99 <= 1e-6:
        return None
    return np.minimum(g / p99, 1.0).astype(np.float32)


@contextmanager
def edges(kind: str) -> Iterator[None]:
    """``fit_regions`` with the shipped edge map, or (``"before"``) with :func:`edge_map_p99`."""
    from pipeline.features import thermal_fit as tf

    shipped = tf.edge_map
    tf.edge_map = shipped if kind == "shipped" else edge_map_p99  # type: ignore[assignment]
    try:
        yield
    finally:
        tf.edge_map = shipped  # type: ignore[assignment]


def inside_share(a: Box, b: Box) -> float:
    """The share of box ``a`` inside box ``b``."""
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    return ix * iy / max((a[2] - a[0]) * (a[3] - a[1]), 1e-9)


def iou(a: Box, b: Box) -> float:
    inter = inside_share(a, b) * (a[2] - a[0]) * (a[3] - a[1])
    return inter / max((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter, 1e-9)


#: One frame to fit: (source, camera, frame °C, given boxes in frame pixels, true boxes, asset type, fan side, fit on)
Frame = tuple[str, str, np.ndarray, dict[str, Box], dict[str, Box], str, "str | None", bool]


def blind_frames(fleet_dir: Path) -> Iterator[Frame]:
    from models.inspect.frame_files import read_frame
    from models.inspect.readers import load_assets
    from pipeline.features.asset_profile import AssetProfile
    from pipeline.features.thermal_regions import frame_to_celsius, scaled_regions

    truth = json.loads((fleet_dir / "truth.json").read_text(encoding="utf-8"))
    profiles = {k.lower(): v for k, v in load_assets(fleet_dir / "assets.json").items()}
    for m, samples in zip(truth["machines"], truth["samples"], strict=True):
        profile = profiles.get(m["asset_id"].lower(), AssetProfile(asset_id=m["asset_id"]))
        cam = m["camera"]
        camera = "hand-held" if cam["handheld"] else "moved" if cam.get("moved") else "fixed"
        for s in samples:
            frame = frame_to_celsius(read_frame(Path(s["files"]["thermal"]), []), profile.frame)
            given = scaled_regions(profile, frame.shape)
            if given:
                yield ("blind", camera, frame, given, {k: tuple(v) for k, v in s["truth"]["boxes"].items()},
                       profile.asset_type, profile.fan_side, profile.region_fit)


def foreign_frames(machines: int, seed: int, per_machine: int) -> Iterator[Frame]:
    import bench_foreign_fleet as ff
    from pipeline.features.asset_profile import AssetProfile
    from pipeline.features.thermal_regions import scaled_regions

    for index in range(machines):
        m = ff.draw_machine(index, seed)
        if m.camera.region_mode == "none":
            continue
        profile = AssetProfile.from_entry(ff.asset_entry(m, seed))
        for s in ff.plan_samples(m, seed, 1, per_machine)[:per_machine]:
            frame, scene = ff.render_frame(m, s, np.random.default_rng([seed, 6, m.index, s.index]))
            given = scaled_regions(profile, frame.shape)
            if given:
                yield ("foreign", m.camera.region_mode, frame.astype(np.float32), given, dict(scene.boxes),
                       profile.asset_type, profile.fan_side, profile.region_fit)


def our_frames(per_class: int) -> Iterator[Frame]:
    from bench_speed_estimate import FLEETS
    from linewatch.simulator.domain import DomainRenderer
    from models.data.domain_data import domain_world
    from pipeline.features.thermal_regions import frame_to_celsius, scaled_regions

    rng = np.random.default_rng(20261206)
    for domain, n_assets, seed in FLEETS:
        fleet, profiles, specs = domain_world(domain, n_assets, seed, per_class)
        renderer = DomainRenderer(fleet, seed)
        seen: set[str] = set()
        for spec in specs:
            if spec.asset_id in seen:  # one frame a machine
                continue
            seen.add(spec.asset_id)
            profile = profiles[spec.asset_id]
            frame = frame_to_celsius(renderer.render(spec, ("thermal",)).frame, profile.frame)
            exact = {k: tuple(float(v) for v in b) for k, b in scaled_regions(profile, frame.shape).items()}
            h, w = frame.shape
            dx, dy, sc = rng.uniform(-0.12, 0.12) * w, rng.uniform(-0.1, 0.1) * h, rng.uniform(0.92, 1.08)
            gx, gy = np.mean([b[0] for b in exact.values()]), np.mean([b[1] for b in exact.values()])
            moved = {k: tuple(float(round((v - (gx if i % 2 == 0 else gy)) * sc + (gx + dx if i % 2 == 0 else gy + dy)))
                              for i, v in enumerate(b)) for k, b in exact.items()}
            for camera, given in ((f"{domain}, exact", exact), (f"{domain}, moved", moved)):
                yield ("ours", camera, frame, {k: tuple(int(v) for v in b) for k, b in given.items()}, exact,
                       profile.asset_type, profile.fan_side, True)


def fit_frame(frame: Frame) -> dict[str, Any]:
    """The frame's boxes fitted with both edge maps, and with none given (proposed)."""
    from pipeline.features.thermal_fit import fit_regions

    source, camera, frame_c, given, true, asset_type, fan_side, enabled = frame
    row: dict[str, Any] = {"source": source, "camera": camera}
    for kind in ("shipped", "before"):
        with edges(kind):
            fit = fit_regions(frame_c, given, asset_type, fan_side, enabled=enabled)
            proposed = fit_regions(frame_c, None, asset_type, fan_side)
        parts = [p for p in PARTS if p in true and p in fit.boxes]
        row[kind] = {"registered": fit.status == "registered",
                     "on_part": [inside_share(fit.boxes[p], true[p]) >= 0.5 for p in parts],
                     "iou": [iou(fit.boxes[p], true[p]) for p in parts],
                     "proposed_body_iou": iou(proposed.boxes["motor_body"], true["motor_body"])
                     if "motor_body" in proposed.boxes and "motor_body" in true else 0.0}
    return row


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[f"{r['source']}: {r['camera']}"].append(r)
    out: dict[str, Any] = {}
    for name, rs in sorted(groups.items()):
        block: dict[str, Any] = {"frames": len(rs)}
        for kind in ("shipped", "before"):
            on = [v for r in rs for v in r[kind]["on_part"]]
            block[kind] = {"registered": int(sum(r[kind]["registered"] for r in rs)),
                           "on_part": round(float(np.mean(on)), 3) if on else None,
                           "iou": round(float(np.mean([v for r in rs for v in r[kind]["iou"]])), 3) if on else None,
                           "proposed_body_iou": round(float(np.mean([r[kind]["proposed_body_iou"] for r in rs])), 3)}
        out[name] = block
    return out


def _run(frames: Iterator[Frame], workers: int) -> list[dict[str, Any]]:
    if workers <= 1:
        return [fit_frame(f) for f in frames]
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(workers) as pool:
        return list(pool.map(fit_frame, frames, chunksize=4))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fleet", type=Path, default=Path("/tmp/blind/fleet1"), help="a bench_blind_fleet.py fleet")
    parser.add_argument("--foreign-machines", type=int, default=40)
    parser.add_argument("--foreign-seed", type=int, default=20270301, help="bench_foreign_fleet.py's default fleet")
    parser.add_argument("--foreign-frames", type=int, default=4, help="frames per foreign machine")
    parser.add_argument("--per-class", type=int, default=12, help="samples per class drawn from each of our fleets")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/region_fit.json")
    args = parser.parse_args()
    t0 = time.time()
    from bench_blind_fleet import ensure_fleet

    ensure_fleet(args.fleet)
    rows = (_run(blind_frames(args.fleet), args.workers)
            + _run(foreign_frames(args.foreign_machines, args.foreign_seed, args.foreign_frames), args.workers)
            + _run(our_frames(args.per_class), args.workers))
    result = {"command": " ".join([".venv/bin/python", "bench/bench_region_fit.py", *sys.argv[1:]]),
              "seconds": round(time.time() - t0, 1), "results": summarise(rows)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1), encoding="utf-8")
    print(f"{'frames':32s} {'n':>4s}  registered (now / before)  on the part  IoU  proposed body IoU")
    for name, b in result["results"].items():
        s, o = b["shipped"], b["before"]
        print(f"{name:32s} {b['frames']:4d}  {s['registered']:4d} / {o['registered']:4d}"
              f"            {s['on_part']} / {o['on_part']}  {s['iou']} / {o['iou']}"
              f"  {s['proposed_body_iou']} / {o['proposed_body_iou']}")
    print(f"{result['seconds']} s")


if __name__ == "__main__":
    main()
