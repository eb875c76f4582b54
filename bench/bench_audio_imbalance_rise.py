"""A raised 1x against the machine's own healthy sound: where the audio model's imbalance stops.

    .venv/bin/python bench/bench_audio_imbalance_rise.py --out bench/results/audio_imbalance_rise.json \
        [--foreign-report R.json --foreign-data DIR]

With a baseline of the machine's healthy sound (the job's learnt levels, or a commissioning recording
given to ``linewatch inspect --healthy-audio``) the audio vector holds the rise of each shaft harmonic
over it (``baseline.shaft.{k}x.delta_db``, dB; :mod:`pipeline.features.audio_baseline`). An imbalance
raises the 1x. This bench reads, per clip, the 1x rise and the shipped audio model's verdict, and
what a rule ``1x rise >= T dB rules normal out`` (:data:`models.ruled_out.AUDIO_1X_RISE_DB`) would add:

* **our fleets**: every sample of ``--assets`` machines of the training domain (seed ``--seed``) and
  of the unseen-type domain (seed ``--unseen-seed``), no model trained on either, each read against
  two baselines of its machine: the job's (``learned_audio_baseline``: 8 healthy clips at the
  operating points of the machine's drawn samples, as the models' training data learn it) and a
  commissioning recording (4 healthy 1 s clips at one operating point, 80 % load, as
  ``inspect --healthy-audio`` reads a 4 s recording); a clip whose speed lies outside what its baseline
  covers is read without it (the speed rule, as served);
* **another generator's** (``--foreign-report`` / ``--foreign-data``: the report and ``--data`` folder
  of ``bench/bench_foreign_fleet.py`` run with ``--healthy-audio ref``): every healthy and faulty
  recording read with its machine's commissioning recording as ``linewatch inspect`` reads it, with the
  served verdict of the report beside it.

Reported per fleet and baseline: the 1x rise by class (percentiles; clips the rule reads: with a
baseline, not on a drive), per T in 0.5 dB steps the clips at or above it and the verdicts the rule
changes, per class, and the served imbalance recall past moderate (severity >= 0.5) and healthy
false-positive rate without the rule, with it at each T and at the shipped T (the served verdicts of the
shipped INT8 audio model, classes the machine cannot have masked, restricted to what audio names,
withheld classes dropped). On our fleets the bench also selects T (``selected_db``, :func:`select_rise`).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

CLASSES = ("normal", "bearing_wear", "electrical_overheating", "cooling_failure", "imbalance", "cavitation")
STEPS = tuple(float(t) for t in np.arange(4.0, 12.01, 0.5))


def _our_rows(job: tuple[str, int, int, int, list[int]]) -> list[dict]:
    """Per sample of the machines ``asset_indices``: the audio vector against each baseline."""
    from linewatch.simulator.domain import DomainRenderer
    from linewatch.simulator.noise import make_rng
    from models.data.domain_data import domain_world, learned_audio_baseline
    from pipeline.features.asset_profile import RECIPROCATING_STAT
    from pipeline.features.audio_physics import AudioInputError, audio_vector

    domain, n_assets, seed, per_class, asset_indices = job
    fleet, profiles, specs = domain_world(domain, n_assets, seed, per_class)
    renderer = DomainRenderer(fleet, seed)
    rows = []
    for a in asset_indices:
        mine = [s for s in specs if s.asset_index == a]
        if not mine:
            continue
        profile = profiles[mine[0].asset_id]
        rng = make_rng(seed, "bench-imbalance-rise", domain, a)
        job_levels = learned_audio_baseline(renderer, mine[0], mine, profile, rng, 8, 80_000_000 + a * 100)
        visit = replace(mine[0], load_level=0.8, fault="normal", physical_fault="normal", severity=0.0, variant="",
                        drift="none", drift_level=0.0)
        commissioning = learned_audio_baseline(renderer, visit, [visit], profile, rng, 4, 85_000_000 + a * 100)
        for spec in mine:
            clip = renderer.render(spec, ("audio",)).clip.astype(np.float32) / 32768.0
            try:
                vectors = {name: audio_vector(clip, 16_000, profile, None, levels)
                           for name, levels in (("job", job_levels), ("commissioning", commissioning))}
            except AudioInputError:
                continue
            rows.append({"fault": spec.fault, "severity": float(spec.severity), "variant": spec.variant,
                         "asset_type": spec.asset_type, "drive": bool(profile.vfd), "asset_id": spec.asset_id,
                         "stats": {RECIPROCATING_STAT: float(profile.reciprocating)}, "vectors": vectors})
    return rows


def _our_fleet(domain: str, n_assets: int, seed: int, per_class: int, workers: int) -> list[dict]:
    from multiprocessing import Pool

    jobs = [(domain, n_assets, seed, per_class, list(range(k, n_assets, 8))) for k in range(8)]
    with Pool(workers) as pool:
        return [row for part in pool.map(_our_rows, jobs) for row in part]


def _foreign_rows(report: Path, data: Path) -> list[dict]:
    """The other generator's recordings read with their machine's commissioning recording, as
    ``linewatch inspect --healthy-audio`` reads them; the report's served verdict beside each."""
    from models.inspect.readers import load_assets, read_wav
    from models.inspect.scoring import Inspector
    from pipeline.features.messages import audio_features_message

    rep = json.loads(report.read_text())
    if not any("audio@ref" in r for r in rep["records"]):
        raise SystemExit(f"{report} holds no run with a commissioning recording: run bench_foreign_fleet.py "
                         "with --healthy-audio ref (or both) and give its report and --data folder")
    profiles = load_assets(data / "assets.json")
    inspector = Inspector(assets=profiles)
    references = sorted((data / "reference").glob("*.wav"))
    baselines = {aid: inspector.audio_baselines([p for p in references if inspector.asset_of(p) == aid], aid).get(aid)
                 for aid in sorted({r["asset_id"] for r in rep["records"]})}
    rows = []
    for r in rep["records"]:
        aid = r["asset_id"]
        levels = baselines[aid]
        x, rate = read_wav(data / "files" / r["wav"], [])
        profile = inspector.profile(aid, [])
        msg = audio_features_message(aid, profile.asset_type, 0, x, rate, profile, shaft_hz=None, source=aid,
                                     baseline_db=levels)
        rows.append({"fault": r["cls"], "severity": float(r["severity"]), "variant": "",
                     "asset_type": profile.asset_type or "", "drive": bool(rep["machines"][aid].get("vfd")),
                     "asset_id": aid,
                     "served": r["audio@ref"]["class"], "stats": dict(msg.stats),
                     "vectors": {"commissioning": np.asarray(msg.vector, np.float32)}})
    return rows


