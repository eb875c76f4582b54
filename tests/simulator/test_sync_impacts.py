"""Healthy knocks locked to the shaft (``DomainSpec.sync_impact_share``): off by default (and then
changing no sample), drawn from their own random stream, and heard at whole shaft orders in the
envelope when on."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from scipy.signal import butter, hilbert, sosfiltfilt

from linewatch.simulator.domain import TRAIN_DOMAIN, DomainRenderer, domain_asset, draw_domain_specs

SEED = 11
KNOCKING = replace(TRAIN_DOMAIN, sync_impact_share=1.0, sync_impacts_per_rev=(3, 3), sync_impact_scale=(12.0, 12.0))


def _envelope_line(clip: np.ndarray, band_hz: tuple[float, float], f0: float) -> float:
    """Envelope-spectrum magnitude at ``f0`` over the median of its neighbourhood (1 s clip, 1 Hz bins)."""
    x = clip.astype(np.float64) / 32768.0
    sos = butter(4, band_hz, btype="bandpass", fs=16_000, output="sos")
    env = np.abs(hilbert(sosfiltfilt(sos, x)))
    spec = np.abs(np.fft.rfft(env - env.mean()))
    k = int(round(f0))
    return float(spec[k - 1: k + 2].max() / np.median(spec[max(2, k - 20): k + 20]))


def test_knocks_are_off_by_default_and_drawn_from_their_own_stream() -> None:
    quiet, knocking = domain_asset(4, SEED, TRAIN_DOMAIN), domain_asset(4, SEED, KNOCKING)
    assert quiet.extra["sync_impacts_per_rev"] == 0.0 and knocking.extra["sync_impacts_per_rev"] == 3.0
    others = {k: v for k, v in quiet.extra.items() if not k.startswith("sync_")}
    assert others == {k: v for k, v in knocking.extra.items() if not k.startswith("sync_")}
    assert replace(quiet, extra={}) == replace(knocking, extra={})  # the machine itself is the same



def test_with_the_share_at_0_a_sample_is_what_it_was_before_the_knocks_existed() -> None:
    """The knock keys of a quiet machine change nothing: its audio, frame and PLC data equal those
    of the same machine without the keys (as drawn before they were added)."""
    quiet = domain_asset(4, SEED, TRAIN_DOMAIN)
    before = replace(quiet, extra={k: v for k, v in quiet.extra.items() if not k.startswith("sync_")})
    spec = replace(next(s for s in draw_domain_specs(2, [quiet], SEED) if s.fault == "bearing_wear"), asset_index=0)
    now, then = DomainRenderer([quiet], SEED).render(spec), DomainRenderer([before], SEED).render(spec)
    np.testing.assert_array_equal(now.clip, then.clip)
    np.testing.assert_array_equal(now.frame, then.frame)
    np.testing.assert_array_equal(now.plc.values, then.plc.values)


def test_a_knocking_healthy_machine_rings_at_whole_shaft_orders() -> None:
    quiet, knocking = domain_asset(4, SEED, TRAIN_DOMAIN), domain_asset(4, SEED, KNOCKING)
    spec = next(s for s in draw_domain_specs(2, [quiet], SEED) if s.fault == "normal")
    spec = replace(spec, asset_index=0, drift="none", drift_level=0.0)
    band = (0.8 * quiet.resonance_hz, min(1.2 * quiet.resonance_hz, 7_900.0))
    lines = {}
    for name, asset in (("quiet", quiet), ("knocking", knocking)):
        sample = DomainRenderer([asset], SEED).render(spec, ("audio",))
        lines[name] = _envelope_line(sample.clip, band, 3.0 * sample.shaft_hz)
    assert lines["knocking"] > 5.0 * lines["quiet"], lines
    assert lines["knocking"] > 8.0, lines
