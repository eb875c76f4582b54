"""Frozen copy of pipeline/features/audio_physics.py as of commit 4b368bc (features v3), before the
speed-up: the test oracle that pins the shipped implementation to the output the v4 models were
trained on (tests/pipeline/test_audio_vector_oracle.py). Do not edit; do not import outside tests.

One deliberate change since, marked ``ADDED 2026-12-05``: on a drive whose PWM carrier shows, the
supply frequency read off its sidebands sets the running speed where no measured speed is given,
and the supply's lines are notched out of the envelope spectra before the combs read them (the
shipped module's ``drive_supply_hz`` / ``speed_at_supply`` / ``supply_lines`` / ``notch_lines``,
imported, not copied). Clips without a PWM carrier give the frozen v3 output bit for bit.

A second, marked ``ADDED 2026-12-05 (session 34)``: without a measured speed, a machine on the mains
whose synchronous speed is known is read inside its slip window
(:meth:`AssetProfile.slip_window_hz`); a clip whose harmonic sum peaks inside it gives the v3 bits.

A third, marked ``ADDED 2026-12-06``: on a machine on the mains the speed is picked on the harmonic
sum without the magnetic hum lines (the shipped ``hum_lines_hz`` / ``_without_lines``, imported); the
confidence is read on every line as before, so a clip whose pick does not move gives the v3 bits.

A fourth, marked ``CHANGED 2026-12-06 (session 42)``: the blind comb leaves out orders within the shipped
``BLIND_WHOLE_ORDER_GAP`` (0.02, imported) of a whole number, not 0.08 (the common 8-ball bearings have
their fault orders 0.04-0.07 from one); a clip whose best blind comb lies elsewhere gives the v3 bits.
"""
# ruff: noqa
# mypy: ignore-errors

"""Physics-normalised audio model input: shaft orders instead of hertz, levels relative to the clip.

A bearing defect lives in the envelope spectrum at the bearing's fault *orders* (BPFO, BPFI,
BSF relative to shaft speed), imbalance at 1x and misalignment at 2x the shaft speed, cavitation
in broadband impulsive bursts. A log-mel image of one motor learns one motor's speed and one
microphone's gain; this vector does not see either:

1. **Resampling and segments.** Any sample rate is resampled to 16 kHz (``scipy.signal.resample_poly``);
   a clip longer than 1 s is cut into up to :data:`MAX_SEGMENTS` evenly spaced 1 s segments and the
   feature vectors of the segments are combined by their median; a clip shorter than 1 s is
   zero-padded (at least :data:`MIN_SECONDS`).
2. **Gain normalisation.** Each segment is divided by its RMS above 20 Hz, so a microphone 12 dB
   louder or quieter gives the same vector.
3. **Running speed.** The shaft frequency is estimated from the signal: a harmonic sum of the
   peak prominences of a zero-padded spectrum (1x ... 30x) over candidates near the nameplate speed
   (``assets.json``; a variable-speed drive widens the search, see
   :meth:`AssetProfile.speed_search_hz`), or near a measured speed (``shaft_hz``, e.g. the PLC
   ``speed_rpm`` / 60) when one is given.
4. **Orders.** Tones at k x shaft speed (k = 1..6), the mains hum, and the envelope spectra of four
   bands (1-2.5, 2.5-4.5, 4.5-7.2 kHz and the asset's resonance band, or the most impulsive band)
   read at h x the bearing's fault orders (h = 1..3), as log prominences over the local median.
   A bearing of unknown geometry still shows in the strongest non-synchronous envelope peak.
5. **Shape.** Band-energy shares (dB) and spectral kurtosis per band (impulsiveness).
6. **Bearing combs** (features v3). A fast kurtogram (:func:`kurtogram_bands`: kurtosis of the
   squared envelope in a tree of bands) picks the clip's most impulsive demodulation bands, where
   a defect rings the structure; :func:`fault_comb` scores each fault frequency's harmonics with
   one common slip / speed-error deviation, with the BPFI +-1x and 2xBSF +-FTF sidebands;
   :func:`blind_comb` finds the best comb of any non-synchronous order (unknown bearings).

:data:`AUDIO_VECTOR_NAMES` names the 79 float32 values (all finite). Bump
``pipeline.features.FEATURES_VERSION`` when they change.

>>> sr = 16000; t = np.arange(sr) / sr
>>> tone = 0.3 * np.sin(2 * np.pi * 24.7 * t) + 0.1 * np.sin(2 * np.pi * 49.4 * t)
>>> clip = tone + 0.01 * np.random.default_rng(0).standard_normal(sr)
>>> v = audio_vector(clip, sr, {"asset_id": "M", "nominal_rpm": 1480})
>>> v.shape, abs(float(v[AUDIO_VECTOR_NAMES.index("speed.shaft_hz")]) * 60 - 24.7) < 0.3
((79,), True)
>>> louder = audio_vector(clip * 4.0, sr, {"asset_id": "M", "nominal_rpm": 1480})
>>> bool(np.allclose(v, louder, atol=1e-3))
True
"""


