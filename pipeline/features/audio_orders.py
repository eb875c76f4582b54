"""Order-normalised envelope spectra of a clip: the input of a *learned* bearing-fault detector.

The audio vector (:mod:`pipeline.features.audio_physics`) reads the envelope spectrum at a few
hand-picked places (fault orders, combs). This module hands a model the envelope spectrum
itself, resampled so that a fault always lands on the same bins whatever the machine:

* **shaft-order grid**: orders 0.5-12.5 of the estimated running speed in steps of 1/12 order
  (:data:`ORDER_BINS` bins), once for the kurtogram's most impulsive band and once as the maximum
  over every demodulated band (the three fixed bands, the resonance / most impulsive band and the
  kurtogram's top three: the same seven spectra as the fault combs of the audio vector);
* **fault-order grids**: the same maximum spectrum in units of the bearing's BPFO, BPFI and 2xBSF
  (``assets.json`` ``bearing_orders`` or geometry; all zero for a bearing of unknown geometry),
  0.5-4.5 harmonics in steps of 1/24 (:data:`FAULT_BINS` bins each).

Values are envelope log-prominences (log magnitude over its 21 Hz running median: gain-free),
clipped to :data:`PROM_CLIP`; each target bin holds the maximum of the spectrum over the bin
(the spectrum is interpolated on :data:`SUBSAMPLES` points per bin), 0 beyond 800 Hz. Clips
longer than 1 s: the median over the same segments as the audio vector.

>>> sr = 16000; t = np.arange(sr) / sr
>>> clip = np.sin(2 * np.pi * 24.7 * t) + 0.01 * np.random.default_rng(0).standard_normal(sr)
>>> s = order_spectra(clip, sr, {"asset_id": "M", "nominal_rpm": 1480})
>>> s.shape, s.dtype.name, bool(np.all(s[2 * ORDER_BINS:] == 0.0))
((576,), 'float32', True)
"""

from __future__ import annotations

import numpy as np
import scipy.fft

from pipeline.features.asset_profile import AssetProfile, as_profile
from pipeline.features.audio_physics import (
    _KURTOGRAM_BANDS,
    ENV_BANDS_HZ,
    KURTOGRAM_TOP,
    PROM_CLIP,
    SAMPLE_RATE,
    SILENT_DETAIL,
    SILENT_RMS,
    SK_BANDS_HZ,
    AudioInputError,
    _band_envelope,
    _band_envelopes,
    _envelope_prominence,
    _kurtosis_of_rows,
    _spectral_kurtosis,
    _tone_prominence,
    estimate_speed,
    median_over_segments,
)

ORDER_RANGE = (0.5, 12.5)
ORDER_STEP = 1.0 / 12.0
FAULT_RANGE = (0.5, 4.5)
FAULT_STEP = 1.0 / 24.0
FAULT_KEYS: tuple[str, ...] = ("bpfo", "bpfi", "bsf2")
SUBSAMPLES = 8
ORDER_BINS = round((ORDER_RANGE[1] - ORDER_RANGE[0]) / ORDER_STEP)
FAULT_BINS = round((FAULT_RANGE[1] - FAULT_RANGE[0]) / FAULT_STEP)
#: Layout of :func:`order_spectra`: (name, bins) in order.
ORDER_SPECTRA_LAYOUT: tuple[tuple[str, int], ...] = (
    ("orders.kurtogram", ORDER_BINS), ("orders.max", ORDER_BINS),
    *((f"{k}.max", FAULT_BINS) for k in FAULT_KEYS))
ORDER_SPECTRA_SIZE = sum(n for _, n in ORDER_SPECTRA_LAYOUT)


def _sub_points(lo: float, step: float, bins: int) -> np.ndarray:
    """``(bins, SUBSAMPLES)`` evenly spread points inside each bin of the grid (in grid units)."""
    offsets = (np.arange(SUBSAMPLES) + 0.5) / SUBSAMPLES
    return lo + step * (np.arange(bins)[:, None] + offsets[None, :])


_ORDER_POINTS = _sub_points(ORDER_RANGE[0], ORDER_STEP, ORDER_BINS)
_FAULT_POINTS = _sub_points(FAULT_RANGE[0], FAULT_STEP, FAULT_BINS)


