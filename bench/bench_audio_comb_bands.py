"""Where a bearing comb is read: the shipped bands against every kurtogram band (a protrugram).

    .venv/bin/python bench/bench_audio_comb_bands.py --out bench/results/audio_comb_bands.json \
        [--foreign-report R.json --foreign-data DIR]

The audio vector scores each fault comb (:func:`pipeline.features.audio_physics.fault_comb`) over the
envelope spectra of seven bands: three fixed ones, the asset's resonance band (or the most impulsive
one) and the clip's three most impulsive kurtogram bands (``comb.max``). Where a defect's impacts are
weak next to the machine's own sound the kurtogram need not pick the band they ring in; the
*protrugram* (Barszcz & Jablonski 2011) reads the comb in every band and keeps the best. This bench
measures whether that finds more worn bearings at the same healthy false-alarm rate, per clip, one
statistic at a time (no model):

* **our fleets**: healthy and worn-bearing clips (past moderate, severity >= 0.5) of ``--assets``
  machines of the training domain (seed ``--seed``) and of the unseen-type domain (seed
  ``--unseen-seed``), no model trained on either;
* **another generator's** (``--foreign-report`` / ``--foreign-data``: the report and ``--data`` folder
  of ``bench/bench_foreign_fleet.py``): its healthy and worn-bearing recordings (reciprocating
  machines left out: audio withholds bearing wear there), read as ``linewatch inspect`` reads them
  (its ``assets.json``, no speed given); with the served audio verdicts of the report beside them.

Each statistic's threshold is the 99th percentile of the same fleet's healthy clips (so each row is
its best case at 1 % healthy false alarms); reported: the recall of worn bearings above it, on every
clip, on the clips whose bearing ``assets.json`` describes, and on machines without a drive (the
shipped combs notch a drive's carrier lines out of the bands that hold it; the all-band combs here
do not, which could only favour the shipped ones on drives).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np
import scipy.fft

sys.path.insert(0, str(Path(__file__).resolve().parent))

BANDWIDTHS = (4_000.0, 2_000.0, 1_000.0, 500.0)


def band_combs(x16: np.ndarray, profile, shaft_hz: float) -> dict[str, float]:
    """The fault combs of the first second of a 16 kHz clip read in every kurtogram band: their best
    over all bands, per fault and overall, the best per bandwidth, and the blind comb's best."""
    from pipeline.features import audio_physics as ap

    x = x16[:ap.SEGMENT].astype(np.float64)
    x = x - float(x.mean())
    n = x.shape[0]
    bands = ap.kurtogram_bands()
    envelopes = ap._band_envelopes(scipy.fft.rfft(x), n, bands)
    proms = np.stack([ap._envelope_prominence(arr[row] - float(arr[row].mean()), n / ap.SAMPLE_RATE)[0]
                      for arr, row in envelopes])
    orders = profile.bearing_orders
    faults = {"bpfo": (orders.get("bpfo"), 0.0), "bpfi": (orders.get("bpfi"), shaft_hz),
              "bsf2": (2.0 * orders["bsf"] if "bsf" in orders else None, orders.get("ftf", 0.0) * shaft_hz)}
    df = ap.SAMPLE_RATE / n
    per_band = np.zeros(proms.shape[0])
    out: dict[str, float] = {}
    for name, (order, sideband) in faults.items():
        values = (np.array([ap.fault_comb(p, df, order * shaft_hz, sideband) for p in proms]) if order
                  else np.zeros(proms.shape[0]))
        out[f"all_bands.{name}"] = float(values.max())
        per_band = np.maximum(per_band, values)
    out["all_bands.max"] = float(per_band.max())
    out["all_bands.blind"] = float(max(ap.blind_comb(p, df, shaft_hz)[0] for p in proms))
    widths = np.array([b[1] - b[0] for b in bands])
    for w in BANDWIDTHS:
        out[f"bandwidth_{int(w)}.max"] = float(per_band[widths == w].max())
    return out


def statistics(vector: np.ndarray, combs: dict[str, float]) -> dict[str, float]:
    from pipeline.features.audio_physics import AUDIO_VECTOR_NAMES as names

    shipped = {k: float(vector[names.index(k)]) for k in ("comb.max", "comb.blind", "env.nonsync.prom")}
    return shipped | combs


