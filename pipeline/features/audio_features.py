"""Audio clip features: a 64-band log-mel spectrogram (the model input) and scalar statistics.

Log-mel (:func:`logmel`): 16 kHz clip, Hann window of 400 samples (25 ms) zero-padded to an
FFT of 512, hop 160 (10 ms), centred frames with reflect padding (``1 + len // hop`` frames:
101 for 1 s), power spectrum, 64 triangular mel filters from 0 to 8 kHz on the **Slaney**
mel scale with Slaney area normalisation (the defaults of librosa's ``filters.mel``), then
``ln(mel + 1e-8)``. numpy only; the filterbank is built once per parameter set.

Statistics (:func:`audio_stats`, all finite floats, fixed keys — see :data:`AUDIO_STAT_NAMES`):

* ``rms``, ``rms_dbfs``, ``peak``, ``crest_factor``, ``clipping_frac`` (|x| ≥ 0.999)
* ``spectral_centroid_hz`` of the clip's mean power spectrum
* ``spectral_kurtosis_max`` / ``spectral_kurtosis_mean``: Antoni's spectral kurtosis
  ``E|X|⁴ / (E|X|²)² − 2`` of each bin of a *short* STFT (64-sample Hann, hop 32: 4 ms frames,
  so that bearing impacts at 50–300 Hz fall into some frames and not others) over its frames
  (≈0 for stationary noise, −1 for a steady tone, large for impulsive content in that band),
  max and mean over the bins from 100 Hz to 7.9 kHz holding at least 10⁻⁶ of the strongest
  bin's power (emptier bins are numerically meaningless and count as 0)
* envelope analysis: the clip band-passed around the asset's structural resonance band
  (``resonance_band_hz`` of ``assets.json``, default 2–5 kHz), its Hilbert envelope (analytic
  signal built in the frequency domain, demodulated to base band), the envelope's spectrum
  between 2 and 500 Hz: ``env_peak{1,2,3}_hz`` and ``env_peak{1,2,3}_rel`` (the top-3 peaks and
  their height over the median of that range), and ``env_ratio_{bpfo,bpfi,bsf,ftf}``: the share
  of the 2–500 Hz envelope energy within ±max(2 Hz, 4 %) of each bearing defect frequency
  (0 without bearing frequencies; ``bearing_freqs_available`` says which).

>>> sr = 16000; t = np.arange(sr) / sr
>>> clip = (0.5 * np.sin(2 * np.pi * 1000 * t)).astype(np.float32)
>>> mel = logmel(clip); mel.shape, mel.dtype.name
((64, 101), 'float32')
>>> round(audio_stats(clip)["spectral_centroid_hz"])
1000
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import scipy.fft
from scipy.signal import find_peaks

from pipeline.features.asset_profile import AssetProfile

SAMPLE_RATE = 16_000
N_MELS = 64
N_FFT = 512
WIN_LENGTH = 400
HOP_LENGTH = 160
FMIN_HZ = 0.0
LOG_EPS = 1e-8
CLIP_LEVEL = 0.999
SK_BAND_HZ = (100.0, 7_900.0)
SK_N_FFT = 64
SK_HOP = 32
SK_MIN_REL_POWER = 1e-6
DEFAULT_RESONANCE_BAND_HZ = (2_000.0, 5_000.0)
ENV_RANGE_HZ = (2.0, 500.0)
ENV_TOP_K = 3
BEARING_KEYS: tuple[str, ...] = ("bpfo", "bpfi", "bsf", "ftf")

AUDIO_STAT_NAMES: tuple[str, ...] = (
    "rms", "rms_dbfs", "peak", "crest_factor", "clipping_frac",
    "spectral_centroid_hz", "spectral_kurtosis_max", "spectral_kurtosis_mean",
    *(f"env_peak{i}_{kind}" for i in range(1, ENV_TOP_K + 1) for kind in ("hz", "rel")),
    *(f"env_ratio_{key}" for key in BEARING_KEYS),
    "bearing_freqs_available",
)


def n_frames(n_samples: int, hop_length: int = HOP_LENGTH) -> int:
    """Frames of :func:`logmel` for a clip of ``n_samples`` (centred framing)."""
    return 1 + n_samples // hop_length


# --- mel filterbank (Slaney scale + Slaney normalisation, as librosa.filters.mel) -------------

def hz_to_mel(hz: np.ndarray | float) -> np.ndarray:
    """Slaney mel scale: linear below 1 kHz (3 mel per 200 Hz), logarithmic above."""
    hz = np.asarray(hz, dtype=np.float64)
    f_sp, min_log_hz = 200.0 / 3.0, 1000.0
    min_log_mel, logstep = min_log_hz / f_sp, np.log(6.4) / 27.0
    return np.where(hz >= min_log_hz, min_log_mel + np.log(np.maximum(hz, 1e-12) / min_log_hz) / logstep, hz / f_sp)


def mel_to_hz(mel: np.ndarray | float) -> np.ndarray:
    """Inverse of :func:`hz_to_mel`."""
    mel = np.asarray(mel, dtype=np.float64)
    f_sp, min_log_hz = 200.0 / 3.0, 1000.0
    min_log_mel, logstep = min_log_hz / f_sp, np.log(6.4) / 27.0
    return np.where(mel >= min_log_mel, min_log_hz * np.exp(logstep * (mel - min_log_mel)), f_sp * mel)


@lru_cache(maxsize=8)
def mel_filterbank(sample_rate: int = SAMPLE_RATE, n_fft: int = N_FFT, n_mels: int = N_MELS,
                   fmin: float = FMIN_HZ, fmax: float | None = None) -> np.ndarray:
    """``(n_mels, n_fft // 2 + 1)`` float32 triangular filters, each of unit area (read-only)."""
    fmax = sample_rate / 2.0 if fmax is None else fmax
    fft_freqs = np.fft.rfftfreq(n_fft, 1.0 / sample_rate)
    mel_f = mel_to_hz(np.linspace(hz_to_mel(fmin), hz_to_mel(fmax), n_mels + 2))
    fdiff = np.diff(mel_f)
    ramps = mel_f[:, None] - fft_freqs[None, :]
    lower = -ramps[:-2] / fdiff[:-1, None]
    upper = ramps[2:] / fdiff[1:, None]
    weights = np.maximum(0.0, np.minimum(lower, upper))
    weights *= (2.0 / (mel_f[2:n_mels + 2] - mel_f[:n_mels]))[:, None]
    out = weights.astype(np.float32)
    out.setflags(write=False)
    return out


@lru_cache(maxsize=8)
def _window(win_length: int, n_fft: int) -> np.ndarray:
    """Periodic Hann of ``win_length`` centred in ``n_fft`` zeros (read-only)."""
    win = np.zeros(n_fft, dtype=np.float32)
    left = (n_fft - win_length) // 2
    win[left:left + win_length] = 0.5 - 0.5 * np.cos(2.0 * np.pi * np.arange(win_length) / win_length)
    win.setflags(write=False)
    return win


def power_spectrogram(samples: np.ndarray, n_fft: int = N_FFT, win_length: int = WIN_LENGTH,
                      hop_length: int = HOP_LENGTH) -> np.ndarray:
    """``(n_frames, n_fft // 2 + 1)`` float32 power spectrogram with centred, reflect-padded frames."""
    x = np.asarray(samples, dtype=np.float32)
    if x.ndim != 1 or x.shape[0] <= n_fft // 2:
        raise ValueError(f"samples must be 1-D and longer than {n_fft // 2}, got shape {x.shape}")
    padded = np.pad(x, n_fft // 2, mode="reflect")
    count = 1 + (padded.shape[0] - n_fft) // hop_length
    frames = np.lib.stride_tricks.as_strided(
        padded, shape=(count, n_fft), strides=(padded.strides[0] * hop_length, padded.strides[0]), writeable=False)
    spec = scipy.fft.rfft(frames * _window(win_length, n_fft), axis=1)
    return (spec.real * spec.real + spec.imag * spec.imag).astype(np.float32)


def logmel_from_power(power: np.ndarray, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """Log-mel ``(N_MELS, n_frames)`` from :func:`power_spectrogram`'s output."""
    fb = mel_filterbank(sample_rate, (power.shape[1] - 1) * 2, N_MELS)
    return np.log(fb @ power.T + np.float32(LOG_EPS)).astype(np.float32)


def logmel(samples: np.ndarray, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """``float32`` ``(64, n_frames)`` log-mel spectrogram (101 frames for 1 s at 16 kHz)."""
    return logmel_from_power(power_spectrogram(samples), sample_rate)


# --- per-asset acoustics ---------------------------------------------------------------------

@dataclass(frozen=True)
class AssetAcoustics:
    """What audio features need to know about an asset (from ``assets.json``)."""

    bearing_frequencies_hz: Mapping[str, float] = field(default_factory=dict)
    resonance_band_hz: tuple[float, float] | None = None
    bearing_orders: Mapping[str, float] = field(default_factory=dict)
    #: Everything the physics-normalised model inputs need (speed, bearing geometry, nameplate,
    #: regions), parsed from the same entry; ``None`` when built by hand.
    profile: AssetProfile | None = field(default=None, compare=False)

    @classmethod
    def from_registry_entry(cls, entry: Mapping[str, object], top: Mapping[str, object] | None = None
                            ) -> AssetAcoustics:
        """From one ``assets.json`` asset entry (missing keys → defaults; ``top``: the whole document)."""
        profile = AssetProfile.from_entry(entry, top)
        freqs = entry.get("bearing_frequencies_hz") or {}
        orders = entry.get("bearing_orders") or {}
        band = entry.get("resonance_band_hz")
        return cls(
            bearing_frequencies_hz={str(k): float(v) for k, v in dict(freqs).items()},  # type: ignore[call-overload]
            resonance_band_hz=(float(band[0]), float(band[1])) if band else None,  # type: ignore[index]
            bearing_orders={str(k): float(v) for k, v in dict(orders).items()},  # type: ignore[call-overload]
            profile=profile,
        )

    def frequencies(self, shaft_hz: float | None = None) -> dict[str, float]:
        """Defect frequencies: orders × ``shaft_hz`` when both are known, else the nominal ones."""
        if shaft_hz is not None and shaft_hz > 0 and self.bearing_orders:
            return {k: v * shaft_hz for k, v in self.bearing_orders.items()}
        return dict(self.bearing_frequencies_hz)


def as_acoustics(asset: object) -> AssetAcoustics | None:
    """Accept None, :class:`AssetAcoustics`, an ``assets.json`` entry (mapping) or an object
    with an ``acoustics`` attribute (``pipeline.validation.AssetInfo``)."""
    if asset is None or isinstance(asset, AssetAcoustics):
        return asset
    if isinstance(asset, AssetProfile):
        nominal = asset.nominal_shaft_hz
        return AssetAcoustics(
            bearing_frequencies_hz={k: v * nominal for k, v in asset.bearing_orders.items()} if nominal else {},
            resonance_band_hz=asset.resonance_band_hz, bearing_orders=dict(asset.bearing_orders), profile=asset)
    if isinstance(asset, Mapping):
        return AssetAcoustics.from_registry_entry(asset)
    acoustics = getattr(asset, "acoustics", None)
    if isinstance(acoustics, AssetAcoustics):
        return acoustics
    raise TypeError(f"asset must be AssetAcoustics, an assets.json entry or have .acoustics; got {type(asset).__name__}")


# --- envelope analysis -----------------------------------------------------------------------

@dataclass(frozen=True)
class EnvelopeSpectrum:
    """Amplitude spectrum of the band-passed clip's Hilbert envelope."""

    freqs_hz: np.ndarray
    magnitude: np.ndarray


def envelope_spectrum(samples: np.ndarray, sample_rate: int = SAMPLE_RATE,
                      band_hz: tuple[float, float] = DEFAULT_RESONANCE_BAND_HZ) -> EnvelopeSpectrum:
    """Band-pass to ``band_hz`` and take the envelope in one step: keep the clip's FFT bins in
    the band (positive frequencies only = analytic signal), shift them to base band and inverse
    transform at a reduced rate (``|z|`` does not change with the shift); then the envelope's
    amplitude spectrum (mean removed)."""
    x = np.asarray(samples, dtype=np.float32)
    n = x.shape[0]
    duration = n / sample_rate
    spectrum = scipy.fft.rfft(x)
    lo = max(int(np.ceil(band_hz[0] * duration)), 1)
    hi = min(int(np.floor(band_hz[1] * duration)), spectrum.shape[0] - 1)
    if hi <= lo:
        raise ValueError(f"band {band_hz} Hz holds no FFT bin of a {duration:.3f} s clip")
    width = hi - lo + 1
    m = 1 << int(np.ceil(np.log2(2 * width)))  # real envelope of a band of width B needs 2B samples
    baseband = np.zeros(m, dtype=np.complex64)
    baseband[:width] = spectrum[lo:hi + 1] * np.float32(2.0 / n)
    envelope = np.abs(scipy.fft.ifft(baseband) * np.float32(m))
    envelope -= envelope.mean()
    magnitude = np.abs(scipy.fft.rfft(envelope)).astype(np.float64) * (2.0 / m)
    return EnvelopeSpectrum(np.fft.rfftfreq(m, duration / m), magnitude)


def _envelope_stats(env: EnvelopeSpectrum, bearing_hz: Mapping[str, float]) -> dict[str, float]:
    lo, hi = ENV_RANGE_HZ
    in_range = (env.freqs_hz >= lo) & (env.freqs_hz <= hi)
    freqs, mags = env.freqs_hz[in_range], env.magnitude[in_range]
    stats: dict[str, float] = {}
    floor = float(np.median(mags)) + 1e-12
    peaks, _ = find_peaks(mags)
    top = peaks[np.argsort(mags[peaks], kind="stable")[::-1][:ENV_TOP_K]]
    for i in range(ENV_TOP_K):
        stats[f"env_peak{i + 1}_hz"] = float(freqs[top[i]]) if i < top.shape[0] else 0.0
        stats[f"env_peak{i + 1}_rel"] = float(mags[top[i]] / floor) if i < top.shape[0] else 0.0
    energy = mags * mags
    total = float(energy.sum()) + 1e-30
    for key in BEARING_KEYS:
        f0 = bearing_hz.get(key)
        if f0 is None or not (lo <= f0 <= hi):
            stats[f"env_ratio_{key}"] = 0.0
            continue
        tol = max(2.0, 0.04 * f0)
        stats[f"env_ratio_{key}"] = float(energy[np.abs(freqs - f0) <= tol].sum() / total)
    stats["bearing_freqs_available"] = 1.0 if any(k in bearing_hz for k in BEARING_KEYS) else 0.0
    return stats


# --- statistics --------------------------------------------------------------------------------

def _stats_from(samples: np.ndarray, power: np.ndarray, sample_rate: int,
                acoustics: AssetAcoustics | None, shaft_hz: float | None) -> dict[str, float]:
    x = np.asarray(samples, dtype=np.float32)
    rms = float(np.sqrt(np.mean(np.square(x, dtype=np.float64))))
    peak = float(np.max(np.abs(x)))
    freqs = np.fft.rfftfreq((power.shape[1] - 1) * 2, 1.0 / sample_rate)
    mean_power = power.mean(axis=0, dtype=np.float64)
    total = float(mean_power.sum())
    centroid = float((freqs * mean_power).sum() / total) if total > 0 else 0.0
    short = power_spectrogram(x, SK_N_FFT, SK_N_FFT, SK_HOP).astype(np.float64)
    sk_freqs = np.fft.rfftfreq(SK_N_FFT, 1.0 / sample_rate)
    p = short[:, (sk_freqs >= SK_BAND_HZ[0]) & (sk_freqs <= SK_BAND_HZ[1])]
    m2 = p.mean(axis=0)
    sk = (p * p).mean(axis=0) / np.maximum(m2 * m2, 1e-30) - 2.0
    sk[m2 <= SK_MIN_REL_POWER * max(float(m2.max()), 1e-30)] = 0.0
    stats = {
        "rms": rms,
        "rms_dbfs": 20.0 * float(np.log10(max(rms, 1e-10))),
        "peak": peak,
        "crest_factor": peak / rms if rms > 0 else 0.0,
        "clipping_frac": float(np.count_nonzero(np.abs(x) >= CLIP_LEVEL)) / x.shape[0],
        "spectral_centroid_hz": centroid,
        "spectral_kurtosis_max": float(sk.max()),
        "spectral_kurtosis_mean": float(sk.mean()),
    }
    band_hz = (acoustics.resonance_band_hz if acoustics and acoustics.resonance_band_hz
               else DEFAULT_RESONANCE_BAND_HZ)
    bearing = acoustics.frequencies(shaft_hz) if acoustics else {}
    stats.update(_envelope_stats(envelope_spectrum(x, sample_rate, band_hz), bearing))
    return {name: stats[name] for name in AUDIO_STAT_NAMES}


def audio_stats(samples: np.ndarray, sample_rate: int = SAMPLE_RATE, asset: object = None,
                shaft_hz: float | None = None) -> dict[str, float]:
    """Scalar statistics of one clip (keys :data:`AUDIO_STAT_NAMES`). ``asset``: see
    :func:`as_acoustics`; ``shaft_hz`` (e.g. from the PLC ``speed_rpm`` / 60) sharpens the
    bearing frequencies when the registry gives bearing orders."""
    return _stats_from(samples, power_spectrogram(samples), sample_rate, as_acoustics(asset), shaft_hz)


def audio_features(samples: np.ndarray, sample_rate: int = SAMPLE_RATE, asset: object = None,
                   shaft_hz: float | None = None) -> tuple[np.ndarray, dict[str, float]]:
    """``(logmel(...), audio_stats(...))`` computed from one shared STFT."""
    power = power_spectrogram(samples)
    return logmel_from_power(power, sample_rate), _stats_from(samples, power, sample_rate, as_acoustics(asset),
                                                              shaft_hz)
