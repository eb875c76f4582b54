"""Atomic file closing and blob encoders.

A file becomes visible under its final name only when complete: content is
written to ``.<name>.tmp`` in the same directory, flushed, then
``os.replace``-d into place (atomic on POSIX within one filesystem).  Readers
that skip names starting with ``.`` or ``_`` (Flink's FileSource does) never
see partial files.
"""

from __future__ import annotations

import hashlib
import io
import os
import wave
from pathlib import Path

import numpy as np
import tifffile


def atomic_write_bytes(path: str | Path, data: bytes, staging: str | Path | None = None) -> Path:
    """Write ``data`` to ``path`` atomically via a hidden temp file; return ``path``.

    The temp file lies beside ``path``, or in ``staging`` (same filesystem) when the target
    directory must never show a temporary name, as the watched ``manifests/`` directory.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if staging is not None:
        Path(staging).mkdir(parents=True, exist_ok=True)
    tmp = (Path(staging) if staging is not None else path.parent) / f".{path.name}.tmp"
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
    os.replace(tmp, path)
    return path


def atomic_write_text(path: str | Path, text: str) -> Path:
    """UTF-8 text variant of :func:`atomic_write_bytes`."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def encode_tiff(frame: np.ndarray) -> bytes:
    """Single-page, uncompressed, minisblack TIFF of a ``uint16`` frame (deterministic bytes)."""
    if frame.dtype != np.uint16 or frame.ndim != 2:
        raise ValueError("expected a 2-D uint16 frame")
    buf = io.BytesIO()
    tifffile.imwrite(buf, frame, photometric="minisblack", metadata=None, software=False)
    return buf.getvalue()


def encode_wav(samples: np.ndarray, rate: int) -> bytes:
    """Mono 16-bit PCM WAV (RIFF) of an ``int16`` array."""
    if samples.dtype != np.int16 or samples.ndim != 1:
        raise ValueError("expected a 1-D int16 array")
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(int(rate))
        w.writeframes(samples.astype("<i2").tobytes())
    return buf.getvalue()


def sha256_hex(data: bytes) -> str:
    """Hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()