import itertools
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import scipy.fft
from scipy.ndimage import median_filter
from scipy.signal import resample_poly

from pipeline.features.asset_profile import AssetProfile, as_profile
from pipeline.features.audio_physics import (  # ADDED 2026-12-05
    drive_supply_hz, notch_lines, speed_at_supply, supply_lines, supply_pole_pairs, supply_range_hz)
from pipeline.features.audio_physics import _without_lines, hum_lines_hz  # ADDED 2026-12-06

SAMPLE_RATE = 16_000
SEGMENT = SAMPLE_RATE
MAX_SEGMENTS = 8
MIN_SECONDS = 0.25
TONE_PAD = 4  # zero-padding factor of the tone spectrum (0.25 Hz grid)
TONE_MAX_HZ = 2_000.0
TONE_FLOOR_HZ = 30.0  # width of the running-median floor of the tone spectrum
N_SHAFT_HARMONICS = 6
SPEED_HARMONICS = 30
SPEED_STEP_HZ = 0.02
BROAD_SPEED_RANGE_HZ = (8.0, 65.0)
ENV_BANDS_HZ: tuple[tuple[float, float], ...] = ((1_000.0, 2_500.0), (2_500.0, 4_500.0), (4_500.0, 7_200.0))
ENV_MAX_HZ = 800.0
ENV_FLOOR_HZ = 21
FAULT_ORDERS: tuple[str, ...] = ("bpfo", "bpfi", "bsf2", "ftf", "shaft")
FAULT_HARMONICS = 3
SHAPE_EDGES_HZ = np.geomspace(40.0, 8_000.0, 13)
SK_BANDS_HZ: tuple[tuple[float, float], ...] = (
    (250.0, 1_000.0), (1_000.0, 2_000.0), (2_000.0, 3_500.0), (3_500.0, 5_000.0), (5_000.0, 6_500.0), (6_500.0, 7_900.0))
SK_N_FFT = 64
SK_HOP = 32
PROM_CLIP = (-3.0, 8.0)
NOISE_PROMINENCE = 1.0
#: Fast-kurtogram-style band tree for the demodulation band (bandwidths in Hz, half-band steps).
KURTOGRAM_BANDWIDTHS_HZ: tuple[float, ...] = (4_000.0, 2_000.0, 1_000.0, 500.0)
KURTOGRAM_RANGE_HZ = (400.0, 7_800.0)
KURTOGRAM_TOP = 3
COMB_HARMONICS = 4
#: Shared relative deviation of a fault comb from its kinematic frequency: rolling elements slip
#: (the defect rate runs 1-2 % below kinematics) and the speed estimate errs by about 1 %.
COMB_DEVIATION = np.arange(-0.04, 0.0201, 0.002)
BLIND_ORDERS = (1.5, 12.0, 0.01)