def _our_fleet(domain: str, n_assets: int, seed: int, per_class: int, workers: int) -> list[dict]:
    from multiprocessing import Pool

    from models.data.domain_data import domain_world

    specs = domain_world(domain, n_assets, seed, per_class)[2]
    idx = [s.index for s in specs if s.fault in ("normal", "bearing_wear")]
    jobs = [(domain, n_assets, seed, per_class, idx[i::8]) for i in range(8)]
    with Pool(workers) as pool:
        return [row for part in pool.map(_our_rows, jobs) for row in part]


def _our_rows(job: tuple[str, int, int, int, list[int]]) -> list[dict]:
    from domain_clips import rendered_clips
    from pipeline.features.audio_physics import AUDIO_VECTOR_NAMES, audio_vector, clip_speed

    domain, n_assets, seed, per_class, idx = job
    rows = []
    for spec, _, profile, _, clip in rendered_clips(domain, n_assets, seed, per_class, idx):
        v = audio_vector(clip, 16_000, profile)
        rows.append({"fault": spec.fault, "severity": float(spec.severity),
                     "described": bool(v[AUDIO_VECTOR_NAMES.index("flag.orders_available")] > 0.5),
                     "drive": bool(v[AUDIO_VECTOR_NAMES.index("flag.vfd")] > 0.5),
                     "stats": statistics(v, band_combs(clip, profile, clip_speed(v)))})
    return rows


def _foreign_rows(report: Path, data: Path) -> list[dict]:
    """The other generator's healthy and worn-bearing recordings; beside the combs, two readings only
    it has: the expert's statistic (``expert.env_peak_db``: the envelope peak at the true fault
    frequencies in the true resonance band, *without* the machine's healthy median the expert reads it
    against) and, where the fleet folder holds a commissioning recording of every machine
    (``reference/``), ``comb.max`` minus that recording's."""
    from models.inspect.readers import load_assets, read_wav
    from models.inspect.scoring import Inspector
    from pipeline.features.audio_physics import AUDIO_VECTOR_NAMES, clip_speed, resample_to_16k
    from pipeline.features.messages import audio_features_message

    rep = json.loads(report.read_text())
    inspector = Inspector(assets=load_assets(data / "assets.json"))

    def vector(x: np.ndarray, rate: int, asset_id: str) -> np.ndarray:
        profile = inspector.profile(asset_id, [])
        return audio_features_message(asset_id, profile.asset_type, 0, x, rate, profile, shaft_hz=None,
                                      source=asset_id).vector

    comb = AUDIO_VECTOR_NAMES.index("comb.max")
    commissioning = {}
    for path in sorted((data / "reference").glob("*.wav")):
        aid = inspector.asset_of(path) or ""
        commissioning[aid] = float(vector(*read_wav(path, []), aid)[comb])
    rows = []
    for r in rep["records"]:
        if r["cls"] not in ("normal", "bearing_wear") or rep["machines"][r["asset_id"]].get("subkind") == "piston":
            continue
        profile = inspector.profile(r["asset_id"], [])
        x, rate = read_wav(data / "files" / r["wav"], [])
        v = vector(x, rate, r["asset_id"])
        stats = statistics(v, band_combs(resample_to_16k(x, rate), profile, clip_speed(v)))
        stats["expert.env_peak_db"] = float(r["expert"]["env_peak_db"])
        if r["asset_id"] in commissioning:
            stats["comb.max_minus_commissioning"] = stats["comb.max"] - commissioning[r["asset_id"]]
        rows.append({"fault": r["cls"], "severity": float(r["severity"]),
                     "described": bool(v[AUDIO_VECTOR_NAMES.index("flag.orders_available")] > 0.5),
                     "drive": bool(v[AUDIO_VECTOR_NAMES.index("flag.vfd")] > 0.5),
                     "served": r["audio"]["class"], "stats": stats})
    keys = set.intersection(*(set(r["stats"]) for r in rows))  # a reading some machine lacks is left out
    for r in rows:
        r["stats"] = {k: v for k, v in r["stats"].items() if k in keys}
    return rows


def _recall_at_1pct(healthy: list[dict], worn: list[dict], key: str) -> tuple[float, float]:
    t = float(np.percentile([r["stats"][key] for r in healthy], 99))
    return t, float(np.mean([r["stats"][key] > t for r in worn]))


