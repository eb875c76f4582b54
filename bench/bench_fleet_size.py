"""What the number of training machines buys a vector student: label-only students trained on each
of several run folders (the same sample count, more or fewer machines), calibrated on their own
validation machines with the shipped false-alarm budget, and scored on one reference run's test
split and unseen-type set (machines none of them trained on).

    .venv/bin/python bench/bench_fleet_size.py --modality plc --reference .runs/plc-std-data \\
        --train std900=.runs/plc-std-data --train more2700=.runs/plc-big-data --seeds 1,2,3 \\
        --out bench/results/fleet_size_plc.json

A run folder is what ``scripts/train_gpu.py`` writes or ``scripts/render_plc_data.py --into-run``
(the PLC vectors alone). The reference's test split is the grouped split training computes (a pure
function of the machines and the seed); a training run that *is* the reference trains on the rest
of it, so every score is on machines the student never saw. Each training run's own test split is
scored too. No teacher: the student is trained on labels alone (``StudentConfig`` as shipped), so
what changes between rows is the data, not the distillation. FP32 in PyTorch, not the INT8 file.
Two cores: about 20 s per student on 36,000 PLC vectors.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

ROOT = Path(__file__).resolve().parents[1]


def split_parts(run: Path, modality: str, cfg):
    """The run's grouped split (as training computes it) and its unseen-type set."""
    from models.data.domain_data import load_run_data
    from models.data.samples import split_samples

    ds, unseen = load_run_data(run)
    split = split_samples(ds.samples(modality), cfg.val_fraction, cfg.test_fraction, cfg.seed)
    return {"train": split.train, "val": split.val, "test": split.test}, unseen.samples(modality)


def score(model, calibration, part) -> dict:
    """``bench_student_members.py``'s scores, with the healthy windows and machines they were counted on."""
    from bench_student_members import score as student_scores  # a sibling: bench/ is sys.path[0]

    return student_scores(model, calibration, part) | {"healthy_windows": int((part.labels == 0).sum()),
                                                       "machines": len(set(part.groups.tolist()))}


def train_label_only(modality: str, train, val, cfg, seed: int):
    import torch

    from models.common.normalization import fit_standardizer
    from models.families import family
    from models.training.calibration import calibrate
    from models.training.evaluation import possible_mask
    from models.training.loop import fit, predict_logits

    fam = family(modality)
    stats = fit_standardizer(train.inputs, per_feature=fam.per_feature_standardization)
    np.random.seed(seed)
    torch.manual_seed(seed)
    model = fam.build_student(cfg.student, len(train.classes), train.sample_shape, stats)
    fit(model, train.inputs, train.labels, val.inputs, val.labels, train.classes, epochs=cfg.student.epochs,
        lr=cfg.student.lr, weight_decay=cfg.student.weight_decay, batch_size=cfg.batch_size, patience=cfg.patience,
        seed=seed, desc=f"seed {seed}", progress=False, min_epochs=cfg.student.min_epochs)
    calibration = calibrate(predict_logits(model, val.inputs), val.labels, cfg.val_fpr_budget, severity=val.severity,
                            possible=possible_mask(val.asset_types, train.classes))
    return model, calibration


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--modality", default="plc", choices=("plc", "thermal", "audio"))
    ap.add_argument("--reference", type=Path, required=True, help="run folder whose test split and unseen set score")
    ap.add_argument("--train", action="append", required=True, metavar="NAME=RUN",
                    help="a training run folder, named (repeat)")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--batch-size", type=int, default=512,
                    help="the shipped students' (scripts/train_gpu.py's default; TrainConfig's own is 64)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "fleet_size.json")
    args = ap.parse_args()
    import torch

    from models.config import TrainConfig

    torch.set_num_threads(2)
    cfg = TrainConfig(patience=40, batch_size=args.batch_size)  # the shipped students': budget, split, seed
    cfg.student.epochs, cfg.student.min_epochs = 80, 26
    reference, reference_unseen = split_parts(args.reference, args.modality, cfg)
    seeds = [int(s) for s in args.seeds.split(",") if s]
    results: dict = {"command": " ".join([".venv/bin/python", "bench/bench_fleet_size.py", *sys.argv[1:]]),
                     "modality": args.modality, "reference": str(args.reference), "seeds": seeds,
                     "student": cfg.student.model_dump(mode="json"), "batch_size": cfg.batch_size,
                     "val_fpr_budget": cfg.val_fpr_budget, "runs": {}}
    for spec in args.train:
        name, _, run = spec.partition("=")
        parts, _ = split_parts(Path(run), args.modality, cfg)
        machines = len(set(parts["train"].groups.tolist()))
        rows: dict[str, list[dict]] = {"own_val": [], "own_test": [], "reference_test": [], "reference_unseen": []}
        started = time.perf_counter()
        for seed in tqdm(seeds, desc=f"{name} ({machines} training machines)", unit="student"):
            model, calibration = train_label_only(args.modality, parts["train"], parts["val"], cfg, seed)
            for part_name, part in (("own_val", parts["val"]), ("own_test", parts["test"]),
                                    ("reference_test", reference["test"]), ("reference_unseen", reference_unseen)):
                rows[part_name].append(score(model, calibration, part) | {"seed": seed})
        results["runs"][name] = {"run": run, "training_samples": len(parts["train"].labels),
                                 "training_machines": machines, "seconds": round(time.perf_counter() - started, 1),
                                 "per_seed": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1))
    print(f"\nlabel-only {args.modality} students, median [min–max] over seeds {seeds}")
    print("| training run (machines) | part | macro-F1 past moderate | healthy FPR |\n|---|---|---|---|")
    for name, run in results["runs"].items():
        for part_name, rows_ in run["per_seed"].items():
            cells = []
            for key in ("macro_f1_past_moderate", "healthy_fpr"):
                v = [r[key] for r in rows_]
                cells.append(f"{np.median(v):.4f} [{min(v):.4f}–{max(v):.4f}]")
            print(f"| {name} ({run['training_machines']}) | {part_name} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()
