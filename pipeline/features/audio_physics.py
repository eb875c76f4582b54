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
   ``speed_rpm`` / 60) when one is given. On a drive (``"vfd"``) whose PWM carrier shows (1-7.9
   kHz, sidebands at +-2 f_e: :func:`drive_supply_hz`) and whose pole count or nameplate speed is
   known, the carrier gives the supply frequency f_e, and without a measured speed the shaft is
   taken where it puts it (pole pairs x shaft = f_e x (1 - slip); :func:`speed_at_supply`, only
   where the harmonic sum bears that speed out). The sound alone cannot tell a machine whose strong
   tones are its even harmonics from one at twice its speed; the carrier can (since 2026-12-05).
   A machine on the mains whose synchronous speed is known is read inside its slip window
   (:meth:`AssetProfile.slip_window_hz`: a louder tone train near nameplate speed, a screw
   compressor's lobe pass or a neighbour, is not its shaft); the estimate's confidence is still read
   over the whole search range (since 2026-12-05, session 34). On a machine on the mains the speed
   is picked without the magnetic hum: its lines at twice the line frequency and their multiples
   (:func:`hum_lines_hz`) are harmonics of the synchronous speed, so a loud hum drew the pick to
   synchronous speed though the shaft slips below it (since 2026-12-06; the confidence is read as
   before, on every line).
4. **Orders.** Tones at k x shaft speed (k = 1..6), the mains hum, and the envelope spectra of four
   bands (1-2.5, 2.5-4.5, 4.5-7.2 kHz and the asset's resonance band, or the most impulsive band)
   read at h x the bearing's fault orders (h = 1..3), as log prominences over the local median.
   A bearing of unknown geometry still shows in the strongest non-synchronous envelope peak.
5. **Shape.** Band-energy shares (dB) and spectral kurtosis per band (impulsiveness).
6. **Bearing combs** (features v3). A fast kurtogram (:func:`kurtogram_bands`: kurtosis of the
   squared envelope in a tree of bands) picks the clip's most impulsive demodulation bands, where
   a defect rings the structure; :func:`fault_comb` scores each fault frequency's harmonics with
   one common slip / speed-error deviation, with the BPFI +-1x and 2xBSF +-FTF sidebands;
   :func:`blind_comb` finds the best comb of any non-synchronous order (unknown bearings). A
   drive's supply lines (2k f_e, :func:`supply_lines`: the carrier's sidebands demodulated) are
   notched out of the envelope spectra of the bands that hold its carrier first (since
   2026-12-05): on a 6-pole motor 2 f_e falls on a 6204 bearing's 2 x BPFO.

7. **Against the machine's own healthy sound** (features v4). The six shaft-harmonic levels minus
   the machine's learned healthy levels, and a flag (:mod:`pipeline.features.audio_baseline`;
   zeros and flag 0 without a learned baseline).

:data:`AUDIO_VECTOR_NAMES` names the 86 float32 values (all finite): the clip's 79
(:data:`AUDIO_CLIP_NAMES`) and the seven baseline values. Bump
``pipeline.features.FEATURES_VERSION`` when they change.

>>> sr = 16000; t = np.arange(sr) / sr
>>> tone = 0.3 * np.sin(2 * np.pi * 24.7 * t) + 0.1 * np.sin(2 * np.pi * 49.4 * t)
>>> clip = tone + 0.01 * np.random.default_rng(0).standard_normal(sr)
>>> v = audio_vector(clip, sr, {"asset_id": "M", "nominal_rpm": 1480})
>>> v.shape, abs(float(v[AUDIO_VECTOR_NAMES.index("speed.shaft_hz")]) * 60 - 24.7) < 0.3
((86,), True)
>>> louder = audio_vector(clip * 4.0, sr, {"asset_id": "M", "nominal_rpm": 1480})
>>> bool(np.allclose(v, louder, atol=1e-3))
True
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np
import scipy.fft
from scipy.ndimage import maximum_filter1d, median_filter
from scipy.signal import resample_poly

from pipeline.features.asset_profile import SPEED_LIMITS_HZ, AssetProfile, as_profile
from pipeline.features.audio_baseline import AUDIO_BASELINE_NAMES, CLIP_LEVEL_NAMES, Baseline, baseline_values

SAMPLE_RATE = 16_000
#: The audio message's ``stats`` key that is 1.0 for a clip recorded below :data:`SAMPLE_RATE`: it
#: holds nothing above half its rate, where bearing defects and cavitation ring (the models read
#: envelope bands up to 7.8 kHz), so the models' readers withhold those classes.
BAND_LIMITED_STAT = "band_limited"
#: The audio message's ``stats`` key that is 1.0 where the bearing's lowest fault frequency (the first
#: harmonic of BPFO, BPFI or 2 x BSF at the speed the clip was read at; without a known bearing the
#: blind comb's lowest order) lies above :data:`ENV_MAX_HZ`, the top of the envelope spectrum the
#: models read: a fast spindle's bearing defect cannot show there, so the models' readers withhold
#: bearing wear (:func:`bearing_orders_above_envelope`).
ORDERS_ABOVE_ENVELOPE_STAT = "bearing_orders_above_envelope"
SEGMENT = SAMPLE_RATE
MAX_SEGMENTS = 8
MIN_SECONDS = 0.25
#: A clip (or 1 s segment) whose RMS above 20 Hz is below this share of full scale is silent: a
#: dead microphone, a cut cable, a recorder that wrote zeros. It holds nothing to score.
SILENT_RMS = 1e-7
#: What a silent clip's error and dead letter say.
SILENT_DETAIL = (f"the clip is silent (RMS above 20 Hz below {SILENT_RMS:g} of full scale): check the microphone, "
                 "its cable, power and gain")
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
#: The blind comb leaves out orders within this of a whole number: a comb of whole orders is the
#: shaft's own harmonics. Until 2026-12-06 it was 0.08, which also left out where the common 8-ball
#: bearings (62xx small sizes, 63xx) have their faults: BPFO 3.04-3.07, BPFI 4.93-4.96, 2 x BSF
#: 3.91-4.08 orders (``bench/bench_blind_comb.py``: recall at 1 % healthy FPR 0.78 -> 0.89 on the
#: other generator's fleet, 0.59 -> 0.66 on the blind fleet, 0.81 -> 0.89 / 0.74 -> 0.78 on ours).
BLIND_WHOLE_ORDER_GAP = 0.02
#: The most an induction motor slips behind its supply's field: a shaft turns at pole pairs x f_e x
#: (1 - slip), slip 0 to this.
MAX_SLIP = 0.06
#: How much of the speed estimate's harmonic-sum score the speed a drive's carrier gives must hold
#: for the carrier to be read (:func:`speed_at_supply`): a safety net for a machine tone at a carrier
#: frequency with sidebands. A machine read at twice its speed keeps about 0.7 at its true one when
#: its even harmonics carry it, often less; 0.5 dropped 37 of the other generator's 423 right
#: carrier readings (first seconds of its drives), 0.3 dropped 9; on our drives every carrier read
#: was right at any of them (2026-12-05).
SUPPLY_SPEED_SUPPORT = 0.3
#: Where in the slip window a drive's carrier leaves (:func:`speed_at_supply`) the shaft is first looked
#: for with only the harmonics that sweep at most this many hertz across the window, then refined with
#: all harmonics within :data:`SUPPLY_REFINE` of that: over a 6 % window the 20th harmonic sweeps
#: more than a shaft rotation, so a machine tone that does not follow the speed (a neighbour, a fixed
#: resonance) meets some high harmonic of some candidate, and with the shaft's own harmonics faint
#: that candidate won (the other generator's 2-pole compressors read 5 % slow). Chosen on the other
#: generator's two fleets (432 clips whose carrier was read): readings more than 4 % off 18 -> 9, more
#: than 2 % off 38 -> 25, among 3 / 5 / 8 Hz and refinements of 1 / 2 % (2026-12-05, session 32).
SUPPLY_SWEEP_HZ = 8.0
SUPPLY_REFINE = 0.02
#: The lowest share of nameplate speed at which :func:`supply_range_hz` looks for a drive's supply.
DRIVE_LOWEST_SPEED = 0.2
#: How far (Hz) either side of a magnetic hum line (:func:`hum_lines_hz`) :func:`estimate_speed` leaves the
#: tone spectrum out when it picks a mains-fed machine's speed: the main lobe of a Hann-windowed
#: 1 s segment, whose first zeros lie 2 Hz from the line.
HUM_NOTCH_HZ = 2.0
#: Where :func:`drive_supply_hz` looks for a PWM carrier: the frequencies drives set it to (steps of
#: this, within the tolerance), the log prominences over the running median (:data:`PWM_FLOOR_HZ`
#: wide) of the carrier and of both its sidebands.
PWM_RANGE_HZ = (1_000.0, 7_900.0)
PWM_CARRIER_STEP_HZ = 500.0
PWM_CARRIER_TOLERANCE_HZ = 2.0
PWM_FLOOR_HZ = 41.0
PWM_CARRIER_PROM = 2.0
PWM_SIDEBAND_PROM = 1.5

