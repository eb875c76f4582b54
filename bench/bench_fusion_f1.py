"""Fused macro-F1 against each single modality on the same held-out simulator assets.

The simulator draws a fleet the shipped models never saw (``--seed``, default 2027; the models
were trained on seed 7), renders every fault class for every modality of the same sample, runs
the served models (``services.inference.model.load_served_model``: the registry's verified
INT8 students on ONNX Runtime) and fuses with ``models.fusion.fuse`` and the weights the fusion
service loads. Also reports the fused result with one modality missing (what a silent sensor
costs).

    .venv/bin/python bench/bench_fusion_f1.py --per-class 60 --out bench/results/bench_fusion_f1.json
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_report import emit
from sklearn.metrics import f1_score

from linewatch.service_settings import FusionSettings, InferenceSettings
from linewatch.simulator.config import SimulatorConfig
from models.data.simulated import simulated_samples
from models.fusion import fuse
from models.training.evaluation import past_moderate_mask
from services.fusion.handler import load_weights
from services.inference.model import load_served_model

MODALITIES = ("plc", "thermal", "audio")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-class", type=int, default=60)
    ap.add_argument("--seed", type=int, default=2027)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    t0 = time.time()
    samples = simulated_samples(args.per_class, SimulatorConfig(seed=args.seed), MODALITIES)
    assert all((samples[m].labels == samples["plc"].labels).all() for m in MODALITIES), "modalities not aligned"
    y = samples["plc"].labels
    classes = list(samples["plc"].classes)
    probs: dict[str, np.ndarray] = {}
    refs = {}
    for m in MODALITIES:
        model = load_served_model(InferenceSettings(), m)
        assert model.classes == classes, (model.classes, classes)
        x = samples[m].inputs
        probs[m] = np.concatenate([model.runtime.predict(x[i:i + 64]) for i in range(0, len(x), 64)])
        refs[m] = f"{model.ref.name} {model.ref.version}"
    weights = load_weights(FusionSettings())

    def fused(mods: tuple[str, ...]) -> np.ndarray:
        out = []
        for i in range(len(y)):
            r = fuse({m: dict(zip(classes, probs[m][i].tolist())) for m in mods}, classes=classes, weights=weights,
                     expected=MODALITIES)
            out.append(classes.index(r.label))
        return np.asarray(out)

    scores = {m: f1_score(y, probs[m].argmax(1), average="macro") for m in MODALITIES}
    scores["fused (all three)"] = f1_score(y, fused(MODALITIES), average="macro")
    for missing in MODALITIES:
        mods = tuple(m for m in MODALITIES if m != missing)
        scores[f"fused without {missing}"] = f1_score(y, fused(mods), average="macro")
    best_single = max(scores[m] for m in MODALITIES)
    # The same scores on the samples past moderate severity (plus every healthy one): the models'
    # gates are set there (docs/models.md); a barely developed fault is not yet visible.
    keep = past_moderate_mask(y, samples["plc"].severity, normal=classes.index("normal"))
    past = {m: f1_score(y[keep], probs[m][keep].argmax(1), average="macro") for m in MODALITIES}
    past["fused (all three)"] = f1_score(y[keep], fused(MODALITIES)[keep], average="macro")
    result = {"command": " ".join(sys.argv), "held_out_seed": args.seed, "samples": len(y),
              "per_class": args.per_class, "classes": classes, "models": refs,
              "weights": "default (models/default/fusion.json)" if (REPO / "models/default/fusion.json").is_file()
              else "equal weights (no models/default/fusion.json)",
              "macro_f1": {k: round(float(v), 4) for k, v in scores.items()},
              "fused_minus_best_single": round(float(scores["fused (all three)"] - best_single), 4),
              "macro_f1_past_moderate": {k: round(float(v), 4) for k, v in past.items()},
              "samples_past_moderate": int(keep.sum()),
              "seconds": round(time.time() - t0, 1)}
    emit(result, args.out)


if __name__ == "__main__":
    main()
