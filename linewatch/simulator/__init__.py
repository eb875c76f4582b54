"""linewatch simulated factory.

A physically grounded, deterministic simulator of a small production line
(pumps, presses, conveyors) that writes the same files an edge gateway would:
PLC historian samples, controller alarms, radiometric thermal frames and
microphone clips - plus the hidden ground truth.  It is the project's test
bench, demo source and ML training-data generator.

Entry points::

    from linewatch.simulator import Factory, SimulatorConfig, generate_dataset

    Factory(SimulatorConfig(seed=7), n_assets=6).run_batch("out/", minutes=2)
    Factory(cfg).run_realtime("landing/", duration_s=60)           # wall-clock pace
    generate_dataset("data/", samples_per_class=300, config=cfg)  # labelled samples
    generate_arrays(100, cfg)                                      # same, in memory

See ``docs/simulator.md`` for the physics and the on-disk formats.

Submodules are imported on first use (PEP 562 ``__getattr__``): importing ``linewatch.settings``
(which needs only ``linewatch.simulator.config``) must not pull in scipy.signal — that import
alone cost ~1.3 s in each of the three processes of an ingest (re)start (docs/benchmarks.md,
"Restart after a power cut").
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .analysis import envelope_spectrum, peak_ratio, tone_amplitude
    from .assets import (
                         ASSET_TYPES,
                         BEARING_CATALOGUE,
                         REGION_NAMES,
                         Asset,
                         BearingGeometry,
                         asset_registry_json,
                         make_fleet,
    )
    from .config import PROFILES, DifficultyProfile, SimulatorConfig, profile_for
    from .dataset import (
                         LABEL_COLUMNS,
                         MODALITIES,
                         DatasetArrays,
                         DatasetSummary,
                         SampleRenderer,
                         SampleSpec,
                         dataset_fleet,
                         draw_specs,
                         generate_arrays,
                         generate_dataset,
                         iter_samples,
                         make_spec,
    )
    from .drift import DRIFT_KINDS, DriftEvent, DriftState
    from .engine import AssetStream, SensorPhases, StreamOutput
    from .factory import Factory, RunSummary
    from .ground_truth import GT_COLUMNS, GroundTruth, GroundTruthInterval
    from .health import FAULT_CLASSES, FAULTS, LABEL_THRESHOLD, FaultEpisode, faults_for, label_for
    from .plc import CSV_HEADER as PLC_CSV_HEADER
    from .tags import PLC_TAGS, QUALITIES, TAG_UNITS
    from .thermal import FRAME_SHAPE, region_mean_c
    from .writer import atomic_write_bytes, atomic_write_text

_EXPORTS: dict[str, tuple[str, str]] = {
    "envelope_spectrum": ("analysis", "envelope_spectrum"),
    "peak_ratio": ("analysis", "peak_ratio"),
    "tone_amplitude": ("analysis", "tone_amplitude"),
    "ASSET_TYPES": ("assets", "ASSET_TYPES"),
    "BEARING_CATALOGUE": ("assets", "BEARING_CATALOGUE"),
    "REGION_NAMES": ("assets", "REGION_NAMES"),
    "Asset": ("assets", "Asset"),
    "BearingGeometry": ("assets", "BearingGeometry"),
    "asset_registry_json": ("assets", "asset_registry_json"),
    "make_fleet": ("assets", "make_fleet"),
    "PROFILES": ("config", "PROFILES"),
    "DifficultyProfile": ("config", "DifficultyProfile"),
    "SimulatorConfig": ("config", "SimulatorConfig"),
    "profile_for": ("config", "profile_for"),
    "LABEL_COLUMNS": ("dataset", "LABEL_COLUMNS"),
    "MODALITIES": ("dataset", "MODALITIES"),
    "DatasetArrays": ("dataset", "DatasetArrays"),
    "DatasetSummary": ("dataset", "DatasetSummary"),
    "SampleRenderer": ("dataset", "SampleRenderer"),
    "SampleSpec": ("dataset", "SampleSpec"),
    "dataset_fleet": ("dataset", "dataset_fleet"),
    "draw_specs": ("dataset", "draw_specs"),
    "generate_arrays": ("dataset", "generate_arrays"),
    "generate_dataset": ("dataset", "generate_dataset"),
    "iter_samples": ("dataset", "iter_samples"),
    "make_spec": ("dataset", "make_spec"),
    "DRIFT_KINDS": ("drift", "DRIFT_KINDS"),
    "DriftEvent": ("drift", "DriftEvent"),
    "DriftState": ("drift", "DriftState"),
    "AssetStream": ("engine", "AssetStream"),
    "SensorPhases": ("engine", "SensorPhases"),
    "StreamOutput": ("engine", "StreamOutput"),
    "Factory": ("factory", "Factory"),
    "RunSummary": ("factory", "RunSummary"),
    "GT_COLUMNS": ("ground_truth", "GT_COLUMNS"),
    "GroundTruth": ("ground_truth", "GroundTruth"),
    "GroundTruthInterval": ("ground_truth", "GroundTruthInterval"),
    "FAULT_CLASSES": ("health", "FAULT_CLASSES"),
    "FAULTS": ("health", "FAULTS"),
    "LABEL_THRESHOLD": ("health", "LABEL_THRESHOLD"),
    "FaultEpisode": ("health", "FaultEpisode"),
    "faults_for": ("health", "faults_for"),
    "label_for": ("health", "label_for"),
    "PLC_CSV_HEADER": ("plc", "CSV_HEADER"),
    "PLC_TAGS": ("tags", "PLC_TAGS"),
    "QUALITIES": ("tags", "QUALITIES"),
    "TAG_UNITS": ("tags", "TAG_UNITS"),
    "FRAME_SHAPE": ("thermal", "FRAME_SHAPE"),
    "region_mean_c": ("thermal", "region_mean_c"),
    "atomic_write_bytes": ("writer", "atomic_write_bytes"),
    "atomic_write_text": ("writer", "atomic_write_text"),
}


def __getattr__(name: str) -> Any:
    try:
        module, attr = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f".{module}", __name__), attr)
    globals()[name] = value
    return value


__all__ = [
    "ASSET_TYPES", "BEARING_CATALOGUE", "DRIFT_KINDS", "FAULTS", "FAULT_CLASSES", "FRAME_SHAPE", "GT_COLUMNS",
    "LABEL_COLUMNS", "LABEL_THRESHOLD", "MODALITIES", "PLC_CSV_HEADER", "PLC_TAGS", "PROFILES", "QUALITIES",
    "REGION_NAMES", "TAG_UNITS",
    "Asset", "AssetStream", "BearingGeometry", "DatasetArrays", "DatasetSummary", "DifficultyProfile",
    "DriftEvent", "DriftState", "Factory", "FaultEpisode", "GroundTruth", "GroundTruthInterval", "RunSummary",
    "SampleRenderer", "SampleSpec", "SensorPhases", "SimulatorConfig", "StreamOutput",
    "asset_registry_json", "atomic_write_bytes", "atomic_write_text", "dataset_fleet", "draw_specs",
    "envelope_spectrum", "faults_for", "generate_arrays", "generate_dataset", "iter_samples", "label_for",
    "make_fleet", "make_spec", "peak_ratio", "profile_for", "region_mean_c", "tone_amplitude",
]
