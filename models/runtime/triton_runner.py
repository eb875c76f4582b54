"""A model served by Triton Inference Server, reached with ``tritonclient`` over HTTP or gRPC.

The server returns the raw model output (as Triton's onnxruntime backend does); this runner
applies the same logits -> probabilities rule as ONNX Runtime in-process.

gRPC note: ``tritonclient.grpc`` needs grpcio >= 1.67 and protobuf >= 6, which apache-beam
(pulled by the ``flink`` extra) forbids. Use HTTP beside Flink, or run the client from an
environment without the flink extra (``scripts/setup_model_venvs.sh services``).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any, Literal

import numpy as np

from models.runtime.base import (
    RemoteInferenceError,
    RuntimeUnavailableError,
    TensorSpec,
    batch_slices,
    check_batch,
)
from models.runtime.model_dir import ModelCard
from models.runtime.probabilities import OutputKind, output_kind_from_name, to_probabilities

Protocol = Literal["http", "grpc"]

_TRITON_TO_NUMPY = {
    "FP32": np.float32,
    "FP16": np.float16,
    "FP64": np.float64,
    "UINT8": np.uint8,
    "INT8": np.int8,
    "INT32": np.int32,
    "INT64": np.int64,
    "BOOL": np.bool_,
}


def import_client(protocol: Protocol) -> ModuleType:
    """``tritonclient.http`` or ``tritonclient.grpc``, with an error message that says what to do."""
    if protocol == "http":
        try:
            import tritonclient.http as client
        except ImportError as exc:
            raise RuntimeUnavailableError(
                f"tritonclient.http is not importable ({exc}): pip install 'tritonclient[http]'"
            ) from exc
        return client
    if protocol == "grpc":
        try:
            import tritonclient.grpc as client
        except Exception as exc:  # ImportError, or protobuf's VersionError from the generated code
            raise RuntimeUnavailableError(
                f"tritonclient.grpc is not importable here ({type(exc).__name__}: {exc}). "
                "It needs grpcio>=1.67 and protobuf>=6, which apache-flink/apache-beam forbid: "
                "use protocol='http' in this environment, or run the client in an environment "
                "without the flink extra (scripts/setup_model_venvs.sh services -> .venv-services)."
            ) from exc
        return client
    raise ValueError(f"protocol must be 'http' or 'grpc', not {protocol!r}")


class TritonRunner:
    """Classifier on a Triton server. Model I/O and max batch size come from the server."""

    def __init__(
        self,
        url: str,
        model_name: str,
        protocol: Protocol = "http",
        card: ModelCard | None = None,
        model_version: str = "",
        timeout_s: float = 10.0,
    ) -> None:
        self.url = url
        self.model_name = model_name
        self.protocol = protocol
        self.model_version = model_version
        self.card = card or ModelCard()
        self._module = import_client(protocol)
        self._exception: type[Exception] = _server_exception()
        if protocol == "http":
            self._client = self._module.InferenceServerClient(
                url=url, connection_timeout=timeout_s, network_timeout=timeout_s
            )
            self._timeout_kw: dict[str, Any] = {}
        else:
            self._client = self._module.InferenceServerClient(url=url)
            self._timeout_kw = {"client_timeout": timeout_s}
        metadata, self.max_batch_size = self._describe()
        self._input, self._output = _io_specs(metadata, self.card)
        self.output_kind: OutputKind = output_kind_from_name(self._output.name, self.card.output_kind)

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (self._exception, OSError) as exc:  # OSError: HTTP connection refused/reset
            detail = exc.message() if isinstance(exc, self._exception) else f"{type(exc).__name__}: {exc}"
            raise RemoteInferenceError(
                f"Triton {self.protocol} {self.url} model {self.model_name!r}: {what} failed: {detail} "
                "(is the server up and the model loaded? see its log)"
            ) from exc

    def _describe(self) -> tuple[dict[str, Any], int]:
        """Model metadata and max_batch_size (0 = no batching) as plain dicts."""
        kw: dict[str, Any] = {"as_json": True, **self._timeout_kw} if self.protocol == "grpc" else {}
        ready = self._call(
            "readiness check", self._client.is_model_ready, self.model_name, self.model_version, **self._timeout_kw
        )
        if not ready:
            raise RemoteInferenceError(
                f"model {self.model_name!r} is not ready on {self.url}: check the server log and "
                "the model name (default: models.runtime.model_dir.triton_model_name)"
            )
        meta = self._call("metadata", self._client.get_model_metadata, self.model_name, self.model_version, **kw)
        config = self._call("config", self._client.get_model_config, self.model_name, self.model_version, **kw)
        config = config.get("config", config)  # gRPC wraps the config in {"config": ...}
        return meta, int(config.get("max_batch_size", 0) or 0)

    @property
    def classes(self) -> tuple[str, ...]:
        return self.card.classes

    @property
    def input_spec(self) -> TensorSpec:
        return self._input

    def run_raw(self, batch: np.ndarray) -> np.ndarray:
        """The server's raw output for ``batch`` (split into the server's max batch size)."""
        x = check_batch(batch, self._input)
        utils = _utils()
        parts = []
        for sl in batch_slices(len(x), self.max_batch_size or None):
            chunk = x[sl]
            inp = self._module.InferInput(self._input.name, list(chunk.shape), utils.np_to_triton_dtype(chunk.dtype))
            inp.set_data_from_numpy(chunk)
            out = self._module.InferRequestedOutput(self._output.name)
            result = self._call(
                "inference",
                self._client.infer,
                self.model_name,
                [inp],
                model_version=self.model_version,
                outputs=[out],
                **self._timeout_kw,
            )
            parts.append(result.as_numpy(self._output.name))
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def predict(self, batch: np.ndarray) -> np.ndarray:
        return to_probabilities(self.run_raw(batch), self.output_kind)

    def close(self) -> None:
        self._client.close()


def _utils() -> ModuleType:
    import tritonclient.utils as utils

    return utils


def _server_exception() -> type[Exception]:
    return _utils().InferenceServerException


def _io_specs(meta: dict[str, Any], card: ModelCard) -> tuple[TensorSpec, TensorSpec]:
    """Input and output TensorSpecs from Triton model metadata (shapes include the batch dim)."""

    def spec(entry: dict[str, Any]) -> TensorSpec:
        # Triton lists the batch dim as -1 for batching models; gRPC JSON renders int64 as strings.
        dims = [int(d) for d in entry["shape"]]
        dtype = _TRITON_TO_NUMPY.get(entry["datatype"])
        if dtype is None:
            raise RemoteInferenceError(f"tensor {entry['name']!r}: unsupported Triton datatype {entry['datatype']}")
        return TensorSpec(entry["name"], tuple(d if d > 0 else None for d in dims), np.dtype(dtype))

    inputs, outputs = meta.get("inputs", []), meta.get("outputs", [])
    if len(inputs) != 1 or not outputs:
        raise RemoteInferenceError(
            f"expected a model with one input and at least one output, got inputs "
            f"{[i['name'] for i in inputs]} outputs {[o['name'] for o in outputs]}"
        )
    out_names = [o["name"] for o in outputs]
    wanted = card.output_name if card.output_name in out_names else out_names[0]
    return spec(inputs[0]), spec(outputs[out_names.index(wanted)])
