"""What the thermal model says about frames from low-resolution cameras (the foreign fleet, binned).

    .venv/bin/python bench/bench_foreign_fleet.py --healthy-audio none --data /tmp/ffa --out /tmp/ff_base.json
    .venv/bin/python bench/bench_thermal_resolution.py --foreign /tmp/ff_base.json --foreign-data /tmp/ffa \\
        --out bench/results/thermal_resolution.json

Cheap thermal arrays see a machine in far fewer pixels than a survey camera: 32 x 24 (MLX90640),
80 x 60 (Lepton 2/3), 160 x 120 (Lepton 3.5). Every healthy, bearing-wear, electrical-overheating
and cooling-failure frame of the foreign fleet whose ``assets.json`` gives exact region boxes
(faults past moderate severity) is binned to about each width of ``--widths`` (the mean of
k x k pixel blocks, as a coarser detector integrates the scene; the frame's own encoding kept)
and read as ``linewatch inspect`` reads it: the boxes of ``assets.json`` are scaled to the frame.
Per width: recall per fault, healthy false alarms, what the records withhold and how many carry
the extrapolation flag. Frames narrower than a target are read as they are.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

FAULTS = ("bearing_wear", "electrical_overheating", "cooling_failure")


def binned(frame: np.ndarray, k: int) -> np.ndarray:
    """The mean of ``k x k`` blocks (the frame cropped to a multiple of ``k``), in the frame's dtype."""
    if k <= 1:
        return frame
    h, w = (frame.shape[0] // k) * k, (frame.shape[1] // k) * k
    blocks = frame[:h, :w].astype(np.float64).reshape(h // k, k, w // k, k).mean(axis=(1, 3))
    if np.issubdtype(frame.dtype, np.integer):
        info = np.iinfo(frame.dtype)
        return np.clip(np.round(blocks), info.min, info.max).astype(frame.dtype)
    return blocks.astype(frame.dtype)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--foreign", type=Path, required=True, help="a bench_foreign_fleet.py report")
    ap.add_argument("--foreign-data", type=Path, required=True, help="its --data folder")
    ap.add_argument("--widths", type=int, nargs="+", default=[32, 80, 160, 100_000],
                    help="target widths in pixels (a width above the frame's: the frame as recorded)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/thermal_resolution.json")
    args = ap.parse_args()
    import tifffile

    from models.inspect import Inspector
    from models.inspect.frame_files import read_frame
    from models.inspect.readers import load_assets

    t0 = time.time()
    report = json.loads(args.foreign.read_text())
    inspector = Inspector(assets=load_assets(args.foreign_data / "assets.json"))
    files = {p.name: p for p in (args.foreign_data / "files").glob("*.tif*")}  # twins/ holds healthy namesakes
    rows = [r for r in report["records"] if r["cls"] in ("normal", *FAULTS)
            and (r["cls"] == "normal" or r["severity"] >= 0.5)
            and report["machines"][r["asset_id"]]["camera"]["region_mode"] == "exact"]
    counts: dict[int, dict[str, Counter]] = {w: {c: Counter() for c in ("normal", *FAULTS)} for w in args.widths}
    pixels: dict[int, list[int]] = {w: [] for w in args.widths}
    with tempfile.TemporaryDirectory() as tmp:
        for r in rows:
            frame = read_frame(files[r["tiff"]])
            for width in args.widths:
                k = max(1, int(round(frame.shape[1] / width)))
                small = binned(frame, k)
                pixels[width].append(small.shape[1])
                path = Path(tmp) / r["tiff"]
                tifffile.imwrite(path, small)
                result = inspector.score([path])[0][0]
                c = counts[width][r["cls"]]
                c["n"] += 1
                if result.error:
                    c["errors"] += 1
                    continue
                c["named"] += (result.label != "normal") if r["cls"] == "normal" else (result.label == r["cls"])
                c["extrapolating"] += result.extrapolating
                for w in result.withheld:
                    c[f"withheld:{w}"] += 1
    result_json: dict[str, Any] = {
        "command": " ".join([".venv/bin/python", "bench/bench_thermal_resolution.py", *sys.argv[1:]]),
        "machine": {"platform": platform.platform(), "processor": platform.processor()},
        "widths": {str(w): {"frame_width_median": int(np.median(pixels[w])),
                            "frame_width_range": [int(min(pixels[w])), int(max(pixels[w]))],
                            **{cls: dict(c) for cls, c in per.items()}} for w, per in counts.items()},
        "seconds": round(time.time() - t0, 1)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result_json, indent=1))
    for w, per in counts.items():
        h = per["normal"]
        text = ", ".join(f"{cls} {per[cls]['named']}/{per[cls]['n']}" for cls in FAULTS)
        extrap = sum(per[c]["extrapolating"] for c in per)
        print(f"width ~{w} (median {int(np.median(pixels[w]))} px): {text}; healthy false alarms {h['named']}/{h['n']}; "
              f"extrapolating {extrap}/{sum(per[c]['n'] for c in per)}; errors {sum(per[c]['errors'] for c in per)}")
    print(f"{result_json['seconds']:.0f} s; {args.out}")


if __name__ == "__main__":
    main()
