"""Audio clips: WAV bytes → ``float32`` mono samples in [-1, 1).

The expected format is a :class:`ClipSpec` (default 16 kHz, mono, PCM_16, 1 s = 16000
frames). Reasons: not a RIFF/WAVE file → ``decode_error``; a ``data`` chunk declaring more
bytes than the file holds → ``truncated``; any other rate/channels/subtype/length →
``bad_shape`` with a detail naming what was expected and what came.

>>> import io, numpy as np, soundfile as sf
>>> buf = io.BytesIO(); sf.write(buf, np.zeros(16000), 44100, subtype="PCM_16", format="WAV")
>>> decode_wav(buf.getvalue(), "a.wav")
Traceback (most recent call last):
pipeline.decoders.errors.DecodeError: bad_shape: expected 16000 Hz mono PCM_16 of 16000 frames, got 44100 Hz mono PCM_16 of 16000 frames [a.wav]
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import soundfile as sf

from linewatch.contract import DeadLetterReason
from pipeline.decoders.errors import DecodeError


@dataclass(frozen=True)
class ClipSpec:
    """The one clip format the pipeline accepts."""

    sample_rate: int = 16_000
    channels: int = 1
    subtype: str = "PCM_16"
    frames: int = 16_000

    def describe(self, sample_rate: int, channels: int, subtype: str, frames: int) -> str:
        return f"{sample_rate} Hz {_channels(channels)} {subtype} of {frames} frames"

    def __str__(self) -> str:
        return self.describe(self.sample_rate, self.channels, self.subtype, self.frames)


def _channels(n: int) -> str:
    return {1: "mono", 2: "stereo"}.get(n, f"{n}-channel")


DEFAULT_CLIP_SPEC = ClipSpec()


def _riff_truncation(data: bytes) -> str | None:
    """Why the RIFF chunk structure says the file was cut off, or None."""
    pos = 12
    while pos + 8 <= len(data):
        chunk_id, size = data[pos:pos + 4], struct.unpack("<I", data[pos + 4:pos + 8])[0]
        body = pos + 8
        if chunk_id == b"data":
            if size != 0xFFFFFFFF and body + size > len(data):
                return f"'data' chunk declares {size} bytes, only {len(data) - body} present (half-written or cut off)"
            return None
        pos = body + size + (size & 1)
    return "file ends before its 'data' chunk (half-written or cut off)"


def decode_wav(data: bytes, raw_ref: str, spec: ClipSpec = DEFAULT_CLIP_SPEC) -> npt.NDArray[np.float32]:
    """Decode a WAV clip that must match ``spec``; returns ``float32`` ``(spec.frames,)``."""
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        if len(data) < 12 and data and (b"RIFF"[: len(data)] == data[:4]):
            raise DecodeError(DeadLetterReason.TRUNCATED, f"WAV ends inside its RIFF header ({len(data)} bytes)",
                              raw_ref, data[:32])
        raise DecodeError(DeadLetterReason.DECODE_ERROR, "not a WAV file (no RIFF/WAVE header)", raw_ref, data[:32])
    cut = _riff_truncation(data)
    if cut is not None:
        raise DecodeError(DeadLetterReason.TRUNCATED, cut, raw_ref, data[:32])
    try:
        with sf.SoundFile(io.BytesIO(data)) as snd:
            got = (snd.samplerate, snd.channels, snd.subtype, snd.frames)
            if got != (spec.sample_rate, spec.channels, spec.subtype, spec.frames):
                raise DecodeError(DeadLetterReason.BAD_SHAPE, f"expected {spec}, got {spec.describe(*got)}", raw_ref)
            samples = snd.read(dtype="float32", always_2d=False)
    except DecodeError:
        raise
    except (sf.LibsndfileError, RuntimeError, ValueError) as exc:
        raise DecodeError(DeadLetterReason.DECODE_ERROR, f"WAV cannot be decoded: {exc}", raw_ref, data[:32]) from None
    if samples.shape != (spec.frames,):
        raise DecodeError(DeadLetterReason.TRUNCATED,
                          f"WAV header promises {spec.frames} frames, {samples.shape[0]} could be read", raw_ref)
    return np.ascontiguousarray(samples, dtype=np.float32)
