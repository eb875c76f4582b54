"""The shipped PLC model on machines whose historian lacks some tags: raw inputs against the healthy fill.

    .venv/bin/python bench/bench_plc_missing_tags.py --out bench/results/plc_missing_tags.json

Renders PLC windows of fresh fleets of our simulator (the training types, seed 4242, and the
unseen types, seed 3131; no model learnt from either) twice: every machine with all seven tags, and
every machine with the tags its historian lacks drawn by :func:`models.data.sensor_fit.absent_tags`
(a fan without a pressure transmitter, a small motor without a winding RTD ...; the same machines,
windows and draws as ``build_domain_dataset(plc_absent_share=1)``). The registered PLC model (INT8, as
served) reads the windows with tags missing two ways:

- ``raw``: the vector as the features job writes it (``missing.*`` 1, the tag's statistics 0), as
  the model read it until 2026-12-06;
- ``filled``: each missing tag's inputs at the median of the model's healthy reference windows
  (:class:`models.missing_tags.HealthyFill`), as ``linewatch inspect`` and the inference service read
  it since.

Either way the classes a missing tag shows are withheld (:func:`models.withheld_classes.withheld_classes`),
cavitation is impossible on a machine that is not a pump, and the PLC names only its visible classes
(``fusion.json``), as ``inspect`` serves it. Reported per fleet: healthy false-alarm rate, recall past
moderate severity (0.5) of each class over the windows that can show it (not withheld), and the share of
windows whose input lies far outside the training range (3 or more inputs more than a quarter of the
reference range outside it: what ``inspect`` flattens in the fused verdict).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

FLEETS = (("train", 240, 4242), ("unseen", 120, 3131))
MODERATE = 0.5


def _chunk(args: tuple[str, int, int, int, list[int]]) -> tuple[list[int], np.ndarray, np.ndarray, list[int]]:
    from linewatch.contract.plc_tags import PLC_TAGS
    from linewatch.simulator.domain import DomainRenderer
    from models.data.domain_data import _wide_rows, domain_world, machine_absent_tags
    from models.data.featurize import plc_input
    from pipeline.features.plc_physics import plc_vector

    domain, n_assets, seed, per_class, indices = args
    fleet, profiles, specs = domain_world(domain, n_assets, seed, per_class)
    renderer = DomainRenderer(fleet, seed)
    full, lacking, n_absent = [], [], []
    for i in indices:
        spec = specs[i]
        ts, wide, bad = _wide_rows(renderer.render(spec, ("plc",)).plc)
        profile = profiles[spec.asset_id]
        full.append(plc_vector(plc_input(ts, wide, bad), profile))
        absent = machine_absent_tags(profile, spec.asset_type, seed, domain, spec.asset_index, 1.0)
        wide = wide.copy()
        for tag in absent:
            wide[:, PLC_TAGS.index(tag)] = np.nan
        lacking.append(plc_vector(plc_input(ts, wide, bad), profile))
        n_absent.append(len(absent))
    return indices, np.stack(full), np.stack(lacking), n_absent


def score_line(r: dict[str, Any]) -> str:
    """One :meth:`ServedPlc.score` result as a line: healthy FPR and each class's recall past moderate."""
    recalls = ", ".join(f"{c} {v['recall']:.3f} ({v['n']})" for c, v in r["recall_past_moderate"].items())
    return f"FPR {100 * r['healthy_fpr']:.2f} % ({r['healthy']}); {recalls}"