def recalls(rows: list[dict]) -> dict:
    """Per statistic: the healthy 99th percentile and the recall of worn bearings past moderate above it;
    also on the clips whose bearing ``assets.json`` describes, and on machines without a drive (the
    shipped combs notch a drive carrier's lines out of the bands that hold it, the all-band combs do
    not), each against the healthy clips of the same kind."""
    healthy = [r for r in rows if r["fault"] == "normal"]
    worn = [r for r in rows if r["fault"] == "bearing_wear" and r["severity"] >= 0.5]
    out: dict = {"healthy": len(healthy), "worn_past_moderate": len(worn),
                 "worn_described": sum(r["described"] for r in worn),
                 "worn_without_drive": sum(not r["drive"] for r in worn), "statistics": {}}
    for key in rows[0]["stats"]:
        t, recall = _recall_at_1pct(healthy, worn, key)
        _, described = _recall_at_1pct([r for r in healthy if r["described"]], [r for r in worn if r["described"]], key)
        _, no_drive = _recall_at_1pct([r for r in healthy if not r["drive"]], [r for r in worn if not r["drive"]], key)
        out["statistics"][key] = {"threshold": round(t, 3), "recall": round(recall, 3),
                                  "recall_described": round(described, 3), "recall_without_drive": round(no_drive, 3)}
    served = [r for r in rows if "served" in r]
    if served:
        out["served_audio"] = {
            "recall": round(float(np.mean([r["served"] == "bearing_wear" for r in worn])), 3),
            "healthy_fpr": round(float(np.mean([r["served"] != "normal" for r in healthy])), 4)}
        fpr = out["served_audio"]["healthy_fpr"]
        values = np.array([r["stats"]["comb.max"] for r in healthy])
        t = float(np.quantile(values, 1.0 - fpr)) if fpr > 0 else float(values.max())
        out["comb_max_at_served_fpr"] = {"threshold": round(t, 3), "recall": round(
            float(np.mean([r["stats"]["comb.max"] > t for r in worn])), 3)}
        missed = [r["stats"]["comb.max"] for r in worn if r["served"] != "bearing_wear"]
        out["served_misses"] = {"n": len(missed), "comb_max_median": round(float(np.median(missed)), 3) if missed else None,
                                "healthy_comb_max_p99": out["statistics"]["comb.max"]["threshold"]}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--assets", type=int, default=300)
    parser.add_argument("--unseen-assets", type=int, default=120)
    parser.add_argument("--per-class", type=int, default=600)
    parser.add_argument("--seed", type=int, default=4242, help="a seed no training run used")
    parser.add_argument("--unseen-seed", type=int, default=3131)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--foreign-report", type=Path, default=None)
    parser.add_argument("--foreign-data", type=Path, default=None)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    t0 = time.perf_counter()
    fleets = {"train": _our_fleet("train", args.assets, args.seed, args.per_class, args.workers),
              "unseen": _our_fleet("unseen", args.unseen_assets, args.unseen_seed, args.per_class, args.workers)}
    if args.foreign_report is not None and args.foreign_data is not None:
        fleets["foreign"] = _foreign_rows(args.foreign_report, args.foreign_data)
    results = {name: recalls(rows) for name, rows in fleets.items()}
    report = {"command": " ".join(sys.argv), "host": platform.node(), "seconds": round(time.perf_counter() - t0, 1),
              "results": results}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    for name, res in results.items():
        print(f"{name}: {res['healthy']} healthy, {res['worn_past_moderate']} worn past moderate")
        for key, s in res["statistics"].items():
            print(f"   {key:24s} recall at 1 % healthy {s['recall']:.3f} (bearing described {s['recall_described']:.3f}, "
                  f"no drive {s['recall_without_drive']:.3f})")
        if "served_audio" in res:
            print(f"   served audio: recall {res['served_audio']['recall']:.3f} at {res['served_audio']['healthy_fpr']:.2%}; "
                  f"comb.max alone at that rate {res['comb_max_at_served_fpr']['recall']:.3f}; its misses' comb.max "
                  f"median {res['served_misses']['comb_max_median']} (healthy p99 {res['served_misses']['healthy_comb_max_p99']})")
    print(f"report {args.out} ({report['seconds']} s)")


if __name__ == "__main__":
    main()
