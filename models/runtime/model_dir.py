"""Read a model directory: its ``card.json`` and the file for a flavour.

Assumed layout (written by the export/registry code; read tolerantly)::

    <model_dir>/
        card.json               models.registry.ModelCard: "name", "modality", "classes",
                                "input": {"name", "shape" (per sample), "dtype", "output_name"},
                                "files": {role: {"path", ...}}, "serving_role"; optional "output": {"kind"}
        student_fp32.onnx       flavour "fp32"
        student_int8_cpu.onnx   flavour "int8_cpu"  (QDQ, uint8 activations: fast on CPU)
        student_int8_trt.onnx   flavour "int8_trt"  (symmetric QDQ for TensorRT; role student_int8_tensorrt)
        teacher_fp32.onnx       flavour "teacher_fp32"
        student_int8_trt.engine TensorRT engine built on the Jetson by deploy/jetson/build_engine.py

Only the ONNX file is required: missing card fields are taken from the ONNX graph itself.
This module needs the standard library and numpy only (the PyTriton server imports it).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from models.runtime.base import TensorSpec

CARD_FILE = "card.json"
KNOWN_FLAVOURS = ("fp32", "int8_cpu", "int8_trt", "teacher_fp32")
_ALIASES = {"int8_tensorrt": "int8_trt", "student_fp32": "fp32"}


def canonical_flavour(name: str) -> str:
    """Short flavour name for a flavour or a registry file role.

    >>> canonical_flavour("student_int8_tensorrt"), canonical_flavour("student_int8_cpu"), canonical_flavour("teacher_fp32")
    ('int8_trt', 'int8_cpu', 'teacher_fp32')
    """
    short = name.removeprefix("student_")
    return _ALIASES.get(short, short)


@dataclass(frozen=True)
class ModelCard:
    """The parts of ``card.json`` the runtimes use; every field is optional.

    Reads the registry's card (``models.registry.ModelCard``: ``input.shape`` per sample,
    ``input.output_name``, ``files`` role -> {"path", ...}, ``serving_role``) and simpler
    hand-written cards (``input.shape`` with a leading -1 batch dim, ``files`` role -> path).

    >>> card = ModelCard.from_dict({"modality": "thermal", "classes": ["normal", "hot"],
    ...     "input": {"name": "input", "shape": [1, 120, 160], "dtype": "float32", "output_name": "logits"},
    ...     "files": {"student_int8_cpu": {"path": "student_int8_cpu.onnx"}}})
    >>> card.input.shape, card.output_name, card.files, card.n_classes
    ((None, 1, 120, 160), 'logits', {'int8_cpu': 'student_int8_cpu.onnx'}, 2)
    """

    name: str | None = None
    modality: str | None = None
    classes: tuple[str, ...] = ()
    input: TensorSpec | None = None
    output_name: str | None = None
    output_kind: str | None = None
    files: dict[str, str] = field(default_factory=dict)
    serving_flavour: str | None = None

    @property
    def n_classes(self) -> int | None:
        return len(self.classes) or None

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> ModelCard:
        inp = raw.get("input") if isinstance(raw.get("input"), dict) else {}
        out = raw.get("output") if isinstance(raw.get("output"), dict) else {}
        in_name = inp.get("name", raw.get("input_name"))
        in_shape = inp.get("shape", raw.get("input_shape"))
        in_dtype = inp.get("dtype", raw.get("input_dtype"))
        spec = None
        if in_name and in_shape is not None:
            dims = list(in_shape)
            if dims and _dim(dims[0]) is None:
                dims = dims[1:]  # a leading dynamic batch dim; registry cards give the sample shape
            spec = TensorSpec(str(in_name), (None, *(_dim(d) for d in dims)), np.dtype(in_dtype or "float32"))
        files = {}
        for role, entry in (raw.get("files") or {}).items():
            path = entry.get("path") if isinstance(entry, dict) else entry
            if path:
                files[canonical_flavour(str(role))] = str(path)
        serving = raw.get("serving_role")
        return cls(
            name=raw.get("name"),
            modality=raw.get("modality"),
            classes=tuple(str(c) for c in raw.get("classes", ()) or ()),
            input=spec,
            output_name=out.get("name", inp.get("output_name", raw.get("output_name"))),
            output_kind=out.get("kind", raw.get("output_kind")),
            files=files,
            serving_flavour=canonical_flavour(serving) if serving else None,
        )


def _dim(d: Any) -> int | None:
    """Card dims: positive ints are fixed; -1, null or a symbolic name ("batch") are dynamic."""
    return d if isinstance(d, int) and d > 0 else None


def load_card(model_dir: str | Path) -> ModelCard:
    """The directory's card, or an empty card when there is no ``card.json``."""
    path = Path(model_dir) / CARD_FILE
    if not path.is_file():
        return ModelCard()
    try:
        return ModelCard.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (json.JSONDecodeError, TypeError, ValueError, AttributeError) as exc:
        raise ValueError(f"{path}: unreadable model card ({exc}); fix or regenerate it") from exc


def resolve_model_file(model_dir: str | Path, flavour: str, suffix: str = ".onnx") -> Path:
    """The file holding ``flavour`` (a short flavour or a registry role).

    Order: the card's ``files`` entry (for other suffixes, e.g. ``.engine``, that file with the
    suffix swapped), then ``<flavour><suffix>`` and ``student_<flavour><suffix>``.
    """
    model_dir = Path(model_dir)
    card = load_card(model_dir)
    flavour = canonical_flavour(flavour)
    candidates = []
    if flavour in card.files:
        candidates.append(str(Path(card.files[flavour]).with_suffix(suffix)))
    candidates += [f"{flavour}{suffix}", f"student_{flavour}{suffix}"]
    for name in candidates:
        if (model_dir / name).is_file():
            return model_dir / name
    present = sorted(p.name for p in model_dir.glob(f"*{suffix}")) if model_dir.is_dir() else []
    raise FileNotFoundError(
        f"no {suffix} file for flavour {flavour!r} in {model_dir} (looked for {candidates}); "
        f"present: {present or 'none'} - pick one of those flavours or export the model first"
    )


def available_flavours(model_dir: str | Path, suffix: str = ".onnx") -> list[str]:
    """Flavours for which a file exists: KNOWN_FLAVOURS order, then other card roles."""
    found = []
    for flavour in (*KNOWN_FLAVOURS, *sorted(load_card(model_dir).files)):
        if flavour in found:
            continue
        try:
            resolve_model_file(model_dir, flavour, suffix)
        except FileNotFoundError:
            continue
        found.append(flavour)
    return found


def triton_model_name(model_dir: str | Path, flavour: str) -> str:
    """Default model name on a Triton server: ``<card name or modality or dir name>_<flavour>``.

    The repository exporter and the PyTriton server both use it, so a TritonRunner finds the
    model without being told its name.

    >>> triton_model_name("/nonexistent/thermal v3", "int8_cpu")
    'thermal_v3_int8_cpu'
    """
    card = load_card(model_dir)
    base = card.name or card.modality or Path(model_dir).name or "model"
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{base}_{flavour}")
