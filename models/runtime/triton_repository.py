"""Write a Triton model repository for Triton's onnxruntime backend from a model directory.

Layout written::

    <out_repo>/<name>/config.pbtxt
    <out_repo>/<name>/labels.txt          (class names, when the card has them)
    <out_repo>/<name>/1/model.onnx

The config declares dynamic batching, an instance group and, for GPU instances, the optional
TensorRT accelerator of the onnxruntime backend (precision, workspace, engine cache). The text
is protobuf text format for ``inference.ModelConfig`` (tests parse it with tritonclient's
``model_config_pb2``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Literal

import onnxruntime as ort
from pydantic import BaseModel, ConfigDict, Field

from models.runtime.base import TensorSpec
from models.runtime.model_dir import load_card, resolve_model_file, triton_model_name
from models.runtime.onnxruntime_runner import spec_of

_TRITON_TYPES = {
    "float32": "TYPE_FP32",
    "float16": "TYPE_FP16",
    "float64": "TYPE_FP64",
    "uint8": "TYPE_UINT8",
    "int8": "TYPE_INT8",
    "int32": "TYPE_INT32",
    "int64": "TYPE_INT64",
    "bool": "TYPE_BOOL",
}


class TensorRTAccelerator(BaseModel):
    """``gpu_execution_accelerator { name: "tensorrt" ... }`` of the onnxruntime backend."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    precision_mode: Literal["FP32", "FP16", "INT8"] = "INT8"
    max_workspace_size_bytes: int = 1 << 30
    engine_cache_path: str | None = Field(
        "/var/cache/linewatch-trt-cache",
        description="engine cache dir on the Triton host (keep it persistent: a rebuild takes minutes); None = off",
    )


