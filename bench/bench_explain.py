"""Explanation benchmark: seconds per explanation per modality and LIME stability vs sample count.

For each modality, fault rows of the shipped model's reference sample (``models/default/<m>/<v>/
reference.npz``: real simulator inputs) that the model predicts as their own fault class are
explained towards that class with 3 seeds, at several sample counts, with both LIME methods of
:mod:`governance.explain.lime_tabular` ("mask": healthy-baseline masks, "tabular":
``LimeTabularExplainer``). Stability = mean pairwise top-5 Jaccard overlap across the seeds.
Also times the full :class:`VerdictExplainer` (3 modalities, rules, heatmap arrays; and again with the
three PNGs written) on a simulated bearing fault at the chosen settings.

    .venv/bin/python bench/bench_explain.py --rows 12

Then the rules and the agreement flag on simulated machines (``--rule-samples`` per class), on the
reference plant and on a held-out randomised fleet: how often a rule for the simulated fault fires, a
rule for another fault fires, and LIME and the rules agree (healthy machines explained as if a bearing
verdict had been raised: no rule should back it).

Writes bench/results/bench_explain.json and bench/results/bench_explain_stability.png.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from governance.explain.lime_tabular import VectorLime
from linewatch.explain_settings import ExplainSettings
from models.registry import default_registry
from models.runtime import load_runtime

RESULTS = Path(__file__).resolve().parent / "results"
SEEDS = (0, 1, 2)
TOP_K = 5


def rows_for(modality: str, n_rows: int) -> tuple[VectorLime, list[tuple[np.ndarray, int]]]:
    reg = default_registry()
    model = reg.latest(modality)
    ref = np.load(model.directory / "reference.npz")
    rt = load_runtime(model.directory)
    x, y = ref["features"], ref["labels"]
    pred = rt.predict(x).argmax(axis=1)
    picked = [(x[i], int(y[i])) for i in np.flatnonzero((y != 0) & (pred == y))]
    rng = np.random.default_rng(0)
    order = rng.permutation(len(picked))[:n_rows]
    names = [str(n) for n in ref["names"]]
    return VectorLime(x, names, model.card.classes, rt.predict, reference_labels=y), [picked[i] for i in order]


def sweep(modality: str, n_rows: int, counts: list[int], methods: list[str]) -> list[dict[str, object]]:
    lime, rows = rows_for(modality, n_rows)
    out = []
    for method in methods:
        lime.method = method
        for n in counts:
            stab, secs = [], []
            for x, label in rows:
                r = lime.explain(x, label, n, SEEDS, TOP_K)
                stab.append(r.stability)
                secs.append(r.seconds)
            rec = {"modality": modality, "method": method, "num_samples": n, "rows": len(rows),
                   "stability_mean": round(float(np.mean(stab)), 3),
                   "stability_p10": round(float(np.percentile(stab, 10)), 3),
                   "frac_ge_0.8": round(float(np.mean(np.asarray(stab) >= 0.8)), 3),
                   "seconds_median": round(float(np.median(secs)), 4)}
            print(json.dumps(rec), flush=True)
            out.append(rec)
    return out


def full_explainer(repeats: int) -> dict[str, object]:
    """End-to-end VerdictExplainer on a simulated bearing fault at the default settings (no PNG)."""
    from governance.explain.explainer import ExplainInput, VerdictExplainer
    from governance.rules import load_rules
    from linewatch.contract import Verdict
    from tests.governance.sim import simulated_case

    case = simulated_case("bearing_wear")
    settings = ExplainSettings(write_png=False)
    ex = VerdictExplainer(settings, load_rules(), None, case.profiles)
    v = Verdict(asset_id=case.asset_id, event_time_ms=1, label="bearing_wear", confidence=0.8, state="raised")
    inputs = [ExplainInput(m, msg) for m, msg in case.messages.items()]
    ex.explain(v, "1-0", inputs)  # warm-up: model load
    per: dict[str, list[float]] = {}
    totals, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        e = ex.explain(v, "1-0", inputs)
        totals.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        for m in e.modalities:
            per.setdefault(m.modality, []).append(m.latency_ms / 1000.0)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        png = VerdictExplainer(ExplainSettings(write_png=True), load_rules(), Path(tmp), case.profiles, ex.models)
        with_png = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            png.explain(v, "1-0", inputs)
            with_png.append(time.perf_counter() - t0)
    return {"settings": {"num_samples": settings.num_samples, "seeds": list(settings.seeds), "top_k": settings.top_k},
            "repeats": repeats, "total_seconds_median": round(float(np.median(totals)), 4),
            "total_seconds_min": round(float(np.min(totals)), 4),
            "total_cpu_seconds_median": round(float(np.median(cpu)), 4),
            "total_with_pngs_seconds_median": round(float(np.median(with_png)), 4),
            "modality_seconds_median": {m: round(float(np.median(v)), 4) for m, v in per.items()},
            "modality_seconds_min": {m: round(float(np.min(v)), 4) for m, v in per.items()},
            "stability": {m.modality: m.stability for m in e.modalities}, "agreement": e.agreement,
            "rule_hits": [h.rule_id for h in e.rule_hits]}


def rules_on_simulator(per_class: int, population: str) -> dict[str, object]:
    """Rule hits and agreement per simulated fault class, the full explainer at the defaults.

    ``plant``: the reference line (6 machines, seed 7; the shipped rules' thresholds were checked
    there), each fault at severity 0.5-1.0 on every machine that can develop it, and healthy
    machines. ``fleet``: held out - randomised machines of the dataset generator (seed 23) with its
    own draw of severities (down to the label threshold), variants, loads and drift.
    Healthy machines are explained as if a bearing verdict had been raised: no rule should back it."""
    from governance.explain.explainer import ExplainInput, VerdictExplainer
    from governance.rules import load_rules
    from linewatch.contract import Verdict
    from linewatch.simulator.assets import asset_registry_json, make_fleet
    from linewatch.simulator.config import SimulatorConfig
    from linewatch.simulator.dataset import SampleRenderer, dataset_fleet, draw_specs, make_spec
    from linewatch.simulator.health import FAULTS, faults_for
    from pipeline.features.asset_profile import load_profiles
    from tests.governance.sim import featurize

    if population == "plant":
        cfg = SimulatorConfig(seed=7)
        fleet = make_fleet(6, seed=7)
        rng = np.random.default_rng(3)
        specs = []
        for fault in ("normal", *FAULTS):
            assets = [a for a in fleet if fault == "normal" or fault in faults_for(a.asset_type)]
            specs += [make_spec(assets[i % len(assets)], fault, 0.0 if fault == "normal" else
                                float(rng.uniform(0.5, 1.0)), index=1000 + i) for i in range(per_class)]
    else:
        cfg = SimulatorConfig(seed=23)
        fleet = dataset_fleet(cfg)
        specs = draw_specs(per_class, cfg, fleet)
    doc = asset_registry_json(fleet, cfg)
    entries = {a["asset_id"]: a for a in doc["assets"]}
    renderer = SampleRenderer(cfg, fleet)
    ex = VerdictExplainer(ExplainSettings(write_png=False), load_rules(), None, load_profiles(doc))
    counts: dict[str, dict[str, int]] = {}
    for spec in specs:
        msgs = featurize(renderer.render(spec), entries[spec.asset_id])
        label = spec.fault if spec.fault != "normal" else "bearing_wear"
        v = Verdict(asset_id=spec.asset_id, event_time_ms=1, label=label, confidence=0.8, state="raised")
        e = ex.explain(v, "1-0", [ExplainInput(m, msg) for m, msg in msgs.items()])
        labels = {h.label for h in e.rule_hits}
        c = counts.setdefault(spec.fault, {"n": 0, "right": 0, "wrong": 0, "agree": 0})
        c["n"] += 1
        c["right"] += spec.fault in labels
        c["wrong"] += bool(labels - {spec.fault})
        c["agree"] += e.agreement
    out: dict[str, object] = {}
    for fault, c in counts.items():
        out[fault] = {"samples": c["n"], "rule_for_this_fault": round(c["right"] / c["n"], 3),
                      "rule_for_another_fault": round(c["wrong"] / c["n"], 3),
                      "agreement": round(c["agree"] / c["n"], 3)}
        print(json.dumps({population: {fault: out[fault]}}), flush=True)
    return out


def thermal_cpu(repeats: int) -> dict[str, object]:
    """One thermal explanation (LIME 3 seeds x 3,000 + the frame map, no PNG): wall and CPU seconds."""
    from governance.explain.explainer import ExplainInput, VerdictExplainer
    from governance.rules import load_rules
    from linewatch.contract import Verdict
    from tests.governance.sim import simulated_case

    case = simulated_case("bearing_wear")
    ex = VerdictExplainer(ExplainSettings(write_png=False), load_rules(), None, case.profiles)
    v = Verdict(asset_id=case.asset_id, event_time_ms=1, label="bearing_wear", confidence=0.8, state="raised")
    inputs = [ExplainInput("thermal", case.messages["thermal"])]
    ex.explain(v, "1-0", inputs)
    wall, cpu, stab = [], [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        e = ex.explain(v, "1-0", inputs)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        stab.append(e.modalities[0].stability)
    return {"thermal_wall_seconds_median": round(float(np.median(wall)), 4),
            "thermal_wall_seconds_min": round(float(np.min(wall)), 4),
            "thermal_cpu_seconds_median": round(float(np.median(cpu)), 4), "stability": stab[0]}


def plot(records: list[dict[str, object]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for modality in ("plc", "thermal", "audio"):
        for method, style in (("mask", "-o"), ("tabular", "--x")):
            pts = [r for r in records if r["modality"] == modality and r["method"] == method]
            if pts:
                ax.plot([r["num_samples"] for r in pts], [r["stability_mean"] for r in pts], style,
                        label=f"{modality} ({method})")
    ax.axhline(0.8, color="grey", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("LIME samples per seed")
    ax.set_ylabel("top-5 Jaccard stability (3 seeds)")
    ax.set_ylim(0, 1.02)
    ax.legend(fontsize=7)
    ax.set_title("LIME stability vs samples (shipped models, reference fault rows)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=12, help="fault rows per modality")
    ap.add_argument("--counts", default="100,200,400,800,1200,2000")
    ap.add_argument("--tabular-counts", default="400,1200,2000")
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--rule-samples", type=int, default=24, help="simulated machines per class for the rules")
    args = ap.parse_args()
    counts = [int(c) for c in args.counts.split(",") if c]
    records = []
    if counts:
        for modality in ("plc", "thermal", "audio"):
            records += sweep(modality, args.rows, counts, ["mask"])
            records += sweep(modality, args.rows, [int(c) for c in args.tabular_counts.split(",") if c], ["tabular"])
    elif (RESULTS / "bench_explain.json").is_file():  # --counts "": keep the last sweep, redo the rest
        records = json.loads((RESULTS / "bench_explain.json").read_text())["sweep"]
    full = full_explainer(args.repeats)
    print(json.dumps(full), flush=True)
    single = thermal_cpu(args.repeats)
    print(json.dumps(single), flush=True)
    full["thermal_only"] = single
    rules = ({p: rules_on_simulator(args.rule_samples, p) for p in ("plant", "fleet")} if args.rule_samples else {})
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "bench_explain.json").write_text(
        json.dumps({"sweep": records, "explainer": full, "rules_on_simulator": rules}, indent=1) + "\n")
    plot(records, RESULTS / "bench_explain_stability.png")


if __name__ == "__main__":
    main()
