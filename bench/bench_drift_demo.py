"""The demo's drift on the demo's line: onset -> raised delay, cause, and false raises without it.

    .venv/bin/python bench/bench_drift_demo.py --seeds 7 1 2 \\
        [--seconds 360] [--cache .runs/drift_demo] [--json .runs/bench_drift_demo.json]
    LINEWATCH_REDIS__URL=redis://127.0.0.1:6379/7 .venv/bin/linewatch demo
    .venv/bin/python bench/bench_drift_demo.py --from-redis redis://127.0.0.1:6379/7   # what that demo raised
    .venv/bin/python bench/bench_drift_demo.py --seeds 7 --thermal-steady 900

The line is ``linewatch demo``'s: its simulator settings (``demo_simulator_config``), its fault
(``--fault bearing_wear`` on one asset from 5 s) and its drift (``DEMO_DRIFT``: a microphone losing
high-frequency sensitivity on the last asset from 40 % of the run), rendered through the pipeline's own
feature code for every modality and asset (``governance.drift.live_line``), and replayed in event-time
order through the drift monitors with the demo's drift settings (``demo_drift_settings``; one
``DriftBoard`` for the three modalities, as ``linewatch serve drift`` has). The no-drift line is the
same line with the drifted asset's microphone rendered without the drift (every asset's samples depend
on its own seeds only). Reported per seed: when the drift was raised (seconds after onset), its scope,
asset and cause, the drifted features, the features not tested; every other raise on either line.
Renders are cached in ``--cache`` (the render is the cost: ~60 ms per asset-second of audio).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from governance.drift.live_line import T0_MS, render_line
from governance.drift.monitor import DriftBoard, FeatureDriftMonitor, WindowDecision
from governance.drift.service import DeployedModel, drift_params
from linewatch.cli.demo_governance import DEMO_DRIFT, add_drift, add_fault, demo_drift_settings, demo_simulator_config
from linewatch.governance_settings import DriftSettings
from linewatch.settings import Settings

MODALITIES = ("plc", "thermal", "audio")


def render(seed: int, seconds: float, cache: Path, fault: str = "bearing_wear") -> dict[str, Any]:
    """Vectors of the demo line (drift injected) and of the drifted asset without the drift; cached."""
    onset, ramp = DEMO_DRIFT.onset_ramp(seconds)
    path = cache / f"v2_seed{seed}_{int(seconds)}s_{DEMO_DRIFT.kind}_{DEMO_DRIFT.magnitude:g}_{onset:g}_{ramp:g}.npz"
    if path.is_file():
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    config = demo_simulator_config(Settings().simulator.model_copy(update={"seed": seed}))
    info: dict[str, str] = {}

    def demo(factory: Any, drift: bool = True) -> None:
        info["fault"] = add_fault(factory, fault, onset_s=min(5.0, 0.05 * seconds), ramp_s=0.3 * seconds)
        if drift:
            info["drift"] = add_drift(factory, DEMO_DRIFT.kind, onset, ramp, DEMO_DRIFT.magnitude)
            info["target"] = factory.fleet[-1].asset_id

    out: dict[str, Any] = {}
    t = time.perf_counter()
    rows: dict[str, list[tuple[str, int, np.ndarray]]] = {m: [] for m in MODALITIES}
    for s in render_line(config, 6, seconds, MODALITIES, demo, audio_vector_only=True):
        rows[s.modality].append((s.message.asset_id, s.message.event_time_ms, np.asarray(s.message.vector)))
    clean = [(s.message.asset_id, s.message.event_time_ms, np.asarray(s.message.vector))
             for s in render_line(config, 6, seconds, ("audio",), lambda f: demo(f, drift=False),
                                  audio_vector_only=True, only={info["target"]})]
    rows["audio_clean"] = clean
    for m, r in rows.items():
        out[f"{m}_asset"] = np.array([a for a, _, _ in r])
        out[f"{m}_t"] = np.array([t for _, t, _ in r], np.int64)
        out[f"{m}_x"] = np.stack([v for _, _, v in r]).astype(np.float64)
    out["info"] = np.array(json.dumps(info | {"render_s": time.perf_counter() - t}))
    cache.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **out)
    return out


def replay(data: dict[str, Any], settings: DriftSettings, drift: bool) -> list[WindowDecision]:
    """Every window decision of the line (with or without the drift) in event-time order."""
    board = DriftBoard()
    monitors = {}
    for m in MODALITIES:
        names, ref, _ = DeployedModel.load(settings, m).reference()
        monitors[m] = FeatureDriftMonitor(names, ref, drift_params(settings, m), m, board)
    target = json.loads(str(data["info"]))["target"]
    events: list[tuple[int, str, str, np.ndarray]] = []
    for m in MODALITIES:
        for a, t, x in zip(data[f"{m}_asset"], data[f"{m}_t"], data[f"{m}_x"]):
            if m == "audio" and not drift and a == target:
                continue
            events.append((int(t), m, str(a), x))
    if not drift:
        events += [(int(t), "audio", str(a), x) for a, t, x in
                   zip(data["audio_clean_asset"], data["audio_clean_t"], data["audio_clean_x"])]
    events.sort(key=lambda e: (e[0], e[1], e[2]))
    out: list[WindowDecision] = []
    for t, m, a, x in events:
        out += [d for d in monitors[m].add(a, x, t)]
    return out


def _describe(d: WindowDecision, onset_ms: int) -> dict[str, Any]:
    return {"t_s": (d.end_ms - T0_MS) / 1000, "after_onset_s": (d.end_ms - onset_ms) / 1000, "scope": d.scope,
            "asset": d.asset_id, "cause": d.cause.cause if d.cause else "",
            "drifted": d.drifted_names[:5], "skipped": len(d.skipped),
            "top": [(f.name, round(f.statistic, 3), f"{f.p_adjusted:.1e}", round(f.effect_size, 2))
                    for f in d.features if f.drifted][:3]}


def evaluate(seed: int, seconds: float, cache: Path) -> dict[str, Any]:
    data = render(seed, seconds, cache)
    info = json.loads(str(data["info"]))
    settings, _ = demo_drift_settings(DriftSettings(), seconds)
    onset_s, _ = DEMO_DRIFT.onset_ramp(seconds)
    onset_ms = T0_MS + int(onset_s * 1000)
    result: dict[str, Any] = {"seed": seed, "seconds": seconds, "fault": info["fault"], "drift": info["drift"],
                              "render_s": round(info["render_s"], 1)}
    for line, drift in (("drift", True), ("no_drift", False)):
        decisions = replay(data, settings, drift)
        raised = [_describe(d, onset_ms) for d in decisions if d.event == "raised"]
        windows = {m: 0 for m in ("asset", "fleet")}
        for d in decisions:
            windows[d.scope] += 1
        result[line] = {"windows": windows, "drifted_windows": sum(d.drifted for d in decisions), "raised": raised}
    hit = [r for r in result["drift"]["raised"] if r["asset"] == info["target"] and r["scope"] == "asset"]
    result["detected"] = bool(hit)
    result["delay_s"] = hit[0]["after_onset_s"] if hit else None
    result["cause"] = hit[0]["cause"] if hit else None
    faulted = info["fault"].split(" on ", 1)[1].split(" ", 1)[0]  # "bearing_wear (v) on PMP-01 from ..."
    result["fault_asset"] = faulted
    # raises on the asset the demo's fault runs on: its sound really changed (the real demo's drift worker
    # reads fusion's open verdict and says cause "fault"; this replay has no fusion)
    result["fault_asset_raises"] = {line: [r for r in result[line]["raised"] if r["asset"] == faulted]
                                    for line in ("drift", "no_drift")}
    result["false_raises_drift_line"] = [r for r in result["drift"]["raised"]
                                         if r not in hit[:1] and r["asset"] != faulted]
    result["false_raises_no_drift_line"] = [r for r in result["no_drift"]["raised"] if r["asset"] != faulted]
    return result


def audio_tau(seed: int, seconds: float, cache: Path) -> dict[str, dict[str, float]]:
    """Integrated autocorrelation time of each audio feature over an asset's baseline clips (15-134 s) on the
    no-drift line: median, 90th percentile and the share <= 3 (a window of 60 clips then is worth >= 20)."""
    from governance.drift.ks import autocorrelation_time

    data = render(seed, seconds, cache)
    target = json.loads(str(data["info"]))["target"]
    out = {}
    for a in sorted(set(data["audio_asset"])):
        src = "audio_clean" if a == target else "audio"
        m = data[f"{src}_asset"] == a
        t = (data[f"{src}_t"][m] - T0_MS) / 1000
        x = data[f"{src}_x"][m][(t >= 15) & (t < 135)]
        taus = np.array([autocorrelation_time(x[:, j]) for j in range(x.shape[1]) if np.std(x[:, j]) > 0])
        out[str(a)] = {"median": round(float(np.median(taus)), 2), "p90": round(float(np.percentile(taus, 90)), 2),
                       "share_le_3": round(float(np.mean(taus <= 3)), 2)}
    return out


def thermal_steady(seed: int, seconds: float, cache: Path, fault: str = "bearing_wear",
                   warmup_s: float = 300.0) -> dict[str, Any]:
    """Thermal asset windows of a longer demo line (its fault, no drift) with asset baselines taken after
    ``warmup_s`` (300: five of the simulator's 60-s thermal time constants): do baselines taken after thermal
    steady state stay clean? Every thermal asset window decision (and drifted fleet window)."""
    from linewatch.governance_settings import ModalityWindows

    path = cache / f"thermal_seed{seed}_{int(seconds)}s.npz"
    if not path.is_file():
        config = demo_simulator_config(Settings().simulator.model_copy(update={"seed": seed}))
        rows = [(s.message.asset_id, s.message.event_time_ms, np.asarray(s.message.vector))
                for s in render_line(config, 6, seconds, ("thermal",),
                                     lambda f: add_fault(f, fault, min(5.0, 0.05 * seconds), 108.0))]
        cache.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(path, asset=np.array([a for a, _, _ in rows]), t=np.array([t for _, t, _ in rows]),
                            x=np.stack([v for _, _, v in rows]))
    with np.load(path, allow_pickle=False) as z:
        assets, times, xs = z["asset"], z["t"], z["x"]
    settings, _ = demo_drift_settings(DriftSettings(), seconds)
    settings = settings.model_copy(update={"modality_windows": {
        **settings.modality_windows, "thermal": ModalityWindows(warmup_s=warmup_s, asset_windows=True)}})
    names, ref, _ = DeployedModel.load(settings, "thermal").reference()
    monitor = FeatureDriftMonitor(names, ref, drift_params(settings, "thermal"), "thermal")
    out = []
    fleet_windows = 0
    for a, t, x in zip(assets, times, xs):
        for d in monitor.add(str(a), x, int(t)):
            fleet_windows += d.scope == "fleet"
            if d.scope == "asset" or d.drifted:
                out.append({"t_s": (d.end_ms - T0_MS) / 1000, "scope": d.scope, "asset": d.asset_id,
                            "drifted": d.drifted_names[:4], "event": d.event})
    return {"seed": seed, "seconds": seconds, "fleet_windows": fleet_windows, "decisions": out,
            "raised": [d for d in out if d["event"] == "raised"]}


def from_redis(url: str, prefix: str = "demo", shards: int = 4) -> dict[str, Any]:
    """What a finished ``linewatch demo`` (run with ``LINEWATCH_REDIS__URL=url``) left in its streams: the line's
    start (the first audio clip's event time), every drift alert raised (seconds after the start, asset, cause,
    message) and the fault verdicts fusion raised (first time per asset and label)."""
    from linewatch.contract import Alert, AudioFeatures, DriftReport, Prediction, StreamNames, Verdict, decode_message
    from linewatch.redis_connection import RedisConnectionSettings, redis_client

    client = redis_client(RedisConnectionSettings(url=url))
    names = StreamNames(prefix, shards)

    def read(stream: str) -> list[Any]:
        out = []
        for _, f in client.xrange(stream):
            try:
                out.append(decode_message(f))
            except ValueError:
                continue
        return out

    # the line's start: the earliest event time left in the features and predictions streams (the demo's
    # retention keeper trims the big features streams first; the predictions keep the first seconds longer)
    streams = [names.features_shard(m, s) for m in MODALITIES for s in range(shards)]
    streams += [names.predictions_shard(m, s) for m in MODALITIES for s in range(shards)]
    start = min(m.event_time_ms for st in streams for m in read(st) if isinstance(m, AudioFeatures | Prediction))
    alerts = [m for m in read(names.alerts) if isinstance(m, Alert) and m.source == "drift" and m.event == "raised"]
    reports = [m for m in read(names.drift()) if isinstance(m, DriftReport)]
    verdicts: dict[tuple[str, str], float] = {}
    for s in range(shards):
        for v in read(names.verdicts_shard(s)):
            if isinstance(v, Verdict) and v.state == "raised":
                key = (v.asset_id, v.label)
                verdicts[key] = min(verdicts.get(key, 1e18), (v.event_time_ms - start) / 1000)
    raised = [{"t_s": (r.window_end_ms - start) / 1000, "kind": r.kind, "scope": r.scope, "asset": r.asset_id,
               "modality": r.modality, "cause": r.cause, "detail": r.cause_detail[:200],
               "drifted": [f.name for f in r.features if f.drifted][:5],
               "not_tested": [f.name for f in r.skipped if f.reason == "n_eff"][:8]}
              for r in reports if r.state == "raised" and (r.drifted or r.kind != "feature")]
    first_raised = {}
    for r in raised:
        first_raised.setdefault((r["kind"], r["modality"], r["asset"]), r)
    onset_s, _ = DEMO_DRIFT.onset_ramp(360.0)
    return {"start_ms": start, "demo_drift_onset_s": onset_s, "drift_alerts": [{"asset": a.asset_id, "label": a.label, "message": a.message}
                                                for a in alerts],
            "first_raised_reports": list(first_raised.values()),
            "fault_verdicts_first_raised_s": {f"{a}:{lab}": t for (a, lab), t in sorted(verdicts.items())}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[7, 1, 2])
    ap.add_argument("--seconds", type=float, default=None, help="the demo's length (default: the demo's default)")
    ap.add_argument("--cache", type=Path, default=Path(".runs/drift_demo"))
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--thermal-steady", type=float, default=None, metavar="SECONDS",
                    help="only: thermal asset windows of a SECONDS-long demo line (demo warm-up), seed --seeds[0]")
    ap.add_argument("--tau", action="store_true", help="only: audio autocorrelation times per asset (--seeds)")
    ap.add_argument("--from-redis", default=None, help="read a finished `linewatch demo` run from this Redis URL "
                    "(demo run with LINEWATCH_REDIS__URL set) instead of replaying")
    args = ap.parse_args()
    if args.from_redis:
        print(json.dumps(from_redis(args.from_redis), indent=1, default=str))
        return
    if args.tau:
        from linewatch.cli.demo_cmd import DEFAULT_SECONDS as default

        for seed in args.seeds:
            print(seed, json.dumps(audio_tau(seed, args.seconds or default, args.cache)))
        return
    if args.thermal_steady:
        print(json.dumps(thermal_steady(args.seeds[0], args.thermal_steady, args.cache), indent=1, default=str))
        return
    from linewatch.cli.demo_cmd import DEFAULT_SECONDS

    seconds = args.seconds or DEFAULT_SECONDS
    results = [evaluate(s, seconds, args.cache) for s in args.seeds]
    for r in results:
        print(json.dumps(r, default=str))
    delays = [r["delay_s"] for r in results if r["detected"]]
    print(f"detected {len(delays)}/{len(results)}; delay after onset (s): {delays}; causes "
          f"{[r['cause'] for r in results]}; other raises with drift "
          f"{sum(len(r['false_raises_drift_line']) for r in results)}, without "
          f"{sum(len(r['false_raises_no_drift_line']) for r in results)}; on the faulted asset "
          f"{[[(x['t_s'], x['drifted'][:2]) for x in r['fault_asset_raises']['no_drift']] for r in results]}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2, default=str))


if __name__ == "__main__":
    main()
