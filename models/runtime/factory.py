"""``load_runtime``: one call from a model directory to a ready ``Runtime``."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from models.runtime.base import Runtime
from models.runtime.model_dir import available_flavours, load_card, resolve_model_file, triton_model_name
from models.runtime.onnxruntime_runner import OrtOptions

RuntimeKind = Literal["onnxruntime", "triton", "tensorrt"]


class RuntimeSettings(BaseModel):
    """Runtime choice for a service; meant to be nested in the project settings (e.g. ``models.runtime``).

    >>> RuntimeSettings(kind="triton", triton_protocol="grpc").triton_url
    'localhost:8001'
    """

    model_config = ConfigDict(extra="forbid")

    kind: RuntimeKind = "onnxruntime"
    flavour: str | None = Field(None, description="fp32 | int8_cpu | int8_trt | teacher_fp32; None = auto")
    ort: OrtOptions = OrtOptions()
    triton_url: str | None = Field(None, description="host:port; default localhost:8000 (http) / :8001 (grpc)")
    triton_protocol: Literal["http", "grpc"] = "http"
    triton_model_name: str | None = None
    triton_timeout_s: float = 10.0

    def model_post_init(self, __context: object) -> None:
        if self.triton_url is None:
            self.triton_url = "localhost:8001" if self.triton_protocol == "grpc" else "localhost:8000"


def default_flavour(model_dir: str | Path, kind: RuntimeKind) -> str:
    """int8_trt where TensorRT runs the model; otherwise the card's ``serving_role``, int8_cpu,
    fp32 - the first that exists."""
    if kind == "tensorrt":
        return "int8_trt"
    present = available_flavours(model_dir)
    serving = load_card(model_dir).serving_flavour
    trt = False
    if kind == "onnxruntime":
        import onnxruntime as ort

        trt = "TensorrtExecutionProvider" in ort.get_available_providers()
    if trt:
        order = ["int8_trt", "fp32", "int8_cpu"]
    else:
        order = [serving or "int8_cpu", "int8_cpu", "fp32", "int8_trt"]
    for flavour in order:
        if flavour in present:
            return flavour
    if present:
        return present[0]
    raise FileNotFoundError(f"{model_dir}: no model files (*.onnx) for any of {order}; export the model first")


def load_runtime(
    model_dir: str | Path,
    kind: RuntimeKind | None = None,
    flavour: str | None = None,
    settings: RuntimeSettings | None = None,
) -> Runtime:
    """Open the model in ``model_dir`` with the requested runtime (``kind`` and ``flavour``
    override ``settings``; ``flavour=None`` picks ``default_flavour``).

    - ``onnxruntime``: ``<flavour>`` ONNX file in-process (TensorRT/CUDA/CPU EP as available).
    - ``triton``: the model named ``triton_model_name(model_dir, flavour)`` (or
      ``settings.triton_model_name``) on ``settings.triton_url``; only the card is read locally.
    - ``tensorrt``: the flavour's ONNX path with ``.engine``, built on the device by
      deploy/jetson/build_engine.py (Jetson; untested here).
    """
    settings = settings or RuntimeSettings()
    kind = kind or settings.kind
    flavour = flavour or settings.flavour
    model_dir = Path(model_dir)
    if not model_dir.is_dir():
        raise FileNotFoundError(f"{model_dir}: model directory not found; train/export a model first")
    card = load_card(model_dir)
    if kind == "tensorrt":
        from models.runtime.tensorrt_runner import TensorRTEngineRunner, require_tensorrt

        require_tensorrt()  # fail on the missing library before guessing file names
        engine = resolve_model_file(model_dir, flavour or "int8_trt", suffix=".engine")
        return TensorRTEngineRunner(engine, card=card)
    flavour = flavour or default_flavour(model_dir, kind)
    if kind == "onnxruntime":
        from models.runtime.onnxruntime_runner import OnnxRuntimeRunner

        return OnnxRuntimeRunner(resolve_model_file(model_dir, flavour), settings.ort, card)
    if kind == "triton":
        from models.runtime.triton_runner import TritonRunner

        return TritonRunner(
            url=settings.triton_url or "localhost:8000",
            model_name=settings.triton_model_name or triton_model_name(model_dir, flavour),
            protocol=settings.triton_protocol,
            card=card,
            timeout_s=settings.triton_timeout_s,
        )
    raise ValueError(f"unknown runtime kind {kind!r}: use 'onnxruntime', 'triton' or 'tensorrt'")
