"""Thermal TIFF, WAV and manifest decoders: corrupt and hostile inputs give exactly one error each."""

from __future__ import annotations

import hashlib
import io
import json
import os
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import tifffile

from linewatch.contract import DeadLetterReason as R
from pipeline.decoders import DecodeError, decode_thermal_tiff, decode_wav
from pipeline.landing import LandingZone, ManifestEntry, ManifestError, parse_manifest_line, read_blob, read_manifest


def tiff_bytes(array: np.ndarray, compression: str | None = None) -> bytes:
    buf = io.BytesIO()
    tifffile.imwrite(buf, array, compression=compression)
    return buf.getvalue()


def wav_bytes(samples: np.ndarray, rate: int = 16_000, subtype: str = "PCM_16") -> bytes:
    buf = io.BytesIO()
    sf.write(buf, samples, rate, subtype=subtype, format="WAV")
    return buf.getvalue()


def reason_of(call, *args) -> R:  # type: ignore[no-untyped-def]
    with pytest.raises(DecodeError) as info:
        call(*args)
    return info.value.reason


FRAME = (np.arange(120 * 160, dtype=np.uint16).reshape(120, 160) % 5000 + 29000).astype(np.uint16)


def test_thermal_round_trip() -> None:
    out = decode_thermal_tiff(tiff_bytes(FRAME), "f.tiff")
    assert out.dtype == np.uint16 and out.shape == (120, 160) and np.array_equal(out, FRAME)


@pytest.mark.parametrize("cut", [6, 9, 200, 5_000, 38_000])
def test_truncated_tiff(cut: int) -> None:
    assert reason_of(decode_thermal_tiff, tiff_bytes(FRAME)[:cut], "f.tiff") is R.TRUNCATED


