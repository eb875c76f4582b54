"""The targets of the generalising models, measured on machines no model has seen (docs/models.md).

    .venv/bin/python bench/bench_generalisation.py --out bench/results/generalisation.json

Two fresh fleets are drawn with seeds no training run used (``models.data.domain_data``, the
same feature code as serving): machines of the *seen* types (pump, press, conveyor) with new
parameters, and the *unseen-type* domain (fan, compressor, pumps with 13-17-element bearings,
frame sizes and microphone gains outside the training ranges). The shipped serving models
(INT8, ONNX Runtime CPU) score every sample, classes a machine cannot have are masked (cavitation
needs a pump), the modalities are fused with ``models/default/fusion.json``. Reported against the
targets: recall past moderate severity (>= 0.5) per modality and class, fused macro-F1 past
moderate severity, healthy false-positive rates, the drop on the unseen-type fleet, INT8 vs FP32,
ECE, and the batch-1 latency of the INT8 student against the eager teacher (and the teacher in
ONNX Runtime, so the ratio is about the model and not the runtime). Recall-vs-severity and
reliability PNGs go next to ``--out``.

Audio is scored as the live line reads it after commissioning: every clip against its machine's
healthy levels learnt by the job's rules (``pipeline.features.audio_baseline``, 8 clips at other
operating points; ``--audio-baseline-share``; only where the baseline covers the clip's speed, as
served, ``--no-speed-gate`` for any speed), and again with the seven baseline values zeroed,
as a clip is read before its machine's baseline is learnt or as ``linewatch inspect`` reads a
single file (``*_no_audio_baseline`` in the JSON; the first 79 values do not depend on it). A
clip without a baseline withholds imbalance (``models.withheld_classes``), as served;
``--no-withholding`` scores the rule before it.

A sample whose model inputs lie far outside the model's training range enters the fusion flattened, as
``linewatch inspect`` and the live fusion service read it (``models.training_range``); ``fused_no_guard``
in the JSON is the fusion without that guard, ``extrapolating`` the share of samples each model flags.

    .venv/bin/python bench/bench_generalisation.py --per-class 600 --assets 300 --unseen-per-class 600 \
        --unseen-assets 120 --latency-runs 20 --out bench/results/generalisation_large.json
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

TARGETS = [
    # (name, where, metric path, comparison, threshold)
    ("audio bearing_wear recall", "seen", ("audio", "int8", "recall", "bearing_wear"), ">=", 0.95),
    ("audio cavitation recall", "seen", ("audio", "int8", "recall", "cavitation"), ">=", 0.90),
    ("audio imbalance recall (learned healthy baseline)", "seen", ("audio", "int8", "recall", "imbalance"), ">=", 0.90),
    ("thermal electrical_overheating recall", "seen", ("thermal", "int8", "recall", "electrical_overheating"), ">=", 0.90),
    ("thermal cooling_failure recall", "seen", ("thermal", "int8", "recall", "cooling_failure"), ">=", 0.90),
    ("thermal bearing_wear recall", "seen", ("thermal", "int8", "recall", "bearing_wear"), ">=", 0.90),
    ("fused macro-F1 past moderate", "seen", ("fused", "int8", "macro_f1_past_moderate"), ">=", 0.92),
    ("fused healthy FPR", "seen", ("fused", "int8", "healthy_fpr"), "<=", 0.01),
    ("audio healthy FPR", "seen", ("audio", "int8", "healthy_fpr"), "<=", 0.01),
    ("thermal healthy FPR", "seen", ("thermal", "int8", "healthy_fpr"), "<=", 0.01),
    ("plc healthy FPR", "seen", ("plc", "int8", "healthy_fpr"), "<=", 0.01),
]


def _evaluate(probs: np.ndarray, ds) -> dict:
    from models.training.evaluation import evaluate

    e = evaluate(probs, ds.y, ds.severity, ds.classes)
    return {"macro_f1": e.macro_f1, "macro_f1_past_moderate": e.macro_f1_past_moderate, "healthy_fpr": e.healthy_fpr,
            "ece": e.ece, "recall": e.recall_past_moderate, "n_past_moderate": e.n_past_moderate,
            "_evaluation": e}


def guarded(modality: str, x: np.ndarray, p: np.ndarray, classes, rng) -> tuple[np.ndarray, np.ndarray]:
    """``p`` with the rows whose model extrapolates (``models.training_range``) flattened, and those rows' mask."""
    from models.fusion import temper
    from models.training_range import EXTRAPOLATION_POWER, extrapolation

    if rng is None:
        return p, np.zeros(len(p), bool)
    guess = np.array([extrapolation(modality, classes[int(np.argmax(row))], rng.beyond(v)).extrapolating
                      for v, row in zip(x, p, strict=True)], bool)
    out = p.copy()
    for k in np.flatnonzero(guess):
        flat = temper(dict(zip(classes, p[k].tolist(), strict=True)), EXTRAPOLATION_POWER)
        out[k] = [flat[c] for c in classes]
    return out, guess


