"""What limits audio bearing recall per 1 s clip, and two inputs that might have lifted it (docs/models.md).

    .venv/bin/python bench/bench_audio_bearing_limits.py --out bench/results/audio_bearing_limits.json
    .venv/bin/python bench/bench_audio_bearing_limits.py --domain unseen --assets 120 \\
        --out bench/results/audio_bearing_limits_unseen.json

The audio bearing target (recall >= 0.95 past moderate severity) has stood near 0.85 at 1 % healthy
FPR whatever model reads one clip. This bench asks two questions on a fresh fleet (a seed no
training run used; healthy and bearing samples of ``linewatch.simulator.domain``):

1. **Where are the misses?** Recall of a detector on the shipped 79 clip values, split into
   quintiles of what the simulator drew for each machine: structural damping, resonance frequency,
   the amplitude of one bearing impact over the machine's healthy knocks
   (``severity x signature gain x impact scale / knock scale``), shaft speed and severity.
2. **Would either input find more?**
   - *bearing deltas*: the clip's envelope, comb, kurtogram, spectral-kurtosis and waveform values
     (35 of the 79) minus the same machine's healthy medians over ``--baseline-clips`` clips at its
     other operating points, as audio v5 does for the shaft levels;
   - *cepstral pre-whitening* (Randall & Antoni): the clip's spectrum set to unit magnitude (all
     tones and the resonance's colour removed, the impacts' phase alignment kept) in 0.5-7.8 and
     2-7.8 kHz, its squared envelope read with the pipeline's own fault combs at the bearing's
     orders (speed estimated from the clip as the pipeline does) and the blind comb: 7 values.

Detectors: gradient-boosted trees, healthy vs bearing, 5 folds grouped by machine; recall past
moderate severity (>= 0.5) at the threshold that flags 1 % of the held-out healthy samples. These
are detectors fitted for the bench, not the shipped models. JSON (``--out``) and a PNG beside it.
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

SEVERITY_THRESHOLD = 0.5
FPR = 0.01
BEARING_PREFIXES = ("env.", "comb.", "kurtogram.", "sk.", "wave.")
CPW_BANDS_HZ = ((500.0, 7_800.0), (2_000.0, 7_800.0))
CPW_NAMES = ("cpw.kurtosis_log.0", "cpw.kurtosis_log.1", "cpw.comb.bpfo", "cpw.comb.bpfi", "cpw.comb.bsf2",
             "cpw.comb.max", "cpw.comb.blind")
PHYSICS = ("damping", "resonance_hz", "impact_over_knock", "shaft_hz", "severity")


def prewhitened_envelope_values(x: np.ndarray, profile) -> list[float]:
    """:data:`CPW_NAMES` of one 16 kHz clip (float, any gain)."""
    import scipy.fft

    from pipeline.features import audio_physics as ap

    n = x.shape[0]
    x = x.astype(np.float64) - float(np.mean(x))
    x = x / (float(np.std(x)) + 1e-12)
    _, prom, df = ap._tone_prominence(x.astype(np.float32))
    f_r = ap.estimate_speed(prom, df, profile, None).shaft_hz
    spectrum = scipy.fft.rfft(x)
    freqs = np.fft.rfftfreq(n, 1.0 / ap.SAMPLE_RATE)
    white = spectrum / (np.abs(spectrum) + 1e-12)
    kurt, proms = [], []
    for lo, hi in CPW_BANDS_HZ:
        one_sided = np.zeros(n, complex)
        band = np.where((freqs >= lo) & (freqs <= hi), white, 0.0)
        one_sided[: band.shape[0]] = band
        one_sided[1: band.shape[0]] *= 2.0
        env = np.abs(np.fft.ifft(one_sided)) ** 2
        centred = env - float(env.mean())
        kurt.append(float(np.log1p(np.mean(centred**2) / (float(env.mean()) ** 2 + 1e-12))))
        proms.append(ap._envelope_prominence(centred, n / ap.SAMPLE_RATE)[0])
    stacked = np.stack(proms)
    orders = {k: float(v) for k, v in profile.bearing_orders.items()}
    combs = []
    for name, sideband in (("bpfo", 0.0), ("bpfi", f_r), ("bsf", orders.get("ftf", 0.0) * f_r)):
        order = orders.get(name)
        if order and name == "bsf":
            order = 2.0 * order
        combs.append(ap.fault_comb(stacked, 1.0, order * f_r, sideband) if order else 0.0)
    blind = ap.blind_comb(stacked, 1.0, f_r)[0]
    return kurt + combs + [max(combs + [blind]), blind]


def _render_machine(args: tuple[str, int, int, int, int, int]) -> dict[str, np.ndarray] | None:
    """Healthy and bearing samples of one machine: clip vector, healthy medians, pre-whitened values,
    and the machine's drawn physics (worker process)."""
    from linewatch.simulator.domain import DomainRenderer
    from linewatch.simulator.noise import make_rng
    from models.data.domain_data import domain_world
    from pipeline.features.audio_physics import AUDIO_CLIP_NAMES, audio_vector

    domain, n_assets, seed, per_class, asset_index, n_base = args
    fleet, profiles, specs = domain_world(domain, n_assets, seed, per_class)
    mine = [s for s in specs if s.asset_index == asset_index]
    wanted = [s for s in mine if s.fault in ("normal", "bearing_wear")]
    if not wanted:
        return None
    renderer = DomainRenderer(fleet, seed)
    profile = profiles[mine[0].asset_id]
    asset = fleet[asset_index]
    n_clip = len(AUDIO_CLIP_NAMES)
    rng = make_rng(seed, "bench-audio-bearing-limits", domain, asset_index)

    def clip_of(spec) -> np.ndarray:
        return renderer.render(spec, ("audio",)).clip.astype(np.float32) / 32768.0

    base = []
    for k in range(n_base):  # each at the operating point of another drawn sample, without sensor drift
        point = mine[int(rng.integers(len(mine)))]
        other = replace(point, index=70_000_000 + asset_index * 1_000 + k, fault="normal", physical_fault="normal",
                        severity=0.0, variant="", drift="none", drift_level=0.0)
        base.append(audio_vector(clip_of(other), 16_000, profile)[:n_clip])
    ex = asset.extra
    rows: dict[str, list] = {k: [] for k in ("index", "vector", "cpw", "physics")}
    for s in wanted:
        clip = clip_of(s)
        rows["index"].append(s.index)
        rows["vector"].append(audio_vector(clip, 16_000, profile)[:n_clip])
        rows["cpw"].append(prewhitened_envelope_values(clip, profile))
        ratio = s.severity * ex.get("signature_gain", 1.0) * 0.05 * ex.get("impact_scale", 1.0) / (
            0.006 * ex.get("knock_scale", 1.0))
        rows["physics"].append([asset.resonance_damping, asset.resonance_hz, ratio,
                                asset.nominal_shaft_hz * s.drive_fraction, s.severity])
    out = {k: np.asarray(v, dtype=np.float64 if k != "index" else np.int64) for k, v in rows.items()}
    out["base"] = np.repeat(np.median(np.stack(base), axis=0)[None, :], len(wanted), axis=0)
    return out


