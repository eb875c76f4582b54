"""PLC windows with an unplanned stop: what the shipped PLC model says, and what the live line serves.

    .venv/bin/python bench/bench_plc_stops.py --out bench/results/plc_stops.json

The PLC model's training windows are machines at an operating point (``force_run``); the plant and
the randomised fleets stop now and then (``SimulatorConfig.stops_per_hour``, 4-20 s each). Per case
(fleet, stops per hour, the machines' fault at severity 0.8 or none) this renders every machine's
PLC tags for ``--seconds`` with the simulator's own stops, cuts them into the line's 10 s windows
(the first 30 s left out) and scores each through the live line's code (features message, INT8
serving model, impossible and invisible classes removed, ``models.withheld_classes``). Windows are
counted as **running** (the run state 1 throughout), **stop** (the machine stood still in part of
the window) or **after** (running, within 60 s after a stop; also binned by the seconds from the
restart to the window's start, ``after_0s`` / ``after_20s`` / ``after_40s``). ``named`` is the share
of windows whose top class is a fault *before* the rules that withhold every fault on a window with a
standstill and on the windows starting within 20 s after it (``pipeline.features.plc_running``),
``served`` the same as the line serves it now (``--no-run-up``: with the first rule only).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
from tqdm import tqdm

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CASES = (("train", 3.0, "normal"), ("train", 12.0, "normal"), ("unseen", 12.0, "normal"),
         ("train", 12.0, "cooling_failure"), ("train", 12.0, "imbalance"))


def windows_of(domain_name: str, stops_per_hour: float, fault: str, machines: int, seconds: float,
               seed: int, run_up: bool = True) -> dict[str, list[tuple[str, str]]]:
    """``{kind: [(top class before the rule, top class served)]}`` over the fleet's windows."""
    from linewatch.simulator.config import SimulatorConfig
    from linewatch.simulator.domain import DOMAINS, domain_fleet, domain_registry_json
    from linewatch.simulator.drift import constant_drift
    from linewatch.simulator.health import constant_health, faults_for
    from linewatch.simulator.physics import AssetPhysics
    from linewatch.simulator.plc import measure
    from models.data.domain_data import _wide_rows
    from models.data.featurize import plc_input
    from models.inputs import input_array
    from models.inspect.scoring import Inspector
    from models.withheld_classes import drop_withheld, withheld_classes
    from pipeline.features.asset_profile import load_profiles
    from pipeline.features.messages import plc_features_message
    from pipeline.features.plc_running import follow_run
    from pipeline.features.plc_window import PlcWindow

    domain = DOMAINS[domain_name]
    fleet = domain_fleet(machines, seed, domain)
    profiles = load_profiles(domain_registry_json(fleet, seed, domain))
    cfg = SimulatorConfig(stops_per_hour=stops_per_hour)
    inspector = Inspector()
    out: dict[str, list[tuple[str, str]]] = {"running": [], "stop": [], "after": []}
    w = round(10 * cfg.plc_rate_hz)
    n = round(seconds * cfg.plc_rate_hz)
    for asset in fleet:
        if fault != "normal" and fault not in faults_for(asset.asset_type):
            continue
        idx = np.arange(n, dtype=np.int64)
        t = idx / cfg.plc_rate_hz
        drift = constant_drift("none", 0.0)
        block = AssetPhysics(asset, cfg, cfg.profile).step(
            t, idx, constant_health(fault, 0.8 if fault != "normal" else 0.0, "", n), drift)
        plc = measure(asset, block, drift, cfg.profile, cfg)
        profile = profiles[asset.asset_id]
        standstill = None
        for s in range(3 * w, n - w + 1, w):
            part = type(plc)(**{k: (v[s:s + w] if isinstance(v, np.ndarray) and v.shape[:1] == (n,) else v)
                                for k, v in vars(plc).items()})
            ts, wide, bad = _wide_rows(part)
            window = PlcWindow(asset.asset_id, s * 100, (s + w) * 100, plc_input(ts, wide, bad), w, {},
                               s * 100, (s + w) * 100)
            msg = plc_features_message(window, asset.asset_type, asset=profile)
            if run_up:
                standstill = follow_run(msg.stats, window.start_ms, standstill)
            probs, classes, _ = inspector._predict("plc", [input_array("plc", msg)], asset.asset_type)
            before = dict(zip(classes, probs.tolist(), strict=True))
            served = drop_withheld(before, withheld_classes("plc", msg.vector, msg.stats), classes)
            run = block.run[s:s + w]
            stopped = np.flatnonzero(block.run[max(0, s - 600):s] < 0.5)
            kind = "stop" if run.min() < 0.5 else ("after" if stopped.size else "running")
            out[kind].append((max(before, key=before.__getitem__), max(served, key=served.__getitem__)))
            if kind == "after":  # seconds from the machine's restart to the window's start
                since = (min(600, s) - 1 - int(stopped[-1])) / cfg.plc_rate_hz
                out.setdefault(f"after_{int(since // 20) * 20}s", []).append(out[kind][-1])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--machines", type=int, default=30)
    ap.add_argument("--seconds", type=float, default=1200.0)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "plc_stops.json")
    ap.add_argument("--no-run-up", action="store_true",
                    help="serve as before the run-up rule (only windows with a standstill withheld)")
    args = ap.parse_args()
    t0 = time.time()
    report: dict[str, object] = {"command": " ".join(["bench/bench_plc_stops.py", *sys.argv[1:]]),
                                 "machines": args.machines, "seconds": args.seconds, "seed": args.seed, "cases": []}
    for domain, stops, fault in tqdm(CASES, desc="cases"):
        got = windows_of(domain, stops, fault, args.machines, args.seconds, args.seed, run_up=not args.no_run_up)
        case: dict[str, object] = {"domain": domain, "stops_per_hour": stops, "fault": fault}
        for kind, rows in got.items():
            named = sum(b != "normal" for b, _ in rows)
            served = sum(s != "normal" for _, s in rows)
            case[kind] = {"windows": len(rows), "named": round(named / max(len(rows), 1), 4),
                          "served": round(served / max(len(rows), 1), 4),
                          "classes_before": dict(Counter(b for b, _ in rows))}
        report["cases"].append(case)  # type: ignore[attr-defined]
        line = ", ".join(f"{k} {v['windows']} named {100 * v['named']:.1f} % served {100 * v['served']:.1f} %"  # type: ignore[index]
                         for k, v in case.items() if isinstance(v, dict))
        tqdm.write(f"{domain} {stops:g}/h {fault}: {line}")
    report["seconds_total"] = round(time.time() - t0, 1)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"total {report['seconds_total']} s; report {args.out}")


if __name__ == "__main__":
    main()
