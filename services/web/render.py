"""Server-side PNG plots (matplotlib, Agg canvas, no pyplot global state): thermal frames with a temperature
scale, spectrograms, PLC trends, LIME heatmaps and feature bars, drift p-values and distributions.

Every function returns PNG bytes; a page embeds them as ``<img>`` with a text alternative.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from linewatch.contract import DriftReport, FeatureWeight, PlcFeatures, ThermalFeatures
from linewatch.contract.plc_tags import PLC_TAGS, TAG_UNITS
from services.web.data import frame_celsius


def _png(fig: Figure) -> bytes:
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    return buf.getvalue()


def message_png(text: str, size: tuple[float, float] = (6.0, 1.2)) -> bytes:
    """A small image that says why there is no plot (e.g. no data yet)."""
    fig = Figure(figsize=size)
    fig.text(0.5, 0.5, text, ha="center", va="center", fontsize=11)
    return _png(fig)


def thermal_png(f: ThermalFeatures) -> bytes:
    """False-colour frame in degrees Celsius with its scale (see ``data.frame_celsius``)."""
    celsius, exact = frame_celsius(f)
    fig = Figure(figsize=(6.4, 4.4))
    ax = fig.add_subplot()
    im = ax.imshow(celsius, cmap="inferno", interpolation="nearest")
    cb = fig.colorbar(im, ax=ax)
    cb.set_label("temperature (°C)")
    amb = f.stats.get("ambient_c", float("nan"))
    mx = f.stats.get("max_c", float(np.max(celsius)))
    title = f"{f.asset_id} thermal  ambient {amb:.1f} °C  max {mx:.1f} °C"
    if not exact:
        title += "\n(scale saturates at ambient −25/+100 K; max is the camera's)"
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("pixel")
    ax.set_ylabel("pixel")
    return _png(fig)


def spectrogram_png(logmel: NDArray[np.float32], title: str, hop_ms: float = 10.0) -> bytes:
    fig = Figure(figsize=(6.4, 3.6))
    ax = fig.add_subplot()
    n_mels, n_frames = logmel.shape
    im = ax.imshow(logmel, origin="lower", aspect="auto", cmap="magma",
                   extent=(0.0, n_frames * hop_ms / 1000.0, 0.0, float(n_mels)))
    fig.colorbar(im, ax=ax).set_label("ln(mel power)")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("mel band (0–8 kHz)")
    ax.set_title(title, fontsize=9)
    return _png(fig)


def plc_trends_png(windows: Sequence[PlcFeatures], now_ms: int) -> bytes:
    """Each PLC tag's window mean over the last hour (x: minutes before now)."""
    if not windows:
        return message_png("no PLC feature windows in the last hour")
    names = windows[0].feature_names
    fig = Figure(figsize=(7.2, 1.25 * len(PLC_TAGS) + 0.6))
    axes = fig.subplots(len(PLC_TAGS), 1, sharex=True)
    t = np.array([(w.event_time_ms - now_ms) / 60000.0 for w in windows])
    for ax, tag in zip(axes, PLC_TAGS, strict=True):
        key = f"{tag}.mean"
        if key in names:
            i = names.index(key)
            ax.plot(t, [float(w.values[i]) if i < w.values.size else math.nan for w in windows], lw=1.0)
        ax.set_ylabel(f"{tag}\n({TAG_UNITS.get(tag, '')})", fontsize=7, rotation=0, ha="right", va="center")
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel("minutes before now (window means)")
    fig.suptitle(f"{windows[-1].asset_id} PLC trends, last hour ({len(windows)} windows)", fontsize=9)
    fig.subplots_adjust(left=0.22, right=0.98, top=0.95, bottom=0.07, hspace=0.25)
    return _png(fig)


def heatmap_png(heatmap: NDArray[np.float32], base: NDArray[np.float32] | None, title: str, base_label: str) -> bytes:
    """LIME weights (diverging colours, towards the explained class red) over the explained input (grey)."""
    fig = Figure(figsize=(6.4, 4.4))
    ax = fig.add_subplot()
    hm = np.asarray(heatmap, np.float32)
    vmax = float(np.max(np.abs(hm))) or 1.0
    if base is not None and base.shape == hm.shape:
        ax.imshow(base, cmap="gray", origin="upper" if base_label == "frame" else "lower", aspect="auto")
        im = ax.imshow(hm, cmap="RdBu_r", vmin=-vmax, vmax=vmax, alpha=0.55,
                       origin="upper" if base_label == "frame" else "lower", aspect="auto")
        title += f" (over the {base_label})"
    else:
        im = ax.imshow(hm, cmap="RdBu_r", vmin=-vmax, vmax=vmax, aspect="auto",
                       origin="upper" if base_label == "frame" else "lower")
        if base is not None:
            title += f" (input {base.shape} ≠ heatmap {hm.shape}: heatmap alone)"
    fig.colorbar(im, ax=ax).set_label("LIME weight (red: for the class)")
    ax.set_title(title, fontsize=9)
    return _png(fig)


