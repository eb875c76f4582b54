"""Labelled training data: independent scenarios rendered per sample.

Each sample draws an asset from a fleet of ``config.dataset_fleet_size``
machines, a class (balanced: ``samples_per_class`` per class in
``FAULT_CLASSES``; cavitation only on pumps), a severity from the difficulty
profile (``LABEL_THRESHOLD + (1 - LABEL_THRESHOLD) * Beta(a, b)``, so many
faults are early-stage and subtle), an operating point (load, hall ambient,
time of day / press phase) and, on ``config.drift_fraction`` of samples, one
sensor drift.  A share (``config.dataset_incipient_share``) of ``normal``
samples carries a sub-threshold fault (severity < ``LABEL_THRESHOLD``), so
classes overlap at low severity exactly as the label definition says.

Per sample the same renderers as the streaming factory produce one thermal
frame at the sample time ``T``, one audio clip covering ``[T - chunk, T)``
and a PLC window of ``config.dataset_plc_window_s`` seconds whose last tick
is at ``T``.
"""

from __future__ import annotations

import csv
import io
import json
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from .assets import Asset, asset_registry_json, make_fleet
from .audio import AudioRenderer, ClipDrive
from .config import SimulatorConfig
from .drift import DRIFT_KINDS, constant_drift
from .health import FAULT_CLASSES, FAULT_INDEX, LABEL_THRESHOLD, VARIANTS, constant_health, faults_for
from .noise import make_rng
from .physics import AssetPhysics
from .plc import PlcSamples, format_lines, measure, plc_file_text
from .tags import PLC_TAGS
from .thermal import ThermalCamera
from .timefmt import iso_ms
from .writer import atomic_write_bytes, atomic_write_text, encode_tiff, encode_wav

MODALITIES: tuple[str, ...] = ("plc", "thermal", "audio")
LABEL_COLUMNS: tuple[str, ...] = ("sample_id", "asset_id", "asset_type", "fault", "severity", "drift",
                                  "plc_path", "thermal_path", "audio_path")


@dataclass(frozen=True)
class SampleSpec:
    """A drawn scenario.

    ``fault`` is the label; ``physical_fault``/``severity`` what is physically
    present (for ``normal`` samples with an incipient fault: that fault and a
    severity below ``LABEL_THRESHOLD``).
    """

    sample_id: str
    index: int
    asset_id: str
    asset_type: str
    fault: str
    physical_fault: str
    severity: float
    variant: str
    drift: str
    drift_level: float
    drift_sign: float
    load_level: float
    ambient_offset_c: float
    t_s: float


@dataclass
class RenderedSample:
    """Rendered sensor data of one sample (``None`` for modalities not requested)."""

    spec: SampleSpec
    plc: PlcSamples | None
    frame: np.ndarray | None
    clip: np.ndarray | None


@dataclass
class DatasetArrays:
    """In-memory dataset.

    ``y[i]`` is the class index into ``FAULT_CLASSES``; ``plc`` has shape
    ``(N, T, 7)`` (tag order ``PLC_TAGS``) with ``plc_quality`` alongside,
    ``thermal`` ``(N, 120, 160)`` uint16 centikelvin, ``audio`` ``(N, samples)``
    int16.
    """

    specs: list[SampleSpec]
    y: np.ndarray
    plc: np.ndarray | None
    plc_quality: np.ndarray | None
    thermal: np.ndarray | None
    audio: np.ndarray | None
    fleet: list[Asset]
    classes: tuple[str, ...] = FAULT_CLASSES
    tags: tuple[str, ...] = PLC_TAGS


@dataclass
class DatasetSummary:
    """What :func:`generate_dataset` wrote."""

    out_dir: Path
    labels_path: Path
    n_samples: int
    per_class: dict[str, int]
    wall_seconds: float


def dataset_fleet(config: SimulatorConfig) -> list[Asset]:
    """The fleet samples are drawn from (``config.dataset_fleet_size`` assets)."""
    return make_fleet(config.dataset_fleet_size, config.seed, line_frequency_hz=config.line_frequency_hz,
                      variation=config.profile.asset_variation)


