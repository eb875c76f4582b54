"""Simulator configuration and difficulty profiles.

:class:`SimulatorConfig` is a plain pydantic ``BaseModel`` so that the project's
settings module can embed it as a nested section.  :class:`DifficultyProfile`
turns the ``difficulty`` name into the numeric knobs the physics uses.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

Difficulty = Literal["easy", "realistic", "hard"]
SensorClocks = Literal["independent", "synchronised"]

#: Fixed epoch of simulated time in batch mode and for dataset samples.
DEFAULT_START_TIME = datetime(2026, 11, 29, 14, 0, 0, tzinfo=timezone.utc)


class SimulatorConfig(BaseModel):
    """All knobs of the simulated factory.  Defaults describe a 50 Hz plant."""

    model_config = ConfigDict(extra="forbid")

    seed: int = Field(default=7, description="Master seed; same seed -> byte-identical output.")
    difficulty: Difficulty = Field(default="realistic", description="Selects a DifficultyProfile.")
    line_frequency_hz: float = Field(default=50.0, ge=45.0, le=65.0, description="Mains frequency.")
    plc_rate_hz: float = Field(default=10.0, gt=0.0, le=100.0, description="PLC tag sample rate.")
    thermal_fps: float = Field(default=2.0, ge=1.0, le=9.0,
                               description="Thermal frames per second per asset.")
    audio_rate_hz: int = Field(default=16000, ge=12000, le=48000, description="Audio sample rate.")
    audio_chunk_s: float = Field(default=1.0, gt=0.0, le=10.0, description="Audio clip length in seconds.")
    plc_format: Literal["csv", "jsonl"] = Field(default="csv", description="PLC file encoding.")
    roll_seconds: float = Field(default=1.0, ge=0.05, le=3600.0,
                                description="Real-time mode: rolling PLC/alarm files are closed this often.")
    batch_roll_seconds: float = Field(default=60.0, ge=1.0, le=86400.0,
                                      description="Batch mode: rolling files cover this much simulated time.")
    manifest_max_delay_ms: float = Field(
        default=10.0, ge=0.0, le=1000.0,
        description="Real-time mode: how long a closed blob may wait for its manifest. As each blob closes, the "
                    "gateway publishes the pending lines once the oldest is this old (0: one manifest per closed "
                    "blob); every tick (<= 100 ms) publishes what is left. Batch mode publishes per roll.")
    sensor_clocks: SensorClocks = Field(
        default="independent",
        description="Real-time mode: 'independent' - every asset's camera, microphone and PLC historian close "
                    "their files at their own phase within their period (drawn from the seed), as the "
                    "unsynchronised devices of a real line do; 'synchronised' - every device of the line closes at "
                    "the same instants (all frames, clips and rolls of a period at once: the worst case for the "
                    "ingestion job). Batch mode is always synchronised.")
    write_manifests: bool = Field(default=True,
                                  description="Announce every closed blob in <landing>/manifests/ (the ingestion "
                                              "contract); off for callers that publish manifests themselves.")
    fault_fraction: float = Field(default=0.5, ge=0.0, le=1.0,
                                  description="Share of assets that carry a fault episode per scenario block.")
    drift_fraction: float = Field(default=0.34, ge=0.0, le=1.0,
                                  description="Share of assets (streams) or samples (dataset) with sensor drift.")
    ambient_c: float = Field(default=22.0, ge=-20.0, le=50.0, description="Hall ambient temperature (degC).")
    start_time: datetime = Field(default=DEFAULT_START_TIME,
                                 description="Batch-mode epoch (UTC). Real-time mode uses the wall clock.")
    realtime_episode_s: float = Field(default=600.0, ge=10.0,
                                      description="Real-time mode: length of a scenario block (fault/drift episodes).")
    thermal_time_constant_s: float = Field(default=60.0, gt=0.0,
                                           description="Bearing thermal time constant (compressed time).")
    stops_per_hour: float = Field(default=3.0, ge=0.0, description="Mean unplanned stops per asset-hour.")
    nuisance_alarms_per_hour: float = Field(default=6.0, ge=0.0,
                                            description="Mean A900 COMMS RETRY alarms per asset-hour.")
    bad_quality_rate: float = Field(default=0.001, ge=0.0, le=0.5, description="Share of PLC samples with quality Bad.")
    uncertain_quality_rate: float = Field(default=0.004, ge=0.0, le=0.5,
                                          description="Share of PLC samples with quality Uncertain.")
    ground_truth_step_s: float = Field(default=10.0, gt=0.0,
                                       description="Fault intervals in ground_truth.csv are split this finely.")
    dataset_fleet_size: int = Field(default=12, ge=3, le=999, description="Assets drawn on by generate_dataset.")
    dataset_plc_window_s: float = Field(default=10.0, gt=0.0, le=600.0, description="PLC window per dataset sample.")
    dataset_incipient_share: float = Field(default=0.3, ge=0.0, le=1.0,
                                           description="Share of 'normal' dataset samples with a sub-threshold fault.")

    @field_validator("start_time")
    @classmethod
    def _utc(cls, v: datetime) -> datetime:
        if v.tzinfo is None:
            v = v.replace(tzinfo=timezone.utc)
        return v.astimezone(timezone.utc)

    @property
    def profile(self) -> DifficultyProfile:
        """The :class:`DifficultyProfile` selected by ``difficulty``."""
        return PROFILES[self.difficulty]


@dataclass(frozen=True)
class DifficultyProfile:
    """Numeric knobs behind a difficulty level.

    Attributes:
        plc_noise: multiplier on PLC measurement noise.
        netd_k: thermal temporal noise (NETD) in kelvin.
        fpn_scale: multiplier on the thermal fixed-pattern non-uniformity.
        audio_noise: multiplier on factory background and microphone noise.
        signature_gain: fault-signature strength at a given severity (1 = nominal).
        asset_variation: spread of asset-to-asset differences (speeds, thermal
            rises, sensor calibration, camera pose).
        drift_magnitude: scale of injected sensor drift.
        severity_a, severity_b: Beta(a, b) shape of dataset fault severities
            (mapped onto ``[LABEL_THRESHOLD, 1]``); small ``a`` / large ``b``
            means more early-stage, subtle faults.
        pose_jitter_px: per-frame camera shake (pixels, 1 sigma).
        confounder_rate: multiplier on nuisance events (foreign noises,
            nuisance alarms, scene distractors).
        operating_spread: multiplier on how widely the operating point varies.
    """

    name: str
    plc_noise: float
    netd_k: float
    fpn_scale: float
    audio_noise: float
    signature_gain: float
    asset_variation: float
    drift_magnitude: float
    severity_a: float
    severity_b: float
    pose_jitter_px: float
    confounder_rate: float
    operating_spread: float

    def as_dict(self) -> dict[str, float | str]:
        """Plain dict (for docs/metadata)."""
        return asdict(self)


PROFILES: dict[str, DifficultyProfile] = {
    "easy": DifficultyProfile("easy", plc_noise=0.5, netd_k=0.035, fpn_scale=0.5, audio_noise=0.6,
                              signature_gain=1.6, asset_variation=0.4, drift_magnitude=0.5,
                              severity_a=2.5, severity_b=1.5, pose_jitter_px=0.2, confounder_rate=0.5,
                              operating_spread=0.5),
    "realistic": DifficultyProfile("realistic", plc_noise=1.0, netd_k=0.05, fpn_scale=1.0, audio_noise=1.0,
                                   signature_gain=1.0, asset_variation=1.0, drift_magnitude=1.0,
                                   severity_a=1.2, severity_b=2.2, pose_jitter_px=0.4, confounder_rate=1.0,
                                   operating_spread=1.0),
    "hard": DifficultyProfile("hard", plc_noise=1.5, netd_k=0.07, fpn_scale=1.6, audio_noise=1.5,
                              signature_gain=0.7, asset_variation=1.3, drift_magnitude=1.5,
                              severity_a=1.0, severity_b=3.0, pose_jitter_px=0.7, confounder_rate=1.8,
                              operating_spread=1.3),
}


def profile_for(config: SimulatorConfig) -> DifficultyProfile:
    """Return the difficulty profile for ``config``."""
    return PROFILES[config.difficulty]
