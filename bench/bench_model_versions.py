"""Every registered version of one modality's model, scored as served on one data run's test split.

    .venv/bin/python bench/bench_model_versions.py --data RUN --registry models/default --modality plc \
        [--versions v6,v7] [--out F]

``RUN`` is a folder of feature vectors as ``scripts/train_gpu.py`` writes them (``--data`` there:
``data_train_{audio,thermal}.npz``, ``data_train_plc_meta.npz``, ``data_unseen.npz``). Its grouped
test split is recomputed as training computes it (a pure function of the machines and the seed:
:func:`models.data.samples.split_samples` with ``TrainConfig``'s fractions and seed), so a model
trained on that run is scored on machines it never saw. Each version's INT8 CPU student (the file
``linewatch inspect`` and the inference service load; its calibration is baked in) is run with
ONNX Runtime on the test split and on the run's unseen-type set, the classes an asset type cannot
have masked as the gates mask them, and scored with :func:`models.training.evaluation.evaluate`.

What it answers: whether a version registered before the simulator or the feature code changed
still holds on vectors the current code renders (a model is not retrained for every change of its
inputs), and how a candidate in a scratch registry compares with the shipped one on the same windows.
An older version trained on these very fleets may have seen some of the test machines in training;
the report says which version each number belongs to, not which split it was trained on.

The validation split is scored too (it is what the class shifts were calibrated on), and for every
part the healthy windows flagged as a fault are broken down: how many machines they come from, the
machines with the most, the classes named and the asset types. A false-alarm rate that doubles from
validation to test on a handful of machines is a gap between machines, not a budget a
re-calibration on validation would fix.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np


def false_alarms(pred: np.ndarray, part) -> dict:
    """Where the healthy windows flagged as a fault come from (``pred``: the top class of each window)."""
    from collections import Counter

    healthy = part.labels == 0
    flagged = healthy & (pred != 0)
    machines = Counter(np.asarray(part.groups)[flagged].tolist())
    return {"windows": int(flagged.sum()), "healthy_windows": int(healthy.sum()),
            "machines": len(machines), "healthy_machines": len(set(np.asarray(part.groups)[healthy].tolist())),
            "top_machines": dict(machines.most_common(5)),
            "classes": dict(Counter(np.asarray(part.classes)[pred[flagged]].tolist()).most_common()),
            "asset_types": dict(Counter(np.asarray(part.asset_types)[flagged].tolist()).most_common())}


def score_versions(data: Path, registry: Path, modality: str, versions: list[str] | None) -> dict:
    from models.config import TrainConfig
    from models.data.domain_data import load_run_data
    from models.data.samples import split_samples
    from models.export.onnx_export import ort_logits, ort_session
    from models.registry import ModelRegistry
    from models.training.calibration import softmax
    from models.training.evaluation import apply_mask, evaluate, possible_mask

    train, unseen = load_run_data(data)
    cfg = TrainConfig()
    split = split_samples(train.samples(modality), cfg.val_fraction, cfg.test_fraction, cfg.seed)
    parts = {"val": split.val, "test": split.test, "unseen": unseen.samples(modality)}
    shape = tuple(split.test.sample_shape)
    reg = ModelRegistry(registry)
    report: dict = {"data": str(data), "registry": str(registry), "modality": modality,
                    "n": {k: len(p.labels) for k, p in parts.items()}, "versions": {}}
    for version in versions or reg.versions(modality):
        model = reg.get(modality, version)
        if tuple(model.card.input["shape"]) != shape:
            report["versions"][version] = {"skipped": f"input shape {model.card.input['shape']} is not the run's "
                                                      f"{list(shape)}"}
            continue
        session = ort_session(model.path("student_int8_cpu"))  # one thread, as the gates score it
        entry: dict = {"trained_on": model.card.teacher.get("trained_on"),
                       "dataset_digest": model.card.dataset.get("digest")}
        for name, part in parts.items():
            probs = apply_mask(softmax(ort_logits(session, part.inputs)), possible_mask(part.asset_types, part.classes))
            e = evaluate(probs, part.labels, part.severity, part.classes)
            entry[name] = {"macro_f1_past_moderate": round(e.macro_f1_past_moderate, 4),
                           "healthy_fpr": round(e.healthy_fpr, 4), "ece": round(e.ece, 4),
                           "recall_past_moderate": {k: round(v, 3) for k, v in e.recall_past_moderate.items()},
                           "false_alarms": false_alarms(probs.argmax(1), part)}
        report["versions"][version] = entry
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="a scripts/train_gpu.py run folder")
    parser.add_argument("--registry", type=Path, default=Path("models/default"))
    parser.add_argument("--modality", default="plc", choices=("plc", "thermal", "audio"))
    parser.add_argument("--versions", default=None, help="comma-separated (default: every registered version)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    t0 = time.perf_counter()
    report = score_versions(args.data, args.registry, args.modality,
                            [v for v in args.versions.split(",") if v] if args.versions else None)
    report["command"] = "bench/bench_model_versions.py " + " ".join(
        f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items() if v is not None)
    report["seconds"] = round(time.perf_counter() - t0, 1)
    for version, entry in report["versions"].items():
        if "skipped" in entry:
            print(f"{version}: skipped ({entry['skipped']})")
            continue
        for name in ("val", "test", "unseen"):
            e = entry[name]
            fa = e["false_alarms"]
            print(f"{version} {name:6s} macro-F1 past moderate {e['macro_f1_past_moderate']:.4f}  healthy FPR "
                  f"{e['healthy_fpr']:.4f} ({fa['windows']} windows of {fa['machines']}/{fa['healthy_machines']} "
                  f"machines)  recall " + ", ".join(f"{k} {v:.3f}" for k, v in e["recall_past_moderate"].items()))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1, default=str))
        print(f"report: {args.out}")


if __name__ == "__main__":
    main()
