"""The running speed of machines on the mains, picked with and without their magnetic hum.

    .venv/bin/python bench/bench_speed_mains_hum.py --out bench/results/speed_mains_hum.json

A motor's core hums at twice its line frequency and the multiples of that (100, 200, 300 Hz on
50 Hz mains). Those lines are harmonics of the motor's synchronous speed (the 4th, 8th, 12th of a
4-pole motor's 25 Hz), so where the hum is loud the harmonic sum of
:func:`pipeline.features.audio_physics.estimate_speed` found synchronous speed though the shaft
slips 1-6 % below it, even around a PLC's measured speed (its +-4 % search holds synchronous speed).
Since 2026-12-06 the pick leaves the hum lines out (``hum_free``); this bench reads the first
second of every clip both ways, with the true speed as a measured speed (a PLC ``speed_rpm`` tag)
and without one:

- **the blind fleet** of ``bench/bench_blind_fleet.py`` (another generator, its hum louder than most of
  its shaft tones; ``--fleet``, generated here if missing);
- **our simulator's fleets** (training and unseen types, seeds no training run used).

Per fleet, drive or fixed speed, with or without the measured speed, shipped or as before: the
share of clips read within 2 % of the true speed, the clips read at synchronous speed (within
0.2 % of it while the shaft turns more than 0.4 % below it) and those read more than 4 % off.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))



def _speeds(x: np.ndarray, rate: int, profile: Any, true_hz: float) -> dict[str, float]:
    """The speed the first second of a clip is read at: with / without a measured speed, shipped / as before."""
    from bench_speed_estimate import _tones
    from pipeline.features import audio_physics as ap

    prom, df = _tones(ap.resample_to_16k(np.asarray(x, np.float64), rate))
    return {f"{hint_name}/{mode}": ap.estimate_speed(prom, df, profile, hint, hum_free=free).shaft_hz
            for hint_name, hint in (("measured speed", true_hz), ("sound alone", None))
            for mode, free in (("shipped", True), ("as before", False))}


def _blind_clip(args: tuple[str, str, Any, float, float, bool]) -> dict[str, Any]:
    import soundfile as sf

    wav, asset_id, profile, true_hz, sync_hz, vfd = args
    x, rate = sf.read(wav, always_2d=True)
    return {"fleet": "blind", "asset_id": asset_id, "vfd": vfd, "true_hz": true_hz, "sync_hz": sync_hz,
            **_speeds(x.mean(axis=1), rate, profile, true_hz)}


def blind_clips(fleet_dir: Path, workers: int) -> list[dict[str, Any]]:
    from models.inspect.readers import load_assets
    from pipeline.features.asset_profile import AssetProfile

    truth = json.loads((fleet_dir / "truth.json").read_text(encoding="utf-8"))
    profiles = {k.lower(): v for k, v in load_assets(fleet_dir / "assets.json").items()}
    machines = {m["asset_id"]: m for m in truth["machines"]}
    jobs = []
    for samples in truth["samples"]:
        for s in samples:
            m = machines[Path(s["files"]["audio"]).parts[-3]]
            profile = profiles.get(m["asset_id"].lower(), AssetProfile(asset_id=m["asset_id"]))
            jobs.append((s["files"]["audio"], m["asset_id"], profile, float(s["state"]["shaft_hz"]),
                         float(s["state"]["f_el"]) / (m["poles"] / 2), bool(m["vfd"])))
    with ProcessPoolExecutor(workers) as pool:
        return list(pool.map(_blind_clip, jobs, chunksize=8))


def _sim_part(args: tuple[str, int, int, int, list[int]]) -> list[dict[str, Any]]:
    from domain_clips import rendered_clips

    out = []
    for _, asset, profile, true_hz, clip in rendered_clips(*args):
        out.append({"fleet": args[0], "asset_id": asset.asset_id, "vfd": bool(profile.vfd), "true_hz": true_hz,
                    "sync_hz": asset.line_frequency_hz / (asset.poles / 2),
                    **_speeds(clip, 16_000, profile, true_hz)})
    return out


def simulator_clips(per_class: int, workers: int) -> list[dict[str, Any]]:
    from bench_speed_estimate import FLEETS  # bench_generalisation's fresh fleets
    from models.data.domain_data import domain_world

    jobs = []
    for domain, n_assets, seed in FLEETS:
        _, _, specs = domain_world(domain, n_assets, seed, per_class)
        jobs += [(domain, n_assets, seed, per_class, c.tolist()) for c in np.array_split(np.arange(len(specs)), 4 * workers)]
    with ProcessPoolExecutor(workers) as pool:
        return [c for part in pool.map(_sim_part, jobs) for c in part]


def summarise(clips: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for fleet in ("blind", "train", "unseen"):
        for vfd in (False, True):
            rows = [c for c in clips if c["fleet"] == fleet and c["vfd"] == vfd]
            if not rows:
                continue
            block: dict[str, Any] = {"clips": len(rows)}
            for key in ("measured speed/shipped", "measured speed/as before", "sound alone/shipped", "sound alone/as before"):
                est = np.array([c[key] for c in rows])
                true = np.array([c["true_hz"] for c in rows])
                sync = np.array([c["sync_hz"] for c in rows])
                block[key] = {
                    "within_2pct": round(float(np.mean(np.abs(est / true - 1.0) < 0.02)), 3),
                    "at_synchronous_speed": int(np.sum((np.abs(est / sync - 1.0) < 0.002) & (true / sync < 0.996))),
                    "more_than_4pct_off": int(np.sum(np.abs(est / true - 1.0) > 0.04)),
                }
            out[f"{fleet}/{'drive' if vfd else 'mains'}"] = block
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fleet", type=Path, default=Path("/tmp/blind/fleet1"), help="a bench_blind_fleet.py fleet")
    parser.add_argument("--per-class", type=int, default=60, help="samples per class of each of our fleets")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/speed_mains_hum.json")
    args = parser.parse_args()
    t0 = time.time()
    from bench_blind_fleet import ensure_fleet

    ensure_fleet(args.fleet)
    clips = blind_clips(args.fleet, args.workers) + simulator_clips(args.per_class, args.workers)
    result = {"command": " ".join([".venv/bin/python", "bench/bench_speed_mains_hum.py", *sys.argv[1:]]),
              "fleet": str(args.fleet), "seconds": round(time.time() - t0, 1), "results": summarise(clips)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1), encoding="utf-8")
    for key, block in result["results"].items():
        print(f"{key} ({block['clips']} clips)")
        for mode in ("measured speed/shipped", "measured speed/as before", "sound alone/shipped", "sound alone/as before"):
            b = block[mode]
            print(f"  {mode:26s} within 2 %: {b['within_2pct']:.3f}  at synchronous speed: {b['at_synchronous_speed']:3d}"
                  f"  > 4 % off: {b['more_than_4pct_off']:3d}")
    print(f"{result['seconds']} s; {args.out}")


if __name__ == "__main__":
    main()
