"""The learned PLC pressure and vibration baseline on held-out machines, scored by the shipped INT8 PLC model.

    .venv/bin/python bench/bench_plc_baseline.py --out bench/results/plc_baseline.json

By default the fleet, samples and grouped split of the v4 PLC model (``build_domain_dataset(6000, 900, seed
11)``; split 0.15 / 0.2, seed 0): only the samples of the held-out machines (``--split val``,
default, or ``test``; ``--split all`` takes every machine of a fresh world instead, e.g. the fleets
of ``bench/bench_generalisation.py``) are rendered, with the same renderer and feature code as the dataset
(``scripts/render_plc_data.py``). For each held-out machine a *learning stream* is rendered: its
own healthy operation (the simulator's draw of ``normal`` samples of that machine, incipient
faults and sensor drift included, at other times, loads and drive speeds than the scored windows),
fed in time order through :class:`pipeline.features.plc_baseline.PlcBaseline` with the job's
rules until it has learnt or ``--max-learning-windows`` were offered. The scored windows never
enter the learning stream.

Scenarios, each scored through the serving path (INT8 cpu, cavitation masked for non-pumps,
restricted to the PLC model's visible classes as in ``fusion.json``):

* ``nameplate_as_is``: the ``assets.json`` of the dataset (15 % of machines without a nominal
  pressure): ``before`` (as today), ``learned`` (the learnt level where the nameplate has none),
  ``true_nameplate`` (the simulator's nominal pressure: the upper bound);
* ``pressure_removed``: every held-out machine's nominal pressure removed (the stress case, all
  machines): ``before`` / ``learned`` / ``true_nameplate``;
* ``faulty_start``: pumps whose learning stream is their own *cavitation* (severities as in the
  dataset): how many learn at all, the learnt level over the true one, and cavitation recall past
  moderate on the scored windows with that level;
* ``vibration``: the ``assets.json`` of the dataset with the machine's learnt normal vibration
  (``learned_vibration``; the model reads vibration relative to it where it is above the fleet's normal
  range, :func:`pipeline.features.plc_physics.vibration_scale`) and with one learnt from its own
  *imbalance* (``learned_while_imbalanced``, every machine's learning stream its imbalance at one
  severity, the stream's first draw: what a machine that is already imbalanced at commissioning
  gives), against ``before``.

Metrics per group: healthy false-positive rate, recall past moderate severity (>= 0.5) of
cavitation / cooling failure / imbalance, macro-F1 past moderate; and docs/models.md's *held-out*
FPR (the shipped model's class-shift procedure at ``--heldout-budget`` refitted on 4 folds of the
machines, predicting the 5th, 3 shuffles: ``models.training.crossval``). JSON to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from tqdm import tqdm

VISIBLE = ("cavitation", "cooling_failure", "imbalance")


def _render(renderer, specs) -> np.ndarray:
    from models.data.domain_data import _wide_rows
    from models.data.featurize import plc_input

    return np.stack([plc_input(*_wide_rows(renderer.render(s, ("plc",)).plc)) for s in specs])


def _stream(asset, ai: int, fleet_seed: int, label: str, n: int, domain) -> list:
    """``n`` samples of class ``label`` of machine ``ai`` drawn as the dataset draws them (other seed)."""
    from linewatch.simulator.domain import draw_domain_specs

    specs = [s for s in draw_domain_specs(n, [asset], fleet_seed * 100_003 + 7_919 + ai, domain) if s.fault == label]
    # unique noise seeds (the renderer seeds the physics with spec.index), time order as the job sees it
    specs = [replace(s, asset_index=ai, index=50_000_000 + ai * 10_000 + k) for k, s in enumerate(specs)]
    return sorted(specs, key=lambda s: s.t_s)


def learn(raws: np.ndarray, specs: list, rules, nominal_rpm: float | None):
    """The job's learner over a stream in time order, until both levels are learnt."""
    from pipeline.features.plc_baseline import PlcBaseline

    b = PlcBaseline(rules)
    for raw, s in zip(raws, specs, strict=True):
        t_ms = int(round(s.t_s * 1000))
        b.observe(raw, t_ms, nominal_rpm)
        b.observe_vibration(raw, t_ms, nominal_rpm)
        if b.learned and b.learned_vib_mm_s is not None:
            break
    return b


