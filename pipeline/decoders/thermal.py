"""Thermal frames: 16-bit TIFF bytes → ``uint16`` array ``(120, 160)`` in centikelvin (K × 100).

Failure reasons: bytes that are not a TIFF → ``decode_error``; a TIFF whose header or
pixel data ends early (half-written) → ``truncated``; a readable image of the wrong shape or
dtype → ``bad_shape``.

>>> import io, numpy as np, tifffile
>>> buf = io.BytesIO(); tifffile.imwrite(buf, np.full((120, 160), 30000, np.uint16))
>>> decode_thermal_tiff(buf.getvalue(), "f.tiff").shape
(120, 160)
>>> decode_thermal_tiff(buf.getvalue()[:5000], "f.tiff")
Traceback (most recent call last):
pipeline.decoders.errors.DecodeError: truncated: TIFF pixel data needs 38656 bytes, file has 5000 (half-written or cut off) [f.tiff]
"""

from __future__ import annotations

import io
import struct

import numpy as np
import numpy.typing as npt
import tifffile

from linewatch.contract import DeadLetterReason
from pipeline.decoders.errors import DecodeError

FRAME_SHAPE: tuple[int, int] = (120, 160)
"""(height, width) of the cameras' frames."""
FRAME_DTYPE = np.dtype(np.uint16)

_MAGICS = (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+")


def _first_ifd_offset(data: bytes) -> int:
    order = "<" if data[:2] == b"II" else ">"
    if data[2:4] in (b"+\x00", b"\x00+"):  # BigTIFF: 8-byte offset at byte 8
        return int(struct.unpack(order + "Q", data[8:16])[0]) if len(data) >= 16 else 1 << 62
    return int(struct.unpack(order + "I", data[4:8])[0])


def decode_thermal_tiff(
    data: bytes, raw_ref: str, expected_shape: tuple[int, int] = FRAME_SHAPE
) -> npt.NDArray[np.uint16]:
    """Decode one frame; returns a C-contiguous ``uint16`` array of ``expected_shape``."""
    if len(data) < 8 or data[:4] not in _MAGICS:
        if data and any(data.startswith(m[: len(data)]) for m in _MAGICS) and len(data) < 8:
            raise DecodeError(DeadLetterReason.TRUNCATED, f"TIFF ends inside its 8-byte header ({len(data)} bytes)",
                              raw_ref, data[:32])
        raise DecodeError(DeadLetterReason.DECODE_ERROR,
                          "not a TIFF file (no 'II*\\0'/'MM\\0*' magic); frames must be 16-bit TIFF", raw_ref,
                          data[:32])
    ifd = _first_ifd_offset(data)
    if ifd + 2 > len(data):
        raise DecodeError(DeadLetterReason.TRUNCATED,
                          f"TIFF directory at byte {ifd} is beyond the end of the file ({len(data)} bytes)",
                          raw_ref, data[:32])
    try:
        with tifffile.TiffFile(io.BytesIO(data)) as tif:
            if len(tif.pages) == 0:
                raise DecodeError(DeadLetterReason.TRUNCATED, "TIFF has no readable image directory", raw_ref,
                                  data[:32])
            if len(tif.pages) > 1:
                raise DecodeError(DeadLetterReason.BAD_SHAPE,
                                  f"expected one frame per TIFF, got {len(tif.pages)} pages", raw_ref)
            page = tif.pages[0]
            ends = [o + n for o, n in zip(page.dataoffsets, page.databytecounts, strict=False)]
            if ends and max(ends) > len(data):
                raise DecodeError(
                    DeadLetterReason.TRUNCATED,
                    f"TIFF pixel data needs {max(ends)} bytes, file has {len(data)} (half-written or cut off)",
                    raw_ref, data[:32])
            shape, dtype = tuple(page.shape), np.dtype(page.dtype)
            if shape != expected_shape or dtype != FRAME_DTYPE:
                raise DecodeError(
                    DeadLetterReason.BAD_SHAPE,
                    f"expected a {expected_shape[1]}x{expected_shape[0]} uint16 frame (shape {expected_shape}), "
                    f"got shape {shape} dtype {dtype}",
                    raw_ref)
            frame = page.asarray()
    except DecodeError:
        raise
    except Exception as exc:  # tifffile raises many types for corrupt structures
        text = str(exc)
        reason = DeadLetterReason.TRUNCATED if "failed to read" in text else DeadLetterReason.DECODE_ERROR
        raise DecodeError(reason, f"TIFF cannot be decoded: {type(exc).__name__}: {text}", raw_ref, data[:32]) from None
    return np.ascontiguousarray(frame, dtype=FRAME_DTYPE)
