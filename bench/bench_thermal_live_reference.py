"""The live line's thermal reading of a slowly developing fault: against the running baseline, against
the learned healthy reference, and alone.

The plant simulator's line (the one ``linewatch demo`` runs) with a fault that grows on every other
machine from the label threshold to severity 1 over ``--ramp`` seconds, starting at ``--onset``
(healthy before; the other machines stay healthy, their loads varying as the simulator draws them).
Every machine's frames go through the pipeline's thermal feature code three ways, as
``pipeline.handlers.thermal`` can read them:

* **running baseline**: against :class:`~pipeline.features.thermal_features.ThermalBaseline` (the
  EWMA every frame updates; what the job did alone before 2026-12-03);
* **learned reference**: against :class:`~pipeline.features.thermal_commissioning.ThermalCommissioning`
  learnt by the job's rules (8 frames, 60 s apart, each with the newest motor current of the
  machine's PLC samples; read near the frame's current, brought to its ambient, changes within
  the 3 K dead band read as none), and the running baseline for a frame where no learned frame is
  near its load (as the job does);
* **one frame**: without a baseline;
* **learned reference, at load**: as the learned reference, and where no learned frame is near the frame's
  current, against the learned frames nearest it scaled to its load
  (:func:`pipeline.handlers.thermal.reference_at_load`, ``flink.thermal_reference_at_load``, since
  2026-12-07) before the running baseline.

Each scored frame (one per ``--every`` seconds after ``--score-from``) is classified by the shipped
thermal INT8 student as served (restricted to thermal's visible classes; the fault is its top
class; healthy false-positive rate = any fault on top of a healthy machine's frame). Reported per
severity band of the faulty machines (the simulator's hidden severity), JSON (``--out``) and a PNG
beside it.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

READINGS = ("running baseline", "learned reference", "one frame", "learned reference, at load")
BANDS = ((0.05, 0.2), (0.2, 0.5), (0.5, 1.01))
VARIANT = {"cooling_failure": "blocked_fins", "electrical_overheating": "loose_lug", "bearing_wear": "outer_race"}


def render(fault: str, n_assets: int, seconds: int, onset_s: float, ramp_s: float, score_from_s: float,
           every_s: int, seed: int) -> dict:
    """One line: the three readings' thermal vectors of the scored frames (worker process)."""
    from linewatch.simulator import Factory
    from linewatch.simulator.assets import asset_registry_json
    from linewatch.simulator.config import SimulatorConfig
    from linewatch.simulator.health import LABEL_THRESHOLD, FaultEpisode
    from pipeline.features.messages import thermal_features_message
    from pipeline.features.thermal_commissioning import ThermalCommissioning, ThermalReferenceRules
    from pipeline.features.thermal_features import ThermalBaseline
    from pipeline.features.asset_profile import as_profile
    from pipeline.features.thermal_reference import REFERENCE_DEAD_BAND_K
    from pipeline.handlers.thermal import reference_at_load

    config = SimulatorConfig(seed=seed, thermal_fps=1.0, fault_fraction=0.0, drift_fraction=0.0, stops_per_hour=0.0,
                             realtime_episode_s=1e6)
    factory = Factory(config, n_assets=n_assets)
    _, streams = factory._setup(config.realtime_episode_s)
    assert factory.scenario is not None
    episodes: dict[str, FaultEpisode] = {}
    for i, asset in enumerate(factory.fleet):
        factory.scenario.episodes[asset.asset_id] = []
        if i % 2 == 0:
            s0 = LABEL_THRESHOLD
            episodes[asset.asset_id] = FaultEpisode(
                asset_id=asset.asset_id, fault=fault, variant=VARIANT[fault], onset_s=onset_s, end_s=float("inf"),
                s0=s0, rate=math.log(1.0 / s0) / ramp_s, warp_amp=(0.0,), warp_omega=(1.0,), warp_phase=(0.0,))
            factory.scenario.episodes[asset.asset_id].append(episodes[asset.asset_id])
    info = {a["asset_id"]: a for a in asset_registry_json(factory.fleet, config)["assets"]}
    running = {a.asset_id: ThermalBaseline() for a in factory.fleet}
    learned = {a.asset_id: ThermalCommissioning(ThermalReferenceRules()) for a in factory.fleet}
    current: dict[str, float] = {}
    profiles = {aid: as_profile(entry) for aid, entry in info.items()}
    rows: dict[str, list] = {"asset_id": [], "asset_type": [], "t_s": [], "severity": [], "read_reference": [],
                             "read_at_load": [], **{r: [] for r in READINGS}}
    for k in range(seconds):
        for stream in streams:
            aid, kind = stream.asset.asset_id, stream.asset.asset_type
            out = stream.advance(float(k + 1))
            if out.plc is not None and len(out.plc.t):
                current[aid] = float(out.plc.values[-1, 0])  # the newest motor current, as the PLC handler keeps it
            boxes = {n: tuple(round(v) for v in b) for n, b in (info[aid].get("regions") or {}).items()}
            for t_frame, frame in out.frames:
                ref = learned[aid].reference(current.get(aid), frame, boxes)
                if t_frame >= score_from_s and int(t_frame) % every_s == 0:
                    base = running[aid].baseline_ck
                    at_load, ratio = None, None
                    if ref is None and aid in current and learned[aid].learned:
                        at_load, ratio = reference_at_load(learned[aid], current[aid], frame, boxes, profiles[aid])
                    either = ref if ref is not None else at_load
                    for name, baseline, band, rise in (
                            ("running baseline", base, 0.0, None),
                            ("learned reference", ref if ref is not None else base,
                             REFERENCE_DEAD_BAND_K if ref is not None else 0.0, None),
                            ("one frame", None, 0.0, None),
                            ("learned reference, at load", either if either is not None else base,
                             REFERENCE_DEAD_BAND_K if either is not None else 0.0, ratio)):
                        rows[name].append(thermal_features_message(aid, kind, 0, frame, baseline, asset=info[aid],
                                                                   baseline_band_k=band,
                                                                   baseline_rise_ratio=rise).vector)
                    rows["read_at_load"].append(at_load is not None)
                    ep = episodes.get(aid)
                    rows["asset_id"].append(aid)
                    rows["asset_type"].append(kind)
                    rows["t_s"].append(t_frame)
                    rows["severity"].append(float(ep.severity(t_frame)) if ep is not None else 0.0)
                    rows["read_reference"].append(ref is not None)
                if not learned[aid].learned:
                    learned[aid].observe(frame, int(t_frame * 1000), current.get(aid), boxes)  # type: ignore[arg-type]
                running[aid].update(frame)
    return {k: np.asarray(v) for k, v in rows.items()}


