"""PLC historian files: rows → per-row checks → the asset's sliding windows → window features.

Every row is checked on its own (registry range, ``future``, ``late`` for a row whose windows
were all emitted: one dead letter per row naming ``path:line``, capped per file), and windows
close up to the file's ``end`` (else its newest accepted row) but never past the job's clock,
so no single bad row moves an asset's windows, or its high-water mark, into the future.

An asset whose ``assets.json`` entry has no nominal pressure learns its running pressure from its
own healthy-looking windows (:mod:`pipeline.features.plc_baseline`, kept in the asset's state);
once learned, each window's model input reads it as the nominal pressure (flagged as learned in
the profile). One without ``vibration_normal_mm_s`` learns its normal vibration level the same way,
and the model reads its vibration relative to it where it is above the training fleet's or below a
typical machine's (:func:`pipeline.features.plc_physics.vibration_scale`); the counter ``plc_vibration_baseline_above_fleet``
says an asset learnt a normal level above the fleet's, which is a machine that runs rough by design
or one that was already imbalanced while it learnt (then relearn it after the repair:
``plc_pressure_baseline_relearn``). An asset with a rated current learns how warm its winding runs
when healthy (after ``plc_winding_settle_s`` of running since its last standstill), and the model
reads the winding against it (:func:`pipeline.features.plc_physics.winding_scale`: a cooling failure
of a motor that runs cool is then told from a healthy motor that runs hot). Each window is featurised
with what was learned *before* it.
"""

from __future__ import annotations

import math
import time

from linewatch.contract import DeadLetterReason, Modality
from pipeline.asset_state import AssetState
from pipeline.decoders import RejectedInput, TagSample, decode_plc_file
from pipeline.features.asset_profile import AssetProfile, as_profile
from pipeline.features.messages import plc_features_message
from pipeline.features.plc_baseline import BaselineRules, PlcBaseline, with_nameplate_speed
from pipeline.features.plc_physics import vibration_scale
from pipeline.features.plc_running import follow_run
from pipeline.features.plc_window import PlcWindowBuffer
from pipeline.handlers.base import Blob, HandlerContext
from pipeline.step import StepOutput
from pipeline.validation import InvalidRecord

MOTOR_CURRENT_TAG = "motor_current_a"  #: the tag whose newest value says a thermal frame's load (handlers.thermal)


def window_buffer(state: AssetState, asset_id: str) -> PlcWindowBuffer:
    """The asset's window buffer (shared by PLC files and alarm logs)."""
    if state.plc is None:
        state.plc = PlcWindowBuffer(asset_id)
    buf: PlcWindowBuffer = state.plc
    return buf


def plc_baseline(ctx: HandlerContext, state: AssetState, profile: AssetProfile, asset_id: str,
                 out: StepOutput) -> PlcBaseline | None:
    """The asset's pressure, vibration and winding learner, or None when there is nothing to learn
    (``assets.json`` gives its nominal pressure and its normal vibration, and no rated current to read the
    winding by) or learning is off; reset once when the operator's ``plc_pressure_baseline_relearn``
    generation of the asset changed."""
    flink = ctx.spec.flink
    windows, generation = flink.plc_pressure_baseline_windows, flink.plc_pressure_baseline_relearn.get(asset_id, 0)
    if windows <= 0 or (profile.pressure_nominal_bar is not None and profile.vibration_normal_mm_s is not None
                        and profile.rated_current_a is None):
        return None
    rules = BaselineRules(windows=windows, winding_settle_ms=round(1000 * flink.plc_winding_settle_s),
                          below_speed_wait_ms=round(1000 * flink.plc_winding_below_speed_wait_s))
    learner: PlcBaseline | None = state.pressure
    if learner is None:
        learner = state.pressure = PlcBaseline(rules, generation=generation)
    elif learner.rules != rules:  # the settings changed since the state was written
        learner.rules = rules
        state.pressure = learner
    if learner.generation != generation:
        learner.reset()
        learner.generation = generation
        state.pressure = learner
        out.count("plc_pressure_baseline_reset")
    return learner


def _learning(learner: PlcBaseline, profile: AssetProfile) -> bool:
    """Whether the learner still has something to learn (and so changes, and is saved)."""
    return ((profile.pressure_nominal_bar is None and not learner.learned)
            or (profile.vibration_normal_mm_s is None and learner.learned_vib_mm_s is None)
            or (profile.rated_current_a is not None and learner.learned_winding_k is None
                and not learner.winding_unavailable))


def _excerpt(sample: TagSample) -> str:
    return f"{sample.timestamp_ms} {sample.full_tag}={sample.value} {sample.quality}"


