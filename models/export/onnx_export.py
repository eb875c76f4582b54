"""Export a model to ONNX (opset 20, dynamic batch axis) and check ONNX Runtime against torch.

Input ``input`` ``(batch, *sample_shape)`` float32, output ``logits`` ``(batch, n_classes)``.
The exporter is torch's dynamo exporter; ``dynamo=False`` (TorchScript) is the fallback for
graphs dynamo cannot trace.
"""

from __future__ import annotations

import io
import logging
import warnings
from contextlib import redirect_stdout
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch
from torch import nn

from models.specs import INPUT_NAME, OUTPUT_NAME

OPSET = 20
log = logging.getLogger(__name__)
# The exporter warns once per export that torchvision's custom ops are not registered.
logging.getLogger("torch.onnx._internal.exporter._registration").setLevel(logging.ERROR)
# onnxscript's optimiser logs every rewrite at INFO.
for _name in ("onnx_ir", "onnxscript"):
    logging.getLogger(_name).setLevel(logging.WARNING)


class OnnxParityError(RuntimeError):
    """ONNX Runtime disagrees with torch beyond the stated tolerance."""


@dataclass(frozen=True)
class ParityReport:
    """How close ONNX Runtime FP32 is to torch on the same inputs."""

    n_samples: int
    max_abs_diff: float
    atol: float
    argmax_agreement: float
    batch_sizes: tuple[int, ...]

    def to_dict(self) -> dict[str, object]:
        data = asdict(self)
        data["batch_sizes"] = list(self.batch_sizes)
        return data


def export_onnx(model: nn.Module, sample_shape: tuple[int, ...], path: Path, dynamo: bool = True) -> Path:
    """Write ``model`` (eval mode) to ``path`` with a dynamic batch axis; return ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    model = model.eval()
    example = (torch.randn(2, *sample_shape),)
    with torch.no_grad(), warnings.catch_warnings(), redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        if dynamo:
            try:
                program = torch.onnx.export(
                    model,
                    example,
                    dynamo=True,
                    opset_version=OPSET,
                    input_names=[INPUT_NAME],
                    output_names=[OUTPUT_NAME],
                    dynamic_shapes={INPUT_NAME: {0: torch.export.Dim("batch", min=1, max=65536)}},
                    verbose=False,
                    optimize=True,
                )
                program.save(str(path), external_data=False)
            except Exception as exc:  # noqa: BLE001 - fall back to the TorchScript exporter, logged
                log.warning("dynamo ONNX export of %s failed (%s); using the TorchScript exporter", type(model).__name__, exc)
                dynamo = False
        if not dynamo:
            torch.onnx.export(
                model,
                example,
                str(path),
                dynamo=False,
                opset_version=OPSET,
                input_names=[INPUT_NAME],
                output_names=[OUTPUT_NAME],
                dynamic_axes={INPUT_NAME: {0: "batch"}, OUTPUT_NAME: {0: "batch"}},
            )
    onnx.checker.check_model(str(path))
    return path


def ort_session(path: Path, threads: int = 1, emulate_qdq: bool = False) -> ort.InferenceSession:
    """A CPU ONNX Runtime session with ``threads`` intra-op threads.

    ``emulate_qdq``: no graph optimisation, so every QuantizeLinear/DequantizeLinear runs as
    written (float math on quantized values, int32-exact accumulation): the arithmetic of
    TensorRT's explicit quantization, without ORT CPU's fused int8 kernels (which saturate
    on x86 CPUs without VNNI).
    """
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    if emulate_qdq:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def ort_logits(session: ort.InferenceSession, inputs: np.ndarray, batch_size: int = 256) -> np.ndarray:
    """Logits of ``inputs`` (n, ...) computed batch by batch."""
    outs = [
        session.run([OUTPUT_NAME], {INPUT_NAME: np.ascontiguousarray(inputs[i : i + batch_size], np.float32)})[0]
        for i in range(0, len(inputs), batch_size)
    ]
    return np.concatenate(outs) if outs else np.zeros((0, 0), np.float32)


def check_parity(model: nn.Module, onnx_path: Path, inputs: np.ndarray, atol: float) -> ParityReport:
    """Compare ORT and torch logits on ``inputs`` at batch 1 and the whole batch.

    Passes when ``max |ort - torch| <= atol + 1e-3 * max|torch|`` (a relative term for big
    logits); raises :class:`OnnxParityError` otherwise.
    """
    model = model.eval()
    x = np.ascontiguousarray(inputs, np.float32)
    with torch.no_grad():
        reference = model(torch.from_numpy(x)).numpy()
    session = ort_session(onnx_path)
    full = ort_logits(session, x, batch_size=len(x))
    single = np.concatenate([ort_logits(session, x[i : i + 1], 1) for i in range(min(4, len(x)))])
    diff = max(float(np.max(np.abs(full - reference))), float(np.max(np.abs(single - reference[: len(single)]))))
    limit = atol + 1e-3 * float(np.max(np.abs(reference)))
    report = ParityReport(
        n_samples=len(x),
        max_abs_diff=diff,
        atol=atol,
        argmax_agreement=float(np.mean(full.argmax(1) == reference.argmax(1))),
        batch_sizes=(1, len(x)),
    )
    if not diff <= limit:
        raise OnnxParityError(
            f"{onnx_path.name}: ONNX Runtime logits differ from torch by {diff:.2e} (> {limit:.2e}); "
            "the export is wrong — try export with dynamo=False or report the model"
        )
    return report
