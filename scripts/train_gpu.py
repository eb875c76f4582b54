"""The GPU half of training the shipped models: data on the spot, teachers, students, calibration.

Run on the lent H200 (16 cores, one GPU; see docs/models.md "How the shipped models were made")::

    python scripts/train_gpu.py --out $OUT --device cuda --workers 15

It renders the domain-randomised training fleet and the unseen-type fleet with all cores
(``models.data.domain_data``), fits every modality's teacher, label-only and distilled student and
their calibration on the GPU (``models.training.fitting``), runs the image-input ablation (log-mel
CNN, frame CNN: what the physics-normalised vectors buy) and writes into ``--out``:

* ``bundle_<modality>.tar.gz``: the :class:`~models.training.fitting.FitBundle` of each modality;
* ``data_train_{audio,thermal}.npz``, ``data_train_plc_meta.npz``, ``data_unseen.npz``: the
  feature vectors and labels (the local half re-evaluates, quantizes and calibrates on them);
* ``results.json``: timings, device, torch-side metrics, ablation.

``scripts/package_models.py`` is the CPU half (export, INT8, gates, fusion, registry). The same
script runs on a CPU with ``--smoke`` (tiny data, tiny models) for the tests of this pipeline.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import tarfile
import time
from pathlib import Path

import numpy as np

T0 = time.perf_counter()


def log(msg: str) -> None:
    print(f"[{time.perf_counter() - T0:7.1f} s] {msg}", flush=True)


def save_data(ds, out: Path, name: str, split_modalities: bool) -> list[Path]:
    meta = {k: getattr(ds, k) for k in ("y", "severity", "groups", "asset_types", "variants", "drifts", "shaft_hz")}
    info = np.asarray(json.dumps({"domain": ds.domain, "seed": ds.seed, "classes": list(ds.classes)}))
    if not split_modalities:
        path = out / f"data_{name}.npz"
        extra = {"audio_baseline": ds.audio_baseline} if ds.audio_baseline is not None else {}
        np.savez_compressed(path, meta=info, plc=ds.plc, thermal=ds.thermal, audio=ds.audio, **meta, **extra)
        return [path]
    paths = []
    for m in ("audio", "thermal"):
        paths.append(out / f"data_{name}_{m}.npz")
        extra = {"audio_baseline": ds.audio_baseline} if m == "audio" and ds.audio_baseline is not None else {}
        if m == "thermal" and ds.thermal_boxes is not None:
            extra = {"thermal_boxes": ds.thermal_boxes}
        np.savez_compressed(paths[-1], **{m: getattr(ds, m)}, **extra)
    paths.append(out / f"data_{name}_plc_meta.npz")
    np.savez_compressed(paths[-1], meta=info, plc=ds.plc, **meta)
    return paths


def evaluate_probs(probs: np.ndarray, part) -> dict:
    from models.training.evaluation import apply_mask, evaluate, possible_mask

    e = evaluate(apply_mask(probs, possible_mask(part.asset_types, part.classes)), part.labels, part.severity,
                 part.classes)
    return {"macro_f1": e.macro_f1, "macro_f1_past_moderate": e.macro_f1_past_moderate, "healthy_fpr": e.healthy_fpr,
            "ece": e.ece, "recall_past_moderate": e.recall_past_moderate}


def image_ablation(ds, unseen, modality: str, cfg, split) -> dict:
    """Label-only image student (features v1 input) on the same split, calibrated the same way."""
    import torch

    from models.common.normalization import fit_standardizer
    from models.data.samples import LabelledSamples
    from models.families import image_family
    from models.training.calibration import calibrate, softmax
    from models.training.loop import fit, predict_logits

    key = "logmel" if modality == "audio" else "frames"
    fam = image_family(modality)

    def samples(d, idx=None) -> LabelledSamples:
        x = getattr(d, key).astype(np.float32)
        s = LabelledSamples(modality, x, d.y, d.classes, 1, "ablation", severity=d.severity, groups=d.groups,
                            asset_types=d.asset_types)
        return s if idx is None else s.subset(np.asarray(idx))

    tr, va, te = (samples(ds, split[k]) for k in ("train", "val", "test"))
    un = samples(unseen)
    stats = fit_standardizer(tr.inputs, per_feature=False)
    torch.manual_seed(cfg.seed + 1)
    student_cfg = cfg.student.model_copy(update={"width": 24 if modality == "thermal" else 16,
                                                 "epochs": min(cfg.student.epochs, 25)})
    model = fam.build_student(student_cfg, len(ds.classes), tr.sample_shape, stats).to(cfg.device)
    fit(model, tr.inputs, tr.labels, va.inputs, va.labels, ds.classes, epochs=student_cfg.epochs, lr=student_cfg.lr,
        weight_decay=student_cfg.weight_decay, batch_size=cfg.batch_size, patience=cfg.patience, seed=cfg.seed + 1,
        desc=f"{modality} image ablation", progress=False, min_epochs=student_cfg.min_epochs)
    from models.training.evaluation import possible_mask

    cal = calibrate(predict_logits(model, va.inputs), va.labels, cfg.val_fpr_budget, severity=va.severity,
                    possible=possible_mask(va.asset_types, ds.classes))
    out = {"input": "64-band log-mel (64, 101)" if modality == "audio" else "normalised frame resized to 120x160",
           "student": fam.student_architecture,
           "parameters": int(sum(p.numel() for p in model.parameters()))}
    for name, part in (("test", te), ("unseen", un)):
        out[name] = evaluate_probs(softmax(cal.apply(predict_logits(model, part.inputs))), part)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    parser.add_argument("--train-per-class", type=int, default=6000)
    parser.add_argument("--train-assets", type=int, default=900)
    parser.add_argument("--unseen-per-class", type=int, default=1500)
    parser.add_argument("--unseen-assets", type=int, default=240)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--modalities", default="audio,thermal,plc")
    parser.add_argument("--data", type=Path, default=None, help="reuse the feature vectors of an earlier run")
    parser.add_argument("--teacher-epochs", type=int, default=120)
    parser.add_argument("--teacher-lr", type=float, default=1e-3)
    parser.add_argument("--teacher-hidden", type=int, default=None, help="default: TeacherConfig's")
    parser.add_argument("--teacher-layers", type=int, default=None)
    parser.add_argument("--teacher-heads", type=int, default=None)
    parser.add_argument("--teacher-ff", type=int, default=None)
    parser.add_argument("--teacher-embedding", default=None, choices=("linear", "mlp"))
    parser.add_argument("--teacher-max-seconds", type=float, default=None, help="wall-time limit per teacher")
    parser.add_argument("--student-epochs", type=int, default=80)
    parser.add_argument("--student-members", type=int, default=1, help="MLPs in each vector student (ensemble)")
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--patience", type=int, default=20)
    parser.add_argument("--no-ablation", action="store_true")
    parser.add_argument("--distillation", choices=("auto", "always", "never"), default="auto",
                        help="which student to keep: auto, the distilled one where it beats the label-only one on "
                             "validation (the default); always the distilled one (a label-only student that won on "
                             "validation raised 17.7 %% thermal false alarms on another generator's machines, its "
                             "distilled twin 1.9 %%: docs/models.md, \"Thermal v7's control runs\"); never")
    parser.add_argument("--user-box-share", type=float, default=0.0,
                        help="share of the train-domain machines whose thermal frames are read with region boxes as "
                             "users hold them (none / rough / camera moved; models.data.user_boxes); 0: exact boxes")
    parser.add_argument("--plc-absent-share", type=float, default=0.0,
                        help="share of the train-domain machines whose historian lacks some PLC tags "
                             "(models.data.sensor_fit); 0: every machine reports all seven")
    parser.add_argument("--user-box-modes", default="none,rough,moved",
                        help="which ways of going wrong (comma-separated: none, rough, moved)")
    parser.add_argument("--thermal-baseline-day-spread", type=float, nargs=2, default=None, metavar=("RISE", "K"),
                        help="the running baselines' frames show their machine on another day: part rises scaled "
                             "by 1 +- U(0, RISE), offset by N(0, K) kelvin (both domains; default: off)")
    parser.add_argument("--smoke", action="store_true", help="tiny data and models (CPU test of this script)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    from models.config import StudentConfig, TeacherConfig, TrainConfig
    from models.data.domain_data import build_domain_dataset
    from models.training.calibration import softmax
    from models.training.fitting import fit_models
    from models.training.loop import predict_logits

    ablation = not args.no_ablation and args.data is None
    results: dict = {"args": vars(args) | {"out": str(out), "data": str(args.data)}, "phases": {}}
    if args.data is not None:  # the feature vectors of an earlier run (no images: no ablation)
        from models.data.domain_data import load_run_data

        ds, unseen = load_run_data(args.data)
        log(f"data of {args.data}: {ds.n} + {unseen.n} samples")
    else:
        t = time.perf_counter()
        spread = args.thermal_baseline_day_spread
        day_spread = (float(spread[0]), float(spread[1])) if spread else None
        ds = build_domain_dataset(args.train_per_class, args.train_assets, seed=args.seed + 11, domain="train",
                                  workers=args.workers, images=ablation, user_box_share=args.user_box_share,
                                  user_box_modes=tuple(m for m in args.user_box_modes.split(",") if m),
                                  plc_absent_share=args.plc_absent_share,
                                  baseline_day_spread=day_spread)
        results["phases"]["data_train_s"] = round(time.perf_counter() - t, 1)
        log(f"train-domain data: {ds.n} samples, {len(set(ds.groups.tolist()))} machines")
        t = time.perf_counter()
        unseen = build_domain_dataset(args.unseen_per_class, args.unseen_assets, seed=args.seed + 23,
                                      domain="unseen", workers=args.workers, images=ablation,
                                      baseline_day_spread=day_spread)
        results["phases"]["data_unseen_s"] = round(time.perf_counter() - t, 1)
        log(f"unseen-domain data: {unseen.n} samples")
        files = save_data(ds, out, "train", split_modalities=True) + save_data(unseen, out, "unseen", False)
        log("data saved: " + ", ".join(f"{p.name} {p.stat().st_size / 2**20:.1f} MiB" for p in files))

    import torch

    if args.device.startswith("cuda"):
        results["device"] = torch.cuda.get_device_name(0)
        torch.backends.cuda.matmul.allow_tf32 = True
    bundles = out / "bundles"
    results["models"] = {}
    for modality in [m for m in args.modalities.split(",") if m]:  # "": render the data only
        t = time.perf_counter()
        cfg = TrainConfig(device=args.device, batch_size=args.batch_size, progress=False, seed=args.seed,
                          patience=args.patience, distillation=args.distillation)
        cfg.teacher.lr = args.teacher_lr
        for field, value in (("hidden_size", args.teacher_hidden), ("num_layers", args.teacher_layers),
                             ("num_heads", args.teacher_heads), ("intermediate_size", args.teacher_ff),
                             ("value_embedding", args.teacher_embedding), ("max_seconds", args.teacher_max_seconds)):
            if value is not None:
                setattr(cfg.teacher, field, value)
        cfg.teacher.epochs, cfg.teacher.min_epochs = args.teacher_epochs, args.teacher_epochs // 2
        cfg.student.epochs, cfg.student.min_epochs = args.student_epochs, args.student_epochs // 3
        cfg.student.members = args.student_members
        if args.smoke:
            cfg.teacher = TeacherConfig(hidden_size=16, num_layers=1, num_heads=2, intermediate_size=32, epochs=2)
            cfg.student = StudentConfig(hidden=16, epochs=2)
        data = ds.samples(modality)
        bundle = fit_models(modality, data, cfg)
        bundle.save(bundles / modality)
        with tarfile.open(out / f"bundle_{modality}.tar.gz", "w:gz") as tar:
            tar.add(bundles / modality, arcname=modality)
        split = bundle.split_of(data)
        report: dict = {"fit_s": round(time.perf_counter() - t, 1), "chosen": bundle.chosen,
                        "val_macro_f1": bundle.val_macro_f1, "trained_on": bundle.trained_on,
                        "calibration": {k: v.to_dict() for k, v in bundle.calibrations.items()},
                        "epochs": {k: (v.epochs_run, v.best_epoch) if v else None for k, v in bundle.fits.items()}}
        for name, part in (("test", split.test), ("unseen", unseen.samples(modality))):
            report[name] = {r: evaluate_probs(softmax(bundle.calibrations[r].apply(predict_logits(m, part.inputs))), part)
                            for r, m in bundle.models.items()}
        results["models"][modality] = report
        log(f"{modality}: fitted in {report['fit_s']} s, kept {bundle.chosen}, test "
            + ", ".join(f"{r} {v['macro_f1_past_moderate']:.3f}/{v['healthy_fpr']:.3f}" for r, v in report["test"].items()))
        if ablation and modality in ("audio", "thermal"):
            t = time.perf_counter()
            results["models"][modality]["image_ablation"] = image_ablation(ds, unseen, modality, cfg, bundle.split)
            log(f"{modality} image ablation in {time.perf_counter() - t:.0f} s: "
                f"{results['models'][modality]['image_ablation']['test']}")
        (out / "results.json").write_text(json.dumps(results, indent=1, default=float))
    import shutil

    shutil.rmtree(bundles, ignore_errors=True)
    results["phases"]["total_s"] = round(time.perf_counter() - T0, 1)
    (out / "results.json").write_text(json.dumps(results, indent=1, default=float))
    log("done: " + ", ".join(f"{p.name} {p.stat().st_size / 2**20:.1f} MiB" for p in sorted(out.iterdir())))


if __name__ == "__main__":
    main()