def _served(rows: list[dict], baseline: str, registry: Path) -> np.ndarray:
    """The shipped INT8 audio model's probabilities as served (machine's impossible classes masked,
    restricted to what audio names; withheld classes dropped: no baseline, a reciprocating machine, a
    clip recorded below 16 kHz)."""
    from models.export.onnx_export import ort_logits, ort_session
    from models.fusion.fit import restrict_arrays
    from models.fusion.log_linear import FusionWeights
    from models.registry import ModelRegistry
    from models.training.calibration import softmax
    from models.training.evaluation import apply_mask, possible_mask
    from models.withheld_classes import drop_withheld, withheld_classes

    weights = FusionWeights.load(registry / "fusion.json")
    session = ort_session(ModelRegistry(registry).latest("audio").path("student_int8_cpu"))
    x = np.stack([r["vectors"][baseline] for r in rows]).astype(np.float32)
    types = np.array([r["asset_type"] for r in rows])
    p = restrict_arrays({"audio": apply_mask(softmax(ort_logits(session, x)), possible_mask(types, CLASSES))},
                        weights.visible, CLASSES)["audio"]
    out = np.zeros_like(p)
    for i in range(len(p)):
        q = drop_withheld(dict(zip(CLASSES, p[i].tolist(), strict=True)),
                          withheld_classes("audio", x[i], rows[i]["stats"]), CLASSES)
        out[i] = [q[c] for c in CLASSES]
    return out


