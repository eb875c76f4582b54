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
    taken = {i.name for i in graph.initializer}
    n = 0
    while f"recal{n}_scale" in taken:  # a re-calibrated model re-calibrated again: fresh names
        n += 1
    p = f"recal{n}_"
    raw = f"{p}logits_in"
    for node in graph.node:
        node.output[:] = [raw if o == out.name else o for o in node.output]
        node.input[:] = [raw if i == out.name else i for i in node.input]
    n_classes = len(head.shift)

    def const(name: str, value: np.ndarray) -> str:
        graph.initializer.append(numpy_helper.from_array(np.asarray(value, np.float32), name))
        return name

    nodes = [helper.make_node("Mul", [raw, const(f"{p}scale", np.array(head.scale))], [f"{p}scaled"]),
             helper.make_node("Add", [f"{p}scaled", const(f"{p}shift", np.reshape(head.shift, (1, n_classes)))],
                              [f"{p}base" if head.conditional else "logits"])]
    if head.conditional is not None:
        c = head.conditional
        inp = graph.input[0].name
        graph.initializer.append(numpy_helper.from_array(np.asarray(c.flags, np.int64), f"{p}flags"))
        nodes += [
            helper.make_node("Gather", [inp, f"{p}flags"], [f"{p}flag_values"], axis=1),
            helper.make_node("Less", [f"{p}flag_values", const(f"{p}half", np.array(0.5))], [f"{p}unknown"]),
            helper.make_node("Cast", [f"{p}unknown"], [f"{p}unknown_f"], to=TensorProto.FLOAT),
            helper.make_node("ReduceMax", [f"{p}unknown_f", f"{p}axes"], [f"{p}active"], keepdims=1),
            helper.make_node("Mul", [raw, const(f"{p}c_scale", np.array(c.scale))], [f"{p}c_scaled"]),
            helper.make_node("Add", [f"{p}c_scaled", const(f"{p}c_shift", np.reshape(c.shift, (1, n_classes)))],
                             [f"{p}alt"]),
            helper.make_node("Sub", [f"{p}alt", f"{p}base"], [f"{p}delta"]),
            helper.make_node("Mul", [f"{p}active", f"{p}delta"], [f"{p}gated"]),
            helper.make_node("Add", [f"{p}base", f"{p}gated"], ["logits"]),
        ]
        graph.initializer.append(numpy_helper.from_array(np.asarray([1], np.int64), f"{p}axes"))
    graph.node.extend(nodes)
    onnx.checker.check_model(model)
    dst = Path(dst)
    onnx.save(model, str(dst))
    return dst
