"""Thermal frame features: statistics in °C and the normalized frame the models read.

Frames are ``uint16`` ``(120, 160)`` in centikelvin (K × 100). The ambient estimate is a
robust low percentile of the frame (:data:`AMBIENT_PERCENTILE`): the background of a
machine scene is the cool majority of pixels, and a percentile ignores a few dead pixels.
A hotspot pixel is one warmer than ``ambient + hotspot_delta_k``.

Statistics (keys of :func:`thermal_stats`, all finite floats):

``max_c``, ``mean_c``, ``p99_c``, ``ambient_c`` (°C); ``max_above_ambient_k``;
``hotspot_area_frac`` (fraction of pixels); ``hotspot_cx``, ``hotspot_cy`` (centroid of the
hotspot pixels, pixel centres normalized to [0, 1] by width/height; the hottest pixel's
position when there is no hotspot); ``baseline_available`` (0/1), ``delta_baseline_max_k`` and
``delta_baseline_mean_k`` (frame minus the asset's running baseline; 0 without baseline);
with ``regions`` given, ``<region>.max_c`` and ``<region>.mean_c`` for each of
:data:`THERMAL_REGIONS` present.

>>> frame = np.full((120, 160), 29315, np.uint16)           # 20 °C everywhere
>>> frame[10:20, 40:60] = 32315                              # a 50 °C rectangle
>>> s = thermal_stats(frame)
>>> s["max_c"], s["ambient_c"], s["hotspot_area_frac"], s["hotspot_cx"], s["hotspot_cy"]
(50.0, 20.0, 0.010416666666666666, 0.3125, 0.125)
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

FRAME_SHAPE: tuple[int, int] = (120, 160)
THERMAL_MODEL_INPUT_SHAPE: tuple[int, int] = (120, 160)
"""Shape of :func:`normalize_frame`'s output, the thermal model's input (one channel,
height × width). The full resolution is kept: hotspots of a bearing or a terminal lug are
only a few pixels wide, and the student model runs in ~0.3–0.7 ms at this size (PROBES)."""

KELVIN_OFFSET_C = 273.15
AMBIENT_PERCENTILE = 10.0
HOTSPOT_DELTA_K = 15.0
NORMALIZE_SCALE_K = 25.0
"""Normalized frame = (frame − ambient) / 25 K, clipped to [NORMALIZE_MIN, NORMALIZE_MAX]:
−1 is 25 K below ambient, 4 is 100 K above."""
NORMALIZE_MIN = -1.0
NORMALIZE_MAX = 4.0

THERMAL_REGIONS: tuple[str, ...] = ("motor_body", "de_bearing", "nde_bearing", "terminal_box", "coupling", "driven")
"""Region names of ``assets.json`` (``regions``: ``[x0, y0, x1, y1]``, x1/y1 exclusive) that get
their own statistics when regions are passed."""


def ck_to_c(value_ck: float) -> float:
    """Centikelvin to °C: ``29315`` → ``20.0``."""
    return float(value_ck) / 100.0 - KELVIN_OFFSET_C


def frame_percentiles(frame_ck: np.ndarray, qs: tuple[float, ...]) -> tuple[float, ...]:
    """Percentiles of a frame, equal to ``np.percentile(frame, qs)`` (linear interpolation).

    For integer frames (``uint16``) the order statistics come from a histogram of the value
    range (``bincount`` + ``cumsum``), ~3× cheaper than the partition ``np.percentile`` uses.

    >>> f = np.random.default_rng(0).integers(29000, 33000, (120, 160)).astype(np.uint16)
    >>> frame_percentiles(f, (10.0, 99.0)) == tuple(float(v) for v in np.percentile(f, [10.0, 99.0]))
    True
    """
    flat = np.asarray(frame_ck).ravel()
    if flat.dtype.kind not in "ui" or flat.size == 0:
        return tuple(float(v) for v in np.percentile(flat, qs))
    low = int(flat.min())
    cum = np.cumsum(np.bincount((flat - low).astype(np.intp, copy=False)))
    last = flat.size - 1
    out = []
    for q in qs:
        pos = q / 100.0 * last
        k = int(np.floor(pos))
        v_lo = int(np.searchsorted(cum, k + 1))  # value of the k-th smallest (0-based)
        v_hi = int(np.searchsorted(cum, min(k + 2, flat.size)))
        out.append(low + v_lo + (pos - k) * (v_hi - v_lo))
    return tuple(float(v) for v in out)


def ambient_ck(frame_ck: np.ndarray) -> float:
    """Robust ambient estimate of a frame in centikelvin (its 10th percentile)."""
    return frame_percentiles(frame_ck, (AMBIENT_PERCENTILE,))[0]


def thermal_stats(
    frame_ck: np.ndarray,
    baseline_ck: np.ndarray | None = None,
    regions: Mapping[str, tuple[int, int, int, int] | list[int]] | None = None,
    hotspot_delta_k: float = HOTSPOT_DELTA_K,
) -> dict[str, float]:
    """Statistics of one frame (see the module docstring for the keys)."""
    p_amb, p99 = frame_percentiles(frame_ck, (AMBIENT_PERCENTILE, 99.0))
    return _stats(np.asarray(frame_ck), p_amb, p99, baseline_ck, regions, hotspot_delta_k)


def _stats(frame: np.ndarray, p_amb: float, p99: float, baseline_ck: np.ndarray | None,
           regions: Mapping[str, tuple[int, int, int, int] | list[int]] | None,
           hotspot_delta_k: float) -> dict[str, float]:
    if frame.ndim != 2:
        raise ValueError(f"frame must be 2-D (H, W), got shape {frame.shape}")
    f = frame.astype(np.float32)
    fmax = float(f.max())
    height, width = f.shape
    threshold = p_amb + hotspot_delta_k * 100.0
    hot = f > threshold
    n_hot = int(np.count_nonzero(hot))
    if n_hot:  # centroid from the row/column projections of the mask (cheaper than np.nonzero)
        cx = (float(np.count_nonzero(hot, axis=0) @ np.arange(width)) / n_hot + 0.5) / width
        cy = (float(np.count_nonzero(hot, axis=1) @ np.arange(height)) / n_hot + 0.5) / height
    else:
        y_max, x_max = np.unravel_index(int(np.argmax(f)), f.shape)
        cx, cy = (x_max + 0.5) / width, (y_max + 0.5) / height
    stats = {
        "max_c": ck_to_c(fmax),
        "mean_c": ck_to_c(float(frame.mean(dtype=np.float64))),
        "p99_c": ck_to_c(float(p99)),
        "ambient_c": ck_to_c(float(p_amb)),
        "max_above_ambient_k": (fmax - float(p_amb)) / 100.0,
        "hotspot_area_frac": n_hot / f.size,
        "hotspot_cx": cx,
        "hotspot_cy": cy,
        "baseline_available": 0.0,
        "delta_baseline_max_k": 0.0,
        "delta_baseline_mean_k": 0.0,
    }
    if baseline_ck is not None:
        if baseline_ck.shape != f.shape:
            raise ValueError(f"baseline shape {baseline_ck.shape} differs from frame shape {f.shape}")
        delta = f - baseline_ck.astype(np.float32)
        stats["baseline_available"] = 1.0
        stats["delta_baseline_max_k"] = float(delta.max()) / 100.0
        stats["delta_baseline_mean_k"] = float(delta.mean(dtype=np.float64)) / 100.0
    if regions:
        for name in THERMAL_REGIONS:
            box = regions.get(name)
            if box is None:
                continue
            x0, y0, x1, y1 = (int(v) for v in box)
            patch = f[max(y0, 0):min(y1, height), max(x0, 0):min(x1, width)]
            if patch.size == 0:
                continue
            stats[f"{name}.max_c"] = ck_to_c(float(patch.max()))
            stats[f"{name}.mean_c"] = ck_to_c(float(patch.mean(dtype=np.float64)))
    return stats


def normalize_frame(frame_ck: np.ndarray, ambient: float | None = None) -> np.ndarray:
    """The model input: ``(frame − ambient) / 25 K`` clipped to [−1, 4], ``float16`` ``(120, 160)``.

    Subtracting the frame's own ambient makes the input independent of the room temperature
    and of per-camera offsets. ``ambient`` (centikelvin) defaults to :func:`ambient_ck`.

    >>> frame = np.full((120, 160), 29315, np.uint16); frame[0, 0] = 39315
    >>> n = normalize_frame(frame); n.dtype.name, n.shape, float(n[0, 0]), float(n[1, 1])
    ('float16', (120, 160), 4.0, 0.0)
    """
    f = np.asarray(frame_ck, dtype=np.float32)
    amb = ambient_ck(frame_ck) if ambient is None else float(ambient)
    out = (f - amb) * np.float32(1.0 / (NORMALIZE_SCALE_K * 100.0))
    np.clip(out, NORMALIZE_MIN, NORMALIZE_MAX, out=out)
    return out.astype(np.float16)


class ThermalBaseline:
    """Running per-asset baseline frame: an exponentially weighted mean (EWMA) of frames.

    ``alpha`` is the weight of a new frame (0.02 ≈ a memory of 50 frames); the baseline is
    available after ``min_frames`` updates. Update it only with frames the pipeline accepted;
    a slowly developing fault is absorbed at the EWMA's pace, which is what makes
    ``delta_baseline_*`` measure *recent* change (documented in docs/features.md).

    >>> b = ThermalBaseline(alpha=0.5, min_frames=2)
    >>> b.update(np.full((2, 2), 30000, np.uint16)); b.baseline_ck is None
    True
    >>> b.update(np.full((2, 2), 31000, np.uint16)); float(b.baseline_ck[0, 0])
    30500.0
    """

    def __init__(self, alpha: float = 0.02, min_frames: int = 10) -> None:
        if not 0.0 < alpha <= 1.0:
            raise ValueError("alpha must be in (0, 1]")
        self.alpha = alpha
        self.min_frames = min_frames
        self.n_frames = 0
        self._mean: np.ndarray | None = None

    def update(self, frame_ck: np.ndarray) -> None:
        f = np.asarray(frame_ck, dtype=np.float32)
        if self._mean is None or self._mean.shape != f.shape:
            self._mean = f.copy()
            self.n_frames = 1
            return
        self._mean += np.float32(self.alpha) * (f - self._mean)
        self.n_frames += 1

    @property
    def baseline_ck(self) -> np.ndarray | None:
        """The baseline (``float32`` centikelvin) once ``min_frames`` were seen, else None."""
        return self._mean if self.n_frames >= self.min_frames else None

    def to_bytes(self) -> bytes:
        """Snapshot for Flink state: int64 ``(n_frames, min_frames, h, w)``, float64 ``alpha``,
        then the float32 mean (little-endian, C order; empty before the first frame).

        >>> b = ThermalBaseline(alpha=0.5, min_frames=1); b.update(np.full((2, 3), 30000, np.uint16))
        >>> c = ThermalBaseline.from_bytes(b.to_bytes())
        >>> (c.alpha, c.min_frames, c.n_frames, c.baseline_ck.shape)
        (0.5, 1, 1, (2, 3))
        """
        h, w = (0, 0) if self._mean is None else self._mean.shape
        header = np.array([self.n_frames, self.min_frames, h, w], dtype="<i8").tobytes()
        body = b"" if self._mean is None else np.ascontiguousarray(self._mean, dtype="<f4").tobytes()
        return header + np.array([self.alpha], dtype="<f8").tobytes() + body

    @classmethod
    def from_bytes(cls, raw: bytes) -> ThermalBaseline:
        """Inverse of :meth:`to_bytes`."""
        n_frames, min_frames, h, w = (int(x) for x in np.frombuffer(raw[:32], dtype="<i8"))
        baseline = cls(alpha=float(np.frombuffer(raw[32:40], dtype="<f8")[0]), min_frames=min_frames)
        if h and w:
            baseline._mean = np.frombuffer(raw[40:], dtype="<f4").reshape(h, w).astype(np.float32)
            baseline.n_frames = n_frames
        return baseline


def thermal_features(
    frame_ck: np.ndarray,
    baseline_ck: np.ndarray | None = None,
    regions: Mapping[str, tuple[int, int, int, int] | list[int]] | None = None,
) -> tuple[dict[str, float], np.ndarray]:
    """Both outputs at once: ``(thermal_stats(...), normalize_frame(...))`` sharing the ambient."""
    p_amb, p99 = frame_percentiles(frame_ck, (AMBIENT_PERCENTILE, 99.0))
    stats = _stats(np.asarray(frame_ck), p_amb, p99, baseline_ck, regions, HOTSPOT_DELTA_K)
    return stats, normalize_frame(frame_ck, p_amb)