def score(ds, registry, weights, withholding: bool = True, fill_missing: bool = True) -> dict:
    from models.export.onnx_export import ort_logits, ort_session
    from models.fusion.fit import fuse_arrays, restrict_arrays
    from models.missing_tags import HealthyFill
    from models.training.calibration import softmax
    from models.training.evaluation import apply_mask, possible_mask
    from models.training_range import TrainingRange
    from models.withheld_classes import drop_withheld_rows, withheld_rows

    possible = possible_mask(ds.asset_types, ds.classes)
    out: dict = {}
    probs: dict[str, dict[str, np.ndarray]] = {"int8": {}, "fp32": {}}
    withheld: dict[str, np.ndarray] = {}
    flattened: dict[str, dict[str, np.ndarray]] = {"int8": {}, "fp32": {}}
    share: dict[str, float] = {}
    for m in ("plc", "thermal", "audio"):
        model = registry.latest(m)
        x = getattr(ds, m).astype(np.float32)
        blind = withheld_rows(m, x, ds.classes) if withholding else np.zeros((len(x), len(ds.classes)), bool)
        if blind.any():
            withheld[m] = blind
        fill = HealthyFill.of_model(model) if fill_missing else None
        if fill is not None:  # a PLC tag the historian lacks, read as served (models.missing_tags)
            x = np.stack([fill.apply(row) for row in x]) if len(x) else x
        out[m] = {}
        for kind, role in (("int8", "student_int8_cpu"), ("fp32", "student_fp32")):
            p = apply_mask(softmax(ort_logits(ort_session(model.path(role)), x)), possible)
            # as served: renormalised over the classes the modality may name (fusion.json "visible"),
            # without the classes its input cannot show (models.withheld_classes)
            p = drop_withheld_rows(restrict_arrays({m: p}, weights.visible, ds.classes)[m], blind)
            probs[kind][m] = p
            out[m][kind] = _evaluate(p, ds)
            flattened[kind][m], guess = guarded(m, x, p, ds.classes, TrainingRange.of_model(model))
            if kind == "int8":
                share[m] = round(float(guess.mean()), 4) if len(guess) else 0.0
    out["fused"] = {kind: _evaluate(fuse_arrays(flattened[kind], weights, ds.classes, possible, withheld), ds)
                    for kind in ("int8", "fp32")}
    out["fused_no_guard"] = {kind: _evaluate(fuse_arrays(probs[kind], weights, ds.classes, possible, withheld), ds)
                             for kind in ("int8", "fp32")}
    out["extrapolating"] = share
    return out


def without_audio_baseline(ds):
    """The same samples with the audio vectors' seven baseline values zeroed (no learned baseline)."""
    from dataclasses import replace

    from pipeline.features.audio_physics import AUDIO_CLIP_NAMES

    audio = ds.audio.copy()
    audio[:, len(AUDIO_CLIP_NAMES):] = 0.0
    return replace(ds, audio=audio)


