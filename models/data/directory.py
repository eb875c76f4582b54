"""Training data from a directory (a user's own recordings, or ``generate_dataset``'s output).

Layout (the simulator's ``generate_dataset`` writes exactly this)::

    <dir>/labels.csv      one row per sample; columns (others are ignored):
                            fault          class name (alias: label); one of the model classes
                            plc_path       PLC historian file of one window (<= 10 s), csv or jsonl
                            thermal_path   radiometric TIFF frame (any size; unit from assets.json
                                           "frame" or the value range)
                            audio_path     WAV (any rate, channels, length)
                            asset_id       optional; looked up in assets.json (speed, bearing, regions)
                            severity       optional; hidden fault severity (recall-vs-severity curves)
                            alarm_codes    optional; space-separated alarm codes active in the PLC window
                          paths are relative to <dir>; an empty cell = modality absent for that sample
    <dir>/assets.json     optional asset registry (docs/simulator.md; strongly recommended: the model
                          inputs are relative to each machine's speed, bearing and regions)
    <dir>/plc/... thermal/... audio/...   the files (any sub-layout)

Files are read with the tolerant readers of ``linewatch inspect`` (:mod:`models.inspect.readers`)
and featurised with :mod:`pipeline.features`; a file that does not decode is an error that names
it (fix or drop the row). Rows are grouped by ``asset_id`` for the train/val/test split.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np

from models.data.featurize import FEATURES_VERSION, plc_input, thermal_inputs
from models.data.samples import LabelledSamples
from models.specs import check_modality, fault_classes
from pipeline.features.audio_physics import AUDIO_VECTOR_NAMES, audio_vector
from pipeline.features.plc_physics import PLC_VECTOR_NAMES


class DatasetDirectoryError(ValueError):
    """The dataset directory does not follow the documented layout."""


def _plc_window(path: Path, alarm_codes: list[str], asset: object) -> np.ndarray:
    from models.inspect.readers import InspectInputError, read_plc
    from pipeline.features.plc_physics import plc_vector
    from pipeline.features.plc_window import PLC_TAGS

    try:
        samples = read_plc(path)
    except InspectInputError as exc:
        raise DatasetDirectoryError(f"{exc}; fix or drop this row") from exc
    index = {tag: i for i, tag in enumerate(PLC_TAGS)}
    rows = [s for s in samples if s.tag in index]
    ts = np.array([s.timestamp_ms for s in rows], np.int64)
    wide = np.full((len(rows), len(PLC_TAGS)), np.nan)
    wide[np.arange(len(rows)), [index[s.tag] for s in rows]] = [s.value for s in rows]
    bad = np.array([s.quality == "Bad" for s in rows], bool)
    order = np.argsort(ts, kind="stable")
    from pipeline.features.plc_window import plc_window_features

    # already long rows (one historian value each): feed them as the window buffer does
    return plc_vector(plc_window_features(ts[order], wide[order], alarm_codes, bad_mask=bad[order]), asset)


def load_directory(directory: Path, modality: str, classes: tuple[str, ...] | None = None) -> LabelledSamples:
    """Labelled model inputs of ``modality`` from a dataset directory (see module docstring)."""
    from models.inspect.frame_files import read_frame
    from models.inspect.readers import InspectInputError, read_wav
    from pipeline.features.asset_profile import load_profiles

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
    assets = load_profiles(json.loads((root / "assets.json").read_text())) if (root / "assets.json").is_file() else {}
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
    profiles = [assets.get((r.get("asset_id") or "").strip()) for r, _ in kept]
    ids_of = [(r.get("asset_id") or "").strip() for r, _ in kept]
    sev = [r.get("severity") for r, _ in kept]
    extra = {
        "groups": np.asarray(ids_of) if all(ids_of) else None,
        "severity": np.asarray([float(v) for v in sev], np.float32) if all(v not in (None, "") for v in sev) else None,
        "asset_types": np.asarray([(r.get("asset_type") or (p.asset_type if p else "unknown")) for (r, _), p in
                                   zip(kept, profiles, strict=True)]),
    }
    try:
        if modality == "plc":
            x = np.stack([_plc_window(p, (r.get("alarm_codes") or "").split(), profiles[i])
                          for i, (r, p) in enumerate(kept)]).astype(np.float32)
            ref, names = x.copy(), PLC_VECTOR_NAMES
        elif modality == "thermal":
            x, ref, names = thermal_inputs([read_frame(p) for _, p in kept], profiles)
        else:
            clips = [read_wav(p) for _, p in kept]
            rows = [audio_vector(c, rate, profiles[i]) for i, (c, rate) in enumerate(clips)]
            x = np.stack(rows).astype(np.float32)
            ref, names = x.copy(), AUDIO_VECTOR_NAMES
    except InspectInputError as exc:
        raise DatasetDirectoryError(f"{exc}; fix or drop this row") from exc
    return LabelledSamples(modality, x, y, classes, FEATURES_VERSION, source, ref, names, "model-input vector",
                           tuple(ids), **extra)


__all__ = ["DatasetDirectoryError", "load_directory", "plc_input"]
