"""Per-item cost of the ingestion decoders and feature functions (single thread, this process).

Inputs are real simulator output (batch mode, a few assets, written to a temp dir). Cases are
measured in interleaved rounds (every case once per round, so background load hits all alike);
each round times a batch of calls and the report gives the median per-call time over rounds.

    PYTHONPATH=. OMP_NUM_THREADS=1 .venv/bin/python bench/bench_features.py --rounds 15 --out /tmp/features.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.pipeline: the v3 oracle, the drive clip

from linewatch.simulator import Factory, SimulatorConfig
from pipeline.decoders import decode_plc_file, decode_thermal_tiff, decode_wav
from pipeline.landing import LandingZone, ManifestEntry, read_manifest
from pipeline.features.audio_features import audio_features, audio_stats, logmel
from pipeline.features.audio_physics import audio_vector
from pipeline.features.messages import audio_features_message, thermal_features_message
from pipeline.features.plc_physics import plc_vector
from pipeline.features.asset_profile import as_profile
from pipeline.features.body_axial import mid_axial_k
from pipeline.features.terminal_crossing import terminal_box_crossed
from pipeline.features.thermal_regions import frame_to_celsius, scaled_regions, thermal_vector
from pipeline.features.plc_window import PlcWindowBuffer, plc_window_features
from pipeline.features.region_check import RegionCheck
from pipeline.features.thermal_features import normalize_frame, thermal_features, thermal_stats
from pipeline.validation import AssetRegistry, check_clip, check_frame
from pipeline.validation.repeats import content_digest


def load_inputs(landing: Path) -> dict[str, object]:
    registry = AssetRegistry.from_file(landing / "assets.json")
    plc_path = sorted((landing / "plc").glob("plc-*.csv"))[0]
    plc_bytes = plc_path.read_bytes()
    samples = decode_plc_file(plc_bytes, plc_path.name, "csv").samples
    manifest = sorted((landing / "manifests").glob("*.jsonl"))[0]  # the simulator's own, all kinds
    blobs = [line.parsed for line in read_manifest(manifest) or [] if isinstance(line.parsed, ManifestEntry)]
    zone = LandingZone(landing)
    tiff = zone.read(next(b for b in blobs if b.kind == "thermal"))
    wav_blob = next(b for b in blobs if b.kind == "audio")
    wav = zone.read(wav_blob)
    return {"registry": registry, "plc_bytes": plc_bytes, "samples": samples, "tiff": tiff, "wav": wav,
            "asset": registry[wav_blob.asset_id]}


def cases(inputs: dict[str, object]) -> dict[str, tuple[Callable[[], object], int, str]]:
    """name -> (call, items per call, unit). ``audio.vector_v3_reference`` is the frozen v3 code the
    shipped audio vector replaced (the test oracle, ``tests/pipeline/oracle/``), for the ratio."""
    from pipeline.features.asset_profile import AssetProfile
    from pipeline.features.audio_physics import _segment_vector as drive_segment
    from tests.pipeline.oracle.audio_physics_v3 import audio_vector as audio_vector_v3
    from tests.pipeline.test_audio_supply_lines import ASSET as DRIVE_ASSET
    from tests.pipeline.test_audio_supply_lines import _clip as drive_clip_of

    drive_clip, drive_profile = drive_clip_of(0, 0.01).astype(np.float64), AssetProfile.from_entry(DRIVE_ASSET)

    samples = inputs["samples"]
    frame = decode_thermal_tiff(inputs["tiff"], "f")  # type: ignore[arg-type]
    clip = decode_wav(inputs["wav"], "a")  # type: ignore[arg-type]
    asset = inputs["asset"]
    baseline = frame.astype(np.float32)
    check = RegionCheck(every=10)
    body_profile = as_profile(asset)
    body_boxes = scaled_regions(body_profile, frame.shape)
    # one 10 s window in wide form, as PlcWindowBuffer builds it
    first = samples[0].timestamp_ms  # type: ignore[index]
    in_window = [s for s in samples if s.timestamp_ms < first + 10_000]  # type: ignore[attr-defined]
    tags = sorted({s.tag for s in in_window})
    ts = np.array([s.timestamp_ms for s in in_window])
    wide = np.full((len(in_window), 7), np.nan)
    from pipeline.features.plc_window import PLC_TAGS
    for i, s in enumerate(in_window):
        wide[i, PLC_TAGS.index(s.tag)] = s.value
    assert len(tags) == 7

    def buffer_one_second() -> None:
        """Steady state: feed 60 s of samples into a fresh buffer, emitting every second."""
        buf = PlcWindowBuffer(samples[0].asset_id)  # type: ignore[index]
        next_wm = first + 1_000
        for s in samples:  # type: ignore[union-attr]
            if s.timestamp_ms >= next_wm:
                buf.advance(next_wm - 1)
                next_wm += 1_000
            buf.add_sample(s)

    n_seconds = (samples[-1].timestamp_ms - first) // 1000  # type: ignore[index]
    n_rows = len(samples)  # type: ignore[arg-type]
    return {
        "plc.decode_csv_file": (lambda: decode_plc_file(inputs["plc_bytes"], "p", "csv"), n_rows, "row"),  # type: ignore[arg-type]
        "plc.window_features": (lambda: plc_window_features(ts, wide, ["A101"]), 1, "window"),
        "plc.buffer_add_and_emit": (buffer_one_second, int(n_seconds), "window (incl. 70 adds)"),
        "thermal.decode_tiff": (lambda: decode_thermal_tiff(inputs["tiff"], "f"), 1, "frame"),  # type: ignore[arg-type]
        # the job's checks of every decoded blob (shape, range, dead pixels, contrast / silence)
        "thermal.check_frame": (lambda: check_frame(frame, "f"), 1, "frame"),
        "audio.check_clip": (lambda: check_clip(clip, 16_000, "a"), 1, "clip"),
        # the content digest that finds a frozen sensor (pipeline.validation.repeats)
        "thermal.content_digest": (lambda: content_digest(frame), 1, "frame"),
        "audio.content_digest": (lambda: content_digest(clip), 1, "clip"),
        "thermal.stats": (lambda: thermal_stats(frame, baseline, asset.regions), 1, "frame"),  # type: ignore[attr-defined]
        "thermal.normalize_frame": (lambda: normalize_frame(frame), 1, "frame"),
        "thermal.features_both": (lambda: thermal_features(frame, baseline, asset.regions), 1, "frame"),  # type: ignore[attr-defined]
        "audio.decode_wav": (lambda: decode_wav(inputs["wav"], "a"), 1, "clip"),  # type: ignore[arg-type]
        "audio.logmel": (lambda: logmel(clip), 1, "clip"),
        "audio.stats": (lambda: audio_stats(clip, 16_000, asset), 1, "clip"),
        "audio.features_both": (lambda: audio_features(clip, 16_000, asset), 1, "clip"),
        # the model inputs and the whole message (what the job's handlers compute per blob)
        "plc.vector": (lambda: plc_vector(plc_window_features(ts, wide, ["A101"]), asset), 1, "window"),
        "thermal.vector": (lambda: thermal_vector(frame, asset, baseline, frame_meta={"unit": "centikelvin"}), 1,
                           "frame"),
        # the same without region fitting (boxes read as given; the vector is identical for these frames)
        "thermal.vector_no_fit": (lambda: thermal_vector(frame, asset, baseline, frame_meta={"unit": "centikelvin"},
                                                         fit=False), 1, "frame"),
        # what the message adds since session 34: the body's fan-end reading, on a second °C copy of the frame
        "thermal.body_mid_axial": (lambda: mid_axial_k(frame_to_celsius(frame, {"unit": "centikelvin"}), body_boxes,
                                                       body_profile), 1, "frame"),
        # what the message adds since session 49: whether a hot line runs through the terminal box, on the same copy
        "thermal.terminal_crossing": (lambda: terminal_box_crossed(frame_to_celsius(frame, {"unit": "centikelvin"}),
                                                                   body_boxes), 1, "frame"),
        "thermal.message": (lambda: thermal_features_message(asset.asset_id, "pump", 0, frame, baseline,  # type: ignore[attr-defined]
                                                             dict(asset.regions) or None, asset=asset), 1, "frame"),  # type: ignore[attr-defined]
        # what the job's handler computes on average: boxes that fit are checked on every 10th frame only
        # (flink.thermal_region_check_frames, pipeline.features.region_check)
        "thermal.message_job_check10": (lambda: thermal_features_message(
            asset.asset_id, "pump", 0, frame, baseline, dict(asset.regions) or None, asset=asset,  # type: ignore[attr-defined]
            check=check), 1, "frame"),
        "audio.vector": (lambda: audio_vector(clip, 16_000, asset), 1, "clip"),
        "audio.vector_v3_reference": (lambda: audio_vector_v3(clip, 16_000, asset), 1, "clip"),
        "audio.message": (lambda: audio_features_message(asset.asset_id, "pump", 0, clip, 16_000, asset=asset), 1,  # type: ignore[attr-defined]
                          "clip"),
        # a 6-pole drive machine whose PWM carrier shows (tests/pipeline/test_audio_supply_lines.py's clip):
        # the vector with the carrier read (speed and notch, as served) and without it (before 2026-12-05)
        "audio.drive_vector": (lambda: drive_segment(drive_clip, drive_profile, None), 1, "clip"),
        "audio.drive_vector_no_carrier": (lambda: drive_segment(drive_clip, drive_profile, None, False), 1, "clip"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--target-ms", type=float, default=40.0, help="wall time per case per round")
    parser.add_argument("--out", type=Path, default=None, help="write JSON results here")
    parser.add_argument("--only", default=None, help="only the cases whose name starts with this (e.g. thermal.)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        landing = Path(tmp)
        Factory(SimulatorConfig(), n_assets=3).run_batch(landing, 1.0, progress=False)
        inputs = load_inputs(landing)
    table = {k: v for k, v in cases(inputs).items() if args.only is None or k.startswith(args.only)}
    # calibrate calls per round so each case takes about target-ms
    calls: dict[str, int] = {}
    for name, (fn, _, _) in table.items():
        fn()
        t0 = time.perf_counter()
        fn()
        once = time.perf_counter() - t0
        calls[name] = max(1, int(args.target_ms / 1000 / max(once, 1e-7)))
    per_item: dict[str, list[float]] = {name: [] for name in table}
    for _ in range(args.rounds):
        for name, (fn, items, _) in table.items():
            t0 = time.perf_counter()
            for _ in range(calls[name]):
                fn()
            per_item[name].append((time.perf_counter() - t0) / (calls[name] * items))
    results = {
        name: {"median_us": statistics.median(v) * 1e6, "min_us": min(v) * 1e6, "unit": table[name][2],
               "rounds": len(v), "calls_per_round": calls[name]}
        for name, v in per_item.items()
    }
    width = max(len(n) for n in results)
    print(f"{'case':<{width}}  {'median µs':>10}  {'min µs':>9}  per")
    for name, r in results.items():
        print(f"{name:<{width}}  {r['median_us']:>10.1f}  {r['min_us']:>9.1f}  {r['unit']}")
    report = {
        "command": "bench/bench_features.py " + " ".join(f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items()
                                                        if v is not None),
        "python": platform.python_version(), "numpy": np.__version__, "cpu_count": os.cpu_count(),
        "load_avg_1m": os.getloadavg()[0], "results": results,
    }
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
