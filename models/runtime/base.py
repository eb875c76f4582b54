"""The one inference interface every runtime implements, and the input checks they share.

A runtime turns a batch of model inputs into class probabilities::

    probs = runtime.predict(batch)      # batch: (n, *input_shape) -> probs: (n, n_classes)

Runtimes differ only in where the model runs (ONNX Runtime in-process, a Triton server over
HTTP/gRPC, a TensorRT engine on a Jetson); callers never need to know which.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np


class RuntimeInputError(ValueError):
    """The batch does not fit the model's input (rank, fixed dimensions or dtype).

    Raised before anything is sent to the model, so that a caller can dead-letter the record
    with the message instead of crashing.
    """


class RuntimeUnavailableError(ImportError):
    """A runtime's optional dependency (tritonclient.grpc, tensorrt, cuda-python) is missing."""


class RemoteInferenceError(RuntimeError):
    """A model server refused or failed a request (the server's own message is included)."""


@dataclass(frozen=True)
class TensorSpec:
    """Name, shape and dtype of one model input or output.

    ``shape`` includes the batch dimension; ``None`` marks a dynamic dimension.

    >>> spec = TensorSpec("input", (None, 1, 12, 16), np.dtype("float32"))
    >>> spec.fixed_batch is None, spec.sample_shape
    (True, (1, 12, 16))
    """

    name: str
    shape: tuple[int | None, ...]
    dtype: np.dtype

    @property
    def fixed_batch(self) -> int | None:
        """The batch size baked into the model, or None when the batch dimension is dynamic."""
        return self.shape[0] if self.shape else None

    @property
    def sample_shape(self) -> tuple[int | None, ...]:
        """Shape of one sample (everything after the batch dimension)."""
        return self.shape[1:]


@runtime_checkable
class Runtime(Protocol):
    """What the inference service needs from a model runtime."""

    @property
    def classes(self) -> tuple[str, ...]:
        """Class names in the order of the probability columns (may be empty if unknown)."""
        ...

    @property
    def input_spec(self) -> TensorSpec:
        """The model input that ``predict`` feeds."""
        ...

    def predict(self, batch: np.ndarray) -> np.ndarray:
        """Class probabilities, shape (n, n_classes), float32, rows summing to 1."""
        ...

    def close(self) -> None:
        """Release sessions, connections or device memory."""
        ...


def check_batch(batch: np.ndarray, spec: TensorSpec) -> np.ndarray:
    """Return ``batch`` as a C-contiguous array of the model's dtype, or raise RuntimeInputError.

    Rank and every fixed non-batch dimension must match; the dtype is converted when the
    conversion is lossless in kind (float64 -> float32 is fine, float -> int is not).

    >>> spec = TensorSpec("input", (None, 3), np.dtype("float32"))
    >>> check_batch(np.ones((2, 3)), spec).dtype
    dtype('float32')
    >>> check_batch(np.ones((2, 4)), spec)
    Traceback (most recent call last):
    ...
    models.runtime.base.RuntimeInputError: input 'input' expects shape (n, 3), got (2, 4): resize or reshape the sample to (3,) before predict()
    """
    arr = np.asarray(batch)
    expected = spec.sample_shape
    got = arr.shape[1:]
    wanted = "(n, " + ", ".join("?" if d is None else str(d) for d in expected) + ")"
    if arr.ndim != len(spec.shape) or any(e is not None and e != g for e, g in zip(expected, got)):
        raise RuntimeInputError(
            f"input {spec.name!r} expects shape {wanted}, got {tuple(arr.shape)}: "
            f"resize or reshape the sample to {tuple(expected)} before predict()"
        )
    if arr.shape[0] == 0:
        raise RuntimeInputError(f"input {spec.name!r}: empty batch (n=0); send at least one sample")
    if arr.dtype != spec.dtype:
        if not np.can_cast(arr.dtype, spec.dtype, casting="same_kind"):
            raise RuntimeInputError(
                f"input {spec.name!r} expects dtype {spec.dtype}, got {arr.dtype}: "
                f"convert with .astype({spec.dtype.name!r}) (after the shared feature normalisation)"
            )
        arr = arr.astype(spec.dtype)
    return np.ascontiguousarray(arr)


def batch_slices(n: int, max_batch: int | None) -> list[slice]:
    """Split ``n`` samples into consecutive slices of at most ``max_batch``.

    >>> batch_slices(5, 2)
    [slice(0, 2, None), slice(2, 4, None), slice(4, 5, None)]
    >>> batch_slices(3, None)
    [slice(0, 3, None)]
    """
    if not max_batch or n <= max_batch:
        return [slice(0, n)]
    return [slice(i, min(i + max_batch, n)) for i in range(0, n, max_batch)]