def fleet_arguments(doc: str, out: str) -> argparse.Namespace:
    """The options of a bench over our PLC fleets (this one's and ``bench_plc_rounded_temps.py``'s)."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / out)
    ap.add_argument("--per-class", type=int, default=600)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--registry", type=Path, default=None)
    return ap.parse_args()


@dataclass(frozen=True)
class ServedPlc:
    """The registered PLC model as ``inspect`` serves it: its INT8 session, classes, the fusion's
    visible classes and impossible ones, and its healthy fill."""

    model: Any
    session: Any
    classes: list[str]
    visible: list[str]
    fusion: Any
    fill: Any

    def predict(self, raw_x: np.ndarray, model_x: np.ndarray, asset_types: np.ndarray) -> np.ndarray:
        """Class index of each window as ``inspect`` serves the PLC (``model_x`` what the model reads,
        ``raw_x`` the vectors as written): impossible and withheld classes dropped, only the visible ones
        named."""
        from models.runtime.probabilities import softmax
        from models.specs import INPUT_NAME, OUTPUT_NAME
        from models.withheld_classes import withheld_classes

        probs = softmax(self.session.run([OUTPUT_NAME], {INPUT_NAME: model_x.astype(np.float32)})[0])
        out = np.zeros(len(model_x), np.int64)
        for k, (p, t) in enumerate(zip(probs, asset_types, strict=True)):
            keep = dict(zip(self.classes, p.tolist(), strict=True))
            for c in self.fusion.impossible_for(str(t)) | set(withheld_classes("plc", raw_x[k])):
                keep[c] = 0.0
            keep = self.fusion.restrict("plc", keep, self.classes)
            out[k] = int(np.argmax([keep[c] for c in self.classes]))
        return out

    def score(self, pred: np.ndarray, raw: np.ndarray, y: np.ndarray, severity: np.ndarray,
              far: np.ndarray | None = None) -> dict[str, Any]:
        """Healthy FPR and recall past moderate of each visible class over the windows that can show it
        (``far``: which windows the guard calls extrapolating, reported as a share)."""
        from models.withheld_classes import withheld_classes

        healthy = y == 0
        out: dict[str, Any] = {"healthy": int(healthy.sum()),
                               "healthy_fpr": round(float(np.mean(pred[healthy] != 0)), 4)}
        if far is not None:
            out["far_outside_training"] = round(float(np.mean(far)), 3)
        out["recall_past_moderate"] = {}
        for c, name in enumerate(self.classes):
            if c == 0 or name not in self.visible:
                continue
            rows = [k for k in np.flatnonzero((y == c) & (severity >= MODERATE))
                    if name not in withheld_classes("plc", raw[k])]
            if rows:
                out["recall_past_moderate"][name] = {"n": len(rows), "recall": round(float(np.mean(pred[rows] == c)), 3)}
        return out


def served_plc(registry_dir: Path | None) -> ServedPlc:
    import onnxruntime as ort

    from models.fusion import FusionWeights
    from models.missing_tags import HealthyFill
    from models.registry import ModelRegistry, default_registry

    registry = ModelRegistry(registry_dir) if registry_dir else default_registry()
    fusion = FusionWeights.load(registry.root / "fusion.json")
    model = registry.latest("plc")
    classes = list(model.card.classes)
    fill = HealthyFill.of_model(model)
    assert fill is not None, "the PLC model has no reference sample to fill from"
    return ServedPlc(model, ort.InferenceSession(str(model.path()), providers=["CPUExecutionProvider"]), classes,
                     list(fusion.visible.get("plc", classes)), fusion, fill)


def rendered(chunk: Callable[[tuple], tuple], domain: str, n_assets: int, seed: int, per_class: int,
             workers: int) -> tuple[list, list[tuple]]:
    """The specs of fleet ``(domain, n_assets, seed)`` and ``chunk``'s output over them, 200 windows a task."""
    from models.data.domain_data import _chunks, domain_world

    _, _, specs = domain_world(domain, n_assets, seed, per_class)
    tasks = [(domain, n_assets, seed, per_class, c) for c in _chunks(specs, 200)]
    with ProcessPoolExecutor(workers) as pool:
        return specs, list(pool.map(chunk, tasks))


def main() -> None:
    args = fleet_arguments(__doc__, "bench/results/plc_missing_tags.json")
    from models.training_range import OUT_OF_RANGE_WARN, TrainingRange

    t0 = time.time()
    served = served_plc(args.registry)
    model, classes, fill = served.model, served.classes, served.fill
    rng = TrainingRange.of_model(model)
    if rng is None:
        raise SystemExit(f"plc {model.version} has no reference sample of training inputs: nothing to measure against")

    def far(x: np.ndarray) -> np.ndarray:
        """Windows ``inspect``'s guard calls extrapolating (Inspector.outside_training, on ``x`` as given)."""
        return rng.outside(x).sum(axis=1) >= OUT_OF_RANGE_WARN

    result: dict[str, Any] = {"command": " ".join([".venv/bin/python", "bench/bench_plc_missing_tags.py", *sys.argv[1:]]),
                              "machine": {"platform": platform.platform(), "cpus": 2},
                              "model": f"plc {model.version} ({model.card.serving_role})", "fleets": {}}
    for domain, n_assets, seed in FLEETS:
        specs, parts = rendered(_chunk, domain, n_assets, seed, args.per_class, args.workers)
        n = len(specs)
        full = np.zeros((n, parts[0][1].shape[1]), np.float32)
        lacking = np.zeros_like(full)
        n_absent = np.zeros(n, np.int64)
        for idx, f, miss, k in parts:
            full[idx], lacking[idx], n_absent[idx] = f, miss, k
        y = np.array([classes.index(s.fault) for s in specs])
        severity = np.array([s.severity for s in specs], np.float32)
        types = np.array([s.asset_type for s in specs])
        filled = np.stack([fill.apply(x) for x in lacking])
        some = n_absent > 0
        runs = {"all tags": (full, full, np.ones(n, bool)), "tags missing, raw": (lacking, lacking, some),
                "tags missing, filled": (lacking, filled, some)}
        fleet: dict[str, Any] = {"windows": n, "machines": n_assets, "windows_with_a_tag_missing": int(some.sum())}
        for name, (raw_x, model_x, rows) in runs.items():
            pred = served.predict(raw_x[rows], model_x[rows], types[rows])
            fleet[name] = served.score(pred, raw_x[rows], y[rows], severity[rows], far(model_x[rows]))
        result["fleets"][f"{domain} (seed {seed})"] = fleet
    result["seconds"] = round(time.time() - t0, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    for fleet_name, fleet in result["fleets"].items():
        print(f"{fleet_name}: {fleet['windows']} windows, {fleet['windows_with_a_tag_missing']} with a tag missing")
        for name in ("all tags", "tags missing, raw", "tags missing, filled"):
            r = fleet[name]
            print(f"  {name:22s} {score_line(r)}; far outside {100 * r['far_outside_training']:.1f} %")
    print(f"{result['seconds']:.0f} s; {args.out}")


if __name__ == "__main__":
    main()
