"""A serialized TensorRT engine on the device (Jetson), through the TensorRT Python API.

UNTESTED in this repository: CI has no GPU and no TensorRT. Written against the named-tensor
API of TensorRT >= 8.5 (JetPack 5.1 / 6.x): ``deserialize_cuda_engine``, ``num_io_tensors``,
``get_tensor_name/mode/dtype/shape``, ``get_tensor_profile_shape``, ``set_input_shape``,
``set_tensor_address``, ``execute_async_v3``. CUDA memory and the stream come from
``cuda-python`` (``pip install cuda-python`` matching the JetPack CUDA version).

Build the engine on the device with ``deploy/jetson/build_engine.py`` (engines are specific to
the GPU and TensorRT version: never copy one between JetPack releases).
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from models.runtime.base import RuntimeUnavailableError, TensorSpec, batch_slices, check_batch
from models.runtime.model_dir import ModelCard, load_card
from models.runtime.probabilities import OutputKind, output_kind_from_name, to_probabilities


def require_tensorrt() -> ModuleType:
    """``import tensorrt`` with an error that says where to get it."""
    try:
        import tensorrt
    except ImportError as exc:
        raise RuntimeUnavailableError(
            "the 'tensorrt' Python package is not importable: on a Jetson it comes with JetPack "
            "(apt install python3-libnvinfer; use a venv created with --system-site-packages); "
            "on x86 with an NVIDIA GPU: pip install tensorrt. Without a GPU use "
            "kind='onnxruntime' (CPU) or kind='triton'."
        ) from exc
    return tensorrt


def require_cudart() -> ModuleType:
    """cuda-python's runtime API (``cuda.bindings.runtime`` in new releases, ``cuda.cudart`` before)."""
    try:
        from cuda.bindings import runtime as cudart
    except ImportError:
        try:
            from cuda import cudart
        except ImportError as exc:
            raise RuntimeUnavailableError(
                "cuda-python is not importable: pip install 'cuda-python==<your CUDA major.minor>.*' "
                "(JetPack 6: CUDA 12.x)"
            ) from exc
    return cudart


def _check(result: Any, cudart: ModuleType, what: str) -> Any:
    """cuda-python calls return (error, *values): raise on error, return the value(s)."""
    err, *values = result if isinstance(result, tuple) else (result,)
    if err != cudart.cudaError_t.cudaSuccess:
        raise RuntimeError(f"CUDA {what} failed: {err}")
    return values[0] if len(values) == 1 else values


