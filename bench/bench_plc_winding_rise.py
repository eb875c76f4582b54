"""PLC model against how hot a healthy motor's winding runs: healthy false alarms and cooling-failure
recall by the machine's winding rise at rated current.

    .venv/bin/python bench/bench_plc_winding_rise.py --versions v5,v6 --out bench/results/plc_winding_rise.json
    .venv/bin/python bench/bench_plc_winding_rise.py --versions v6 --learned --samples-per-class 1500 --out bench/results/plc_winding_learned.json

Renders the PLC windows of a fleet of the unseen-type domain (fans, compressors, pumps; a seed no
training run used) with winding rises of 30-95 K at rated current (``--winding-rise``), scores them
with each registered PLC version as served (INT8, cavitation masked for non-pumps, the fusion's
visible classes; no learned baseline) and reports, per band of the machine's rise, the healthy
false-positive rate and the recall of cooling failures past ``--severity``. docs/models.md, "PLC
v6: motors that run hot".

``--learned`` also learns each machine's healthy winding level as the job does
(:meth:`pipeline.features.plc_baseline.PlcBaseline.observe_winding`, the job's rules) from a stream of
its own healthy windows at other times (``bench_plc_baseline.py``'s learning streams, at most
``--max-learning-windows``) and scores the same windows read against it
(:func:`pipeline.features.plc_physics.winding_scale`); the other classes' windows are scored too
(imbalance and cavitation recall, both ways). ``--sweep T:CAP,...`` scores other read-as levels and caps
(how :data:`~pipeline.features.plc_physics.WINDING_READ_AS_K` was chosen, on ``--domain train --seed
4242``, a world of the training domain no model learnt from). ``--learning-speed-cap F`` runs each drive's
learning stream at most ``F`` x its nameplate speed (a drive that never reaches it; the scored windows keep
their speeds).

``--fan-still-share LO HI``: motors cooled by their own shaft fan cool less at low speed
(``DomainSpec.fan_still_share``, off in the shipped domains). The summary also gives the drives' windows alone.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
BANDS = ((30, 50), (50, 60), (60, 70), (70, 75), (75, 80), (80, 85), (85, 95.01))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--registry", type=Path, default=ROOT / "models" / "default")
    ap.add_argument("--versions", default="v5,v6", help="registered PLC versions to score")
    ap.add_argument("--samples-per-class", type=int, default=600)
    ap.add_argument("--assets", type=int, default=240)
    ap.add_argument("--seed", type=int, default=3131)
    ap.add_argument("--winding-rise", type=float, nargs=2, default=(30.0, 95.0), metavar=("LO", "HI"))
    ap.add_argument("--fan-still-share", type=float, nargs=2, default=None, metavar=("LO", "HI"),
                    help="motors cooled by their own shaft fan keep this share of their cooling with it stopped, drawn "
                    "per machine: a drive's motor runs warmer at low speed (DomainSpec.fan_still_share, off in the "
                    "shipped domains)")
    ap.add_argument("--learning-speed-cap", type=float, default=None, metavar="F",
                    help="with --learned: each drive's learning stream runs at most F x its nameplate speed (a drive "
                    "that never reaches it; the scored windows keep their own speeds)")
    ap.add_argument("--severity", type=float, default=0.45, help="cooling failures past this severity count")
    ap.add_argument("--domain", default="unseen", help="simulator domain of the fleet (unseen | train)")
    ap.add_argument("--learned", action="store_true", help="also score with each machine's learned winding level")
    ap.add_argument("--max-learning-windows", type=int, default=400,
                    help="healthy windows of a machine offered to its learner (150: 78 of 240 machines of the training "
                    "domain had not learnt, their windows off rated speed on drives)")
    ap.add_argument("--sweep", default="", help="T:CAP,... other read-as levels and caps to score (with --learned)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "plc_winding_rise.json")
    args = ap.parse_args()

    import onnxruntime as ort
    from bench_plc_baseline import _render, _stream, score  # the PLC model as served, that bench's streams

    import pipeline.features.plc_physics as physics
    from pipeline.features.plc_baseline import BaselineRules, PlcBaseline

    from linewatch.simulator.domain import DOMAINS, DomainRenderer
    from linewatch.simulator.health import FAULT_CLASSES
    from models.data.domain_data import _wide_rows, domain_world
    from models.data.featurize import plc_input
    from models.fusion import FusionWeights
    from pipeline.features.plc_physics import plc_vector

    t0 = time.perf_counter()
    DOMAINS[args.domain] = replace(DOMAINS[args.domain], winding_rise_k=tuple(args.winding_rise),
                                   **({} if args.fan_still_share is None else {"fan_still_share": tuple(args.fan_still_share)}))
    fleet, profiles, specs = domain_world(args.domain, args.assets, args.seed, args.samples_per_class)
    rise = {a.asset_id: a.winding_rise_k for a in fleet}
    renderer = DomainRenderer(fleet, args.seed)
    keep = [s for s in specs if args.learned or s.fault in ("normal", "cooling_failure")]
    raws = np.stack([plc_input(*_wide_rows(renderer.render(s, ("plc",)).plc)) for s in keep])
    vectors = np.stack([plc_vector(raw, profiles[s.asset_id]) for raw, s in zip(raws, keep, strict=True)])
    learned: dict[str, float | None] = {}
    if args.learned:  # each machine's healthy winding level, learnt as the job learns it
        rules = BaselineRules()
        for ai, a in enumerate(fleet):
            prof = profiles[a.asset_id]
            stream = _stream(a, ai, args.seed, "normal", args.max_learning_windows, DOMAINS[args.domain])
            if args.learning_speed_cap is not None and prof.vfd:
                stream = [replace(s, drive_fraction=min(s.drive_fraction, args.learning_speed_cap)) for s in stream]
            b = PlcBaseline(rules)
            for raw, s in zip(_render(renderer, stream[: args.max_learning_windows]), stream, strict=False):
                if b.observe_winding(raw, int(round(s.t_s * 1000)), prof.nominal_rpm, prof.rated_current_a, prof):
                    break
            learned[a.asset_id] = b.learned_winding_k
    types = np.array([s.asset_type for s in keep])
    y = np.array([s.fault for s in keep])
    sev = np.array([s.severity for s in keep])
    drive = np.array([profiles[s.asset_id].vfd for s in keep])
    r = np.array([rise[s.asset_id] for s in keep])
    classes = tuple(FAULT_CLASSES)
    weights = FusionWeights.load(args.registry / "fusion.json")
    report: dict = {"command": " ".join(sys.argv), "domain": args.domain, "seed": args.seed,
                    "winding_rise_k": list(args.winding_rise), "fan_still_share": args.fan_still_share,
                    "learning_speed_cap": args.learning_speed_cap,
                    "windows": {"healthy": int((y == "normal").sum()), "cooling_failure": int((y == "cooling_failure").sum())},
                    "severity_over": args.severity, "versions": {}, "summary": {}}
    if args.learned:
        levels = np.array([np.nan if v is None else v for v in learned.values()], dtype=np.float64)
        drives = [profiles[a].vfd for a in learned]
        report["learned"] = {"machines": len(learned), "learnt": int(np.isfinite(levels).sum()),
                             "drives": int(sum(drives)), "drives_learnt": int(np.isfinite(levels[drives]).sum()),
                             "level_k_percentiles_10_50_90": np.nanpercentile(levels, [10, 50, 90]).round(1).tolist(),
                             "read_as_k": physics.WINDING_READ_AS_K, "max_scale": physics.MAX_WINDING_SCALE}
        print(f"learned the winding level of {report['learned']['learnt']} of {len(learned)} machines; "
              f"10/50/90th percentile {report['learned']['level_k_percentiles_10_50_90']} K")
    variants: list[tuple[str, str, np.ndarray]] = []
    for version in [v for v in args.versions.split(",") if v]:
        variants.append((version, version, vectors))
        if args.learned:
            read_as = [(physics.WINDING_READ_AS_K, physics.MAX_WINDING_SCALE)]
            read_as += [(float(t), float(c)) for t, c in (x.split(":") for x in args.sweep.split(",") if x)]
            for t, c in read_as:
                physics.WINDING_READ_AS_K, physics.MAX_WINDING_SCALE = t, c
                v = np.stack([plc_vector(raw, profiles[s.asset_id].with_normal_winding(learned[s.asset_id]))
                              for raw, s in zip(raws, keep, strict=True)])
                variants.append((f"{version}+learned_winding(read_as={t:g},cap={c:g})", version, v))
            physics.WINDING_READ_AS_K, physics.MAX_WINDING_SCALE = read_as[0]
    for name, version, vecs in variants:
        path = args.registry / "plc" / version / "student.int8.cpu.onnx"
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        pred = score(session, vecs.astype(np.float32), types, weights, classes)[0].argmax(1)
        rows = []
        for lo, hi in BANDS:
            band = (r >= lo) & (r < hi)
            healthy, faulty = band & (y == "normal"), band & (y == "cooling_failure") & (sev > args.severity)
            rows.append({"rise_k": [lo, min(hi, 95.0)], "healthy": int(healthy.sum()),
                         "healthy_fpr": round(float(np.mean(pred[healthy] != 0)), 4) if healthy.any() else None,
                         "false_alarms": {classes[c]: int(n) for c, n in
                                          enumerate(np.bincount(pred[healthy], minlength=len(classes))) if c and n},
                         "cooling": int(faulty.sum()),
                         "cooling_recall": round(float(np.mean(pred[faulty] == classes.index("cooling_failure"))), 4)
                         if faulty.any() else None})
        report["versions"][name] = rows
        healthy, cool = y == "normal", (y == "cooling_failure") & (sev > args.severity)
        summary = {"healthy_fpr": round(float(np.mean(pred[healthy] != 0)), 4),
                   "cooling_recall": round(float(np.mean(pred[cool] == classes.index("cooling_failure"))), 4)}
        for c in ("imbalance", "cavitation"):
            f = (y == c) & (sev > args.severity)
            if f.any():
                summary[f"{c}_recall"] = round(float(np.mean(pred[f] == classes.index(c))), 4)
        summary["drive_healthy_fpr"] = round(float(np.mean(pred[healthy & drive] != 0)), 4)  # machines on a drive
        summary["drive_cooling_recall"] = round(float(np.mean(pred[cool & drive] == classes.index("cooling_failure"))), 4)
        report["summary"][name] = summary
        print(f"PLC {name}: {summary}")
        for row in rows:
            print(f"  rise {row['rise_k'][0]:>4.0f}-{row['rise_k'][1]:<4.0f} K  healthy FPR {row['healthy_fpr']!s:>6} "
                  f"(n={row['healthy']:4d})  cooling recall {row['cooling_recall']!s:>6} (n={row['cooling']})  "
                  f"false alarms {row['false_alarms']}")
    report["seconds"] = round(time.perf_counter() - t0, 1)
    args.out.write_text(json.dumps(report, indent=1))
    print(f"{report['seconds']} s; report {args.out}")


if __name__ == "__main__":
    main()
