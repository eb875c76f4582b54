"""Order-normalised envelope spectra (pipeline.features.audio_orders): the issue #10 experiment input."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.features.audio_orders import (
    FAULT_BINS,
    FAULT_RANGE,
    FAULT_STEP,
    ORDER_BINS,
    ORDER_SPECTRA_SIZE,
    order_spectra,
)
from pipeline.features.audio_physics import AudioInputError
from tests.pipeline.test_features_physics import _bearing_clip

SR = 16_000
ORDERS = {"bpfo": 3.585, "bpfi": 5.415, "bsf": 2.357, "ftf": 0.398}


def _harmonic_bins(h: int) -> int:
    return int((h - FAULT_RANGE[0]) / FAULT_STEP)


@pytest.mark.parametrize("shaft_hz", [12.0, 24.5, 49.0])
def test_bpfo_impacts_land_on_the_same_bins_at_any_speed_and_gain(shaft_hz: float) -> None:
    asset = {"asset_id": "M", "nominal_rpm": shaft_hz * 60 * 0.98, "vfd": True, "bearing_orders": ORDERS}
    clip = _bearing_clip(shaft_hz, ORDERS["bpfo"], 0)
    s = order_spectra(clip, SR, asset)
    assert s.shape == (ORDER_SPECTRA_SIZE,) and s.dtype == np.float32 and np.all(np.isfinite(s))
    np.testing.assert_allclose(s, order_spectra(clip * 10 ** (12 / 20), SR, asset), atol=1e-3)  # +12 dB: same
    bpfo = s[2 * ORDER_BINS: 2 * ORDER_BINS + FAULT_BINS]
    bpfi = s[2 * ORDER_BINS + FAULT_BINS: 2 * ORDER_BINS + 2 * FAULT_BINS]
    for h in (1, 2):  # harmonics of BPFO stand out on the BPFO grid at bins h ...
        peak = bpfo[_harmonic_bins(h) - 1: _harmonic_bins(h) + 2].max()
        assert peak > 2.0 and peak > np.median(bpfo) + 1.5
    assert bpfo.max() > bpfi[_harmonic_bins(1) - 1: _harmonic_bins(1) + 2].max() + 1.0  # ... not at BPFI
    # on the shaft-order grid the impacts sit at order 3.585 whatever the speed
    order_bin = int((ORDERS["bpfo"] - 0.5) * 12)
    assert s[ORDER_BINS + order_bin - 1: ORDER_BINS + order_bin + 2].max() > 2.0
    healthy = order_spectra(_bearing_clip(shaft_hz, ORDERS["bpfo"], 1, amp=0.0), SR, asset)
    assert bpfo[_harmonic_bins(1) - 1: _harmonic_bins(1) + 2].max() > \
        healthy[2 * ORDER_BINS + _harmonic_bins(1) - 1: 2 * ORDER_BINS + _harmonic_bins(1) + 2].max() + 1.0


def test_unknown_bearing_gives_empty_fault_grids_and_bad_clips_are_refused() -> None:
    clip = _bearing_clip(24.5, ORDERS["bpfo"], 0)
    s = order_spectra(clip, SR, {"asset_id": "M", "nominal_rpm": 1470})
    assert np.all(s[2 * ORDER_BINS:] == 0.0) and s[:2 * ORDER_BINS].max() > 2.0
    longer = np.concatenate([clip, _bearing_clip(24.5, ORDERS["bpfo"], 2)])  # 2 s: median of two segments
    assert order_spectra(longer, SR, {"asset_id": "M", "nominal_rpm": 1470}).shape == (ORDER_SPECTRA_SIZE,)
    with pytest.raises(AudioInputError, match="too short"):
        order_spectra(np.zeros(100, np.float32), SR, None)
    with pytest.raises(AudioInputError, match="silent"):
        order_spectra(np.zeros(SR, np.float32), SR, None)


def test_domain_dataset_renders_an_extra_audio_input_on_the_same_clips() -> None:
    from models.data.domain_data import build_domain_dataset

    plain = build_domain_dataset(1, n_assets=6, seed=3, workers=1)
    extra = build_domain_dataset(1, n_assets=6, seed=3, workers=1, audio_extra=order_spectra)
    assert plain.audio_extra is None and extra.audio_extra is not None
    assert extra.audio_extra.shape == (extra.n, ORDER_SPECTRA_SIZE)
    np.testing.assert_array_equal(plain.audio, extra.audio)  # the audio vectors do not change
