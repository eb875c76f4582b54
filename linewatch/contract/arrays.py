"""Encoding of numpy arrays on the wire: dtype + shape + raw little-endian bytes.

Never pickle. The spec (``ArraySpec``) travels in the message body as JSON, the bytes
travel in their own binary-safe Redis stream field. Any language can decode it.

>>> import numpy as np
>>> a = np.arange(6, dtype=np.float32).reshape(2, 3)
>>> spec, raw = encode_array(a)
>>> spec
ArraySpec(dtype='float32', shape=(2, 3))
>>> b = decode_array(spec, raw)
>>> bool((a == b).all()), b.dtype.name, b.shape
(True, 'float32', (2, 3))
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ALLOWED_DTYPES: frozenset[str] = frozenset(
    {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
     "float16", "float32", "float64"}
)


class ArrayEncodingError(ValueError):
    """An array cannot be encoded or the bytes do not match their spec."""


@dataclass(frozen=True)
class ArraySpec:
    """``dtype`` is a numpy dtype name from ``ALLOWED_DTYPES``; bytes are C-order, little-endian."""

    dtype: str
    shape: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        return int(np.dtype(self.dtype).itemsize * int(np.prod(self.shape, dtype=np.int64)))

    def to_json(self) -> dict[str, object]:
        return {"dtype": self.dtype, "shape": list(self.shape)}

    @classmethod
    def from_json(cls, data: object) -> ArraySpec:
        if not isinstance(data, dict) or "dtype" not in data or "shape" not in data:
            raise ArrayEncodingError(f"array spec must be {{'dtype': ..., 'shape': [...]}}, got {data!r}")
        dtype, shape = data["dtype"], data["shape"]
        if dtype not in ALLOWED_DTYPES:
            raise ArrayEncodingError(f"dtype {dtype!r} not allowed; use one of {sorted(ALLOWED_DTYPES)}")
        if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
            raise ArrayEncodingError(f"shape must be a list of non-negative ints, got {shape!r}")
        return cls(dtype=dtype, shape=tuple(shape))


def encode_array(array: np.ndarray) -> tuple[ArraySpec, bytes]:
    """Return the spec and the C-order little-endian bytes of ``array``."""
    name = array.dtype.name
    if name not in ALLOWED_DTYPES:
        raise ArrayEncodingError(f"cannot encode dtype {name!r}; convert to one of {sorted(ALLOWED_DTYPES)}")
    little = array.astype(array.dtype.newbyteorder("<"), copy=False)
    return ArraySpec(dtype=name, shape=tuple(int(d) for d in array.shape)), np.ascontiguousarray(little).tobytes()


def decode_array(spec: ArraySpec, raw: bytes) -> np.ndarray:
    """Rebuild the array; raises ``ArrayEncodingError`` if the byte count does not match."""
    if len(raw) != spec.nbytes:
        raise ArrayEncodingError(
            f"array bytes do not match spec {spec.dtype}{list(spec.shape)}: expected {spec.nbytes} bytes, got {len(raw)}"
        )
    dtype = np.dtype(spec.dtype).newbyteorder("<")
    return np.frombuffer(raw, dtype=dtype).reshape(spec.shape).astype(np.dtype(spec.dtype), copy=False)
