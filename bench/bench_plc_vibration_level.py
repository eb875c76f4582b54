"""PLC model against how smoothly a healthy machine runs: imbalance recall with the machine's learnt
normal vibration level read in, by read-as level and cap.

    .venv/bin/python bench/bench_plc_vibration_level.py --domain train --seed 4242 --samples-per-class 300 \
        --out bench/results/plc_vibration_level_train4242.json

Renders the PLC windows of a fleet no model learnt from (``--domain train|unseen``, ``--seed``), learns
each machine's normal vibration level and healthy winding level as the job learns them
(:meth:`pipeline.features.plc_baseline.PlcBaseline.observe_vibration` / ``observe_winding``, the job's
rules, from a stream of its own healthy windows at other times: ``bench_plc_baseline.py``'s learning
streams, at most ``--max-learning-windows``) and scores every window with the shipped PLC model as
served (INT8, cavitation masked for non-pumps, the fusion's visible classes):

- ``one window``: nothing learnt (a single file);
- ``levels, before``: both levels read in, the vibration scaled down only above the training fleet's
  range (the reading before session 30);
- ``levels, read-as L cap C``: a machine whose normal is below L has its level scaled so that its normal
  reads as L, at most C times (:func:`pipeline.features.plc_physics.vibration_scale`);
  ``--sweep L:C,...`` lists them, the shipped :data:`~pipeline.features.plc_physics.SMOOTH_VIBRATION_READ_AS_MM_S`
  / :data:`~pipeline.features.plc_physics.MAX_VIBRATION_SCALE` first.

Reported per variant: healthy false-positive rate (and what the false alarms were named), and recall
past ``--severity`` of imbalance, cavitation and cooling failure; imbalance recall also by the machine's
learnt normal (below 1.2, 1.2-1.65, 1.65-3.2, above 3.2 mm/s). docs/models.md, "PLC: a machine that runs
smoother than the fleet".
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
LEVEL_BANDS = ((0.0, 1.2), (1.2, 1.65), (1.65, 3.2), (3.2, 1e9))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--registry", type=Path, default=ROOT / "models" / "default")
    ap.add_argument("--version", default=None, help="registered PLC version (default: the latest)")
    ap.add_argument("--domain", default="train", help="simulator domain of the fleet (train | unseen)")
    ap.add_argument("--seed", type=int, default=4242)
    ap.add_argument("--assets", type=int, default=240)
    ap.add_argument("--samples-per-class", type=int, default=300)
    ap.add_argument("--severity", type=float, default=0.45, help="faults past this severity count")
    ap.add_argument("--max-learning-windows", type=int, default=400)
    ap.add_argument("--sweep", default="1.2:2,2.2:2,1.65:3,2.2:3", help="L:C,... read-as levels and caps to score "
                    "besides the shipped one")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "plc_vibration_level.json")
    args = ap.parse_args()

    import onnxruntime as ort
    from bench_plc_baseline import _render, _stream, score  # the PLC model as served, that bench's streams
    from tqdm import tqdm

    import pipeline.features.plc_physics as physics
    from pipeline.features.plc_baseline import BaselineRules, PlcBaseline
    from pipeline.features.plc_physics import plc_vector

    from linewatch.simulator.domain import DOMAINS, DomainRenderer
    from linewatch.simulator.health import FAULT_CLASSES
    from models.data.domain_data import _wide_rows, domain_world
    from models.data.featurize import plc_input
    from models.fusion import FusionWeights
    from models.registry import ModelRegistry

    t0 = time.perf_counter()
    fleet, profiles, specs = domain_world(args.domain, args.assets, args.seed, args.samples_per_class)
    renderer = DomainRenderer(fleet, args.seed)
    raws = np.stack([plc_input(*_wide_rows(renderer.render(s, ("plc",)).plc)) for s in specs])
    vib: dict[str, float | None] = {}
    wdg: dict[str, float | None] = {}
    rules = BaselineRules()
    for ai, a in enumerate(tqdm(fleet, desc="learning", unit="machine")):
        prof = profiles[a.asset_id]
        stream = _stream(a, ai, args.seed, "normal", args.max_learning_windows, DOMAINS[args.domain])
        b = PlcBaseline(rules)
        vib_done = wdg_done = False
        for raw, s in zip(_render(renderer, stream[: args.max_learning_windows]), stream, strict=False):
            end_ms = int(round(s.t_s * 1000))
            vib_done = vib_done or b.observe_vibration(raw, end_ms, prof.nominal_rpm)
            wdg_done = wdg_done or b.observe_winding(raw, end_ms, prof.nominal_rpm, prof.rated_current_a, prof)
            if vib_done and wdg_done:
                break
        vib[a.asset_id], wdg[a.asset_id] = b.learned_vib_mm_s, b.learned_winding_k
    levels = np.array([np.nan if v is None else v for v in vib.values()], dtype=np.float64)

    registry = ModelRegistry(args.registry)
    version = args.version or registry.latest("plc").version
    session = ort.InferenceSession(str(args.registry / "plc" / version / "student.int8.cpu.onnx"),
                                   providers=["CPUExecutionProvider"])
    weights = FusionWeights.load(args.registry / "fusion.json")
    classes = tuple(FAULT_CLASSES)
    types = np.array([s.asset_type for s in specs])
    y = np.array([s.fault for s in specs])
    sev = np.array([s.severity for s in specs])
    normal_of = np.array([np.nan if vib[s.asset_id] is None else vib[s.asset_id] for s in specs])
    shipped = (physics.SMOOTH_VIBRATION_READ_AS_MM_S, physics.MAX_VIBRATION_SCALE)
    sweep = [shipped, *((float(a), float(b)) for a, b in (x.split(":") for x in args.sweep.split(",") if x))]
    variants: dict[str, tuple[float, float] | None] = {"one window": None, "levels, before": (0.0, 1.0)}
    variants.update({f"levels, read-as {read_as:g} cap {cap:g}": (read_as, cap) for read_as, cap in sweep})
    report: dict = {"command": " ".join(sys.argv), "domain": args.domain, "seed": args.seed, "plc_version": version,
                    "machines": len(fleet), "windows": {c: int((y == c).sum()) for c in classes},
                    "severity_over": args.severity,
                    "learned": {"vibration": int(np.isfinite(levels).sum()),
                                "winding": sum(v is not None for v in wdg.values()),
                                "vibration_percentiles_5_25_50_75_95": np.nanpercentile(
                                    levels, [5, 25, 50, 75, 95]).round(2).tolist()},
                    "shipped": {"read_as_mm_s": shipped[0], "max_scale": shipped[1]}, "variants": {}}
    try:
        for name, reading in variants.items():
            if reading is None:
                vecs = np.stack([plc_vector(raw, profiles[s.asset_id]) for raw, s in zip(raws, specs, strict=True)])
            else:
                physics.SMOOTH_VIBRATION_READ_AS_MM_S, physics.MAX_VIBRATION_SCALE = reading
                vecs = np.stack([plc_vector(raw, profiles[s.asset_id].with_normal_vibration(vib[s.asset_id])
                                            .with_normal_winding(wdg[s.asset_id]))
                                 for raw, s in zip(raws, specs, strict=True)])
            pred = score(session, vecs.astype(np.float32), types, weights, classes)[0].argmax(1)
            healthy = y == "normal"
            row: dict = {"healthy_fpr": round(float(np.mean(pred[healthy] != 0)), 4),
                         "false_alarms": {classes[c]: int(n) for c, n in
                                          enumerate(np.bincount(pred[healthy], minlength=len(classes))) if c and n}}
            for c in ("imbalance", "cavitation", "cooling_failure"):
                f = (y == c) & (sev > args.severity)
                row[f"{c}_recall"] = round(float(np.mean(pred[f] == classes.index(c))), 4)
            by_level = {}
            for lo, hi in LEVEL_BANDS:
                f = (y == "imbalance") & (sev > args.severity) & (normal_of >= lo) & (normal_of < hi)
                if f.any():
                    by_level[f"{lo:g}-{hi:g}" if hi < 1e9 else f">{lo:g}"] = {
                        "n": int(f.sum()), "recall": round(float(np.mean(pred[f] == classes.index("imbalance"))), 4)}
            row["imbalance_recall_by_learnt_normal_mm_s"] = by_level
            report["variants"][name] = row
            print(f"{name:28s} FPR {row['healthy_fpr']:.4f} {row['false_alarms']}  imbalance {row['imbalance_recall']:.4f}"
                  f"  cavitation {row['cavitation_recall']:.4f}  cooling {row['cooling_failure_recall']:.4f}", flush=True)
    finally:
        physics.SMOOTH_VIBRATION_READ_AS_MM_S, physics.MAX_VIBRATION_SCALE = shipped
    report["seconds"] = round(time.perf_counter() - t0, 1)
    args.out.write_text(json.dumps(report, indent=1))
    print(f"{report['seconds']} s; report {args.out}")


if __name__ == "__main__":
    main()
