"""Audio on our drive machines, with and without reading the drive's PWM carrier (2026-12-05).

    .venv/bin/python bench/bench_audio_drive_carrier.py --out bench/results/audio_drive_carrier.json

A drive's PWM carrier f_c has sidebands at f_c +- 2 f_e. Since 2026-12-05 the audio vector reads f_e
off them (:func:`pipeline.features.audio_physics.drive_supply_hz`): without a measured speed the
shaft is taken where the supply puts it (:func:`speed_at_supply`), and the supply's lines at
2k f_e are notched out of the envelope spectra of the bands that hold the carrier before the
bearing combs read them (:func:`supply_lines`). The other generator's drives (``bench/bench_foreign_fleet.py``) showed
both: speeds read at twice the truth, and 6-pole drives whose 2 f_e sits on a 6204 bearing's
2 x BPFO called worn when healthy.

This bench measures what the change does on **our simulator's drive machines** (fresh fleets of
the training types and of the unseen types, seeds no training run used, only machines with
``"vfd": true``; 60 % of them have a carrier, at 2, 4, 5 or 8 kHz, the last above what a 16 kHz
clip holds): every clip's audio vector is computed both ways (``drive_carrier`` of
``_segment_vector``) and scored by the shipped INT8 audio model as ``linewatch inspect`` reads a
single file (no learned baseline: imbalance withheld; classes the machine cannot have masked;
the fusion's visible classes), once without a speed (a file alone) and once with the true speed
as a PLC gives it (the live line: only the notch can change anything there). Reported per fleet:
healthy false-positive rate, bearing-wear and cavitation recall past moderate severity (>= 0.5),
the share of clips whose speed is more than 4 % off, and the share whose carrier was found.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

FLEETS = (("train", 300, 5101), ("unseen", 120, 5102))  # (domain, machines, seed): no training run used these
CLASSES_KEPT = ("normal", "bearing_wear", "cavitation")
WRONG = 0.04  # a speed this far off counts as wrong (the fault combs' tolerance is -4 ... +2 %)


def _render(job: tuple[str, int, int, int, list[int]]) -> list[dict[str, Any]]:
    """Worker: the drive clips of ``indices``, each featurised with and without the carrier reading."""
    from domain_clips import rendered_clips
    from pipeline.features import audio_physics as ap

    speed = ap.AUDIO_CLIP_NAMES.index("speed.shaft_hz")
    out = []
    for spec, asset, profile, true_hz, clip in rendered_clips(*job):
        row: dict[str, Any] = {"fleet": job[0], "asset_id": spec.asset_id, "cls": spec.fault,
                               "severity": float(spec.severity), "asset_type": profile.asset_type,
                               "true_hz": true_hz, "carrier_hz": float(asset.extra.get("pwm_carrier_hz", 0.0))}
        x = ap.resample_to_16k(clip, 16_000)
        pairs = ap.supply_pole_pairs(profile)
        row["carrier_found"] = bool(pairs and ap.drive_supply_hz(
            (x - x.mean()).astype(np.float64), ap.supply_range_hz(profile, None, pairs)))
        for way, carrier in (("before", False), ("after", True)):
            for hint_name, hint in (("no_speed", None), ("plc_speed", true_hz)):
                seg = partial(ap._segment_vector, drive_carrier=carrier)
                raw = ap.median_over_segments(clip, 16_000, profile, hint, seg)
                row[f"{way}/{hint_name}"] = ap.finish_audio_vector(raw).tolist()
                row[f"{way}/{hint_name}/speed_hz"] = float(raw[speed]) * 60.0
        out.append(row)
    return out


def clips(per_class: int, workers: int) -> list[dict[str, Any]]:
    from models.data.domain_data import domain_world

    jobs = []
    for domain, n_assets, seed in FLEETS:
        _, profiles, specs = domain_world(domain, n_assets, seed, per_class)
        keep = [i for i, s in enumerate(specs) if profiles[s.asset_id].vfd and s.fault in CLASSES_KEPT]
        jobs += [(domain, n_assets, seed, per_class, c.tolist()) for c in np.array_split(np.array(keep), 6 * workers)
                 if len(c)]
    with ProcessPoolExecutor(workers) as pool:
        return [c for part in pool.map(_render, jobs) for c in part]


def score(rows: list[dict[str, Any]], key: str) -> tuple[np.ndarray, tuple[str, ...]]:
    """Class probabilities of the shipped INT8 audio model as ``linewatch inspect`` serves a file."""
    from models.export.onnx_export import ort_logits, ort_session
    from models.fusion import FusionWeights
    from models.fusion.fit import restrict_arrays
    from models.registry import ModelRegistry
    from models.training.calibration import softmax
    from models.training.evaluation import apply_mask, possible_mask
    from models.withheld_classes import drop_withheld_rows, withheld_rows

    registry = ModelRegistry(ROOT / "models" / "default")
    model = registry.latest("audio")
    classes = tuple(model.card.classes)
    weights = FusionWeights.load(ROOT / "models" / "default" / "fusion.json")
    x = np.asarray([r[key] for r in rows], np.float32)
    possible = possible_mask(np.array([r["asset_type"] for r in rows]), classes)
    p = apply_mask(softmax(ort_logits(ort_session(model.path("student_int8_cpu")), x)), possible)
    return drop_withheld_rows(restrict_arrays({"audio": p}, weights.visible, classes)["audio"],
                              withheld_rows("audio", x, classes)), classes


def metrics(rows: list[dict[str, Any]], key: str) -> dict[str, Any]:
    probs, classes = score(rows, key)
    named = [classes[i] for i in np.argmax(probs, axis=1)]
    out: dict[str, Any] = {}
    healthy = [n for r, n in zip(rows, named, strict=True) if r["cls"] == "normal"]
    out["healthy_fpr"] = {"k": sum(n != "normal" for n in healthy), "n": len(healthy)}
    for cls in ("bearing_wear", "cavitation"):
        hit = [n == cls for r, n in zip(rows, named, strict=True) if r["cls"] == cls and r["severity"] >= 0.5]
        out[f"{cls}_recall_past_moderate"] = {"k": int(sum(hit)), "n": len(hit)}
    speeds = [abs(r[f"{key}/speed_hz"] / r["true_hz"] - 1) > WRONG for r in rows]
    out["speed_wrong"] = {"k": int(sum(speeds)), "n": len(speeds)}
    out["false_alarm_classes"] = dict(Counter(n for n in healthy if n != "normal"))
    for v in out.values():
        if "k" in v:
            v["rate"] = round(v["k"] / max(v["n"], 1), 4)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/audio_drive_carrier.json")
    ap.add_argument("--per-class", type=int, default=400, help="samples per class of each fleet (all machines; "
                    "the drive machines' share of them is kept)")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    t0 = time.time()
    rows = clips(args.per_class, args.workers)
    result: dict[str, Any] = {
        "command": " ".join([".venv/bin/python", "bench/bench_audio_drive_carrier.py", *sys.argv[1:]]),
        "machine": {"platform": platform.platform(), "processor": platform.processor()},
        "fleets": [{"domain": d, "machines": n, "seed": s} for d, n, s in FLEETS], "results": {}}
    for fleet in ("train", "unseen"):
        part = [r for r in rows if r["fleet"] == fleet]
        res: dict[str, Any] = {"clips": len(part), "by_class": dict(Counter(r["cls"] for r in part)),
                               "carrier_in_clip": sum(0 < r["carrier_hz"] < 7_900 for r in part),
                               "carrier_found": sum(r["carrier_found"] for r in part)}
        for way in ("before", "after"):
            for hint in ("no_speed", "plc_speed"):
                res[f"{way}/{hint}"] = metrics(part, f"{way}/{hint}")
        result["results"][fleet] = res
    result["seconds"] = round(time.time() - t0, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    for fleet, res in result["results"].items():
        print(f"{fleet}: {res['clips']} drive clips {res['by_class']}, carrier in the clip {res['carrier_in_clip']}, "
              f"found {res['carrier_found']}")
        for hint in ("no_speed", "plc_speed"):
            for way in ("before", "after"):
                m = res[f"{way}/{hint}"]
                print(f"  {hint:9s} {way:6s} healthy FPR {m['healthy_fpr']['k']}/{m['healthy_fpr']['n']} "
                      f"bearing {m['bearing_wear_recall_past_moderate']['k']}/{m['bearing_wear_recall_past_moderate']['n']} "
                      f"cavitation {m['cavitation_recall_past_moderate']['k']}/{m['cavitation_recall_past_moderate']['n']} "
                      f"speed wrong {m['speed_wrong']['k']}/{m['speed_wrong']['n']} {m['false_alarm_classes']}")
    print(f"{result['seconds']:.0f} s; {args.out}")


if __name__ == "__main__":
    main()