AUDIO_VECTOR_NAMES: tuple[str, ...] = (
    *(f"shaft.{k}x.prom" for k in range(1, N_SHAFT_HARMONICS + 1)),
    *(f"shaft.{k}x.level_db" for k in range(1, N_SHAFT_HARMONICS + 1)),
    "hum.prom", "hum.level_db",
    *(f"shape.band{i}.db" for i in range(len(SHAPE_EDGES_HZ) - 1)),
    *(f"sk.band{i}" for i in range(len(SK_BANDS_HZ))),
    *(f"env.band{i}.{s}" for i in range(len(ENV_BANDS_HZ) + 1) for s in ("modulation", "kurtosis")),
    *(f"env.{o}.h{h}" for o in FAULT_ORDERS for h in range(1, FAULT_HARMONICS + 1)),
    "env.bpfi_sidebands.h1", "env.bpfi_sidebands.h2",
    "env.nonsync.prom", "env.nonsync.order", "env.nonsync.h2", "env.nonsync.h3",
    "wave.crest_log", "wave.kurtosis_log",
    "speed.shaft_hz", "speed.ratio_to_nominal", "speed.confidence", "speed.hint_used",
    "flag.orders_available", "flag.band_known", "flag.vfd",
    "kurtogram.kurtosis_log", "kurtogram.center", "kurtogram.log2_bandwidth",
    "comb.bpfo", "comb.bpfi", "comb.bsf2", "comb.max", "comb.blind", "comb.blind_order",
)


class AudioInputError(ValueError):
    """The clip cannot be turned into a model input (too short, not 1-D, silent...)."""


def resample_to_16k(samples: np.ndarray, sample_rate: int) -> np.ndarray:
    """``float32`` clip at 16 kHz (polyphase resampling; identity at 16 kHz).

    >>> resample_to_16k(np.zeros(44100, np.float32), 44100).shape
    (16000,)
    """
    x = np.asarray(samples, dtype=np.float32)
    if x.ndim == 2:  # (n, channels) -> mono
        x = x.mean(axis=1, dtype=np.float64).astype(np.float32)
    if x.ndim != 1:
        raise AudioInputError(f"audio must be mono or (n, channels), got shape {x.shape}")
    if int(sample_rate) == SAMPLE_RATE:
        return x
    if sample_rate <= 0:
        raise AudioInputError(f"sample rate must be positive, got {sample_rate}")
    ratio = Fraction(SAMPLE_RATE, int(sample_rate)).limit_denominator(1000)
    return resample_poly(x, ratio.numerator, ratio.denominator).astype(np.float32)


