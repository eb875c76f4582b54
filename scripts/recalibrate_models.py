"""Re-calibrate the registered students with a false-alarm budget that holds on held-out machines.

    .venv/bin/python scripts/recalibrate_models.py --data DIR --registry models/default \
        [--modalities plc,thermal,audio] [--target 0.01] [--margin 0.0025] [--dry-run] [--force]

``--data`` holds what ``scripts/train_gpu.py`` writes (``data_train_*.npz``, ``data_unseen.npz``);
``--train FILE [--unseen FILE]`` takes :meth:`DomainDataset.save` files instead (e.g. from
``scripts/render_plc_data.py``). The data must be the registered model's (checked by
``models.data.trained_on``: its card's dataset digest, or equal up to float rounding); the grouped
split is recomputed from the card's training config. Per
modality (``models.training.recalibrate``): the validation budget is chosen by grouped
cross-validation over the validation machines (held-out FPR as served ≤ target − margin), the
class shifts and temperature are refitted on validation and appended to the student files, the
test split and the unseen set are scored once, the gates run, and the next version is published.
``--dry-run`` prints the cross-validation table only (validation data only; nothing is scored
on test, nothing is written). Refit the fusion afterwards (``scripts/refit_fusion.py``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np


def load(args: argparse.Namespace):
    from models.data.domain_data import DomainDataset, load_run_data

    if args.data:
        return load_run_data(args.data)
    return DomainDataset.load(args.train), (DomainDataset.load(args.unseen) if args.unseen else None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--data", type=Path)
    src.add_argument("--train", type=Path)
    parser.add_argument("--unseen", type=Path)
    parser.add_argument("--registry", type=Path, default=Path("models/default"))
    parser.add_argument("--modalities", default="plc,thermal,audio")
    parser.add_argument("--target", type=float, default=0.01, help="healthy FPR target (held out, as served)")
    parser.add_argument("--margin", type=float, default=0.0025, help="held-out FPR must be <= target - margin")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--force", action="store_true", help="register even if the no-regression gate fails")
    args = parser.parse_args()
    import torch

    from models.data.samples import grouped_split_indices
    from models.data.trained_on import DataMismatchError, check_trained_on
    from models.export.onnx_export import ort_logits, ort_session
    from models.registry import ModelRegistry
    from models.training.recalibrate import choose_modality_budget, fit_head, publish_recalibrated

    torch.set_num_threads(1)
    train, unseen = load(args)
    registry = ModelRegistry(args.registry)
    for m in [s.strip() for s in args.modalities.split(",") if s.strip()]:
        card = registry.load_card(m)
        data = train.samples(m)
        try:
            check_trained_on(data, card, registry.version_dir(m, card.version))
        except DataMismatchError as e:
            raise SystemExit(str(e)) from None
        cfg = card.training["config"]
        idx = grouped_split_indices(data.groups, cfg["val_fraction"], cfg["test_fraction"], cfg["seed"])
        from models.data.samples import Split

        split = Split(*(data.subset(i) for i in idx))
        val = split.val
        logits = ort_logits(ort_session(registry.latest(m).path()), val.inputs)
        shipped = float(card.probability_calibration["serving"]["max_val_fpr"])
        choice = choose_modality_budget(logits, val, m, args.target, args.margin, shipped, args.folds,
                                        args.repeats)
        print(json.dumps({"modality": m, "registered": card.version, "chosen_budget": choice.budget,
                          "heldout": {f"{h.budget:g}": {"fpr": round(h.fpr, 4), "machines": h.machines_with_false_alarms,
                                                        "macro_f1_past_moderate": round(h.macro_f1_past_moderate, 4),
                                                        "recall": {k: round(v, 3) for k, v in
                                                                   h.recall_past_moderate.items()}}
                                      for h in choice.tried}}), flush=True)
        if args.dry_run:
            continue
        head, info = fit_head(logits, val, choice.budget)
        record = {"budget_choice": choice.to_dict(), "head": info,
                  "fitted_on": f"validation split ({len(val.labels)} samples, "
                               f"{len(set(val.groups.tolist()))} machines)"}
        new = publish_recalibrated(registry, m, head, split, unseen.samples(m) if unseen is not None else None,
                                   record, force=args.force)
        ev = new.evaluation["test"]["int8_cpu"]
        print(json.dumps({"modality": m, "published": new.version, "forced": new.gates["forced"],
                          "test": {"healthy_fpr": ev["healthy_fpr"], "macro_f1_past_moderate":
                                   ev["macro_f1_past_moderate"], "recall": ev["recall_past_moderate"]}},
                         default=float), flush=True)
        np.seterr(all="ignore")


if __name__ == "__main__":
    main()
