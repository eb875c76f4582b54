"""Training data from a directory (a user's own recordings, or ``generate_dataset``'s output).

Layout (the simulator's ``generate_dataset`` writes exactly this)::

    <dir>/labels.csv      one row per sample; columns (others are ignored):
                            fault          class name (alias: label); one of the model classes
                            plc_path       PLC historian file of one window (<= 10 s), csv or jsonl
                            thermal_path   16-bit TIFF frame, 120x160 centikelvin
                            audio_path     WAV, 16 kHz mono PCM_16, 1 s
                            asset_id       optional; looked up in assets.json for audio stats
                            alarm_codes    optional; space-separated alarm codes active in the PLC window
                          paths are relative to <dir>; an empty cell = modality absent for that sample
    <dir>/assets.json     optional asset registry (bearing frequencies for audio stats)
    <dir>/plc/... thermal/... audio/...   the files (any sub-layout)

Files are decoded with the same :mod:`pipeline.decoders` as the streaming pipeline, and
featurised with :mod:`pipeline.features`; a file that does not decode is an error that
names it (fix or drop the row).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np

from models.data.featurize import FEATURES_VERSION, audio_inputs, plc_input, thermal_inputs
from models.data.samples import LabelledSamples
from models.specs import check_modality, fault_classes


class DatasetDirectoryError(ValueError):
    """The dataset directory does not follow the documented layout."""


def _plc_window(path: Path, alarm_codes: list[str]) -> np.ndarray:
    from pipeline.decoders import decode_plc_file
    from pipeline.features.plc_window import PLC_TAGS

    fmt = "jsonl" if path.suffix == ".jsonl" else "csv"
    result = decode_plc_file(path.read_bytes(), str(path), fmt)
    if result.errors and not result.samples:
        raise DatasetDirectoryError(f"{path}: no decodable PLC rows ({result.errors[0].detail}); fix or drop this row")
    index = {tag: i for i, tag in enumerate(PLC_TAGS)}
    rows = [s for s in result.samples if s.tag in index]
    ts = np.array([s.timestamp_ms for s in rows], np.int64)
    wide = np.full((len(rows), len(PLC_TAGS)), np.nan)
    wide[np.arange(len(rows)), [index[s.tag] for s in rows]] = [s.value for s in rows]
    bad = np.array([s.quality == "Bad" for s in rows], bool)
    order = np.argsort(ts, kind="stable")
    from pipeline.features.plc_window import plc_window_features

    # already long rows (one historian value each): feed them as the window buffer does
    return plc_window_features(ts[order], wide[order], alarm_codes, bad_mask=bad[order])


def load_directory(directory: Path, modality: str, classes: tuple[str, ...] | None = None) -> LabelledSamples:
    """Labelled model inputs of ``modality`` from a dataset directory (see module docstring)."""
    from pipeline.decoders import decode_thermal_tiff, decode_wav

    modality = check_modality(modality)
    root = Path(directory).expanduser()
    labels_csv = root / "labels.csv"
    if not labels_csv.is_file():
        raise DatasetDirectoryError(f"{labels_csv} not found: a dataset directory needs labels.csv (see docs/models.md)")
    classes = classes or fault_classes()
    with open(labels_csv, newline="") as f:
        rows = list(csv.DictReader(f))
    column = f"{modality}_path"
    if rows and column not in rows[0]:
        raise DatasetDirectoryError(f"{labels_csv} has no {column!r} column; columns: {sorted(rows[0])}")
    assets: dict[str, dict] = {}
    if (root / "assets.json").is_file():
        assets = {a["asset_id"]: a for a in json.loads((root / "assets.json").read_text()).get("assets", [])}
    kept, labels, ids = [], [], []
    for lineno, row in enumerate(rows, start=2):
        rel = (row.get(column) or "").strip()
        if not rel:
            continue
        label = (row.get("fault") or row.get("label") or "").strip()
        if label not in classes:
            raise DatasetDirectoryError(f"{labels_csv}:{lineno}: class {label!r} is not one of {classes}")
        path = (root / rel).resolve()
        if not path.is_file():
            raise DatasetDirectoryError(f"{labels_csv}:{lineno}: {rel} does not exist")
        kept.append((row, path))
        labels.append(classes.index(label))
        ids.append(row.get("sample_id") or rel)
    if not kept:
        raise DatasetDirectoryError(f"{labels_csv}: no sample has a {column}; nothing to train {modality} on")
    y = np.asarray(labels, np.int64)
    source = f"directory {root}"
    if modality == "plc":
        from pipeline.features.plc_window import plc_feature_names

        x = np.stack([_plc_window(p, (r.get("alarm_codes") or "").split()) for r, p in kept]).astype(np.float32)
        return LabelledSamples("plc", x, y, classes, FEATURES_VERSION, source, x.copy(), tuple(plc_feature_names()),
                               "plc_window_features", tuple(ids))
    if modality == "thermal":
        frames = np.stack([decode_thermal_tiff(p.read_bytes(), str(p)) for _, p in kept])
        x, ref, names = thermal_inputs(frames)
        return LabelledSamples("thermal", x, y, classes, FEATURES_VERSION, source, ref, names, "thermal_stats", tuple(ids))
    clips = np.stack([decode_wav(p.read_bytes(), str(p)) for _, p in kept])
    x, ref, names = audio_inputs(clips, 16_000, [assets.get(r.get("asset_id", "")) for r, _ in kept])
    return LabelledSamples("audio", x, y, classes, FEATURES_VERSION, source, ref, names, "audio_stats", tuple(ids))


__all__ = ["DatasetDirectoryError", "load_directory", "plc_input"]
