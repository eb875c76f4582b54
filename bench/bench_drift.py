"""Drift benchmark: KS cost per feature-window, false alarms without drift, detection delay per drift kind.

    .venv/bin/python bench/bench_drift.py [--seeds 20] [--json out.json]

1. **Cost** (one run, medians of repeated windows): a window of 500 live values per feature tested against
   a reference of 256 (the cards' sample) and of 5,000 values: the presorted reference + ``searchsorted``
   statistic with scipy's asymptotic p-value (first computation, and cached), against
   ``scipy.stats.ks_2samp`` (``method="asymp"`` and the default ``"auto"``, which is exact here).
2. **False alarms without drift**: (a) numpy level, continuous data: windows of 200 against a reference of
   256, 45 features, Bonferroni and BH at alpha 0.01 — the share of windows with any drifted feature and of
   feature-windows; (b) the PLC scenario streams (``governance.drift.scenarios``: real vectors + noise, asset
   baselines) with no drift: drifted windows and raised alarms.
3. **Detection delay and cause** per drift kind (sensor: plc_temp_offset on one asset; machine: load/speed/
   vibration/pressure shift on one asset; fleet: ambient_shift on every asset) at two magnitudes: windows from
   the onset to the raise (raise_after=2), the share of runs detected, the cause hint, false raises on the
   assets that did not drift.
5. With ``--gpu-run DIR``: fleet windows of rendered samples (the domain fleet through the feature code, with
   the simulator's drift kinds) against each card's reference.
4. **Shadow teacher under input drift**: the shipped PLC INT8 student against its own teacher on the card's
   reference vectors with a temperature offset or a machine change of growing size.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import stats

from governance.drift.ks import PresortedKS, asymptotic_p
from governance.drift.monitor import DriftParams, FeatureDriftMonitor, ReferenceTests
from governance.drift.scenarios import AssetStream, ambient_shift, machine_change, plc_reference, plc_temp_offset


def _median_ms(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def cost(repeats: int = 200) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    out: dict[str, Any] = {}
    for n_ref in (256, 5000):
        ref = rng.normal(size=n_ref)
        lives = [rng.normal(size=500) for _ in range(repeats)]
        ks = PresortedKS(ref)
        asymptotic_p.cache_clear()
        it = iter(lives)
        cold = _median_ms(lambda: ks.test(next(it)), repeats)  # new windows: mostly new D values
        warm_live = lives[0]
        ks.test(warm_live)
        warm = _median_ms(lambda: ks.test(warm_live), repeats)
        stat_only = _median_ms(lambda: ks.statistic(np.sort(warm_live)), repeats)
        it2 = iter(lives)
        asymp = _median_ms(lambda: stats.ks_2samp(ref, next(it2), method="asymp"), repeats)
        it3 = iter(lives)
        auto = _median_ms(lambda: stats.ks_2samp(ref, next(it3)), max(20, repeats // 4))
        out[f"ref{n_ref}"] = {"presorted_cold_ms": cold, "presorted_cached_ms": warm, "statistic_only_ms": stat_only,
                              "scipy_asymp_ms": asymp, "scipy_auto_ms": auto,
                              "ratio_scipy_auto_over_presorted_cold": auto / cold,
                              "ratio_scipy_asymp_over_presorted_cold": asymp / cold}
    # a whole PLC window: 45 features of real reference vectors, window 500
    names, ref = plc_reference()
    tests = ReferenceTests(names, ref)
    stream = AssetStream(names, ref, row=7, noise=0.25, seed=1)
    windows = [stream.draw(500) for _ in range(50)]
    asymptotic_p.cache_clear()
    it = iter(windows)
    per_window = _median_ms(lambda: tests.evaluate(next(it), 0.01, "bonferroni"), 50)
    out["plc_window"] = {"features": len(names), "window": 500, "reference": len(ref), "ms_per_window": per_window,
                         "ms_per_feature": per_window / len(names)}
    return out


def null_numpy(n_windows: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for correction in ("bonferroni", "bh"):
        rng = np.random.default_rng(11)
        tests = ReferenceTests([f"f{j}" for j in range(45)], rng.normal(size=(256, 45)))
        windows = features = 0
        for _ in range(n_windows):
            flagged = sum(f.drifted for f in tests.evaluate(rng.normal(size=(200, 45)), 0.01, correction))
            windows += flagged > 0
            features += flagged
        out[correction] = {"windows": n_windows, "alpha": 0.01, "window_rate": windows / n_windows,
                           "feature_window_rate": features / (n_windows * 45)}
    return out


def _fleet(seed: int, n: int = 5) -> dict[str, AssetStream]:
    names, ref = plc_reference()
    return {f"PMP-{i:02d}": AssetStream(names, ref, row=(11 * i + 3 * seed) % len(ref), noise=0.25, seed=seed * 100 + i)
            for i in range(n)}


def scenario(seed: int, perturb: dict[str, Callable[..., Any]], windows: int, onset: int,
             params: DriftParams) -> dict[str, list[Any]]:
    names, ref = plc_reference()
    streams = _fleet(seed)
    mon = FeatureDriftMonitor(names, ref, params)
    t = 0
    by_asset: dict[str, list[Any]] = {a: [] for a in streams}
    for a, s in streams.items():
        for v in s.draw(params.baseline_size):
            mon.add(a, v, t)
            t += 1000
    for w in range(windows):
        for a, s in streams.items():
            x = s.draw(params.window)
            if w >= onset and a in perturb:
                x = perturb[a](s, x)
            for v in x:
                for d in mon.add(a, v, t):
                    if d.scope == "asset":
                        by_asset[a].append(d)
                t += 1000
    return by_asset


def detection(seeds: int) -> dict[str, Any]:
    params = DriftParams(window=200, baseline_size=300, raise_after=2, clear_after=3, cooldown=2)
    onset, windows = 4, 12
    kinds: dict[str, Callable[[list[str]], dict[str, Callable[..., Any]]]] = {
        "sensor plc_temp_offset x1 (4 K)": lambda assets: {"PMP-02": plc_temp_offset},
        "sensor plc_temp_offset x0.5 (2 K)": lambda assets: {"PMP-02": lambda s, x: plc_temp_offset(s, x, 0.5)},
        "machine load/speed/vib/pressure +0.5 sd": lambda assets: {"PMP-02": machine_change},
        "machine +0.25 sd": lambda assets: {"PMP-02": lambda s, x: machine_change(s, x, 0.25)},
        "fleet ambient_shift x1 (6 K)": lambda assets: {a: ambient_shift for a in assets},
        "fleet ambient_shift x0.5 (3 K)": lambda assets: {a: lambda s, x: ambient_shift(s, x, 0.5) for a in assets},
        "none": lambda assets: {},
    }
    out: dict[str, Any] = {}
    for kind, make in kinds.items():
        delays: list[int] = []
        causes: list[str] = []
        detected = runs = false_raises = drifted_null_windows = null_windows = 0
        for seed in range(seeds):
            assets = [f"PMP-{i:02d}" for i in range(5)]
            perturb = make(assets)
            by_asset = scenario(seed, perturb, windows, onset, params)
            for a, ds in by_asset.items():
                if a not in perturb:
                    false_raises += sum(d.event == "raised" for d in ds)
                    drifted_null_windows += sum(d.drifted for d in ds)
                    null_windows += len(ds)
                    continue
                drifted_null_windows += sum(d.drifted for d in ds[:onset])
                null_windows += onset
                false_raises += sum(d.event == "raised" for d in ds[:onset])
                runs += 1
                raised = [i for i, d in enumerate(ds) if d.event == "raised" and i >= onset]
                if raised:
                    detected += 1
                    delays.append(raised[0] - onset + 1)
                    causes.append(ds[raised[0]].cause.cause if ds[raised[0]].cause else "")
        out[kind] = {"drifted_assets_runs": runs, "detected": detected,
                     "delay_windows_median": statistics.median(delays) if delays else None,
                     "delay_windows_max": max(delays) if delays else None,
                     "cause_counts": {c: causes.count(c) for c in sorted(set(causes))},
                     "false_raises": false_raises, "null_windows": null_windows,
                     "null_windows_drifted": drifted_null_windows}
    return out


def shadow_under_drift() -> dict[str, Any]:
    """How far the shipped PLC student (INT8, serving) drifts from its own teacher when the inputs drift:
    disagreement and the share flagged as faults on the card's 256 reference vectors, perturbed."""
    import onnxruntime as ort

    from models.registry.store import DEFAULT_ROOT as REGISTRY

    names, ref = plc_reference()
    x0 = ref.astype(np.float32)
    teacher = ort.InferenceSession(str(REGISTRY / "plc" / "v4" / "teacher.fp32.onnx"), providers=["CPUExecutionProvider"])
    student = ort.InferenceSession(str(REGISTRY / "plc" / "v4" / "student.int8.cpu.onnx"),
                                   providers=["CPUExecutionProvider"])

    def measure(x: Any) -> dict[str, float]:
        t = teacher.run(None, {"input": x})[0].argmax(1)
        s = student.run(None, {"input": x})[0].argmax(1)
        return {"disagreement": float(np.mean(t != s)), "student_faults": float(np.mean(s != 0)),
                "teacher_faults": float(np.mean(t != 0))}

    out = {"none": measure(x0)}
    for kelvin in (4, 10, 20, 40):
        x = x0.copy()
        for n in ("temp.bearing_c_over_100", "temp.winding_c_over_100"):
            x[:, names.index(n)] += kelvin / 100
        out[f"temperature +{kelvin} K"] = measure(x)
    sd = ref.std(axis=0)
    for f in (0.5, 1.0, 2.0, 3.0):
        x = x0.copy()
        for n in ("vib.mean_log", "current.mean_over_rated", "speed.mean_over_nominal", "pressure.mean_over_nominal"):
            x[:, names.index(n)] += f * sd[names.index(n)]
        out[f"machine +{f} sd"] = measure(x)
    return out


