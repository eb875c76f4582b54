"""How much a vector student's scores depend on its random initial weights, alone and as an
ensemble (``StudentConfig.members``), on the feature vectors and teacher of one GPU run.

For each seed the distilled student is trained again (CPU, the run's split, its teacher's soft
targets, the shipped student settings), calibrated on validation with the same false-alarm budget
as packaging, and scored on test and on the unseen-type set: macro-F1 past moderate severity,
healthy false-positive rate, recall past moderate of each fault. With ``--foreign`` (thermal), also
on the frames of the foreign fleet (``bench/bench_foreign_fleet.py --data DIR --out JSON``: another
generator's machines, read through the working tree's features with the fleet's ``assets.json``,
only the faults thermal is built to see, as the fusion reads it; recall over all severities, as
that bench counts). The table gives the median and the range (min–max) over seeds of one MLP and
of an ensemble.

    .venv/bin/python bench/bench_student_members.py --gpu-run .runs/v10-ens8 --modality thermal \\
        --seeds 1,2,3,4,5 --members 8 --foreign /tmp/ff /tmp/ff10.json --out bench/results/student_members.json

The GPU run is what ``scripts/train_gpu.py`` wrote (``bundle_<modality>.tar.gz`` and the data);
training runs on this machine's CPU (measured: 15 s per MLP, 77 s for 8 members on 23 k thermal
vectors, two cores; docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

ROOT = Path(__file__).resolve().parents[1]


def score(model, calibration, part) -> dict:
    from models.training.calibration import softmax
    from models.training.evaluation import apply_mask, evaluate, possible_mask
    from models.training.loop import predict_logits

    probs = softmax(calibration.apply(predict_logits(model, part.inputs)))
    e = evaluate(apply_mask(probs, possible_mask(part.asset_types, part.classes)), part.labels, part.severity,
                 part.classes)
    return {"macro_f1_past_moderate": e.macro_f1_past_moderate, "healthy_fpr": e.healthy_fpr,
            **{f"recall.{k}": v for k, v in e.recall_past_moderate.items()}}


def foreign_thermal(fleet: Path, report: Path, classes: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The foreign fleet's thermal vectors (through the working tree's features) and their labels
    (indices into ``classes``, the model's)."""
    from models.inputs import input_array
    from models.inspect.frame_files import read_frame
    from models.inspect.readers import load_assets
    from pipeline.features.messages import thermal_message_any_unit

    records = json.loads(report.read_text())
    assets = load_assets(fleet / "assets.json")
    xs, ys = [], []
    for r in tqdm(records["records"], desc="foreign frames", unit="frame"):
        if not r.get("tiff"):
            continue
        profile = assets[r["asset_id"]]
        msg = thermal_message_any_unit(r["asset_id"], profile.asset_type, 0, read_frame(fleet / "files" / r["tiff"]),
                                       profile, source=r["tiff"], warnings=[])
        xs.append(input_array("thermal", msg))
        ys.append(classes.index(r["cls"]))
    return np.stack(xs).astype(np.float32), np.asarray(ys)


def score_foreign(model, calibration, x: np.ndarray, y: np.ndarray, classes: tuple[str, ...], visible: list[str]
                  ) -> dict:
    from models.fusion.fit import restrict_arrays
    from models.training.calibration import softmax
    from models.training.loop import predict_logits

    probs = softmax(calibration.apply(predict_logits(model, x)))
    pred = restrict_arrays({"thermal": probs}, {"thermal": visible}, classes)["thermal"].argmax(1)
    out = {"healthy_fpr": float((pred[y == 0] != 0).mean())}
    for c in visible:
        k = classes.index(c)
        out[f"recall.{c}"] = float((pred[y == k] == k).mean())
    return out