def score(fault: str, data: dict, registry_dir: Path) -> dict:
    from models.export.onnx_export import ort_logits, ort_session
    from models.fusion import FusionWeights
    from models.fusion.fit import restrict_arrays
    from models.registry import ModelRegistry
    from models.training.calibration import softmax
    from models.training.evaluation import apply_mask, possible_mask

    model = ModelRegistry(registry_dir).latest("thermal")
    weights = FusionWeights.load(registry_dir / "fusion.json")
    classes = list(model.card.classes)
    session = ort_session(model.path("student_int8_cpu"))
    possible = possible_mask(data["asset_type"], classes)
    severity = data["severity"]
    faulty_machine = np.isin(data["asset_id"], sorted({a for a, s in zip(data["asset_id"], severity) if s > 0}))
    healthy = ~faulty_machine
    out: dict = {"model": f"thermal {model.version}", "n_healthy": int(healthy.sum()),
                 "read_reference_share": {"healthy": round(float(np.mean(data["read_reference"][healthy])), 3),
                                          "faulty": round(float(np.mean(data["read_reference"][~healthy])), 3)},
                 "read_at_load_share": {"healthy": round(float(np.mean(data["read_at_load"][healthy])), 3),
                                        "faulty": round(float(np.mean(data["read_at_load"][~healthy])), 3)},
                 "readings": {}}
    for name in READINGS:
        p = apply_mask(softmax(ort_logits(session, data[name].astype(np.float32))), possible)
        p = restrict_arrays({"thermal": p}, weights.visible, classes)["thermal"]
        top = np.array(classes)[np.argmax(p, axis=1)]
        row: dict = {"healthy_fpr": round(float(np.mean(top[healthy] != "normal")), 4)}
        for lo, hi in BANDS:
            band = faulty_machine & (severity >= lo) & (severity < hi)
            row[f"recall {lo:.2f}-{min(hi, 1.0):.2f}"] = {"n": int(band.sum()),
                                                          "recall": round(float(np.mean(top[band] == fault)), 3)}
        out["readings"][name] = row
    return out


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    faults = list(results["faults"])
    fig, axes = plt.subplots(1, len(faults), figsize=(4.2 * len(faults), 3.8), squeeze=False)
    for ax, fault in zip(axes[0], faults):
        readings = results["faults"][fault]["readings"]
        bands = [k for k in readings[READINGS[0]] if k.startswith("recall")]
        width = 0.8 / len(READINGS)
        for j, name in enumerate(READINGS):
            ax.bar(np.arange(len(bands)) + j * width, [readings[name][b]["recall"] for b in bands], width,
                   label=f"{name} (healthy FPR {100 * readings[name]['healthy_fpr']:.1f} %)")
        ax.set_xticks(np.arange(len(bands)) + 0.4 - width / 2, [b.removeprefix("recall ") for b in bands],
                      fontsize=8)
        ax.set_ylim(0, 1.05)
        ax.set_title(fault, fontsize=10)
        ax.set_xlabel("severity band")
        ax.legend(fontsize=7, loc="upper left")
    axes[0][0].set_ylabel("frames naming the fault")
    fig.suptitle(f"Live line, a fault growing over {results['ramp_s']:.0f} s: {results['model']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--faults", nargs="+", default=["cooling_failure", "electrical_overheating", "bearing_wear"])
    parser.add_argument("--assets", type=int, default=8, help="machines per line (every other one develops the fault)")
    parser.add_argument("--seconds", type=int, default=4000)
    parser.add_argument("--onset", type=float, default=900.0)
    parser.add_argument("--ramp", type=float, default=3000.0, help="seconds from the label threshold to severity 1")
    parser.add_argument("--score-from", type=float, default=600.0)
    parser.add_argument("--every", type=int, default=20, help="score one frame per this many seconds")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--registry", type=Path, default=Path("models/default"))
    parser.add_argument("--out", type=Path, default=Path("bench/results/thermal_live_reference.json"))
    args = parser.parse_args()
    t0 = time.perf_counter()
    with ProcessPoolExecutor(args.workers) as pool:
        jobs = {f: pool.submit(render, f, args.assets, args.seconds, args.onset, args.ramp, args.score_from,
                               args.every, args.seed) for f in args.faults}
        data = {f: j.result() for f, j in jobs.items()}
    render_s = time.perf_counter() - t0
    faults = {f: score(f, d, args.registry) for f, d in data.items()}
    results = {"command": " ".join([".venv/bin/python", *sys.argv]), "seed": args.seed, "assets": args.assets,
               "seconds": args.seconds, "onset_s": args.onset, "ramp_s": args.ramp, "host": platform.node(),
               "cpus": args.workers, "render_s": round(render_s, 1), "model": next(iter(faults.values()))["model"],
               "faults": faults, "total_s": round(time.perf_counter() - t0, 1)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    plot(results, args.out.with_suffix(".png"))
    print(json.dumps(faults, indent=1))


if __name__ == "__main__":
    main()
