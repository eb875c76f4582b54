"""Alarm logs: lines → per-line checks → activations counted in the asset's open PLC windows."""

from __future__ import annotations

from pipeline.asset_state import AssetState
from pipeline.decoders import RejectedInput, decode_alarm_file
from pipeline.handlers.base import Blob, HandlerContext
from pipeline.handlers.plc import window_buffer
from pipeline.step import StepOutput


def handle(ctx: HandlerContext, blob: Blob, state: AssetState, out: StepOutput) -> None:
    result = decode_alarm_file(blob.data, blob.ref)
    errors: list[RejectedInput] = list(result.errors)
    buf = window_buffer(state, blob.asset_id)
    late = 0
    for event in result.events:
        if event.asset_id != blob.asset_id:
            continue
        problem = ctx.policy.future(event.timestamp_ms, blob.now_ms, event.ref or blob.ref, blob.asset_id,
                                    f"{event.timestamp_ms} {event.code} {event.state}")
        if problem is not None:
            errors.append(problem)
            continue
        # an activation whose windows were all emitted is counted (alarm_late), not dead-lettered:
        # alarm logs only count in windows still open when they are read (docs/ingestion.md)
        if not buf.add_alarm_event(event) and event.state.upper() == "ACTIVE":
            late += 1
    ctx.dead.per_line(out, "pipeline.alarms", errors, blob.asset_id, blob.ref)
    out.count("alarm_events", len(result.events))
    out.count("alarm_late", late)