@pytest.mark.parametrize(("compression", "tag"), [("zlib", "ADOBE_DEFLATE"), ("lzw", "LZW"), ("packbits", "PACKBITS")])
def test_compressed_tiffs_decode_like_plain_ones(compression: str, tag: str) -> None:
    """Deflate, LZW and PackBits (MATLAB's default for TIFF) strips: LZW and PackBits need imagecodecs."""
    data = tiff_bytes(FRAME, compression)
    with tifffile.TiffFile(io.BytesIO(data)) as tif:
        assert tif.pages[0].compression.name == tag  # really compressed
    assert np.array_equal(decode_thermal_tiff(data, "f.tiff"), FRAME)
    assert reason_of(decode_thermal_tiff, data[: len(data) // 2], "f.tiff") in (R.TRUNCATED, R.DECODE_ERROR)


def test_tiff_of_wrong_shape_or_dtype_is_bad_shape() -> None:
    assert reason_of(decode_thermal_tiff, tiff_bytes(FRAME.T.copy()), "f.tiff") is R.BAD_SHAPE
    assert reason_of(decode_thermal_tiff, tiff_bytes(FRAME.astype(np.float32)), "f.tiff") is R.BAD_SHAPE
    assert reason_of(decode_thermal_tiff, tiff_bytes(np.stack([FRAME, FRAME])), "f.tiff") is R.BAD_SHAPE


def test_garbage_is_not_a_tiff() -> None:
    assert reason_of(decode_thermal_tiff, os.urandom(38_656), "f.tiff") is R.DECODE_ERROR
    assert reason_of(decode_thermal_tiff, b"", "f.tiff") is R.DECODE_ERROR
    assert reason_of(decode_thermal_tiff, wav_bytes(np.zeros(16_000)), "f.tiff") is R.DECODE_ERROR


CLIP = (0.3 * np.sin(2 * np.pi * 440 * np.arange(16_000) / 16_000)).astype(np.float32)


def test_wav_round_trip() -> None:
    out = decode_wav(wav_bytes(CLIP), "a.wav")
    assert out.dtype == np.float32 and out.shape == (16_000,)
    assert np.max(np.abs(out - CLIP)) < 1 / 32_768 * 1.01


@pytest.mark.parametrize(
    ("data", "expected_in_detail"),
    [
        (wav_bytes(CLIP, rate=44_100), "got 44100 Hz mono PCM_16 of 16000 frames"),
        (wav_bytes(np.stack([CLIP, CLIP], axis=1)), "got 16000 Hz stereo PCM_16 of 16000 frames"),
        (wav_bytes(CLIP[:8_000]), "got 16000 Hz mono PCM_16 of 8000 frames"),
        (wav_bytes(CLIP, subtype="FLOAT"), "got 16000 Hz mono FLOAT of 16000 frames"),
    ],
)
def test_wav_of_wrong_format_is_bad_shape_with_a_precise_detail(data: bytes, expected_in_detail: str) -> None:
    with pytest.raises(DecodeError) as info:
        decode_wav(data, "a.wav")
    assert info.value.reason is R.BAD_SHAPE
    assert info.value.detail == f"expected 16000 Hz mono PCM_16 of 16000 frames, {expected_in_detail}"


@pytest.mark.parametrize("cut", [10, 30, 44, 1_000, 32_043])
def test_truncated_wav(cut: int) -> None:
    assert reason_of(decode_wav, wav_bytes(CLIP)[:cut], "a.wav") is R.TRUNCATED


def test_garbage_is_not_a_wav() -> None:
    assert reason_of(decode_wav, os.urandom(32_044), "a.wav") is R.DECODE_ERROR
    assert reason_of(decode_wav, tiff_bytes(FRAME), "a.wav") is R.DECODE_ERROR


# --- manifests -------------------------------------------------------------------------------

def manifest_line(rel: str, data: bytes, **override: object) -> bytes:
    entry = {"asset_id": "PMP-01", "timestamp": "2026-11-29T14:00:00.500Z", "path": rel, "bytes": len(data),
             "sha256": hashlib.sha256(data).hexdigest()}
    entry.update(override)
    return json.dumps(entry).encode()


@pytest.fixture
def landing(tmp_path: Path) -> Path:
    root = tmp_path / "landing"
    (root / "thermal/frames/PMP-01").mkdir(parents=True)
    (root / "thermal/frames/PMP-01/a.tiff").write_bytes(b"frame-bytes")
    (tmp_path / "secret.txt").write_text("outside")
    return root


def entry_of(line: bytes) -> ManifestEntry:
    parsed = parse_manifest_line(line.decode())
    assert isinstance(parsed, ManifestEntry)
    return parsed


def read(landing: Path, line: bytes) -> bytes:
    return LandingZone(landing).read(entry_of(line))


def test_manifest_entry_reads_and_verifies_the_blob(landing: Path) -> None:
    entry = entry_of(manifest_line("thermal/frames/PMP-01/a.tiff", b"frame-bytes"))
    assert entry.asset_id == "PMP-01" and LandingZone(landing).resolve(entry.path).is_absolute()
    assert read(landing, manifest_line("thermal/frames/PMP-01/a.tiff", b"frame-bytes")) == b"frame-bytes"


@pytest.mark.parametrize("rel", ["../../etc/passwd", "../secret.txt", "thermal/../../secret.txt", "/etc/passwd"])
def test_manifest_path_outside_landing(landing: Path, rel: str) -> None:
    assert reason_of(read, landing, manifest_line(rel, b"x")) is R.PATH_OUTSIDE_LANDING


def test_manifest_absolute_path_inside_landing_is_still_refused(landing: Path) -> None:
    rel = str(landing / "thermal/frames/PMP-01/a.tiff")
    assert reason_of(read, landing, manifest_line(rel, b"frame-bytes")) is R.PATH_OUTSIDE_LANDING


def test_manifest_symlink_escaping_landing(landing: Path) -> None:
    (landing / "thermal/frames/PMP-01/evil.tiff").symlink_to(landing.parent / "secret.txt")
    (landing / "thermal/frames/linkdir").symlink_to(landing.parent, target_is_directory=True)
    for rel in ("thermal/frames/PMP-01/evil.tiff", "thermal/frames/linkdir/secret.txt"):
        assert reason_of(read, landing, manifest_line(rel, b"outside")) is R.PATH_OUTSIDE_LANDING


def test_manifest_symlink_inside_landing_is_fine(landing: Path) -> None:
    (landing / "thermal/frames/PMP-01/alias.tiff").symlink_to(landing / "thermal/frames/PMP-01/a.tiff")
    assert read(landing, manifest_line("thermal/frames/PMP-01/alias.tiff", b"frame-bytes")) == b"frame-bytes"


def test_manifest_blob_problems(landing: Path) -> None:
    def outcome(rel: str, data: bytes, **override: object) -> R:
        return reason_of(read, landing, manifest_line(rel, data, **override))

    assert outcome("thermal/frames/PMP-01/missing.tiff", b"x") is R.MISSING_FILE
    assert outcome("thermal/frames/PMP-01/a.tiff", b"frame-bytes-and-more") is R.TRUNCATED  # half-written
    assert outcome("thermal/frames/PMP-01/a.tiff", b"frame") is R.DECODE_ERROR  # larger than announced
    assert outcome("thermal/frames/PMP-01/a.tiff", b"FRAME-BYTES") is R.DECODE_ERROR  # same size, other content
    big = manifest_line("thermal/frames/PMP-01/a.tiff", b"frame-bytes").replace(b'"bytes": 11', b'"bytes": 2147483648')
    assert reason_of(lambda: read_blob(entry_of(big), landing / "thermal/frames/PMP-01/a.tiff", 4 << 20)) \
        is R.OUT_OF_RANGE  # above the kind's cap: refused before reading


def test_manifest_file_keeps_good_lines(landing: Path) -> None:
    good = manifest_line("thermal/frames/PMP-01/a.tiff", b"frame-bytes")
    (landing / "m.jsonl").write_bytes(b"\n".join([good, b'{"asset_id": "PMP-01"}', b"nope", b"", good[:30]]))
    lines = read_manifest(landing / "m.jsonl") or []
    assert isinstance(lines[0].parsed, ManifestEntry) and lines[3].parsed is None  # a blank line is nothing
    assert [(line.lineno, line.parsed.reason.value) for line in lines if isinstance(line.parsed, ManifestError)] == [
        (2, "schema_error"), (3, "decode_error"), (5, "decode_error")]
    assert lines[-1].last_unterminated and not lines[0].last_unterminated


def mutations(data: bytes, seed: int, count: int) -> list[bytes]:
    """Deterministic hostile variants: cuts, flipped bytes, overwritten header regions."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        buf = bytearray(data[: int(rng.integers(0, len(data) + 1))] if rng.random() < 0.4 else data)
        for _ in range(int(rng.integers(1, 8))):
            if buf:
                pos = int(rng.integers(0, min(len(buf), 256 if rng.random() < 0.7 else len(buf))))
                buf[pos] = int(rng.integers(0, 256))
        out.append(bytes(buf))
    return out


def test_mutated_frames_and_clips_never_crash_the_decoder() -> None:
    """Any byte soup gives either a valid array or a DecodeError; never another exception."""
    outcomes: dict[str, set[str]] = {"tiff": set(), "wav": set()}
    for name, data, decode in (("tiff", tiff_bytes(FRAME), decode_thermal_tiff), ("wav", wav_bytes(CLIP), decode_wav)):
        for variant in mutations(data, seed=11, count=300):
            try:
                decode(variant, "x")
                outcomes[name].add("ok")
            except DecodeError as exc:
                outcomes[name].add(exc.reason.value)
    assert {"truncated", "decode_error"} <= outcomes["tiff"] and {"truncated", "decode_error"} <= outcomes["wav"]
