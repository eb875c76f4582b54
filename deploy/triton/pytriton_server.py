"""Serve one flavour of a linewatch model directory on a real Triton server (PyTriton, CPU).

PyTriton's wheel bundles ``tritonserver`` with the Python backend only, so the model runs in an
ONNX Runtime session inside a bound Python function; requests are batched by Triton's dynamic
batcher. The model is exposed exactly as Triton's onnxruntime backend would expose the
exported repository (``export_triton_repository``): same model name, same input/output names,
raw model output - so ``TritonRunner`` works unchanged against either.

Run it from its own venv (scripts/setup_model_venvs.sh triton)::

    .venv-triton/bin/python deploy/triton/pytriton_server.py --model-dir MODEL_DIR \\
        --flavour int8_cpu --http-port 8000 --grpc-port 8001 --metrics-port 8002

SIGTERM or SIGINT stops the server: in-flight requests finish, and Triton waits up to
--exit-timeout-s (default 5 s) for clients to close their connections.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import sysconfig
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]


def _ensure_libpython_path() -> None:
    """Triton's Python-backend stub must load this interpreter's libpython, not the system one."""
    libdir = sysconfig.get_config_var("LIBDIR") or ""
    current = os.environ.get("LD_LIBRARY_PATH", "")
    if libdir and libdir not in current.split(":"):
        os.environ["LD_LIBRARY_PATH"] = f"{libdir}:{current}" if current else libdir


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model-dir", required=True, type=Path)
    p.add_argument(
        "--flavour", default=None, help="fp32 | int8_cpu | int8_trt | teacher_fp32 (default: the card's serving role)"
    )
    p.add_argument("--model-name", default=None, help="default: triton_model_name(model_dir, flavour)")
    p.add_argument("--host", default="127.0.0.1", help="bind address for HTTP and gRPC (0.0.0.0 on a device)")
    p.add_argument("--http-port", type=int, default=8000)
    p.add_argument("--grpc-port", type=int, default=8001)
    p.add_argument("--metrics-port", type=int, default=8002)
    p.add_argument("--max-batch", type=int, default=32)
    p.add_argument("--preferred-batch", type=int, nargs="*", default=[8, 16])
    p.add_argument("--max-queue-delay-us", type=int, default=2000)
    p.add_argument("--instances", type=int, default=1, help="model instances (each one ORT session)")
    p.add_argument("--intra-op-threads", type=int, default=1)
    p.add_argument(
        "--exit-timeout-s", type=int, default=5,
        help="on SIGTERM, wait this long for in-flight requests and open client connections (Triton: 30)",
    )  # fmt: skip
    p.add_argument("--log-level", default="WARNING")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    _ensure_libpython_path()
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))

    import numpy as np
    from pytriton.decorators import batch
    from pytriton.model_config import DynamicBatcher, ModelConfig, Tensor
    from pytriton.triton import Triton, TritonConfig

    from models.runtime.factory import default_flavour
    from models.runtime.model_dir import load_card, resolve_model_file, triton_model_name
    from models.runtime.onnxruntime_runner import OnnxRuntimeRunner, OrtOptions

    args.flavour = args.flavour or default_flavour(args.model_dir, "triton")
    model_path = resolve_model_file(args.model_dir, args.flavour)
    name = args.model_name or triton_model_name(args.model_dir, args.flavour)
    card = load_card(args.model_dir)
    options = OrtOptions(intra_op_threads=args.intra_op_threads, providers=("CPUExecutionProvider",))
    runners = [OnnxRuntimeRunner(model_path, options, card) for _ in range(max(1, args.instances))]
    inp, out = runners[0].input_spec, runners[0].output_spec

    def make_infer(runner: OnnxRuntimeRunner) -> Any:
        @batch
        def infer(**inputs: np.ndarray) -> dict[str, np.ndarray]:
            return {out.name: runner.run_raw(inputs[inp.name])}

        return infer

    def triton_dims(shape: tuple[int | None, ...]) -> tuple[int, ...]:
        return tuple(-1 if d is None else d for d in shape[1:])

    config = TritonConfig(
        http_address=args.host,
        http_port=args.http_port,
        grpc_address=args.host,
        grpc_port=args.grpc_port,
        metrics_port=args.metrics_port,
        exit_timeout_secs=args.exit_timeout_s,
    )

    def stop_on_sigterm(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt  # Triton.serve() shuts the server down on KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop_on_sigterm)
    with Triton(config=config) as triton:
        triton.bind(
            model_name=name,
            infer_func=[make_infer(r) for r in runners],
            inputs=[Tensor(name=inp.name, dtype=inp.dtype, shape=triton_dims(inp.shape))],
            outputs=[Tensor(name=out.name, dtype=out.dtype, shape=triton_dims(out.shape))],
            config=ModelConfig(
                max_batch_size=args.max_batch,
                batcher=DynamicBatcher(
                    max_queue_delay_microseconds=args.max_queue_delay_us,
                    preferred_batch_size=[b for b in args.preferred_batch if b <= args.max_batch] or None,
                ),
            ),
            strict=True,
        )
        logging.getLogger("linewatch.pytriton").warning(
            "serving %s (%s) as %r on http %s:%d grpc %s:%d",
            model_path.name, runners[0].providers, name, args.host, args.http_port, args.host, args.grpc_port,
        )
        triton.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