def draw_specs(samples_per_class: int, config: SimulatorConfig, fleet: list[Asset]) -> list[SampleSpec]:
    """Draw balanced, shuffled scenarios (deterministic in ``config.seed``)."""
    prof = config.profile
    rng = make_rng(config.seed, "dataset", config.difficulty)
    pumps = [a for a in fleet if a.asset_type == "pump"]
    raw = []
    for label in FAULT_CLASSES:
        pool = pumps if label == "cavitation" else fleet
        for _ in range(samples_per_class):
            asset = pool[int(rng.integers(len(pool)))]
            if label == "normal":
                if rng.random() < config.dataset_incipient_share:
                    phys = str(rng.choice(faults_for(asset.asset_type)))
                    sev = float(rng.uniform(0.005, LABEL_THRESHOLD * 0.98))
                else:
                    phys, sev = "normal", 0.0
            else:
                phys = label
                sev = float(LABEL_THRESHOLD + (1 - LABEL_THRESHOLD) * rng.beta(prof.severity_a, prof.severity_b))
            variant = str(rng.choice(VARIANTS[phys])) if phys != "normal" else ""
            if rng.random() < config.drift_fraction:
                drift = str(rng.choice(DRIFT_KINDS))
                level = float(rng.uniform(0.3, 1.0) * prof.drift_magnitude)
                sign = 1.0 if (drift == "ambient_shift" and rng.random() < 0.75) else float(rng.choice([-1.0, 1.0]))
            else:
                drift, level, sign = "none", 0.0, 1.0
            load = float(rng.uniform(-1.0, 1.0))
            amb = float(rng.uniform(-6.0, 8.0) * prof.operating_spread)
            t_s = float(np.round(rng.uniform(60.0, 86400.0) * config.plc_rate_hz) / config.plc_rate_hz)
            raw.append((asset, label, phys, sev, variant, drift, level, sign, load, amb, t_s))
    order = rng.permutation(len(raw))
    specs = []
    for i, j in enumerate(order):
        asset, label, phys, sev, variant, drift, level, sign, load, amb, t_s = raw[int(j)]
        specs.append(SampleSpec(sample_id=f"S{i + 1:06d}", index=i, asset_id=asset.asset_id,
                                asset_type=asset.asset_type, fault=label, physical_fault=phys, severity=sev,
                                variant=variant, drift=drift, drift_level=level, drift_sign=sign,
                                load_level=load, ambient_offset_c=amb, t_s=t_s))
    return specs


def make_spec(asset: Asset, fault: str, severity: float, *, index: int = 0, variant: str | None = None,
              drift: str = "none", drift_level: float = 0.0, drift_sign: float = 1.0, load_level: float = 0.0,
              ambient_offset_c: float = 0.0, t_s: float = 1000.0) -> SampleSpec:
    """Hand-made scenario (for tests, demos and what-if analyses).

    ``fault`` is the physically present fault; the label follows
    :func:`~.health.label_for`.  ``index`` selects the noise realisation.
    """
    if variant is None:
        variant = VARIANTS[fault][0] if fault != "normal" else ""
    label = fault if (fault != "normal" and severity >= LABEL_THRESHOLD) else "normal"
    return SampleSpec(sample_id=f"X{index:06d}", index=index, asset_id=asset.asset_id, asset_type=asset.asset_type,
                      fault=label, physical_fault=fault, severity=float(severity), variant=variant, drift=drift,
                      drift_level=float(drift_level), drift_sign=float(drift_sign), load_level=float(load_level),
                      ambient_offset_c=float(ambient_offset_c), t_s=float(t_s))


class SampleRenderer:
    """Renders :class:`SampleSpec` objects with per-asset cameras and microphones cached."""

    def __init__(self, config: SimulatorConfig, fleet: list[Asset]) -> None:
        self.config = config
        self.profile = config.profile
        self.assets = {a.asset_id: a for a in fleet}
        self._cams: dict[str, ThermalCamera] = {}
        self._mics: dict[str, AudioRenderer] = {}

    def render(self, spec: SampleSpec, modalities: tuple[str, ...] = MODALITIES) -> RenderedSample:
        """Render one sample."""
        cfg, prof = self.config, self.profile
        a = self.assets[spec.asset_id]
        dt = 1.0 / cfg.plc_rate_hz
        n = max(int(round(cfg.dataset_plc_window_s * cfg.plc_rate_hz)), 2)
        end_tick = int(round(spec.t_s * cfg.plc_rate_hz))
        idx = np.arange(end_tick - n + 1, end_tick + 1, dtype=np.int64)
        t = idx * dt
        T = float(t[-1])
        phys = AssetPhysics(a, cfg, prof, force_run=True, load_level=spec.load_level,
                            ambient_offset_c=spec.ambient_offset_c)
        drift = constant_drift(spec.drift, spec.drift_level, spec.drift_sign, T)
        health = constant_health(spec.physical_fault, spec.severity, spec.variant, n)
        blk = phys.step(t, idx + spec.index * 10_000_000, health, drift)
        plc = measure(a, blk, drift, prof, cfg) if "plc" in modalities else None
        frame = clip = None
        if "thermal" in modalities:
            cam = self._cams.get(a.asset_id) or self._cams.setdefault(a.asset_id, ThermalCamera(a, prof))
            frame = cam.render(blk.snapshot(T), drift, make_rng(cfg.seed, "ds-thermal", cfg.difficulty, spec.index))
        if "audio" in modalities:
            mic = self._mics.get(a.asset_id) or self._mics.setdefault(a.asset_id, AudioRenderer(a, cfg, prof))
            n_audio = int(round(cfg.audio_chunk_s * cfg.audio_rate_hz))
            ts = T - cfg.audio_chunk_s + np.arange(n_audio) / cfg.audio_rate_hz
            clip = mic.render(ClipDrive.from_block(blk, ts), blk.snapshot(T - 0.5 * cfg.audio_chunk_s), drift,
                              make_rng(cfg.seed, "ds-audio", cfg.difficulty, spec.index))
        return RenderedSample(spec, plc, frame, clip)


