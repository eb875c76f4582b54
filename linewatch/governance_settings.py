"""Settings of the governance services, nested in ``linewatch.settings.Settings`` (``drift``).

Plain pydantic, no governance imports (core must not import a stage). Environment variables follow
the usual scheme, e.g. ``LINEWATCH_DRIFT__ALPHA=0.001``, ``LINEWATCH_DRIFT__SHADOW_FRACTION=0.25``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from linewatch.service_settings import WorkerSettings


class ModalityWindows(BaseModel):
    """Window sizes of one modality where they differ from the drift section's (unset: the section's).

    The sizes count vectors; modalities arrive at different rates (PLC windows 1/s, thermal frames 2/s, audio
    clips 1/s per asset) and with different serial dependence, so what a window of 200 vectors is worth differs
    (docs/drift.md "Demo drift")."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    window: int | None = Field(default=None, ge=20)
    baseline_size: int | None = Field(default=None, ge=20)
    fleet_window: int | None = Field(default=None, ge=20)
    warmup_s: float | None = Field(default=None, ge=0.0)
    asset_windows: bool = Field(default=True, description="False: test this modality's fleet windows only, no "
                                "asset against its own baseline (features that wander on a live line).")


class DriftSettings(WorkerSettings):
    """``linewatch serve drift``: feature, prediction, error-stream and shadow-teacher drift (docs/drift.md)."""

    modalities: tuple[str, ...] = ("plc", "thermal", "audio")
    registry: Path | None = Field(None, description="Model registry root (cards, reference samples, teachers). "
                                  "Unset: the shipped models/default.")
    model_version: str | None = Field(None, description="Unset: the newest version, as inference serves it.")
    # -- feature drift -------------------------------------------------------------------------------
    window: int = Field(200, ge=20, description="Vectors per asset window (tumbling; also the minimum window size).")
    fleet_window: int = Field(500, ge=20, description="Vectors per pooled fleet window (tested against the card).")
    baseline_size: int = Field(300, ge=20, description="An asset's first vectors that form its own reference.")
    asset_reference: Literal["baseline", "card"] = Field(
        "baseline", description="What an asset window is tested against: its own baseline or the card's sample.")
    fleet_reference: Literal["card", "baseline"] = Field(
        "card", description="What the pooled fleet window is tested against: the card's training sample, or the "
                            "line's own first fleet window (a line that never looked like the training fleet).")
    warmup_s: float = Field(15.0, ge=0.0, description="An asset's first seconds of vectors (event time) enter no "
                            "baseline and no window: PLC windows hold less than 10 s of samples and the thermal "
                            "running baseline does not exist yet (docs/drift.md 'Live lines').")
    min_effect: float = Field(0.0, ge=0.0, description="A feature drifts only when its live median also moved this "
                              "many standard deviations of the card's reference sample (practical significance "
                              "against the natural wander of serially dependent live features; 0: off).")
    serial_dependence: bool = Field(True, description="KS p-values from the effective sizes n / tau (integrated "
                                    "autocorrelation time per feature) of time-ordered windows and baselines, not "
                                    "their lengths (docs/drift.md 'Serial dependence').")
    min_n_eff: float = Field(20.0, ge=0.0, description="With serial_dependence: a feature whose window or "
                             "baseline is worth fewer independent draws is not tested in that window.")
    modality_windows: dict[str, ModalityWindows] = Field(
        default_factory=dict, description="Per-modality window sizes and warm-up where they differ from the "
        "ones above, e.g. LINEWATCH_DRIFT__MODALITY_WINDOWS='{\"audio\": {\"window\": 60, \"baseline_size\": 120}}'.")
    alpha: float = Field(0.01, gt=0.0, lt=0.5, description="Level per window after the correction across "
                         "features: the configured false-alarm rate per window.")
    correction: Literal["bonferroni", "bh"] = "bonferroni"
    raise_after: int = Field(2, ge=1, description="Raise after this many consecutive drifted windows.")
    clear_after: int = Field(3, ge=1, description="Clear after this many consecutive clean windows.")
    cooldown: int = Field(2, ge=0, description="Windows after a clear in which no new raise happens.")
    fleet_fraction: float = Field(0.6, gt=0.0, le=1.0, description="Cause 'fleet' when this share of assets drifted.")
    min_fleet_assets: int = Field(3, ge=2)
    sensor_max_groups: int = Field(1, ge=1, description="Cause 'sensor' when the drifted features span at most "
                                   "this many feature groups.")
    fleet_horizon_ms: int = Field(600_000, ge=1000, description="Assets whose last window ended this recently "
                                  "count towards the fleet share.")
    # -- prediction drift ----------------------------------------------------------------------------
    prediction_drift: bool = True
    prediction_reference: Literal["baseline", "card"] = Field(
        "baseline", description="Label mix to compare with: the first predictions after start, or the card's "
                                "reference labels (class-balanced training data: only for balanced lines).")
    fault_verdicts: bool = Field(True, description="Read the fusion verdicts when a window drifts: drift on an asset "
                                 "with an open fault episode (and a prediction shift coming from such assets) gets "
                                 "cause 'fault', not sensor/machine/model.")
    fault_share: float = Field(0.5, gt=0.0, le=1.0, description="Prediction drift is cause 'fault' when assets with "
                               "an open fault episode account for at least this share of the label shift.")
    prediction_baseline: int = Field(500, ge=20)
    prediction_window: int = Field(500, ge=20)
    # -- error-stream drift (operator feedback) --------------------------------------------------------
    error_detectors: tuple[str, ...] = ("EDDM", "ADWIN", "PageHinkley")
    error_clear_after: int = Field(200, ge=1, description="Clear an error-drift alarm after this many outcomes "
                                   "without a new detection.")
    # -- shadow teacher (label-free) ---------------------------------------------------------------------
    shadow: bool = True
    shadow_fraction: float = Field(0.1, ge=0.0, le=1.0, description="Share of predicted inputs the teacher scores.")
    shadow_window: int = Field(200, ge=20, description="Scored inputs per level test.")
    shadow_alpha: float = Field(0.001, gt=0.0, lt=0.5)
    shadow_detectors: tuple[str, ...] = ("ADWIN",)
    shadow_backend: Literal["onnxruntime", "triton"] = "onnxruntime"
    triton_url: str | None = None
    max_batch: int = Field(256, ge=1, le=4096)

    def asset_windows(self, modality: str) -> bool:
        """Whether ``modality``'s assets are tested against their own baselines."""
        return self.modality_windows.get(modality, ModalityWindows()).asset_windows

    def windows(self, modality: str) -> tuple[int, int, int, float]:
        """(window, baseline_size, fleet_window, warmup_s) of ``modality``."""
        o = self.modality_windows.get(modality, ModalityWindows())
        return (o.window or self.window, o.baseline_size or self.baseline_size, o.fleet_window or self.fleet_window,
                self.warmup_s if o.warmup_s is None else o.warmup_s)
