#!/usr/bin/env python3
"""Build a TensorRT engine from a linewatch ONNX model ON the Jetson that will run it.

UNTESTED in CI (no GPU, no TensorRT there). Written against the TensorRT Python API of
TensorRT 8.5-10.x (JetPack 5.1 / 6.x). The equivalent trtexec command is build_engine.sh.

    python3 deploy/jetson/build_engine.py --onnx MODEL_DIR/student.int8.tensorrt.onnx \\
        --engine MODEL_DIR/student.int8.tensorrt.engine --int8 --fp16 \\
        --timing-cache /var/cache/linewatch/timing.cache --workspace-mib 1024 \\
        --min-batch 1 --opt-batch 8 --max-batch 32

INT8 here is *explicit* quantization: the QDQ model (flavour int8_trt: symmetric int8
activations and weights) carries its own scales, so no calibrator is needed; the INT8 flag only
allows TensorRT to use int8 kernels for the quantized layers. --fp16 lets the remaining layers
run in half precision. The timing cache makes rebuilds (new model, same device) much faster.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--onnx", required=True, type=Path)
    p.add_argument("--engine", type=Path, default=None, help="output engine; default: the ONNX path with .engine")
    p.add_argument("--int8", action="store_true", help="enable int8 kernels (explicit quantization from QDQ)")
    p.add_argument("--fp16", action="store_true", help="allow fp16 for non-quantized layers")
    p.add_argument("--timing-cache", type=Path, default=None, help="load if present, save after the build")
    p.add_argument("--workspace-mib", type=int, default=1024, help="workspace memory pool limit")
    p.add_argument("--min-batch", type=int, default=1)
    p.add_argument("--opt-batch", type=int, default=8)
    p.add_argument("--max-batch", type=int, default=32)
    p.add_argument("--dla-core", type=int, default=None, help="build for a DLA core (Orin), GPU fallback on")
    p.add_argument("--verbose", action="store_true")
    args = p.parse_args(argv)
    args.engine = args.engine or args.onnx.with_suffix(".engine")
    return args


def build(args: argparse.Namespace) -> Path:
    try:
        import tensorrt as trt
    except ImportError:
        sys.exit(
            "tensorrt is not importable: on the Jetson use the JetPack python3 (or a venv created with "
            "--system-site-packages) after `sudo apt install python3-libnvinfer`."
        )
    logger = trt.Logger(trt.Logger.VERBOSE if args.verbose else trt.Logger.WARNING)
    builder = trt.Builder(logger)
    major = int(trt.__version__.split(".")[0])
    flags = 0 if major >= 10 else 1 << int(trt.NetworkDefinitionCreationFlag.EXPLICIT_BATCH)
    network = builder.create_network(flags)
    parser = trt.OnnxParser(network, logger)
    if not parser.parse_from_file(str(args.onnx)):
        errors = "\n".join(str(parser.get_error(i)) for i in range(parser.num_errors))
        sys.exit(f"{args.onnx}: ONNX parser failed:\n{errors}")

    config = builder.create_builder_config()
    config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, args.workspace_mib << 20)
    if args.int8:
        config.set_flag(trt.BuilderFlag.INT8)
    if args.fp16:
        config.set_flag(trt.BuilderFlag.FP16)
    if args.dla_core is not None:
        config.default_device_type = trt.DeviceType.DLA
        config.DLA_core = args.dla_core
        config.set_flag(trt.BuilderFlag.GPU_FALLBACK)

    cache_bytes = args.timing_cache.read_bytes() if args.timing_cache and args.timing_cache.is_file() else b""
    timing_cache = config.create_timing_cache(cache_bytes)
    config.set_timing_cache(timing_cache, ignore_mismatch=False)

    # One optimization profile over the batch dimension; the other dims come from the model.
    profile = builder.create_optimization_profile()
    for i in range(network.num_inputs):
        tensor = network.get_input(i)
        dims = list(tensor.shape)
        if any(d < 0 for d in dims[1:]):
            sys.exit(f"input {tensor.name!r} has dynamic non-batch dims {dims}: export with fixed sample shape")
        if dims[0] < 0:
            shapes = [(b, *dims[1:]) for b in (args.min_batch, args.opt_batch, args.max_batch)]
            profile.set_shape(tensor.name, *shapes)
    config.add_optimization_profile(profile)

    serialized = builder.build_serialized_network(network, config)
    if serialized is None:
        sys.exit("TensorRT engine build failed (see the log above; try --verbose)")
    args.engine.parent.mkdir(parents=True, exist_ok=True)
    args.engine.write_bytes(bytes(serialized))
    if args.timing_cache:
        args.timing_cache.parent.mkdir(parents=True, exist_ok=True)
        args.timing_cache.write_bytes(bytes(config.get_timing_cache().serialize()))
    print(f"wrote {args.engine} ({args.engine.stat().st_size / 1e6:.1f} MB) with TensorRT {trt.__version__}")
    return args.engine


if __name__ == "__main__":
    build(parse_args())