def select_rise(tables: list[dict]) -> float | None:
    """The smallest step of :data:`STEPS` at which, in every table (``changed``: per step, per class or
    ``cooling_failure/<variant>``, the clips whose served verdict the rule changes), the rule changes no
    verdict but of an imbalance or of a cooling failure by a broken fan blade (a rotor imbalance itself):
    it calls no healthy clip faulty and names imbalance on no clip of another fault that audio had
    called normal. (The rule only rules ``normal`` out: a clip already called a fault keeps its label.)"""
    def clean(row: dict) -> bool:
        return all(v == 0 for k, v in row.items() if k not in ("imbalance", "cooling_failure/broken_fan"))
    for t in STEPS:
        if all(clean(table[f"{t:.1f}"]) for table in tables):
            return t
    return None


def summarise(rows: list[dict], baseline: str, registry: Path, shipped_db: float) -> dict:
    from models.ruled_out import raised_one_x, rule_out
    from pipeline.features.audio_physics import AUDIO_VECTOR_NAMES

    one_x = AUDIO_VECTOR_NAMES.index("baseline.shaft.1x.delta_db")
    avail = AUDIO_VECTOR_NAMES.index("baseline.available")
    x = np.stack([r["vectors"][baseline] for r in rows])
    fault = np.array([r["fault"] for r in rows])
    kind = np.array([f"{r['fault']}/{r['variant']}" if r["fault"] == "cooling_failure" else r["fault"] for r in rows])
    sev = np.array([r["severity"] for r in rows])
    read = x[:, avail] >= 0.5
    drive = x[:, AUDIO_VECTOR_NAMES.index("flag.vfd")] >= 0.5
    ruled = read & ~drive  # the clips the rule reads (models.ruled_out.raised_one_x: not on a drive)
    rise = x[:, one_x]
    p = _served(rows, baseline, registry)
    before = np.array([CLASSES[i] for i in p.argmax(1)])

    def with_rule(t: float) -> np.ndarray:
        labels = before.copy()
        for i in range(len(rows)):
            if raised_one_x(x[i], t):
                q = rule_out(dict(zip(CLASSES, p[i].tolist(), strict=True)), ("normal",), CLASSES)
                labels[i] = max(q, key=q.get)
        return labels

    healthy, imb = fault == "normal", (fault == "imbalance") & (sev >= 0.5)
    out: dict = {"clips": int(len(rows)), "read_with_baseline": int(read.sum()), "read_by_the_rule": int(ruled.sum()),
                 "rise_by_class": {}, "at_or_above": {}, "at_or_above_on_drives": {}}
    for c in sorted(set(kind)):
        m = ruled & (kind == c)
        if m.any():
            out["rise_by_class"][c] = {"n": int(m.sum()), **{f"p{q}": round(float(np.percentile(rise[m], q)), 2)
                                                             for q in (50, 90, 99, 100)}}
    for t in STEPS:
        out["at_or_above"][f"{t:.1f}"] = {c: int(np.sum(ruled & (kind == c) & (rise >= t))) for c in sorted(set(kind))}
        out["at_or_above_on_drives"][f"{t:.1f}"] = {c: int(np.sum(read & drive & (kind == c) & (rise >= t)))
                                                    for c in sorted(set(kind))}

    def served(labels: np.ndarray, mask: np.ndarray | None = None) -> dict:
        mask = np.ones(len(rows), bool) if mask is None else mask
        h, f = healthy & mask, imb & mask & read
        return {"imbalance_recall_past_moderate": round(float(np.mean(labels[f] == "imbalance")), 4) if f.any() else None,
                "n_imbalance_past_moderate": int(f.sum()),
                "healthy_fpr": round(float(np.mean(labels[h] != "normal")), 4) if h.any() else None,
                "n_healthy": int(h.sum()),
                "other_faults_called_imbalance": int(np.sum(mask & ~healthy & (fault != "imbalance")
                                                            & (labels == "imbalance")))}

    out["outliers"] = [{"fault": str(kind[i]), "severity": round(float(sev[i]), 3), "asset_id": rows[i]["asset_id"],
                        "asset_type": rows[i]["asset_type"], "drive": rows[i]["drive"], "rise_db": round(float(rise[i]), 2),
                        "shaft_hz": round(float(x[i, AUDIO_VECTOR_NAMES.index("speed.shaft_hz")]), 2),
                        "served": str(before[i])}
                       for i in np.flatnonzero(read & (fault != "imbalance") & (rise >= 6.0))]  # drives too
    out["served_without_rule"] = served(before)
    out["served_with_rule"], out["changed"] = {}, {}
    for t in STEPS:
        labels = with_rule(t)
        out["served_with_rule"][f"{t:.1f}"] = served(labels)
        out["changed"][f"{t:.1f}"] = {c: int(np.sum((kind == c) & (labels != before))) for c in sorted(set(kind))}
    shipped = with_rule(shipped_db)
    out["served_shipped_rule"] = {"rule_db": shipped_db, **served(shipped), "changed": int(np.sum(before != shipped))}
    if "drive" in rows[0]:
        fixed = ~np.array([r["drive"] for r in rows])
        out["served_fixed_speed"] = {"without_rule": served(before, fixed), "with_shipped_rule": served(shipped, fixed)}
    if "served" in rows[0]:  # the report's own verdicts (inspect with this code: the rule at the shipped step)
        out["agreement_with_report"] = round(float(np.mean(np.array([r["served"] for r in rows]) == shipped)), 4)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--assets", type=int, default=200)
    parser.add_argument("--per-class", type=int, default=300)
    parser.add_argument("--seed", type=int, default=5151, help="a training-domain seed no training run used")
    parser.add_argument("--unseen-seed", type=int, default=3102)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--registry", type=Path, default=Path("models/default"))
    parser.add_argument("--foreign-report", type=Path, default=None)
    parser.add_argument("--foreign-data", type=Path, default=None)
    parser.add_argument("--skip-ours", action="store_true", help="only the other generator's fleet")
    parser.add_argument("--out", type=Path, default=Path("bench/results/audio_imbalance_rise.json"))
    args = parser.parse_args()

    from models.ruled_out import AUDIO_1X_RISE_DB

    t0 = time.perf_counter()
    result: dict = {"command": " ".join([Path(sys.executable).name, *sys.argv]), "host": platform.node(),
                    "cpus": __import__("os").cpu_count(), "rule_db": AUDIO_1X_RISE_DB, "fleets": {}}
    if not args.skip_ours:
        for name, domain, seed in (("train", "train", args.seed), ("unseen", "unseen", args.unseen_seed)):
            rows = _our_fleet(domain, args.assets, seed, args.per_class, args.workers)
            result["fleets"][f"{name}_{seed}"] = {b: summarise(rows, b, args.registry, AUDIO_1X_RISE_DB)
                                                  for b in ("job", "commissioning")}
            print(name, json.dumps(result["fleets"][f"{name}_{seed}"]["commissioning"]["served_shipped_rule"]), flush=True)
        result["selected_db"] = select_rise([f[b]["changed"] for f in result["fleets"].values()
                                             for b in ("job", "commissioning")])
        print("selected rise (dB):", result["selected_db"], "shipped:", AUDIO_1X_RISE_DB, flush=True)
    if args.foreign_report is not None and args.foreign_data is not None:
        rows = _foreign_rows(args.foreign_report, args.foreign_data)
        result["fleets"]["foreign"] = {"report": str(args.foreign_report),
                                       "commissioning": summarise(rows, "commissioning", args.registry, AUDIO_1X_RISE_DB)}
        print("foreign", json.dumps(result["fleets"]["foreign"]["commissioning"]["served_shipped_rule"]), flush=True)
    result["seconds"] = round(time.perf_counter() - t0, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    print(f"{result['seconds']} s; report {args.out}")


if __name__ == "__main__":
    main()