def rendered_fleet(run: str, seed: int = 0) -> dict[str, Any]:
    """Fleet windows of 500 rendered samples (the GPU run's feature vectors: the simulator's domain fleet through
    the project's feature code) against each card's reference: training-domain samples without drift, the
    unseen-type fleet, and the training samples of each simulator drift kind."""
    from pathlib import Path

    from governance.drift.scenarios import reference
    from models.data.domain_data import load_run_data

    train, unseen = load_run_data(Path(run))
    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {}
    for m in ("plc", "thermal", "audio"):
        names, ref = reference(m)
        tests = ReferenceTests(names, ref)
        x, u = getattr(train, m), getattr(unseen, m)
        sets = {"train, no drift": x[rng.choice(np.where(train.drifts == "none")[0], 500, replace=False)],
                "unseen machine types": u[rng.choice(len(u), 500, replace=False)]}
        for kind in ("camera_ageing", "ambient_shift", "mic_degradation", "plc_temp_offset"):
            sets[f"train, {kind}"] = x[rng.choice(np.where(train.drifts == kind)[0], 500, replace=False)]
        out[m] = {}
        for label, rows in sets.items():
            feats = tests.evaluate(np.asarray(rows, np.float64), 0.01, "bonferroni")
            out[m][label] = {"drifted": sum(f.drifted for f in feats), "of": len(feats),
                             "top": [f.name for f in feats if f.drifted][:4]}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--null-windows", type=int, default=5000)
    parser.add_argument("--json", default=None)
    parser.add_argument("--gpu-run", default=None, help="feature vectors of a scripts/train_gpu.py run (optional)")
    args = parser.parse_args()
    t0 = time.perf_counter()
    result: dict[str, Any] = {"cost": cost(), "null_numpy": null_numpy(args.null_windows), "detection": detection(args.seeds),
              "shadow_under_drift": shadow_under_drift()}
    if args.gpu_run:
        result["rendered_fleet"] = rendered_fleet(args.gpu_run)
    result["seconds"] = time.perf_counter() - t0
    text = json.dumps(result, indent=1, default=float)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
