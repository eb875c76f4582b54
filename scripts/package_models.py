"""The CPU half of training the shipped models: package the GPU run's bundles into a registry.

    .venv/bin/python scripts/package_models.py --gpu-run DIR --registry models/default [--force]

``DIR`` holds what ``scripts/train_gpu.py`` wrote (bundles, feature vectors, results.json). Per
modality: ONNX export with the calibration baked in, INT8 (both flavours), evaluation of every
role on the grouped test split and the unseen-type set, gates (floors, INT8, no regression unless
``--force``), model card, registration. Then the fusion: per-modality weights and the fused
false-alarm budget fitted on the *validation* split's INT8 probabilities, written to
``<registry>/fusion.json``, and the fused evaluation on test / unseen in
``<registry>/fusion_report.json`` (+ ``fusion_recall_vs_severity.png``).
"""

from __future__ import annotations

import argparse
import json
import logging
import tarfile
import tempfile
from pathlib import Path

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpu-run", type=Path, required=True)
    parser.add_argument("--registry", type=Path, default=Path("models/default"))
    parser.add_argument("--modalities", default="plc,thermal,audio")
    parser.add_argument("--force", action="store_true", help="register even if worse than the registered latest")
    parser.add_argument("--fusion-fpr-budget", type=float, default=0.005)
    parser.add_argument("--fusion-only", action="store_true", help="refit the fusion of the registered models only")
    parser.add_argument("--fusion", action="store_true",
                        help="fit the fusion even when not every modality was packaged in this call (the "
                             "registry's latest models of all three, on this run's validation split)")
    parser.add_argument("--keep-teacher-checkpoint", action="store_true",
                        help="also ship the teacher as a Hugging Face checkpoint (~7 MB per modality)")
    parser.add_argument("--ship-teacher-onnx", action="store_true",
                        help="also write teacher.fp32.onnx into the registry (~7 MB per modality; the teacher is "
                             "evaluated in torch either way, and bench_models_cpu times an ONNX export of its "
                             "architecture when the registry holds none)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    import torch

    from models.config import TrainConfig
    from models.data.domain_data import load_run_data
    from models.training.fitting import FitBundle
    from models.training.train import package

    torch.set_num_threads(1)
    train, unseen = load_run_data(args.gpu_run)
    mods = [] if args.fusion_only else [m.strip() for m in args.modalities.split(",") if m.strip()]
    cards, splits = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for m in mods:
            with tarfile.open(args.gpu_run / f"bundle_{m}.tar.gz") as tar:
                tar.extractall(tmp, filter="data")
            bundle = FitBundle.load(Path(tmp) / m)
            splits[m] = {k: np.asarray(v) for k, v in bundle.split.items()}
            cfg = TrainConfig.model_validate(bundle.config)
            cfg = cfg.model_copy(update={"device": "cpu", "threads": 1, "progress": False,
                                         "save_teacher_checkpoint": args.keep_teacher_checkpoint,
                                         "export_teacher": args.ship_teacher_onnx})
            data = train.samples(m)
            card = package(bundle, data, args.registry, cfg, unseen=unseen.samples(m), force=args.force)
            cards[m] = card
            ev = card.evaluation["test"]["int8_cpu"]
            print(json.dumps({"modality": m, "version": card.version, "kept": card.student["kept"],
                              "test_macro_f1": {r: round(v["macro_f1"], 4) for r, v in card.metrics.items()},
                              "past_moderate_recall": ev["recall_past_moderate"], "healthy_fpr": ev["healthy_fpr"],
                              "forced": card.gates.get("forced")}, default=float), flush=True)
    if args.fusion_only:
        with tempfile.TemporaryDirectory() as tmp, tarfile.open(args.gpu_run / "bundle_audio.tar.gz") as tar:
            tar.extractall(tmp, filter="data")
            splits["audio"] = {k: np.asarray(v) for k, v in FitBundle.load(Path(tmp) / "audio").split.items()}
    if set(mods) == {"plc", "thermal", "audio"} or args.fusion or args.fusion_only:
        first = next(iter(splits.values()))
        if any(not np.array_equal(first[k], sp[k]) for sp in splits.values() for k in first):
            raise RuntimeError("the modalities were trained on different splits: fusion needs one split")
        from models.fusion.report import fit_and_report_fusion

        fit_and_report_fusion(args.registry, train, unseen, first, args.fusion_fpr_budget)


if __name__ == "__main__":
    main()
