"""Shaft-locked knocks against bearing wear: what one clip can tell, and what the machine's own healthy sound adds.

    .venv/bin/python bench/bench_audio_sync_impacts.py --out bench/results/audio_sync_impacts.json

A healthy machine may knock in step with its shaft (a piston compressor's valves, a cam, a
coupling with play): impulsive, periodic, ringing the structure where a bearing defect rings it.
This bench draws a fresh fleet (a seed no training run used) in which ``--share`` of the machines
knock so (``DomainSpec.sync_impact_share``: 1-6 knocks a revolution at 0.5-12x the machine's
random knocks; off in the fleets the shipped models were trained on) and fits a healthy-vs-bearing
detector (gradient-boosted trees, 5 folds grouped by machine) on

- the 79 clip values of the shipped audio vector, and
- the same with the clip's bearing values (envelope, combs, kurtogram, spectral kurtosis,
  waveform) minus the same machine's healthy median over ``--baseline-clips`` clips at its other
  operating points (what a learned per-machine baseline of those values would give).

Reported: recall past moderate severity (>= 0.5) at the threshold that flags 1 % of the held-out
healthy clips, per group of machines (knocking or not), and the healthy false-positive rate at
that threshold on each. Detectors fitted for the bench, not the shipped models. JSON (``--out``).
See docs/models.md "Audio: machines that knock in step with the shaft".
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

import numpy as np
from tqdm.auto import tqdm

FPR = 0.01


def _world(domain: str, n_assets: int, seed: int, per_class: int, share: float):
    """``models.data.domain_data.domain_world`` of a domain whose machines knock in step with the shaft."""
    from linewatch.simulator.domain import DOMAINS, domain_fleet, domain_registry_json, draw_domain_specs
    from pipeline.features.asset_profile import load_profiles

    spec = replace(DOMAINS[domain], sync_impact_share=share)
    fleet = domain_fleet(n_assets, seed, spec)
    return fleet, load_profiles(domain_registry_json(fleet, seed, spec)), draw_domain_specs(per_class, fleet, seed, spec)


def _render_machine(args: tuple[str, int, int, int, float, int, int]) -> dict[str, np.ndarray] | None:
    """Clip values of one machine's healthy and bearing samples, and its healthy median (worker process)."""
    from linewatch.simulator.domain import DomainRenderer
    from linewatch.simulator.noise import make_rng
    from pipeline.features.audio_physics import AUDIO_CLIP_NAMES, audio_vector

    domain, n_assets, seed, per_class, share, asset_index, n_base = args
    fleet, profiles, specs = _world(domain, n_assets, seed, per_class, share)
    wanted = [s for s in specs if s.asset_index == asset_index and s.fault in ("normal", "bearing_wear")]
    if not wanted:
        return None
    renderer = DomainRenderer(fleet, seed)
    profile = profiles[wanted[0].asset_id]
    sync = fleet[asset_index].extra.get("sync_impacts_per_rev", 0.0)
    mine = [s for s in specs if s.asset_index == asset_index]
    rng = make_rng(seed, "bench-audio-sync-impacts", domain, asset_index)

    def vector_of(spec) -> np.ndarray:
        clip = renderer.render(spec, ("audio",)).clip.astype(np.float32) / 32768.0
        return audio_vector(clip, 16_000, profile)[: len(AUDIO_CLIP_NAMES)]

    base = []
    for k in range(n_base):  # healthy clips at the operating points of other drawn samples, no sensor drift
        point = mine[int(rng.integers(len(mine)))]
        base.append(vector_of(replace(point, index=70_000_000 + asset_index * 1_000 + k, fault="normal",
                                      physical_fault="normal", severity=0.0, variant="", drift="none",
                                      drift_level=0.0)))
    vectors = np.stack([vector_of(s) for s in wanted])
    return {"index": np.array([s.index for s in wanted]), "vector": vectors,
            "base": np.repeat(np.median(np.stack(base), axis=0)[None, :], len(wanted), axis=0),
            "sync_per_rev": np.full(len(wanted), sync)}


def render(domain: str, n_assets: int, seed: int, per_class: int, share: float, n_base: int, workers: int
           ) -> dict[str, np.ndarray]:
    _, _, specs = _world(domain, n_assets, seed, per_class, share)
    tasks = [(domain, n_assets, seed, per_class, share, i, n_base) for i in range(n_assets)]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        parts = [p for p in tqdm(pool.map(_render_machine, tasks), total=len(tasks), desc=f"render {domain}",
                                 unit="machine") if p is not None]
    from bench_audio_bearing_limits import labelled

    return labelled(parts, specs)


def score(data: dict[str, np.ndarray], seed: int) -> dict:
    from bench_audio_bearing_limits import bearing_inputs, held_out_scores  # the same detector and inputs

    v, deltas, y, past = bearing_inputs(data)
    knocks = data["sync_per_rev"] > 0
    inputs = {f"clip values ({v.shape[1]})": v,
              f"+ {deltas.shape[1]} bearing deltas against the machine's healthy median": np.c_[v, deltas]}
    out: dict = {"n_past_moderate": int(past.sum()), "n_healthy": int((y == 0).sum()),
                 "n_healthy_with_knocks": int(((y == 0) & knocks).sum()),
                 "n_past_moderate_with_knocks": int((past & knocks).sum()), "inputs": {}}

    def rate(hit: np.ndarray, where: np.ndarray, digits: int) -> float | None:
        return round(float(np.mean(hit[where])), digits) if where.any() else None

    for name, x in inputs.items():
        s = held_out_scores(x, y, data["group"], seed)
        thr = float(np.quantile(s[y == 0], 1.0 - FPR))
        hit = s > thr
        out["inputs"][name] = {
            "recall_past_moderate": rate(hit, past, 3),
            "recall_past_moderate_machines_with_knocks": rate(hit, past & knocks, 3),
            "recall_past_moderate_machines_without": rate(hit, past & ~knocks, 3),
            "healthy_fpr_machines_with_knocks": rate(hit, (y == 0) & knocks, 4),
            "healthy_fpr_machines_without": rate(hit, (y == 0) & ~knocks, 4)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domain", default="train", choices=("train", "unseen"))
    parser.add_argument("--assets", type=int, default=120)
    parser.add_argument("--per-class", type=int, default=300, help="samples per class drawn (healthy and bearing kept)")
    parser.add_argument("--seed", type=int, default=5151)
    parser.add_argument("--share", type=float, default=0.35, help="share of the machines that knock in step with the shaft")
    parser.add_argument("--baseline-clips", type=int, default=8, help="healthy clips per machine for its median")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("bench/results/audio_sync_impacts.json"))
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    t0 = time.perf_counter()
    data = render(args.domain, args.assets, args.seed, args.per_class, args.share, args.baseline_clips, args.workers)
    results = {"command": " ".join(["bench/bench_audio_sync_impacts.py", *sys.argv[1:]]),
               "machine": platform.processor() or platform.machine(), "domain": args.domain,
               "assets": args.assets, "seed": args.seed, "share": args.share, **score(data, args.seed),
               "seconds": round(time.perf_counter() - t0, 1)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
