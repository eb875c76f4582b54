"""Model runtimes behind one interface: ``predict(batch) -> probabilities (n, n_classes)``.

- ``OnnxRuntimeRunner``: ONNX Runtime in-process (TensorRT EP -> CUDA EP -> CPU, as available).
- ``TritonRunner``: a Triton server over HTTP or gRPC (``tritonclient``, imported lazily).
- ``TensorRTEngineRunner``: a TensorRT engine on a Jetson (``tensorrt``, imported lazily; untested here).
- ``load_runtime(model_dir, kind, flavour)``: the factory; ``export_triton_repository``: deploy artifact.

Importing this package needs numpy, pydantic and onnxruntime only.
"""

from models.runtime.base import (
    RemoteInferenceError,
    Runtime,
    RuntimeInputError,
    RuntimeUnavailableError,
    TensorSpec,
)
from models.runtime.factory import RuntimeSettings, load_runtime
from models.runtime.model_dir import ModelCard, load_card, resolve_model_file, triton_model_name
from models.runtime.onnxruntime_runner import OnnxRuntimeRunner, OrtOptions
from models.runtime.triton_repository import (
    TensorRTAccelerator,
    TritonRepositoryOptions,
    export_triton_repository,
)

__all__ = [
    "ModelCard",
    "OnnxRuntimeRunner",
    "OrtOptions",
    "RemoteInferenceError",
    "Runtime",
    "RuntimeInputError",
    "RuntimeSettings",
    "RuntimeUnavailableError",
    "TensorRTAccelerator",
    "TensorSpec",
    "TritonRepositoryOptions",
    "export_triton_repository",
    "load_card",
    "load_runtime",
    "resolve_model_file",
    "triton_model_name",
]


def __getattr__(name: str) -> object:
    """Lazy access to the runners whose imports are optional (tritonclient, tensorrt)."""
    if name == "TritonRunner":
        from models.runtime.triton_runner import TritonRunner

        return TritonRunner
    if name == "TensorRTEngineRunner":
        from models.runtime.tensorrt_runner import TensorRTEngineRunner

        return TensorRTEngineRunner
    raise AttributeError(f"module 'models.runtime' has no attribute {name!r}")
