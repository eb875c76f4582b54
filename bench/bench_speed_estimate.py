"""How well audio finds a machine's running speed in the sound, on our fleets and another generator's.

    .venv/bin/python bench/bench_foreign_fleet.py --healthy-audio none --data /tmp/ffa --out /tmp/ff_base.json
    .venv/bin/python bench/bench_speed_estimate.py --foreign /tmp/ff_base.json --foreign-data /tmp/ffa \\
        --out bench/results/speed_estimate.json

Every audio feature past the shaft harmonics is read at orders of the running speed (bearing fault
combs, 1x/2x levels). In the live line a PLC ``speed_rpm`` narrows the search to +-4 %; a file
scored alone (``linewatch inspect`` without a PLC file or ``--speed-rpm``) is read at the speed
the harmonic sum of :func:`pipeline.features.audio_physics.estimate_speed` finds around nameplate
speed (fixed speed: 90-106 %, picked inside the motor's slip window where its synchronous speed is
known, since session 34) or over a drive's range (45-120 %, or ``speed_range_rpm``). This
bench measures that estimate, without a hint, against the true shaft speed:

- **our simulator's fleets** (``linewatch.simulator.domain``, seeds no training run used: the
  training types and the unseen types), clips rendered here;
- **the foreign fleet** of ``bench/bench_foreign_fleet.py`` (an independent generator), read from
  its report (``--foreign``: the true speed of each recording and the speed inspect read it at)
  and, for the variants, its WAVs (``--foreign-data``, the bench's ``--data`` folder);

split by fixed speed / drive, with the share of true speeds outside the search range, the ratios
of the wrong estimates (2.0: the second harmonic taken for the shaft) and, on the foreign fleet,
the audio false alarms on healthy recordings read at a wrong speed and at the right one.

**Variants** (measured, not shipped; ``--variants``; each reads a clip's first second, so the
row "as shipped, first second" is their reference where a foreign file is longer): an octave check (after the harmonic sum,
take half the speed when the odd harmonics of that half hold at least ``alpha`` of the evidence
of its even ones), with and without extending a drive's search below 45 % for it, and a term for
a drive motor's magnetic hum at ``poles x speed x (1 + slip)``. A wrong speed counts as more than
4 % off (the comb's tolerance is -4 ... +2 %). JSON (``--out``) and a PNG beside it.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WRONG = 0.04  # relative error past which a speed counts as wrong
FLEETS = (("train", 150, 1001), ("unseen", 60, 1002))  # bench_generalisation's fresh fleets


def _tones(x: np.ndarray) -> tuple[np.ndarray, float]:
    """The tone prominence of a clip's first second as :func:`estimate_speed` reads it."""
    from pipeline.features import audio_physics as ap

    x = np.asarray(x, np.float64)[: ap.SAMPLE_RATE]
    x = x - float(np.mean(x))
    x = x / max(float(np.sqrt(np.mean(x * x))), 1e-12)
    _, prom, df = ap._tone_prominence(x.astype(np.float32))
    return prom.astype(np.float32), df


def _render(args: tuple[str, int, int, int, list[int]]) -> list[dict[str, Any]]:
    """Clips of our simulator's fleet (worker): true speed, the estimate and the tone prominence."""
    from domain_clips import rendered_clips
    from pipeline.features.audio_physics import AUDIO_CLIP_NAMES, audio_segment_vectors

    speed = AUDIO_CLIP_NAMES.index("speed.shaft_hz")
    out = []
    for spec, asset, profile, true_hz, clip in rendered_clips(*args):
        estimate = 60.0 * float(audio_segment_vectors(clip, 16_000, profile, raw=True)[0][speed])
        prom, df = _tones(clip)
        out.append({"fleet": args[0], "asset_id": spec.asset_id, "cls": spec.fault, "vfd": bool(profile.vfd),
                    "poles": asset.poles, "true_hz": true_hz, "estimate_hz": estimate,
                    "prom": prom, "df": df})
    return out


