"""Static QDQ INT8 quantization with ONNX Runtime, in two flavours.

* ``cpu``: uint8 activations (asymmetric) / int8 per-channel weights, 7-bit by default
  (``reduce_range``; see :class:`~models.config.QuantizeConfig`). ORT's CPU provider fuses
  the QDQ pattern into QLinearConv / QGemm kernels.
* ``tensorrt``: symmetric int8 activations *and* weights (zero point 0), per-channel weights,
  float bias, dedicated Q/DQ pairs, Relu kept explicit: the layout TensorRT's explicit
  quantization expects. Its accuracy is gated with ORT CPU *without* graph optimisation
  (Q/DQ executed as written = TensorRT's arithmetic); ORT's fused CPU int8 kernels would
  saturate on x86 without VNNI and understate it (measured: audio 0.39 fused vs 0.50 emulated).

The input standardisation nodes always stay FP32 (see :func:`input_preprocessing_nodes`).
The classifier layer is left in FP32 by default: quantizing it clips the logits to the
calibration range and the softmax probabilities lose calibration.
"""

from __future__ import annotations

import logging
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import onnx
from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static
from onnxruntime.quantization.shape_inference import quant_pre_process

from models.config import QuantizeConfig
from models.export.calibration import ArrayCalibrationReader
from models.specs import OUTPUT_NAME

Flavour = Literal["cpu", "tensorrt"]
FLAVOURS: tuple[Flavour, ...] = ("cpu", "tensorrt")
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class QuantizationRecipe:
    """The quantize_static arguments of one flavour (recorded in the model card)."""

    flavour: Flavour
    activation_type: str
    weight_type: str
    per_channel: bool
    reduce_range: bool
    extra_options: dict[str, object]
    nodes_excluded: tuple[str, ...]
    calibration_method: str = "MinMax"


def classifier_nodes(model: onnx.ModelProto) -> list[str]:
    """Names of the nodes of the final linear layer (the Gemm/MatMul(+Add) feeding the output).

    Walks back from the graph output through shape-only nodes to the first Gemm or MatMul.
    """
    producers = {out: node for node in model.graph.node for out in node.output}
    passthrough = {"Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Cast"}
    name = next(o.name for o in model.graph.output if o.name == OUTPUT_NAME)
    found: list[str] = []
    node = producers.get(name)
    while node is not None:
        if node.op_type in ("Gemm", "MatMul"):
            found.append(node.name)
            return found
        if node.op_type == "Add":
            found.append(node.name)
            node = next((producers[i] for i in node.input if i in producers), None)
            continue
        if node.op_type in passthrough:
            node = producers.get(node.input[0])
            continue
        break
    return []


COMPUTE_OPS = ("Conv", "Gemm", "MatMul")


def input_preprocessing_nodes(model: onnx.ModelProto) -> list[str]:
    """Names of the nodes that compute the first Conv/Gemm/MatMul's input from the graph input
    (the baked-in standardisation). They stay FP32: raw features span 0.001..1500, and one
    uint8 scale for all of them (or for the per-feature 1/std vector) destroys the small ones.
    """
    producers = {out: node for node in model.graph.node for out in node.output}
    first = next((n for n in model.graph.node if n.op_type in COMPUTE_OPS), None)
    if first is None:
        return []
    found: dict[str, None] = {}
    stack = [first.input[0]]
    while stack:
        node = producers.get(stack.pop())
        if node is None or node.name in found:
            continue
        found[node.name] = None
        stack.extend(node.input)
    return list(found)


def _preprocess(fp32_path: Path, work: Path) -> Path:
    """ORT's recommended pre-processing (shape inference, BN folding, constant folding)."""
    out = work / "preprocessed.onnx"
    try:
        quant_pre_process(str(fp32_path), str(out), skip_symbolic_shape=False)
    except Exception as exc:  # noqa: BLE001 - pre-processing is an optimisation; log and go on
        log.warning("quant_pre_process failed on %s (%s); quantizing the raw export", fp32_path, exc)
        return fp32_path
    return out


def recipe(flavour: Flavour, cfg: QuantizeConfig, nodes_excluded: list[str]) -> QuantizationRecipe:
    """The quantization arguments of ``flavour``."""
    if flavour == "cpu":
        return QuantizationRecipe(
            flavour="cpu",
            activation_type="QUInt8",
            weight_type="QInt8",
            per_channel=cfg.per_channel,
            reduce_range=cfg.reduce_range,
            extra_options={"WeightSymmetric": True, "ActivationSymmetric": False},
            nodes_excluded=tuple(nodes_excluded),
        )
    if flavour == "tensorrt":
        return QuantizationRecipe(
            flavour="tensorrt",
            activation_type="QInt8",
            weight_type="QInt8",
            per_channel=cfg.per_channel,
            reduce_range=False,
            extra_options={
                "ActivationSymmetric": True,
                "WeightSymmetric": True,
                "QuantizeBias": False,
                "DedicatedQDQPair": True,
                "QDQKeepRemovableActivations": True,
            },
            nodes_excluded=tuple(nodes_excluded),
        )
    raise ValueError(f"unknown quantization flavour {flavour!r}: use one of {FLAVOURS}")


def quantize_int8(
    fp32_path: Path, out_path: Path, calibration_inputs: np.ndarray, flavour: Flavour, cfg: QuantizeConfig
) -> QuantizationRecipe:
    """Write the ``flavour`` INT8 model of ``fp32_path`` to ``out_path``; return its recipe."""
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="lw-quant-") as tmp:
        source = _preprocess(Path(fp32_path), Path(tmp))
        graph = onnx.load(str(source))
        excluded = input_preprocessing_nodes(graph)
        if cfg.keep_last_layer_float:
            excluded += classifier_nodes(graph)
        r = recipe(flavour, cfg, excluded)
        r = QuantizationRecipe(**{**r.__dict__, "calibration_method": cfg.calibration_method})
        quantize_static(
            str(source),
            str(out_path),
            ArrayCalibrationReader(calibration_inputs),
            quant_format=QuantFormat.QDQ,
            per_channel=r.per_channel,
            reduce_range=r.reduce_range,
            activation_type=getattr(QuantType, r.activation_type),
            weight_type=getattr(QuantType, r.weight_type),
            nodes_to_exclude=list(r.nodes_excluded),
            calibrate_method=getattr(CalibrationMethod, cfg.calibration_method),
            extra_options={
                **r.extra_options,
                **({"CalibPercentile": cfg.percentile} if cfg.calibration_method == "Percentile" else {}),
            },
        )
    onnx.checker.check_model(str(out_path))
    return r
