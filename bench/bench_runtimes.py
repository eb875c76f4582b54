"""Latency of one classifier through each runtime: ONNX Runtime in-process vs Triton HTTP vs gRPC.

One client, sequential requests, p50/p99 per ``predict`` call at batch 1 and 32. The Triton
server is the real PyTriton server (deploy/triton/pytriton_server.py, CPU, one ORT thread per
instance, dynamic batcher with the given max queue delay), started by this script.

Two steps, because gRPC cannot be imported beside apache-flink (main .venv) and the stand-in
model needs torch::

    # 1. a thermal-shaped stand-in student (skip when you have a trained model directory)
    .venv/bin/python bench/bench_runtimes.py make-model /tmp/lw-bench-model
    # 2. the measurement, from the services venv (scripts/setup_model_venvs.sh)
    .venv-services/bin/python bench/bench_runtimes.py run --model-dir /tmp/lw-bench-model --flavour fp32
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))


def make_model(out: Path) -> None:
    """A ~student-sized CNN on 1x120x160 frames (random weights: latency only), fp32 + int8_cpu."""
    import torch
    from torch import nn

    torch.manual_seed(0)
    torch.set_num_threads(1)

    def block(c_in: int, c_out: int) -> nn.Sequential:
        return nn.Sequential(nn.Conv2d(c_in, c_out, 3, stride=2, padding=1), nn.BatchNorm2d(c_out), nn.ReLU())

    model = nn.Sequential(
        block(1, 16), block(16, 32), block(32, 64), block(64, 64),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 6),
    ).eval()  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    x = torch.randn(2, 1, 120, 160)
    torch.onnx.export(
        model, (x,), str(out / "student_fp32.onnx"), input_names=["input"], output_names=["logits"],
        dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}}, opset_version=17, dynamo=False,
    )  # fmt: skip
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self._it = iter([{"input": np.random.default_rng(i).normal(size=(1, 1, 120, 160)).astype(np.float32)} for i in range(16)])

        def get_next(self):  # type: ignore[override]
            return next(self._it, None)

    quantize_static(
        str(out / "student_fp32.onnx"), str(out / "student_int8_cpu.onnx"), Reader(),
        quant_format=QuantFormat.QDQ, activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, per_channel=True,
    )  # fmt: skip
    classes = ["normal", "bearing_wear", "electrical_overheating", "cooling_failure", "imbalance", "cavitation"]
    card = {"name": "benchthermal", "modality": "thermal", "classes": classes,
            "input": {"name": "input", "shape": [1, 120, 160], "dtype": "float32", "output_name": "logits"}}  # fmt: skip
    (out / "card.json").write_text(json.dumps(card, indent=2))
    print(f"wrote {out}")


def measure(predict, batch: np.ndarray, iters: int, warmup: int) -> dict[str, float]:
    for _ in range(warmup):
        predict(batch)
    times = np.empty(iters)
    for i in range(iters):
        t0 = time.perf_counter()
        predict(batch)
        times[i] = time.perf_counter() - t0
    ms = times * 1e3
    return {"p50_ms": float(np.median(ms)), "p99_ms": float(np.percentile(ms, 99)), "iters": iters}


def run(args: argparse.Namespace) -> None:
    from models.runtime import RuntimeSettings, load_runtime
    from models.runtime.pytriton_process import PyTritonProcess

    model_dir = Path(args.model_dir)
    local = load_runtime(model_dir, "onnxruntime", args.flavour)
    shape = local.input_spec.sample_shape
    rng = np.random.default_rng(0)
    results: list[dict[str, object]] = []
    batches = {b: rng.normal(size=(b, *shape)).astype(local.input_spec.dtype) for b in args.batches}

    def record(runtime: str, predict) -> None:
        for b, x in batches.items():
            iters = args.iters if b == 1 else max(20, args.iters // 4)
            row = {"runtime": runtime, "batch": b, **measure(predict, x, iters, args.warmup)}
            results.append(row)
            print(f"{runtime:>14} b={b:<3} p50 {row['p50_ms']:7.3f} ms  p99 {row['p99_ms']:7.3f} ms", flush=True)

    record("ort-inprocess", local.predict)
    extra = ["--max-queue-delay-us", str(args.queue_delay_us), "--max-batch", "32"]
    with tempfile.TemporaryDirectory() as work, PyTritonProcess(model_dir, Path(work), args.flavour, extra) as srv:
        for protocol, url in (("http", srv.http_url), ("grpc", srv.grpc_url)):
            try:
                rt = load_runtime(
                    model_dir, "triton", args.flavour, RuntimeSettings(triton_url=url, triton_protocol=protocol)
                )
            except ImportError as exc:
                print(f"triton-{protocol}: unavailable here: {exc}", flush=True)
                continue
            np.testing.assert_allclose(rt.predict(batches[args.batches[0]]), local.predict(batches[args.batches[0]]), atol=1e-4)
            record(f"triton-{protocol}", rt.predict)
            rt.close()
    base = {r["batch"]: r["p50_ms"] for r in results if r["runtime"] == "ort-inprocess"}
    print("\n| runtime | batch | p50 ms | p99 ms | p50 / in-process |\n|---|---|---|---|---|")
    for r in results:
        print(f"| {r['runtime']} | {r['batch']} | {r['p50_ms']:.3f} | {r['p99_ms']:.3f} | {r['p50_ms'] / base[r['batch']]:.1f}x |")
    if args.json:
        Path(args.json).write_text(json.dumps({"model_dir": str(model_dir), "flavour": args.flavour,
                                               "queue_delay_us": args.queue_delay_us, "results": results}, indent=2))  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    mk = sub.add_parser("make-model", help="write a thermal-shaped stand-in model directory (needs torch)")
    mk.add_argument("out", type=Path)
    r = sub.add_parser("run", help="measure (run from .venv-services for gRPC)")
    r.add_argument("--model-dir", required=True)
    r.add_argument("--flavour", default="fp32")
    r.add_argument("--batches", type=int, nargs="+", default=[1, 32])
    r.add_argument("--iters", type=int, default=400)
    r.add_argument("--warmup", type=int, default=30)
    r.add_argument("--queue-delay-us", type=int, default=2000, help="Triton dynamic batcher max queue delay")
    r.add_argument("--json", default=None, help="also write the results here")
    args = p.parse_args(argv)
    make_model(args.out) if args.cmd == "make-model" else run(args)


if __name__ == "__main__":
    main()
