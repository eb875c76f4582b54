"""ONNX Runtime in-process: TensorRT EP -> CUDA EP -> CPU, whichever are actually available."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
from pydantic import BaseModel, ConfigDict, Field

from models.runtime.base import TensorSpec, batch_slices, check_batch
from models.runtime.model_dir import ModelCard, load_card
from models.runtime.probabilities import OutputKind, output_kind_from_name, to_probabilities

PROVIDER_PREFERENCE = ("TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider")

_ORT_TYPES = {
    "tensor(float)": np.float32,
    "tensor(float16)": np.float16,
    "tensor(double)": np.float64,
    "tensor(uint8)": np.uint8,
    "tensor(int8)": np.int8,
    "tensor(int32)": np.int32,
    "tensor(int64)": np.int64,
    "tensor(bool)": np.bool_,
}


class OrtOptions(BaseModel):
    """Session settings. Defaults suit an edge box whose few cores are shared by several services.

    >>> OrtOptions().intra_op_threads, OrtOptions(tensorrt_int8=True).tensorrt_provider_options("/c")["trt_int8_enable"]
    (1, True)
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    intra_op_threads: int = Field(1, ge=0, description="threads inside one operator; 0 = ORT picks (all cores)")
    allow_spinning: bool = Field(False, description="idle intra-op threads busy-wait (lower latency, burns CPU)")
    providers: tuple[str, ...] | None = Field(
        None, description="restrict/reorder execution providers; None = TensorRT, CUDA, CPU as available"
    )
    device_id: int = 0
    max_batch: int | None = Field(None, ge=1, description="split larger batches (the model's fixed batch wins)")
    tensorrt_fp16: bool = True
    tensorrt_int8: bool = False
    tensorrt_cache_dir: str | None = Field(
        None, description="engine + timing cache directory; default <model_dir>/trt_cache"
    )
    tensorrt_workspace_bytes: int = 1 << 30

    def tensorrt_provider_options(self, cache_dir: str) -> dict[str, Any]:
        """Options of ``TensorrtExecutionProvider`` (names from the ORT TensorRT EP docs).

        INT8 with a QDQ model uses the model's own scales (explicit quantization): no
        calibration table is passed.
        """
        return {
            "device_id": self.device_id,
            "trt_fp16_enable": self.tensorrt_fp16,
            "trt_int8_enable": self.tensorrt_int8,
            "trt_max_workspace_size": self.tensorrt_workspace_bytes,
            "trt_engine_cache_enable": True,
            "trt_engine_cache_path": cache_dir,
            "trt_timing_cache_enable": True,
            "trt_timing_cache_path": cache_dir,
        }


def select_providers(options: OrtOptions, cache_dir: str) -> list[str | tuple[str, dict[str, Any]]]:
    """Provider list for ``InferenceSession``, limited to ``ort.get_available_providers()``.

    >>> select_providers(OrtOptions(providers=("CPUExecutionProvider",)), "/tmp")
    ['CPUExecutionProvider']
    """
    available = set(ort.get_available_providers())
    wanted = options.providers or PROVIDER_PREFERENCE
    chosen: list[str | tuple[str, dict[str, Any]]] = []
    for name in wanted:
        if name not in available:
            continue
        if name == "TensorrtExecutionProvider":
            chosen.append((name, options.tensorrt_provider_options(cache_dir)))
        elif name == "CUDAExecutionProvider":
            chosen.append((name, {"device_id": options.device_id}))
        else:
            chosen.append(name)
    if not chosen:
        raise ValueError(
            f"none of the requested providers {list(wanted)} is available here "
            f"(available: {sorted(available)}); add 'CPUExecutionProvider' or install onnxruntime-gpu"
        )
    return chosen


def session_options(options: OrtOptions) -> ort.SessionOptions:
    """Thread and execution settings: intra-op configurable, inter-op 1, sequential, all graph opts."""
    so = ort.SessionOptions()
    so.intra_op_num_threads = options.intra_op_threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.add_session_config_entry("session.intra_op.allow_spinning", "1" if options.allow_spinning else "0")
    so.log_severity_level = 3
    return so


def spec_of(node: Any) -> TensorSpec:
    """TensorSpec of an ORT ``NodeArg`` (symbolic or unknown dims become None)."""
    if node.type not in _ORT_TYPES:
        raise ValueError(f"tensor {node.name!r} has unsupported type {node.type}")
    shape = tuple(d if isinstance(d, int) and d > 0 else None for d in node.shape)
    return TensorSpec(node.name, shape, np.dtype(_ORT_TYPES[node.type]))


class OnnxRuntimeRunner:
    """Runs one ONNX classifier in-process.

    ``run_raw`` returns the model's own output (what Triton serves); ``predict`` returns
    probabilities (softmax applied when the output holds logits: see ``probabilities``).
    """

    def __init__(
        self,
        model_path: str | Path,
        options: OrtOptions | None = None,
        card: ModelCard | None = None,
    ) -> None:
        self.model_path = Path(model_path)
        if not self.model_path.is_file():
            raise FileNotFoundError(f"{self.model_path}: no such ONNX model; export it first")
        self.options = options or OrtOptions()
        self.card = card if card is not None else load_card(self.model_path.parent)
        cache_dir = self.options.tensorrt_cache_dir or str(self.model_path.parent / "trt_cache")
        providers = select_providers(self.options, cache_dir)
        if any(isinstance(p, tuple) and p[0] == "TensorrtExecutionProvider" for p in providers):
            Path(cache_dir).mkdir(parents=True, exist_ok=True)
        self.session = ort.InferenceSession(
            str(self.model_path), sess_options=session_options(self.options), providers=providers
        )
        inputs = self.session.get_inputs()
        if len(inputs) != 1:
            raise ValueError(f"{self.model_path}: expected one input, found {[i.name for i in inputs]}")
        self._input = spec_of(inputs[0])
        outputs = self.session.get_outputs()
        names = [o.name for o in outputs]
        wanted = self.card.output_name if self.card.output_name in names else names[0]
        self._output = spec_of(outputs[names.index(wanted)])
        self.output_kind: OutputKind = output_kind_from_name(wanted, self.card.output_kind)

    @property
    def classes(self) -> tuple[str, ...]:
        return self.card.classes

    @property
    def input_spec(self) -> TensorSpec:
        return self._input

    @property
    def output_spec(self) -> TensorSpec:
        return self._output

    @property
    def providers(self) -> list[str]:
        """Providers the session actually uses, in priority order."""
        return list(self.session.get_providers())

    def run_raw(self, batch: np.ndarray) -> np.ndarray:
        """The model's output for ``batch``, split into the model's fixed or configured max batch.

        A fixed-batch model gets its last chunk zero-padded; the padding rows are dropped.
        """
        x = check_batch(batch, self._input)
        fixed = self._input.fixed_batch
        step = fixed or self.options.max_batch
        parts = []
        for sl in batch_slices(len(x), step):
            chunk = x[sl]
            n = len(chunk)
            if fixed and n < fixed:
                chunk = np.concatenate([chunk, np.zeros((fixed - n, *chunk.shape[1:]), chunk.dtype)])
            out = self.session.run([self._output.name], {self._input.name: chunk})[0]
            parts.append(out[:n])
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def predict(self, batch: np.ndarray) -> np.ndarray:
        return to_probabilities(self.run_raw(batch), self.output_kind)

    def close(self) -> None:
        """Drop the session (ORT frees it when the last reference goes)."""
        self.session = None  # type: ignore[assignment]