class TensorRTEngineRunner:
    """One-input classifier engine; device buffers sized for the profile's max batch."""

    def __init__(self, engine_path: str | Path, card: ModelCard | None = None, profile: int = 0) -> None:
        trt = require_tensorrt()
        self._cudart = cudart = require_cudart()
        self.engine_path = Path(engine_path)
        self.card = card if card is not None else load_card(self.engine_path.parent)
        self._logger = trt.Logger(trt.Logger.WARNING)
        self._runtime = trt.Runtime(self._logger)
        self.engine = self._runtime.deserialize_cuda_engine(self.engine_path.read_bytes())
        if self.engine is None:
            raise RuntimeError(
                f"{self.engine_path}: TensorRT could not deserialize the engine (built for another "
                "GPU or TensorRT version?): rebuild it on this device with deploy/jetson/build_engine.py"
            )
        self.context = self.engine.create_execution_context()
        names = [self.engine.get_tensor_name(i) for i in range(self.engine.num_io_tensors)]
        inputs = [n for n in names if self.engine.get_tensor_mode(n) == trt.TensorIOMode.INPUT]
        outputs = [n for n in names if self.engine.get_tensor_mode(n) == trt.TensorIOMode.OUTPUT]
        if len(inputs) != 1 or not outputs:
            raise ValueError(f"{self.engine_path}: expected one input and >=1 output, got {inputs} / {outputs}")
        out_name = self.card.output_name if self.card.output_name in outputs else outputs[0]

        def spec(name: str) -> TensorSpec:
            shape = tuple(d if d > 0 else None for d in self.engine.get_tensor_shape(name))
            return TensorSpec(name, shape, np.dtype(trt.nptype(self.engine.get_tensor_dtype(name))))

        self._input, self._output = spec(inputs[0]), spec(out_name)
        self._extra_outputs = [n for n in outputs if n != out_name]
        self.output_kind: OutputKind = output_kind_from_name(out_name, self.card.output_kind)
        if self._input.fixed_batch is None:
            _min, _opt, max_shape = self.engine.get_tensor_profile_shape(self._input.name, profile)
            self.max_batch = int(max_shape[0])
            sample = tuple(int(d) for d in max_shape[1:])
        else:
            self.max_batch = self._input.fixed_batch
            sample = tuple(int(d) for d in self._input.sample_shape)  # type: ignore[arg-type]
        self._stream = _check(cudart.cudaStreamCreate(), cudart, "cudaStreamCreate")
        # Set the max input shape once so TensorRT can report the largest output shapes to allocate.
        self.context.set_input_shape(self._input.name, (self.max_batch, *sample))
        self._buffers: dict[str, tuple[int, int]] = {}  # name -> (device pointer, bytes)
        for name in [self._input.name, *outputs]:
            shape = tuple(self.context.get_tensor_shape(name))
            nbytes = int(np.prod(shape)) * np.dtype(trt.nptype(self.engine.get_tensor_dtype(name))).itemsize
            ptr = _check(cudart.cudaMalloc(nbytes), cudart, "cudaMalloc")
            self._buffers[name] = (int(ptr), nbytes)
            self.context.set_tensor_address(name, int(ptr))

    @property
    def classes(self) -> tuple[str, ...]:
        return self.card.classes

    @property
    def input_spec(self) -> TensorSpec:
        return self._input

    def _run_chunk(self, chunk: np.ndarray) -> np.ndarray:
        cudart = self._cudart
        n = len(chunk)
        if self._input.fixed_batch and n < self._input.fixed_batch:
            pad = np.zeros((self._input.fixed_batch - n, *chunk.shape[1:]), chunk.dtype)
            chunk = np.ascontiguousarray(np.concatenate([chunk, pad]))
        if not self.context.set_input_shape(self._input.name, chunk.shape):
            raise ValueError(f"shape {chunk.shape} is outside the engine's optimization profile")
        in_ptr, _ = self._buffers[self._input.name]
        h2d, d2h = cudart.cudaMemcpyKind.cudaMemcpyHostToDevice, cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost
        _check(cudart.cudaMemcpyAsync(in_ptr, chunk.ctypes.data, chunk.nbytes, h2d, self._stream), cudart, "H2D copy")
        if not self.context.execute_async_v3(self._stream):
            raise RuntimeError(f"{self.engine_path}: execute_async_v3 failed (see the TensorRT log)")
        out = np.empty(tuple(self.context.get_tensor_shape(self._output.name)), self._output.dtype)
        out_ptr, _ = self._buffers[self._output.name]
        _check(cudart.cudaMemcpyAsync(out.ctypes.data, out_ptr, out.nbytes, d2h, self._stream), cudart, "D2H copy")
        _check(cudart.cudaStreamSynchronize(self._stream), cudart, "cudaStreamSynchronize")
        return out[:n]

    def run_raw(self, batch: np.ndarray) -> np.ndarray:
        x = check_batch(batch, self._input)
        parts = [self._run_chunk(x[sl]) for sl in batch_slices(len(x), self.max_batch)]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def predict(self, batch: np.ndarray) -> np.ndarray:
        return to_probabilities(self.run_raw(batch), self.output_kind)

    def close(self) -> None:
        for ptr, _ in self._buffers.values():
            self._cudart.cudaFree(ptr)
        self._buffers.clear()
        self._cudart.cudaStreamDestroy(self._stream)
