"""The blind comb (a bearing of unknown geometry) with and without orders near an integer.

    .venv/bin/python bench/bench_foreign_fleet.py --healthy-audio none --data /tmp/ff/data --out /tmp/ff_base.json
    .venv/bin/python bench/bench_blind_fleet.py --generate-only --fleet /tmp/blind/fleet1
    .venv/bin/python bench/bench_blind_comb.py --foreign /tmp/ff_base.json --foreign-data /tmp/ff/data \\
        --blind-fleet /tmp/blind/fleet1 --out bench/results/blind_comb.json

:func:`pipeline.features.audio_physics.blind_comb` scores the strongest harmonic comb of any order
in 1.5-12 of the shaft speed and leaves out orders near a whole number (shaft harmonics). The
common 8-ball bearings (6204, 6308, 6309, 6312) have BPFO 3.04-3.07, BPFI 4.93-4.96 and
2 x BSF 3.91-4.08 orders, so with 0.08 left out (until 2026-12-06) a machine whose ``assets.json``
gives no bearing could not show their faults there. This bench reads every healthy, imbalanced and
bearing-wear clip as if its bearing were unknown (``bearing_orders`` removed; the foreign and blind
fleets' clips at their true speed, so that the comb and not the speed is measured) and scores the
best comb five ways:

- ``0.08 left out``: orders within 0.08 of an integer left out (the comb until 2026-12-06);
- ``near-integer, penalised``: all orders; at an order within 0.08 of the integer n, the mean
  positive prominence of the shaft harmonics that are not multiples of n (1 .. 4n) is subtracted
  (a shaft-modulation comb has them, a bearing's comb at n orders does not);
- ``near-integer``: all orders, no penalty;
- ``near-integer, shaft lines notched``: orders within 0.02 of an integer left out, and the bins
  at every shaft harmonic set to 0 first;
- ``shipped``: :func:`~pipeline.features.audio_physics.blind_comb` as it is (orders within
  :data:`~pipeline.features.audio_physics.BLIND_WHOLE_ORDER_GAP`, 0.02, left out).

Each as a one-value detector: recall of bearing wear past moderate severity at the threshold that
flags 1 % of the healthy clips, overall and on bearings with an order near an integer, and the share
of imbalanced clips above that threshold; our fresh fleets (``bench_generalisation.py``'s seeds),
the foreign fleet of ``bench_foreign_fleet.py`` (its report and ``--data`` folder; piston
compressors left out) and the fleet of ``bench_blind_fleet.py`` (reciprocating machines left out).
A one-value detector, not the model: it says which way the input would move the model.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

FLEETS = (("train", 150, 1001), ("unseen", 60, 1002))
NEAR = 0.08
FPR = 0.01
MODES = ("0.08 left out", "near-integer, penalised", "near-integer", "near-integer, shaft lines notched",
         "shipped")
#: Orders this close to an integer are left out in the notched mode (every harmonic on a notch).
WHOLE = 0.02


def comb_rows(x: np.ndarray, rate: int, profile, shaft_hz: float | None) -> tuple[np.ndarray, float, float]:
    """The envelope prominence rows, bin width and shaft speed the blind comb of the clip's first
    second reads (captured from the pipeline's own feature code)."""
    from pipeline.features import audio_physics as ap

    seen: list[tuple[np.ndarray, float, float]] = []
    original = ap.blind_comb

    def capture(prom: np.ndarray, df: float, f: float) -> tuple[float, float]:
        seen.append((prom.copy(), df, f))
        return original(prom, df, f)

    ap.blind_comb = capture
    try:
        ap.audio_segment_vectors(x, rate, replace(profile, bearing_orders={}), shaft_hz=shaft_hz, raw=True)
    finally:
        ap.blind_comb = original
    return seen[0]


def best_comb(prom: np.ndarray, df: float, shaft_hz: float, mode: str) -> float:
    from pipeline.features import audio_physics as ap

    if mode == "shipped":
        return ap.blind_comb(prom, df, shaft_hz)[0]
    lo, hi, step = ap.BLIND_ORDERS
    orders = np.arange(lo, hi, step)
    near = np.abs(orders - np.round(orders)) <= NEAR
    if mode == "0.08 left out":
        orders = orders[~near]
        near = near[~near]
    if mode == "near-integer, shaft lines notched":
        orders = orders[np.abs(orders - np.round(orders)) > WHOLE]
        prom = ap.notch_lines(prom, df, shaft_hz * np.arange(1, int(prom.shape[-1] * df / shaft_hz) + 2))
    values, inside = ap._comb_values(prom, df, np.outer(orders * shaft_hz, np.arange(1, ap.COMB_HARMONICS + 1)))
    n_in = inside.sum(axis=-1)
    score = np.where(n_in >= 2, values.sum(axis=-1) / np.maximum(n_in, 1), -1.0)
    if mode == "near-integer, penalised":
        for j in np.flatnonzero(near):
            n = int(round(orders[j]))
            ks = np.array([k for k in range(1, 4 * n + 1) if k % n], dtype=float)
            if ks.size:
                v, ins = ap._comb_values(prom, df, ks * shaft_hz)
                score[:, j] -= (np.maximum(v, 0.0) * ins).sum(axis=-1) / max(int(ins.sum(axis=-1).max()), 1)
    return float(score.max())


def _near_integer(orders: dict[str, float]) -> bool:
    values = (orders.get("bpfo", 0.0), orders.get("bpfi", 0.0), 2.0 * orders.get("bsf", 0.0))
    return min(abs(v - round(v)) for v in values) <= NEAR


def _simulated(args: tuple[str, int, int, int, list[int]]) -> list[dict[str, Any]]:
    from linewatch.simulator.domain import DomainRenderer
    from models.data.domain_data import domain_world

    domain, n_assets, seed, per_class, indices = args
    fleet, profiles, specs = domain_world(domain, n_assets, seed, per_class)
    renderer = DomainRenderer(fleet, seed)
    orders = {a.asset_id: a.bearing.orders() for a in fleet}
    out = []
    for i in indices:
        spec = specs[i]
        if spec.fault not in ("normal", "bearing_wear", "imbalance"):
            continue
        clip = renderer.render(spec, modalities=("audio",)).clip.astype(np.float32) / 32768.0
        prom, df, f = comb_rows(clip, 16_000, profiles[spec.asset_id], None)
        out.append({"fleet": domain, "cls": spec.fault, "severity": spec.severity,
                    "near_integer": _near_integer(orders[spec.asset_id]),
                    **{m: best_comb(prom, df, f, m) for m in MODES}})
    return out


def foreign(report: dict[str, Any], data: Path) -> list[dict[str, Any]]:
    import soundfile as sf

    from models.inspect.readers import load_assets

    profiles = load_assets(data / "assets.json")
    files = {p.name: p for p in data.rglob("*.wav")}
    out = []
    for r in report["records"]:
        machine = report["machines"][r["asset_id"]]
        if r["cls"] not in ("normal", "bearing_wear", "imbalance") or machine["subkind"] == "piston":
            continue
        x, rate = sf.read(files[r["wav"]], always_2d=True)
        prom, df, f = comb_rows(x.mean(axis=1), rate, profiles[r["asset_id"]], float(r["shaft_hz"]))
        out.append({"fleet": "foreign", "cls": r["cls"], "severity": float(r.get("severity", 0.0)),
                    "near_integer": _near_integer(machine["bearing_orders"]),
                    **{m: best_comb(prom, df, f, m) for m in MODES}})
    return out


def blind_fleet(fleet: Path) -> list[dict[str, Any]]:
    """The healthy and worn clips of a ``bench_blind_fleet.py`` fleet (its ``truth.json``), at their
    true speed; reciprocating machines left out, as audio withholds bearing wear there."""
    import soundfile as sf

    from bench.bench_blind_fleet import bearing_orders
    from models.inspect.readers import load_assets
    from pipeline.features.asset_profile import AssetProfile

    truth = json.loads((fleet / "truth.json").read_text())
    profiles = load_assets(fleet / "assets.json")
    out = []
    for machine, samples in zip(truth["machines"], truth["samples"], strict=True):
        if machine["reciprocating"]:
            continue
        profile = profiles.get(machine["asset_id"]) or AssetProfile(asset_id=machine["asset_id"])
        for s in samples:
            if s["label"] not in ("normal", "bearing_wear", "imbalance") or s.get("commissioning"):
                continue
            end = s["variant"].split(":")[-1] if s["variant"] else "de"
            x, rate = sf.read(s["files"]["audio"], always_2d=True)
            prom, df, f = comb_rows(x.mean(axis=1), rate, profile, float(s["state"]["shaft_hz"]))
            out.append({"fleet": "blind", "cls": s["label"], "severity": float(s["severity"]),
                        "near_integer": _near_integer(bearing_orders(machine[f"{end}_bearing"])),
                        **{m: best_comb(prom, df, f, m) for m in MODES}})
    return out


def detector(rows: list[dict[str, Any]], mode: str) -> dict[str, Any]:
    healthy = np.array([r[mode] for r in rows if r["cls"] == "normal"])
    worn = [r for r in rows if r["cls"] == "bearing_wear" and r["severity"] >= 0.5]
    threshold = float(np.quantile(healthy, 1.0 - FPR))
    near = [r for r in worn if r["near_integer"]]
    imbalanced = [r for r in rows if r["cls"] == "imbalance"]
    return {"healthy": int(healthy.size), "bearing_past_moderate": len(worn),
            "threshold": round(threshold, 3), "healthy_median": round(float(np.median(healthy)), 3),
            "recall_at_1pct_fpr": round(float(np.mean([r[mode] > threshold for r in worn])), 3),
            "near_integer_bearings": len(near),
            "recall_near_integer": round(float(np.mean([r[mode] > threshold for r in near])), 3) if near else None,
            "imbalance": len(imbalanced),
            "imbalance_above": round(float(np.mean([r[mode] > threshold for r in imbalanced])), 3) if imbalanced else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/blind_comb.json")
    ap.add_argument("--per-class", type=int, default=200)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--foreign", type=Path, help="a bench_foreign_fleet.py report")
    ap.add_argument("--foreign-data", type=Path, help="its --data folder")
    ap.add_argument("--blind-fleet", type=Path, help="a bench_blind_fleet.py fleet folder (with truth.json)")
    args = ap.parse_args()
    from models.data.domain_data import domain_world

    t0 = time.time()
    jobs = []
    for domain, n_assets, seed in FLEETS:
        specs = domain_world(domain, n_assets, seed, args.per_class)[2]
        jobs += [(domain, n_assets, seed, args.per_class, c.tolist())
                 for c in np.array_split(np.arange(len(specs)), 4 * args.workers)]
    with ProcessPoolExecutor(args.workers) as pool:
        rows = [r for part in pool.map(_simulated, jobs) for r in part]
    if args.foreign and args.foreign_data:
        rows += foreign(json.loads(args.foreign.read_text()), args.foreign_data)
    if args.blind_fleet:
        rows += blind_fleet(args.blind_fleet)
    result: dict[str, Any] = {
        "command": " ".join([".venv/bin/python", "bench/bench_blind_comb.py", *sys.argv[1:]]),
        "machine": {"platform": platform.platform(), "processor": platform.processor()},
        "fleets": {}}
    for fleet in ("train", "unseen", "foreign", "blind"):
        part = [r for r in rows if r["fleet"] == fleet]
        if part:
            result["fleets"][fleet] = {m: detector(part, m) for m in MODES}
    result["seconds"] = round(time.time() - t0, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    for fleet, modes in result["fleets"].items():
        for mode, v in modes.items():
            print(f"{fleet:8s} {mode:34s} recall {v['recall_at_1pct_fpr']:.3f} ({v['bearing_past_moderate']} worn, "
                  f"threshold {v['threshold']:.2f}, healthy median {v['healthy_median']:.2f}, "
                  f"{v['healthy']} healthy); near-integer bearings {v['recall_near_integer']} ({v['near_integer_bearings']}); "
                  f"imbalance above {v['imbalance_above']} ({v['imbalance']})")
    print(f"{result['seconds']:.0f} s; {args.out}")


if __name__ == "__main__":
    main()