def iter_samples(samples_per_class: int, config: SimulatorConfig | None = None,
                 modalities: tuple[str, ...] = MODALITIES) -> Iterator[RenderedSample]:
    """Yield rendered samples one by one (memory-light)."""
    config = config or SimulatorConfig()
    fleet = dataset_fleet(config)
    renderer = SampleRenderer(config, fleet)
    for spec in draw_specs(samples_per_class, config, fleet):
        yield renderer.render(spec, modalities)


def generate_arrays(samples_per_class: int, config: SimulatorConfig | None = None,
                    modalities: tuple[str, ...] = MODALITIES, progress: bool = False) -> DatasetArrays:
    """Render a balanced dataset into numpy arrays (see :class:`DatasetArrays`)."""
    config = config or SimulatorConfig()
    fleet = dataset_fleet(config)
    specs = draw_specs(samples_per_class, config, fleet)
    renderer = SampleRenderer(config, fleet)
    plc, qual, th, au = [], [], [], []
    for spec in tqdm(specs, desc="rendering", unit="sample", disable=not progress):
        r = renderer.render(spec, modalities)
        if r.plc is not None:
            plc.append(r.plc.values.astype(np.float32))
            qual.append(r.plc.quality)
        if r.frame is not None:
            th.append(r.frame)
        if r.clip is not None:
            au.append(r.clip)
    return DatasetArrays(specs=specs, y=np.array([FAULT_INDEX[s.fault] for s in specs], dtype=np.int64),
                         plc=np.stack(plc) if plc else None, plc_quality=np.stack(qual) if qual else None,
                         thermal=np.stack(th) if th else None, audio=np.stack(au) if au else None, fleet=fleet)


def generate_dataset(out_dir: str | Path, samples_per_class: int, config: SimulatorConfig | None = None,
                     modalities: tuple[str, ...] = MODALITIES, progress: bool = True) -> DatasetSummary:
    """Render a balanced dataset to disk.

    Layout: ``assets.json``, ``labels.csv`` (columns ``LABEL_COLUMNS``, paths
    relative to ``out_dir``, empty for modalities not rendered),
    ``dataset.json`` (config and counts), ``plc/<sample_id>.csv|jsonl``,
    ``thermal/<sample_id>.tiff``, ``audio/<sample_id>.wav`` - the same file
    formats as the streaming landing directory.
    """
    wall0 = time.perf_counter()
    config = config or SimulatorConfig()
    unknown = set(modalities) - set(MODALITIES)
    if unknown:
        raise ValueError(f"unknown modalities {sorted(unknown)}")
    root = Path(out_dir)
    root.mkdir(parents=True, exist_ok=True)
    fleet = dataset_fleet(config)
    specs = draw_specs(samples_per_class, config, fleet)
    renderer = SampleRenderer(config, fleet)
    atomic_write_text(root / "assets.json", json.dumps(asset_registry_json(fleet, config), indent=2) + "\n")
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(LABEL_COLUMNS)
    ext = config.plc_format
    for spec in tqdm(specs, desc="rendering", unit="sample", disable=not progress):
        r = renderer.render(spec, modalities)
        paths = {"plc": "", "thermal": "", "audio": ""}
        if r.plc is not None:
            paths["plc"] = f"plc/{spec.sample_id}.{ext}"
            ts = iso_ms(config.start_time, r.plc.t)
            atomic_write_text(root / paths["plc"], plc_file_text(format_lines(r.plc, ts, ext), ext))
        if r.frame is not None:
            paths["thermal"] = f"thermal/{spec.sample_id}.tiff"
            atomic_write_bytes(root / paths["thermal"], encode_tiff(r.frame))
        if r.clip is not None:
            paths["audio"] = f"audio/{spec.sample_id}.wav"
            atomic_write_bytes(root / paths["audio"], encode_wav(r.clip, config.audio_rate_hz))
        w.writerow([spec.sample_id, spec.asset_id, spec.asset_type, spec.fault, f"{spec.severity:.4f}",
                    spec.drift, paths["plc"], paths["thermal"], paths["audio"]])
    labels = atomic_write_text(root / "labels.csv", buf.getvalue())
    per_class = {c: sum(1 for s in specs if s.fault == c) for c in FAULT_CLASSES}
    meta = {"config": json.loads(config.model_dump_json()), "profile": config.profile.as_dict(),
            "classes": list(FAULT_CLASSES), "label_threshold": LABEL_THRESHOLD, "tags": list(PLC_TAGS),
            "modalities": list(modalities), "n_samples": len(specs), "per_class": per_class,
            "samples": [asdict(s) for s in specs]}
    atomic_write_text(root / "dataset.json", json.dumps(meta, indent=1) + "\n")
    return DatasetSummary(out_dir=root, labels_path=labels, n_samples=len(specs), per_class=per_class,
                          wall_seconds=time.perf_counter() - wall0)
