"""What one thermal frame can tell, and what the machine's load or its own healthy frame would add
(docs/models.md, "Thermal: what one frame can tell").

    .venv/bin/python bench/bench_thermal_limits.py --out bench/results/thermal_limits.json
    .venv/bin/python bench/bench_thermal_limits.py --domain unseen --assets 60 \\
        --out bench/results/thermal_limits_unseen.json

Thermal v5 finds cooling failures past moderate severity at 0.78-0.86 on our fleets (target 0.9),
electrical overheating at 0.88-0.93. Is that the model or the frame? This bench draws a fresh fleet
(a seed no training run used; healthy, cooling-failure, electrical-overheating and bearing-wear
samples of ``linewatch.simulator.domain``) and reads each sample's frame with the pipeline's own
feature code (``pipeline.features.thermal_regions.thermal_vector``, exact region boxes) four ways:

* **one frame**: the 69 values without a running baseline (a file in ``linewatch inspect``, or the
  line before its baseline is learnt);
* **+ load**: the same and the machine's load level (-1..1: what its PLC current says);
* **+ baseline near its load**: read against a healthy frame of the same machine within
  ±0.35 of the sample's load level and ±1.5 °C of its ambient (what the training data and the job's
  running baseline give; here always healthy, the best case);
* **+ baseline at the same load**: against a healthy frame at the sample's own load level;
* **+ baseline at any load**: against a healthy frame at a load level drawn anywhere in -1..1 (a
  reference taken once, e.g. at commissioning, read at whatever load the machine runs now).

Detectors: gradient-boosted trees, healthy vs the fault, 5 folds grouped by machine; recall past
moderate severity (>= 0.5) at the threshold that flags 1 % of the held-out healthy samples. These
are detectors fitted for the bench, not the shipped model, which is scored beside them on the
same samples as served (INT8, restricted to thermal's visible classes: the fault is its top class;
healthy FPR = any fault on top). JSON (``--out``) and a PNG beside it.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

SEVERITY_THRESHOLD = 0.5
FPR = 0.01
FAULTS = ("cooling_failure", "electrical_overheating", "bearing_wear")
READINGS = ("one frame", "+ load", "+ baseline near its load", "+ baseline at the same load",
            "+ baseline at any load")
#: The reference at any load as ``linewatch inspect --healthy-thermal`` reads it: brought to the frame's
#: ambient; as it is, and read at the frame's operating point from the PLC windows of both
#: (:func:`pipeline.features.thermal_load.body_rise_ratio`: every ratio, or only those in
#: :data:`~pipeline.features.thermal_load.RISE_RATIO_RANGE`, the frame read alone otherwise). Scored with the
#: shipped model only.
AT_ANY_LOAD = (("+ reference at any load (inspect)", "any_ref"),
               ("+ reference at any load, read at the frame's load", "any_at_load"),
               ("+ reference at any load, read at the frame's load within the ratio range", "any_at_load_in_range"))


def _render_machine(args: tuple[str, int, int, int, int]) -> dict[str, np.ndarray] | None:
    """One machine's healthy and faulty samples read the bench's ways (worker process)."""
    from linewatch.simulator.domain import DomainRenderer
    from linewatch.simulator.noise import make_rng
    from models.data.domain_data import BASELINE_LOAD_SPAN, domain_world
    from linewatch.contract.plc_tags import PLC_TAGS
    from pipeline.features.thermal_load import OperatingPoint, body_rise_ratio, usable_rise_ratio
    from pipeline.features.thermal_reference import reference_frame, vector_against_references
    from pipeline.features.thermal_regions import frame_to_celsius, thermal_vector

    domain, n_assets, seed, per_class, asset_index = args
    fleet, profiles, specs = domain_world(domain, n_assets, seed, per_class)
    wanted = [s for s in specs if s.asset_index == asset_index and s.fault in ("normal", *FAULTS)]
    if not wanted:
        return None
    renderer = DomainRenderer(fleet, seed)
    profile = profiles[wanted[0].asset_id]
    rng = make_rng(seed, "bench-thermal-limits", domain, asset_index)

    def rendered(spec) -> tuple[np.ndarray, OperatingPoint | None]:
        """The frame and the operating point the machine's PLC shows in the same window."""
        sample = renderer.render(spec, ("thermal", "plc"))
        current, speed = (sample.plc.values[:, PLC_TAGS.index(t)] for t in ("motor_current_a", "speed_rpm"))
        point = None
        if np.isfinite(current).any():
            point = OperatingPoint(float(np.nanmedian(current)),
                                   float(np.nanmedian(speed)) if np.isfinite(speed).any() else None)
        return sample.frame, point

    def healthy_at(spec, load: float, k: int) -> tuple[np.ndarray, OperatingPoint | None]:
        other = replace(spec, index=80_000_000 + spec.index * 4 + k, load_level=load,
                        ambient_c=spec.ambient_c + float(rng.normal(0.0, 1.5)), fault="normal",
                        physical_fault="normal", severity=0.0, variant="", drift="none", drift_level=0.0)
        return rendered(other)

    rows: dict[str, list] = {k: [] for k in ("index", "none", "near", "same", "any", "load", "any_ref",
                                             "any_at_load", "any_at_load_in_range", "rise_ratio")}
    for s in wanted:
        frame, now = rendered(s)
        near_load = float(np.clip(s.load_level + BASELINE_LOAD_SPAN * rng.uniform(-1, 1), -1.0, 1.0))
        rows["index"].append(s.index)
        rows["none"].append(thermal_vector(frame, profile, None))
        rows["near"].append(thermal_vector(frame, profile, healthy_at(s, near_load, 1)[0]))
        rows["same"].append(thermal_vector(frame, profile, healthy_at(s, s.load_level, 2)[0]))
        any_frame, then = healthy_at(s, float(rng.uniform(-1, 1)), 3)
        rows["any"].append(thermal_vector(frame, profile, any_frame))
        rows["load"].append(s.load_level)
        # the same reference as `linewatch inspect --healthy-thermal` reads it (brought to the frame's ambient), as
        # it is and read at the frame's operating point from the two PLC windows (pipeline.features.thermal_load)
        frame_c, ref = frame_to_celsius(frame, profile.frame), reference_frame(any_frame, profile)
        ratio = body_rise_ratio(now, then, profile) if now is not None and then is not None else None
        rows["rise_ratio"].append(np.nan if ratio is None else ratio)
        rows["any_ref"].append(vector_against_references(frame_c, profile, [ref], band_k=0.0)[0])
        rows["any_at_load"].append(vector_against_references(frame_c, profile, [ref], band_k=0.0, rise_ratio=ratio)[0])
        rows["any_at_load_in_range"].append(
            vector_against_references(frame_c, profile, [ref] if usable_rise_ratio(ratio) else [], band_k=0.0,
                                      rise_ratio=ratio)[0])
    return {k: np.asarray(v, dtype=np.int64 if k == "index" else np.float64) for k, v in rows.items()}


