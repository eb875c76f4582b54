"""Refit the fusion of the registry's latest models: budget by grouped cross-validation, then fit and report.

    .venv/bin/python scripts/refit_fusion.py --data DIR --registry models/default \
        [--target 0.01] [--margin 0.0025] [--folds 5] [--repeats 1] [--budget B] [--dry-run]

Run it whenever a modality's serving model changes (a new audio model, a re-calibration): the
fusion's weights, offsets and normal prior are fitted to the models' validation probabilities.
``DIR`` holds what ``scripts/train_gpu.py`` writes (the v4 dataset: ``data_train_*.npz``,
``data_unseen.npz``); every modality's data is checked against its card's training data
(``models.data.trained_on``: the dataset digest, or up to float rounding) and the grouped split
is recomputed from the card's training config. The fused budget is the largest of
``models.training.crossval.BUDGET_GRID`` whose held-out healthy FPR (every modality present, folds
of validation machines) is ≤ target − margin (``models.fusion.crossval``); ``--budget`` skips the
search. Then ``models.fusion.report.fit_and_report_fusion`` fits on the whole validation split,
writes ``fusion.json`` and scores test / unseen into ``fusion_report.json`` (with the choice).
``--dry-run`` prints the cross-validation only (validation data only). ``--rerendered``: the data
is the same fleets and samples rendered by a changed simulator (e.g. after a physics fix, with one
modality retrained on it): the other modalities' data is accepted on its counts and reported.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--registry", type=Path, default=Path("models/default"))
    parser.add_argument("--target", type=float, default=0.01)
    parser.add_argument("--margin", type=float, default=0.0025)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--budget", type=float, default=None, help="use this budget (no cross-validated search)")
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--rerendered", action="store_true",
                        help="the data is the cards' fleets and samples (same seeds, counts and grouped split) "
                             "rendered by a changed simulator: a modality whose rows differ from its training data "
                             "is accepted on its sample and class counts, and reported")
    args = parser.parse_args()
    from models.data.domain_data import load_run_data
    from models.data.samples import grouped_split_indices
    from models.data.trained_on import DataMismatchError, check_trained_on
    from models.fusion.crossval import choose_fusion_budget
    from models.fusion.report import (
        CLASSES_IMPOSSIBLE,
        fit_and_report_fusion,
        possible_classes,
        serving_probs,
        serving_withheld,
        visible_classes,
    )
    from models.registry import ModelRegistry

    train, unseen = load_run_data(args.data)
    registry = ModelRegistry(args.registry)
    configs = []
    for m in ("plc", "thermal", "audio"):
        card = registry.load_card(m)
        try:
            how = check_trained_on(train.samples(m), card, registry.version_dir(m, card.version),
                                   rerendered=args.rerendered)
        except DataMismatchError as e:
            raise SystemExit(str(e)) from None
        if how.startswith("re-rendered"):
            print(f"{m}: the data is {card.version}'s fleet and samples {how} (--rerendered: the same machines, "
                  f"the same grouped split)", flush=True)
        elif how != "digest":
            print(f"{m}: the data is {card.version}'s training data up to float rounding (digest differs, "
                  f"every reference row found)", flush=True)
        configs.append(tuple(card.training["config"][k] for k in ("val_fraction", "test_fraction", "seed")))
    if len(set(configs)) != 1:
        raise SystemExit("the modalities were trained on different splits: fusion needs one split")
    tr, va, te = grouped_split_indices(train.groups, *configs[0])
    split = {"train": tr, "val": va, "test": te}
    record = None
    budget = args.budget
    if budget is None:
        probs = serving_probs(args.registry, train, va)
        possible = possible_classes(train.classes)(train.asset_types[va])
        budget, tried = choose_fusion_budget(probs, train.y[va], train.severity[va], train.groups[va], train.classes,
                                             possible, CLASSES_IMPOSSIBLE, visible_classes(), args.target, args.margin,
                                             k=args.folds, repeats=args.repeats,
                                             withheld=serving_withheld(train, va, train.classes))
        record = {"target": args.target, "margin": args.margin, "folds": args.folds, "repeats": args.repeats,
                  "budget": budget, "tried": [h.to_dict() for h in tried]}
        for h in tried:
            a = h.all_modalities
            print(json.dumps({"budget": h.budget, "heldout_fpr_all_modalities": round(a.fpr, 4),
                              "machines_with_false_alarms": a.machines_with_false_alarms,
                              "macro_f1_past_moderate": round(a.macro_f1_past_moderate, 4),
                              "recall": {k: round(v, 3) for k, v in a.recall_past_moderate.items()},
                              "heldout_fpr_subsets": {k: round(v, 4) for k, v in h.subsets_fpr.items()}}), flush=True)
        print(json.dumps({"chosen_budget": budget}), flush=True)
    if not args.dry_run:
        fit_and_report_fusion(args.registry, train, unseen, split, budget, record)
    np.seterr(all="ignore")


if __name__ == "__main__":
    main()