def score(session, vectors: np.ndarray, asset_types: np.ndarray, weights, classes) -> tuple[np.ndarray, np.ndarray]:
    """(served probabilities, the model's logits)."""
    from models.export.onnx_export import ort_logits
    from models.fusion.fit import restrict_arrays
    from models.training.calibration import softmax
    from models.training.evaluation import apply_mask, possible_mask

    z = ort_logits(session, vectors.astype(np.float32))
    p = apply_mask(softmax(z), possible_mask(asset_types, classes))
    return restrict_arrays({"plc": p}, weights.visible, classes)["plc"], z


def heldout_fpr(logits: np.ndarray, y: np.ndarray, severity: np.ndarray, groups: np.ndarray, types: np.ndarray,
                classes, budget: float) -> dict:
    """docs/models.md's held-out FPR: the class shifts at ``budget`` fitted on 4 folds of the machines,
    predicting the 5th (3 shuffles), on top of the model's logits (``models.training.crossval``)."""
    from models.training.crossval import calibration_fit_predict, out_of_fold, score_heldout
    from models.training.evaluation import possible_mask
    from models.training.recalibrate import allowed_classes

    fp = calibration_fit_predict(logits, y, budget, severity, possible_mask(types, classes),
                                 allowed_classes("plc", classes))
    h = score_heldout(out_of_fold(fp, groups, 5, 3, 0), y, severity, groups, classes, budget)
    return {"budget": budget, "fpr": h.fpr, "machines_with_false_alarms": h.machines_with_false_alarms,
            "recall_past_moderate": {c: h.recall_past_moderate.get(c) for c in VISIBLE}}


