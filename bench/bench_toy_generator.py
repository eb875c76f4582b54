"""A cross-generator sanity check: files from a toy generator that is *not* linewatch's simulator.

    .venv/bin/python bench/bench_toy_generator.py --out /tmp/toy && \
    .venv/bin/linewatch inspect /tmp/toy/bearing_wear/* --assets /tmp/toy/assets.json

Plain tones plus noise, impacts at a 6308's BPFO ringing 3.3 kHz, cavitation as band-passed
bursts, 44.1 kHz WAV of 2 s; thermal as rectangles in a 240 x 320 float-kelvin TIFF with its own
layout; one pump on a VFD, three operating points (shaft 21.5 / 37.3 / 49 Hz, microphone gain
-10 / +8 / +3 dB, ambient 12 / 30 / 38 °C) per case. It is a handful of files, not a benchmark of
accuracy: it showed the v2 audio student calling every healthy clip ``imbalance`` (docs/models.md,
"How the shipped models were made"). ``--score`` prints what the shipped models say.
"""

from __future__ import annotations

import argparse
import json
import wave
from pathlib import Path

import numpy as np
import tifffile
from scipy.signal import butter, sosfilt

SR = 44_100
CASES = ("normal", "bearing_wear", "imbalance", "cavitation", "electrical_overheating", "cooling_failure")
REGIONS = {"motor_body": [60, 100, 200, 170], "de_bearing": [200, 110, 225, 160], "nde_bearing": [40, 110, 60, 160],
           "terminal_box": [100, 75, 140, 100], "coupling": [225, 120, 245, 150], "driven": [245, 90, 310, 180]}


def write_wav(path: Path, x: np.ndarray) -> None:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SR)
        w.writeframes((np.clip(x, -1, 1) * 32767).astype("<i2").tobytes())


def clip(shaft: float, fault: str, gain_db: float, seed: int, seconds: float = 2.0) -> np.ndarray:
    r = np.random.default_rng(seed)
    t = np.arange(int(SR * seconds)) / SR
    x = 0.05 * np.sin(2 * np.pi * shaft * t) + 0.02 * np.sin(2 * np.pi * 2 * shaft * t + 1)
    x += 0.01 * np.sin(2 * np.pi * 3 * shaft * t) + 0.01 * np.sin(2 * np.pi * 7 * shaft * t)
    x += 0.02 * r.standard_normal(t.size) * np.convolve(np.ones(30) / 30, r.standard_normal(t.size), "same")
    x += 0.01 * r.standard_normal(t.size)
    if fault == "imbalance":
        x += 0.25 * np.sin(2 * np.pi * shaft * t)
    if fault == "bearing_wear":
        bpfo = 3.066 * shaft
        imp = np.zeros(t.size)
        pos = (np.arange(0, seconds, 1 / bpfo) * SR).astype(int)
        pos = pos[pos < t.size]
        imp[pos] = 0.5 * r.lognormal(0, 0.3, pos.size)
        k = np.arange(400) / SR
        x += np.convolve(imp, np.exp(-k * 600) * np.sin(2 * np.pi * 3300 * k))[: t.size]
    if fault == "cavitation":
        env = np.zeros(t.size)
        env[r.integers(0, t.size, 80)] = r.lognormal(0, 0.5, 80) * 0.3
        env = np.convolve(env, np.exp(-np.arange(200) / 80), "same")
        x += sosfilt(butter(2, [2000, 8000], btype="band", fs=SR, output="sos"), r.standard_normal(t.size)) * env
    return x * 10 ** (gain_db / 20)


def frame(fault: str, ambient_c: float, seed: int) -> np.ndarray:
    r = np.random.default_rng(seed)
    f = np.full((240, 320), ambient_c, np.float32) + r.normal(0, 0.1, (240, 320)).astype(np.float32)
    f[100:170, 60:200] += 14
    f[110:160, 200:225] += 30 if fault == "bearing_wear" else 12
    f[110:160, 40:60] += 10
    f[75:100, 100:140] += 5
    if fault == "electrical_overheating":
        f[85:89, 118:122] += 45
    f[120:150, 225:245] += 6
    f[90:180, 245:310] += 8
    if fault == "cooling_failure":
        f[100:170, 60:200] += np.linspace(6, 22, 140)[None, :]
        f[110:160, 40:60] += 14
    return f + np.float32(273.15)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--score", action="store_true", help="score each case with the shipped models")
    args = parser.parse_args()
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    assets = {"frame": {"width": 320, "height": 240, "unit": "kelvin"},
              "assets": [{"asset_id": "P7", "asset_type": "centrifugal_pump", "nominal_rpm": 2950, "vfd": True,
                          "bearing": {"designation": "6308"}, "rated_current_a": 60, "regions": REGIONS}]}
    (out / "assets.json").write_text(json.dumps(assets))
    for fault in CASES:
        d = out / fault
        d.mkdir(exist_ok=True)
        for i, (shaft, gain, ambient) in enumerate([(37.3, -10, 12.0), (49.0, 8, 30.0), (21.5, 3, 38.0)]):
            write_wav(d / f"P7-2026113{i}T120000000.wav", clip(shaft, fault, gain, i))
            tifffile.imwrite(d / f"P7-2026113{i}T120000000.tiff", frame(fault, ambient, i))
    if args.score:
        from models.inspect import Inspector
        from models.inspect.readers import load_assets

        inspector = Inspector(assets=load_assets(out / "assets.json"))
        for fault in CASES:
            results, verdicts = inspector.score(sorted((out / fault).iterdir()))
            per_file = " ".join(f"{r.modality[:3]}:{r.label}" for r in results)
            print(f"{fault:<24} {per_file} | fused: {verdicts[0].label if verdicts else '-'}")


if __name__ == "__main__":
    main()