def render(domain: str, n_assets: int, seed: int, per_class: int, workers: int) -> dict[str, np.ndarray]:
    from models.data.domain_data import domain_world

    _, _, specs = domain_world(domain, n_assets, seed, per_class)
    tasks = [(domain, n_assets, seed, per_class, i) for i in range(n_assets)]
    parts = []
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for part in tqdm(pool.map(_render_machine, tasks), total=len(tasks), desc=f"render {domain}", unit="machine"):
            if part is not None:
                parts.append(part)
    data = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    by_index = {s.index: s for s in specs}
    for key in ("fault", "severity", "variant", "asset_id", "asset_type"):
        data[key] = np.array([getattr(by_index[int(i)], key) for i in data["index"]])
    return data


def readings(data: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {"one frame": data["none"], "+ load": np.c_[data["none"], data["load"]],
            "+ baseline near its load": data["near"], "+ baseline at the same load": data["same"],
            "+ baseline at any load": data["any"]}


def held_out_scores(x: np.ndarray, y: np.ndarray, groups: np.ndarray, seed: int) -> np.ndarray:
    """Healthy-vs-fault scores of gradient-boosted trees, 5 folds grouped by machine."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.model_selection import GroupKFold

    s = np.zeros(y.shape[0])
    for train, test in GroupKFold(5).split(x, y, groups):
        model = HistGradientBoostingClassifier(max_iter=300, learning_rate=0.05, random_state=seed)
        s[test] = model.fit(x[train], y[train]).predict_proba(x[test])[:, 1]
    return s


def detector_recalls(data: dict[str, np.ndarray], seed: int) -> dict:
    """Per fault and reading: recall past moderate at 1 % held-out healthy FPR (and per variant)."""
    out: dict = {}
    for fault in FAULTS:
        keep = (data["fault"] == "normal") | (data["fault"] == fault)
        y = (data["fault"][keep] == fault).astype(int)
        past = (y == 1) & (data["severity"][keep] >= SEVERITY_THRESHOLD)
        variants = data["variant"][keep]
        out[fault] = {"n_past_moderate": int(past.sum()), "n_healthy": int((y == 0).sum()), "readings": {}}
        for name, x in readings(data).items():
            s = held_out_scores(x[keep], y, data["asset_id"][keep], seed)
            thr = float(np.quantile(s[y == 0], 1.0 - FPR))
            by_variant = {str(v): {"n": int((past & (variants == v)).sum()),
                                   "recall": round(float(np.mean(s[past & (variants == v)] > thr)), 3)}
                          for v in sorted(set(variants[past]))}
            out[fault]["readings"][name] = {"recall": round(float(np.mean(s[past] > thr)), 3),
                                            "by_variant": by_variant}
    return out


def shipped_model(data: dict[str, np.ndarray], registry_dir: Path) -> dict:
    """The registered thermal INT8 student as served, on the one-frame and baseline readings (the
    latter also with the dead band ``inspect --healthy-thermal`` and the job's learned reference
    read a reference with: :func:`pipeline.features.thermal_reference.dead_band`)."""
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
    out: dict = {"model": f"thermal {model.version}"}
    healthy = data["fault"] == "normal"
    from pipeline.features.thermal_reference import REFERENCE_DEAD_BAND_K, dead_band

    for name, key, band in (("one frame", "none", 0.0), ("+ baseline near its load", "near", 0.0),
                            ("+ baseline at the same load", "same", 0.0), ("+ baseline at any load", "any", 0.0),
                            *((f"{n}, {REFERENCE_DEAD_BAND_K:g} K dead band", k, REFERENCE_DEAD_BAND_K)
                              for n, k in (("+ baseline near its load", "near"), ("+ baseline at the same load", "same"),
                                           ("+ baseline at any load", "any"), *AT_ANY_LOAD))):
        x = dead_band(data[key], band) if band > 0 else data[key]
        p = apply_mask(softmax(ort_logits(session, x.astype(np.float32))), possible)
        p = restrict_arrays({"thermal": p}, weights.visible, classes)["thermal"]
        top = np.array(classes)[np.argmax(p, axis=1)]
        row = {"healthy_fpr": round(float(np.mean(top[healthy] != "normal")), 4)}
        for fault in FAULTS:
            past = (data["fault"] == fault) & (data["severity"] >= SEVERITY_THRESHOLD)
            row[fault] = round(float(np.mean(top[past] == fault)), 3)
        out[name] = row
    return out


def rise_ratio_summary(ratios: np.ndarray) -> dict:
    """How many samples had their reference read at their own operating point, and the ratios' spread."""
    from pipeline.features.thermal_load import RISE_RATIO_RANGE

    known = ratios[np.isfinite(ratios)]
    return {"samples": int(ratios.size), "known": int(known.size),
            "in_range": int(np.sum((known >= RISE_RATIO_RANGE[0]) & (known <= RISE_RATIO_RANGE[1]))),
            "range": list(RISE_RATIO_RANGE),
            "percentiles_5_25_50_75_95": [round(float(v), 3) for v in np.percentile(known, [5, 25, 50, 75, 95])]
            if known.size else []}


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / len(READINGS)
    shipped = results["shipped"]
    for k, name in enumerate(READINGS):
        vals = [results["detectors"][f]["readings"][name]["recall"] for f in FAULTS]
        ax.bar(np.arange(len(FAULTS)) + k * width, vals, width, label=name)
        if name in shipped:
            ax.scatter(np.arange(len(FAULTS)) + k * width, [shipped[name][f] for f in FAULTS], marker="x", color="k",
                       zorder=3, label=f"{shipped['model']} as served (top class, its own FPR)" if k == 0 else None)
    ax.axhline(0.9, color="k", lw=0.8, ls="--")
    ax.set_xticks(np.arange(len(FAULTS)) + 0.4 - width / 2, FAULTS)
    ax.set_ylim(0, 1)
    ax.set_ylabel("recall past moderate at 1 % healthy FPR")
    ax.set_title(f"What one thermal frame can tell ({results['domain']} fleet, detectors held out by machine)")
    ax.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--domain", default="train", choices=("train", "unseen"))
    parser.add_argument("--assets", type=int, default=150)
    parser.add_argument("--per-class", type=int, default=600)
    parser.add_argument("--seed", type=int, default=6161, help="a fleet seed no training run used")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--registry", type=Path, default=Path("models/default"))
    parser.add_argument("--out", type=Path, default=Path("bench/results/thermal_limits.json"))
    parser.add_argument("--shipped-only", action="store_true",
                        help="score the shipped model only (no held-out detectors, no PNG)")
    args = parser.parse_args()
    t0 = time.perf_counter()
    data = render(args.domain, args.assets, args.seed, args.per_class, args.workers)
    render_s = time.perf_counter() - t0
    results = {"command": " ".join([".venv/bin/python", *sys.argv]), "domain": args.domain, "seed": args.seed,
               "assets": args.assets, "host": platform.node(), "cpus": args.workers,
               "render_s": round(render_s, 1),
               "counts": {f: int(np.sum(data["fault"] == f)) for f in ("normal", *FAULTS)},
               "rise_ratio": rise_ratio_summary(data["rise_ratio"]),
               "detectors": {} if args.shipped_only else detector_recalls(data, args.seed),
               "shipped": shipped_model(data, args.registry)}
    results["total_s"] = round(time.perf_counter() - t0, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    if not args.shipped_only:
        plot(results, args.out.with_suffix(".png"))
        print(json.dumps({f: {n: r["recall"] for n, r in v["readings"].items()}
                          for f, v in results["detectors"].items()}, indent=1))
    print(json.dumps(results["rise_ratio"], indent=1))
    print(json.dumps(results["shipped"], indent=1))


if __name__ == "__main__":
    main()
