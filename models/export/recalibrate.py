"""Re-calibrating an exported model in place: an affine head appended to its ``logits`` output.

Every exported student already ends in its calibration (``(z + b) / T``,
``models.training.fitting.CalibratedModel``). A new calibration fitted later on the same
validation split (new class shifts ``b'``, temperature ``T'``) is, on the served logits
``L = (z + b) / T``,

    L' = (z + b') / T' = L · (T / T') + (b' − b) / T'

so the network (FP32 or INT8, weights untouched) gets two FP32 nodes after its output. An optional
:class:`ConditionalHead` applies a different head to the rows whose input says part of the
nameplate is unknown (any of the named flag entries below 0.5): that sub-population gets its own
prior shift and temperature, inside the model, so every runtime serves the same probabilities.

>>> head = AffineHead(scale=0.5, shift=(1.0, 0.0))
>>> head.apply(np.array([[2.0, 4.0]]), np.zeros((1, 3))).tolist()
[[2.0, 2.0]]
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class ConditionalHead:
    """``L · scale + shift`` instead of the base head for rows with any ``input[:, flags] < 0.5``."""

    flags: tuple[int, ...]
    flag_names: tuple[str, ...]
    scale: float
    shift: tuple[float, ...]

    def active(self, x: np.ndarray) -> np.ndarray:
        return np.any(np.asarray(x)[:, list(self.flags)] < 0.5, axis=1)


@dataclass(frozen=True)
class AffineHead:
    """``L · scale + shift`` on the served logits (see the module docstring)."""

    scale: float
    shift: tuple[float, ...]
    conditional: ConditionalHead | None = field(default=None)

    def apply(self, logits: np.ndarray, x: np.ndarray) -> np.ndarray:
        """What the re-calibrated graph computes, in numpy (for fitting and tests)."""
        z = np.asarray(logits, np.float64)
        out = z * self.scale + np.asarray(self.shift)[None, :]
        if self.conditional is not None:
            c = self.conditional
            alt = z * c.scale + np.asarray(c.shift)[None, :]
            out = np.where(c.active(x)[:, None], alt, out)
        return out

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def append_head(src: Path, dst: Path, head: AffineHead) -> Path:
    """Copy the ONNX model ``src`` to ``dst`` with ``head`` applied to its ``logits`` output."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(src))
    graph = model.graph
    out = graph.output[0]
    if out.name != "logits":
        raise ValueError(f"{src}: expected one output named 'logits', got {out.name!r}")
    raw = "logits_before_recalibration"
    for node in graph.node:
        node.output[:] = [raw if o == out.name else o for o in node.output]
        node.input[:] = [raw if i == out.name else i for i in node.input]
    n_classes = len(head.shift)

    def const(name: str, value: np.ndarray) -> str:
        graph.initializer.append(numpy_helper.from_array(np.asarray(value, np.float32), name))
        return name

    nodes = [helper.make_node("Mul", [raw, const("recal_scale", np.array(head.scale))], ["recal_scaled"]),
             helper.make_node("Add", ["recal_scaled", const("recal_shift", np.reshape(head.shift, (1, n_classes)))],
                              ["recal_base" if head.conditional else "logits"])]
    if head.conditional is not None:
        c = head.conditional
        inp = graph.input[0].name
        graph.initializer.append(numpy_helper.from_array(np.asarray(c.flags, np.int64), "recal_flags"))
        nodes += [
            helper.make_node("Gather", [inp, "recal_flags"], ["recal_flag_values"], axis=1),
            helper.make_node("Less", ["recal_flag_values", const("recal_half", np.array(0.5))], ["recal_unknown"]),
            helper.make_node("Cast", ["recal_unknown"], ["recal_unknown_f"], to=TensorProto.FLOAT),
            helper.make_node("ReduceMax", ["recal_unknown_f", "recal_axes"], ["recal_active"], keepdims=1),
            helper.make_node("Mul", [raw, const("recal_c_scale", np.array(c.scale))], ["recal_c_scaled"]),
            helper.make_node("Add", ["recal_c_scaled", const("recal_c_shift", np.reshape(c.shift, (1, n_classes)))],
                             ["recal_alt"]),
            helper.make_node("Sub", ["recal_alt", "recal_base"], ["recal_delta"]),
            helper.make_node("Mul", ["recal_active", "recal_delta"], ["recal_gated"]),
            helper.make_node("Add", ["recal_base", "recal_gated"], ["logits"]),
        ]
        graph.initializer.append(numpy_helper.from_array(np.asarray([1], np.int64), "recal_axes"))
    graph.node.extend(nodes)
    onnx.checker.check_model(model)
    dst = Path(dst)
    onnx.save(model, str(dst))
    return dst