def resample_to_grid(prom: np.ndarray, df: float, unit_hz: float, points: np.ndarray) -> np.ndarray:
    """Max over each bin of ``prom`` (a spectrum on a ``df`` Hz grid) at ``points * unit_hz`` Hz
    (linear interpolation), 0 where the bin lies past the spectrum.

    >>> prom = np.zeros(801); prom[100] = 5.0
    >>> g = resample_to_grid(prom, 1.0, 25.0, _ORDER_POINTS)
    >>> int(np.argmax(g)), round(float(g.max()), 1)  # order 4 = 100 Hz: bin (4 - 0.5) * 12 = 42
    (42, 5.0)
    """
    if not (np.isfinite(unit_hz) and unit_hz > 0):
        return np.zeros(points.shape[0])
    freqs = points * unit_hz
    n = prom.shape[0]
    top = (n - 1) * df
    grid = np.arange(n) * df
    values = np.interp(freqs, grid, prom).max(axis=1)
    # plus the spectrum's own samples inside each bin (a narrow peak between two sub-points)
    step = (points[0, 1] - points[0, 0]) * SUBSAMPLES if points.shape[1] > 1 else 1.0
    edges = (points[:, 0] - 0.5 * step / SUBSAMPLES) * unit_hz
    edges = np.append(edges, edges[-1] + step * unit_hz)
    index = np.clip(np.ceil(edges / df).astype(np.int64), 0, n)
    padded = np.append(prom, -np.inf)
    inner = np.maximum.reduceat(padded, index)[:-1]
    values = np.where(index[1:] > index[:-1], np.maximum(values, inner), values)
    return np.where(edges[1:] <= top + df, values, 0.0)


def _segment_spectra(x: np.ndarray, profile: AssetProfile, hint_hz: float | None) -> np.ndarray:
    n = x.shape[0]
    x = x.astype(np.float64) - float(np.mean(x))
    spectrum = scipy.fft.rfft(x)
    freqs = np.fft.rfftfreq(n, 1.0 / SAMPLE_RATE)
    rms = float(np.sqrt(2.0 * (np.abs(spectrum[freqs >= 20.0]) ** 2).sum()) / n)
    if rms < SILENT_RMS:
        raise AudioInputError(SILENT_DETAIL)
    x = x / rms
    spectrum = spectrum / rms
    _, prom, df = _tone_prominence(x.astype(np.float32))
    f_r = estimate_speed(prom, df, profile, hint_hz).shaft_hz
    bands = list(ENV_BANDS_HZ)
    if profile.resonance_band_hz is not None and profile.resonance_band_hz[1] - profile.resonance_band_hz[0] >= 200:
        lo, hi = profile.resonance_band_hz
        bands.append((max(lo, 300.0), min(hi, 7_800.0)))
    else:  # the most impulsive band above 1 kHz, as the audio vector picks it
        sk = _spectral_kurtosis(x.astype(np.float32))
        bands.append(SK_BANDS_HZ[int(np.argmax(sk[1:])) + 1])
    duration = n / SAMPLE_RATE
    proms = []
    for band in bands:
        env = _band_envelope(spectrum, n, band)
        proms.append(_envelope_prominence(env - float(env.mean()), duration)[0])
    k_rows = _band_envelopes(spectrum, n, tuple(_KURTOGRAM_BANDS))
    k_envs = [arr[row] for arr, row in k_rows]
    k_kurt = _kurtosis_of_rows(k_rows)
    top = np.argsort(np.asarray(k_kurt))[::-1][:KURTOGRAM_TOP]
    k_proms = [_envelope_prominence(k_envs[i] - float(k_envs[i].mean()), duration)[0] for i in top]
    proms += k_proms
    df_env = SAMPLE_RATE / n
    size = min(p.shape[0] for p in proms)
    best = np.clip(k_proms[0][:size], *PROM_CLIP)
    pmax = np.clip(np.max(np.stack([p[:size] for p in proms]), axis=0), *PROM_CLIP)
    orders = {k: float(v) for k, v in profile.bearing_orders.items() if k in ("bpfo", "bpfi")}
    if "bsf" in profile.bearing_orders:
        orders["bsf2"] = 2.0 * float(profile.bearing_orders["bsf"])
    out = [resample_to_grid(best, df_env, f_r, _ORDER_POINTS), resample_to_grid(pmax, df_env, f_r, _ORDER_POINTS)]
    out += [resample_to_grid(pmax, df_env, orders.get(k, 0.0) * f_r, _FAULT_POINTS) for k in FAULT_KEYS]
    return np.concatenate(out)


def order_spectra(samples: np.ndarray, sample_rate: int = SAMPLE_RATE, asset: object = None,
                  shaft_hz: float | None = None) -> np.ndarray:
    """``float32 (ORDER_SPECTRA_SIZE,)`` order-normalised envelope spectra (module docstring).

    Same arguments and errors as :func:`pipeline.features.audio_physics.audio_vector`.
    """
    vec = median_over_segments(samples, sample_rate, as_profile(asset), shaft_hz, _segment_spectra)
    return np.nan_to_num(vec, nan=0.0, posinf=0.0, neginf=0.0).astype(np.float32)
