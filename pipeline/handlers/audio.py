"""Audio clips: WAV → checks → log-mel spectrogram and acoustic statistics."""

from __future__ import annotations

import time

from linewatch.contract import Modality
from pipeline.asset_state import AssetState
from pipeline.decoders import decode_wav
from pipeline.features.messages import audio_features_message
from pipeline.handlers.base import Blob, HandlerContext
from pipeline.step import StepOutput
from pipeline.validation import check_clip


def handle(ctx: HandlerContext, blob: Blob, state: AssetState, out: StepOutput) -> None:
    entry = blob.entry
    samples = decode_wav(blob.data, blob.ref)
    rate = ctx.registry.sample_rate
    problem = (check_clip(samples, rate, blob.ref, ctx.clip_limits, asset_id=blob.asset_id,
                          event_time_ms=entry.event_time_ms)
               or ctx.new_record(blob, state, "audio"))
    if problem is not None:
        ctx.dead.rejection(out, "pipeline.audio", problem, blob.asset_id)
        return
    state.last_ms["audio"] = entry.event_time_ms
    msg = audio_features_message(blob.asset_id, blob.asset_type, entry.event_time_ms, samples, rate,
                                 asset=blob.info, source=blob.ref, ingest_time_ms=int(time.time() * 1000))
    out.entries.append(ctx.features_entry(Modality.AUDIO, blob.asset_id, entry.event_time_ms, msg))
    out.count("entries.audio")