def render(domain: str, n_assets: int, seed: int, per_class: int, n_base: int, workers: int) -> dict[str, np.ndarray]:
    from models.data.domain_data import domain_world

    _, _, specs = domain_world(domain, n_assets, seed, per_class)
    tasks = [(domain, n_assets, seed, per_class, i, n_base) for i in range(n_assets)]
    parts = []
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for part in tqdm(pool.map(_render_machine, tasks), total=len(tasks), desc=f"render {domain}", unit="machine"):
            if part is not None:
                parts.append(part)
    return labelled(parts, specs)


def labelled(parts: list[dict[str, np.ndarray]], specs: list) -> dict[str, np.ndarray]:
    """The machines' rows in one table, with each sample's fault, severity and machine (group)."""
    data = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    by_index = {s.index: s for s in specs}
    data["fault"] = np.array([by_index[int(i)].fault for i in data["index"]])
    data["severity"] = np.array([by_index[int(i)].severity for i in data["index"]])
    data["group"] = np.array([by_index[int(i)].asset_id for i in data["index"]])
    return data


def bearing_inputs(data: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(vector, bearing deltas against the machine's healthy median, y bearing, past moderate)``."""
    from pipeline.features.audio_physics import AUDIO_CLIP_NAMES

    bearing_cols = [i for i, n in enumerate(AUDIO_CLIP_NAMES) if n.startswith(BEARING_PREFIXES)]
    v = data["vector"]
    y = (data["fault"] == "bearing_wear").astype(int)
    return v, v[:, bearing_cols] - data["base"][:, bearing_cols], y, (y == 1) & (data["severity"] >= SEVERITY_THRESHOLD)


def held_out_scores(x: np.ndarray, y: np.ndarray, groups: np.ndarray, seed: int) -> np.ndarray:
    """Healthy-vs-bearing scores of gradient-boosted trees (``bench_audio_baseline``'s detector), 5
    folds grouped by machine."""
    from bench_audio_baseline import _detector
    from sklearn.model_selection import GroupKFold

    s = np.zeros(y.shape[0])
    for train, test in GroupKFold(5).split(x, y, groups):
        s[test] = _detector("gbt", seed).fit(x[train], y[train]).predict_proba(x[test])[:, 1]
    return s


def score(data: dict[str, np.ndarray], seed: int) -> dict:
    v, deltas, y, past = bearing_inputs(data)
    inputs = {"clip vector (79)": v,
              f"+ {deltas.shape[1]} bearing deltas against a healthy baseline": np.c_[v, deltas],
              f"+ {len(CPW_NAMES)} pre-whitened envelope values": np.c_[v, data["cpw"]]}
    out: dict = {"n_past_moderate": int(past.sum()), "n_healthy": int((y == 0).sum()), "inputs": {}}
    clip_scores = None
    for name, x in inputs.items():
        s = held_out_scores(x, y, data["group"], seed)
        thr = float(np.quantile(s[y == 0], 1.0 - FPR))
        out["inputs"][name] = {"recall": round(float(np.mean(s[past] > thr)), 3)}
        if clip_scores is None:
            clip_scores = (s, thr)
    s, thr = clip_scores
    quintiles: dict = {}
    for j, name in enumerate(PHYSICS):
        values = data["physics"][:, j]
        edges = np.quantile(values[past], np.linspace(0.0, 1.0, 6))
        rows = []
        for lo, hi in zip(edges[:-1], edges[1:], strict=True):
            m = past & (values >= lo) & (values <= hi)
            rows.append({"from": round(float(lo), 4), "to": round(float(hi), 4), "n": int(m.sum()),
                         "recall": round(float(np.mean(s[m] > thr)), 3)})
        quintiles[name] = rows
    phys = data["physics"]
    easy = past & (phys[:, 0] < 0.08) & (phys[:, 2] > 10.0)
    out["clip_vector_by_quintile"] = quintiles
    out["clip_vector_light_damping_and_impacts_over_10x_knocks"] = {
        "n": int(easy.sum()), "recall": round(float(np.mean(s[easy] > thr)), 3)}
    out["clip_vector_the_rest"] = {"n": int((past & ~easy).sum()),
                                   "recall": round(float(np.mean(s[past & ~easy] > thr)), 3)}
    return out


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(PHYSICS), figsize=(3.2 * len(PHYSICS), 3.2), sharey=True)
    for ax, name in zip(axes, PHYSICS, strict=True):
        rows = results["clip_vector_by_quintile"][name]
        ax.bar(range(len(rows)), [r["recall"] for r in rows], color="tab:blue")
        ax.set_xticks(range(len(rows)), [f"{r['from']:.3g}-\n{r['to']:.3g}" for r in rows], fontsize=6)
        ax.axhline(0.95, color="k", lw=0.8, ls=":")
        ax.set_title(name, fontsize=9)
        ax.set_ylim(0, 1.05)
    axes[0].set_ylabel("bearing recall past moderate\n@ 1 % held-out healthy FPR")
    fig.suptitle("audio bearing recall of one 1 s clip (79 values) by quintile of the machine's drawn physics",
                 fontsize=9)
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
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("bench/results/audio_bearing_limits.json"))
    args = parser.parse_args()
    t0 = time.perf_counter()
    data = render(args.domain, args.assets, args.seed, args.per_class, args.baseline_clips, args.workers)
    render_s = time.perf_counter() - t0
    results = score(data, args.seed)
    report = {"command": " ".join(["bench/bench_audio_bearing_limits.py", *sys.argv[1:]]),
              "args": vars(args) | {"out": str(args.out)}, "samples": int(data["index"].size),
              "machines": int(np.unique(data["group"]).size), "render_s": round(render_s, 1),
              "host": platform.node(), "results": results}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    plot(results, args.out.with_suffix(".png"))
    print(json.dumps(results, indent=1))
    print(f"wrote {args.out} and {args.out.with_suffix('.png')}")


if __name__ == "__main__":
    main()
