"""Tuned Flink settings of the ingestion job (nested in ``Settings`` as ``flink``).

Every default here was chosen by measurement (docs/ingestion.md, "Latency settings");
Flink's own defaults give 0.3-2 s from file-closed to entry-in-Redis, these give tens of ms.
All are overridable (``LINEWATCH_FLINK__SCAN_INTERVAL_MS=100`` etc.), and
:meth:`FlinkSettings.flink_configuration` turns them into Flink configuration keys, to which
``extra`` adds or overrides raw keys.

>>> s = FlinkSettings()
>>> conf = s.flink_configuration(python_executable="/usr/bin/python3")
>>> conf["python.execution-mode"], conf["execution.buffer-timeout"]
('thread', '1 ms')
>>> FlinkSettings(extra={"execution.buffer-timeout": "5 ms"}).flink_configuration("/p")["execution.buffer-timeout"]
'5 ms'
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

ExecutionMode = Literal["thread", "process"]


class FlinkSettings(BaseModel):
    """Settings of the PyFlink ingestion job; defaults are the measured low-latency ones."""

    parallelism: int = Field(default=1, ge=1, le=256, description="Parallelism of every operator.")
    execution_mode: ExecutionMode = Field(
        default="thread",
        description="python.execution-mode. 'thread' runs Python in the TaskManager JVM (pemja): "
        "no gRPC hop, ~5x lower latency than 'process'.",
    )
    scan_interval_ms: int = Field(
        default=10, ge=1, description="How often the FileSource lists the manifest directory (latency floor ~ half of it)."
    )
    buffer_timeout_ms: int = Field(
        default=1, ge=0, description="execution.buffer-timeout: network buffers flush at least this often (key_by shuffle)."
    )
    watermark_interval_ms: int = Field(
        default=20, ge=1, description="pipeline.auto-watermark-interval (Flink-level watermarks, see docs)."
    )
    bundle_time_ms: int = Field(
        default=10, ge=1, description="python.fn-execution.bundle.time (process mode only; Flink default 1000)."
    )
    bundle_size: int = Field(default=1000, ge=1, description="python.fn-execution.bundle.size (process mode only).")
    checkpoint_interval_ms: int = Field(
        default=5000, ge=0, description="Checkpoint every this often; 0 disables checkpointing (no resume after a stop)."
    )
    checkpoint_dir: Path | None = Field(
        default=None, description="Filesystem path for checkpoints. Unset: <data_dir>/flink/checkpoints."
    )
    restart_initial_backoff_ms: int = Field(
        default=200, ge=0, description="Exponential-delay restart strategy: first delay after a task failure."
    )
    restart_max_backoff_ms: int = Field(default=10_000, ge=0, description="... and the largest delay.")
    manifest_dir: str = Field(
        default="manifests",
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$",
        description="Directory (relative to the landing zone) the job watches for manifests.",
    )
    archive_dir: str = Field(
        default="archive",
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$",
        description="Processed blobs and manifests are moved here (relative to the landing zone).",
    )
    archive_retention_s: float = Field(
        default=3600.0,
        ge=0.0,
        description="Archived files older than this are deleted (0 keeps them). Must exceed the longest "
        "restart you want to replay from a checkpoint.",
    )
    janitor_interval_ms: int = Field(
        default=1000, ge=10, description="How often the job archives finished manifests and prunes the archive."
    )
    thermal_region_check_frames: int = Field(
        default=10, ge=1,
        description="While an asset's thermal region boxes fit its frames as given, the job checks that they still "
        "do (the region-fit pre-check, ~2.8 ms of a 4.0 ms plant-frame message, docs/benchmarks.md) on every N-th frame only; boxes that were registered "
        "onto the frame or proposed are fitted on every frame (pipeline.features.region_check). 1 = every frame.",
    )
    plc_pressure_baseline_windows: int = Field(
        default=60, ge=0,
        description="Learning period of the per-asset PLC pressure baseline, in accepted 10 s windows (at most one "
        "per 10 s: 60 = at least 10 min of steady running at rated speed without alarms): an asset whose "
        "assets.json entry has no pressure_nominal_bar learns its running pressure and the PLC model reads it as "
        "the nominal pressure; one without vibration_normal_mm_s learns its normal vibration level, which the model "
        "reads vibration against where it is above the training fleet's 3.2 mm/s (pipeline.features.plc_baseline, "
        "docs/features.md); one with a rated current (or rated power) learns how warm its winding runs when healthy, "
        "which the model reads the winding against (pipeline.features.plc_physics.winding_scale). 0 turns learning off.",
    )
    plc_winding_settle_s: float = Field(
        default=3600.0, ge=0.0,
        description="The healthy winding level is learnt only from windows at least this long after the last "
        "standstill the job saw of the asset (a winding warms with a time constant of tens of minutes after a start; "
        "learnt while it warms, the level would be too low). An asset running when the job first sees it counts as "
        "settled.",
    )
    plc_winding_below_speed_wait_s: float = Field(
        default=3600.0, ge=0.0,
        description="The healthy winding level is learnt at nameplate speed; an asset on a drive (vfd) seen running "
        "only below it for this long since its first such window learns it from its slower windows from then on, read "
        "as its shaft fan would cool it at nameplate speed (pipeline.features.plc_baseline; counter "
        "plc_winding_baseline_below_speed).",
    )
    plc_pressure_baseline_relearn: dict[str, int] = Field(
        default_factory=dict,
        description="Asset id -> generation: an asset whose learned pressure, vibration and winding baseline was learnt under another "
        "generation (0 by default) forgets it and learns again at its next PLC file (e.g. after a repair; raise the "
        "number to do it again). The stats counter plc_pressure_baseline_reset counts it.",
    )
    audio_baseline_clips: int = Field(
        default=8, ge=0,
        description="Learning period of the per-asset healthy audio baseline, in accepted clips (at most one per "
        "audio_baseline_gap_s): each asset learns the median of its shaft-harmonic "
        "levels once, at commissioning, and the audio model reads every later clip against it, which is how it tells "
        "an imbalance from a machine that is loud at 1x anyway (pipeline.features.audio_baseline, docs/features.md). "
        "Before it is learnt the model reads the clip alone. 0 turns learning off.",
    )
    audio_baseline_gap_s: float = Field(
        default=30.0, ge=0.0,
        description="At least this long between two clips the audio baseline learns from, so that it spans the "
        "machine's operating points (8 clips, 30 s: at least 3.5 min of running).",
    )
    audio_baseline_relearn: dict[str, int] = Field(
        default_factory=dict,
        description="Asset id -> generation: an asset whose audio baseline was learnt under another generation (0 by "
        "default) forgets it and learns again from its next clips. Do it after a repair or a change to the machine "
        "(raise the number to do it again): a baseline learnt while the machine was already faulty hides that "
        "fault. The stats counter audio_baseline_reset counts it.",
    )
    thermal_reference_frames: int = Field(
        default=8, ge=0,
        description="Learning period of the per-asset healthy thermal reference, in accepted frames (at most one per "
        "thermal_reference_gap_s): each asset keeps these frames with the motor current its PLC "
        "reported around them, once, at commissioning, and the thermal model reads every later frame against those "
        "learnt near its current load, so a fault that develops over hours is not absorbed into the baseline as into "
        "the running one (pipeline.features.thermal_commissioning, docs/features.md); changes within 3 K of it read "
        "as none (a healthy machine differs by a few kelvin from day to day). Until it is learnt, and for a frame at a "
        "load it was not learnt at, the frame is read against the running baseline. Learn it while the machine is "
        "healthy (thermal_reference_relearn after a repair). 0 turns learning off.",
    )
    thermal_reference_gap_s: float = Field(
        default=60.0, ge=0.0,
        description="At least this long between two frames the thermal reference learns from, so that they span the "
        "machine's operating points (8 frames, 60 s: at least 7 min of running; hours apart average the reference "
        "over the machine's days).",
    )
    thermal_reference_current_tolerance: float = Field(
        default=0.15, gt=0.0, lt=1.0,
        description="A frame is read against the learnt frames whose motor current lies within this fraction of its "
        "own (the asset's newest accepted motor_current_a, at most thermal_reference_current_age_s from the frame).",
    )
    thermal_reference_at_load: bool = Field(
        default=True,
        description="A frame at a current no learnt frame is near is read against the learnt frames nearest its "
        "current, their motor body and terminal box scaled to its load (the motor's heat 0.2 + 0.8 (I/I_rated)^2 at "
        "the two currents; needs the rated current; within x0.5-2), instead of the running baseline "
        "(pipeline.features.thermal_load). False: the running baseline, as before.",
    )
    plc_run_up_s: float = Field(
        default=20.0, ge=0.0,
        description="PLC windows that start within this many seconds after a window in which the run state shows "
        "the machine standing still count as not running (its run-up): the PLC prediction withholds every fault "
        "on them, as on the windows with the standstill. 20 s fits the simulator's machines (bench_plc_stops); "
        "a large fan or a process that settles slowly may need more.",
    )
    thermal_reference_current_age_s: float = Field(
        default=120.0, gt=0.0,
        description="How far (event time) the asset's newest motor current may lie from a frame and still say the "
        "frame's load; older or none: the frame is learnt and read as one of a machine without a PLC feed.",
    )
    thermal_reference_relearn: dict[str, int] = Field(
        default_factory=dict,
        description="Asset id -> generation: an asset whose thermal reference was learnt under another generation (0 "
        "by default) forgets it and learns again from its next frames. Do it after a repair, a change to the machine, "
        "or a camera that was moved (raise the number to do it again). The stats counter thermal_reference_reset "
        "counts it.",
    )
    sensor_alert_after: int = Field(
        default=5, ge=0,
        description="After this many inputs of one asset's sensor refused in a row (dead letters: a covered lens, a "
        "frozen camera, a silent microphone, files cut short ...), ask the alerts service for a sensor_fault alert "
        "(AlertRequest source 'sensor'); the sensor's next accepted input clears it. 0: no such alerts "
        "(pipeline.sensor_refusals).",
    )
    reorder_timeout_ms: int = Field(
        default=30_000, ge=1,
        description="While lines of an asset are held back for a missing seq without progress, look again this "
        "often whether a manifest still lists it (if none does, skip the gap).",
    )
    reorder_give_up_ms: int = Field(
        default=600_000, ge=1,
        description="Give up on a missing seq that stays listed but is never delivered (a reused manifest name) "
        "after this long without progress: release the held lines, dead-letter the gap. Must exceed the time "
        "the source needs to read the largest backlog you expect.",
    )
    dedup_ttl_s: int = Field(
        default=86_400, ge=60, description="TTL of dead-letter dedup keys (feature entries use per-asset watermarks)."
    )
    metrics_interval_ms: int = Field(
        default=1000, ge=50, description="How often the job publishes its counters and latency to Redis."
    )
    jvm_heap: str = Field(default="512m", description="Embedded MiniCluster: JVM -Xmx of the local gateway.")
    python_threads: int = Field(
        default=1, ge=1, le=64,
        description="OMP/OpenBLAS/MKL threads of the job's Python (OMP_NUM_THREADS etc.). Scale with "
        "`parallelism`, not with BLAS threads: with the other core busy, audio features took 1.9x as long "
        "with 2 BLAS threads as with 1 (bench/bench_blas_threads.py, docs/benchmarks.md).",
    )
    index_recheck_ms: int = Field(
        default=100, ge=1,
        description="A line held for a missing seq whose own manifest the job's index has not listed yet is looked "
        "at again after this long (the index is refreshed on a background thread).",
    )
    source_rollover_manifests: int = Field(
        default=50_000, ge=0,
        description="Embedded runner: after the janitor archived this many manifests, restart the job from "
        "its checkpoint with a fresh FileSource (the source remembers every path it read; "
        "docs/ingestion.md, 'Bounded memory'). 0 never rolls over.",
    )
    stage_times_file: Path | None = Field(
        default=None,
        description="Append one JSON line per handled blob with the wall-clock time of each stage (seen, read, "
        "handled, written, done; pipeline/stage_times.py) to this file: for latency benchmarks "
        "(bench/bench_e2e.py). Unset: nothing is written.",
    )
    extra: dict[str, str] = Field(
        default_factory=dict, description="Raw Flink configuration keys, applied last (override anything above)."
    )

    def thread_env(self) -> dict[str, str]:
        """Environment that caps the native thread pools of the job's Python (numpy/scipy BLAS).

        >>> FlinkSettings(python_threads=2).thread_env()["OPENBLAS_NUM_THREADS"]
        '2'
        """
        n = str(self.python_threads)
        return {"OMP_NUM_THREADS": n, "OPENBLAS_NUM_THREADS": n, "MKL_NUM_THREADS": n}

    def resolved_checkpoint_dir(self, data_dir: Path) -> Path:
        """Checkpoint directory actually used."""
        return self.checkpoint_dir if self.checkpoint_dir is not None else Path(data_dir) / "flink" / "checkpoints"

    def flink_configuration(self, python_executable: str | None = None) -> dict[str, str]:
        """Flink configuration keys for these settings (strings, as Flink's Configuration takes them)."""
        exe = python_executable or sys.executable
        conf: dict[str, str] = {
            "parallelism.default": str(self.parallelism),
            "python.execution-mode": self.execution_mode,
            "python.executable": exe,
            "python.client.executable": exe,
            "execution.buffer-timeout": f"{self.buffer_timeout_ms} ms",
            "pipeline.auto-watermark-interval": f"{self.watermark_interval_ms} ms",
            "python.fn-execution.bundle.time": str(self.bundle_time_ms),
            "python.fn-execution.bundle.size": str(self.bundle_size),
            "restart-strategy.type": "exponential-delay",
            "restart-strategy.exponential-delay.initial-backoff": f"{self.restart_initial_backoff_ms} ms",
            "restart-strategy.exponential-delay.max-backoff": f"{self.restart_max_backoff_ms} ms",
            "restart-strategy.exponential-delay.attempts-before-reset-backoff": "2147483647",
        }
        if self.checkpoint_interval_ms > 0:
            conf.update(
                {
                    "execution.checkpointing.interval": f"{self.checkpoint_interval_ms} ms",
                    "execution.checkpointing.mode": "AT_LEAST_ONCE",
                    "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
                    "execution.checkpointing.num-retained": "2",
                    "state.backend.type": "hashmap",
                }
            )
        conf.update(self.extra)
        return conf


MIB = 1 << 20


class ValidationSettings(BaseModel):
    """What the ingestion job accepts (nested in ``Settings`` as ``validation``; env
    ``LINEWATCH_VALIDATION__FUTURE_TOLERANCE_MS`` etc.). One event-time policy for every
    modality: a record (frame, clip, PLC row, alarm line) stamped more than
    ``future_tolerance_ms`` ahead of the job's clock is a ``future`` dead letter.

    >>> ValidationSettings().max_blob_bytes["thermal"] // MIB
    4
    """

    future_tolerance_ms: int = Field(
        default=60_000, ge=0,
        description="Event times further ahead of the job's wall clock than this are dead-lettered as 'future' "
        "(frames, clips, each PLC row and alarm line); PLC windows never close ahead of the clock.",
    )
    frame_min_ck: int = Field(default=20_000, ge=0, le=65_535, description="Lowest plausible pixel (centikelvin).")
    frame_max_ck: int = Field(default=50_000, ge=0, le=65_535, description="Highest plausible pixel (centikelvin).")
    frame_max_dead_share: float = Field(
        default=0.01, ge=0.0, le=0.5,
        description="Share of a frame's pixels that may lie outside the plausible range (dead or stuck pixels, "
                    "read from their neighbours); a frame with more is refused (out_of_range).",
    )
    audio_max_clipping_frac: float = Field(
        default=0.01, ge=0.0, le=1.0, description="Share of clipped samples a clip may have."
    )
    max_blob_bytes: dict[str, int] = Field(
        default_factory=lambda: {"plc": 64 * MIB, "alarms": 16 * MIB, "thermal": 4 * MIB, "audio": 16 * MIB},
        description="Largest blob per kind (the manifest's 'bytes'); a larger one is an 'out_of_range' dead "
        "letter and is never read.",
    )

    def blob_cap(self, kind: str) -> int:
        """Byte cap of a kind (the smallest cap for a kind not listed)."""
        return self.max_blob_bytes.get(kind, min(self.max_blob_bytes.values(), default=16 * MIB))
