"""Fitting the shipped fusion on the validation split and reporting it on test / unseen.

:func:`fit_and_report_fusion` (used by ``scripts/package_models.py`` and
``scripts/refit_fusion.py``): the registry's latest serving models score every sample, the fusion
is fitted on the validation split's probabilities and written to ``<registry>/fusion.json``; the
fused evaluation on test and unseen (all modalities and every subset, the ECE with and without the
fitted temperature) goes to ``fusion_report.json``, ``fusion_recall_vs_severity.png`` and
``fusion_reliability.png``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

CLASSES_IMPOSSIBLE = {"pump": [], "*": ["cavitation"]}


def possible_classes(classes: tuple[str, ...]):
    """``types -> (N, C) bool``: cavitation only where the type names a pump (as in package_models)."""

    def possible(types: np.ndarray) -> np.ndarray:
        mask = np.ones((len(types), len(classes)), bool)
        mask[:, classes.index("cavitation")] = np.array(["pump" in t for t in types])
        return mask

    return possible


def visible_classes() -> dict[str, list[str]]:
    from models.training.evaluation import VISIBLE_CLASSES

    return {m: list(VISIBLE_CLASSES[m]) for m in ("plc", "thermal", "audio")}


def serving_probs(registry_dir: Path, ds, idx) -> dict[str, np.ndarray]:
    """The latest serving model's softmax of every modality for the rows ``idx`` of ``ds`` (None: all)."""
    from models.export.onnx_export import ort_logits, ort_session
    from models.registry import ModelRegistry
    from models.training.calibration import softmax

    registry = ModelRegistry(registry_dir)
    out = {}
    for m in ("plc", "thermal", "audio"):
        x = getattr(ds, m)[idx] if idx is not None else getattr(ds, m)
        out[m] = softmax(ort_logits(ort_session(registry.latest(m).path()), x.astype(np.float32)))
    return out


def serving_withheld(ds, idx, classes) -> dict[str, np.ndarray]:
    """``{modality: (N, C) bool}``: the classes each input of the rows ``idx`` of ``ds`` (None: all)
    cannot show (:mod:`models.withheld_classes`), as the services and ``linewatch inspect`` honour them."""
    from models.withheld_classes import withheld_rows

    return {m: withheld_rows(m, getattr(ds, m)[idx] if idx is not None else getattr(ds, m), tuple(classes))
            for m in ("plc", "thermal", "audio")}


def fit_and_report_fusion(registry_dir: Path, train, unseen, split: dict, budget: float,
                          record: dict | None = None) -> dict:
    """Fusion weights on validation at ``budget``, fused metrics on test and unseen; ``record``
    (how the budget was chosen) goes into the report."""
    from dataclasses import replace

    from models.fusion.fit import fit_fused_temperature, fit_fusion, fuse_arrays
    from models.training.calibration import reliability_png
    from models.registry import ModelRegistry
    from models.training.evaluation import evaluate, severity_curves_png

    registry = ModelRegistry(registry_dir)
    classes = tuple(train.classes)
    impossible = CLASSES_IMPOSSIBLE
    possible = possible_classes(classes)

    def probs(ds, idx) -> dict[str, np.ndarray]:
        return serving_probs(registry_dir, ds, idx)

    visible = visible_classes()
    val = split["val"]
    val_probs, val_blind = probs(train, val), serving_withheld(train, val, classes)
    weights = fit_fusion(val_probs, train.y[val], classes, budget, possible(train.asset_types[val]), impossible,
                         visible, val_blind)
    untempered = weights
    weights = replace(weights, temperature=round(fit_fused_temperature(
        val_probs, weights, train.y[val], classes, possible(train.asset_types[val]), val_blind), 4))
    (registry_dir / "fusion.json").write_text(json.dumps(weights.to_json(), indent=1) + "\n")
    report = {"fitted_on": "validation split (INT8 serving models' probabilities, withheld classes honoured)",
              "fpr_budget": budget,
              "models": {m: registry.latest(m).version for m in ("plc", "thermal", "audio")},
              **({"budget_choice": record} if record is not None else {}),
              "weights": weights.to_json(),
              "temperature": {"value": weights.temperature, "fitted_on": "validation NLL of the fused distribution, "
                              "pooled over every subset of the modalities (models.fusion.fit.fit_fused_temperature)"}}
    evals = {}
    for name, ds, idx in (("test", train, split["test"]), ("unseen", unseen, None)):
        y = ds.y[idx] if idx is not None else ds.y
        sev = ds.severity[idx] if idx is not None else ds.severity
        types = ds.asset_types[idx] if idx is not None else ds.asset_types
        p = probs(ds, idx)
        blind = serving_withheld(ds, idx, classes)
        fused = fuse_arrays(p, weights, classes, possible(types), blind)
        evals[name] = evaluate(fused, y, sev, classes)
        report[name] = evals[name].to_dict()
        report[name]["ece_untempered"] = evaluate(fuse_arrays(p, untempered, classes, possible(types), blind), y, sev,
                                                  classes).ece
        if name == "test":
            reliability_png(fused, y, registry_dir / "fusion_reliability.png",
                            f"fused verdict, test split (temperature {weights.temperature:.2f})")
        from itertools import combinations

        from models.fusion.fit import restrict_arrays

        report[name]["subsets"] = {}
        for k in (1, 2):
            for subset in combinations(("audio", "plc", "thermal"), k):
                some = {m: p[m] for m in subset}
                ev = evaluate(fuse_arrays(some, weights, classes, possible(types), blind), y, sev, classes)
                report[name]["subsets"]["+".join(subset)] = {
                    "macro_f1_past_moderate": ev.macro_f1_past_moderate, "healthy_fpr": ev.healthy_fpr,
                    "recall_past_moderate": ev.recall_past_moderate, "ece": ev.ece,
                    "ece_untempered": evaluate(fuse_arrays(some, untempered, classes, possible(types), blind), y, sev,
                                               classes).ece}
        report[name]["per_modality_macro_f1_past_moderate"] = {
            m: evaluate(v, y, sev, classes).macro_f1_past_moderate
            for m, v in restrict_arrays(p, visible, classes).items()}
    report["unseen_drop_points"] = 100 * (evals["test"].macro_f1_past_moderate - evals["unseen"].macro_f1_past_moderate)
    (registry_dir / "fusion_report.json").write_text(json.dumps(report, indent=1, default=float) + "\n")
    severity_curves_png({f"{k} split": v for k, v in evals.items()}, registry_dir / "fusion_recall_vs_severity.png",
                        "fused verdict (all modalities of a machine): recall vs fault severity")
    print(json.dumps({"temperature": weights.temperature,
                      "fusion": {k: {"macro_f1_past_moderate": v.macro_f1_past_moderate, "healthy_fpr": v.healthy_fpr,
                                     "ece": v.ece, "ece_untempered": report[k]["ece_untempered"],
                                     "recall": v.recall_past_moderate} for k, v in evals.items()},
                      "drop": report["unseen_drop_points"]}, default=float), flush=True)
    return report
