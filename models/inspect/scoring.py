"""Score files with the registered models and fuse the modalities of each machine.

Per file: read it (:mod:`models.inspect.readers`), build the same feature message the Flink job
builds (``pipeline.features.messages``), take the model input with ``models.inputs.input_array``,
run the registered serving model (INT8, ONNX Runtime CPU) and report its calibrated class
probabilities. A PLC file longer than one window is cut into 10 s windows whose probabilities are
averaged. Per machine with files of several modalities: the fused verdict of
:func:`models.fusion.fuse` with the registry's ``fusion.json`` weights.

The machine of a file is ``asset_id`` when given, else the landing-zone name
``<ASSET>-<YYYYmmddTHHMMSSfff>.<ext>`` (also ``plc-<ASSET>-<stamp>.csv``), else, for PLC files,
the ``<ASSET>.`` prefix of the tags. A machine missing from ``assets.json`` is still scored
(speed searched between 8 and 65 Hz, no bearing orders, no thermal regions) with a warning.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from models.fusion import FusionWeights, fuse, temper
from models.inputs import input_array
from models.inspect.frame_files import SNIFF_BYTES, is_temperature_matrix, read_frame
from models.inspect.readers import (
    InspectInputError,
    hold_between_changes,
    lossy_bitrate_kbps,
    read_plc,
    read_wav,
    speed_setpoint_rpm,
)
from models.inspect.reference_load import common_point, reference_load
from models.missing_tags import HealthyFill
from models.registry import ModelRegistry, default_registry
from models.ruled_out import rule_out, ruled_out, ruled_out_note
from models.training_range import EXTRAPOLATION_POWER, TrainingRange, extrapolation
from models.withheld_classes import drop_withheld, proposed_hot_connection_note, withheld_classes
from pipeline.features.asset_profile import RECIPROCATING_LEVEL_UNKNOWN_STAT, AssetProfile, unknown_regions_note
from pipeline.features.region_boxes import unreadable_regions_note
from pipeline.features.audio_baseline import HealthyLevels, speed_range
from pipeline.features.plc_baseline import PlcHealthyLevels
from pipeline.features.plc_running import NOT_RUNNING_STAT, RUN_UP_MS, follow_run
from pipeline.features.terminal_crossing import TERMINAL_CROSSED_STAT, terminal_crossed_note
from pipeline.features.thermal_load import OperatingPoint, operating_point
from pipeline.features.thermal_reference import ThermalReference

MODALITY_BY_SUFFIX: dict[str, str] = {".wav": "audio", ".wave": "audio", ".flac": "audio", ".ogg": "audio",
                                      ".oga": "audio", ".opus": "audio", ".mp3": "audio",
                                      ".tif": "thermal", ".tiff": "thermal", ".png": "thermal", ".npy": "thermal",
                                      ".csv": "plc", ".jsonl": "plc", ".json": "plc", ".ndjson": "plc"}
_LANDING_NAME = re.compile(r"^(?:plc-|alarms-)?(?P<asset>.+?)-(?P<stamp>\d{8}T\d{6}\d{0,3})$")
FUSION_FILE = "fusion.json"
#: Where an audio file's running speed came from: searched in the sound (around nameplate speed, or
#: over a drive's range), around a speed the user measured (``--speed-rpm``), around the median
#: speed of a PLC file of the same machine in the same call, or read off a drive's PWM carrier in
#: the sound (its first second; ``pipeline.features.audio_physics.clip_drive_supply_hz``), or around
#: the drive's speed setpoint (rpm) of a PLC file without a speed tag (``readers.speed_setpoint_rpm``).
SPEED_SOURCES = ("estimated from the sound", "given (--speed-rpm)", "the PLC file's speed",
                 "the drive's PWM carrier in the sound", "the PLC file's speed setpoint")
#: Below this bit rate a lossy recording (MP3, Ogg) gets a warning: of the foreign fleet's 96 bearing
#: faults the lossless files name 80, MP3 at 98 kbit/s 80, at 53 and 43 kbit/s 73 and 65, Vorbis at 110
#: and 74 kbit/s 78 and 74 (``bench/bench_audio_rates.py --codecs``, docs/models.md).
LOSSY_KBPS_WARN = 96.0
#: Without a fusion.json: cavitation only where the asset type names a pump.
CAVITATION_NEEDS_A_PUMP: dict[str, list[str]] = {"pump": [], "*": ["cavitation"]}


def modality_of(path: Path) -> str:
    """The modality of a file by its suffix; a ``.csv`` that holds a temperature matrix (camera
    software's export, :func:`~models.inspect.frame_files.is_temperature_matrix`) is a thermal frame."""
    try:
        modality = MODALITY_BY_SUFFIX[Path(path).suffix.lower()]
    except KeyError:
        raise InspectInputError(f"{path}: unknown file type {Path(path).suffix!r}; inspect reads .wav (audio; also "
                                ".flac, .ogg, .opus, .mp3), .tif/.tiff/.png/.npy and temperature-matrix .csv "
                                "(thermal frames) and .csv/.jsonl (PLC historian exports)") from None
    if Path(path).suffix.lower() == ".csv":
        with open(path, encoding="utf-8-sig", errors="replace") as f:
            if is_temperature_matrix(f.read(SNIFF_BYTES)):
                return "thermal"
    return modality


def expand_inputs(paths: list[Path], skip: Collection[Path] = ()) -> list[Path]:
    """``paths`` with each folder replaced by the files under it that ``inspect`` reads (by suffix,
    sorted; an ``assets.json`` and the files of ``skip`` left out); a folder without any is an
    :class:`InspectInputError`.

    >>> import tempfile; d = Path(tempfile.mkdtemp())
    >>> for n in ("b.wav", "a.tiff", "notes.txt", "assets.json"): _ = (d / n).write_bytes(b"")
    >>> [p.name for p in expand_inputs([d])]
    ['a.tiff', 'b.wav']
    """
    out: list[Path] = []
    leave = {Path(p).resolve() for p in skip}
    for path in paths:
        if not Path(path).is_dir():
            out.append(Path(path))
            continue
        found = [p for p in sorted(Path(path).rglob("*")) if p.is_file() and p.suffix.lower() in MODALITY_BY_SUFFIX
                 and p.name.lower() != "assets.json" and p.resolve() not in leave]
        if not found:
            raise InspectInputError(f"{path}: a folder without any file inspect reads ("
                                    f"{', '.join(sorted(MODALITY_BY_SUFFIX))})")
        out += found
    return out


@contextmanager
def healthy_file(path: Path, option: str) -> Iterator[None]:
    """A healthy reference that cannot be read names itself and its option in the error (the
    reason alone would read as if the file scored were wrong)."""
    try:
        yield
    except InspectInputError:
        raise
    except ValueError as exc:
        raise InspectInputError(f"{path} ({option}): {exc}") from exc


def asset_from_name(path: Path) -> str | None:
    """``PMP-01-20261129T140000500.wav`` → ``PMP-01``; None when the name does not follow the pattern.

    >>> asset_from_name(Path("thermal/PMP-01-20261129T140000500.tiff")), asset_from_name(Path("x.wav"))
    ('PMP-01', None)
    >>> asset_from_name(Path("plc-CNV-03-20261129T140000000.csv"))
    'CNV-03'
    """
    m = _LANDING_NAME.match(Path(path).stem)
    return m.group("asset") if m else None


@dataclass
class FileResult:
    """One scored file (``error`` set, no probabilities, when it could not be scored)."""

    file: str
    modality: str
    asset_id: str | None
    label: str | None = None
    probabilities: dict[str, float] = field(default_factory=dict)
    model: str = ""
    windows: int = 1
    warnings: list[str] = field(default_factory=list)
    error: str | None = None
    extrapolating: bool = False
    #: the model inputs that lie far outside its training range (:meth:`Inspector.outside_training`)
    outside_training: list[str] = field(default_factory=list)
    #: those of them that show more of the class named than any training sample, on that fault's side
    #: (:mod:`models.fault_evidence`): not counted toward ``extrapolating``
    evidence_beyond_training: list[str] = field(default_factory=list)
    withheld: list[str] = field(default_factory=list)
    #: classes the file rules out on physics (:mod:`models.ruled_out`: a thermal frame whose motor body
    #: is warmer at its fan end rules ``normal`` out)
    ruled_out: list[str] = field(default_factory=list)
    #: audio: the shaft speed (Hz) the clip was read at, and where it came from (:data:`SPEED_SOURCES`)
    shaft_hz: float | None = None
    speed_source: str | None = None

    def to_json(self) -> dict[str, object]:
        return {"file": self.file, "asset_id": self.asset_id, "modality": self.modality, "class": self.label,
                "probabilities": {k: round(v, 6) for k, v in self.probabilities.items()}, "model": self.model,
                "windows": self.windows, "extrapolating": self.extrapolating,
                "outside_training": self.outside_training,
                "evidence_beyond_training": self.evidence_beyond_training, "withheld": self.withheld,
                "ruled_out": self.ruled_out, "shaft_hz": None if self.shaft_hz is None else round(self.shaft_hz, 3),
                "speed_source": self.speed_source, "warnings": self.warnings, "error": self.error}


@dataclass
class AssetVerdict:
    """The fused verdict of one machine over its modalities."""

    asset_id: str
    label: str
    probabilities: dict[str, float]
    confidence: float
    coverage: float
    modalities: dict[str, str]
    files: list[str]
    #: modality -> the classes its files could not show (as ``Verdict.withheld`` on the live line)
    withheld: dict[str, list[str]] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return {"asset_id": self.asset_id, "class": self.label,
                "probabilities": {k: round(v, 6) for k, v in self.probabilities.items()},
                "confidence": round(self.confidence, 6), "coverage": round(self.coverage, 6),
                "modalities": self.modalities, "files": self.files, "withheld": self.withheld}


def _id_key(name: str) -> str:
    """A machine id compared without case and punctuation (``SP243`` and ``sp-243`` are one)."""
    return "".join(c for c in name.lower() if c.isalnum())


def machine_of_prefix(prefix: str, known: set[str], named: str | None) -> str | None:
    """The machine a PLC tag prefix stands for: itself where assets.json knows it, else the one known
    machine that it or one of its dot-separated parts names without regard to case and punctuation
    (historians drop the dash: ``SP243``; OSIsoft PI writes ``P-146.VIB.VEL``, read as prefix
    ``P-146.VIB``), else the file's own machine ``named`` where the prefix is that machine or starts
    with it; None when none of these holds.

    >>> known = {"SP-243", "P-146", "P-14"}
    >>> [machine_of_prefix(p, known, None) for p in ("SP-243", "SP243", "P-146.VIB", "site.p146", "XY-1")]
    ['SP-243', 'SP-243', 'P-146', 'P-146', None]
    >>> machine_of_prefix("PUMP7.DISCH", set(), "PUMP7"), machine_of_prefix("PUMP8", set(), "PUMP7")
    ('PUMP7', None)
    """
    if prefix in known:
        return prefix
    keys: dict[str, list[str]] = {}
    for machine in known:
        keys.setdefault(_id_key(machine), []).append(machine)
    for part in (prefix, *prefix.split(".")):
        found = keys.get(_id_key(part), [])
        if len(found) == 1:
            return found[0]
    if named and (_id_key(prefix) == _id_key(named) or prefix.startswith(named + ".")):
        return named
    return None


class Inspector:
    """Scores files with a registry's serving models (default: the shipped ``models/default``)."""

    def __init__(self, registry: ModelRegistry | None = None, assets: dict[str, AssetProfile] | None = None,
                 fusion: FusionWeights | None = None) -> None:
        self.registry = registry or default_registry()
        self.assets = assets or {}
        path = self.registry.root / FUSION_FILE
        self.fusion = fusion or (FusionWeights.load(path) if path.is_file() else FusionWeights(impossible=CAVITATION_NEEDS_A_PUMP))
        self._sessions: dict[str, tuple[object, list[str], str]] = {}
        self._ranges: dict[str, TrainingRange | None] = {}
        self._fills: dict[str, HealthyFill | None] = {}

    def _model(self, modality: str) -> tuple[object, list[str], str]:
        if modality not in self._sessions:  # onnxruntime directly: no torch import for a CLI call
            import onnxruntime as ort

            model = self.registry.latest(modality)
            options = ort.SessionOptions()
            options.intra_op_num_threads = 1
            options.log_severity_level = 3
            session = ort.InferenceSession(str(model.path()), options, providers=["CPUExecutionProvider"])
            self._sessions[modality] = (session, list(model.card.classes),
                                        f"{modality} {model.version} ({model.card.serving_role})")
            self._ranges[modality] = TrainingRange.of_model(model)
            self._fills[modality] = HealthyFill.of_model(model)
        return self._sessions[modality]

    def model_input(self, modality: str, x: np.ndarray) -> np.ndarray:
        """What the model reads for input ``x``: a PLC tag the export lacks at the model's healthy median
        (:mod:`models.missing_tags`); ``x`` itself otherwise."""
        self._model(modality)
        fill = self._fills.get(modality)
        return x if fill is None else fill.apply(x)

    def outside_training(self, modality: str, x: np.ndarray) -> list[str]:
        """Input values far outside what the model saw in training (its reference sample):
        the prediction is an extrapolation there."""
        return list(self.beyond_training(modality, x))

    def beyond_training(self, modality: str, x: np.ndarray) -> dict[str, int]:
        """:meth:`outside_training` with the side: ``{input name: +1 above the range, -1 below it}``."""
        self._model(modality)
        rng = self._ranges.get(modality)
        return {} if rng is None else rng.beyond(self.model_input(modality, x))

    def _predict(self, modality: str, inputs: list[np.ndarray], asset_type: str | None
                 ) -> tuple[np.ndarray, list[str], str]:
        """Mean class probabilities over the inputs; classes the machine cannot have (cavitation
        without a pump, ``fusion.json`` ``impossible``) are removed and the rest renormalised."""
        from models.runtime.probabilities import softmax
        from models.specs import INPUT_NAME, OUTPUT_NAME

        session, classes, name = self._model(modality)
        batch = np.stack([self.model_input(modality, x) for x in inputs]).astype(np.float32)
        logits = session.run([OUTPUT_NAME], {INPUT_NAME: batch})[0]  # type: ignore[attr-defined]
        probs = softmax(logits).mean(axis=0)
        impossible = self.fusion.impossible_for(asset_type)
        if impossible and len(impossible) < len(classes):
            probs = np.where([c in impossible for c in classes], 0.0, probs)
            probs = probs / probs.sum()
        # only the faults this modality is built to see (fusion.json "visible"), as the fusion reads it
        restricted = self.fusion.restrict(modality, dict(zip(classes, probs.tolist(), strict=True)), classes)
        return np.array([restricted[c] for c in classes]), classes, name

    def asset_of(self, path: Path) -> str | None:
        """The machine a file's name or folder names: ``<ASSET>-<stamp>`` when assets.json knows that
        machine (or there is no assets.json), else a known machine id that the file name holds as a
        word of its own (``20261129_PMP-01.wav``, ``PMP-01-DE-20261129T140000.wav``; any case; the
        longest such id), else a folder named by one; else the ``<ASSET>-<stamp>`` name (unknown: the
        record warns).

        >>> ins = Inspector(assets={"PMP-01": AssetProfile("PMP-01"), "PMP-011": AssetProfile("PMP-011")})
        >>> [ins.asset_of(Path(n)) for n in ("PMP-01-DE-20261129T140000.wav", "rec_pmp-01_a.wav", "PMP-011.wav", "x.wav")]
        ['PMP-01', 'PMP-01', 'PMP-011', None]
        """
        named = asset_from_name(path)
        if not self.assets or named in self.assets:
            return named
        stem = path.stem.lower()
        for aid in sorted(self.assets, key=len, reverse=True):
            at = stem.find(aid.lower())
            while at >= 0:
                end = at + len(aid)
                if (at == 0 or not stem[at - 1].isalnum()) and (end == len(stem) or not stem[end].isalnum()):
                    return aid
                at = stem.find(aid.lower(), at + 1)
        for parent in path.parents:
            if parent.name in self.assets:
                return parent.name
        return named

    def profile(self, asset_id: str | None, warnings: list[str]) -> AssetProfile:
        if asset_id and asset_id in self.assets:
            return self.assets[asset_id]
        if asset_id:
            warnings.append(f"machine {asset_id!r} is not in assets.json: scored without nameplate speed, bearing "
                            "orders or thermal regions (add it, see docs/simulator.md)")
        else:
            warnings.append("no machine id (use --asset or <ASSET>-<stamp> file names): scored without assets.json")
        return AssetProfile(asset_id=asset_id or "")

    def _machines_of_prefixes(self, samples: list, named: str | None, notes: list[str]) -> list:
        """Samples whose tag prefix is not a machine of assets.json, given to the one it names
        (:func:`machine_of_prefix`: ``SP243`` → ``SP-243``, PI's ``P-146.VIB`` → ``P-146``)."""
        from dataclasses import replace

        known = set(self.assets)
        moved = {}
        for prefix in sorted({s.asset_id for s in samples} - known):
            machine = machine_of_prefix(prefix, known, named)
            if machine is not None and machine != prefix:
                moved[prefix] = machine
        if not moved:
            return samples
        notes.append("tag prefixes read as machines: " + ", ".join(f"{p!r} → {m}" for p, m in moved.items()))
        return [replace(s, asset_id=moved[s.asset_id]) if s.asset_id in moved else s for s in samples]

    def _plc_windows(self, path: Path, asset_id: str | None, notes: list[str]) -> tuple[str, list]:
        """The machine of a PLC file and its non-overlapping 10 s windows (the whole file as one window
        when it is shorter)."""
        from pipeline.features.plc_window import PlcWindow, plc_window_features, plc_windows

        named = self.asset_of(path)
        samples = hold_between_changes(read_plc(path, asset_id, default_asset=named, notes=notes), notes)
        if asset_id is None:
            samples = self._machines_of_prefixes(samples, named, notes)
        assets = sorted({s.asset_id for s in samples})
        asset = asset_id or (named if named in assets else assets[0])
        if len(assets) > 1:
            notes.append(f"several machines in one file ({', '.join(assets)}): scoring {asset}")
        samples = [s for s in samples if s.asset_id == asset]
        first, last = min(s.timestamp_ms for s in samples), max(s.timestamp_ms for s in samples)
        windows = [w for w in plc_windows(samples).get(asset, [])
                   if w.start_ms >= first and w.end_ms <= last + 1][::10]  # non-overlapping 10 s windows
        if not windows:  # shorter than one window: the whole file is the window
            from pipeline.features.plc_window import PLC_TAGS

            index = {t: i for i, t in enumerate(PLC_TAGS)}
            ts = np.array([s.timestamp_ms for s in samples], np.int64)
            vals = np.full((len(samples), len(PLC_TAGS)), np.nan)
            for i, s in enumerate(samples):
                if s.tag in index:
                    vals[i, index[s.tag]] = s.value
            bad = np.array([s.quality == "Bad" for s in samples])
            windows = [PlcWindow(asset, first, last + 1, plc_window_features(ts, vals, (), bad), len(samples), {},
                                 first, last)]
            notes.append(f"{(last - first) / 1000:.1f} s of data: shorter than one 10 s window")
        return asset, windows

    def _plc(self, path: Path, asset_id: str | None, result: FileResult,
             healthy: dict[str, PlcHealthyLevels] | None = None
             ) -> tuple[list[np.ndarray], float | None, dict[str, float] | None, OperatingPoint | None]:
        """The model inputs of a PLC file's windows, its measured shaft speed (Hz), the stats its
        withheld classes are read from and the machine's operating point in it (the median running
        current and speed: :func:`~pipeline.features.thermal_load.operating_point`). Windows in which the
        machine stood still for a while or ran up (:func:`~pipeline.features.plc_running.follow_run`) are
        left out when others remain; a file with no other window withholds every fault."""
        from pipeline.features.messages import plc_features_message
        from pipeline.features.plc_physics import (
            FLEET_NORMAL_VIBRATION_MM_S,
            SMOOTH_VIBRATION_READ_AS_MM_S,
            VIBRATION_READ_AS_MM_S,
            WINDING_READ_AS_K,
            vibration_scale,
            winding_scale,
        )
        from pipeline.features.plc_window import plc_feature_names

        asset, windows = self._plc_windows(path, asset_id, result.warnings)
        result.asset_id = asset
        profile = self.profile(asset, result.warnings)
        levels = (healthy or {}).get(asset)
        if levels is not None and levels.empty:  # nothing to learn: read as without it (healthy_levels_of)
            result.warnings.append(unused_healthy_export_note(levels))
        elif levels is not None:
            profile = (profile.with_learned_pressure(levels.pressure_bar).with_normal_vibration(levels.vibration_mm_s)
                       .with_normal_winding(levels.winding_k))
        if winding_scale(profile.winding_normal_k) > 1.0:
            result.warnings.append(
                f"winding read against the machine's healthy level from its healthy export (--healthy-plc): "
                f"{profile.winding_normal_k:.0f} K over the bearing at rated current, cooler than the "
                f"{WINDING_READ_AS_K:.0f} K it reads as (x{winding_scale(profile.winding_normal_k):.2f}): a rise from "
                "it reads as the same rise from a warmer motor's")
        messages = [plc_features_message(w, profile.asset_type, str(path), asset=profile) for w in windows]
        standstill = None
        for w, m in zip(windows, messages, strict=True):  # windows in time order: the run-up after a standstill
            standstill = follow_run(m.stats, w.start_ms, standstill)
        running = [k for k, m in enumerate(messages) if m.stats.get(NOT_RUNNING_STAT, 0.0) < 0.5]
        stats: dict[str, float] | None = None
        if any(m.stats.get(RECIPROCATING_LEVEL_UNKNOWN_STAT, 0.0) >= 0.5 for m in messages):
            stats = {RECIPROCATING_LEVEL_UNKNOWN_STAT: 1.0}
            result.warnings.append(
                "a reciprocating machine (assets.json) whose normal vibration is not known: it runs at 4-8 mm/s when "
                f"healthy (ISO 10816-6), above the {FLEET_NORMAL_VIBRATION_MM_S} mm/s of the machines the PLC model "
                "learnt from, so PLC withholds imbalance; give its normal level (vibration_normal_mm_s in assets.json) "
                "or a healthy export with --healthy-plc")
        if not running:
            stats = {**(stats or {}), NOT_RUNNING_STAT: 1.0}
            result.warnings.append(
                "the machine did not run steadily in any 10 s window of this file (its run state shows it stopped, "
                f"or it had started less than {RUN_UP_MS // 1000} s before): the PLC model judges a running "
                "machine, so it withholds every fault; export a period when it ran")
        elif len(running) < len(messages):
            result.warnings.append(
                f"{len(messages) - len(running)} of {len(messages)} 10 s windows left out: the machine stood still "
                f"for a while in them or had started less than {RUN_UP_MS // 1000} s before (its run state; a stop "
                "or a run-up is not an operating point the PLC model judges)")
            messages, windows = [messages[k] for k in running], [windows[k] for k in running]
        inputs = [input_array("plc", m) for m in messages]
        names = plc_feature_names()
        speeds = [float(w.values[names.index("speed_rpm.mean")]) for w in windows]
        speeds = [v for v in speeds if np.isfinite(v) and v > 0]
        vibration = [float(w.values[names.index("vibration_rms_mm_s.mean")]) for w in windows]
        vibration = [v for v in vibration if np.isfinite(v) and v > 0]
        winding_read = any(all(np.isfinite(float(w.values[names.index(f"{t}_temp_c.mean")])) for t in ("winding", "bearing"))
                           for w in windows)
        if winding_read and speeds and (note := ventilation_note(profile, float(np.median(speeds)))):
            result.warnings.append(note)
        vib_scale = vibration_scale(profile.vibration_normal_mm_s)
        if vib_scale != 1.0:
            source = "its healthy export (--healthy-plc)" if profile.vibration_normal_learned else "assets.json"
            why = (f"above the {FLEET_NORMAL_VIBRATION_MM_S} mm/s of the machines the PLC model learnt from, its level "
                   f"reads as {VIBRATION_READ_AS_MM_S} mm/s" if vib_scale < 1.0 else
                   f"below the {SMOOTH_VIBRATION_READ_AS_MM_S} mm/s of a typical machine the PLC model learnt from, "
                   f"its level reads x{vib_scale:.2f}")
            result.warnings.append(f"vibration read against the machine's normal {profile.vibration_normal_mm_s:.1f} "
                                   f"mm/s from {source}: {why} (a rise from it reads as the same rise)")
        if (profile.vibration_normal_mm_s is None and not profile.reciprocating and vibration
                and np.median(vibration) > FLEET_NORMAL_VIBRATION_MM_S):
            result.warnings.append(
                f"vibration {np.median(vibration):.1f} mm/s is above the normal levels of the machines the PLC model "
                f"learnt from (up to {FLEET_NORMAL_VIBRATION_MM_S} mm/s): a fault, or a machine that runs this rough "
                "when healthy (a piston compressor); if it is the latter, give its normal level "
                "(vibration_normal_mm_s in assets.json) or a healthy export with --healthy-plc")
        result.windows = len(inputs)
        point = operating_point([w.values for w in windows])
        return inputs, (float(np.median(speeds)) / 60.0 if speeds else None), stats, point

    def healthy_plc_windows(self, healthy: list[Path], asset_id: str | None = None,
                            unread: list[FileResult] | None = None) -> dict[str, list]:
        """Per machine, the windows of its PLC exports made when it was healthy (``--healthy-plc``) in time
        order; an export without a speed tag at its drive's speed setpoint where it logs one
        (:func:`at_setpoint`). The machine of a file is ``asset_id``, its name's, or its tags'. An export
        that cannot be read raises, or with ``unread`` is left out and reported there (:meth:`_unread`)."""
        found: dict[str, list] = defaultdict(list)
        for path in healthy:
            try:
                aid, windows = self._plc_windows(Path(path), asset_id, [])
            except InspectInputError as exc:
                self._unread(unread, path, "plc", "--healthy-plc", asset_id, exc)
                continue
            found[aid] += at_setpoint(windows, speed_setpoint_rpm(Path(path), aid))
        return {aid: sorted(windows, key=lambda w: w.end_ms) for aid, windows in found.items()}

    def plc_baselines(self, healthy: list[Path], asset_id: str | None = None) -> dict[str, PlcHealthyLevels]:
        """Per machine, its running pressure, normal vibration and healthy winding level from PLC exports made
        when it was healthy (``--healthy-plc``): :meth:`healthy_levels_of` their windows."""
        return self.healthy_levels_of(self.healthy_plc_windows(healthy, asset_id))

    def healthy_levels_of(self, found: Mapping[str, list]) -> dict[str, PlcHealthyLevels]:
        """Per machine, the levels of its healthy windows (:meth:`healthy_plc_windows`): the windows the job
        would learn from, read with the job's rules (:func:`pipeline.features.plc_baseline.healthy_levels`).
        A machine whose export gives no level keeps its empty levels: its PLC files are read without them and
        say why (:func:`unused_healthy_export_note`), and the export's current still gives the load its
        healthy frames were taken at. Before, such an export stopped the whole call."""
        from pipeline.features.plc_baseline import healthy_levels

        out = {}
        for aid, windows in found.items():  # in time order: the settling after a standstill
            profile = self.profile(aid, [])
            out[aid] = healthy_levels([w.values for w in windows], profile.nominal_rpm,
                                      rated_current_a=profile.rated_current_a, ends_ms=[w.end_ms for w in windows],
                                      profile=profile)
        return out

    def healthy_asset(self, path: Path, asset_id: str | None, what: str) -> str:
        """The machine a healthy ``what`` (recording, frame) belongs to: ``asset_id`` or its file name's."""
        aid = asset_id or self.asset_of(path)
        if not aid:
            raise InspectInputError(f"{path}: no machine id for a healthy {what} (use --asset or "
                                    "<ASSET>-<stamp> file names)")
        return aid

    def _unread(self, unread: list[FileResult] | None, path: Path, modality: str, option: str, asset_id: str | None,
                exc: InspectInputError) -> None:
        """A healthy reference that cannot be read: raised again without ``unread``, else reported there as
        a record with an ``error`` (its machine's files are then read without it)."""
        if unread is None:
            raise exc
        text = str(exc) if option in str(exc) else f"{exc} ({option})"
        unread.append(FileResult(file=str(path), modality=modality, asset_id=asset_id or self.asset_of(Path(path)),
                                 error=f"{text}: this machine's files were read without it"))

    def audio_baselines(self, healthy: list[Path], asset_id: str | None = None,
                        unread: list[FileResult] | None = None) -> dict[str, HealthyLevels]:
        """Per machine, the healthy shaft-harmonic levels of recordings made when it was healthy
        (``--healthy-audio``): the median over every 1 s segment of its files, as the job learns
        them, with the range of the segments' speeds they hold at
        (:mod:`pipeline.features.audio_baseline`). The machine of a file is ``asset_id`` or its
        name's."""
        from pipeline.features.audio_physics import audio_segment_vectors, clip_levels, clip_speed

        levels: dict[str, list[np.ndarray]] = defaultdict(list)
        speeds: dict[str, list[float]] = defaultdict(list)
        for path in healthy:
            try:
                aid = self.healthy_asset(Path(path), asset_id, "recording")
                with healthy_file(path, "--healthy-audio"):
                    x, rate = read_wav(Path(path))
                    vectors = audio_segment_vectors(x, rate, self.profile(aid, []))
            except InspectInputError as exc:
                self._unread(unread, path, "audio", "--healthy-audio", asset_id, exc)
                continue
            levels[aid] += [clip_levels(v) for v in vectors]
            speeds[aid] += [clip_speed(v) for v in vectors]
        return {aid: HealthyLevels(tuple(float(v) for v in np.median(np.stack(rows), axis=0)), speed_range(speeds[aid]))
                for aid, rows in levels.items()}

    def thermal_references(self, healthy: list[Path], asset_id: str | None = None,
                           unread: list[FileResult] | None = None) -> dict[str, list[ThermalReference]]:
        """Per machine, its healthy frames (``--healthy-thermal``), each with the region boxes the
        pipeline fits to it (:mod:`pipeline.features.thermal_reference`). The machine of a file is
        ``asset_id`` or its name's."""
        from pipeline.features.thermal_reference import reference_frame

        refs: dict[str, list[ThermalReference]] = defaultdict(list)
        for path in healthy:
            try:
                aid = self.healthy_asset(Path(path), asset_id, "frame")
                with healthy_file(path, "--healthy-thermal"):
                    refs[aid].append(reference_frame(read_frame(Path(path)), self.profile(aid, [])))
            except InspectInputError as exc:
                self._unread(unread, path, "thermal", "--healthy-thermal", asset_id, exc)
        return dict(refs)

    def score(self, paths: list[Path], asset_id: str | None = None, healthy_audio: list[Path] | None = None,
              healthy_thermal: list[Path] | None = None, healthy_plc: list[Path] | None = None,
              speeds_hz: Mapping[str | None, float] | None = None
              ) -> tuple[list[FileResult], list[AssetVerdict]]:
        """Score every file; fuse per machine where several modalities are present. ``healthy_audio``:
        WAV recordings of the same machines when healthy, which its clips are read against;
        ``healthy_thermal``: frames of the same machines when healthy (at a similar load), which
        its frames are read against, at a frame's own load where its machine's PLC file in ``paths`` and
        its ``healthy_plc`` export both give the motor current (:mod:`models.inspect.reference_load`);
        ``healthy_plc``: PLC exports of the same machines in normal operation, which give their running
        pressure (where assets.json has no nominal pressure), normal vibration (where it has no
        ``vibration_normal_mm_s``) and healthy winding level (where the rated current is known), as the job
        learns them, and the load their healthy frames were taken at.
        ``speeds_hz``: a running speed the user measured (a tachometer, the drive's display), in Hz,
        by machine id (key None: every machine); the audio speed search looks around it (+-4 %), as
        it does around a PLC file's speed, which it takes precedence over."""
        from pipeline.features.audio_clipping import CLIPPED_SHARE, clipped_fraction
        from pipeline.features.audio_physics import (
            BAND_LIMITED_STAT,
            ENV_MAX_HZ,
            ORDERS_ABOVE_ENVELOPE_STAT,
            SAMPLE_RATE,
            clip_drive_supply_hz,
            clip_speed,
            lowest_bearing_fault_hz,
        )
        from pipeline.features.messages import (
            audio_features_message,
            thermal_message_any_unit,
        )

        unread: list[FileResult] = []  # healthy references that cannot be read: reported, the rest still scored
        baselines = self.audio_baselines(healthy_audio or [], asset_id, unread)
        references = self.thermal_references(healthy_thermal or [], asset_id, unread)
        healthy_windows = self.healthy_plc_windows(healthy_plc or [], asset_id, unread)
        plc_levels = self.healthy_levels_of(healthy_windows)
        healthy_points = {aid: operating_point([w.values for w in windows]) for aid, windows in healthy_windows.items()}
        points: dict[str, list[OperatingPoint]] = defaultdict(list)  # per machine, of its PLC files in this call

        results: list[FileResult] = []
        probs_by_asset: dict[str, dict[str, list[np.ndarray]]] = defaultdict(lambda: defaultdict(list))
        withheld_by_asset: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
        files_by_asset: dict[str, list[str]] = defaultdict(list)
        speed_hint: dict[str, tuple[float, str]] = {}
        extrapolating: dict[str, set[str]] = defaultdict(set)
        classes: list[str] = []
        order = sorted(range(len(paths)), key=lambda i: MODALITY_BY_SUFFIX.get(Path(paths[i]).suffix.lower(), "z") != "plc")
        by_index: dict[int, FileResult] = {}
        for i in order:  # PLC first: its measured speed helps the audio speed search
            path = Path(paths[i])
            result = FileResult(file=str(paths[i]), modality=MODALITY_BY_SUFFIX.get(path.suffix.lower(), "unknown"),
                                asset_id=asset_id or self.asset_of(path))
            by_index[i] = result
            try:
                modality = result.modality = modality_of(path)
                stats: dict[str, float] | None = None  # the features message's
                if modality == "plc":
                    inputs, speed, stats, point = self._plc(path, asset_id, result, plc_levels)
                    if point is not None and result.asset_id:
                        points[result.asset_id].append(point)
                    source = SPEED_SOURCES[2]
                    if not speed and (setpoint := speed_setpoint_rpm(path, result.asset_id)) is not None:
                        speed, source = setpoint / 60.0, SPEED_SOURCES[4]
                        result.warnings.append(
                            f"no speed tag: its drive's speed setpoint ({setpoint:.0f} rpm) is the speed an audio "
                            "recording of this machine is read around (+-4 %: a drive without a speed sensor turns "
                            "within its slip of it)")
                    if speed and result.asset_id:
                        speed_hint[result.asset_id] = (speed, source)
                    asset_type = self.assets[result.asset_id].asset_type if result.asset_id in self.assets else None
                else:
                    profile = self.profile(result.asset_id, result.warnings)
                    aid = result.asset_id or ""
                    if modality == "audio":
                        x, rate = read_wav(path, result.warnings)
                        hint, result.speed_source = _speed_hint(aid, speeds_hz or {}, speed_hint)
                        msg = audio_features_message(aid, profile.asset_type, 0, x, rate, profile,
                                                     shaft_hz=hint, source=str(path),
                                                     baseline_db=baselines.get(aid))
                        result.shaft_hz = clip_speed(msg.vector)
                        carrier_hz = clip_drive_supply_hz(x, rate, profile) if hint is None else None
                        if carrier_hz is not None:
                            result.speed_source = SPEED_SOURCES[3]
                        if len(x) < rate:
                            result.warnings.append(
                                f"{len(x) / rate:.2f} s long: the models read 1 s clips, and a shorter one holds "
                                "fewer of a bearing defect's impacts (a 0.3 s clip of a worn bearing may read "
                                "normal); record 1 s or more (8 s are read as eight clips)")
                        kbps = lossy_bitrate_kbps(path)
                        if kbps is not None and kbps < LOSSY_KBPS_WARN:
                            result.warnings.append(
                                f"a lossy recording at {kbps:.0f} kbit/s: below {LOSSY_KBPS_WARN:.0f} kbit/s the "
                                "codec blurs the impacts of a bearing defect and audio misses more of them; "
                                "record WAV or FLAC, or a higher bit rate")
                        clipped = clipped_fraction(x)
                        if clipped >= CLIPPED_SHARE:
                            result.warnings.append(
                                f"{100.0 * clipped:.1f} % of the samples are clipped (piled up at the recording's "
                                "peak): flat tops read as impacts, so bearing wear or cavitation may be a false "
                                "alarm here; record with less gain")
                        if msg.stats.get(BAND_LIMITED_STAT, 0.0) >= 0.5:
                            result.warnings.append(
                                f"recorded at {rate} Hz: it holds nothing above {rate // 2} Hz, where bearing defects "
                                "and cavitation ring (the models read up to 7.8 kHz), so audio withholds both; "
                                f"record at {SAMPLE_RATE} Hz or more")
                        if msg.stats.get(ORDERS_ABOVE_ENVELOPE_STAT, 0.0) >= 0.5:
                            result.warnings.append(
                                f"read at {60.0 * result.shaft_hz:.0f} rpm, the bearing's lowest fault frequency "
                                f"({lowest_bearing_fault_hz(result.shaft_hz, profile):.0f} Hz) lies above the "
                                f"{ENV_MAX_HZ:.0f} Hz the audio model reads the envelope spectrum to, so audio withholds "
                                "bearing wear; thermal and the PLC still judge it")
                        if profile.vfd and hint is None and carrier_hz is None:
                            result.warnings.append(
                                f"a drive machine read at {60.0 * result.shaft_hz:.0f} rpm, the speed found in its "
                                "sound (on drives that is sometimes a harmonic or another tone: docs/models.md, "
                                "\"Audio: the running speed of a drive machine\"); if the drive showed another speed, "
                                "give it with --speed-rpm")
                        if profile.bearing_note:
                            result.warnings.append(profile.bearing_note)
                        if profile.reciprocating:
                            result.warnings.append("a reciprocating machine (assets.json): its valves and crank "
                                                   "knock in step with the shaft like a bearing defect, so audio "
                                                   "withholds bearing wear; thermal and the PLC still judge it")
                        if aid not in baselines:
                            result.warnings.append("read without the machine's healthy sound: audio withholds "
                                                   "imbalance and reads the shaft's 1x level as a healthy machine's "
                                                   "(one recording cannot show it; give one made when the "
                                                   "machine was healthy with --healthy-audio)")
                        elif not baselines[aid].covers(clip_speed(msg.vector)):
                            result.warnings.append(
                                f"the machine runs at {clip_speed(msg.vector):.1f} Hz here, its healthy recording at "
                                f"{baselines[aid].describe()}: read without it, audio withholds imbalance (shaft "
                                "levels change with speed; give a healthy recording at this speed too)")
                    else:
                        if profile.unknown_regions:
                            result.warnings.append(unknown_regions_note(profile.unknown_regions))
                        if profile.unreadable_regions:
                            result.warnings.append(unreadable_regions_note(profile.unreadable_regions))
                        at_load = reference_load(common_point(points.get(aid, [])), healthy_points.get(aid), profile)
                        if references.get(aid) and at_load.note:
                            result.warnings.append(at_load.note)
                        msg = thermal_message_any_unit(aid, profile.asset_type, 0, read_frame(path, result.warnings),
                                                       profile, source=str(path), warnings=result.warnings,
                                                       references=references.get(aid, ()) if at_load.use else (),
                                                       reference_rise_ratio=at_load.rise_ratio)
                    inputs, stats = [input_array(modality, msg)], msg.stats
                    asset_type = profile.asset_type
                probs, classes, name = self._predict(modality, inputs, asset_type)
                result.withheld = sorted({c for x in inputs for c in withheld_classes(modality, x, stats)} & set(classes))
                if modality == "plc" and (note := missing_tags_note(inputs)):
                    result.warnings.append(note)
                if modality == "plc" and (note := rounded_temperatures_note(self._fills.get("plc"), inputs)):
                    result.warnings.append(note)
                if modality == "thermal" and float((stats or {}).get(TERMINAL_CROSSED_STAT, 0.0)) >= 0.5:
                    result.warnings.append(terminal_crossed_note())
                if (modality == "thermal" and float((stats or {}).get("regions_proposed", 0.0)) >= 0.5
                        and "electrical_overheating" not in result.withheld):
                    result.warnings.append(proposed_hot_connection_note(inputs[0]))
                if result.withheld:  # dropped, the rest renormalised (models.withheld_classes)
                    kept = drop_withheld(dict(zip(classes, probs.tolist(), strict=True)), result.withheld, classes)
                    probs = np.array([kept[c] for c in classes])
                ruled = [ruled_out(modality, x, stats) for x in inputs]  # on at least half of the file's inputs
                result.ruled_out = sorted(c for c in set(classes) if 2 * sum(c in r for r in ruled) >= len(ruled) > 0)
                if result.ruled_out:  # at 0, the rest renormalised (models.ruled_out)
                    kept = rule_out(dict(zip(classes, probs.tolist(), strict=True)), result.ruled_out, classes)
                    probs = np.array([kept[c] for c in classes])
                    first = next(x for x, r in zip(inputs, ruled, strict=True) if r)
                    result.warnings.append(ruled_out_note(modality, first, stats))
                beyond = {n: side for x in inputs for n, side in self.beyond_training(modality, x).items()}
                # inputs beyond the range that show more of the named fault are evidence, not a guess
                named = classes[int(np.argmax(probs))]
                judged = extrapolation(modality, named, beyond)
                result.outside_training, result.evidence_beyond_training = judged.outside, judged.evidence
                result.extrapolating = judged.extrapolating
                if result.extrapolating:
                    result.warnings.append(extrapolation_note(judged.counted))
                if result.evidence_beyond_training:
                    result.warnings.append(evidence_beyond_training_note(result.evidence_beyond_training, named))
            except (InspectInputError, ValueError, OSError) as exc:
                result.error = str(exc)
                continue
            except Exception as exc:  # noqa: BLE001 - one odd file must not stop the others
                result.error = f"{type(exc).__name__}: {exc} (unexpected; please report it with the file)"
                continue
            result.probabilities = {c: float(p) for c, p in zip(classes, probs, strict=True)}
            result.label = classes[int(np.argmax(probs))]
            result.model = name
            if result.asset_id:
                probs_by_asset[result.asset_id][modality].append(probs)
                withheld_by_asset[result.asset_id][modality].update(result.withheld)
                files_by_asset[result.asset_id].append(result.file)
                if result.extrapolating:
                    extrapolating[result.asset_id].add(modality)
        results = [by_index[i] for i in range(len(paths))]
        for bad in unread:  # each of its machine's files says what it was read without
            for result in results:
                if bad.asset_id is not None and result.asset_id == bad.asset_id and result.error is None:
                    result.warnings.append(f"read without the healthy {bad.modality} reference {Path(bad.file).name}, "
                                           "which could not be read (its own record says why)")
        results += unread
        verdicts = []
        for aid, per_mod in probs_by_asset.items():
            if len(per_mod) < 2:
                continue
            mean = {m: dict(zip(classes, np.mean(v, axis=0).tolist(), strict=True)) for m, v in per_mod.items()}
            # a modality that extrapolates enters with flattened probabilities (it may not outvote the others)
            fused_in = {m: temper(p, EXTRAPOLATION_POWER) if m in extrapolating[aid] else p for m, p in mean.items()}
            profile = self.assets.get(aid) or AssetProfile(asset_id=aid)
            fused = fuse(fused_in, classes=tuple(classes), weights=self.fusion, expected=tuple(per_mod),
                         asset_type=profile.asset_type, withheld=withheld_by_asset[aid])
            verdicts.append(AssetVerdict(aid, fused.label, fused.probabilities, fused.confidence, fused.coverage,
                                         {m: max(p, key=p.get) for m, p in mean.items()}, files_by_asset[aid],
                                         {m: sorted(w) for m, w in sorted(withheld_by_asset[aid].items()) if w}))
        return results, verdicts


def _speed_hint(asset_id: str, given: Mapping[str | None, float], from_plc: Mapping[str, tuple[float, str]]
                ) -> tuple[float | None, str]:
    """The speed an audio file's search looks around, and its :data:`SPEED_SOURCES` entry: the
    user's measured speed of the machine (else one given for every machine), else its PLC file's
    (measured, or its drive's speed setpoint: ``from_plc`` holds the speed and its source)."""
    if asset_id in given or None in given:
        return float(given[asset_id] if asset_id in given else given[None]), SPEED_SOURCES[1]
    if asset_id in from_plc:
        speed, source = from_plc[asset_id]
        return float(speed), source
    return None, SPEED_SOURCES[0]


#: The PLC tag each ``missing.*`` input of the PLC vector stands for, as a warning names it.
ABSENT_TAG_WORDS: dict[str, str] = {"current": "motor current", "speed": "speed", "bearing_temp": "bearing temperature",
                                    "winding_temp": "winding temperature", "vibration": "vibration",
                                    "pressure": "pressure"}


def at_setpoint(windows: list, setpoint_rpm: float | None) -> list:
    """The windows of an export without a speed tag read at its drive's speed setpoint (``speed_rpm`` mean
    the setpoint, its spread 0): a drive holds its shaft at the setpoint within its slip, so the healthy
    levels' speed rules (:class:`~pipeline.features.plc_baseline.BaselineRules`) can judge them, as audio
    reads such a machine around its setpoint. Windows with a speed, or without a setpoint, as they are.

    >>> from pipeline.features.plc_window import PlcWindow, plc_feature_names
    >>> names = plc_feature_names(); v = np.full(len(names), np.nan)
    >>> (w,) = at_setpoint([PlcWindow("FAN-1", 0, 10_000, v, 100)], 1672.0)
    >>> float(w.values[names.index("speed_rpm.mean")]), float(w.values[names.index("speed_rpm.std")])
    (1672.0, 0.0)
    >>> at_setpoint([w], None)[0] is w
    True
    """
    from pipeline.features.plc_window import plc_feature_names

    if setpoint_rpm is None:
        return windows
    names = plc_feature_names()
    mean, spread = names.index("speed_rpm.mean"), names.index("speed_rpm.std")
    out = []
    for w in windows:
        if np.isfinite(w.values[mean]):
            out.append(w)
            continue
        values = w.values.copy()
        values[mean], values[spread] = setpoint_rpm, 0.0
        out.append(replace(w, values=values))
    return out


def extrapolation_note(far: list[str]) -> str:
    """The warning of a file whose model inputs lie far outside the training range (``far``: their
    names, sorted).

    >>> extrapolation_note(["a", "b", "c"])
    '3 model inputs lie far outside the training range (a, b, c): the prediction extrapolates; check assets.json (speed, bearing, regions, frame unit) for this machine'
    """
    listed = f"{', '.join(far[:5])}{', ...' if len(far) > 5 else ''}"
    head = f"{len(far)} model inputs lie far outside the training range ({listed}): "
    return head + "the prediction extrapolates; check assets.json (speed, bearing, regions, frame unit) for this machine"


def evidence_beyond_training_note(names: list[str], label: str) -> str:
    """The note of a file whose inputs beyond the training range show more of the fault it names
    (:mod:`models.fault_evidence`).

    >>> evidence_beyond_training_note(["terminal_box.hotspot_excess"], "electrical_overheating")[:96]
    '1 model input lies beyond the training range on the side of electrical_overheating (terminal_box'
    """
    listed = f"{', '.join(names[:5])}{', ...' if len(names) > 5 else ''}"
    verb = "input lies" if len(names) == 1 else "inputs lie"
    return (f"{len(names)} model {verb} beyond the training range on the side of {label} ({listed}): more of that "
            "fault than any training sample showed; not counted as an extrapolation")


def unused_healthy_export_note(levels: PlcHealthyLevels) -> str:
    """The warning of a machine's PLC files where its healthy export (``--healthy-plc``) gave no level: it
    holds none of the tags a level is learnt from, or no window of normal running (with the job's reasons,
    :class:`~pipeline.features.plc_baseline.BaselineRules`). A drive's commissioning export at its usual
    speed below nameplate is such an export: vibration and pressure change with speed and are learnt at
    nameplate speed only.

    >>> print(unused_healthy_export_note(PlcHealthyLevels(None, None, 6, {"not_at_rated_speed": 6})))
    its healthy PLC export (--healthy-plc) was not used: it has no window of normal running (the machine running at a steady speed, from a speed tag, the drive's speed setpoint in rpm or, on the mains, its run state, at its nameplate speed when known (a drive's winding: down to 30% of it, with winding and bearing temperatures and the rated current), without alarms, with a vibration or pressure tag; not_at_rated_speed 6); give an export of the machine in normal operation at nameplate speed
    """
    from pipeline.features.plc_baseline import BaselineRules

    head = "its healthy PLC export (--healthy-plc) was not used: "
    if not levels.has_level_tags:
        return head + ("it holds no vibration or pressure tag, nor winding and bearing temperatures with the current "
                       "(and the rated current in assets.json), which are what a healthy export gives (the machine's "
                       "normal levels)")
    why = ", ".join(f"{k} {v}" for k, v in sorted(levels.rejected.items()))
    return head + (
        "it has no window of normal running (the machine running at a steady speed, from a speed tag, the drive's "
        "speed setpoint in rpm or, on the mains, its run state, at its nameplate speed when known (a drive's winding: down to "
        f"{BaselineRules.min_winding_speed:.0%} of it, with winding and bearing temperatures and the rated current), "
        f"without alarms, with a vibration or pressure tag; {why}); give an export of the machine in normal "
        "operation at nameplate speed")


def missing_tags_note(inputs: list[np.ndarray]) -> str | None:
    """The warning of a PLC export without some tags (``missing.*`` of its inputs; None with every tag):
    every machine the PLC model learnt from had each of them, so it reads a missing one as a healthy
    machine's (:mod:`models.missing_tags`) and withholds the classes it shows
    (:data:`models.withheld_classes.REQUIRES`).

    >>> from pipeline.features.plc_physics import PLC_VECTOR_NAMES
    >>> x = np.zeros(len(PLC_VECTOR_NAMES), np.float32)
    >>> missing_tags_note([x]) is None
    True
    >>> x[PLC_VECTOR_NAMES.index("missing.pressure")] = x[PLC_VECTOR_NAMES.index("missing.winding_temp")] = 1.0
    >>> missing_tags_note([x])  # doctest: +ELLIPSIS
    'the export has no winding temperature or pressure tag: ...; it withholds cavitation, cooling_failure'
    """
    from pipeline.features.plc_physics import PLC_VECTOR_NAMES

    absent = [words for key, words in ABSENT_TAG_WORDS.items()
              if f"missing.{key}" in PLC_VECTOR_NAMES
              and any(x.shape == (len(PLC_VECTOR_NAMES),) and x[PLC_VECTOR_NAMES.index(f"missing.{key}")] >= 0.5
                      for x in inputs)]
    if not absent:
        return None
    tags = absent[0] if len(absent) == 1 else f"{', '.join(absent[:-1])} or {absent[-1]}"
    withheld = sorted({c for x in inputs for c in withheld_classes("plc", x)})
    shown = f"; it withholds {', '.join(withheld)}" if withheld else ""
    return (f"the export has no {tags} tag: the PLC model reads {'it' if len(absent) == 1 else 'them'} as a healthy "
            f"machine's (every machine it learnt from had each tag: docs/models.md, \"PLC: an export without some "
            f"tags\"){shown}")


def ventilation_note(profile: AssetProfile, speed_rpm: float) -> str | None:
    """The warning of a PLC export of a self-ventilated motor on a drive running below its nameplate speed,
    whose winding the PLC reads as at nominal speed (:func:`pipeline.features.plc_physics.ventilation_share`;
    None where it is read as measured).

    >>> ventilation_note(AssetProfile(vfd=True, nominal_rpm=1480.0), 740.0)  # doctest: +ELLIPSIS
    'the drive ran at 50 % of the nameplate speed: a motor cooled by its own shaft fan runs warmer there, so ... x0.72; ...'
    >>> ventilation_note(AssetProfile(nominal_rpm=1480.0), 740.0) is None, ventilation_note(AssetProfile(vfd=True), 740.0)
    (True, None)
    """
    from pipeline.features.plc_physics import ventilation_share

    if not profile.nominal_rpm:
        return None
    ratio = speed_rpm / profile.nominal_rpm
    share = ventilation_share(ratio, profile)
    if share >= 1.0:
        return None
    return (f"the drive ran at {100.0 * ratio:.0f} % of the nameplate speed: a motor cooled by its own shaft fan runs "
            f"warmer there, so its winding is read as at nameplate speed (its rise over the bearing x{share:.2f}; "
            "docs/models.md, \"PLC: a drive's motor cools less at low speed\"); if this motor has a blower or a "
            "water jacket, say so with \"cooling\" in assets.json (e.g. \"IC416\")")


def rounded_temperatures_note(fill: HealthyFill | None, inputs: list[np.ndarray]) -> str | None:
    """The warning of a PLC export whose temperatures hold steadier than any RTD the model learnt from
    (:meth:`models.missing_tags.HealthyFill.steadied` on any of its inputs; None otherwise).

    >>> from pipeline.features.plc_physics import PLC_VECTOR_NAMES
    >>> names = list(PLC_VECTOR_NAMES)
    >>> ref = np.full((3, len(names)), 0.15, np.float32); ref[:, [names.index(n) for n in names if n.startswith("missing.")]] = 0
    >>> fill = HealthyFill.from_reference(ref, np.zeros(3), names)
    >>> x = ref[0].copy(); rounded_temperatures_note(fill, [x]) is None
    True
    >>> x[names.index("temp.bearing_std")] = 0.0
    >>> rounded_temperatures_note(fill, [x])  # doctest: +ELLIPSIS
    'the bearing temperature holds steadier than any RTD the PLC model learnt from (a historian that rounds ...'
    """
    if fill is None:
        return None
    steady = sorted({name for x in inputs for name in fill.steadied(x)})
    if not steady:
        return None
    words = " and ".join(ABSENT_TAG_WORDS[name.split(".")[1].removesuffix("_std") + "_temp"] for name in steady)
    one = len(steady) == 1
    return (f"the {words} {'holds' if one else 'hold'} steadier than any RTD the PLC model learnt from (a historian "
            f"that rounds {'it' if one else 'them'} or stores {'it' if one else 'them'} only on a change): "
            f"{'its' if one else 'their'} noise is read as a healthy machine's RTD noise (docs/models.md, \"PLC: "
            "temperatures a historian rounds\")")
