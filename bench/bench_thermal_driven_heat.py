"""How a thermal model reads a healthy machine whose driven machine runs hot (process heat).

    .venv/bin/python bench/bench_thermal_driven_heat.py --registry /tmp/reg_v6 --registry models/default \
        --out bench/results/thermal_driven_heat.json [--foreign-report R.json --foreign-data DIR]

A pump's casing sits at its fluid's temperature, a screw compressor's at 60-100 °C: that heat says
nothing about the motor. Two readings per registry (its latest thermal model):

* **the same frames, hotter driven machines** (our simulator): healthy samples of a fleet of
  ``--domain`` (seeds ``--seeds``, no model trained on them) rendered again with every driven machine at
  each of ``SETTINGS`` (rise over ambient at full load in K, a pump's fluid in °C); every frame is
  scored through ``linewatch inspect``'s path (:class:`models.inspect.Inspector`); reported: the mean
  bearing-wear probability and the share of frames named a fault, per setting;
* **another generator's healthy frames** (``--foreign-report`` / ``--foreign-data``: the report and
  ``--data`` folder of ``bench/bench_foreign_fleet.py``): the healthy frames read through exact
  boxes, their model input with the driven machine's readings moved by ``SHIFTS_K`` (driven
  mean / p90 / max rise, driven minus body; the frame's max and p99 rise where the driven machine
  sets them): the model's own softmax (before the visible-class restriction), mean bearing-wear
  probability and share of frames whose top class is a fault.

A model that has learnt the driven machine's heat as a motor fault shows it as a slope.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

SETTINGS: dict[str, tuple[float, float]] = {"cool": (15.0, 30.0), "warm": (40.0, 60.0), "hot": (70.0, 90.0)}
SHIFTS_K = (-30.0, -15.0, 0.0, 15.0, 30.0)
DRIVEN_READINGS = ("driven.mean_rise", "driven.p90_rise", "driven.max_rise", "rel.driven_minus_body")


def shifted(x: np.ndarray, dk: float) -> np.ndarray:
    """``x`` (thermal vectors) with the driven machine's readings moved by ``dk`` kelvin."""
    from pipeline.features.thermal_regions import THERMAL_VECTOR_NAMES as names

    y = x.copy()
    for name in DRIVEN_READINGS:
        y[:, names.index(name)] += dk
    i_max, i_p99 = names.index("global.frame_max_rise"), names.index("global.frame_p99_rise")
    y[:, i_max] = np.maximum(y[:, i_max], y[:, names.index("driven.max_rise")])
    y[:, i_p99] = np.maximum(y[:, i_p99], y[:, names.index("driven.p90_rise")])
    return y


def foreign_vectors(report: Path, data: Path) -> np.ndarray:
    """Thermal vectors of the foreign fleet's healthy frames read through exact boxes."""
    import tifffile

    from models.inspect.readers import load_assets
    from pipeline.features.thermal_regions import thermal_vector

    rep = json.loads(report.read_text())
    assets = load_assets(data / "assets.json")
    rows = [thermal_vector(tifffile.imread(data / "files" / r["tiff"]), assets[r["asset_id"]])
            for r in rep["records"]
            if r["cls"] == "normal" and rep["machines"][r["asset_id"]]["camera"]["region_mode"] == "exact"]
    return np.stack(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--registry", type=Path, action="append", required=True, help="repeat to compare")
    parser.add_argument("--domain", choices=("train", "unseen"), default="train")
    parser.add_argument("--seeds", type=int, nargs="+", default=[4322, 4323, 4324])
    parser.add_argument("--frames", type=int, default=60, help="healthy frames per seed (at most the fleet's)")
    parser.add_argument("--foreign-report", type=Path, default=None)
    parser.add_argument("--foreign-data", type=Path, default=None)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    from tqdm.auto import tqdm

    from models.data.healthy_frame_files import write_healthy_frames
    from models.export.onnx_export import ort_logits, ort_session
    from models.inspect import Inspector
    from models.inspect.readers import load_assets
    from models.registry import ModelRegistry
    from models.training.calibration import softmax

    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        rendered = {}  # (seed, setting) -> (folder, frame paths)
        for seed in tqdm(args.seeds, desc="render", unit="fleet"):
            for name, driven in SETTINGS.items():
                root = Path(tmp) / f"{seed}-{name}"
                rendered[(seed, name)] = (root, write_healthy_frames(root, args.domain, seed, args.frames, assets=24,
                                                                     driven=driven))
        foreign = (foreign_vectors(args.foreign_report, args.foreign_data)
                   if args.foreign_report and args.foreign_data else None)
        results: dict[str, dict] = {}
        for reg in args.registry:
            registry = ModelRegistry(reg)
            version = registry.latest("thermal").version
            ours = {}
            for name in SETTINGS:
                p_bearing, faults = [], []
                for seed in args.seeds:
                    root, paths = rendered[(seed, name)]
                    scored = Inspector(registry=registry, assets=load_assets(root / "assets.json")).score(paths)[0]
                    p_bearing += [r.probabilities["bearing_wear"] for r in scored]
                    faults += [r.label != "normal" for r in scored]
                ours[name] = {"frames": len(faults), "mean_p_bearing": round(float(np.mean(p_bearing)), 4),
                              "fault_share": round(float(np.mean(faults)), 4)}
            entry: dict = {"thermal_version": version, "ours": ours}
            if foreign is not None:
                session = ort_session(registry.latest("thermal").path("student_int8_cpu"))
                entry["foreign"] = {}
                for dk in SHIFTS_K:
                    p = softmax(ort_logits(session, shifted(foreign, dk)))
                    entry["foreign"][f"{dk:+.0f}"] = {"frames": len(p), "mean_p_bearing": round(float(p[:, 1].mean()), 4),
                                                      "fault_share": round(float((p.argmax(1) != 0).mean()), 4)}
            results[str(reg)] = entry
            line = " | ".join(f"{n}: p_bear {v['mean_p_bearing']:.3f}, faults {v['fault_share']:.1%}" for n, v in ours.items())
            print(f"{reg} (thermal {version}) ours: {line}")
            for dk, v in entry.get("foreign", {}).items():
                print(f"    foreign, driven {dk} K: p_bear {v['mean_p_bearing']:.3f}, top class a fault {v['fault_share']:.1%}")
    report = {"command": "bench/bench_thermal_driven_heat.py " + " ".join(sys.argv[1:]),
              "host": platform.node(), "settings_k_c": SETTINGS, "shifts_k": SHIFTS_K,
              "seconds": round(time.perf_counter() - t0, 1), "results": results}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    print(f"report {args.out} ({report['seconds']} s)")


if __name__ == "__main__":
    main()