def feature_bars_png(features: Sequence[FeatureWeight], title: str) -> bytes:
    if not features:
        return message_png("no feature weights in this explanation")
    feats = list(features)[:12][::-1]
    fig = Figure(figsize=(6.8, 0.38 * len(feats) + 1.2))
    ax = fig.add_subplot()
    weights = [f.weight for f in feats]
    colours = ["#b2182b" if w > 0 else "#2166ac" for w in weights]
    bars = ax.barh(range(len(feats)), weights, color=colours)
    for bar, f in zip(bars, feats, strict=True):
        if f.weight <= 0:
            bar.set_hatch("//")
    ax.set_yticks(range(len(feats)), [f"{f.name}" + (f" = {f.value:.3g}" if f.value is not None else "")
                                      for f in feats], fontsize=8)
    ax.axvline(0, color="black", lw=0.8)
    ax.set_xlabel("LIME weight (solid red: for the class, hatched blue: against)")
    ax.set_title(title, fontsize=9)
    fig.subplots_adjust(left=0.45, right=0.97)
    return _png(fig)


def drift_pvalues_png(reports: Sequence[DriftReport], alpha: float = 0.05, top: int = 8) -> bytes:
    """Adjusted p-value of the most drifted features per window (log scale, the alpha line dashed)."""
    series: dict[str, list[tuple[float, float]]] = {}
    for r in reports:
        if r.kind != "feature":
            continue
        for f in r.features:
            key = f"{r.asset_id}/{r.modality}/{f.name}"
            series.setdefault(key, []).append((r.window_end_ms / 1000.0, max(f.p_adjusted, 1e-12)))
    if not series:
        return message_png("no feature drift reports yet")
    ranked = sorted(series, key=lambda k: min(p for _, p in series[k]))[:top]
    t_end = max(t for k in ranked for t, _ in series[k])
    fig = Figure(figsize=(7.2, 3.8))
    ax = fig.add_subplot()
    markers = "os^vD<>p"
    for i, key in enumerate(ranked):
        pts = sorted(series[key])
        ax.plot([(t - t_end) / 60.0 for t, _ in pts], [p for _, p in pts], marker=markers[i % len(markers)],
                ms=3, lw=1, label=key)
    ax.axhline(alpha, color="black", ls="--", lw=1, label=f"alpha {alpha:g}")
    ax.set_yscale("log")
    ax.set_xlabel("minutes before the newest window")
    ax.set_ylabel("adjusted p-value")
    ax.legend(fontsize=6, loc="lower left")
    ax.set_title("feature drift: adjusted p-values over time (lower: stronger drift)", fontsize=9)
    return _png(fig)


def shadow_png(reports: Sequence[DriftReport]) -> bytes:
    pts = sorted((r.window_end_ms / 1000.0, r.error_rate, f"{r.modality}") for r in reports
                 if r.kind == "shadow" and r.error_rate is not None)
    if not pts:
        return message_png("no shadow-teacher reports yet")
    t_end = pts[-1][0]
    fig = Figure(figsize=(7.2, 3.0))
    ax = fig.add_subplot()
    for modality in sorted({m for _, _, m in pts}):
        sel = [(t, e) for t, e, m in pts if m == modality]
        ax.plot([(t - t_end) / 60.0 for t, _ in sel], [e for _, e in sel], marker="o", ms=3, label=modality)
    ax.set_ylim(0, 1)
    ax.set_xlabel("minutes before the newest window")
    ax.set_ylabel("student ≠ teacher")
    ax.legend(fontsize=7)
    ax.set_title("shadow teacher disagreement rate", fontsize=9)
    return _png(fig)


def distribution_png(reference: NDArray[np.float32], live: NDArray[np.float32], name: str) -> bytes:
    ref = reference[np.isfinite(reference)]
    liv = live[np.isfinite(live)]
    if ref.size == 0 or liv.size == 0:
        return message_png(f"{name}: no {'reference' if ref.size == 0 else 'live'} values")
    lo, hi = float(min(ref.min(), liv.min())), float(max(ref.max(), liv.max()))
    bins = np.linspace(lo, hi if hi > lo else lo + 1.0, 30).tolist()
    fig = Figure(figsize=(6.4, 3.2))
    ax = fig.add_subplot()
    ax.hist(ref, bins=bins, density=True, alpha=0.5, label=f"reference (n={ref.size})", color="#4d4d4d")
    ax.hist(liv, bins=bins, density=True, histtype="step", lw=2, label=f"live (n={liv.size})", color="#d6604d")
    ax.set_xlabel(name)
    ax.set_ylabel("density")
    ax.legend(fontsize=8)
    ax.set_title(f"{name}: reference vs live", fontsize=9)
    return _png(fig)