def simulator_clips(per_class: int, workers: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    from models.data.domain_data import domain_world

    jobs = []
    profiles = {}
    for domain, n_assets, seed in FLEETS:
        _, fleet_profiles, specs = domain_world(domain, n_assets, seed, per_class)
        profiles[domain] = fleet_profiles
        jobs += [(domain, n_assets, seed, per_class, c.tolist()) for c in np.array_split(np.arange(len(specs)), 4 * workers)]
    with ProcessPoolExecutor(workers) as pool:
        clips = [c for part in pool.map(_render, jobs) for c in part]
    return clips, profiles


def foreign_clips(report: dict[str, Any], data: Path | None) -> list[dict[str, Any]]:
    """The foreign fleet's recordings: true speed and the speed inspect read (its report), and the
    tone prominence from the WAV where ``data`` is given."""
    import soundfile as sf

    from pipeline.features.audio_physics import resample_to_16k

    files = {p.name: p for p in data.rglob("*.wav")} if data else {}
    out = []
    for r in report["records"]:
        audio = r.get("audio") or {}
        if audio.get("shaft_hz") is None:
            raise SystemExit(f"{r['wav']}: the report holds no speed read by inspect; re-run bench_foreign_fleet.py "
                             "with this commit's inspect (its records carry audio shaft_hz)")
        m = report["machines"][r["asset_id"]]
        row = {"fleet": "foreign", "asset_id": r["asset_id"], "cls": r["cls"], "vfd": bool(m["vfd"]),
               "poles": m["poles"], "true_hz": float(r["shaft_hz"]), "estimate_hz": float(audio["shaft_hz"]),
               "audio_class": audio.get("class"), "seconds": float(r.get("duration_s", 1.0))}
        if files:
            x, rate = sf.read(files[r["wav"]], always_2d=True)
            row["prom"], row["df"] = _tones(resample_to_16k(x.mean(axis=1), rate))
        out.append(row)
    return out


def variant_estimate(clip: dict[str, Any], profile, alpha: float | None = None, below: float | None = None,
                     hum: float | None = None) -> float:
    """:func:`estimate_speed` without a hint, plus the bench's variants (see the module docstring)."""
    from pipeline.features import audio_physics as ap
    from pipeline.features.asset_profile import SPEED_LIMITS_HZ

    prom, df = clip["prom"], clip["df"]
    lo, hi = profile.speed_search_hz() or ap.BROAD_SPEED_RANGE_HZ
    cand = np.arange(lo, hi + ap.SPEED_STEP_HZ, ap.SPEED_STEP_HZ)
    k = np.arange(1, max(3, min(ap.SPEED_HARMONICS, int(ap.TONE_MAX_HZ / hi))) + 1)
    grid = np.arange(prom.shape[0]) * df
    positive = np.log1p(np.maximum(prom - ap.NOISE_PROMINENCE, 0.0))
    w = 1.0 / np.sqrt(k)

    def harmonic_sum(c: np.ndarray) -> np.ndarray:
        return (np.interp(np.outer(c, k), grid, positive) * w).sum(axis=1) / w.sum()

    score = harmonic_sum(cand)
    if hum is not None and profile.vfd and clip["poles"]:
        slips = np.arange(0.0, 0.0601, 0.005)
        score = score + hum * np.interp(np.outer(cand * clip["poles"], 1.0 + slips), grid, positive).max(axis=1)
    best = int(np.argmax(score))
    f = float(cand[best])
    if score[best] - np.median(score) < 0.05 and profile.nominal_shaft_hz and not profile.vfd:
        f = float(min(max(profile.nominal_shaft_hz, lo), hi))
    floor = lo
    if below is not None and profile.vfd and profile.nominal_shaft_hz:
        floor = max(SPEED_LIMITS_HZ[0], below * profile.nominal_shaft_hz)
    if alpha is not None and f / 2.0 >= floor:
        half = f / 2.0
        ks = np.arange(1, min(int(k[-1]), int(ap.TONE_MAX_HZ / half)) + 1)
        evidence = np.array([ap._peak(positive, df, j * half, max(0.5, 0.01 * j * half)) for j in ks])
        odd, even = float(np.mean(evidence[ks % 2 == 1])), float(np.mean(evidence[ks % 2 == 0]))
        if odd > 0 and odd >= alpha * even:
            near = np.arange(0.98 * half, 1.02 * half, ap.SPEED_STEP_HZ)
            f = float(near[int(np.argmax(harmonic_sum(near)))])
    return f


VARIANTS: dict[str, dict[str, float | None]] = {
    "octave check, alpha 0.25": {"alpha": 0.25},
    "octave check, alpha 0.35": {"alpha": 0.35},
    "octave check, alpha 0.5": {"alpha": 0.5},
    "octave check 0.35, drives down to 30 %": {"alpha": 0.35, "below": 0.3},
    "octave check 0.35, drives down to 20 %": {"alpha": 0.35, "below": 0.2},
    "drive hum term, 0.05": {"hum": 0.05},
    "drive hum term, 0.1": {"hum": 0.1},
}


def wrong(true_hz: float, estimate_hz: float) -> bool:
    return abs(estimate_hz - true_hz) > WRONG * true_hz


def summarise(clips: list[dict[str, Any]], profiles: dict[str, Any], estimates: list[float] | None = None
              ) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for fleet in ("train", "unseen", "foreign"):
        for drive in (False, True):
            idx = [i for i, c in enumerate(clips) if c["fleet"] == fleet and c["vfd"] == drive]
            if not idx:
                continue
            est = [estimates[i] if estimates else clips[i]["estimate_hz"] for i in idx]
            bad = [i for i, e in zip(idx, est, strict=True) if wrong(clips[i]["true_hz"], e)]
            ranges = [profiles[fleet][clips[i]["asset_id"]].speed_search_hz() for i in idx]
            outside = sum(1 for i, r in zip(idx, ranges, strict=True)
                          if r is not None and not r[0] <= clips[i]["true_hz"] <= r[1])
            ratios = Counter(f"{e / clips[i]['true_hz']:.1f}" for i, e in zip(idx, est, strict=True)
                             if wrong(clips[i]["true_hz"], e))
            key = f"{fleet}/{'drive' if drive else 'fixed speed'}"
            out[key] = {"clips": len(idx), "wrong": len(bad), "wrong_share": round(len(bad) / len(idx), 4),
                        "true_speed_outside_search_range": outside,
                        "wrong_by_ratio": dict(sorted(ratios.items(), key=lambda kv: -kv[1])),
                        "wrong_by_machine": dict(Counter(clips[i]["asset_id"] for i in bad).most_common(8))}
    return out


def false_alarms(clips: list[dict[str, Any]]) -> dict[str, Any]:
    """The foreign fleet's healthy recordings: audio false alarms read at a wrong / the right speed."""
    out = {}
    for label, is_wrong in (("wrong speed", True), ("right speed", False)):
        rows = [c for c in clips if c["fleet"] == "foreign" and c["cls"] == "normal"
                and wrong(c["true_hz"], c["estimate_hz"]) == is_wrong]
        flagged = [c for c in rows if c.get("audio_class") not in (None, "normal")]
        out[label] = {"healthy": len(rows), "false_alarms": len(flagged),
                      "rate": round(len(flagged) / max(len(rows), 1), 4),
                      "classes": dict(Counter(c["audio_class"] for c in flagged))}
    return out


def plot(clips: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fleets = [f for f in ("train", "unseen", "foreign") if any(c["fleet"] == f for c in clips)]
    fig, axes = plt.subplots(1, len(fleets), figsize=(4.6 * len(fleets), 4.4), squeeze=False)
    for ax, fleet in zip(axes[0], fleets, strict=True):
        for drive, colour in ((False, "tab:blue"), (True, "tab:orange")):
            rows = [c for c in clips if c["fleet"] == fleet and c["vfd"] == drive]
            if rows:
                ax.scatter([c["true_hz"] for c in rows], [c["estimate_hz"] for c in rows], s=6, alpha=0.5, c=colour,
                           label=f"{'drive' if drive else 'fixed speed'} ({sum(wrong(c['true_hz'], c['estimate_hz']) for c in rows)}"
                                 f" of {len(rows)} wrong)")
        ax.plot([0, 70], [0, 70], "k-", lw=0.6)
        ax.plot([0, 35], [0, 70], "k:", lw=0.6)
        ax.set(xlim=(0, 70), ylim=(0, 70), xlabel="true shaft speed (Hz)", ylabel="speed audio read (Hz)",
               title={"train": "our fleet, training types", "unseen": "our fleet, unseen types",
                      "foreign": "another generator's fleet"}[fleet])
        ax.legend(fontsize=7, loc="upper left")
    fig.suptitle("Running speed found in the sound, no PLC speed (dotted: twice the true speed)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/speed_estimate.json")
    ap.add_argument("--per-class", type=int, default=200, help="samples per class of each of our fleets")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--foreign", type=Path, help="a bench_foreign_fleet.py report (this commit's inspect)")
    ap.add_argument("--foreign-data", type=Path, help="its --data folder (the WAVs; needed for --variants)")
    ap.add_argument("--variants", action="store_true", help="also score the variants of the module docstring")
    args = ap.parse_args()
    from models.inspect.readers import load_assets

    t0 = time.time()
    clips, profiles = simulator_clips(args.per_class, args.workers)
    if args.foreign:
        report = json.loads(args.foreign.read_text())
        clips += foreign_clips(report, args.foreign_data)
        profiles["foreign"] = load_assets(args.foreign_data / "assets.json") if args.foreign_data else None
        if profiles["foreign"] is None:
            from pipeline.features.asset_profile import load_profiles

            profiles["foreign"] = load_profiles(report["assets_json"])
    result: dict[str, Any] = {
        "command": " ".join([".venv/bin/python", "bench/bench_speed_estimate.py", *sys.argv[1:]]),
        "machine": {"platform": platform.platform(), "processor": platform.processor()},
        "wrong_if_off_by_more_than": WRONG, "shipped": summarise(clips, profiles)}
    if args.foreign:
        result["foreign_false_alarms"] = false_alarms(clips)
    if args.variants:
        usable = [c for c in clips if "prom" in c]
        base = [variant_estimate(c, profiles[c["fleet"]][c["asset_id"]]) for c in usable]
        one_second = [c["fleet"] != "foreign" or c["seconds"] <= 1.01 for c in usable]
        same = sum(abs(b - c["estimate_hz"]) < 0.02 for b, c, one in zip(base, usable, one_second, strict=True) if one)
        # the variants read a clip's first second; inspect reads a longer file's median over its 1 s segments
        result["variants"] = {"reimplementation_matches_shipped_on_1s_clips": f"{same} of {sum(one_second)}"}
        for name, kw in {"as shipped, first second": {}, **VARIANTS}.items():
            est = [variant_estimate(c, profiles[c["fleet"]][c["asset_id"]], **kw) for c in usable]
            result["variants"][name] = {k: {"wrong": v["wrong"], "clips": v["clips"]}
                                        for k, v in summarise(usable, profiles, est).items()}
    result["seconds"] = round(time.time() - t0, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    plot(clips, args.out.with_suffix(".png"))
    for key, v in result["shipped"].items():
        print(f"{key:26s} wrong {v['wrong']:4d} of {v['clips']:4d} ({100 * v['wrong_share']:.1f} %), true speed outside "
              f"the search range {v['true_speed_outside_search_range']}, ratios {v['wrong_by_ratio']}")
    for label, v in result.get("foreign_false_alarms", {}).items():
        print(f"foreign healthy at the {label}: {v['false_alarms']} of {v['healthy']} audio false alarms {v['classes']}")
    for name, v in result.get("variants", {}).items():
        print(name, v if isinstance(v, str) else {k: f"{x['wrong']}/{x['clips']}" for k, x in v.items() if "drive" in k})
    print(f"{result['seconds']:.0f} s; {args.out}")


if __name__ == "__main__":
    main()
