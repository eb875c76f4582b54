"""LIME weights mapped onto what an engineer looks at, and the PNGs.

* **Thermal.** The model reads region statistics of the frame (``thermal_regions``), not pixels; a
  feature's weight is spread over the ``assets.json`` boxes of the regions it reads (a relation
  such as ``rel.de_minus_body`` over both), frame-wide features (``global.*``) over the whole frame.
  The map shows what the model's decision rests on, at the resolution the model sees it.
* **Audio.** The model reads clip-level features (medians over 1 s segments) at known frequencies:
  shaft orders, band shares, spectral-kurtosis bands and envelope (demodulation) bands. A feature's
  weight goes to the log-mel rows of its frequencies, the same for every frame: the model has no
  time resolution to show.
* **PLC.** Feature bars.

>>> wmap = thermal_weight_map((12, 16), {"de_bearing": (10, 4, 14, 8)}, ["de_bearing.max_rise"], np.array([0.3]))
>>> float(wmap[5, 11]), float(wmap[0, 0])
(0.30000001192092896, 0.0)
"""

from __future__ import annotations

from typing import Any

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from governance.explain.signals import audio_bands_hz, thermal_regions_of
from pipeline.features.asset_profile import AssetProfile
from pipeline.features.audio_features import hz_to_mel, mel_to_hz

_NOT_LOCATED = (".present", "regions_available", "orientation_known", "baseline_available")
Box = tuple[int, int, int, int]


def thermal_weight_map(shape: tuple[int, int], boxes: Mapping[str, Box], names: Sequence[str],
                       weights: NDArray[Any]) -> NDArray[Any]:
    """``float32`` (H, W) map: each feature's weight over the boxes of the regions it reads."""
    out = np.zeros(shape, np.float64)
    for name, w in zip(names, np.asarray(weights, np.float64), strict=True):
        if w == 0.0 or name.endswith(_NOT_LOCATED):
            continue
        regions = [r for r in thermal_regions_of(name) if r in boxes]
        if not regions:
            if name.startswith("global."):
                out += w
            continue
        for region in regions:
            x0, y0, x1, y1 = boxes[region]
            out[y0:y1, x0:x1] += w / len(regions)
    return out.astype(np.float32)


def mel_band_edges_hz(n_mels: int, sample_rate: int = 16_000) -> NDArray[Any]:
    """``(n_mels, 2)`` lower/upper edge (Hz) of each triangular mel filter (pipeline.features.audio_features)."""
    mel_f = mel_to_hz(np.linspace(float(hz_to_mel(0.0)), float(hz_to_mel(sample_rate / 2.0)), n_mels + 2))
    return np.stack([mel_f[:-2], mel_f[2:]], axis=1)


def audio_weight_map(shape: tuple[int, int], names: Sequence[str], weights: NDArray[Any], vector: NDArray[Any],
                     profile: AssetProfile | None = None) -> NDArray[Any]:
    """``float32`` (n_mels, n_frames) map: each feature's weight on the mel rows of its frequencies."""
    n_mels, n_frames = shape
    edges = mel_band_edges_hz(n_mels)
    rows = np.zeros(n_mels, np.float64)
    for name, w in zip(names, np.asarray(weights, np.float64), strict=True):
        if w == 0.0:
            continue
        hit = np.zeros(n_mels, bool)
        for lo, hi in audio_bands_hz(name, vector, profile):
            overlap = (edges[:, 0] < hi) & (edges[:, 1] > lo)
            if not overlap.any():
                overlap[int(np.argmin(np.abs(edges.mean(axis=1) - 0.5 * (lo + hi))))] = True
            hit |= overlap
        if hit.any():
            rows[hit] += w / hit.sum() * max(1.0, hit.sum() / 4.0)
    return np.repeat(rows[:, None], n_frames, axis=1).astype(np.float32)


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _bars(ax, top: Sequence[tuple[str, float]], title: str) -> None:  # type: ignore[no-untyped-def]
    names = [n for n, _ in top][::-1]
    vals = [w for _, w in top][::-1]
    ax.barh(names, vals, color=["#c0392b" if v > 0 else "#2471a3" for v in vals])
    ax.axvline(0.0, color="black", linewidth=0.8)
    ax.set_title(title, fontsize=9)
    ax.tick_params(labelsize=7)
    ax.set_xlabel("LIME weight (+ towards the class)", fontsize=8)


def _limit(wmap: NDArray[Any]) -> float:
    return float(np.max(np.abs(wmap))) or 1.0


def thermal_png(path: Path, frame: NDArray[Any], wmap: NDArray[Any], boxes: Mapping[str, Box],
                top: Sequence[tuple[str, float]], title: str) -> Path:
    """Frame (grey) with the weight map (red: towards the class) and the region boxes; top-feature bars."""
    plt = _pyplot()
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 3.6), gridspec_kw={"width_ratios": [1.2, 1]})
    ax.imshow(np.asarray(frame, np.float32), cmap="gray")
    lim = _limit(wmap)
    im = ax.imshow(wmap, cmap="RdBu_r", vmin=-lim, vmax=lim, alpha=0.55)
    for name, (x0, y0, x1, y1) in boxes.items():
        ax.add_patch(plt.Rectangle((x0 - 0.5, y0 - 0.5), x1 - x0, y1 - y0, fill=False, color="yellow", lw=0.8))
        ax.text(x0, y0 - 1, name, color="yellow", fontsize=6)
    ax.set_title(title, fontsize=9)
    ax.axis("off")
    fig.colorbar(im, ax=ax, fraction=0.035)
    _bars(bx, top, "top features (thermal model input)")
    return _save(fig, path)


def audio_png(path: Path, logmel: NDArray[Any], wmap: NDArray[Any], top: Sequence[tuple[str, float]], title: str) -> Path:
    """Log-mel (grey) with the weight map per mel row; top-feature bars."""
    plt = _pyplot()
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 3.6), gridspec_kw={"width_ratios": [1.2, 1]})
    ax.imshow(np.asarray(logmel, np.float32), origin="lower", aspect="auto", cmap="gray")
    lim = _limit(wmap)
    im = ax.imshow(wmap, origin="lower", aspect="auto", cmap="RdBu_r", vmin=-lim, vmax=lim, alpha=0.55)
    ax.set_xlabel("frame (10 ms)", fontsize=8)
    ax.set_ylabel("mel band", fontsize=8)
    ax.set_title(title, fontsize=9)
    fig.colorbar(im, ax=ax, fraction=0.035)
    _bars(bx, top, "top features (audio model input)")
    return _save(fig, path)


def bars_png(path: Path, top: Sequence[tuple[str, float]], title: str) -> Path:
    """Feature bars (PLC)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.2))
    _bars(ax, top, title)
    return _save(fig, path)


def _save(fig, path: Path) -> Path:  # type: ignore[no-untyped-def]
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    tmp = path.with_name(f".{path.name}.tmp")
    fig.savefig(tmp, dpi=90, format="png")
    plt.close(fig)
    tmp.replace(path)
    return path