def segments(x: np.ndarray) -> list[np.ndarray]:
    """1 s segments of a 16 kHz clip (zero-padded when shorter, evenly spread when longer)."""
    n = x.shape[0]
    if n < MIN_SECONDS * SAMPLE_RATE:
        raise AudioInputError(f"clip of {n / SAMPLE_RATE:.3f} s is too short: at least {MIN_SECONDS} s is needed")
    if n < SEGMENT:
        return [np.pad(x, (0, SEGMENT - n))]
    count = min(MAX_SEGMENTS, n // SEGMENT)
    starts = np.linspace(0, n - SEGMENT, count).astype(int)
    return [x[s:s + SEGMENT] for s in starts]


@dataclass(frozen=True)
class SpeedEstimate:
    """Estimated shaft frequency and how clearly the harmonics stood out."""

    shaft_hz: float
    confidence: float
    hint_used: bool


def _hann(n: int) -> np.ndarray:
    return (0.5 - 0.5 * np.cos(2.0 * np.pi * np.arange(n) / n)).astype(np.float32)


def _tone_prominence(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Log amplitude and log prominence (over a running median) on a 0.25 Hz grid up to 2 kHz."""
    n = x.shape[0]
    w = _hann(n)
    spec = np.abs(scipy.fft.rfft(x * w, TONE_PAD * n)) * (2.0 / w.sum())
    df = SAMPLE_RATE / (TONE_PAD * n)
    keep = int(TONE_MAX_HZ / df) + 1
    log_a = np.log(spec[:keep] + 1e-9)
    floor = median_filter(log_a, size=int(TONE_FLOOR_HZ / df) | 1, mode="nearest")
    return log_a, log_a - floor, df


def _peak(curve: np.ndarray, df: float, f0: float, tol_hz: float) -> float:
    lo, hi = int(max(f0 - tol_hz, 0.0) / df), int(np.ceil((f0 + tol_hz) / df)) + 1
    if lo >= curve.shape[0] or hi <= lo:
        return float("nan")
    return float(np.max(curve[lo:min(hi, curve.shape[0])]))


def estimate_speed(prom: np.ndarray, df: float, profile: AssetProfile, hint_hz: float | None) -> SpeedEstimate:
    """Harmonic-sum speed estimate (see the module docstring)."""
    if hint_hz is not None and hint_hz > 0:
        lo, hi = hint_hz * 0.96, hint_hz * 1.04
    else:
        lo, hi = profile.speed_search_hz() or BROAD_SPEED_RANGE_HZ
    cand = np.arange(lo, hi + SPEED_STEP_HZ, SPEED_STEP_HZ)
    k_max = max(3, min(SPEED_HARMONICS, int(TONE_MAX_HZ / hi)))
    k = np.arange(1, k_max + 1)
    grid = np.arange(prom.shape[0]) * df
    # count only what rises above the noise peaks over the running median, log-compressed so that
    # one strong tone does not flatten the peak shape; no prior inside the search range (measured
    # on VFD machines: a pull toward nameplate speed tripled the misses)
    positive = np.log1p(np.maximum(prom - NOISE_PROMINENCE, 0.0))
    weights = 1.0 / np.sqrt(k)
    score = (np.interp(np.outer(cand, k), grid, positive) * weights).sum(axis=1) / weights.sum()
    # ADDED 2026-12-06: a machine on the mains has its speed picked without its magnetic hum lines
    pick = score
    if hum_lines_hz(profile):
        quiet = np.log1p(np.maximum(_without_lines(prom, df, hum_lines_hz(profile)) - NOISE_PROMINENCE, 0.0))
        pick = (np.interp(np.outer(cand, k), grid, quiet) * weights).sum(axis=1) / weights.sum()
    best = int(np.argmax(pick))
    # ADDED 2026-12-05 (session 34): a machine on the mains is read inside its slip window
    window = profile.slip_window_hz() if hint_hz is None or hint_hz <= 0 else None
    inside = (cand >= window[0]) & (cand <= window[1]) if window is not None else None
    if inside is not None and inside.any():
        best = int(np.flatnonzero(inside)[np.argmax(pick[inside])])
    confidence = float(score[best] - np.median(score))
    shaft = float(cand[best])
    nominal = hint_hz or profile.nominal_shaft_hz
    if confidence < 0.05 and nominal and not profile.vfd:
        shaft = float(min(max(nominal, lo), hi))
    return SpeedEstimate(shaft, confidence, hint_hz is not None and hint_hz > 0)


def _band_envelope(spectrum: np.ndarray, n: int, band: tuple[float, float]) -> np.ndarray:
    """Hilbert envelope of the clip band-passed to ``band`` (analytic signal shifted to base band)."""
    lo = max(int(np.ceil(band[0] * n / SAMPLE_RATE)), 1)
    hi = min(int(np.floor(band[1] * n / SAMPLE_RATE)), spectrum.shape[0] - 1)
    width = max(hi - lo + 1, 2)
    m = 1 << int(np.ceil(np.log2(max(2 * width, 2 * ENV_MAX_HZ * n / SAMPLE_RATE))))
    base = np.zeros(m, dtype=np.complex64)
    base[:hi - lo + 1] = spectrum[lo:hi + 1]
    return np.abs(scipy.fft.ifft(base)).astype(np.float64) * m / n


def _envelope_features(env: np.ndarray, duration_s: float, orders: dict[str, float], shaft_hz: float,
                       lines: np.ndarray = np.zeros(0),  # ADDED 2026-12-05
                       ) -> tuple[list[float], np.ndarray, np.ndarray, tuple[float, float, float, float]]:
    mean = float(env.mean()) + 1e-12
    centred = env - mean
    var = float(np.mean(centred**2)) + 1e-24
    modulation = float(np.sqrt(var) / mean)
    kurt = float(np.mean(centred**4) / var**2)
    prom, df = _envelope_prominence(centred, duration_s)
    prom = notch_lines(prom, df, lines)  # ADDED 2026-12-05
    combs = []
    for name in FAULT_ORDERS:
        order = orders.get(name)
        for h in range(1, FAULT_HARMONICS + 1):
            if order is None:
                combs.append(0.0)
                continue
            f0 = h * order * shaft_hz
            value = _peak(prom, df, f0, max(1.0, 0.03 * f0))
            combs.append(0.0 if not np.isfinite(value) else value)
    # an inner-race defect passes through the load zone once per turn: sidebands at BPFI +- 1x
    for h in (1, 2):
        order = orders.get("bpfi")
        if order is None:
            combs.append(0.0)
            continue
        sb = [_peak(prom, df, h * order * shaft_hz + d * shaft_hz, max(1.0, 0.03 * shaft_hz)) for d in (-1, 1)]
        combs.append(float(np.nanmax(sb)) if np.any(np.isfinite(sb)) else 0.0)
    # strongest non-synchronous peak between 1.5 and 12 orders, with its 2nd/3rd harmonics
    freqs = np.arange(prom.shape[0]) * df
    order_axis = freqs / shaft_hz
    mask = (order_axis >= 1.5) & (order_axis <= 12.0) & (np.abs(order_axis - np.round(order_axis)) > 0.06)
    if np.any(mask):
        i = int(np.argmax(np.where(mask, prom, -np.inf)))
        f_p = freqs[i]
        h2, h3 = (_peak(prom, df, m * f_p, max(1.0, 0.02 * m * f_p)) for m in (2, 3))
        nonsync = (float(prom[i]), float(order_axis[i]), 0.0 if not np.isfinite(h2) else h2,
                   0.0 if not np.isfinite(h3) else h3)
    else:
        nonsync = (0.0, 0.0, 0.0, 0.0)
    return [modulation, float(np.log1p(max(kurt, 0.0)))], np.asarray(combs), prom, nonsync


def kurtogram_bands() -> tuple[tuple[float, float], ...]:
    """Candidate demodulation bands: a tree of bandwidths, each band shifted by half its width.

    >>> len(kurtogram_bands()), kurtogram_bands()[0]
    (49, (400.0, 4400.0))
    """
    out = []
    lo, hi = KURTOGRAM_RANGE_HZ
    for bw in KURTOGRAM_BANDWIDTHS_HZ:
        start = lo
        while start + bw <= hi + 1e-6:
            out.append((start, start + bw))
            start += bw / 2.0
    return tuple(out)


_KURTOGRAM_BANDS = kurtogram_bands()


def _envelope_prominence(centred: np.ndarray, duration_s: float) -> tuple[np.ndarray, float]:
    """Log spectrum of a centred envelope over its running median (up to :data:`ENV_MAX_HZ`), and
    its bin width."""
    mag = np.abs(scipy.fft.rfft(centred))
    df = 1.0 / duration_s
    keep = min(int(ENV_MAX_HZ / df) + 1, mag.shape[0])
    log_m = np.log(mag[:keep] + 1e-12)
    prom = log_m - median_filter(log_m, size=ENV_FLOOR_HZ, mode="nearest")
    prom[: max(int(2.0 / df), 1)] = 0.0  # below 2 Hz: the envelope's DC leakage
    return prom, df


def _comb_values(prom: np.ndarray, df: float, freqs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Prominence at ``freqs`` (max of the two nearest bins, clipped) and which are inside the spectrum."""
    inside = freqs < (prom.shape[0] - 2) * df
    i0 = np.clip(np.floor(freqs / df).astype(np.int64), 0, prom.shape[0] - 2)
    return np.where(inside, np.clip(np.maximum(prom[i0], prom[i0 + 1]), -1.0, PROM_CLIP[1]), 0.0), inside


def fault_comb(prom: np.ndarray, df: float, f0: float, sideband_hz: float = 0.0) -> float:
    """Harmonic comb score of a fault frequency ``f0`` in an envelope spectrum.

    Mean prominence of the harmonics ``h f0 (1 + d)``, h = 1..:data:`COMB_HARMONICS`, for the best
    *common* deviation ``d`` (:data:`COMB_DEVIATION`: slip and speed error shift every harmonic
    alike, so one ``d`` is searched instead of a window per harmonic, which keeps healthy clips low);
    with ``sideband_hz`` (BPFI: the shaft rate, an inner race passes the load zone once per turn;
    2xBSF: the cage rate FTF) half of the stronger sideband ``h f0 (1 + d) +- sideband_hz`` is added.

    >>> prom = np.zeros(801); prom[[100, 200, 300, 400]] = 5.0
    >>> round(fault_comb(prom, 1.0, 101.0), 2), round(fault_comb(prom, 1.0, 143.0), 2)
    (5.0, 0.0)
    """
    if not (np.isfinite(f0) and f0 > 0):
        return 0.0
    freqs = np.outer(1.0 + COMB_DEVIATION, np.arange(1, COMB_HARMONICS + 1) * f0)
    values, inside = _comb_values(prom, df, freqs)
    count = np.maximum(inside.sum(axis=1), 1)
    score = values.sum(axis=1) / count
    if sideband_hz > 0:
        lower, _ = _comb_values(prom, df, np.maximum(freqs - sideband_hz, 0.0))
        upper, _ = _comb_values(prom, df, freqs + sideband_hz)
        score = score + 0.5 * (np.maximum(lower, upper) * inside).sum(axis=1) / count
    return float(np.max(score)) if np.any(inside) else 0.0


def blind_comb(prom: np.ndarray, df: float, shaft_hz: float) -> tuple[float, float]:
    """Strongest harmonic comb of any non-synchronous order in 1.5-12 (a bearing of unknown geometry).

    Returns ``(score, order)``; integer orders (+-0.08) are left out (shaft harmonics).
    """
    from pipeline.features.audio_physics import BLIND_WHOLE_ORDER_GAP  # CHANGED 2026-12-06 (session 42)

    lo, hi, step = BLIND_ORDERS
    orders = np.arange(lo, hi, step)
    orders = orders[np.abs(orders - np.round(orders)) > BLIND_WHOLE_ORDER_GAP]  # CHANGED 2026-12-06: was 0.08
    freqs = np.outer(orders * shaft_hz, np.arange(1, COMB_HARMONICS + 1))
    values, inside = _comb_values(prom, df, freqs)
    n_in = inside.sum(axis=1)
    score = np.where(n_in >= 2, values.sum(axis=1) / np.maximum(n_in, 1), -1.0)
    best = int(np.argmax(score))
    return float(score[best]), float(orders[best])


def _spectral_kurtosis(x: np.ndarray) -> np.ndarray:
    """Mean spectral kurtosis (4 ms STFT) per :data:`SK_BANDS_HZ` band, log-compressed."""
    w = _hann(SK_N_FFT)
    count = 1 + (x.shape[0] - SK_N_FFT) // SK_HOP
    frames = np.lib.stride_tricks.as_strided(x, shape=(count, SK_N_FFT), strides=(x.strides[0] * SK_HOP, x.strides[0]),
                                             writeable=False)
    p = np.abs(scipy.fft.rfft(frames * w, axis=1)).astype(np.float64) ** 2
    m2 = p.mean(axis=0)
    sk = (p * p).mean(axis=0) / np.maximum(m2 * m2, 1e-30) - 2.0
    freqs = np.fft.rfftfreq(SK_N_FFT, 1.0 / SAMPLE_RATE)
    out = []
    for lo, hi in SK_BANDS_HZ:
        sel = (freqs >= lo) & (freqs <= hi) & (m2 > 1e-9 * max(float(m2.max()), 1e-30))
        out.append(float(np.log1p(np.clip(sk[sel].mean(), 0.0, 1e4))) if np.any(sel) else 0.0)
    return np.asarray(out)


def _segment_vector(x: np.ndarray, profile: AssetProfile, hint_hz: float | None) -> np.ndarray:
    n = x.shape[0]
    x = x.astype(np.float64) - float(np.mean(x))
    spectrum = scipy.fft.rfft(x)
    power = np.abs(spectrum) ** 2
    freqs = np.fft.rfftfreq(n, 1.0 / SAMPLE_RATE)
    rms = float(np.sqrt(2.0 * power[freqs >= 20.0].sum()) / n)
    if rms < 1e-7:
        raise AudioInputError("the clip is silent (RMS above 20 Hz < 1e-7 of full scale)")
    x = x / rms
    spectrum = spectrum / rms
    power = power / rms**2
    log_a, prom, df = _tone_prominence(x.astype(np.float32))
    speed = estimate_speed(prom, df, profile, hint_hz)
    # ADDED 2026-12-05: a drive's supply frequency from its PWM carrier, and the speed it puts the shaft at
    pairs = supply_pole_pairs(profile) if profile.vfd else None
    carrier = drive_supply_hz(x, supply_range_hz(profile, hint_hz, pairs)) if pairs else None
    at_supply = speed_at_supply(speed, prom, df, profile, carrier.supply_hz, pairs) if carrier and pairs else None
    if at_supply is None:  # no carrier, or one whose speed the sound does not bear out: not read
        carrier = None
    else:
        speed = at_supply
    f_r = speed.shaft_hz
    out: list[float] = []
    proms, levels = [], []
    for k in range(1, N_SHAFT_HARMONICS + 1):
        tol = max(0.5, 0.015 * k * f_r)
        p = _peak(prom, df, k * f_r, tol)
        a = _peak(log_a, df, k * f_r, tol)
        proms.append(0.0 if not np.isfinite(p) else p)
        levels.append(-80.0 if not np.isfinite(a) else max(20.0 / np.log(10.0) * a, -80.0))
    out += proms + levels
    line = profile.line_frequency_hz
    hum_freqs = [2.0 * line] if line else [100.0, 120.0]
    if profile.vfd and profile.poles:
        hum_freqs.append(2.0 * f_r * profile.poles / 2.0 / (1.0 - 0.02))
    hum = [(_peak(prom, df, f, 1.0), _peak(log_a, df, f, 1.0)) for f in hum_freqs if f < TONE_MAX_HZ - 2]
    hp, ha = max(hum, key=lambda t: t[0]) if hum else (0.0, -80.0 * np.log(10.0) / 20.0)
    out += [hp, max(20.0 / np.log(10.0) * ha, -80.0)]
    total = float(power[(freqs >= SHAPE_EDGES_HZ[0])].sum()) + 1e-12
    for lo, hi in itertools.pairwise(SHAPE_EDGES_HZ):
        out.append(10.0 * np.log10(float(power[(freqs >= lo) & (freqs < hi)].sum()) / total + 1e-9))
    sk = _spectral_kurtosis(x.astype(np.float32))
    out += sk.tolist()
    orders = {k: float(v) for k, v in profile.bearing_orders.items() if k in ("bpfo", "bpfi", "ftf")}
    if "bsf" in profile.bearing_orders:
        orders["bsf2"] = 2.0 * float(profile.bearing_orders["bsf"])
    orders["shaft"] = 1.0
    bands = list(ENV_BANDS_HZ)
    if profile.resonance_band_hz is not None and profile.resonance_band_hz[1] - profile.resonance_band_hz[0] >= 200:
        lo, hi = profile.resonance_band_hz
        bands.append((max(lo, 300.0), min(hi, 7_800.0)))
    else:  # the most impulsive band above 1 kHz
        i = int(np.argmax(sk[1:])) + 1
        bands.append(SK_BANDS_HZ[i])
    env_stats, combs, nonsync_best, env_proms = [], [], (-np.inf, 0.0, 0.0, 0.0), []
    # ADDED 2026-12-05: the drive's PWM supply lines, found in the envelope spectra of the bands that hold its carrier
    held = [_envelope_prominence(e - float(e.mean()), n / SAMPLE_RATE)[0]
            for e in (_band_envelope(spectrum, n, b) for b in bands if carrier is not None and carrier.in_band(b))]
    lines = supply_lines(np.stack(held), SAMPLE_RATE / n, carrier) if held else np.zeros(0)
    for band in bands:
        stats, comb, prom_b, nonsync = _envelope_features(_band_envelope(spectrum, n, band), n / SAMPLE_RATE, orders,
                                                           f_r, lines if carrier is not None and carrier.in_band(band)
                                                           else np.zeros(0))
        env_stats += stats
        combs.append(comb)
        env_proms.append(prom_b)
        if nonsync[0] > nonsync_best[0]:
            nonsync_best = nonsync
    # fast kurtogram: the most impulsive demodulation bands of this clip (kurtosis of the envelope)
    k_envs, k_kurt = [], []
    for band in _KURTOGRAM_BANDS:
        env = _band_envelope(spectrum, n, band)
        p2 = env * env
        k_envs.append(env)
        k_kurt.append(float(np.mean(p2 * p2) / max(float(np.mean(p2)) ** 2, 1e-30)) - 2.0)
    top = np.argsort(np.asarray(k_kurt))[::-1][:KURTOGRAM_TOP]
    env_proms += [notch_lines(_envelope_prominence(k_envs[i] - float(k_envs[i].mean()), n / SAMPLE_RATE)[0],
                              SAMPLE_RATE / n, lines if carrier is not None and carrier.in_band(_KURTOGRAM_BANDS[int(i)])
                              else np.zeros(0)) for i in top]  # notch ADDED 2026-12-05
    best_band = _KURTOGRAM_BANDS[int(top[0])]
    df_env = SAMPLE_RATE / n
    comb_scores = []
    for name, sideband in (("bpfo", 0.0), ("bpfi", f_r), ("bsf2", orders.get("ftf", 0.0) * f_r)):
        order = orders.get(name)
        comb_scores.append(max(fault_comb(p, df_env, order * f_r, sideband) for p in env_proms) if order else 0.0)
    blind = max(blind_comb(p, df_env, f_r) for p in env_proms)
    out += env_stats
    out += np.max(np.stack(combs), axis=0).tolist()
    out += [nonsync_best[0] if np.isfinite(nonsync_best[0]) else 0.0, nonsync_best[1] / 12.0, nonsync_best[2],
            nonsync_best[3]]
    peak = float(np.max(np.abs(x)))
    kurt = float(np.mean(x**4))  # x has unit RMS
    out += [float(np.log(max(peak, 1e-6))), float(np.log1p(max(kurt, 0.0)))]
    nominal = hint_hz or profile.nominal_shaft_hz
    out += [f_r / 60.0, f_r / nominal if nominal else 1.0, speed.confidence, float(speed.hint_used),
            float(bool(profile.bearing_orders)), float(profile.resonance_band_hz is not None), float(profile.vfd)]
    out += [float(np.log1p(max(k_kurt[int(top[0])], 0.0))), 0.5 * (best_band[0] + best_band[1]) / SAMPLE_RATE,
            float(np.log2((best_band[1] - best_band[0]) / 1_000.0))]
    out += comb_scores + [max(comb_scores + [blind[0]]), blind[0], blind[1] / 12.0]
    vec = np.asarray(out, dtype=np.float64)
    return vec


def audio_vector(samples: np.ndarray, sample_rate: int = SAMPLE_RATE, asset: object = None,
                 shaft_hz: float | None = None) -> np.ndarray:
    """``float32 (79,)`` physics-normalised model input of one clip (see the module docstring).

    ``asset``: an :class:`~pipeline.features.asset_profile.AssetProfile`, an ``assets.json`` entry or
    ``AssetInfo`` (None: no speed or bearing knowledge; the speed is searched in 8-65 Hz).
    ``shaft_hz``: a measured running speed (e.g. PLC ``speed_rpm`` / 60) to search around.
    Raises :class:`AudioInputError` for clips that cannot be scored (too short, silent).
    """
    profile = as_profile(asset)
    x = resample_to_16k(samples, sample_rate)
    if not np.all(np.isfinite(x)):
        raise AudioInputError("the clip holds NaN or infinite samples")
    vectors = [_segment_vector(seg, profile, shaft_hz) for seg in segments(x)]
    vec = np.median(np.stack(vectors), axis=0) if len(vectors) > 1 else vectors[0]
    prom_names = [i for i, name in enumerate(AUDIO_VECTOR_NAMES)
                  if name.endswith(".prom") or name.startswith("env.") and ".h" in name]
    vec[prom_names] = np.clip(vec[prom_names], *PROM_CLIP)
    return np.nan_to_num(vec, nan=0.0, posinf=0.0, neginf=0.0).astype(np.float32)