AUDIO_CLIP_NAMES: tuple[str, ...] = (
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
#: The model input: the clip's 79 values, then its shaft-harmonic levels against the machine's
#: learned healthy levels (:mod:`pipeline.features.audio_baseline`; zeros and ``baseline.available``
#: 0 without one).
AUDIO_VECTOR_NAMES: tuple[str, ...] = AUDIO_CLIP_NAMES + AUDIO_BASELINE_NAMES
_LEVEL_INDEX = np.array([AUDIO_CLIP_NAMES.index(n) for n in CLIP_LEVEL_NAMES])
_SPEED_INDEX = AUDIO_CLIP_NAMES.index("speed.shaft_hz")


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


def rms_above_20hz(x: np.ndarray, sample_rate: int = SAMPLE_RATE) -> float:
    """RMS (share of full scale) of a mono clip above 20 Hz: its DC and drift left out.

    >>> t = np.arange(16_000) / 16_000
    >>> round(rms_above_20hz(0.5 + 0.1 * np.sin(2 * np.pi * 100 * t)), 4), rms_above_20hz(np.full(16_000, 0.5)) < SILENT_RMS
    (0.0707, True)
    """
    x = np.asarray(x, dtype=np.float32)
    n = x.shape[0]
    if n == 0:
        return 0.0
    spectrum = scipy.fft.rfft(x - np.float32(np.mean(x, dtype=np.float64)))
    first = int(np.ceil(20.0 * n / sample_rate))  # the first bin at or above 20 Hz
    above = spectrum[first:]
    return float(np.sqrt(2.0 * float(np.vdot(above, above).real)) / n)


def audible(parts: list[np.ndarray]) -> list[np.ndarray]:
    """The 16 kHz segments that are not silent (a recording with a dropout keeps its other seconds);
    :class:`AudioInputError` when every one is. One segment is returned as it is (its reading
    refuses it when silent)."""
    if len(parts) < 2:
        return parts
    kept = [seg for seg in parts if rms_above_20hz(seg) >= SILENT_RMS]
    if not kept:
        raise AudioInputError(SILENT_DETAIL)
    return kept


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


@lru_cache(maxsize=8)
def _hann(n: int) -> np.ndarray:
    """Periodic Hann window of ``n`` float32 samples (read-only; built once per length)."""
    w = (0.5 - 0.5 * np.cos(2.0 * np.pi * np.arange(n) / n)).astype(np.float32)
    w.setflags(write=False)
    return w


@lru_cache(maxsize=8)
def _hann_gain(n: int) -> np.floating:
    """``2 / sum(hann(n))`` (float32, as numpy computes it): the window's amplitude correction."""
    gain: np.floating = 2.0 / _hann(n).sum()
    return gain


def _tone_prominence(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Log amplitude and log prominence (over a running median) on a 0.25 Hz grid up to 2 kHz."""
    n = x.shape[0]
    df = SAMPLE_RATE / (TONE_PAD * n)
    keep = int(TONE_MAX_HZ / df) + 1
    spec = np.abs(scipy.fft.rfft(x * _hann(n), TONE_PAD * n)[:keep]) * _hann_gain(n)
    log_a = np.log(spec + 1e-9)
    floor = median_filter(log_a, size=int(TONE_FLOOR_HZ / df) | 1, mode="nearest")
    return log_a, log_a - floor, df


def _peak_bounds(df: float, f0: float, tol_hz: float, length: int) -> tuple[int, int] | None:
    lo, hi = int(max(f0 - tol_hz, 0.0) / df), int(np.ceil((f0 + tol_hz) / df)) + 1
    if lo >= length or hi <= lo:
        return None
    return lo, min(hi, length)


def _peak(curve: np.ndarray, df: float, f0: float, tol_hz: float) -> float:
    bounds = _peak_bounds(df, f0, tol_hz, curve.shape[0])
    return float("nan") if bounds is None else float(np.max(curve[bounds[0]:bounds[1]]))


def _peak_rows(curves: np.ndarray, df: float, f0: float, tol_hz: float) -> np.ndarray:
    """:func:`_peak` of each row of ``curves`` (one frequency window for all rows)."""
    bounds = _peak_bounds(df, f0, tol_hz, curves.shape[1])
    if bounds is None:
        return np.full(curves.shape[0], np.nan)
    return np.max(curves[:, bounds[0]:bounds[1]], axis=1)


def speed_search_hz(profile: AssetProfile, hint_hz: float | None) -> tuple[float, float]:
    """Where :func:`estimate_speed` looks: +-4 % around a measured speed, else the profile's range
    (a drive's, or around nameplate speed), else :data:`BROAD_SPEED_RANGE_HZ`."""
    if hint_hz is not None and hint_hz > 0:
        return hint_hz * 0.96, hint_hz * 1.04
    return profile.speed_search_hz() or BROAD_SPEED_RANGE_HZ


def _harmonic_sum(prom: np.ndarray, df: float, speeds: np.ndarray, top_hz: float,
                  max_harmonics: int = SPEED_HARMONICS) -> np.ndarray:
    """The harmonic-sum score of each candidate speed (harmonics up to :data:`TONE_MAX_HZ` of the
    search range's top speed ``top_hz``, at most ``max_harmonics``, at least 3)."""
    k = np.arange(1, max(3, min(SPEED_HARMONICS, max_harmonics, int(TONE_MAX_HZ / top_hz))) + 1)
    grid = np.arange(prom.shape[0]) * df
    # count only what rises above the noise peaks over the running median, log-compressed so that
    # one strong tone does not flatten the peak shape; no prior inside the search range (measured
    # on VFD machines: a pull toward nameplate speed tripled the misses)
    positive = np.log1p(np.maximum(prom - NOISE_PROMINENCE, 0.0))
    weights = 1.0 / np.sqrt(k)
    return np.asarray((np.interp(np.outer(speeds, k), grid, positive) * weights).sum(axis=1) / weights.sum())


def hum_lines_hz(profile: AssetProfile) -> tuple[float, ...]:
    """The spacing of a mains-fed motor's magnetic hum lines: twice its line frequency (the core's
    magnetostriction hums at 2 f_L and its multiples); the machine's ``line_frequency_hz``, else 50
    and 60 Hz both; none on a drive, whose hum follows its output frequency.

    >>> hum_lines_hz(AssetProfile(asset_id="P", line_frequency_hz=60.0)), hum_lines_hz(AssetProfile(asset_id="Q"))
    ((120.0,), (100.0, 120.0))
    >>> hum_lines_hz(AssetProfile(asset_id="D", vfd=True))
    ()
    """
    if profile.vfd:
        return ()
    return (2.0 * float(profile.line_frequency_hz),) if profile.line_frequency_hz else (100.0, 120.0)


def _without_lines(prom: np.ndarray, df: float, spacings_hz: tuple[float, ...]) -> np.ndarray:
    """``prom`` with every bin within :data:`HUM_NOTCH_HZ` of a multiple of one of ``spacings_hz`` set to
    0 (no prominence: :func:`_harmonic_sum` counts nothing there)."""
    freqs = np.arange(prom.shape[0]) * df
    out = prom.copy()
    for spacing in spacings_hz:
        out[np.abs(freqs - spacing * np.maximum(np.round(freqs / spacing), 1.0)) <= HUM_NOTCH_HZ] = 0.0
    return out


def estimate_speed(prom: np.ndarray, df: float, profile: AssetProfile, hint_hz: float | None,
                   hum_free: bool = True) -> SpeedEstimate:
    """Harmonic-sum speed estimate (see the module docstring). ``hum_free`` False: the pick counts
    the hum lines too, as before 2026-12-06 (``bench/bench_speed_mains_hum.py`` compares).

    A 4-pole motor on 50 Hz mains slips to 24.5 Hz; its hum at 100, 200 and 300 Hz is louder than its
    shaft tones, and the 4th, 8th and 12th harmonics of synchronous speed (25 Hz) meet it. Searched
    around the PLC's speed (+-4 %, synchronous speed inside), the hum drew the pick to 25 Hz:

    >>> df = 0.25; prom = np.zeros(8_000)
    >>> for f, p in [(24.5, 2.0), (49.0, 1.8), (73.5, 1.6), (100.0, 6.0), (200.0, 5.0), (300.0, 4.0)]:
    ...     prom[round(f / df)] = p
    >>> round(estimate_speed(prom, df, AssetProfile(asset_id="M", line_frequency_hz=50.0), 24.5).shaft_hz, 2)
    24.5
    """
    lo, hi = speed_search_hz(profile, hint_hz)
    cand = np.arange(lo, hi + SPEED_STEP_HZ, SPEED_STEP_HZ)
    score = _harmonic_sum(prom, df, cand, hi)
    lines = hum_lines_hz(profile) if hum_free else ()
    pick = _harmonic_sum(_without_lines(prom, df, lines), df, cand, hi) if lines else score
    window = profile.slip_window_hz() if hint_hz is None or hint_hz <= 0 else None
    inside = (cand >= window[0]) & (cand <= window[1]) if window is not None else None
    if inside is not None and inside.any():  # a mains-fed motor turns in its slip window: pick there
        best = int(np.flatnonzero(inside)[np.argmax(pick[inside])])
    else:
        best = int(np.argmax(pick))
    confidence = float(score[best] - np.median(score))  # against the whole search range, as trained
    shaft = float(cand[best])
    nominal = hint_hz or profile.nominal_shaft_hz
    if confidence < 0.05 and nominal and not profile.vfd:
        shaft = float(min(max(nominal, lo), hi))
    return SpeedEstimate(shaft, confidence, hint_hz is not None and hint_hz > 0)


def speed_at_supply(estimate: SpeedEstimate, prom: np.ndarray, df: float, profile: AssetProfile,
                    supply_hz: float, pole_pairs: int) -> SpeedEstimate | None:
    """The speed where a drive's supply frequency (:func:`drive_supply_hz`) puts the shaft, between
    f_e / pole pairs x (1 - :data:`MAX_SLIP`) and f_e / pole pairs: the best of the harmonic sum over
    the harmonics that sweep at most :data:`SUPPLY_SWEEP_HZ` across that window (the middle of it
    where they show nothing), refined with every harmonic within :data:`SUPPLY_REFINE` of it.

    None when the sound does not bear the window out (the harmonic sum's best in it is below
    :data:`SUPPLY_SPEED_SUPPORT` of the estimate's): then the "carrier" was another tone with
    sidebands (a gear mesh, a vane pass) and is not read at all. Where a measured speed was given
    (``estimate.hint_used``) that speed stays; otherwise the shaft moves to the supply's speed and
    its confidence is still read against the whole search range (the estimate's confidence plus what
    the new speed scores over the old one).

    Tones that do not follow the speed (here 387.5 and 775 Hz) are met by high harmonics of a
    candidate low in the window (every harmonic counted: 24.22 Hz, the 16th on 387.5); the shaft's
    own faint first harmonics put it at 24.76 Hz:

    >>> df = 0.25; prom = np.zeros(8_000)
    >>> for f, p in [(24.75, 1.3), (49.5, 1.2), (74.25, 1.2), (387.5, 9.0), (775.0, 8.0)]:
    ...     prom[round(f / df)] = p
    >>> p = AssetProfile(asset_id="M", vfd=True, poles=2, nominal_rpm=2950.0)
    >>> round(speed_at_supply(SpeedEstimate(24.75, 1.0, False), prom, df, p, 25.0, 1).shaft_hz, 2)
    24.76
    """
    hi = speed_search_hz(profile, None)[1]
    near = np.arange(supply_hz / pole_pairs * (1.0 - MAX_SLIP), supply_hz / pole_pairs + SPEED_STEP_HZ, SPEED_STEP_HZ)
    near_score = _harmonic_sum(prom, df, near, hi)
    at_estimate = float(_harmonic_sum(prom, df, np.array([estimate.shaft_hz]), hi)[0])
    if float(near_score.max()) < SUPPLY_SPEED_SUPPORT * at_estimate:
        return None
    if estimate.hint_used:
        return estimate
    coarse = _harmonic_sum(prom, df, near, hi, int(SUPPLY_SWEEP_HZ / max(float(near[-1] - near[0]), SPEED_STEP_HZ)))
    pick = float(near[int(np.argmax(coarse))]) if coarse.max() > 0 else supply_hz / pole_pairs * (1.0 - MAX_SLIP / 2)
    around = np.flatnonzero(np.abs(near / pick - 1.0) <= SUPPLY_REFINE)
    best = int(around[np.argmax(near_score[around])])
    return SpeedEstimate(float(near[best]), estimate.confidence + float(near_score[best]) - at_estimate, False)


def _band_bins(n: int, n_bins: int, band: tuple[float, float]) -> tuple[int, int, int]:
    """FFT bins ``lo..hi`` of ``band`` in a clip of ``n`` samples and the envelope's transform length."""
    lo = max(int(np.ceil(band[0] * n / SAMPLE_RATE)), 1)
    hi = min(int(np.floor(band[1] * n / SAMPLE_RATE)), n_bins - 1)
    width = max(hi - lo + 1, 2)
    m = 1 << int(np.ceil(np.log2(max(2 * width, 2 * ENV_MAX_HZ * n / SAMPLE_RATE))))
    return lo, hi, m


@lru_cache(maxsize=16)
def _band_groups(n: int, n_bins: int, bands: tuple[tuple[float, float], ...]
                 ) -> tuple[tuple[int, tuple[tuple[int, int, int], ...]], ...]:
    """``bands`` grouped by envelope transform length: ``(m, ((band index, lo, hi), ...))``."""
    groups: dict[int, list[tuple[int, int, int]]] = {}
    for i, band in enumerate(bands):
        lo, hi, m = _band_bins(n, n_bins, band)
        groups.setdefault(m, []).append((i, lo, hi))
    return tuple((m, tuple(rows)) for m, rows in groups.items())


def _band_envelope(spectrum: np.ndarray, n: int, band: tuple[float, float]) -> np.ndarray:
    """Hilbert envelope of the clip band-passed to ``band`` (analytic signal shifted to base band)."""
    env, row = _band_envelopes(spectrum, n, (band,))[0]
    return env[row]


def _band_envelopes(spectrum: np.ndarray, n: int, bands: tuple[tuple[float, float], ...]
                    ) -> list[tuple[np.ndarray, int]]:
    """:func:`_band_envelope` of every band as ``(envelope, row)`` of a shared ``(rows, m)`` array:
    the bands of one transform length go through one batched inverse FFT (the same transform
    per row, so the same numbers as one FFT per band)."""
    out: list[tuple[np.ndarray, int]] = [(spectrum, 0)] * len(bands)
    for m, rows in _band_groups(n, spectrum.shape[0], bands):
        base = np.zeros((len(rows), m), dtype=np.complex64)
        for r, (_, lo, hi) in enumerate(rows):
            base[r, :hi - lo + 1] = spectrum[lo:hi + 1]
        env = np.abs(scipy.fft.ifft(base, axis=1)).astype(np.float64) * m / n
        for r, (i, _, _) in enumerate(rows):
            out[i] = (env, r)
    return out


def _kurtosis_of_rows(envelopes: list[tuple[np.ndarray, int]]) -> list[float]:
    """Kurtosis of the squared envelope, ``E[e^4] / E[e^2]^2 - 2``, of each ``(array, row)`` (the
    rows of one array at once; a row's means are the same numbers as the 1-D means)."""
    moments: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    out = []
    for arr, row in envelopes:
        if id(arr) not in moments:
            p2 = arr * arr
            moments[id(arr)] = (np.mean(p2 * p2, axis=1), np.mean(p2, axis=1))
        fourth, second = moments[id(arr)]
        out.append(float(fourth[row] / max(float(second[row]) ** 2, 1e-30)) - 2.0)
    return out


def _envelope_shape(env: np.ndarray) -> tuple[np.ndarray, list[float]]:
    """The centred envelope and its modulation depth and log kurtosis."""
    mean = float(env.mean()) + 1e-12
    centred = env - mean
    var = float(np.mean(centred**2)) + 1e-24
    modulation = float(np.sqrt(var) / mean)
    kurt = float(np.mean(centred**4) / var**2)
    return centred, [modulation, float(np.log1p(max(kurt, 0.0)))]


def _envelope_orders(proms: np.ndarray, df: float, orders: dict[str, float], shaft_hz: float
                     ) -> tuple[np.ndarray, tuple[float, float, float, float]]:
    """Fault-order peaks (max over the bands, rows of ``proms``) and the best band's strongest
    non-synchronous peak."""
    combs: list[float] = []
    for name in FAULT_ORDERS:
        order = orders.get(name)
        for h in range(1, FAULT_HARMONICS + 1):
            if order is None:
                combs.append(0.0)
                continue
            f0 = h * order * shaft_hz
            value = _peak_rows(proms, df, f0, max(1.0, 0.03 * f0))
            combs.append(float(np.max(np.where(np.isfinite(value), value, 0.0))))
    # an inner-race defect passes through the load zone once per turn: sidebands at BPFI +- 1x
    for h in (1, 2):
        order = orders.get("bpfi")
        if order is None:
            combs.append(0.0)
            continue
        low, high = (_peak_rows(proms, df, h * order * shaft_hz + d * shaft_hz, max(1.0, 0.03 * shaft_hz))
                     for d in (-1, 1))
        sb = np.fmax(low, high)
        combs.append(float(np.max(np.where(np.isfinite(sb), sb, 0.0))))
    # strongest non-synchronous peak between 1.5 and 12 orders, with its 2nd/3rd harmonics
    freqs = np.arange(proms.shape[1]) * df
    order_axis = freqs / shaft_hz
    mask = (order_axis >= 1.5) & (order_axis <= 12.0) & (np.abs(order_axis - np.round(order_axis)) > 0.06)
    best: tuple[float, float, float, float] = (-np.inf, 0.0, 0.0, 0.0)
    if not np.any(mask):
        return np.asarray(combs), (0.0, 0.0, 0.0, 0.0)
    for prom, i in zip(proms, np.argmax(np.where(mask, proms, -np.inf), axis=1), strict=True):
        f_p = freqs[i]
        h2, h3 = (_peak(prom, df, m * f_p, max(1.0, 0.02 * m * f_p)) for m in (2, 3))
        nonsync = (float(prom[i]), float(order_axis[i]), 0.0 if not np.isfinite(h2) else h2,
                   0.0 if not np.isfinite(h3) else h3)
        if nonsync[0] > best[0]:
            best = nonsync
    return np.asarray(combs), best


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


#: Entries of the vector that are log prominences (clipped to ``PROM_CLIP`` by ``finish_audio_vector``).
_PROM_INDEX = np.array([i for i, name in enumerate(AUDIO_CLIP_NAMES)
                        if name.endswith(".prom") or name.startswith("env.") and ".h" in name], dtype=np.int64)
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
    """Prominence at ``freqs`` (max of the two nearest bins, clipped) and which are inside the spectrum.
    ``prom`` may stack several spectra in rows: the values then gain that leading axis."""
    length = prom.shape[-1]
    inside = freqs < (length - 2) * df
    i0 = np.clip(np.floor(freqs / df).astype(np.int64), 0, length - 2)
    return np.where(inside, np.clip(np.maximum(prom[..., i0], prom[..., i0 + 1]), -1.0, PROM_CLIP[1]), 0.0), inside


def fault_comb(prom: np.ndarray, df: float, f0: float, sideband_hz: float = 0.0) -> float:
    """Harmonic comb score of a fault frequency ``f0`` in an envelope spectrum.

    Mean prominence of the harmonics ``h f0 (1 + d)``, h = 1..:data:`COMB_HARMONICS`, for the best
    *common* deviation ``d`` (:data:`COMB_DEVIATION`: slip and speed error shift every harmonic
    alike, so one ``d`` is searched instead of a window per harmonic, which keeps healthy clips low);
    with ``sideband_hz`` (BPFI: the shaft rate, an inner race passes the load zone once per turn;
    2xBSF: the cage rate FTF) half of the stronger sideband ``h f0 (1 + d) +- sideband_hz`` is added.
    ``prom`` may stack several envelope spectra (rows): the score is then the best over them.

    >>> prom = np.zeros(801); prom[[100, 200, 300, 400]] = 5.0
    >>> round(fault_comb(prom, 1.0, 101.0), 2), round(fault_comb(prom, 1.0, 143.0), 2)
    (5.0, 0.0)
    """
    if not (np.isfinite(f0) and f0 > 0):
        return 0.0
    freqs = np.outer(1.0 + COMB_DEVIATION, np.arange(1, COMB_HARMONICS + 1) * f0)
    values, inside = _comb_values(prom, df, freqs)
    count = np.maximum(inside.sum(axis=1), 1)
    score = values.sum(axis=-1) / count
    if sideband_hz > 0:
        lower, _ = _comb_values(prom, df, np.maximum(freqs - sideband_hz, 0.0))
        upper, _ = _comb_values(prom, df, freqs + sideband_hz)
        score = score + 0.5 * (np.maximum(lower, upper) * inside).sum(axis=-1) / count
    return float(np.max(score)) if np.any(inside) else 0.0


def supply_pole_pairs(profile: AssetProfile) -> int | None:
    """Pole pairs of the motor: from ``poles``, else from the nameplate speed and the supply (50 or 60 Hz
    when not given), the pair count whose slip is 0-8 %."""
    if profile.poles:
        return max(profile.poles // 2, 1)
    nominal = profile.nominal_shaft_hz
    if not nominal:
        return None
    for line in ([profile.line_frequency_hz] if profile.line_frequency_hz else [50.0, 60.0]):
        pairs = max(round(line / nominal), 1)
        if 0.0 <= 1.0 - nominal * pairs / line <= 0.08:
            return pairs
    return None


@dataclass(frozen=True)
class DriveCarrier:
    """A drive's PWM carrier read in a clip: its frequency and the motor's supply frequency f_e."""

    carrier_hz: float
    supply_hz: float

    def in_band(self, band: tuple[float, float]) -> bool:
        """Whether demodulating ``band`` shows the carrier's lines: it holds the carrier or one of its
        first sidebands (f_c +- 2 f_e)."""
        return band[0] - 2.0 * self.supply_hz <= self.carrier_hz <= band[1] + 2.0 * self.supply_hz


def drive_supply_hz(x: np.ndarray, search_hz: tuple[float, float]) -> DriveCarrier | None:
    """A drive's PWM carrier and the motor's supply frequency f_e read off it, or ``None``.

    A PWM inverter's carrier f_c has sidebands at f_c +- 2 f_e. Drives set f_c in steps of
    :data:`PWM_CARRIER_STEP_HZ` (1, 1.5, 2, 4, 8 kHz ...): each such frequency of 1-7.9 kHz whose
    tone stands out (log prominence over the running median at least :data:`PWM_CARRIER_PROM`,
    within :data:`PWM_CARRIER_TOLERANCE_HZ`) is tried, for the pair of sidebands (both at least
    :data:`PWM_SIDEBAND_PROM`) with f_e in ``search_hz`` (:func:`supply_range_hz`) that stands out
    most; f_e from the two sidebands' refined frequencies. The pair at +- 4 f_e, read as +- 2 x
    (2 f_e), is taken for what it is when the pair at half its spacing is there too.
    """
    lo_fe, hi_fe = search_hz
    if not (0.0 < lo_fe < hi_fe):
        return None
    n = x.shape[0]
    df = SAMPLE_RATE / n
    log_m = np.log(np.abs(scipy.fft.rfft((x - float(np.mean(x))) * _hann(n))) + 1e-12)
    lo, hi = int(PWM_RANGE_HZ[0] / df), min(int(PWM_RANGE_HZ[1] / df), log_m.shape[0] - 1)
    prom = np.full(log_m.shape[0], -np.inf)
    prom[lo:hi] = log_m[lo:hi] - median_filter(log_m[lo:hi], size=max(int(PWM_FLOOR_HZ / df) | 1, 3), mode="nearest")
    near = maximum_filter1d(prom, size=3, mode="nearest")  # a line within one bin
    offsets = np.arange(int(2.0 * lo_fe / df), int(np.ceil(2.0 * hi_fe / df)) + 1)  # 2 f_e in bins
    best, pick = PWM_SIDEBAND_PROM, None
    reach = max(int(round(PWM_CARRIER_TOLERANCE_HZ / df)), 1)
    for step in np.arange(np.ceil(PWM_RANGE_HZ[0] / PWM_CARRIER_STEP_HZ), PWM_RANGE_HZ[1] // PWM_CARRIER_STEP_HZ + 1):
        c = int(round(step * PWM_CARRIER_STEP_HZ / df))
        i = c - reach + int(np.argmax(prom[c - reach:c + reach + 1]))
        if prom[i] < PWM_CARRIER_PROM:
            continue
        both = _sideband_pairs(near, i, offsets)
        j = int(np.argmax(both))
        if both[j] > best:
            best, pick = float(both[j]), (i, int(offsets[j]))
    if pick is None:
        return None
    i, off = pick
    half = _sideband_pairs(near, i, np.array([off // 2, (off + 1) // 2]))
    if off // 2 >= offsets[0] and float(half.max()) >= PWM_SIDEBAND_PROM:
        off = off // 2 + int(np.argmax(half))
    low, high = _tone_at(log_m, df, (i - off) * df), _tone_at(log_m, df, (i + off) * df)
    return DriveCarrier(carrier_hz=0.5 * (low + high), supply_hz=(high - low) / 4.0)


def _sideband_pairs(near: np.ndarray, carrier: int, offsets: np.ndarray) -> np.ndarray:
    """The weaker of the two sidebands at ``carrier`` +- each offset (bins; -inf past the spectrum)."""
    lower, upper = carrier - offsets, carrier + offsets
    ok = (lower >= 0) & (upper < near.shape[0])
    out = np.full(offsets.shape[0], -np.inf)
    out[ok] = np.minimum(near[lower[ok]], near[upper[ok]])
    return out


def supply_range_hz(profile: AssetProfile, hint_hz: float | None, pole_pairs: int) -> tuple[float, float]:
    """Where a drive motor's supply frequency lies: pole pairs x speed / (1 - slip), slip 0 to
    :data:`MAX_SLIP`, for a speed in :func:`speed_search_hz`'s range; without a measured speed
    down to :data:`DRIVE_LOWEST_SPEED` of nameplate (a carrier's sidebands have no octave
    ambiguity, so a drive turned down further than the harmonic sum looks is still read)."""
    lo, hi = speed_search_hz(profile, hint_hz)
    if not (hint_hz is not None and hint_hz > 0) and profile.nominal_shaft_hz:
        lo = min(lo, max(SPEED_LIMITS_HZ[0], DRIVE_LOWEST_SPEED * profile.nominal_shaft_hz))
    return lo * pole_pairs, hi * pole_pairs / (1.0 - MAX_SLIP)


def _tone_at(log_m: np.ndarray, df: float, f0: float) -> float:
    """Frequency of the strongest bin within 2 bins of ``f0``, refined by a parabola through it and its
    neighbours (log magnitude)."""
    c = min(int(round(f0 / df)), log_m.shape[0] - 2)
    lo, hi = max(c - 2, 1), min(c + 3, log_m.shape[0] - 1)
    k = lo + int(np.argmax(log_m[lo:hi]))
    a, b, g = log_m[k - 1], log_m[k], log_m[k + 1]
    den = a - 2.0 * b + g
    return (k + (0.5 * (a - g) / den if den < 0 else 0.0)) * df


def supply_lines(proms: np.ndarray, df: float, carrier: DriveCarrier | None) -> np.ndarray:
    """The even multiples 2k f_e (up to :data:`ENV_MAX_HZ`) of a drive's supply frequency that stand
    out (:data:`NOISE_PROMINENCE`) in some row of ``proms``, the envelope spectra of the bands that
    hold the carrier (:meth:`DriveCarrier.in_band`).

    Demodulated, a band holding the PWM carrier and its sidebands at f_c +- 2 f_e, +- 4 f_e shows lines
    at 2 f_e, 4 f_e, ...: electrical, however near a bearing order they fall (a 6-pole motor's 2 f_e
    is 6.0-6.4 shaft orders, a 6204 bearing's 2 x BPFO 6.1). Bands away from the carrier do not
    show them and keep every line (a bearing defect ringing a resonance there).
    """
    if carrier is None:
        return np.zeros(0)
    f_e = carrier.supply_hz
    freqs = 2.0 * f_e * np.arange(1, int(ENV_MAX_HZ / (2.0 * f_e)) + 1)
    values, inside = _comb_values(np.atleast_2d(proms), df, freqs)
    return freqs[inside & (values.max(axis=0) >= NOISE_PROMINENCE)]


def notch_lines(prom: np.ndarray, df: float, freqs: np.ndarray) -> np.ndarray:
    """``prom`` with the bins that :func:`_comb_values` reads within one bin of ``freqs`` set to 0 (no line)."""
    if freqs.size == 0:
        return prom
    out = prom.copy()
    i0 = np.floor(freqs / df).astype(np.int64)
    for shift in (-1, 0, 1, 2):
        idx = np.clip(i0 + shift, 0, out.shape[-1] - 1)
        out[..., idx] = 0.0
    return out


@lru_cache(maxsize=1)
def _blind_orders() -> np.ndarray:
    lo, hi, step = BLIND_ORDERS
    orders = np.arange(lo, hi, step)
    orders = orders[np.abs(orders - np.round(orders)) > BLIND_WHOLE_ORDER_GAP]
    orders.setflags(write=False)
    return orders


def blind_comb(prom: np.ndarray, df: float, shaft_hz: float) -> tuple[float, float]:
    """Strongest harmonic comb of any non-synchronous order in 1.5-12 (a bearing of unknown geometry).

    Returns ``(score, order)``; whole orders (+-:data:`BLIND_WHOLE_ORDER_GAP`) are left out (shaft
    harmonics). ``prom`` may stack several envelope spectra (rows): the best ``(score, order)`` over them.

    A 6308's outer race at 25 Hz (BPFO 3.07 orders; before 2026-12-06 orders within 0.08 of a whole
    number were left out, and only a sub-comb at 1.53 orders, half as strong, was found):

    >>> prom = np.zeros(801); prom[[77, 154, 230, 307]] = 4.0
    >>> score, order = blind_comb(prom, 1.0, 25.0)
    >>> round(score, 1), round(order, 2)
    (4.0, 3.06)
    """
    orders = _blind_orders()
    freqs = np.outer(orders * shaft_hz, np.arange(1, COMB_HARMONICS + 1))
    values, inside = _comb_values(prom, df, freqs)
    n_in = inside.sum(axis=1)
    score = np.where(n_in >= 2, values.sum(axis=-1) / np.maximum(n_in, 1), -1.0)
    rows = score.reshape(-1, score.shape[-1])
    return max((float(row[b]), float(orders[b])) for row, b in zip(rows, np.argmax(rows, axis=1), strict=True))


@lru_cache(maxsize=4)
def _sk_bins(n_fft: int) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    freqs = np.fft.rfftfreq(n_fft, 1.0 / SAMPLE_RATE)
    return freqs, tuple((freqs >= lo) & (freqs <= hi) for lo, hi in SK_BANDS_HZ)


def _spectral_kurtosis(x: np.ndarray) -> np.ndarray:
    """Mean spectral kurtosis (4 ms STFT) per :data:`SK_BANDS_HZ` band, log-compressed."""
    w = _hann(SK_N_FFT)
    count = 1 + (x.shape[0] - SK_N_FFT) // SK_HOP
    frames = np.lib.stride_tricks.as_strided(x, shape=(count, SK_N_FFT), strides=(x.strides[0] * SK_HOP, x.strides[0]),
                                             writeable=False)
    p = np.abs(scipy.fft.rfft(frames * w, axis=1)).astype(np.float64) ** 2
    m2 = p.mean(axis=0)
    sk = (p * p).mean(axis=0) / np.maximum(m2 * m2, 1e-30) - 2.0
    _, band_masks = _sk_bins(SK_N_FFT)
    strong = m2 > 1e-9 * max(float(m2.max()), 1e-30)
    out = []
    for in_band in band_masks:
        sel = in_band & strong
        out.append(float(np.log1p(np.clip(sk[sel].mean(), 0.0, 1e4))) if np.any(sel) else 0.0)
    return np.asarray(out)


@dataclass(frozen=True)
class _SegmentBins:
    """Frequency masks of a segment's spectrum, built once per segment length."""

    above_20hz: np.ndarray
    shape_total: np.ndarray
    shape_bands: tuple[np.ndarray, ...]


@lru_cache(maxsize=4)
def _segment_bins(n: int) -> _SegmentBins:
    freqs = np.fft.rfftfreq(n, 1.0 / SAMPLE_RATE)
    return _SegmentBins(freqs >= 20.0, freqs >= SHAPE_EDGES_HZ[0],
                        tuple((freqs >= lo) & (freqs < hi) for lo, hi in itertools.pairwise(SHAPE_EDGES_HZ)))


def _segment_vector(x: np.ndarray, profile: AssetProfile, hint_hz: float | None, drive_carrier: bool = True
                    ) -> np.ndarray:
    """One 1 s segment's 79 values. ``drive_carrier=False``: without reading a drive's PWM carrier
    (:func:`drive_supply_hz`), as before 2026-12-05, for benches that compare the two."""
    n = x.shape[0]
    bins = _segment_bins(n)
    x = x.astype(np.float64) - float(np.mean(x))
    spectrum = scipy.fft.rfft(x)
    power = np.abs(spectrum) ** 2
    rms = float(np.sqrt(2.0 * power[bins.above_20hz].sum()) / n)
    if rms < SILENT_RMS:
        raise AudioInputError(SILENT_DETAIL)
    x = x / rms
    spectrum = spectrum / rms
    power = power / rms**2
    log_a, prom, df = _tone_prominence(x.astype(np.float32))
    speed, carrier = _speed_and_supply(x, prom, df, profile, hint_hz, drive_carrier)
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
    total = float(power[bins.shape_total].sum()) + 1e-12
    for in_band in bins.shape_bands:
        out.append(10.0 * np.log10(float(power[in_band].sum()) / total + 1e-9))
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
    duration = n / SAMPLE_RATE
    # the envelope bands and every kurtogram band: one batched inverse FFT per transform length
    all_bands = (*bands, *_KURTOGRAM_BANDS)
    envelopes = _band_envelopes(spectrum, n, all_bands)
    env_stats: list[float] = []
    env_proms: list[np.ndarray] = []
    for arr, row in envelopes[:len(bands)]:
        centred, stats = _envelope_shape(arr[row])
        env_stats += stats
        env_proms.append(_envelope_prominence(centred, duration)[0])
    # a drive's supply lines, where the band holds its carrier (the other bands keep every line)
    at_carrier = [carrier is not None and carrier.in_band(band) for band in bands]
    held = [p for p, c in zip(env_proms, at_carrier, strict=True) if c]
    lines = supply_lines(np.stack(held), 1.0 / duration, carrier) if held else np.zeros(0)
    env_proms = [notch_lines(p, 1.0 / duration, lines) if c else p for p, c in zip(env_proms, at_carrier, strict=True)]
    # fast kurtogram: the most impulsive demodulation bands of this clip (kurtosis of the envelope)
    k_envs = envelopes[len(bands):]
    k_kurt = _kurtosis_of_rows(k_envs)
    combs, nonsync_best = _envelope_orders(np.stack(env_proms), 1.0 / duration, orders, f_r)
    top = np.argsort(np.asarray(k_kurt))[::-1][:KURTOGRAM_TOP]
    for i in top:
        env = k_envs[i][0][k_envs[i][1]]
        prom_k = _envelope_prominence(env - float(env.mean()), duration)[0]
        held = carrier is not None and carrier.in_band(_KURTOGRAM_BANDS[int(i)])
        env_proms.append(notch_lines(prom_k, 1.0 / duration, lines) if held else prom_k)
    best_band = _KURTOGRAM_BANDS[int(top[0])]
    df_env = SAMPLE_RATE / n
    all_proms = np.stack(env_proms)
    comb_scores = []
    for name, sideband in (("bpfo", 0.0), ("bpfi", f_r), ("bsf2", orders.get("ftf", 0.0) * f_r)):
        order = orders.get(name)
        comb_scores.append(fault_comb(all_proms, df_env, order * f_r, sideband) if order else 0.0)
    blind = blind_comb(all_proms, df_env, f_r)
    out += env_stats
    out += combs.tolist()
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


def median_over_segments(samples: np.ndarray, sample_rate: int, profile: AssetProfile, shaft_hz: float | None,
                         per_segment: Callable[[np.ndarray, AssetProfile, float | None], np.ndarray]) -> np.ndarray:
    """``per_segment`` of every 1 s segment of the clip resampled to 16 kHz, median over segments
    (the one segment's result as it is when there is one)."""
    x = resample_to_16k(samples, sample_rate)
    if not np.all(np.isfinite(x)):
        raise AudioInputError("the clip holds NaN or infinite samples")
    parts = [per_segment(seg, profile, shaft_hz) for seg in audible(segments(x))]
    return np.median(np.stack(parts), axis=0) if len(parts) > 1 else parts[0]


def finish_audio_vector(vec: np.ndarray, baseline_db: Baseline | None = None) -> np.ndarray:
    """A raw vector (one segment's 79 values, or the median of several) as the model reads it:
    prominences clipped to :data:`PROM_CLIP`, non-finite values 0, then the seven baseline values
    against ``baseline_db`` (the machine's learned healthy levels, or None; a
    :class:`~pipeline.features.audio_baseline.HealthyLevels` only where it covers the clip's
    estimated speed), float32 ``(86,)``."""
    out = np.array(vec, dtype=np.float64)[: len(AUDIO_CLIP_NAMES)]
    out[_PROM_INDEX] = np.clip(out[_PROM_INDEX], *PROM_CLIP)
    clip = np.nan_to_num(out, nan=0.0, posinf=0.0, neginf=0.0).astype(np.float32)
    return np.concatenate([clip, baseline_values(clip[_LEVEL_INDEX], baseline_db, clip_speed(clip))])


def clip_levels(vector: np.ndarray) -> np.ndarray:
    """The six shaft-harmonic levels (dB over the clip's RMS) of an audio vector: what
    :class:`~pipeline.features.audio_baseline.AudioBaseline` learns from."""
    return np.asarray(vector)[_LEVEL_INDEX].astype(np.float64)


def clip_speed(vector: np.ndarray) -> float:
    """The shaft speed (Hz) the clip of an audio vector was read at (``speed.shaft_hz``, which the
    vector holds in units of 60 Hz)."""
    return 60.0 * float(np.asarray(vector)[_SPEED_INDEX])


def bearing_orders_above_envelope(shaft_hz: float, asset: object = None) -> bool:
    """Whether every bearing fault frequency a clip read at ``shaft_hz`` is judged at lies above
    :data:`ENV_MAX_HZ`: the lowest of the bearing's BPFO, BPFI and 2 x BSF orders (``assets.json``),
    else the blind comb's lowest order (:data:`BLIND_ORDERS`), times the shaft speed. A motor spindle
    at 130 Hz with a 20-ball angular-contact bearing (2 x BSF 8.2 orders) has its lowest fault line at
    1.07 kHz; a pump at 25 Hz with a 6205 (BPFO 3.58) at 90 Hz.

    >>> from pipeline.features.asset_profile import AssetProfile
    >>> spindle = AssetProfile("SP-1", bearing_orders={"bpfo": 8.82, "bpfi": 11.18, "bsf": 4.09, "ftf": 0.44})
    >>> bearing_orders_above_envelope(130.0, spindle), bearing_orders_above_envelope(55.0, spindle)
    (True, False)
    >>> bearing_orders_above_envelope(400.0), bearing_orders_above_envelope(600.0)  # no bearing: the blind comb
    (False, True)
    """
    return bool(lowest_bearing_fault_hz(shaft_hz, asset) > ENV_MAX_HZ)


def lowest_bearing_fault_hz(shaft_hz: float, asset: object = None) -> float:
    """The lowest bearing fault frequency a clip read at ``shaft_hz`` is judged at (Hz): the lowest of
    the bearing's BPFO, BPFI and 2 x BSF orders, else the blind comb's lowest order, times the speed;
    0 for a speed that is not a number."""
    orders = as_profile(asset).bearing_orders
    known = [float(orders[k]) for k in ("bpfo", "bpfi") if k in orders] + ([2.0 * float(orders["bsf"])] if "bsf" in orders else [])
    lowest = min(known) if known else BLIND_ORDERS[0]
    return float(shaft_hz * lowest) if np.isfinite(shaft_hz) else 0.0


def audio_segment_vectors(samples: np.ndarray, sample_rate: int = SAMPLE_RATE, asset: object = None,
                          shaft_hz: float | None = None, raw: bool = False,
                          baseline_db: Baseline | None = None) -> np.ndarray:
    """``(k, 86)``: the vector of each 1 s segment of the clip (k <= :data:`MAX_SEGMENTS`, see
    :func:`segments`), each one as :func:`audio_vector` gives it for that second alone
    (``raw``: ``(k, 79)`` before :func:`finish_audio_vector`, what :func:`audio_vector` takes the
    median of). A model can score every segment and combine its outputs (``linewatch inspect``)."""
    x = resample_to_16k(samples, sample_rate)
    if not np.all(np.isfinite(x)):
        raise AudioInputError("the clip holds NaN or infinite samples")
    profile = as_profile(asset)
    parts = np.stack([_segment_vector(seg, profile, shaft_hz) for seg in audible(segments(x))])
    return parts if raw else np.stack([finish_audio_vector(v, baseline_db) for v in parts])


def _speed_and_supply(x: np.ndarray, prom: np.ndarray, df: float, profile: AssetProfile, hint_hz: float | None,
                      drive_carrier: bool = True) -> tuple[SpeedEstimate, DriveCarrier | None]:
    """The segment's running speed, and its drive's carrier where it is read (:func:`drive_supply_hz`,
    borne out by :func:`speed_at_supply`), else None."""
    speed = estimate_speed(prom, df, profile, hint_hz)
    pairs = supply_pole_pairs(profile) if profile.vfd and drive_carrier else None
    carrier = drive_supply_hz(x, supply_range_hz(profile, hint_hz, pairs)) if pairs else None
    at_supply = speed_at_supply(speed, prom, df, profile, carrier.supply_hz, pairs) if carrier and pairs else None
    return (speed, None) if at_supply is None else (at_supply, carrier)


def clip_drive_supply_hz(samples: np.ndarray, sample_rate: int = SAMPLE_RATE, asset: object = None,
                         shaft_hz: float | None = None) -> float | None:
    """The supply frequency that a drive's PWM carrier shows in the clip's first audible second, as
    the vector reads it, or None: not a drive (``"vfd"``), no pole count or nameplate speed, no
    carrier below 7.9 kHz in the clip, or one whose speed the sound does not bear out.

    >>> clip_drive_supply_hz(np.zeros(16_000), 16_000, {"asset_id": "M", "nominal_rpm": 1480}) is None
    True
    """
    profile = as_profile(asset)
    if not (profile.vfd and supply_pole_pairs(profile)):
        return None
    parts = audible(segments(resample_to_16k(samples, sample_rate)))
    x = parts[0].astype(np.float64) - float(np.mean(parts[0]))
    rms = float(np.sqrt(np.mean(x * x)))
    if rms < SILENT_RMS:
        return None
    x = x / rms
    _, prom, df = _tone_prominence(x.astype(np.float32))
    carrier = _speed_and_supply(x, prom, df, profile, shaft_hz)[1]
    return None if carrier is None else carrier.supply_hz


def audio_vector(samples: np.ndarray, sample_rate: int = SAMPLE_RATE, asset: object = None,
                 shaft_hz: float | None = None,
                 baseline_db: Baseline | None = None) -> np.ndarray:
    """``float32 (86,)`` physics-normalised model input of one clip (see the module docstring).

    ``asset``: an :class:`~pipeline.features.asset_profile.AssetProfile`, an ``assets.json`` entry or
    ``AssetInfo`` (None: no speed or bearing knowledge; the speed is searched in 8-65 Hz).
    ``shaft_hz``: a measured running speed (e.g. PLC ``speed_rpm`` / 60) to search around.
    ``baseline_db``: the machine's learned healthy shaft-harmonic levels
    (:class:`~pipeline.features.audio_baseline.AudioBaseline`), or None.
    Raises :class:`AudioInputError` for clips that cannot be scored (too short, silent).
    """
    vec = median_over_segments(samples, sample_rate, as_profile(asset), shaft_hz, _segment_vector)
    return finish_audio_vector(vec, baseline_db)
