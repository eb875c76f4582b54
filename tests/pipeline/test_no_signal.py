"""A sensor that records nothing, in the live line (the ingestor the Flink function runs, real landing
zone): a thermal frame without contrast (a covered lens, a closed shutter) and a silent clip go to
the dead letters as ``no_signal`` with what to check, and a frame or clip that repeats its asset's
last one bit for bit (a frozen sensor) as ``duplicate``. Before, the frame and the repeats were
scored (the frame as a healthy machine) and the clip failed inside the features as a
``processing_error``. Also the demo's injected bad input."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from linewatch.contract import AlertRequest, AudioFeatures, DeadLetter, DeadLetterReason, ThermalFeatures
from linewatch.simulator.assets import make_fleet
from linewatch.simulator.config import SimulatorConfig
from linewatch.simulator.domain import DOMAINS, domain_fleet
from linewatch.simulator.drift import DriftState
from linewatch.simulator.physics import Snapshot
from linewatch.simulator.thermal import ThermalCamera
from linewatch.simulator.writer import encode_wav
from pipeline.asset_state import AssetState
from pipeline.features.frame_contrast import MIN_CONTRAST_K, frame_contrast_k
from pipeline.ingestor import AssetIngestor
from pipeline.landing import ManifestWriter
from tests.pipeline.conftest import job_spec, tiff_bytes
from tests.pipeline.test_thermal_reference import REGIONS

HALL_CK = 29_415  # 21 °C


def read(tmp_path: Path, blobs: list[tuple[str, bytes]]) -> list[tuple[object, dict[str, int]]]:
    """Each blob (``thermal`` or ``audio``, its bytes) as the first of its machine (its own landing
    zone, ingestor and asset state): (the message, the counters)."""
    return [feed(tmp_path / str(k), [blob], AssetState())[0] for k, blob in enumerate(blobs)]


def covered_lens(rng: np.random.Generator, netd_k: float) -> np.ndarray:
    """A capped camera: the cap's one temperature, the camera's noise and a faint vignette (0.2 K)."""
    yy, xx = np.mgrid[0:120, 0:160]
    vignette = -20.0 * (((xx - 80) / 80) ** 2 + ((yy - 60) / 60) ** 2) / 2
    return np.rint(HALL_CK + vignette + rng.normal(0, 100 * netd_k, (120, 160))).astype(np.uint16)


def cold_machine_frames(fleet: list | None = None) -> list[np.ndarray]:
    """Machines (default: the plant simulator's) stopped long enough to reach their hall's 20 °C."""
    amb = 20.0
    snap = Snapshot(t=0, run=0, speed_frac=0, load=0, stroke=0, shaft_hz=0, current_a=0, current_ratio=0,
                    bearing_c=amb, nde_c=amb, winding_c=amb, hotspot_k=0, driven_c=amb, coupling_c=amb,
                    ambient_c=amb, vibration_mm_s=0, pressure_bar=0, fault="normal", severity=0, effect=0, variant="")
    profile = SimulatorConfig().profile
    fleet = make_fleet(12, seed=7) if fleet is None else fleet
    return [ThermalCamera(a, profile).render(snap, DriftState(), np.random.default_rng(1)) for a in fleet]


def test_a_frame_without_contrast_is_refused_with_what_to_check(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    constant = np.full((120, 160), HALL_CK, np.uint16)
    noisy = covered_lens(rng, 0.1)  # a camera of NETD 100 mK
    dead = covered_lens(rng, 0.05)
    dead[10, 10], dead[60, 80], dead[100, 150] = 0, 0, 65_535  # dead pixels are no contrast either
    for letter, counters in read(tmp_path, [("thermal", tiff_bytes(f)) for f in (constant, noisy, dead)]):
        assert isinstance(letter, DeadLetter) and letter.reason is DeadLetterReason.NO_SIGNAL, letter
        assert "no contrast" in letter.detail and "covered lens" in letter.detail and "check the camera" in letter.detail
        assert letter.asset_id == "MTR-D" and letter.raw_ref.endswith("0.tiff")
        assert counters.get("deadletters.no_signal") == 1 and "entries.thermal" not in counters


def test_frames_with_little_contrast_are_still_read(tmp_path: Path) -> None:
    """A machine 1 K over a uniform hall, and machines at their hall's temperature (the hall's
    clutter and gradient: 2.0 K and more on these scenes) are scenes, not a covered lens."""
    warm = covered_lens(np.random.default_rng(4), 0.05)
    warm[50:80, 60:110] += 100
    cold = cold_machine_frames()
    assert min(frame_contrast_k(f / 100.0) for f in cold) > 3 * MIN_CONTRAST_K
    for msg, counters in read(tmp_path, [("thermal", tiff_bytes(f)) for f in (warm, *cold)]):
        assert isinstance(msg, ThermalFeatures), msg
        assert "deadletters" not in counters
    # the randomised fleets the models train on (other frame sizes, halls, cameras): 1.6 K and more
    randomised = [f for d in ("train", "unseen") for f in cold_machine_frames(domain_fleet(30, 5, DOMAINS[d]))]
    assert min(frame_contrast_k(f / 100.0) for f in randomised) > 3 * MIN_CONTRAST_K


def test_a_silent_clip_is_refused_as_no_signal_not_as_a_processing_error(tmp_path: Path) -> None:
    zeros = np.zeros(16_000, np.int16)
    dc = np.full(16_000, 1200, np.int16)  # an amplifier's offset: no sound
    quiet = np.random.default_rng(5).normal(0, 3, 16_000).astype(np.int16)  # -80 dBFS, but sound
    got = read(tmp_path, [("audio", encode_wav(x, 16_000)) for x in (zeros, dc, quiet)])
    for letter, counters in got[:2]:
        assert isinstance(letter, DeadLetter) and letter.reason is DeadLetterReason.NO_SIGNAL, letter
        assert "silent" in letter.detail and "check the microphone" in letter.detail
        assert counters.get("deadletters.no_signal") == 1 and "deadletters.processing_error" not in counters
    msg, counters = got[2]
    assert isinstance(msg, AudioFeatures), msg


def feed(tmp_path: Path, blobs: list[tuple[str, bytes]], state: AssetState,
         start_s: int = 0) -> list[tuple[object, dict[str, int]]]:
    """The blobs, one second apart from ``start_s``, as one machine's (one landing zone, ingestor and
    ``state``): (the message, the counters) of each."""
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "assets.json").write_text(json.dumps({"assets": [
        {"asset_id": "MTR-D", "asset_type": "fan", "regions": REGIONS}]}))
    ingestor = AssetIngestor(job_spec(tmp_path, "x", "redis://unused", thermal_reference_frames=0,
                                      audio_baseline_clips=0))
    writer = ManifestWriter(tmp_path, epoch=1)
    at = (int(time.time()) - 600 + start_s) * 1000
    results = []
    for k, (kind, data) in enumerate(blobs):
        path = f"thermal/frames/MTR-D/{k}.tiff" if kind == "thermal" else f"audio/clips/MTR-D/{k}.wav"
        entry = writer.write_blob(path, data, "MTR-D", at + 1000 * k)
        writer.publish([entry])
        out = ingestor.on_line(entry.to_json(), state, "MTR-D")
        messages = [e.message for e in out.entries]
        assert len(messages) == 1, out
        results.append((messages[0], out.counters))
    return results


def test_a_frozen_camera_or_microphone_repeating_its_last_record_is_refused(tmp_path: Path) -> None:
    """A frame or clip bit for bit the asset's previous one (a hung camera, an exporter rewriting its
    cached file) is a ``duplicate`` that says so; one pixel or sample different is a new record, and
    a record like an older one (not the last) is read."""
    rng = np.random.default_rng(8)
    frame = covered_lens(rng, 0.05)
    frame[50:80, 60:110] += 1_500
    nudged = frame.copy()
    nudged[3, 3] += 1
    clip = rng.normal(0, 800, 16_000).astype(np.int16)
    other = clip.copy()
    other[100] += 1
    state = AssetState()
    got = [m for m, _ in feed(tmp_path, [("thermal", tiff_bytes(frame)), ("thermal", tiff_bytes(frame)), ("thermal", tiff_bytes(nudged)),
                          ("thermal", tiff_bytes(frame)), ("audio", encode_wav(clip, 16_000)),
                          ("audio", encode_wav(clip, 16_000)), ("audio", encode_wav(other, 16_000))], state)]
    kinds = [type(m).__name__ for m in got]
    assert kinds == ["ThermalFeatures", "DeadLetter", "ThermalFeatures", "ThermalFeatures", "AudioFeatures",
                     "DeadLetter", "AudioFeatures"], kinds
    for letter, thing in ((got[1], "camera"), (got[5], "microphone")):
        assert isinstance(letter, DeadLetter) and letter.reason is DeadLetterReason.DUPLICATE
        assert "bit for bit" in letter.detail and "frozen" in letter.detail and f"check that the {thing}" in letter.detail
    # the digests are kept with the asset's order state: a restored job still knows the last records
    restored = state.copy_through_storage()
    assert restored.last_digest == state.last_digest and set(restored.last_digest) == {"thermal", "audio"}
    [(again, _)] = feed(tmp_path / "restored", [("thermal", tiff_bytes(frame))], restored, start_s=60)
    assert isinstance(again, DeadLetter) and again.reason is DeadLetterReason.DUPLICATE


def test_order_state_written_before_the_digests_loads_without_them() -> None:
    old = json.dumps({"order": {}, "last_ms": {"thermal": 5}, "held_since_ms": None})
    state = AssetState.load(old)
    assert state.last_ms == {"thermal": 5} and state.last_digest == {}


def test_the_demos_bad_input_reaches_the_dead_letters_and_raises_a_sensor_alert(tmp_path: Path) -> None:
    """``linewatch demo`` drops a truncated frame and five frames of a covered camera half-way through;
    through the job's ingest function they are dead letters ``truncated`` and ``no_signal``, and the
    covered camera's fifth frame asks for a ``sensor_fault`` alert (``pipeline.sensor_refusals``)."""
    from linewatch.cli.demo_cmd import _inject_bad_input

    (tmp_path / "assets.json").write_text(json.dumps({"assets": [
        {"asset_id": "MTR-D", "asset_type": "fan", "regions": REGIONS}]}))
    _inject_bad_input(tmp_path, "MTR-D")
    ingestor, state = AssetIngestor(job_spec(tmp_path, "x", "redis://unused")), AssetState()
    reasons: dict[str, list[DeadLetterReason]] = {}
    requests = []
    for manifest in sorted((tmp_path / "manifests").glob("gateway-MTR-D-*.jsonl")):
        for line in manifest.read_text().splitlines():
            messages = [e.message for e in ingestor.on_line(line, state, "MTR-D").entries]
            assert isinstance(messages[0], DeadLetter), messages
            reasons.setdefault(manifest.stem.split("MTR-D-")[1], []).append(messages[0].reason)
            requests += [m for m in messages[1:] if isinstance(m, AlertRequest)]
    assert reasons == {"lens-covered": [DeadLetterReason.NO_SIGNAL] * 5, "power-cut": [DeadLetterReason.TRUNCATED]}
    [request] = requests
    assert (request.label, request.state, request.details["reason"]) == ("sensor_fault", "raise", "no_signal")
