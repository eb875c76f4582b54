"""Training data that teaches generalisation: domain-randomised fleets rendered and featurised in parallel.

:func:`build_domain_dataset` draws a randomised fleet (:mod:`linewatch.simulator.domain`), renders
every sample's PLC window, thermal frame and audio clip, and turns them into the models' inputs
with the shared feature code only (``pipeline.features``: the same functions as the Flink job and
``linewatch inspect``), machine by machine in worker processes. It keeps what evaluation needs:
labels, the hidden severity, the machine (``groups``, for splits that never put one machine in
two splits), its type, the fault variant and the true running speed.

Like serving, the features see the machines through their ``assets.json`` (nameplate speed,
optional fields missing on some machines), a running thermal baseline on part of the frames
(``baseline_share``; half of those baselines show the same fault, as after a fault that was
already there when the baseline formed), and the PLC's measured speed as a hint for the audio
speed search on part of the clips (``speed_hint_share``), as ``linewatch inspect`` gets it when a
PLC file of the machine comes along. Part of the clips (``audio_baseline_share``) are read against
their machine's learned healthy sound (:mod:`pipeline.features.audio_baseline`), as the job reads
every clip after commissioning: a learner fed the machine's own healthy clips at other operating
points, or (``audio_chronic_share`` of the faulty ones) clips that already carry a milder form of
the same fault, as on a machine that was faulty when its baseline was learnt.

>>> ds = build_domain_dataset(1, n_assets=6, seed=3, workers=1)
>>> ds.n, ds.audio.shape[1], ds.thermal.shape[1], ds.plc.shape[1], len(set(ds.groups))
(6, 86, 69, 45, 3)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, fields, replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from tqdm.auto import tqdm

from models.data.featurize import plc_input
from models.data.samples import LabelledSamples
from pipeline.features import FEATURES_VERSION
from pipeline.features.asset_profile import AssetProfile, load_profiles
from pipeline.features.audio_baseline import HealthyLevels
from pipeline.features.audio_features import logmel
from pipeline.features.audio_physics import AUDIO_VECTOR_NAMES, audio_vector
from pipeline.features.plc_window import PLC_TAGS
from pipeline.features.plc_physics import PLC_VECTOR_NAMES, plc_vector
from pipeline.features.thermal_features import normalize_frame
from pipeline.features.thermal_regions import THERMAL_VECTOR_NAMES, thermal_vector

if TYPE_CHECKING:
    from linewatch.simulator.domain import DomainRenderer, DomainSampleSpec

VECTOR_NAMES: dict[str, tuple[str, ...]] = {
    "plc": PLC_VECTOR_NAMES, "thermal": THERMAL_VECTOR_NAMES, "audio": AUDIO_VECTOR_NAMES}
IMAGE_SHAPE = (120, 160)


@dataclass
class DomainDataset:
    """Feature vectors of every modality for the same samples (row i = one machine at one time)."""

    domain: str
    seed: int
    classes: tuple[str, ...]
    y: np.ndarray
    severity: np.ndarray
    groups: np.ndarray
    asset_types: np.ndarray
    variants: np.ndarray
    drifts: np.ndarray
    shaft_hz: np.ndarray
    plc: np.ndarray
    thermal: np.ndarray
    audio: np.ndarray
    logmel: np.ndarray | None = None
    frames: np.ndarray | None = None
    audio_extra: np.ndarray | None = None
    audio_baseline: np.ndarray | None = None  #: per sample: 0 no audio baseline, 1 healthy, 2 learnt while faulty
    #: per sample, the region boxes its thermal frame was read with: 0 exact, then 1 + the index of
    #: :data:`models.data.user_boxes.MODES` (1 none: proposed, 2 rough, 3 camera moved); None: all exact
    thermal_boxes: np.ndarray | None = None

    @property
    def n(self) -> int:
        return int(self.y.shape[0])

    def subset(self, idx: np.ndarray) -> DomainDataset:
        kw = {f.name: getattr(self, f.name) for f in fields(self)}
        for name, value in kw.items():
            if isinstance(value, np.ndarray) and value.shape[:1] == self.y.shape:
                kw[name] = value[idx]
        return DomainDataset(**kw)

    def samples(self, modality: str, source: str | None = None) -> LabelledSamples:
        """One modality as :class:`LabelledSamples` (inputs = the model-input vectors)."""
        x = getattr(self, modality)
        return LabelledSamples(
            modality, np.ascontiguousarray(x, np.float32), self.y.astype(np.int64), self.classes, FEATURES_VERSION,
            source or f"simulator domain {self.domain!r} (seed {self.seed}, {self.n} samples, "
                      f"{len(set(self.groups.tolist()))} machines)",
            reference=np.ascontiguousarray(x, np.float32), reference_names=VECTOR_NAMES[modality],
            reference_kind="model-input vector", sample_ids=tuple(str(i) for i in range(self.n)),
            groups=self.groups, severity=self.severity, asset_types=self.asset_types)

    def save(self, path: Path) -> Path:
        arrays = {f.name: getattr(self, f.name) for f in fields(self)
                  if isinstance(getattr(self, f.name), np.ndarray)}
        meta = {"domain": self.domain, "seed": self.seed, "classes": list(self.classes)}
        np.savez_compressed(path, meta=np.asarray(json.dumps(meta)), **arrays)
        return Path(path)

    @classmethod
    def load(cls, path: Path) -> DomainDataset:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            arrays = {k: z[k] for k in z.files if k != "meta"}
        return cls(domain=meta["domain"], seed=int(meta["seed"]), classes=tuple(meta["classes"]), **arrays)


@lru_cache(maxsize=2)
def domain_world(domain_name: str, n_assets: int, seed: int, samples_per_class: int) -> tuple:
    """``(fleet, profiles, specs)`` of a fleet of ``n_assets`` machines of the randomised simulator's
    ``domain_name`` (seed ``seed``): the machines, their ``assets.json`` profiles by asset id, and
    ``samples_per_class`` drawn samples per class, as :func:`build_domain_dataset` renders them (cached:
    treat them as read-only)."""
    from linewatch.simulator.domain import (
        DOMAINS,
        domain_fleet,
        domain_registry_json,
        draw_domain_specs,
    )

    domain = DOMAINS[domain_name]
    fleet = domain_fleet(n_assets, seed, domain)
    profiles = load_profiles(domain_registry_json(fleet, seed, domain))
    specs = draw_domain_specs(samples_per_class, fleet, seed, domain)
    return fleet, profiles, specs


def _wide_rows(plc) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    from linewatch.simulator.tags import QUALITIES

    t_ms = np.round((plc.t - plc.t[-1]) * 1000.0).astype(np.int64)
    return t_ms, plc.values.astype(np.float64), plc.quality == QUALITIES.index("Bad")


AudioExtra = Callable[[np.ndarray, int, AssetProfile, float | None], np.ndarray]


BASELINE_LOAD_SPAN = 0.35
"""How far (in load level, -1..1) a running thermal baseline's operating point is from the sample's."""


def running_baseline_frame(renderer: DomainRenderer, spec: DomainSampleSpec, rng: np.random.Generator,
                           share: float, day_spread: tuple[float, float] | None = None) -> np.ndarray | None:
    """With probability ``share``, the frame a running thermal baseline would hold for ``spec``'s
    machine: the same machine near the same operating point (the baseline is an average of its
    recent frames: load level within ±``BASELINE_LOAD_SPAN`` of the sample's, another ambient),
    healthy or (half of the faulty samples) already carrying a milder form of the same fault (a
    chronic fault); else None. Draws from ``rng`` in a fixed order, so a featurised dataset is
    reproducible from its seed.

    (Thermal v4 drew the baseline's load anywhere in the range: its body delta then mostly
    measured load, and the model learnt to discount it; a healthy frame of the same machine did
    not make a cooling failure visible.)

    ``day_spread``: the baseline frame's parts differ from the sample's day as
    :func:`linewatch.simulator.domain.day_to_day` draws it (None: the machine's own setting)."""
    if rng.random() >= share:
        return None
    chronic = spec.fault != "normal" and rng.random() < 0.5
    load = float(np.clip(spec.load_level + BASELINE_LOAD_SPAN * rng.uniform(-1, 1), -1.0, 1.0))
    other = replace(spec, index=spec.index + 7_000_000, load_level=load,
                    ambient_c=spec.ambient_c + float(rng.normal(0, 1.5)), drift="none", drift_level=0.0,
                    physical_fault=spec.physical_fault if chronic else "normal",
                    severity=spec.severity * float(rng.uniform(0.5, 1.0)) if chronic else 0.0)
    return renderer.render(other, ("thermal",), day_spread=day_spread).frame


def learned_audio_baseline(renderer: DomainRenderer, spec: DomainSampleSpec, points: list[DomainSampleSpec],
                           profile: AssetProfile, rng: np.random.Generator, clips: int, index0: int,
                           fault_scale: float = 0.0) -> HealthyLevels | None:
    """What the job's :class:`~pipeline.features.audio_baseline.AudioBaseline` learns on ``spec``'s
    machine from ``clips`` clips, each at the operating point of one of ``points`` (the machine's
    drawn samples: load, drive speed, microphone), healthy (``fault_scale`` 0) or carrying
    ``spec``'s fault at ``fault_scale`` x its severity; featurised as the job does (no speed hint),
    learnt by the job's rules (None when too few clips pass them), with the speeds its clips were
    read at. The clips are samples ``index0``, ``index0 + 1``... (their own noise)."""
    from pipeline.features.audio_baseline import AudioBaseline, AudioBaselineRules
    from pipeline.features.audio_physics import AudioInputError, clip_levels, clip_speed

    learner = AudioBaseline(AudioBaselineRules(clips=clips, min_gap_ms=0))
    faulty = fault_scale > 0 and spec.fault != "normal"
    for k in range(2 * clips):  # a clip that cannot be featurised is replaced, up to 2x the period
        point = points[int(rng.integers(len(points)))]
        other = replace(point, index=index0 + k, drift="none", drift_level=0.0,
                        fault=spec.fault if faulty else "normal",
                        physical_fault=spec.physical_fault if faulty else "normal",
                        severity=spec.severity * fault_scale if faulty else 0.0, variant=spec.variant if faulty else "")
        clip = renderer.render(other, ("audio",)).clip.astype(np.float32) / 32768.0
        try:
            vector = audio_vector(clip, 16_000, profile)
        except AudioInputError:
            continue
        if learner.observe(clip_levels(vector), event_ms=k, shaft_hz=clip_speed(vector)):
            return learner.healthy
    return None


def user_regions(profile: AssetProfile, frame_shape: tuple[int, ...], seed: int, domain_name: str, asset_index: int,
                 share: float, modes: tuple[str, ...] | None = None) -> tuple[int, AssetProfile]:
    """With probability ``share`` per machine (its own random stream: nothing else drawn changes),
    ``profile`` with its region boxes as a user's ``assets.json`` may hold them
    (:func:`models.data.user_boxes.degrade_regions`: none, rough, camera moved, or only ``modes``); ``(code, profile)``
    with code 0 for exact boxes, else 1 + the mode's index in :data:`~models.data.user_boxes.MODES`."""
    from linewatch.simulator.noise import make_rng
    from models.data.user_boxes import MODES, degrade_regions

    if share <= 0 or not profile.regions:
        return 0, profile
    rng = make_rng(seed, "domain-user-boxes", domain_name, asset_index)
    if rng.random() >= share:
        return 0, profile
    size = (float(profile.frame.width or frame_shape[1]), float(profile.frame.height or frame_shape[0]))
    mode, boxes = degrade_regions(dict(profile.regions), rng, size, modes=modes or MODES)
    return 1 + MODES.index(mode), replace(profile, regions=boxes)


def machine_absent_tags(profile: AssetProfile, asset_type: str, seed: int, domain_name: str, asset_index: int,
                        share: float) -> tuple[str, ...]:
    """With probability ``share`` per machine (its own random stream: nothing else drawn changes),
    the PLC tags its historian lacks (:func:`models.data.sensor_fit.absent_tags`); else none."""
    from linewatch.simulator.noise import make_rng
    from models.data.sensor_fit import absent_tags

    if share <= 0:
        return ()
    rng = make_rng(seed, "domain-sensor-fit", domain_name, asset_index)
    if rng.random() >= share:
        return ()
    return absent_tags(asset_type, profile.vfd, rng)


def _render_chunk(args: tuple[str, int, int, int, list[int], float, float, bool, AudioExtra | None, float, float, int,
                              bool, float, tuple[str, ...] | None, float, tuple[float, float] | None]
                  ) -> dict[str, np.ndarray]:
    """Render + featurise the samples ``indices`` (worker process)."""
    from linewatch.simulator.domain import DomainRenderer
    from linewatch.simulator.noise import make_rng

    (domain_name, n_assets, seed, spc, indices, baseline_share, hint_share, images, audio_extra,
     audio_baseline_share, audio_chronic_share, audio_baseline_clips, speed_gate, user_box_share, user_box_modes,
     plc_absent_share, baseline_day_spread) = args
    fleet, profiles, specs = domain_world(domain_name, n_assets, seed, spc)
    renderer = DomainRenderer(fleet, seed)
    rows: dict[str, list] = {k: [] for k in ("plc", "thermal", "audio", "shaft", "logmel", "frames", "extra",
                                             "audio_base", "boxes")}
    box_profiles: dict[int, tuple[int, AssetProfile]] = {}
    absent: dict[int, tuple[str, ...]] = {}
    healthy_levels: dict[int, HealthyLevels | None] = {}
    machine_points: dict[int, list[DomainSampleSpec]] = {}
    for i in indices:
        spec = specs[i]
        sample = renderer.render(spec)
        profile: AssetProfile = profiles[spec.asset_id]
        rng = make_rng(seed, "domain-featurize", domain_name, i)
        ts, wide, bad = _wide_rows(sample.plc)
        if spec.asset_index not in absent:
            absent[spec.asset_index] = machine_absent_tags(profile, spec.asset_type, seed, domain_name,
                                                           spec.asset_index, plc_absent_share)
        for tag in absent[spec.asset_index]:  # the machine's historian has no such tag
            wide[:, PLC_TAGS.index(tag)] = np.nan
        raw = plc_input(ts, wide, bad)
        rows["plc"].append(plc_vector(raw, profile))
        baseline = running_baseline_frame(renderer, spec, rng, baseline_share, baseline_day_spread)
        if spec.asset_index not in box_profiles:
            box_profiles[spec.asset_index] = user_regions(profile, sample.frame.shape, seed, domain_name,
                                                          spec.asset_index, user_box_share, user_box_modes)
        box_code, thermal_profile = box_profiles[spec.asset_index]
        rows["thermal"].append(thermal_vector(sample.frame, thermal_profile, baseline))
        rows["boxes"].append(box_code)
        clip = sample.clip.astype(np.float32) / 32768.0
        hint = None
        if rng.random() < hint_share:
            speed = sample.plc.values[:, 1]
            hint = float(np.median(speed)) / 60.0 if np.isfinite(speed).any() else None
        base_rng = make_rng(seed, "domain-audio-baseline", domain_name, i)  # its own stream: v3 draws unchanged
        levels, kind = None, 0
        if base_rng.random() < audio_baseline_share:
            if spec.asset_index not in machine_points:
                machine_points[spec.asset_index] = [s for s in specs if s.asset_index == spec.asset_index]
            points = machine_points[spec.asset_index]
            if spec.fault != "normal" and base_rng.random() < audio_chronic_share:
                levels = learned_audio_baseline(renderer, spec, points, profile, base_rng, max(2, audio_baseline_clips // 4),
                                                60_000_000 + i * 100, float(base_rng.uniform(0.5, 1.0)))
                kind = 2
            else:
                if spec.asset_index not in healthy_levels:
                    machine_rng = make_rng(seed, "domain-audio-baseline-machine", domain_name, spec.asset_index)
                    healthy_levels[spec.asset_index] = learned_audio_baseline(
                        renderer, spec, points, profile, machine_rng, audio_baseline_clips,
                        90_000_000 + spec.asset_index * 100)
                levels, kind = healthy_levels[spec.asset_index], 1
        # the training data read every clip against the levels alone; the line (speed_gate) only
        # where the baseline covers the clip's speed (pipeline.features.audio_baseline)
        rows["audio"].append(audio_vector(clip, 16_000, profile, hint,
                                          levels if speed_gate or levels is None else levels.levels_db))
        rows["audio_base"].append(kind if levels is not None else 0)
        if audio_extra is not None:
            rows["extra"].append(audio_extra(clip, 16_000, profile, hint))
        rows["shaft"].append(sample.shaft_hz)
        if images:
            from scipy.ndimage import zoom

            rows["logmel"].append(logmel(clip).astype(np.float16))
            norm = normalize_frame(sample.frame).astype(np.float32)
            factors = (IMAGE_SHAPE[0] / norm.shape[0], IMAGE_SHAPE[1] / norm.shape[1])
            rows["frames"].append(zoom(norm, factors, order=1)[: IMAGE_SHAPE[0], : IMAGE_SHAPE[1]].astype(np.float16))
    out = {k: np.stack(v) for k, v in rows.items() if v}
    out["audio_base"] = np.asarray(rows["audio_base"], np.int8)
    out["boxes"] = np.asarray(rows["boxes"], np.int8)
    out["index"] = np.asarray(indices, np.int64)
    return out


def _chunks(specs: list, per_chunk: int) -> Iterator[list[int]]:
    """Sample indices grouped by machine (a worker keeps few cameras in memory)."""
    by_asset: dict[int, list[int]] = {}
    for s in specs:
        by_asset.setdefault(s.asset_index, []).append(s.index)
    chunk: list[int] = []
    for idx in by_asset.values():
        chunk += idx
        if len(chunk) >= per_chunk:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def build_domain_dataset(samples_per_class: int, n_assets: int = 600, seed: int = 0, domain: str = "train",
                         workers: int = 1, progress: bool = False, baseline_share: float = 0.4,
                         speed_hint_share: float = 0.3, images: bool = False,
                         audio_extra: AudioExtra | None = None, audio_baseline_share: float = 0.7,
                         audio_chronic_share: float = 0.2, audio_baseline_clips: int = 8,
                         audio_baseline_speed_gate: bool = False, user_box_share: float = 0.0,
                         user_box_modes: tuple[str, ...] | None = None, plc_absent_share: float = 0.0,
                         baseline_day_spread: tuple[float, float] | None = None) -> DomainDataset:
    """Render and featurise ``samples_per_class`` samples per class (see the module docstring).

    ``audio_baseline_share``: the clips read against a learned baseline of their machine, of which
    ``audio_chronic_share`` of the faulty ones against a baseline learnt while the fault was there
    (0.5-1.0x its severity, a quarter of the learning period); the rest healthy, learnt over
    ``audio_baseline_clips`` clips. ``DomainDataset.audio_baseline`` says which: 0 none, 1 healthy,
    2 chronic. ``audio_baseline_speed_gate``: a clip is read against its baseline only where the
    baseline covers its speed, as the job and ``linewatch inspect`` read it (the models' training
    data did not: off by default, so a dataset renders as it was trained on).

    ``user_box_share``: the share of machines whose thermal frames are read with region boxes as
    users' ``assets.json`` files hold them (:func:`user_regions`: none, rough or for a camera that
    moved; featurised through serving's region fitting), recorded in ``DomainDataset.thermal_boxes``;
    0 (the default): every frame with the simulator's exact boxes, as the shipped models were trained.
    ``user_box_modes``: only these ways of going wrong (default: all of
    :data:`models.data.user_boxes.MODES`).

    ``plc_absent_share``: the share of machines whose historian lacks some PLC tags
    (:func:`machine_absent_tags`: a fan without a pressure transmitter ...); 0 (the default): every
    machine reports all seven, as the shipped models were trained.

    ``baseline_day_spread``: the running baselines' frames show their machine on another day
    (:func:`linewatch.simulator.domain.day_to_day`, ``(rise fraction, offset K)``), the samples'
    own frames unchanged; None (the default): as the shipped models were trained.

    ``audio_extra`` (a module-level function: it travels to the workers), called like
    ``audio_vector`` on every clip with the same speed hint, fills ``DomainDataset.audio_extra``
    (experiments with other audio inputs on exactly the same clips).
    """
    from linewatch.simulator.domain import DOMAINS
    from linewatch.simulator.health import FAULT_CLASSES, FAULT_INDEX

    if domain not in DOMAINS:
        raise ValueError(f"unknown domain {domain!r}: use one of {sorted(DOMAINS)}")
    _, _, specs = domain_world(domain, n_assets, seed, samples_per_class)
    tasks = [(domain, n_assets, seed, samples_per_class, c, baseline_share, speed_hint_share, images, audio_extra,
              audio_baseline_share, audio_chronic_share, audio_baseline_clips, audio_baseline_speed_gate,
              user_box_share, user_box_modes, plc_absent_share, baseline_day_spread)
             for c in _chunks(specs, 64)]
    parts: list[dict[str, np.ndarray]] = []
    bar = tqdm(total=len(specs), desc=f"domain {domain}", unit="sample", disable=not progress)
    if workers <= 1:
        for task in tasks:
            parts.append(_render_chunk(task))
            bar.update(len(task[4]))
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            for part in pool.map(_render_chunk, tasks):
                parts.append(part)
                bar.update(len(part["index"]))
    bar.close()
    order = np.argsort(np.concatenate([p["index"] for p in parts]))

    def cat(key: str) -> np.ndarray | None:
        if key not in parts[0]:
            return None
        return np.concatenate([p[key] for p in parts])[order]

    return DomainDataset(
        domain=domain, seed=seed, classes=tuple(FAULT_CLASSES),
        y=np.array([FAULT_INDEX[s.fault] for s in specs], np.int64),
        severity=np.array([s.severity for s in specs], np.float32),
        groups=np.array([s.asset_id for s in specs]), asset_types=np.array([s.asset_type for s in specs]),
        variants=np.array([s.variant for s in specs]), drifts=np.array([s.drift for s in specs]),
        shaft_hz=cat("shaft").astype(np.float32), plc=cat("plc"), thermal=cat("thermal"), audio=cat("audio"),
        logmel=cat("logmel"), frames=cat("frames"), audio_extra=cat("extra"), audio_baseline=cat("audio_base"),
        thermal_boxes=cat("boxes") if user_box_share > 0 else None)


def load_run_data(run: Path) -> tuple[DomainDataset, DomainDataset]:
    """The (train-domain, unseen-domain) feature vectors that ``scripts/train_gpu.py`` wrote
    (``data_train_{audio,thermal}.npz``, ``data_train_plc_meta.npz``, ``data_unseen.npz``)."""
    def build(arrays: dict) -> DomainDataset:
        meta = json.loads(str(arrays.pop("meta")))
        return DomainDataset(domain=meta["domain"], seed=int(meta["seed"]), classes=tuple(meta["classes"]), **arrays)

    run = Path(run)
    train: dict = {}
    for name in ("data_train_plc_meta.npz", "data_train_audio.npz", "data_train_thermal.npz"):
        with np.load(run / name, allow_pickle=False) as z:
            train.update({k: z[k] for k in z.files})
    with np.load(run / "data_unseen.npz", allow_pickle=False) as z:
        unseen = {k: z[k] for k in z.files}
    return build(train), build(unseen)