def handle(ctx: HandlerContext, blob: Blob, state: AssetState, out: StepOutput) -> None:
    entry = blob.entry
    result = decode_plc_file(blob.data, blob.ref, "jsonl" if blob.ref.endswith(".jsonl") else "csv")
    errors: list[RejectedInput] = list(result.errors)
    buf = window_buffer(state, blob.asset_id)
    registry = ctx.registry.registry
    foreign = late = 0
    newest: int | None = None
    for sample in result.samples:
        if sample.asset_id != blob.asset_id:
            foreign += 1
            continue
        ref = sample.ref or blob.ref
        problem = (registry.check_tag_sample(sample, ref) if registry is not None else None) or ctx.policy.future(
            sample.timestamp_ms, blob.now_ms, ref, blob.asset_id, _excerpt(sample))
        if problem is not None:
            errors.append(problem)
            continue
        if not buf.add_sample(sample):
            late += 1
            errors.append(InvalidRecord(
                DeadLetterReason.LATE, f"sample at {sample.timestamp_ms} is older than the windows already emitted for "
                f"{blob.asset_id} (last window end {buf.last_closed_end})", ref, _excerpt(sample),
                asset_id=blob.asset_id, event_time_ms=sample.timestamp_ms))
            continue
        newest = sample.timestamp_ms if newest is None else max(newest, sample.timestamp_ms)
        if (sample.tag == MOTOR_CURRENT_TAG and sample.quality != "Bad" and math.isfinite(sample.value)
                and (state.motor_current is None or sample.timestamp_ms >= state.motor_current[0])):
            state.motor_current = (sample.timestamp_ms, sample.value)  # what a thermal frame's load is read by
    ctx.dead.per_line(out, "pipeline.plc", errors, blob.asset_id, blob.ref)
    out.accepted = newest is not None  # some of its samples were taken
    if foreign:
        ctx.dead.add(out, "pipeline.plc", DeadLetterReason.SCHEMA_ERROR,
                     f"{foreign} rows name another asset than the manifest's {blob.asset_id!r}", blob.ref,
                     asset_id=blob.asset_id)
    out.count("plc_late_samples", late)
    out.count("plc_samples", len(result.samples) - foreign)
    end_ms = entry.end_ms
    if end_ms is not None and ctx.policy.future(end_ms, blob.now_ms, blob.ref) is not None:
        end_ms = None  # an 'end' ahead of the clock closes nothing (the rows themselves were checked)
        out.count("plc_future_end")
    watermark = ctx.policy.watermark(newest, end_ms, blob.now_ms)
    if watermark is None:
        return
    windows = buf.advance(watermark)
    if not windows:
        return
    profile = as_profile(blob.info)
    learner = plc_baseline(ctx, state, profile, blob.asset_id, out)
    if learner is not None and _learning(learner, profile):
        state.pressure = learner  # it changes in this file's windows: saved with the asset's state
    for window in windows:
        asset: object = blob.info
        if learner is not None:
            asset = (profile.with_learned_pressure(learner.learned_bar).with_normal_vibration(learner.learned_vib_mm_s)
                     .with_normal_winding(learner.learned_winding_k))
            values = with_nameplate_speed(window.values, profile)  # a machine on the mains: runs at nameplate speed
            if profile.pressure_nominal_bar is None and learner.observe(values, window.end_ms, profile.nominal_rpm):
                out.count("plc_pressure_baseline_learned")
            if profile.vibration_normal_mm_s is None and learner.observe_vibration(
                    values, window.end_ms, profile.nominal_rpm):
                out.count("plc_vibration_baseline_learned")
                if vibration_scale(learner.learned_vib_mm_s) < 1.0:  # rough by design, or imbalanced while learnt
                    out.count("plc_vibration_baseline_above_fleet")
            if profile.rated_current_a is not None:
                below = learner.win_below
                if learner.observe_winding(values, window.end_ms, profile.nominal_rpm, profile.rated_current_a,
                                           profile):
                    out.count("plc_winding_baseline_learned")
                if learner.win_below and not below:  # a drive that did not reach nameplate speed: its slower windows
                    out.count("plc_winding_baseline_below_speed")
        msg = plc_features_message(window, blob.asset_type, source=blob.ref, ingest_time_ms=int(time.time() * 1000),
                                   asset=asset)
        state.plc_standstill_ms = follow_run(msg.stats, window.start_ms, state.plc_standstill_ms,  # the run-up
                                             round(1000 * ctx.spec.flink.plc_run_up_s))
        out.entries.append(ctx.features_entry(Modality.PLC, blob.asset_id, window.end_ms, msg))
        out.count("entries.plc")
    if learner is not None and _learning(learner, profile):
        state.pressure = learner  # learning again (a winding temperature appeared on a machine that had none)
