"""GPU throughput and latency of teachers and students (torch CUDA; no ONNX Runtime needed).

    python bench/bench_models_gpu.py --out $OUT/bench_models_gpu.json

Per modality (plc, thermal, audio) and model (teacher, student): torch CUDA eager vs
torch.compile vs a CUDA graph captured from the eager model, FP32 vs BF16 autocast, batch
1..256. Latency: each call synchronised and timed with CUDA events (median, p99 ms).
Throughput: ``--throughput-iters`` calls back to back, one synchronise, samples/s.
Models are built from the same code and default configs as training (weights random:
speed does not depend on them). Teachers need ``transformers``; without it they are
skipped and the JSON says why. Results are written after every configuration, so a run cut
short by ``--time-budget-s`` (or a timeout) still leaves everything measured so far.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import traceback
from contextlib import nullcontext
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from models.families import family  # noqa: E402

CLASSES = ("normal", "bearing_wear", "electrical_overheating", "cooling_failure", "imbalance", "cavitation")
# Per-sample input shapes of the shipped models (plc: len(plc_feature_names()) at features v1).
SHAPES = {"plc": (37,), "thermal": (120, 160), "audio": (64, 101)}


def default_configs() -> tuple[object, object]:
    """Teacher/student configs: the training defaults (pydantic) or the same values inline."""
    try:
        from models.config import StudentConfig, TeacherConfig

        return TeacherConfig(), StudentConfig()
    except ImportError:  # pydantic missing on the GPU host
        teacher = SimpleNamespace(checkpoint=None, hidden_size=64, num_layers=3, num_heads=4, intermediate_size=128,
                                  dropout=0.1, thermal_patch=20, audio_patch=16, audio_stride=10)
        return teacher, SimpleNamespace(width=16, hidden=128, dropout=0.1)


def build(modality: str, kind: str, shape: tuple[int, ...]) -> torch.nn.Module:
    fam = family(modality)
    stat_shape = shape if fam.per_feature_standardization else (1,) * len(shape)
    stats = (np.zeros(stat_shape, np.float32), np.ones(stat_shape, np.float32))
    teacher_cfg, student_cfg = default_configs()
    if kind == "teacher":
        return fam.build_teacher(teacher_cfg, CLASSES, shape, stats)
    return fam.build_student(student_cfg, len(CLASSES), shape, stats)


def make_runner(model: torch.nn.Module, x: torch.Tensor, variant: str, dtype: str):  # noqa: ANN201
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if dtype == "bf16" else nullcontext()
    if variant == "eager":
        def run() -> torch.Tensor:
            with torch.inference_mode(), autocast:
                return model(x)
        return run, 0.0
    if variant == "compile":
        torch._dynamo.reset()  # fresh caches: never hit the recompile limit and silently run eager
        compiled = torch.compile(model, dynamic=False)
        t0 = time.perf_counter()
        with torch.inference_mode(), autocast:
            compiled(x)
        torch.cuda.synchronize()
        cold = time.perf_counter() - t0

        def run() -> torch.Tensor:
            with torch.inference_mode(), autocast:
                return compiled(x)
        return run, cold
    if variant == "cuda_graph":
        static_x = x.clone()
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream), torch.inference_mode(), autocast:
            for _ in range(3):
                model(static_x)
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        t0 = time.perf_counter()
        with torch.inference_mode(), autocast, torch.cuda.graph(graph):
            static_out = model(static_x)
        torch.cuda.synchronize()
        cold = time.perf_counter() - t0

        def run() -> torch.Tensor:
            graph.replay()
            return static_out
        return run, cold
    raise ValueError(variant)


def measure(run, iters: int, throughput_iters: int) -> dict[str, float]:  # noqa: ANN001
    for _ in range(10):
        run()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(throughput_iters):
        run()
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    return {"median_ms": float(np.median(times)), "p99_ms": float(np.percentile(times, 99)),
            "calls_per_s": throughput_iters / wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--modalities", default="plc,thermal,audio")
    parser.add_argument("--kinds", default="teacher,student")
    parser.add_argument("--variants", default="eager,compile,cuda_graph")
    parser.add_argument("--dtypes", default="fp32,bf16")
    parser.add_argument("--batches", default="1,8,32,128,256")
    parser.add_argument("--iters", type=int, default=100)
    parser.add_argument("--throughput-iters", type=int, default=200)
    parser.add_argument("--time-budget-s", type=float, default=540.0)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("no CUDA device: run this on the GPU machine")
    torch.backends.cuda.matmul.allow_tf32 = False  # FP32 means FP32; BF16 is the reduced-precision variant
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    started = time.perf_counter()
    out = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "cuda": torch.version.cuda,
           "python": platform.python_version(), "results": [], "skipped": [], "complete": False}

    def save() -> None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, indent=1))

    for modality in args.modalities.split(","):
        shape = SHAPES[modality]
        for kind in args.kinds.split(","):
            try:
                model = build(modality, kind, shape).cuda().eval()
            except ImportError as exc:
                out["skipped"].append({"modality": modality, "kind": kind, "reason": f"{type(exc).__name__}: {exc}"})
                save()
                continue
            params = sum(p.numel() for p in model.parameters())
            for dtype in args.dtypes.split(","):
                for variant in args.variants.split(","):
                    for batch in [int(b) for b in args.batches.split(",")]:
                        if time.perf_counter() - started > args.time_budget_s:
                            out["stopped_early"] = f"time budget {args.time_budget_s} s reached"
                            save()
                            return
                        x = torch.randn(batch, *shape, device="cuda")
                        row = {"modality": modality, "kind": kind, "params": params, "dtype": dtype,
                               "variant": variant, "batch": batch}
                        try:
                            run, cold = make_runner(model, x, variant, dtype)
                            m = measure(run, args.iters, args.throughput_iters)
                            row.update(m, cold_s=cold, samples_per_s=m["calls_per_s"] * batch)
                        except Exception as exc:  # noqa: BLE001 - record and go on with the next config
                            row["error"] = f"{type(exc).__name__}: {exc}"
                            row["traceback"] = traceback.format_exc(limit=3)
                        out["results"].append(row)
                        print(json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()
                                          if k != "traceback"}), flush=True)
                        save()
            del model
            torch.cuda.empty_cache()
    out["complete"] = True
    out["wall_s"] = time.perf_counter() - started
    save()


if __name__ == "__main__":
    main()
