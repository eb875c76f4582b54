"""Thermal frames: TIFF → checks → baseline-relative statistics and the normalized frame.

A frame is read against the asset's learned healthy reference near its current load once one is
learnt (:mod:`pipeline.features.thermal_commissioning`: frozen, so a slowly developing fault is not
absorbed; changes within :data:`~pipeline.features.thermal_reference.REFERENCE_DEAD_BAND_K` of it
read as none, as a healthy machine differs from day to day), else against the running baseline
(recent change). A frame at a load the reference was not learnt at is read against the learned frames
nearest its current, scaled to its load (:func:`reference_at_load`, ``flink.thermal_reference_at_load``). The
features message says which: ``stats["baseline_reference"]`` 1.0 (learned reference) or 0.0 (running baseline
or none), and ``stats["baseline_rise_ratio"]`` the ratio a reference at another load was read at."""

from __future__ import annotations

import logging
import time

import numpy as np
import numpy.typing as npt

from linewatch.contract import Modality
from pipeline.asset_state import AssetState
from pipeline.decoders import decode_thermal_tiff
from pipeline.features.asset_profile import AssetProfile, as_profile
from pipeline.features.messages import thermal_features_message
from pipeline.features.region_check import RegionCheck
from pipeline.features.thermal_commissioning import ThermalCommissioning, ThermalReferenceRules
from pipeline.features.thermal_features import ThermalBaseline
from pipeline.features.thermal_load import OperatingPoint, body_rise_ratio, usable_rise_ratio
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
    ratio = None
    if reference is None and learner is not None and current is not None and ctx.spec.flink.thermal_reference_at_load:
        reference, ratio = reference_at_load(learner, current, frame, boxes, as_profile(blob.info))
    warnings: list[str] = []
    msg = thermal_features_message(blob.asset_id, blob.asset_type, entry.event_time_ms, frame,
                                   reference if reference is not None else state.baseline.baseline_ck, regions,
                                   source=blob.ref, ingest_time_ms=int(time.time() * 1000), asset=blob.info,
                                   warnings=warnings, check=region_check(ctx, state),
                                   baseline_band_k=REFERENCE_DEAD_BAND_K if reference is not None else 0.0,
                                   baseline_rise_ratio=ratio)
    msg.stats["baseline_reference"] = 1.0 if reference is not None else 0.0
    if ratio is not None:
        msg.stats["baseline_rise_ratio"] = ratio
    msg.stats["dead_pixels"] = float(dead)
    out.count("thermal_running_baseline_read" if reference is None else
              "thermal_reference_read" if ratio is None else "thermal_reference_read_at_load")
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


def reference_at_load(learner: ThermalCommissioning, current_a: float, frame_ck: npt.NDArray[np.generic],
                      boxes: dict[str, tuple[int, int, int, int]] | None, profile: AssetProfile
                      ) -> tuple[npt.NDArray[np.float32] | None, float | None]:
    """For a frame at a current no learnt frame is near: the learnt frames nearest its current
    (:meth:`~pipeline.features.thermal_commissioning.ThermalCommissioning.closest`) and the ratio they are read at
    (:func:`~pipeline.features.thermal_load.body_rise_ratio`, the speed not known here), or ``(None, None)``
    where there is no such ratio (no rated current) or it lies outside
    :data:`~pipeline.features.thermal_load.RISE_RATIO_RANGE`."""
    found = learner.closest(current_a, frame_ck, boxes)
    if found is None:
        return None, None
    ratio = body_rise_ratio(OperatingPoint(current_a), OperatingPoint(found[1]), profile)
    return (found[0], ratio) if usable_rise_ratio(ratio) else (None, None)


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