class TritonRepositoryOptions(BaseModel):
    """Everything ``export_triton_repository`` writes into ``config.pbtxt``.

    >>> TritonRepositoryOptions().instance_kind
    'KIND_GPU'
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    flavour: str = "int8_trt"
    model_name: str | None = Field(None, description="default: triton_model_name(model_dir, flavour)")
    max_batch_size: int = Field(32, ge=1)
    preferred_batch_sizes: tuple[int, ...] = (8, 16)
    max_queue_delay_us: int = Field(2000, ge=0)
    instance_kind: Literal["KIND_GPU", "KIND_CPU"] = "KIND_GPU"
    instance_count: int = Field(1, ge=1)
    gpus: tuple[int, ...] = ()
    tensorrt: TensorRTAccelerator | None | Literal["auto"] = Field(
        "auto", description="auto: INT8 for int8 flavours, FP16 otherwise, on KIND_GPU only"
    )
    intra_op_threads: int = Field(1, ge=0, description="ORT intra-op threads per instance (0 = all cores)")


def _accelerator(options: TritonRepositoryOptions) -> TensorRTAccelerator | None:
    if options.instance_kind != "KIND_GPU":
        return None  # the TensorRT accelerator only applies to GPU instances
    if options.tensorrt == "auto":
        return TensorRTAccelerator(precision_mode="INT8" if "int8" in options.flavour else "FP16")
    return options.tensorrt


def _dims(spec: TensorSpec) -> str:
    """Dims without the batch dimension; dynamic dims are -1."""
    return "[ " + ", ".join("-1" if d is None else str(d) for d in spec.shape[1:]) + " ]"


def _tensor_block(spec: TensorSpec, extra: str = "") -> str:
    dtype = _TRITON_TYPES.get(spec.dtype.name)
    if dtype is None:
        raise ValueError(f"tensor {spec.name!r}: dtype {spec.dtype} has no Triton equivalent")
    return f"  {{\n    name: {json.dumps(spec.name)}\n    data_type: {dtype}\n    dims: {_dims(spec)}{extra}\n  }}"


def render_config(
    name: str, inp: TensorSpec, out: TensorSpec, options: TritonRepositoryOptions, labels: bool
) -> str:
    """The ``config.pbtxt`` text (protobuf text format of ``inference.ModelConfig``)."""
    preferred = [b for b in options.preferred_batch_sizes if b <= options.max_batch_size]
    lines = [
        f"name: {json.dumps(name)}",
        'backend: "onnxruntime"',
        f"max_batch_size: {options.max_batch_size}",
        "input [\n" + _tensor_block(inp) + "\n]",
        "output [\n" + _tensor_block(out, '\n    label_filename: "labels.txt"' if labels else "") + "\n]",
        "dynamic_batching {\n"
        + (f"  preferred_batch_size: [ {', '.join(map(str, preferred))} ]\n" if preferred else "")
        + f"  max_queue_delay_microseconds: {options.max_queue_delay_us}\n}}",
    ]
    group = f"  {{\n    count: {options.instance_count}\n    kind: {options.instance_kind}\n"
    if options.instance_kind == "KIND_GPU" and options.gpus:
        group += f"    gpus: [ {', '.join(map(str, options.gpus))} ]\n"
    lines.append("instance_group [\n" + group + "  }\n]")
    accel = _accelerator(options)
    if accel is not None:
        params = [
            ("precision_mode", accel.precision_mode),
            ("max_workspace_size_bytes", str(accel.max_workspace_size_bytes)),
        ]
        if accel.engine_cache_path:
            params += [("trt_engine_cache_enable", "1"), ("trt_engine_cache_path", accel.engine_cache_path)]
        body = "\n".join(f"        parameters {{ key: {json.dumps(k)} value: {json.dumps(v)} }}" for k, v in params)
        lines.append(
            "optimization {\n  execution_accelerators {\n    gpu_execution_accelerator: [\n"
            f'      {{\n        name: "tensorrt"\n{body}\n      }}\n    ]\n  }}\n}}'
        )
    backend_params = {
        "intra_op_thread_count": str(options.intra_op_threads),
        "inter_op_thread_count": "1",
        "execution_mode": "0",  # sequential
    }
    for key, value in backend_params.items():
        lines.append(f"parameters {{ key: {json.dumps(key)} value: {{ string_value: {json.dumps(value)} }} }}")
    return "\n".join(lines) + "\n"


def export_triton_repository(
    model_dir: str | Path, out_repo: str | Path, options: TritonRepositoryOptions | None = None
) -> Path:
    """Write ``<out_repo>/<name>/`` for ``options.flavour`` of ``model_dir``; return that directory.

    Input/output names, dtypes and dims come from the ONNX graph (read with ONNX Runtime on
    CPU); the output is the card's ``output.name`` when it exists, else the first output. An
    existing ``<name>/`` directory is replaced.
    """
    options = options or TritonRepositoryOptions()
    model_dir = Path(model_dir)
    onnx_path = resolve_model_file(model_dir, options.flavour)
    card = load_card(model_dir)
    name = options.model_name or triton_model_name(model_dir, options.flavour)
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    inputs, outputs = session.get_inputs(), session.get_outputs()
    if len(inputs) != 1:
        raise ValueError(f"{onnx_path}: expected one input, found {[i.name for i in inputs]}")
    out_names = [o.name for o in outputs]
    out = outputs[out_names.index(card.output_name) if card.output_name in out_names else 0]
    inp_spec, out_spec = spec_of(inputs[0]), spec_of(out)
    if inp_spec.fixed_batch is not None:
        raise ValueError(
            f"{onnx_path}: input batch dimension is fixed to {inp_spec.fixed_batch}; Triton batching "
            "needs a dynamic batch dimension - re-export with a dynamic batch axis"
        )
    target = Path(out_repo) / name
    if target.exists():
        shutil.rmtree(target)
    (target / "1").mkdir(parents=True)
    shutil.copyfile(onnx_path, target / "1" / "model.onnx")
    labels = bool(card.classes)
    if labels:
        (target / "labels.txt").write_text("\n".join(card.classes) + "\n", encoding="utf-8")
    (target / "config.pbtxt").write_text(render_config(name, inp_spec, out_spec, options, labels), encoding="utf-8")
    return target
