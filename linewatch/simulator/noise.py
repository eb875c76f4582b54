"""Deterministic randomness for the simulator.

Two kinds of randomness are used:

* **Counter-based noise** (:func:`hash_uniform`, :func:`hash_normal`,
  :func:`value_noise`): a pure function of ``(key, integer index)`` built on the
  SplitMix64 finaliser.  Values for tick ``i`` do not depend on how the timeline
  was chunked, so batch and real-time runs, or runs advanced in 1 s or 10 s
  steps, see identical noise for identical ticks.
* **Per-item generators** (:func:`make_rng`): a fresh ``numpy.random.Generator``
  seeded from a ``SeedSequence`` of ``(seed, *parts)`` for one rendered item
  (one thermal frame, one audio clip, one dataset sample).

String parts are turned into integers with BLAKE2b (Python's ``hash`` is salted
per process and must not be used).
"""

from __future__ import annotations

import hashlib

import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_TWO_POW_53 = float(2**53)


def stable_int(part: int | str) -> int:
    """Map an int or string to a stable non-negative 63-bit integer."""
    if isinstance(part, (int, np.integer)):
        return int(part) & 0x7FFF_FFFF_FFFF_FFFF
    digest = hashlib.blake2b(str(part).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & 0x7FFF_FFFF_FFFF_FFFF


def stream_key(*parts: int | str) -> int:
    """Combine parts into one 63-bit key (order-sensitive)."""
    h = hashlib.blake2b(digest_size=8)
    for p in parts:
        h.update(stable_int(p).to_bytes(8, "little"))
    return int.from_bytes(h.digest(), "little") & 0x7FFF_FFFF_FFFF_FFFF


def make_rng(*parts: int | str) -> np.random.Generator:
    """A ``numpy`` Generator seeded deterministically from ``parts``."""
    return np.random.default_rng(np.random.SeedSequence([stable_int(p) for p in parts]))


def splitmix64(x: np.ndarray) -> np.ndarray:
    """Vectorised SplitMix64 finaliser on ``uint64`` arrays (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        z = x.astype(np.uint64, copy=True) + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
        return z ^ (z >> np.uint64(31))


def hash_uniform(key: int, idx: np.ndarray | int) -> np.ndarray:
    """Uniform ``[0, 1)`` values, a pure function of ``(key, idx)``."""
    i = np.asarray(idx, dtype=np.int64).astype(np.uint64)
    k = splitmix64(np.array([key], dtype=np.uint64))[0]
    with np.errstate(over="ignore"):
        z = splitmix64(i ^ k)
    return (z >> np.uint64(11)).astype(np.float64) / _TWO_POW_53


def hash_normal(key: int, idx: np.ndarray | int) -> np.ndarray:
    """Standard-normal values, a pure function of ``(key, idx)`` (Box–Muller)."""
    u1 = hash_uniform(key, idx)
    u2 = hash_uniform(key ^ 0x5DEECE66D, idx)
    return np.sqrt(-2.0 * np.log1p(-u1)) * np.cos(2.0 * np.pi * u2)


def value_noise(key: int, t: np.ndarray, period: float) -> np.ndarray:
    """Smooth random signal in ``[-1, 1]`` evaluated at times ``t`` (seconds).

    Random values are drawn at knots every ``period`` seconds and joined with a
    smoothstep, so the signal is continuous and changes on a ``period`` scale.
    """
    x = np.asarray(t, dtype=np.float64) / period
    i = np.floor(x)
    f = x - i
    i = i.astype(np.int64)
    v0 = 2.0 * hash_uniform(key, i) - 1.0
    v1 = 2.0 * hash_uniform(key, i + 1) - 1.0
    s = f * f * (3.0 - 2.0 * f)
    return v0 + (v1 - v0) * s


def mixed_coloured_noise(rng: np.random.Generator, n: int, fs: float,
                         components: tuple[tuple[float, float], ...], f_low: float = 20.0) -> np.ndarray:
    """Sum of coloured noises ``sum_i rms_i * noise(exponent_i)`` from a single rFFT pair.

    ``components`` holds ``(exponent, rms)`` pairs: power spectrum ``~ 1/f**exponent``
    above ``f_low`` (0 white, 1 pink, 2 brown), scaled to an expected RMS of ``rms``.
    All components share one white-noise draw (their sum is itself a coloured noise).
    """
    spec = np.fft.rfft(rng.standard_normal(n))
    f = np.fft.rfftfreq(n, 1.0 / fs)
    total = np.zeros_like(f)
    for exponent, rms in components:
        shape = np.where(f < f_low, 0.0, np.power(np.maximum(f, f_low), -exponent / 2.0))
        norm = np.sqrt(np.mean(shape * shape))  # Parseval: RMS of shaped unit-variance white noise
        total += rms * shape / max(norm, 1e-12)
    return np.fft.irfft(spec * total, n)
