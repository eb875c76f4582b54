"""The extrapolation guard of the fused verdict, replayed on ``linewatch inspect``'s records of a fleet.

    .venv/bin/python bench/bench_blind_fleet.py --skip-generate --with-healthy --fleet /tmp/blind/fleet1 \\
        --records /tmp/blind/records.jsonl --out bench/results/blind_fleet_live_guard.json
    .venv/bin/python bench/bench_fusion_guard.py --records /tmp/blind/records.jsonl \\
        --out bench/results/fusion_guard_blind.json

Each sample's modality records (the probabilities ``inspect`` reports: masked, restricted to the visible
classes, withheld classes dropped, ruled-out classes at 0; and its ``extrapolating`` flag) are fused
again with ``models.fusion.fuse`` and the registry's ``fusion.json``:

- ``guard``: an extrapolating modality enters flattened (``p ** EXTRAPOLATION_POWER``), as ``inspect`` and,
  since 2026-12-07, the live fusion service fuse (``models.training_range``); the replay must reproduce every
  fused verdict ``inspect`` recorded, or the bench stops;
- ``none``: no guard;
- ``faults_only``: flattened only where the extrapolating modality names a fault (its ``normal`` kept whole).

Reported per mode of the records (``plain``: one file each; ``healthy_ref``: with the machine's commissioning
files): fused healthy false-positive rate, detection past moderate severity (any fault named on a faulty
sample of severity >= 0.5), and the samples whose verdict each variant changes against ``guard``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

MODALITIES = ("audio", "thermal", "plc")
VARIANTS = ("guard", "none", "faults_only")


def flattened(record: dict, variant: str) -> bool:
    """Whether ``variant`` flattens a modality record."""
    if not record.get("extrapolating"):
        return False
    return variant == "guard" or (variant == "faults_only" and record.get("class") != "normal")


def replay(rows: list[dict], weights, variant: str) -> dict[tuple[str, str, str], str]:  # type: ignore[no-untyped-def]
    """``{(mode, asset, sample): fused label}`` of every sample with two or more scored modalities."""
    from models.fusion import fuse, temper
    from models.training_range import EXTRAPOLATION_POWER

    out = {}
    for r in rows:
        rec = r["records"]
        mods = {m: rec[m] for m in MODALITIES if rec.get(m, {}).get("probabilities")}
        if len(mods) < 2:
            continue
        classes = tuple(next(iter(mods.values()))["probabilities"])
        probs = {m: temper(v["probabilities"], EXTRAPOLATION_POWER) if flattened(v, variant) else v["probabilities"]
                 for m, v in mods.items()}
        fused = fuse(probs, classes=classes, weights=weights, expected=tuple(mods), asset_type=r["asset_type"],
                     withheld={m: v.get("withheld", []) for m, v in mods.items()})
        out[(r["mode"], r["asset"], r["sample"])] = fused.label
    return out


def main() -> None:
    from models.fusion import FusionWeights

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=Path, required=True, help="bench_blind_fleet.py --records output (JSON lines)")
    parser.add_argument("--registry", type=Path, default=Path("models/default"), help="whose fusion.json to fuse with")
    parser.add_argument("--out", type=Path, default=Path("bench/results/fusion_guard_blind.json"))
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.records.read_text().splitlines() if line.strip()]
    weights = FusionWeights.load(args.registry / "fusion.json")
    fused = {v: replay(rows, weights, v) for v in VARIANTS}
    truth = {(r["mode"], r["asset"], r["sample"]): (r["label"], r["severity"]) for r in rows}
    recorded = {(r["mode"], r["asset"], r["sample"]): r["records"]["fused"]["class"] for r in rows if "fused" in r["records"]}
    wrong = [k for k, lab in fused["guard"].items() if recorded.get(k) != lab]
    if wrong:
        raise SystemExit(f"the replay differs from inspect's fused verdict on {len(wrong)} samples (e.g. {wrong[:3]}): "
                         "records and fusion.json do not belong together")
    report: dict = {"command": " ".join([".venv/bin/python", "bench/bench_fusion_guard.py", *sys.argv[1:]]),
                    "records": str(args.records), "replay_matches_inspect": len(fused["guard"]), "modes": {}}
    for mode in sorted({k[0] for k in fused["guard"]}):
        flagged = sum(1 for r in rows if r["mode"] == mode
                      and any(r["records"].get(m, {}).get("extrapolating") for m in MODALITIES))
        part: dict = {"samples_with_an_extrapolating_modality": flagged}
        for variant in VARIANTS:
            keys = [k for k in fused[variant] if k[0] == mode]
            healthy = [k for k in keys if truth[k][0] == "normal"]
            faulty = [k for k in keys if truth[k][0] != "normal" and truth[k][1] >= 0.5]
            fp = sum(fused[variant][k] != "normal" for k in healthy)
            det = sum(fused[variant][k] != "normal" for k in faulty)
            changed = sorted(f"{k[1]} {k[2]} ({truth[k][0]}): {fused['guard'][k]} -> {fused[variant][k]}"
                             for k in keys if fused[variant][k] != fused["guard"][k])
            part[variant] = {"healthy_fpr": round(fp / max(len(healthy), 1), 4), "false_alarms": fp,
                             "n_healthy": len(healthy), "detection_rate_moderate": round(det / max(len(faulty), 1), 4),
                             "detected": det, "n_faulty_moderate": len(faulty), "changed_vs_guard": changed}
            print(f"{mode:12s} {variant:12s} healthy FPR {fp}/{len(healthy)} = {100 * fp / max(len(healthy), 1):.1f} %, "
                  f"detection past moderate {det}/{len(faulty)} = {det / max(len(faulty), 1):.3f}, "
                  f"{len(changed)} verdicts differ from the guard's")
        report["modes"][mode] = part
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"report: {args.out}")


if __name__ == "__main__":
    main()
