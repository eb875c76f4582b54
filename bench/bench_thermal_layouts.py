"""The shipped thermal model under the frame layouts a user's ``assets.json`` may describe badly.

    .venv/bin/python bench/bench_thermal_layouts.py --out bench/results/thermal_layouts.json

A fresh fleet is drawn with a seed no training run used (``models.data.domain_data``, the same
renderer and feature code as serving, as ``bench/bench_generalisation.py``); each thermal frame
is featurised under these cases:

* ``a_given``: the regions as ``assets.json`` gives them;
* ``b_no_regions``: ``regions`` removed from the machine's entry;
* ``c_perturbed``: every box shifted by 10-25 % of its own width and height (random sign) and
  scaled 0.8-1.25 about its centre, one draw per machine (boxes drawn imprecisely);
* ``d_resolution``: the frame resampled to 0.5, 0.75, 1.5 or 2 x the declared size (one per
  machine) while ``frame.width``/``height`` still declare the old one (the code scales the boxes);
* ``e_camera_shift``: the frame's content shifted by 5-15 % of the frame size in x and y (random
  sign, one draw per machine; edges replicated), the boxes left where they were (camera moved);
* ``f_rotated``: the frame turned by 90 degrees, one way or the other (one draw per machine): a
  vertical machine, or a camera mounted in portrait; the boxes turned with it (the user draws them
  on the frame as it is) and ``frame.width``/``height`` swapped;
* ``g_neighbour``: another machine of the fleet (another sample's frame, in whatever state that
  sample is, scaled to the same height) stands beside it in the frame, left or right (one draw per
  machine): a fixed camera that sees two machines; the boxes stay on this machine;
* ``h_inset``: every box drawn inside its part, each side 0-12 % of the box's size in from the
  part's outline (one draw per box and machine), as thermographers draw a region of interest so
  that it holds none of the background;
* ``i_no_regions_no_fan_side``: as ``b_no_regions``, and ``fan_side`` removed too: the proposal reads
  which end is the drive end from the machine's shape or, where that is open, takes the warmer end.

Every case is featurised with region fitting off (``fit=False``: the boxes exactly as given) and
on (registration / proposal, :mod:`pipeline.features.thermal_fit`), and scored by the shipped INT8
thermal student (ONNX Runtime CPU; classes the machine cannot have masked, renormalised over the
classes the thermal model may name, as served; with fitting on also ``as_served``: on proposed
boxes thermal withholds its faults but an unmistakable hot connection, ``models.withheld_classes``
(and since session 49 electrical overheating wherever a hot line runs through the terminal box,
``pipeline.features.terminal_crossing``; ``--save-vectors`` keeps that flag as ``crossed|CASE``),
and a frame whose motor body is warmer at its fan end is not called healthy, ``models.ruled_out``:
through given boxes, and since session 35 by a clearer margin through registered boxes and through
proposed boxes whose drive end is known, where it names cooling failure;
``as_served_fan_end_rule_on_given_boxes_only`` is session 34's reading, and
``as_served_without_fan_end_rule`` the same without any of it).
Reported per case and setting: recall past
moderate severity (>= 0.5) of bearing_wear, electrical_overheating and cooling_failure, the
healthy false-positive rate, what the fitting did (given / registered / proposed), the mean IoU of
the boxes read against the true boxes, the share of case-a frames whose vector changed, and the
fitting's cost per frame. A bar chart goes next to ``--out`` (``.png``).
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

CASES = ("a_given", "b_no_regions", "c_perturbed", "d_resolution", "e_camera_shift", "f_rotated", "g_neighbour",
         "h_inset", "i_no_regions_no_fan_side")
THERMAL_CLASSES = ("bearing_wear", "electrical_overheating", "cooling_failure")
ZOOMS = (0.5, 0.75, 1.5, 2.0)


def _perturb_boxes(regions: dict, rng: np.random.Generator) -> dict:
    fx = float(rng.uniform(0.10, 0.25)) * float(rng.choice([-1.0, 1.0]))
    fy = float(rng.uniform(0.10, 0.25)) * float(rng.choice([-1.0, 1.0]))
    s = float(rng.uniform(0.8, 1.25))
    out = {}
    for name, (x0, y0, x1, y1) in regions.items():
        w, h = x1 - x0, y1 - y0
        cx, cy = (x0 + x1) / 2 + fx * w, (y0 + y1) / 2 + fy * h
        out[name] = (cx - s * w / 2, cy - s * h / 2, cx + s * w / 2, cy + s * h / 2)
    return out


def _inset_boxes(regions: dict, rng: np.random.Generator) -> dict:
    out = {}
    for name, (x0, y0, x1, y1) in regions.items():
        w, h = x1 - x0, y1 - y0
        a, b, c, d = rng.uniform(0.0, 0.12, 4)
        out[name] = (x0 + a * w, y0 + c * h, x1 - b * w, y1 - d * h)
    return out


def _zoom(frame: np.ndarray, factor: float) -> np.ndarray:
    from scipy.ndimage import zoom

    # mode="nearest": the default constant mode leaves a column of zeros at the edge (a dead column)
    return np.clip(np.rint(zoom(frame.astype(np.float32), factor, order=1, mode="nearest")), 0, 65535).astype(np.uint16)


def _shift(frame: np.ndarray, dy: int, dx: int) -> np.ndarray:
    from scipy.ndimage import shift

    return shift(frame, (dy, dx), order=0, mode="nearest")


def _rotate_box(box: tuple, height: float, width: float, k: int) -> tuple:
    """``box`` ``(x0, y0, x1, y1)`` of a ``height`` x ``width`` frame, in ``np.rot90(frame, k)`` (k 1 or 3)."""
    x0, y0, x1, y1 = box
    return (y0, width - x1, y1, width - x0) if k == 1 else (height - y1, x0, height - y0, x1)


def _iou(a: tuple, b: tuple) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def _mean_iou(read: dict, truth: dict) -> float:
    """Mean IoU over the true boxes (a box not read counts 0)."""
    return float(np.mean([_iou(read[n], t) if n in read else 0.0 for n, t in truth.items()])) if truth else 0.0


def _chunk(args: tuple[str, int, int, int, list[int], float]) -> dict:
    """Render and featurise samples ``indices`` under every case (worker process)."""
    from linewatch.simulator.domain import DomainRenderer
    from linewatch.simulator.noise import make_rng
    from models.data.domain_data import domain_world
    from pipeline.features.thermal_fit import fit_regions
    from pipeline.features.body_axial import mid_axial_k
    from pipeline.features.terminal_crossing import terminal_box_crossed
    from pipeline.features.thermal_regions import frame_to_celsius, scaled_regions, thermal_vector_fit

    domain, n_assets, seed, spc, indices, baseline_share = args
    fleet, profiles, specs = domain_world(domain, n_assets, seed, spc)
    renderer = DomainRenderer(fleet, seed)
    out: dict = {"index": np.asarray(indices, np.int64)}
    vec = {(c, f): [] for c in CASES for f in ("off", "on")}
    status = {c: [] for c in CASES}
    mid = {c: [] for c in CASES}
    ends = {c: [] for c in CASES}
    crossed = {c: [] for c in CASES}
    iou = {(c, f): [] for c in CASES for f in ("off", "on")}
    fit_ms = {c: [] for c in CASES}
    for i in indices:
        spec = specs[i]
        profile = profiles[spec.asset_id]
        frame = renderer.render(spec, ("thermal",)).frame
        rng = make_rng(seed, "thermal-layouts-baseline", i)
        baseline = None
        if rng.random() < baseline_share:
            other = replace(spec, index=spec.index + 7_000_000, load_level=float(rng.uniform(-1, 1)),
                            ambient_c=spec.ambient_c + float(rng.normal(0, 1.5)), drift="none", drift_level=0.0,
                            physical_fault="normal", severity=0.0)
            baseline = renderer.render(other, ("thermal",)).frame
        truth_declared = scaled_regions(profile, frame.shape)
        m = make_rng(seed, "thermal-layouts-machine", spec.asset_id)
        perturbed = _perturb_boxes(dict(profile.regions), m)
        zoom_f = float(m.choice(ZOOMS))
        dy = int(round(float(m.uniform(0.05, 0.15)) * frame.shape[0] * float(m.choice([-1.0, 1.0]))))
        dx = int(round(float(m.uniform(0.05, 0.15)) * frame.shape[1] * float(m.choice([-1.0, 1.0]))))
        turn = int(m.choice([1, 3]))
        left = bool(m.random() < 0.5)
        inset = _inset_boxes(dict(profile.regions), make_rng(seed, "thermal-layouts-inset", spec.asset_id))
        other = specs[(i + len(specs) // 2) % len(specs)]
        if other.asset_id == spec.asset_id:
            other = specs[(i + len(specs) // 2 + 1) % len(specs)]
        for case in CASES:
            f, b, p, truth = frame, baseline, profile, truth_declared
            if case == "b_no_regions":
                p = replace(profile, regions={})
            elif case == "i_no_regions_no_fan_side":
                p = replace(profile, regions={}, fan_side=None)
            elif case == "c_perturbed":
                p = replace(profile, regions=perturbed)
            elif case == "d_resolution":
                f = _zoom(frame, zoom_f)
                b = _zoom(baseline, zoom_f) if baseline is not None else None
                sy, sx = f.shape[0] / frame.shape[0], f.shape[1] / frame.shape[1]
                truth = {n: (x0 * sx, y0 * sy, x1 * sx, y1 * sy) for n, (x0, y0, x1, y1) in truth_declared.items()}
            elif case == "e_camera_shift":
                f = _shift(frame, dy, dx)
                b = _shift(baseline, dy, dx) if baseline is not None else None
                truth = {n: (x0 + dx, y0 + dy, x1 + dx, y1 + dy) for n, (x0, y0, x1, y1) in truth_declared.items()}
            elif case == "f_rotated":
                f = np.rot90(frame, turn).copy()
                b = np.rot90(baseline, turn).copy() if baseline is not None else None
                dh, dw = profile.frame.height or frame.shape[0], profile.frame.width or frame.shape[1]
                p = replace(profile, regions={n: _rotate_box(bx, dh, dw, turn) for n, bx in profile.regions.items()},
                            frame=replace(profile.frame, width=profile.frame.height, height=profile.frame.width))
                truth = {n: _rotate_box(bx, frame.shape[0], frame.shape[1], turn) for n, bx in truth_declared.items()}
            elif case == "h_inset":
                p = replace(profile, regions=inset)
            elif case == "g_neighbour":
                beside = renderer.render(other, ("thermal",)).frame
                beside = _zoom(beside, frame.shape[0] / beside.shape[0])[: frame.shape[0]]
                beside = np.pad(beside, ((0, frame.shape[0] - beside.shape[0]), (0, 0)), mode="edge")
                f = np.concatenate([beside, frame] if left else [frame, beside], axis=1)
                b = np.concatenate([beside, baseline] if left else [baseline, beside], axis=1) if baseline is not None else None
                scale = (profile.frame.width or frame.shape[1]) / frame.shape[1]  # declared units per pixel
                dw = round(beside.shape[1] * scale) if left else 0  # the boxes move right by the neighbour's width
                wide = (profile.frame.width or frame.shape[1]) + round(beside.shape[1] * scale)
                p = replace(profile, regions={n: (x0 + dw, y0, x1 + dw, y1) for n, (x0, y0, x1, y1) in profile.regions.items()},
                            frame=replace(profile.frame, width=wide, height=profile.frame.height or frame.shape[0]))
                sx = beside.shape[1] if left else 0
                truth = {n: (x0 + sx, y0, x1 + sx, y1) for n, (x0, y0, x1, y1) in truth_declared.items()}
            for setting in ("off", "on"):
                v, fit = thermal_vector_fit(f, p, b, fit=setting == "on")
                vec[(case, setting)].append(v)
                iou[(case, setting)].append(_mean_iou(fit.boxes, truth))
                if setting == "on":
                    status[case].append(fit.status)
                    f_c = frame_to_celsius(f, p.frame)
                    m_k = mid_axial_k(f_c, fit.boxes, p)
                    mid[case].append(np.nan if m_k is None else m_k)
                    ends[case].append(fit.ends_known)
                    crossed[case].append(terminal_box_crossed(f_c, fit.boxes))
            frame_c = frame_to_celsius(f, p.frame)
            boxes = scaled_regions(p, frame_c.shape)
            t0 = time.perf_counter()
            fit_regions(frame_c, boxes, p.asset_type, p.fan_side)
            fit_ms[case].append(1000.0 * (time.perf_counter() - t0))
    for (c, s), rows in vec.items():
        out[f"vec|{c}|{s}"] = np.stack(rows).astype(np.float32)
        out[f"iou|{c}|{s}"] = np.asarray(iou[(c, s)], np.float32)
    for c in CASES:
        out[f"status|{c}"] = np.asarray(status[c])
        out[f"mid|{c}"] = np.asarray(mid[c], np.float64)
        out[f"ends|{c}"] = np.asarray(ends[c], bool)
        out[f"crossed|{c}"] = np.asarray(crossed[c], bool)
        out[f"ms|{c}"] = np.asarray(fit_ms[c], np.float32)
    return out


def _chunks(specs: list, per_chunk: int) -> list[list[int]]:
    by_asset: dict[int, list[int]] = {}
    for s in specs:
        by_asset.setdefault(s.asset_index, []).append(s.index)
    chunks, cur = [], []
    for idx in by_asset.values():
        cur += idx
        if len(cur) >= per_chunk:
            chunks.append(cur)
            cur = []
    if cur:
        chunks.append(cur)
    return chunks


def _plot(results: dict, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = [*(f"recall {c.split('_')[0]}" for c in THERMAL_CLASSES), "healthy FPR"]
    fig, axes = plt.subplots(1, len(CASES), figsize=(3.2 * len(CASES), 3.6), sharey=True)
    x = np.arange(len(metrics))
    for ax, case in zip(axes, CASES, strict=True):
        for k, (setting, color) in enumerate((("off", "#999999"), ("on", "#1f77b4"))):
            r = results[case][setting]
            vals = [*(r["recall"][c] for c in THERMAL_CLASSES), r["healthy_fpr"]]
            ax.bar(x + (k - 0.5) * 0.38, vals, 0.38, color=color,
                   label="region fit off (boxes as given)" if setting == "off" else "region fit on")
        ax.axhline(0.9, color="green", lw=0.8, ls="--")
        ax.set_xticks(x, metrics, rotation=40, ha="right", fontsize=8)
        ax.set_title(case, fontsize=9)
        ax.set_ylim(0, 1.05)
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=7, loc="lower left")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--registry", type=Path, default=Path("models/default"))
    parser.add_argument("--per-class", type=int, default=200, help="samples per class (6 classes)")
    parser.add_argument("--assets", type=int, default=120, help="machines in the fresh fleet")
    parser.add_argument("--seed", type=int, default=3101, help="a fleet seed no training run used")
    parser.add_argument("--domain", default="train", choices=("train", "unseen"))
    parser.add_argument("--baseline-share", type=float, default=0.0,
                        help="share of frames with a running (healthy) baseline frame (0: single frames, as inspect)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("bench/results/thermal_layouts.json"))
    parser.add_argument("--save-vectors", type=Path, default=None,
                        help="also write every case's model inputs, fit status, labels and severities (.npz)")
    args = parser.parse_args()
    from tqdm.auto import tqdm

    from models.data.domain_data import domain_world
    from models.export.onnx_export import ort_logits, ort_session
    from models.fusion import FusionWeights
    from models.fusion.fit import restrict_arrays
    from models.registry import ModelRegistry
    from models.training.calibration import softmax
    from models.training.evaluation import apply_mask, evaluate, possible_mask
    from models.ruled_out import rule_out, ruled_out
    from models.withheld_classes import drop_withheld, withheld_classes
    from pipeline.features.body_axial import MID_AXIAL_STAT
    from pipeline.features.thermal_fit import PROPOSED_ENDS_KNOWN_STAT
    from pipeline.features.terminal_crossing import TERMINAL_CROSSED_STAT
    from linewatch.simulator.health import FAULT_CLASSES, FAULT_INDEX

    registry = ModelRegistry(args.registry)
    weights = FusionWeights.load(args.registry / "fusion.json")
    model = registry.latest("thermal")
    session = ort_session(model.path("student_int8_cpu"))
    _, _, specs = domain_world(args.domain, args.assets, args.seed, args.per_class)
    classes = tuple(FAULT_CLASSES)
    y = np.array([FAULT_INDEX[s.fault] for s in specs], np.int64)
    severity = np.array([s.severity for s in specs], np.float32)
    types = np.array([s.asset_type for s in specs])
    tasks = [(args.domain, args.assets, args.seed, args.per_class, c, args.baseline_share) for c in _chunks(specs, 32)]
    t0 = time.perf_counter()
    parts = []
    bar = tqdm(total=len(specs), desc="thermal layouts", unit="frame")
    with ProcessPoolExecutor(max_workers=max(args.workers, 1)) as pool:
        for part in pool.map(_chunk, tasks):
            parts.append(part)
            bar.update(len(part["index"]))
    bar.close()
    render_s = time.perf_counter() - t0
    order = np.argsort(np.concatenate([p["index"] for p in parts]))

    def cat(key: str) -> np.ndarray:
        return np.concatenate([p[key] for p in parts])[order]

    possible = possible_mask(types, classes)
    results: dict = {}
    for case in CASES:
        results[case] = {}
        st = cat(f"status|{case}")
        ms = cat(f"ms|{case}")
        for setting in ("off", "on"):
            x = cat(f"vec|{case}|{setting}")
            p = apply_mask(softmax(ort_logits(session, x)), possible)
            p = restrict_arrays({"thermal": p}, weights.visible, classes)["thermal"]
            e = evaluate(p, y, severity, classes)
            r = {"recall": {c: float(e.recall_past_moderate[c]) for c in THERMAL_CLASSES},
                 "n_past_moderate": {c: int(e.n_past_moderate[c]) for c in THERMAL_CLASSES},
                 "healthy_fpr": float(e.healthy_fpr), "macro_f1_past_moderate": float(e.macro_f1_past_moderate),
                 "mean_box_iou": float(np.mean(cat(f"iou|{case}|{setting}")))}
            if setting == "on":  # as served: on proposed boxes thermal withholds what models.withheld_classes says,
                mid, ends, crossed = cat(f"mid|{case}"), cat(f"ends|{case}"), cat(f"crossed|{case}")  # and a body warmer at its fan end rules normal out
                rows = []  # (models.ruled_out; on proposed boxes whose ends are known it also names cooling failure)
                for i in range(len(p)):
                    stats = {"regions_registered": float(st[i] == "registered"),
                             "regions_proposed": float(st[i] == "proposed"), PROPOSED_ENDS_KNOWN_STAT: float(ends[i]),
                             TERMINAL_CROSSED_STAT: float(crossed[i])}
                    if np.isfinite(mid[i]):
                        stats[MID_AXIAL_STAT] = float(mid[i])
                    rows.append(stats)

                def serve(rule: str) -> tuple[np.ndarray, int]:
                    """``rule``: ``none`` (no fan-end rule), ``given`` (boxes as given only, session 34), ``all``
                    (also registered boxes and proposed boxes with the drive end known, session 35)."""
                    out, n = np.zeros_like(p), 0
                    for i, stats in enumerate(rows):
                        st_i = dict(stats)
                        if rule == "none":
                            st_i.pop(MID_AXIAL_STAT, None)
                        elif rule == "given" and (st_i["regions_registered"] or st_i["regions_proposed"]):
                            st_i.pop(MID_AXIAL_STAT, None)
                        q = dict(zip(classes, p[i].tolist(), strict=True))
                        q = drop_withheld(q, withheld_classes("thermal", x[i], st_i), classes)
                        ruled = ruled_out("thermal", x[i], st_i)
                        if ruled:
                            q, n = rule_out(q, ruled, classes), n + 1
                        out[i] = [q[c] for c in classes]
                    return out, n

                for key, rule in (("as_served_without_fan_end_rule", "none"),
                                  ("as_served_fan_end_rule_on_given_boxes_only", "given")):
                    e0 = evaluate(serve(rule)[0], y, severity, classes)
                    r[key] = {"recall": {c: float(e0.recall_past_moderate[c]) for c in THERMAL_CLASSES},
                              "healthy_fpr": float(e0.healthy_fpr)}
                served, n_ruled = serve("all")
                r["fan_end_warmer_frames"] = n_ruled
                es = evaluate(served, y, severity, classes)
                r["as_served"] = {"recall": {c: float(es.recall_past_moderate[c]) for c in THERMAL_CLASSES},
                                  "healthy_fpr": float(es.healthy_fpr)}
            results[case][setting] = r
        results[case]["fit"] = {s: int((st == s).sum()) for s in ("given", "registered", "proposed", "none")}
        results[case]["fit"]["proposed_ends_known"] = int(cat(f"ends|{case}").sum())
        results[case]["fit_ms"] = {"median": float(np.median(ms)), "p95": float(np.percentile(ms, 95)),
                                   "max": float(ms.max())}
    if args.save_vectors is not None:
        args.save_vectors.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(args.save_vectors, y=y, severity=severity, types=types.astype(str),
                            assets=np.array([s.asset_id for s in specs]).astype(str),
                            **{f"{key}|{case}|{setting}": cat(f"{key}|{case}|{setting}")
                               for case in CASES for setting in ("off", "on") for key in ("vec", "iou")},
                            **{f"status|{case}": cat(f"status|{case}").astype(str) for case in CASES},
                            **{f"mid|{case}": cat(f"mid|{case}") for case in CASES},
                            **{f"ends|{case}": cat(f"ends|{case}") for case in CASES},
                            **{f"crossed|{case}": cat(f"crossed|{case}") for case in CASES})
    a_off, a_on = cat("vec|a_given|off"), cat("vec|a_given|on")
    diff = np.abs(a_off - a_on).max(axis=1)
    identity = {"frames": int(len(diff)), "identical": int((diff == 0).sum()),
                "within_0.05": int((diff <= 0.05).sum()), "max_abs_diff": float(diff.max())}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    summary = {"command": " ".join(sys.argv), "machine": {"platform": platform.platform(),
                                                          "processor": platform.processor()},
               "model": {"thermal": model.version, "role": "student_int8_cpu"},
               "data": {"domain": args.domain, "seed": args.seed, "n": int(len(specs)), "machines": args.assets,
                        "baseline_share": args.baseline_share, "render_and_featurise_s": round(render_s, 1)},
               "case_a_vectors_fit_on_vs_off": identity, "results": results}
    args.out.write_text(json.dumps(summary, indent=1) + "\n")
    _plot(results, args.out.with_suffix(".png"),
          f"shipped INT8 thermal model, fresh fleet (seed {args.seed}, {len(specs)} frames): recall past moderate, FPR")
    print(f"{'case':<16}{'fit':<5}" + "".join(f"{c[:10]:>12}" for c in THERMAL_CLASSES)
          + f"{'FPR':>8}{'IoU':>7}  fit (given/registered/proposed/none)  ms p50/p95")
    for case in CASES:
        for setting in ("off", "on"):
            r = results[case][setting]
            f = results[case]["fit"]
            extra = (f"  {f['given']}/{f['registered']}/{f['proposed']}/{f['none']}  "
                     f"{results[case]['fit_ms']['median']:.1f}/{results[case]['fit_ms']['p95']:.1f}") if setting == "on" else ""
            print(f"{case:<16}{setting:<5}" + "".join(f"{r['recall'][c]:12.3f}" for c in THERMAL_CLASSES)
                  + f"{r['healthy_fpr']:8.3f}{r['mean_box_iou']:7.2f}{extra}")
    print(f"case a, fit on vs off: {identity}")
    for case in CASES:
        r = results[case]["on"]["as_served"]
        print(f"as served, fit on, {case:<16}" + "".join(f"{r['recall'][c]:12.3f}" for c in THERMAL_CLASSES)
              + f"{r['healthy_fpr']:8.3f}")


if __name__ == "__main__":
    main()
