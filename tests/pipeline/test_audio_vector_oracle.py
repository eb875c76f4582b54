"""The fast audio vector's first 79 values are the v3 audio vector, bit for bit (features v4 only
appended the seven baseline values, zeros without a learned baseline).

``pipeline.features.audio_physics`` was rewritten for speed (cached windows and frequency masks,
the 53 band envelopes of a segment in one batched inverse FFT per transform length, the comb
searches over all envelope spectra at once). The shipped models were trained on the v3 vector,
so the rewrite must not move a single bit: every clip below goes through both the shipped
implementation and the frozen copy of the v3 code (``tests/pipeline/oracle/audio_physics_v3.py``)
and the float32 vectors must be equal. Clips: simulator samples of every fault class (several
severities, drifts, assets), domain-randomised machines (other speeds, VFDs, bearings with and
without geometry, resonance bands known or not, hall noise), gains from -12 to +12 dB, with and
without a measured speed, short (padded), long (several segments) and 44.1 kHz clips.

One deliberate change since (2026-12-05) is in the oracle too, marked there: on a drive whose PWM
carrier the clip shows, the speed read off the carrier and the carrier's lines notched out of the
envelope spectra (the last test); every other clip here gives the v3 bits. A second (session
34), also in the oracle: without a measured speed, a machine on the mains whose synchronous speed
is known is read inside its slip window (here the 0.375 s clip, whose harmonic sum peaks outside it).
Another (session 42), in the oracle too: the blind comb leaves out orders within 0.02 of a whole number,
not 0.08.
"""

from __future__ import annotations

import numpy as np
import pytest

from linewatch.simulator import SimulatorConfig
from linewatch.simulator.assets import asset_registry_json
from linewatch.simulator.dataset import generate_arrays
from linewatch.simulator.domain import DomainRenderer, domain_fleet, domain_registry_json, draw_domain_specs
from linewatch.simulator.health import FAULT_CLASSES
from pipeline.features.asset_profile import load_profiles
from pipeline.features.audio_physics import audio_vector
from tests.pipeline.oracle import audio_physics_v3 as v3

SR = 16_000


def _same(clip: np.ndarray, rate: int, asset: object, shaft_hz: float | None = None) -> None:
    full = audio_vector(clip, rate, asset, shaft_hz)
    assert full.shape == (86,) and not full[79:].any()
    new, old = full[:79], v3.audio_vector(clip, rate, asset, shaft_hz)
    assert new.dtype == old.dtype and new.shape == old.shape
    differ = np.flatnonzero(new.view(np.uint32) != old.view(np.uint32))
    assert differ.size == 0, [(v3.AUDIO_VECTOR_NAMES[i], float(old[i]), float(new[i])) for i in differ]


@pytest.fixture(scope="module")
def reference_clips() -> list[tuple[str, np.ndarray, dict[str, object]]]:
    cfg = SimulatorConfig(seed=11)
    arrays = generate_arrays(3, cfg, modalities=("audio",))
    entries = {e["asset_id"]: e for e in asset_registry_json(arrays.fleet, cfg)["assets"]}
    assert arrays.audio is not None
    return [(spec.physical_fault, arrays.audio[i].astype(np.float32) / 32768, entries[spec.asset_id])
            for i, spec in enumerate(arrays.specs)]


def test_every_fault_class_is_covered(reference_clips: list[tuple[str, np.ndarray, dict[str, object]]]) -> None:
    assert {fault for fault, _, _ in reference_clips} >= set(FAULT_CLASSES)


def test_reference_line_clips_match_v3(reference_clips: list[tuple[str, np.ndarray, dict[str, object]]]) -> None:
    for i, (_, clip, entry) in enumerate(reference_clips):
        _same(clip, SR, entry)
        gain = (0.25, 4.0, 1.0)[i % 3]  # -12 dB, +12 dB
        hint = float(entry["nominal_rpm"]) / 60 * (0.99 if i % 2 else 1.01)  # type: ignore[arg-type]
        _same(clip * np.float32(gain), SR, entry, hint)


def test_unknown_machine_and_edge_lengths_match_v3(
        reference_clips: list[tuple[str, np.ndarray, dict[str, object]]]) -> None:
    _, clip, entry = reference_clips[0]
    _same(clip, SR, None)  # no profile: broad speed search, no bearing orders, kurtogram-chosen band
    _same(clip, SR, {"asset_id": "M", "nominal_rpm": 1480})
    _same(clip[:6_000], SR, entry)  # 0.375 s: zero-padded to one segment
    long = np.concatenate([c for _, c, _ in reference_clips[:3]])
    _same(long, SR, entry)  # 3 s: three segments, median
    from scipy.signal import resample_poly
    _same(resample_poly(clip, 441, 160).astype(np.float32), 44_100, entry)


def test_domain_randomised_machines_match_v3() -> None:
    fleet = domain_fleet(10, seed=5)
    profiles = load_profiles(domain_registry_json(fleet, 5))
    renderer = DomainRenderer(fleet, 5)
    specs = draw_domain_specs(2, fleet, 5)
    assert len({s.fault for s in specs}) == len(FAULT_CLASSES)
    for spec in specs:
        sample = renderer.render(spec, ("plc", "audio"))
        assert sample.clip is not None
        clip = sample.clip.astype(np.float32) / 32768
        _same(clip, SR, profiles[spec.asset_id])
        _same(clip, SR, profiles[spec.asset_id], sample.shaft_hz)


def test_a_drive_with_a_pwm_carrier_matches_v3_with_its_speed_and_notch() -> None:
    """The one change since v3 (2026-12-05), in the oracle too: a drive's PWM carrier sets the speed
    (without a measured one) and its supply lines are notched out of the envelope spectra; hand-made
    6-pole drives whose carrier is found, one of them read at another speed than the harmonic sum's."""
    from pipeline.features.audio_physics import drive_supply_hz, supply_range_hz
    from tests.pipeline.test_audio_supply_lines import ASSET, PROFILE, SHAFT_HZ, _clip

    clip = _clip(1, 0.01)
    assert drive_supply_hz(clip.astype(np.float64), supply_range_hz(PROFILE, None, 3)) is not None
    _same(clip, SR, ASSET)
    _same(clip, SR, ASSET, SHAFT_HZ)
    _same(_clip(2, 0.01, shaft_hz=9.0, even_only=True), SR, ASSET)