def latency(registry, runs: int) -> dict:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import torch
    from bench_models_cpu import bench, build_variants

    torch.set_num_threads(1)
    out = {}
    for m in ("plc", "thermal", "audio"):
        variants, _ = build_variants(registry, m, 1, compile_student=False)
        keep = {k: v for k, v in variants.items()
                if k in ("teacher_torch_eager", "teacher_ort_fp32", "student_ort_fp32", "student_ort_int8_cpu")}
        res = bench(keep, runs, 20)
        int8 = res["student_ort_int8_cpu"]["median_ms"]
        out[m] = {"results": res,
                  "int8_vs_teacher_eager": res["teacher_torch_eager"]["median_ms"] / int8,
                  "int8_vs_teacher_ort": res["teacher_ort_fp32"]["median_ms"] / int8 if "teacher_ort_fp32" in res else None}
    return out


def _get(results: dict, path: tuple) -> float:
    node = results
    for key in path:
        node = node[key]
    return float(node)


def main() -> None:
    from models.data.domain_overrides import add_domain_arguments, apply_domain_changes

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--registry", type=Path, default=Path("models/default"))
    parser.add_argument("--per-class", type=int, default=150)
    parser.add_argument("--assets", type=int, default=150)
    parser.add_argument("--unseen-per-class", type=int, default=150)
    parser.add_argument("--unseen-assets", type=int, default=60)
    parser.add_argument("--seed", type=int, default=1001, help="fleets drawn with seeds no training run used")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--latency-runs", type=int, default=300)
    parser.add_argument("--audio-baseline-share", type=float, default=1.0,
                        help="share of the clips read against their machine's learned healthy baseline")
    parser.add_argument("--no-speed-gate", action="store_true",
                        help="read every clip against its machine's baseline whatever its speed (as served before "
                             "2026-12-02; pipeline.features.audio_baseline.HealthyLevels)")
    parser.add_argument("--no-withholding", action="store_true",
                        help="score as served before 2026-12-02: audio read without a learned baseline does not "
                             "withhold imbalance (models.withheld_classes)")
    add_domain_arguments(parser)  # --winding-rise, --sensor-noise, --vibration-noise, --cavitation-burst-floor
    parser.add_argument("--plc-absent-share", type=float, default=0.0,
                        help="the share of machines whose historian lacks some PLC tags (models.data.sensor_fit; "
                             "default 0: every tag, as the models were trained)")
    parser.add_argument("--no-missing-fill", action="store_true",
                        help="the PLC model reads a missing tag as the features job writes it (missing.* 1, its "
                             "inputs 0), as before 2026-12-06, not at its healthy median (models.missing_tags)")
    parser.add_argument("--out", type=Path, default=Path("bench/results/generalisation.json"))
    args = parser.parse_args()
    apply_domain_changes(args)  # before the workers fork: they read the same domains
    from models.data.domain_data import build_domain_dataset
    from models.fusion import FusionWeights
    from models.registry import ModelRegistry
    from models.training.evaluation import severity_curves_png

    registry = ModelRegistry(args.registry)
    weights = FusionWeights.load(args.registry / "fusion.json")
    t0 = time.perf_counter()
    audio = {"audio_baseline_share": args.audio_baseline_share, "audio_chronic_share": 0.0,
             "audio_baseline_speed_gate": not args.no_speed_gate, "plc_absent_share": args.plc_absent_share}
    seen = build_domain_dataset(args.per_class, args.assets, seed=args.seed, domain="train", workers=args.workers,
                                progress=True, **audio)
    unseen = build_domain_dataset(args.unseen_per_class, args.unseen_assets, seed=args.seed + 1, domain="unseen",
                                  workers=args.workers, progress=True, **audio)
    data_s = time.perf_counter() - t0
    rule, fill = not args.no_withholding, not args.no_missing_fill
    results = {"seen": score(seen, registry, weights, rule, fill), "unseen": score(unseen, registry, weights, rule, fill),
               "seen_no_audio_baseline": score(without_audio_baseline(seen), registry, weights, rule, fill),
               "unseen_no_audio_baseline": score(without_audio_baseline(unseen), registry, weights, rule, fill)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    stem = args.out.with_suffix("")
    for name in ("seen", "unseen"):
        severity_curves_png({m: results[name][m]["int8"]["_evaluation"] for m in ("audio", "thermal", "plc", "fused")},
                            Path(f"{stem}.{name}.recall_vs_severity.png"),
                            f"{name}-type machines (fresh seeds): recall vs severity, INT8 students and fusion")
    lat = latency(registry, args.latency_runs)
    drop = 100 * (results["seen"]["fused"]["int8"]["macro_f1_past_moderate"]
                  - results["unseen"]["fused"]["int8"]["macro_f1_past_moderate"])
    checks = []
    for name, where, path, op, threshold in TARGETS:
        value = _get(results[where], path)
        checks.append({"target": name, "value": value, "threshold": threshold, "op": op,
                       "met": bool(value >= threshold if op == ">=" else value <= threshold)})
    checks.append({"target": "unseen-type fused macro-F1 drop (points)", "value": drop, "threshold": 5.0, "op": "<=",
                   "met": bool(drop <= 5.0)})
    for m in ("plc", "thermal", "audio"):
        d = 100 * (results["seen"][m]["fp32"]["macro_f1"] - results["seen"][m]["int8"]["macro_f1"])
        checks.append({"target": f"{m} INT8 vs FP32 macro-F1 loss (points)", "value": d, "threshold": 1.0, "op": "<=",
                       "met": bool(d <= 1.0)})
        checks.append({"target": f"{m} INT8 student speed-up vs eager teacher (batch 1)",
                       "value": lat[m]["int8_vs_teacher_eager"], "threshold": 50.0, "op": ">=",
                       "met": bool(lat[m]["int8_vs_teacher_eager"] >= 50.0)})
    for name in results:
        for m in ("plc", "thermal", "audio", "fused", "fused_no_guard"):
            for kind in ("int8", "fp32"):
                results[name][m][kind].pop("_evaluation")
    summary = {"command": " ".join(sys.argv), "machine": {"platform": platform.platform(),
                                                          "processor": platform.processor()},
               "data": {"seen": {"n": seen.n, "machines": len(set(seen.groups.tolist())), "seed": args.seed},
                        "unseen": {"n": unseen.n, "machines": len(set(unseen.groups.tolist())), "seed": args.seed + 1},
                        "render_and_featurise_s": round(data_s, 1)},
               "targets": checks, "results": results, "latency_batch1": lat}
    args.out.write_text(json.dumps(summary, indent=1, default=float) + "\n")
    width = max(len(c["target"]) for c in checks)
    for c in checks:
        print(f"{c['target']:<{width}}  {c['value']:8.3f}  {c['op']} {c['threshold']:<6}  "
              f"{'met' if c['met'] else 'NOT MET'}")
    for name in ("seen", "unseen"):
        a, f = results[f"{name}_no_audio_baseline"]["audio"]["int8"], results[f"{name}_no_audio_baseline"]["fused"]["int8"]
        print(f"{name}, clips without a learned baseline: audio recall "
              + ", ".join(f"{c} {v:.3f}" for c, v in a["recall"].items() if v == v)
              + f", audio FPR {a['healthy_fpr']:.4f}; fused macro-F1 {f['macro_f1_past_moderate']:.3f}, "
              f"FPR {f['healthy_fpr']:.4f}")
    for name in ("seen", "unseen"):
        g, f = results[name]["fused_no_guard"]["int8"], results[name]["fused"]["int8"]
        print(f"{name}: samples extrapolating {results[name]['extrapolating']}; fused macro-F1 / FPR without the guard "
              f"{g['macro_f1_past_moderate']:.3f} / {g['healthy_fpr']:.4f}, with it {f['macro_f1_past_moderate']:.3f} / "
              f"{f['healthy_fpr']:.4f}")


if __name__ == "__main__":
    main()
