"""Shared helpers for the runtime/Triton tests (no tests here).

- ``make_model_dir``: a tiny torch CNN exported to ONNX (fp32 + ORT INT8 QDQ) with a card.json,
  independent of the training code.
- ``services_python``: the interpreter of .venv-services (gRPC client, Triton's protobufs).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from models.runtime.pytriton_process import venv_ready

REPO_ROOT = Path(__file__).resolve().parents[2]
SERVICES_PYTHON = REPO_ROOT / ".venv-services" / "bin" / "python"
SETUP_HINT = "create it with: scripts/setup_model_venvs.sh"
CLASSES = ("normal", "bearing_wear", "electrical_overheating", "cooling_failure", "imbalance", "cavitation")
SAMPLE_SHAPE = (1, 12, 16)


def tiny_cnn(probabilities: bool = False):  # -> torch.nn.Module
    """A small conv net with 6 outputs; deterministic weights (seed 0)."""
    import torch
    from torch import nn

    torch.manual_seed(0)
    layers: list[nn.Module] = [
        nn.Conv2d(1, 4, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(4 * 6 * 8, len(CLASSES)),
    ]
    if probabilities:
        layers.append(nn.Softmax(dim=1))
    return nn.Sequential(*layers).eval()


def sample_batch(n: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, *SAMPLE_SHAPE)).astype(np.float32)


REGISTRY_FILES = {  # role -> file name, as models/training/train.py names them
    "student_fp32": "student.fp32.onnx",
    "student_int8_cpu": "student.int8.cpu.onnx",
    "student_int8_tensorrt": "student.int8.tensorrt.onnx",
}
PLAIN_FILES = {
    "student_fp32": "student_fp32.onnx",
    "student_int8_cpu": "student_int8_cpu.onnx",
    "student_int8_tensorrt": "student_int8_trt.onnx",
}


def make_model_dir(
    out: Path,
    *,
    fixed_batch: int | None = None,
    probabilities: bool = False,
    int8: bool = True,
    int8_trt: bool = False,
    card: bool = True,
) -> Path:
    """Export the tiny CNN (fp32, optional ORT INT8 QDQ for CPU and symmetric QDQ for TensorRT).

    With ``card=True`` the layout is a registry version directory (``student.fp32.onnx`` ...,
    ``card.json`` shaped like ``models.registry.ModelCard``: per-sample input shape, files by
    role, ``serving_role``); with ``card=False`` plain ``student_<flavour>.onnx`` names only.
    """
    import warnings

    import torch
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    torch.set_num_threads(1)
    out.mkdir(parents=True, exist_ok=True)
    names = REGISTRY_FILES if card else PLAIN_FILES
    model = tiny_cnn(probabilities)
    output_name = "probabilities" if probabilities else "logits"
    example = torch.from_numpy(sample_batch(fixed_batch or 2))
    fp32 = out / names["student_fp32"]
    with warnings.catch_warnings():  # the TorchScript exporter is deprecated but fast (~0.1 s)
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(
            model,
            (example,),
            str(fp32),
            input_names=["input"],
            output_names=[output_name],
            dynamic_axes=None if fixed_batch else {"input": {0: "batch"}, output_name: {0: "batch"}},
            opset_version=17,
            dynamo=False,
        )

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self._it = iter([{"input": sample_batch(fixed_batch or 1, seed=s)} for s in range(32)])

        def get_next(self):  # type: ignore[override]
            return next(self._it, None)

    roles = ["student_fp32"]
    for wanted, role, activations, symmetric in (
        (int8, "student_int8_cpu", QuantType.QUInt8, False),
        (int8_trt, "student_int8_tensorrt", QuantType.QInt8, True),
    ):
        if wanted:
            roles.append(role)
            quantize_static(
                str(fp32),
                str(out / names[role]),
                Reader(),
                quant_format=QuantFormat.QDQ,
                activation_type=activations,
                weight_type=QuantType.QInt8,
                per_channel=True,
                extra_options={"ActivationSymmetric": symmetric, "WeightSymmetric": True},
            )
    if card:
        raw = {
            "card_schema_version": 1,
            "name": "tinythermal",
            "modality": "thermal",
            "version": "v1",
            "classes": list(CLASSES),
            "input": {
                "name": "input",
                "shape": list(SAMPLE_SHAPE),
                "dtype": "float32",
                "output_name": output_name,
                "output": f"float32 (batch, n_classes) {output_name}",
            },
            "serving_role": "student_int8_cpu" if int8 else "student_fp32",
            "files": {r: {"path": names[r], "bytes": (out / names[r]).stat().st_size, "sha256": ""} for r in roles},
        }
        (out / "card.json").write_text(json.dumps(raw, indent=2))
    return out


def torch_probabilities(batch: np.ndarray, probabilities_model: bool = False) -> np.ndarray:
    """Reference probabilities from torch eager (independent of the code under test)."""
    import torch

    with torch.no_grad():
        out = tiny_cnn(probabilities_model)(torch.from_numpy(batch))
        return (out if probabilities_model else torch.softmax(out, dim=1)).numpy()


def services_python() -> Path | None:
    """.venv-services' interpreter, once scripts/setup_model_venvs.sh has finished it."""
    return SERVICES_PYTHON if venv_ready(SERVICES_PYTHON.parent.parent) else None