def train_one(bundle, split, cfg, members: int, seed: int, soft: np.ndarray):
    import torch

    from models.families import family
    from models.training.calibration import calibrate
    from models.training.evaluation import possible_mask
    from models.training.loop import fit, predict_logits

    student_cfg = cfg.student.model_copy(update={"members": members})
    stats = tuple(np.asarray(s, np.float32).reshape(bundle.sample_shape) for s in bundle.standardizer)
    np.random.seed(seed)
    torch.manual_seed(seed)
    model = family(bundle.modality).build_student(student_cfg, len(bundle.classes), bundle.sample_shape, stats)
    tr, va = split.train, split.val
    fit(model, tr.inputs, tr.labels, va.inputs, va.labels, bundle.classes, epochs=student_cfg.epochs,
        lr=student_cfg.lr, weight_decay=student_cfg.weight_decay, batch_size=cfg.batch_size, patience=cfg.patience,
        seed=seed, desc=f"{members} member(s), seed {seed}", progress=False, min_epochs=student_cfg.min_epochs,
        teacher_logits=soft, temperature=student_cfg.temperature, alpha=student_cfg.alpha)
    calibration = calibrate(predict_logits(model, va.inputs), va.labels, cfg.val_fpr_budget, severity=va.severity,
                            possible=possible_mask(va.asset_types, bundle.classes))
    return model, calibration


def summary(rows: list[dict]) -> dict:
    keys = rows[0].keys()
    return {k: {"median": float(np.median([r[k] for r in rows])), "min": float(min(r[k] for r in rows)),
                "max": float(max(r[k] for r in rows))} for k in keys}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpu-run", type=Path, required=True)
    ap.add_argument("--modality", default="thermal")
    ap.add_argument("--seeds", default="1,2,3,4,5")
    ap.add_argument("--members", type=int, default=8, help="members of the ensemble compared with one MLP")
    ap.add_argument("--foreign", type=Path, nargs=2, metavar=("FLEET_DIR", "REPORT_JSON"), default=None,
                    help="thermal: also score the foreign fleet (bench_foreign_fleet.py --data DIR --out JSON)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "student_members.json")
    args = ap.parse_args()
    import torch

    from models.config import TrainConfig
    from models.data.domain_data import load_run_data
    from models.training.fitting import FitBundle
    from models.training.loop import predict_logits

    torch.set_num_threads(2)
    ds, unseen = load_run_data(args.gpu_run)
    with tempfile.TemporaryDirectory() as tmp, tarfile.open(args.gpu_run / f"bundle_{args.modality}.tar.gz") as tar:
        tar.extractall(tmp, filter="data")
        bundle = FitBundle.load(Path(tmp) / args.modality)
    cfg = TrainConfig.model_validate(bundle.config)
    data = ds.samples(args.modality)
    split = bundle.split_of(data)
    soft = predict_logits(bundle.models["teacher"], split.train.inputs)
    parts = {"test": split.test, "unseen": unseen.samples(args.modality)}
    scorers: dict[str, Callable] = {name: functools.partial(score, part=part) for name, part in parts.items()}
    if args.foreign is not None:
        from models.fusion.log_linear import FusionWeights

        x_f, y_f = foreign_thermal(*args.foreign, bundle.classes)
        visible = FusionWeights.load(ROOT / "models" / "default" / "fusion.json").visible["thermal"]
        scorers["foreign"] = functools.partial(score_foreign, x=x_f, y=y_f, classes=bundle.classes, visible=visible)
    seeds = [int(s) for s in args.seeds.split(",") if s]
    results: dict = {"command": " ".join([".venv/bin/python", "bench/bench_student_members.py", *sys.argv[1:]]),
                     "gpu_run": str(args.gpu_run), "modality": args.modality, "seeds": seeds,
                     "student": cfg.student.model_dump(mode="json"), "runs": {}}
    for members in (1, args.members):
        rows: dict[str, list[dict]] = {p: [] for p in scorers}
        seconds = []
        for seed in tqdm(seeds, desc=f"{members} member(s)", unit="seed"):
            started = time.perf_counter()
            model, calibration = train_one(bundle, split, cfg, members, seed, soft)
            seconds.append(time.perf_counter() - started)
            for name, scorer in scorers.items():
                rows[name].append(scorer(model, calibration=calibration) | {"seed": seed})
        results["runs"][str(members)] = {"fit_s_median": float(np.median(seconds)), "per_seed": rows,
                                         "summary": {p: summary([{k: v for k, v in r.items() if k != "seed"}
                                                                 for r in rows[p]]) for p in scorers}}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1))
    for part in scorers:
        print(f"\n{part}: median [min–max] over seeds {seeds}")
        print(f"| | 1 MLP | {args.members} members |\n|---|---|---|")
        one, many = (results["runs"][k]["summary"][part] for k in ("1", str(args.members)))
        for key in one:
            cells = [f"{s[key]['median']:.3f} [{s[key]['min']:.3f}–{s[key]['max']:.3f}]" for s in (one, many)]
            print(f"| {key} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()
