"""Thermal frames: TIFF → checks → baseline-relative statistics and the normalized frame.

A frame is read against the asset's learned healthy reference near its current load once one is
learnt (:mod:`pipeline.features.thermal_commissioning`: frozen, so a slowly developing fault is not
absorbed; changes within :data:`~pipeline.features.thermal_reference.REFERENCE_DEAD_BAND_K` of it
read as none, as a healthy machine differs from day to day), else against the running baseline
(recent change). The features message says which:
``stats["baseline_reference"]`` 1.0 (learned reference) or 0.0 (running baseline or none)."""

from __future__ import annotations

import logging
import time

from linewatch.contract import Modality
from pipeline.asset_state import AssetState
from pipeline.decoders import decode_thermal_tiff
from pipeline.features.messages import thermal_features_message
from pipeline.features.region_check import RegionCheck
from pipeline.features.thermal_commissioning import ThermalCommissioning, ThermalReferenceRules
from pipeline.features.thermal_features import ThermalBaseline
from pipeline.features.thermal_reference import REFERENCE_DEAD_BAND_K
from pipeline.handlers.base import Blob, HandlerContext
from pipeline.handlers.learner_settings import follow_settings
from pipeline.step import StepOutput
from pipeline.validation import check_frame, repair_frame
from pipeline.validation.repeats import content_digest

log = logging.getLogger(__name__)


def handle(ctx: HandlerContext, blob: Blob, state: AssetState, out: StepOutput) -> None:
    entry = blob.entry
    frame = decode_thermal_tiff(blob.data, blob.ref)
    digest = content_digest(frame)
    problem = (check_frame(frame, blob.ref, ctx.frame_limits, asset_id=blob.asset_id, event_time_ms=entry.event_time_ms)
               or ctx.new_record(blob, state, "thermal") or ctx.repeated(blob, state, "thermal", digest))
    if problem is not None:
        ctx.dead.rejection(out, "pipeline.thermal", problem, blob.asset_id)
        return
    state.last_ms["thermal"], state.last_digest["thermal"] = entry.event_time_ms, digest
    out.accepted = True
    frame, dead = repair_frame(frame, ctx.frame_limits)
    if dead:
        out.count("thermal_dead_pixels_filled", dead)
    if bool(dead) != state.dead_pixels:  # logged when it changes, not per frame (dead pixels stay dead)
        if dead:
            log.warning("%s (%s): %d pixels outside the plausible range were read from their neighbours "
                        "(dead or stuck pixels; more than %.0f %% of the frame would be refused)", blob.asset_id,
                        blob.ref, dead, 100 * ctx.frame_limits.max_dead_share)
        else:
            log.info("%s (%s): thermal frames without dead pixels again", blob.asset_id, blob.ref)
        state.dead_pixels = bool(dead)
    if state.baseline is None:
        state.baseline = ThermalBaseline()
    regions = dict(blob.info.regions) if blob.info is not None and blob.info.regions else None
    boxes = ({k: (round(b[0]), round(b[1]), round(b[2]), round(b[3])) for k, b in regions.items()}
             if regions else None)
    current = motor_current(ctx, state, entry.event_time_ms)
    learner = thermal_reference(ctx, state, blob.asset_id, out)
    reference = learner.reference(current, frame, boxes) if learner is not None else None
    warnings: list[str] = []
    msg = thermal_features_message(blob.asset_id, blob.asset_type, entry.event_time_ms, frame,
                                   reference if reference is not None else state.baseline.baseline_ck, regions,
                                   source=blob.ref, ingest_time_ms=int(time.time() * 1000), asset=blob.info,
                                   warnings=warnings, check=region_check(ctx, state),
                                   baseline_band_k=REFERENCE_DEAD_BAND_K if reference is not None else 0.0)
    msg.stats["baseline_reference"] = 1.0 if reference is not None else 0.0
    msg.stats["dead_pixels"] = float(dead)
    out.count("thermal_reference_read" if reference is not None else "thermal_running_baseline_read")
    if learner is not None and not learner.learned:  # learning: a frame it takes changes the learner (saved)
        taken = len(learner.frames)
        if learner.observe(frame, entry.event_time_ms, current, boxes):
            out.count("thermal_reference_learned")
        if len(learner.frames) != taken:
            state.thermal_reference = learner
    moved = bool(warnings)  # the boxes were registered onto the frame or proposed
    if moved != state.regions_moved:  # logged when it changes (a camera moved, or was put back), not per frame
        if moved:
            log.warning("%s (%s): %s", blob.asset_id, blob.ref, "; ".join(warnings))
        else:
            log.info("%s (%s): thermal region boxes fit the frame as given again", blob.asset_id, blob.ref)
        state.regions_moved = moved
    state.baseline.update(frame)
    out.entries.append(ctx.features_entry(Modality.THERMAL, blob.asset_id, entry.event_time_ms, msg))
    out.count("entries.thermal")


def motor_current(ctx: HandlerContext, state: AssetState, event_ms: int) -> float | None:
    """The asset's newest accepted motor current (A) when it lies within
    ``flink.thermal_reference_current_age_s`` of ``event_ms``, else None."""
    if state.motor_current is None:
        return None
    at_ms, amps = state.motor_current
    return amps if abs(event_ms - at_ms) <= ctx.spec.flink.thermal_reference_current_age_s * 1000 else None


def thermal_reference(ctx: HandlerContext, state: AssetState, asset_id: str,
                      out: StepOutput) -> ThermalCommissioning | None:
    """The asset's thermal-reference learner (None when learning is off); reset once when the
    operator's ``thermal_reference_relearn`` generation of the asset changed. A learner that changed
    here is assigned back to the state (saved); a learned one that did not is only read."""
    flink = ctx.spec.flink
    if flink.thermal_reference_frames <= 0:
        return None
    generation = flink.thermal_reference_relearn.get(asset_id, 0)
    rules = ThermalReferenceRules(frames=flink.thermal_reference_frames,
                                  min_gap_ms=round(flink.thermal_reference_gap_s * 1000),
                                  current_tolerance=flink.thermal_reference_current_tolerance)
    learner: ThermalCommissioning | None = state.thermal_reference
    if learner is None:
        learner = state.thermal_reference = ThermalCommissioning(rules, generation=generation)
    elif follow_settings(learner, rules, generation, out, "thermal_reference_reset"):
        state.thermal_reference = learner
    return learner


def region_check(ctx: HandlerContext, state: AssetState) -> RegionCheck:
    """The asset's region check (memory only), at ``flink.thermal_region_check_frames``."""
    every = ctx.spec.flink.thermal_region_check_frames
    if state.region_check is None or state.region_check.every != every:
        state.region_check = RegionCheck(every=every)
    return state.region_check
