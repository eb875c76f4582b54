"""Audio against the machine's own healthy sound: what a per-asset audio baseline would buy (docs/models.md).

    .venv/bin/python bench/bench_audio_baseline.py --out bench/results/audio_baseline.json
    .venv/bin/python bench/bench_audio_baseline.py --domain unseen --out bench/results/audio_baseline_unseen.json

Question: the audio model does not name imbalance, and its bearing recall stops near 0.85 at 1 %
healthy FPR. After gain normalisation a raised 1x is only visible against the *same machine's*
earlier 1x (docs/models.md, "Audio imbalance"). How much would the audio vector gain from a
per-asset baseline of the machine's healthy sound, as thermal keeps one and the job learns the PLC
pressure level?

A fresh fleet (``linewatch.simulator.domain``, a seed no training run used) is rendered; each
sample's clip is featurised with ``pipeline.features.audio_physics.audio_vector`` (79 values, the
shipped models' input). Each machine gets a **baseline**: the median over ``--baseline-clips``
healthy clips of the same machine, each at the operating point (time, load, drive speed,
microphone jitter) of another of its drawn samples, of the six shaft-harmonic levels
(``shaft.{1..6}x.level_db``, dB over the clip's RMS). A **chronic** baseline (``--chronic-share``
of the faulty samples) is learnt while the same fault was already present at 0.5-1.0x the sample's
severity, as when a machine was already faulty at commissioning.

Detectors (one per fault class, that class against healthy samples) are trained and scored on
held-out machines (5 grouped folds) on three inputs: the 79 values; the 79 plus the six
clip - baseline deltas with healthy baselines; the same with chronic baselines on part of the
faulty samples. Reported: recall past moderate severity (>= 0.5) at the threshold that flags 1 %
of the held-out healthy samples; two detector kinds (gradient-boosted trees, and an MLP of the
student's shape). These are detectors, not the shipped models: the numbers say what the input
holds, not what a retrained model would serve.

JSON (``--out``) and a PNG of the recalls beside it.
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

BASELINE_NAMES = tuple(f"shaft.{k}x.level_db" for k in range(1, 7))
TARGETS = ("bearing_wear", "imbalance", "cavitation")
SEVERITY_THRESHOLD = 0.5
FPR = 0.01


def _render_machine(args: tuple[str, int, int, int, int, int, float]) -> dict[str, np.ndarray] | None:
    """Every sample of one machine, its healthy baseline, and chronic baselines (worker process)."""
    from linewatch.simulator.domain import DomainRenderer
    from linewatch.simulator.noise import make_rng
    from models.data.domain_data import domain_world
    from pipeline.features.audio_physics import AUDIO_VECTOR_NAMES, audio_vector

    domain, n_assets, seed, spc, asset_index, n_base, chronic_share = args
    fleet, profiles, specs = domain_world(domain, n_assets, seed, spc)
    mine = [s for s in specs if s.asset_index == asset_index]
    if not mine:
        return None
    renderer = DomainRenderer(fleet, seed)
    profile = profiles[mine[0].asset_id]
    idx = [AUDIO_VECTOR_NAMES.index(n) for n in BASELINE_NAMES]
    rng = make_rng(seed, "bench-audio-baseline", domain, asset_index)

    def levels(state, count: int, index0: int) -> np.ndarray:
        """Median shaft levels of ``count`` clips of ``state`` (a fault and severity) on this machine,
        each at the operating point of another of its drawn samples (load, drive speed, microphone
        jitter and cut-off, time: the domain's own draws), without sensor drift."""
        out = []
        for k in range(count):
            point = mine[int(rng.integers(len(mine)))]
            other = replace(point, index=index0 + k, fault=state.fault, physical_fault=state.physical_fault,
                            severity=state.severity, variant=state.variant, drift="none", drift_level=0.0)
            clip = renderer.render(other, ("audio",)).clip.astype(np.float32) / 32768.0
            out.append(audio_vector(clip, 16_000, profile)[idx])
        return np.median(np.stack(out), axis=0)

    healthy = replace(mine[0], fault="normal", physical_fault="normal", severity=0.0, variant="")
    base = levels(healthy, n_base, 50_000_000 + asset_index * 1_000)
    rows: dict[str, list] = {k: [] for k in ("index", "vector", "base", "chronic_base", "chronic")}
    for s in mine:
        clip = renderer.render(s, ("audio",)).clip.astype(np.float32) / 32768.0
        rows["index"].append(s.index)
        rows["vector"].append(audio_vector(clip, 16_000, profile))
        rows["base"].append(base)
        chronic = s.fault != "normal" and rng.random() < chronic_share
        if chronic:
            milder = replace(s, severity=s.severity * float(rng.uniform(0.5, 1.0)))
            rows["chronic_base"].append(levels(milder, max(2, n_base // 4), 60_000_000 + s.index * 10))
        else:
            rows["chronic_base"].append(base)
        rows["chronic"].append(chronic)
    return {k: np.asarray(v) for k, v in rows.items()}


def render(domain: str, n_assets: int, seed: int, per_class: int, n_base: int, chronic_share: float,
           workers: int) -> dict[str, np.ndarray]:
    from models.data.domain_data import domain_world

    _, _, specs = domain_world(domain, n_assets, seed, per_class)
    tasks = [(domain, n_assets, seed, per_class, i, n_base, chronic_share) for i in range(n_assets)]
    parts = []
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for part in tqdm(pool.map(_render_machine, tasks), total=len(tasks), desc=f"render {domain}", unit="machine"):
            if part is not None:
                parts.append(part)
    data = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    order = np.argsort(data["index"])
    data = {k: v[order] for k, v in data.items()}
    by_index = {s.index: s for s in specs}
    data["fault"] = np.array([by_index[i].fault for i in data["index"]])
    data["severity"] = np.array([by_index[i].severity for i in data["index"]], np.float32)
    data["group"] = np.array([by_index[i].asset_id for i in data["index"]])
    return data


def _detector(kind: str, seed: int):
    if kind == "gbt":
        from sklearn.ensemble import HistGradientBoostingClassifier

        return HistGradientBoostingClassifier(max_iter=300, learning_rate=0.05, random_state=seed)
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), MLPClassifier((128, 64), alpha=1e-3, early_stopping=True,
                                                         max_iter=300, random_state=seed))


def score(data: dict[str, np.ndarray], kind: str, seed: int) -> dict:
    """Recall past moderate at 1 % held-out healthy FPR, per target class and input."""
    from pipeline.features.audio_physics import AUDIO_VECTOR_NAMES
    from sklearn.model_selection import GroupKFold

    idx = [AUDIO_VECTOR_NAMES.index(n) for n in BASELINE_NAMES]
    v = data["vector"]
    inputs = {"clip vector (79)": v,
              "+ deltas, healthy baselines": np.c_[v, v[:, idx] - data["base"]],
              "+ deltas, chronic baselines": np.c_[v, v[:, idx] - data["chronic_base"]]}
    fault, sev, groups, chronic = data["fault"], data["severity"], data["group"], data["chronic"]
    out: dict = {}
    for target in TARGETS:
        mask = (fault == "normal") | (fault == target)
        y = (fault[mask] == target).astype(int)
        past = (y == 1) & (sev[mask] >= SEVERITY_THRESHOLD)
        out[target] = {"n_past_moderate": int(past.sum()), "n_healthy": int((y == 0).sum())}
        for name, x in inputs.items():
            xs, s = x[mask], np.zeros(int(mask.sum()))
            for train, test in GroupKFold(5).split(xs, y, groups[mask]):
                s[test] = _detector(kind, seed).fit(xs[train], y[train]).predict_proba(xs[test])[:, 1]
            thr = float(np.quantile(s[y == 0], 1.0 - FPR))
            row = {"recall": round(float(np.mean(s[past] > thr)), 3)}
            if "chronic" in name:
                c = chronic[mask]
                row["recall_chronic"] = round(float(np.mean(s[past & c] > thr)), 3) if (past & c).any() else None
                row["recall_healthy_baseline"] = round(float(np.mean(s[past & ~c] > thr)), 3)
                row["n_chronic"] = int((past & c).sum())
            out[target][name] = row
    return out


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kinds = list(results)
    fig, axes = plt.subplots(1, len(kinds), figsize=(5.5 * len(kinds), 3.8), squeeze=False)
    for ax, kind in zip(axes[0], kinds, strict=True):
        names = [k for k in results[kind][TARGETS[0]] if not k.startswith("n_")]
        width = 0.8 / len(names)
        for j, name in enumerate(names):
            vals = [results[kind][t][name]["recall"] for t in TARGETS]
            ax.bar(np.arange(len(TARGETS)) + j * width, vals, width, label=name)
        ax.axhline(0.9, color="k", lw=0.8, ls=":")
        ax.set_xticks(np.arange(len(TARGETS)) + 0.4 - width / 2, TARGETS)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("recall past moderate @ 1 % healthy FPR")
        ax.set_title(f"detector: {kind} (held-out machines)")
        ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--domain", default="train", choices=("train", "unseen"))
    parser.add_argument("--assets", type=int, default=300)
    parser.add_argument("--per-class", type=int, default=600)
    parser.add_argument("--seed", type=int, default=4242, help="a seed no training run used")
    parser.add_argument("--baseline-clips", type=int, default=8)
    parser.add_argument("--chronic-share", type=float, default=0.5)
    parser.add_argument("--detectors", default="gbt,mlp")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("bench/results/audio_baseline.json"))
    args = parser.parse_args()
    t0 = time.perf_counter()
    data = render(args.domain, args.assets, args.seed, args.per_class, args.baseline_clips, args.chronic_share,
                  args.workers)
    render_s = time.perf_counter() - t0
    results = {kind: score(data, kind, args.seed) for kind in args.detectors.split(",") if kind}
    report = {"command": " ".join(["bench/bench_audio_baseline.py", *sys.argv[1:]]), "args": vars(args) | {
        "out": str(args.out)}, "samples": int(data["index"].size), "machines": int(np.unique(data["group"]).size),
        "render_s": round(render_s, 1), "host": platform.node(), "results": results}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    plot(results, args.out.with_suffix(".png"))
    for kind, res in results.items():
        for target, rows in res.items():
            for name, row in rows.items():
                if not name.startswith("n_"):
                    print(f"{kind:4s} {target:13s} {name:30s} {row}")
    print(f"wrote {args.out} and {args.out.with_suffix('.png')}")


if __name__ == "__main__":
    main()