def metrics(probs: np.ndarray, y: np.ndarray, severity: np.ndarray, classes) -> dict:
    from models.training.evaluation import evaluate

    healthy = y == 0
    fp = int((probs[healthy].argmax(axis=1) != 0).sum())
    out: dict = {"n": int(len(y)), "n_healthy": int(healthy.sum()), "healthy_false_alarms": fp,
                 "healthy_fpr": fp / max(int(healthy.sum()), 1)}
    if len(set(y.tolist())) > 1:
        e = evaluate(probs, y, severity, classes)
        out["macro_f1_past_moderate"] = e.macro_f1_past_moderate
        out["recall_past_moderate"] = {c: e.recall_past_moderate.get(c) for c in VISIBLE}
        out["n_past_moderate"] = {c: e.n_past_moderate.get(c) for c in VISIBLE}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--registry", type=Path, default=Path("models/default"))
    parser.add_argument("--samples-per-class", type=int, default=6000)
    parser.add_argument("--assets", type=int, default=900)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--split", choices=("val", "test", "all"), default="val",
                        help="held-out machines of the v4 split, or every machine of a fresh world ('all': e.g. "
                        "bench_generalisation.py's fleets, --samples-per-class 150 --assets 150 --seed 1001)")
    parser.add_argument("--domain", default="train", help="simulator domain of the world (train | unseen)")
    parser.add_argument("--learning-windows", type=int, default=None,
                        help="the learning period in accepted windows (default: the job's, BaselineRules.windows)")
    parser.add_argument("--max-learning-windows", type=int, default=720,
                        help="windows of a machine's stream offered before giving up (not learnt: as today)")
    parser.add_argument("--heldout-budget", type=float, default=0.005,
                        help="budget of the cross-validated class shifts (docs/models.md's held-out FPR; v4: 0.5 %%)")
    parser.add_argument("--max-machines", type=int, default=0, help="only the first N held-out machines (smoke runs)")
    parser.add_argument("--out", type=Path, default=Path("bench/results/plc_baseline.json"))
    args = parser.parse_args()

    from linewatch.simulator.domain import DOMAINS, DomainRenderer
    from linewatch.simulator.health import FAULT_CLASSES, FAULT_INDEX
    from models.data.domain_data import domain_world
    from models.data.samples import grouped_split_indices
    from models.export.onnx_export import ort_session
    from models.fusion import FusionWeights
    from models.registry import ModelRegistry
    from pipeline.features.plc_baseline import BaselineRules
    from pipeline.features.plc_physics import FLEET_NORMAL_VIBRATION_MM_S, plc_vector

    if args.split != "all" and (args.samples_per_class, args.assets, args.seed, args.domain) != (6000, 900, 11, "train"):
        print("warning: not the v4 world (6000 / 900 / 11): held-out machines may be training machines of v4",
              file=sys.stderr)
    t0 = time.perf_counter()
    domain = DOMAINS[args.domain]
    classes = tuple(FAULT_CLASSES)
    fleet, profiles, specs = domain_world(args.domain, args.assets, args.seed, args.samples_per_class)
    groups = np.array([s.asset_id for s in specs])
    _, val, test = grouped_split_indices(groups, 0.15, 0.2, 0)
    held = {"val": val, "test": test, "all": np.arange(len(specs))}[args.split]
    machines = sorted({specs[i].asset_index for i in held})
    if args.max_machines:
        machines = machines[: args.max_machines]
    keep = set(machines)
    scored = [specs[i] for i in held if specs[i].asset_index in keep]
    renderer = DomainRenderer(fleet, args.seed)
    rules = BaselineRules() if args.learning_windows is None else BaselineRules(windows=args.learning_windows)

    raw = np.stack([r for r in tqdm((_render(renderer, [s])[0] for s in scored), total=len(scored),
                                    desc=f"render {args.split} windows", file=sys.stderr)])
    y = np.array([FAULT_INDEX[s.fault] for s in scored])
    sev = np.array([s.severity for s in scored], np.float32)
    types = np.array([s.asset_type for s in scored])
    ids = np.array([s.asset_id for s in scored])

    learned: dict[int, dict] = {}
    faulty: dict[int, dict] = {}
    for ai in tqdm(machines, desc="learning streams", file=sys.stderr):
        a = fleet[ai]
        nominal_rpm = profiles[a.asset_id].nominal_rpm
        stream = _stream(a, ai, args.seed, "normal", args.max_learning_windows, domain)[: args.max_learning_windows]
        b = learn(_render(renderer, stream), stream, rules, nominal_rpm)
        learned[ai] = {"asset_id": a.asset_id, "asset_type": a.asset_type, "vfd": bool(a.extra.get("vfd")),
                       "true_bar": a.pressure_nominal_bar, "learned_bar": b.learned_bar, "offered": b.seen,
                       "rejected": b.rejected, "restarts": b.restarts, "learned_vib_mm_s": b.learned_vib_mm_s,
                       "vib_rejected": b.vibration.rejected, "vib_restarts": b.vibration.restarts,
                       "nameplate_has_pressure": profiles[a.asset_id].pressure_nominal_bar is not None}
        imb = _stream(a, ai, args.seed + 2, "imbalance", args.max_learning_windows, domain)[: args.max_learning_windows]
        imb = [replace(s, severity=imb[0].severity) for s in imb]  # one imbalance, as a machine has it for weeks
        learned[ai]["learned_vib_while_imbalanced"] = learn(_render(renderer, imb), imb, rules, nominal_rpm).learned_vib_mm_s
        if a.asset_type == "pump":
            cav = _stream(a, ai, args.seed + 1, "cavitation", args.max_learning_windows, domain)
            cav = cav[: args.max_learning_windows]
            fb = learn(_render(renderer, cav), cav, rules, nominal_rpm)
            faulty[ai] = {"learned_bar": fb.learned_bar, "true_bar": a.pressure_nominal_bar, "offered": fb.seen,
                          "rejected": fb.rejected, "median_stream_severity": float(np.median([s.severity for s in cav]))}

    session = ort_session(ModelRegistry(args.registry).latest("plc").path("student_int8_cpu"))
    weights = FusionWeights.load(args.registry / "fusion.json")
    by_id = {fleet[ai].asset_id: ai for ai in machines}

    def vectors(profile_of) -> np.ndarray:
        return np.stack([plc_vector(r, profile_of(s)) for r, s in zip(raw, scored, strict=True)])

    def as_is(s):
        return profiles[s.asset_id]

    def removed(s):
        return replace(profiles[s.asset_id], pressure_nominal_bar=None)

    def with_learned(base):
        return lambda s: base(s).with_learned_pressure(learned[s.asset_index]["learned_bar"])

    def with_true(base):
        return lambda s: replace(base(s), pressure_nominal_bar=fleet[s.asset_index].pressure_nominal_bar)

    def with_faulty(base):
        return lambda s: base(s).with_learned_pressure(faulty.get(s.asset_index, {}).get("learned_bar"))

    def with_vibration(key: str):
        return lambda s: as_is(s).with_normal_vibration(learned[s.asset_index][key])

    unknown = np.array([profiles[i].pressure_nominal_bar is None for i in ids])
    pumps = types == "pump"
    probs: dict[str, dict[str, np.ndarray]] = {}
    heldout: dict[str, dict] = {}
    for name, base in (("nameplate_as_is", as_is), ("pressure_removed", removed)):
        probs[name], heldout[name] = {}, {}
        for variant, profile_of in (("before", base), ("learned", with_learned(base)), ("true_nameplate", with_true(base))):
            probs[name][variant], z = score(session, vectors(profile_of), types, weights, classes)
            heldout[name][variant] = heldout_fpr(z, y, sev, ids, types, classes, args.heldout_budget)
    probs["vibration"] = {"before": probs["nameplate_as_is"]["before"]}
    for variant, key in (("learned_vibration", "learned_vib_mm_s"),
                         ("learned_while_imbalanced", "learned_vib_while_imbalanced")):
        probs["vibration"][variant] = score(session, vectors(with_vibration(key)), types, weights, classes)[0]
    probs["faulty_start"] = {"learned_from_cavitation": score(session, vectors(with_faulty(removed)), types, weights,
                                                              classes)[0]}
    groups_of = {
        "nameplate_as_is": {"unknown_pressure_machines": unknown, "all_machines": np.ones(len(y), bool)},
        "pressure_removed": {"all_machines": np.ones(len(y), bool), "pumps": pumps,
                             **{f"type_{t}": types == t for t in sorted(set(types.tolist()))}},
        "faulty_start": {"pumps": pumps},
        "vibration": {"all_machines": np.ones(len(y), bool),
                      "normal_above_fleet_range": np.array([(learned[s.asset_index]["learned_vib_mm_s"] or 0.0)
                                                            > FLEET_NORMAL_VIBRATION_MM_S for s in scored]),
                      "imbalanced_learning_above_fleet_range": np.array([
                          (learned[s.asset_index]["learned_vib_while_imbalanced"] or 0.0) > FLEET_NORMAL_VIBRATION_MM_S
                          for s in scored])},
    }
    results: dict = {}
    for scenario, variants in probs.items():
        results[scenario] = {}
        for group, mask in groups_of[scenario].items():
            results[scenario][group] = {v: metrics(p[mask], y[mask], sev[mask], classes) for v, p in variants.items()}
            results[scenario][group]["machines"] = len(set(ids[mask].tolist()))
    if faulty:  # the faulty-start pumps, before and with the true nameplate, on the same windows
        results["faulty_start"]["pumps"]["before"] = results["pressure_removed"]["pumps"]["before"]
        results["faulty_start"]["pumps"]["true_nameplate"] = results["pressure_removed"]["pumps"]["true_nameplate"]

    learned_list = list(learned.values())
    ratio = [m["learned_bar"] / m["true_bar"] for m in learned_list if m["learned_bar"]]
    fratio = [m["learned_bar"] / m["true_bar"] for m in faulty.values() if m["learned_bar"]]
    summary = {
        "command": " ".join(sys.argv), "machine": {"platform": platform.platform(), "processor": platform.processor()},
        "data": {"world": {"samples_per_class": args.samples_per_class, "assets": args.assets, "seed": args.seed,
                           "domain": args.domain},
                 "split": args.split, "machines": len(machines), "scored_windows": len(scored),
                 "unknown_pressure_machines": int(len(set(ids[unknown].tolist()))),
                 "unknown_pressure_windows": int(unknown.sum())},
        "rules": rules.__dict__, "max_learning_windows": args.max_learning_windows,
        "learning": {
            "learned_share": sum(m["learned_bar"] is not None for m in learned_list) / max(len(learned_list), 1),
            "learned_share_by_type": {t: float(np.mean([m["learned_bar"] is not None for m in learned_list
                                                        if m["asset_type"] == t]))
                                      for t in sorted({m["asset_type"] for m in learned_list})},
            "learned_over_true": {"median": float(np.median(ratio)) if ratio else None,
                                  "p05_p95": [float(x) for x in np.percentile(ratio, [5, 95])] if ratio else None},
            "median_windows_offered": float(np.median([m["offered"] for m in learned_list if m["learned_bar"]]))
            if ratio else None,
            "vibration_learned_share": sum(m["learned_vib_mm_s"] is not None for m in learned_list)
            / max(len(learned_list), 1),
            "vibration_mm_s_p05_p50_p95": [float(x) for x in np.percentile(
                [m["learned_vib_mm_s"] for m in learned_list if m["learned_vib_mm_s"]], [5, 50, 95])]
            if any(m["learned_vib_mm_s"] for m in learned_list) else None,
            "vibration_above_fleet_range": sum((m["learned_vib_mm_s"] or 0.0) > FLEET_NORMAL_VIBRATION_MM_S
                                               for m in learned_list),
            "vibration_while_imbalanced_above_fleet_range": sum(
                (m["learned_vib_while_imbalanced"] or 0.0) > FLEET_NORMAL_VIBRATION_MM_S for m in learned_list),
        },
        "faulty_start": {
            "pumps": len(faulty), "learned_share": sum(m["learned_bar"] is not None for m in faulty.values())
            / max(len(faulty), 1),
            "learned_over_true": {"median": float(np.median(fratio)) if fratio else None,
                                  "min": float(np.min(fratio)) if fratio else None},
        },
        "results": results, "heldout_cv": heldout, "per_machine": {str(by_id.get(m["asset_id"])): m for m in learned_list},
        "duration_s": round(time.perf_counter() - t0, 1),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(summary, indent=1, default=float) + "\n")

    def line(label: str, m: dict) -> str:
        r = m.get("recall_past_moderate", {})
        rec = " ".join(f"{c[:4]} {r[c]:.3f}" if r.get(c) is not None else f"{c[:4]} -" for c in VISIBLE)
        return f"  {label:<16} FPR {100 * m['healthy_fpr']:5.2f} % ({m['healthy_false_alarms']}/{m['n_healthy']})  {rec}"

    print(f"learned on {100 * summary['learning']['learned_share']:.0f} % of {len(machines)} machines "
          f"({summary['learning']['learned_share_by_type']}); learned/true {summary['learning']['learned_over_true']}")
    for scenario, groups in results.items():
        for group, variants in groups.items():
            print(f"{scenario} / {group} ({variants['machines']} machines)")
            for v, m in variants.items():
                if v != "machines":
                    print(line(v, m))
    print(f"faulty start: {summary['faulty_start']}")
    for scenario, variants in heldout.items():
        print(f"held out (class shifts at {args.heldout_budget:.1%} cross-validated over the machines), {scenario}: "
              + ", ".join(f"{v} FPR {100 * h['fpr']:.2f} %" for v, h in variants.items()))
    print(f"-> {args.out} ({summary['duration_s']} s)")


if __name__ == "__main__":
    main()
