"""Small signal-analysis helpers (reference features for tests, docs and baselines).

* :func:`envelope_spectrum` - band-pass around the structural resonance,
  Hilbert envelope, FFT: the classic bearing-defect detector.
* :func:`peak_ratio` - height of a spectral line relative to its neighbourhood.
* :func:`tone_amplitude` - amplitude of a sinusoid near a frequency.
"""

from __future__ import annotations

import numpy as np
from scipy.signal import butter, hilbert, sosfiltfilt


def envelope_spectrum(x: np.ndarray, fs: float, band: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    """Envelope spectrum ``(freqs, magnitude)`` of ``x`` in the band ``(lo, hi)`` Hz."""
    x = np.asarray(x, dtype=np.float64)
    sos = butter(4, [band[0], min(band[1], 0.49 * fs)], btype="bandpass", fs=fs, output="sos")
    y = sosfiltfilt(sos, x)
    env = np.abs(hilbert(y))
    env = env - env.mean()
    w = np.hanning(env.size)
    mag = np.abs(np.fft.rfft(env * w)) * 2.0 / w.sum()
    return np.fft.rfftfreq(env.size, 1.0 / fs), mag


def peak_ratio(freqs: np.ndarray, mag: np.ndarray, f0: float, tol_hz: float = 3.0,
               ref_hz: float = 25.0) -> float:
    """Max of ``mag`` within ``f0 +- tol_hz`` over the median of ``f0 +- ref_hz`` outside the peak zone."""
    near = np.abs(freqs - f0) <= tol_hz
    ref = (np.abs(freqs - f0) <= ref_hz) & ~near
    if not near.any() or not ref.any():
        return float("nan")
    return float(mag[near].max() / max(np.median(mag[ref]), 1e-12))


def tone_amplitude(x: np.ndarray, fs: float, f0: float, tol_hz: float = 2.0) -> float:
    """Amplitude of the strongest spectral line within ``f0 +- tol_hz`` (Hann window, amplitude-corrected)."""
    x = np.asarray(x, dtype=np.float64)
    w = np.hanning(x.size)
    spec = np.abs(np.fft.rfft((x - x.mean()) * w)) * 2.0 / w.sum()
    f = np.fft.rfftfreq(x.size, 1.0 / fs)
    near = np.abs(f - f0) <= tol_hz
    return float(spec[near].max()) if near.any() else float("nan")
