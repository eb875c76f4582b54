"""Thermal frames: TIFF → checks → baseline-relative statistics and the normalized frame."""

from __future__ import annotations

import logging
import time

from linewatch.contract import Modality
from pipeline.asset_state import AssetState
from pipeline.decoders import decode_thermal_tiff
from pipeline.features.messages import thermal_features_message
from pipeline.features.region_check import RegionCheck
from pipeline.features.thermal_features import ThermalBaseline
from pipeline.handlers.base import Blob, HandlerContext
from pipeline.step import StepOutput
from pipeline.validation import check_frame

log = logging.getLogger(__name__)


def handle(ctx: HandlerContext, blob: Blob, state: AssetState, out: StepOutput) -> None:
    entry = blob.entry
    frame = decode_thermal_tiff(blob.data, blob.ref)
    problem = (check_frame(frame, blob.ref, ctx.frame_limits, asset_id=blob.asset_id, event_time_ms=entry.event_time_ms)
               or ctx.new_record(blob, state, "thermal"))
    if problem is not None:
        ctx.dead.rejection(out, "pipeline.thermal", problem, blob.asset_id)
        return
    state.last_ms["thermal"] = entry.event_time_ms
    if state.baseline is None:
        state.baseline = ThermalBaseline()
    regions = dict(blob.info.regions) if blob.info is not None and blob.info.regions else None
    warnings: list[str] = []
    msg = thermal_features_message(blob.asset_id, blob.asset_type, entry.event_time_ms, frame,
                                   state.baseline.baseline_ck, regions, source=blob.ref,
                                   ingest_time_ms=int(time.time() * 1000), asset=blob.info, warnings=warnings,
                                   check=region_check(ctx, state))
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


def region_check(ctx: HandlerContext, state: AssetState) -> RegionCheck:
    """The asset's region check (memory only), at ``flink.thermal_region_check_frames``."""
    every = ctx.spec.flink.thermal_region_check_frames
    if state.region_check is None or state.region_check.every != every:
        state.region_check = RegionCheck(every=every)
    return state.region_check
