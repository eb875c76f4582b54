"""A drive's PWM carrier: its sidebands give the supply frequency, hence the running speed, and its
lines in the envelope are electrical, not a bearing (2026-12-05).

A 6-pole motor on a drive: its PWM carrier's sidebands at f_c +- 2 f_e demodulate to envelope lines
at 2 f_e, 4 f_e, ... = 6.1, 12.2 shaft orders, where a 6204 bearing's 2 x BPFO and 4 x BPFO sit.
Hand-made clips: the carrier must not read as an outer-race comb, a real outer-race defect on the
same drive must still read as one, and a machine whose sound has only even shaft harmonics (the
harmonic sum cannot tell it from one at twice the speed) is read at its speed.
"""

from __future__ import annotations

import numpy as np

from pipeline.features.asset_profile import AssetProfile
from pipeline.features.audio_physics import (
    AUDIO_VECTOR_NAMES,
    audio_vector,
    drive_supply_hz,
    supply_lines,
    supply_pole_pairs,
    supply_range_hz,
)

SR = 16_000
SHAFT_HZ = 16.0
SLIP = 0.017
BPFO = 3.052  # 6204: 8 balls of 7.94 mm on a 33.5 mm pitch
ASSET = {"asset_id": "P-6", "asset_type": "pump", "poles": 6, "line_frequency_hz": 50, "vfd": True,
         "bearing": {"designation": "6204"}}
PROFILE = AssetProfile.from_entry(ASSET)


def _supply(shaft_hz: float) -> float:
    return 3 * shaft_hz / (1 - SLIP)  # 6 poles: at 16 Hz 48.83 Hz, 2 f_e = 6.10 shaft orders


def _clip(seed: int, pwm: float, outer_race: float = 0.0, shaft_hz: float = SHAFT_HZ,
          even_only: bool = False) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(SR) / SR
    if even_only:  # e.g. a four-lobe rotor: its strong tones on the even shaft harmonics
        x = sum(0.04 / k * np.sin(2 * np.pi * 2 * k * shaft_hz * t + rng.uniform(0, 6.3)) for k in range(1, 8))
    else:
        x = 0.05 * np.sin(2 * np.pi * shaft_hz * t) + 0.02 * np.sin(2 * np.pi * 2 * shaft_hz * t)
    x = x + 0.02 * rng.standard_normal(SR)
    f_e = _supply(shaft_hz)
    for f, a in ((3_000.0, 1.0), (3_000.0 - 2 * f_e, 0.6), (3_000.0 + 2 * f_e, 0.6),
                 (3_000.0 - 4 * f_e, 0.25), (3_000.0 + 4 * f_e, 0.25)):
        x += pwm * a * np.sin(2 * np.pi * f * t + rng.uniform(0, 2 * np.pi))
    if outer_race:
        imp = np.zeros(SR)
        times = np.arange(rng.uniform(0, 0.01), 1, 1 / (BPFO * shaft_hz * 0.99))
        np.add.at(imp, (times * SR).astype(int), outer_race)
        ring = np.exp(-np.arange(200) / 25.0) * np.sin(2 * np.pi * 4_200 * np.arange(200) / SR)
        x += np.convolve(imp, ring)[:SR]
    return np.asarray(x, dtype=np.float32)


def test_the_supply_frequency_is_read_off_the_carrier_sidebands() -> None:
    search = supply_range_hz(PROFILE, None, 3)
    for shaft in (SHAFT_HZ, 5.0):  # 5 Hz: 31 % of nameplate, below the harmonic sum's range
        found = drive_supply_hz(_clip(0, 0.01, shaft_hz=shaft).astype(np.float64), search)
        assert found is not None and abs(found.supply_hz - _supply(shaft)) < 0.05, (shaft, found)
        assert abs(found.carrier_hz - 3_000.0) < 0.5
        assert found.in_band((2_500.0, 4_500.0)) and not found.in_band((4_500.0, 7_200.0))
    assert drive_supply_hz(_clip(0, 0.0).astype(np.float64), search) is None  # no carrier: no drive
    assert supply_lines(np.zeros((2, 800)), 1.0, None).size == 0


def test_pole_pairs_come_from_poles_or_the_nameplate_speed() -> None:
    assert supply_pole_pairs(PROFILE) == 3
    assert supply_pole_pairs(AssetProfile.from_entry({"asset_id": "F", "nominal_rpm": 1449})) == 2  # 50 Hz, 4 poles
    assert supply_pole_pairs(AssetProfile.from_entry({"asset_id": "F", "nominal_rpm": 3540})) == 1  # 60 Hz, 2 poles
    assert supply_pole_pairs(AssetProfile.from_entry({"asset_id": "F"})) is None


def test_pwm_lines_do_not_read_as_an_outer_race_defect() -> None:
    names = ("comb.bpfo", "comb.blind", "env.nonsync.prom")
    idx = [AUDIO_VECTOR_NAMES.index(n) for n in names]
    for seed in range(3):
        quiet = audio_vector(_clip(seed, 0.0), SR, ASSET, SHAFT_HZ)[idx]
        drive = audio_vector(_clip(seed, 0.01), SR, ASSET, SHAFT_HZ)[idx]
        assert np.all(drive < quiet + 0.5), dict(zip(names, zip(quiet, drive, strict=True), strict=True))


def test_an_outer_race_defect_on_the_drive_still_reads() -> None:
    comb = AUDIO_VECTOR_NAMES.index("comb.bpfo")
    for seed in range(3):
        healthy = audio_vector(_clip(seed, 0.01), SR, ASSET, SHAFT_HZ)[comb]
        worn = audio_vector(_clip(seed, 0.01, outer_race=0.3), SR, ASSET, SHAFT_HZ)[comb]
        assert worn > healthy + 1.0, (healthy, worn)


def test_the_carrier_gives_the_speed_that_even_harmonics_leave_open() -> None:
    """9 Hz (55 % of nameplate) with only even harmonics: the harmonic sum alone takes 18 Hz, inside
    the drive's search range; the carrier's sidebands say 9. A measured speed still outranks both."""
    speed = AUDIO_VECTOR_NAMES.index("speed.shaft_hz")
    for seed in range(3):
        alone = audio_vector(_clip(seed, 0.0, shaft_hz=9.0, even_only=True), SR, ASSET)[speed] * 60
        drive = audio_vector(_clip(seed, 0.01, shaft_hz=9.0, even_only=True), SR, ASSET)[speed] * 60
        assert abs(alone / 18.0 - 1) < 0.02 and abs(drive / 9.0 - 1) < 0.02, (alone, drive)
    told = audio_vector(_clip(0, 0.01, shaft_hz=9.0, even_only=True), SR, ASSET, 18.0)[speed] * 60
    assert abs(told / 18.0 - 1) < 0.02
