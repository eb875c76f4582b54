"""Audio clips: WAV → checks → log-mel spectrogram, acoustic statistics and the model-input vector.

Each asset learns its healthy shaft-harmonic levels from its first clips
(:mod:`pipeline.features.audio_baseline`, kept in the asset's state, then frozen, with the shaft
speeds they were learnt at); every clip's vector reads its levels against what was learned
*before* it (zeros and ``baseline.available`` 0 until then, and for a clip at a speed the
baseline does not cover).
"""

from __future__ import annotations

import time

from linewatch.contract import Modality
from pipeline.asset_state import AssetState
from pipeline.decoders import decode_wav
from pipeline.features.audio_baseline import AudioBaseline, AudioBaselineRules
from pipeline.features.audio_physics import clip_levels, clip_speed
from pipeline.features.messages import audio_features_message
from pipeline.handlers.base import Blob, HandlerContext
from pipeline.handlers.learner_settings import follow_settings
from pipeline.step import StepOutput
from pipeline.validation import check_clip
from pipeline.validation.repeats import content_digest


def audio_baseline(ctx: HandlerContext, state: AssetState, asset_id: str, out: StepOutput) -> AudioBaseline | None:
    """The asset's audio-baseline learner (None when learning is off); reset once when the
    operator's ``audio_baseline_relearn`` generation of the asset changed. A learner that changed
    here is assigned back to the state (saved); a learned one that did not is only read."""
    flink = ctx.spec.flink
    generation = flink.audio_baseline_relearn.get(asset_id, 0)
    if flink.audio_baseline_clips <= 0:
        return None
    rules = AudioBaselineRules(clips=flink.audio_baseline_clips, min_gap_ms=round(flink.audio_baseline_gap_s * 1000))
    learner: AudioBaseline | None = state.audio_baseline
    if learner is None:
        learner = state.audio_baseline = AudioBaseline(rules, generation=generation)
    elif follow_settings(learner, rules, generation, out, "audio_baseline_reset"):
        state.audio_baseline = learner
    return learner


def handle(ctx: HandlerContext, blob: Blob, state: AssetState, out: StepOutput) -> None:
    entry = blob.entry
    samples = decode_wav(blob.data, blob.ref)
    rate = ctx.registry.sample_rate
    digest = content_digest(samples)
    problem = (check_clip(samples, rate, blob.ref, ctx.clip_limits, asset_id=blob.asset_id,
                          event_time_ms=entry.event_time_ms)
               or ctx.new_record(blob, state, "audio") or ctx.repeated(blob, state, "audio", digest))
    if problem is not None:
        ctx.dead.rejection(out, "pipeline.audio", problem, blob.asset_id)
        return
    state.last_ms["audio"], state.last_digest["audio"] = entry.event_time_ms, digest
    out.accepted = True
    learner = audio_baseline(ctx, state, blob.asset_id, out)
    msg = audio_features_message(blob.asset_id, blob.asset_type, entry.event_time_ms, samples, rate,
                                 asset=blob.info, source=blob.ref, ingest_time_ms=int(time.time() * 1000),
                                 baseline_db=learner.healthy if learner is not None else None)
    if learner is not None and not learner.learned:  # learning: every clip changes the learner
        if learner.observe(clip_levels(msg.vector), entry.event_time_ms, clip_speed(msg.vector)):
            out.count("audio_baseline_learned")
        state.audio_baseline = learner
    out.entries.append(ctx.features_entry(Modality.AUDIO, blob.asset_id, entry.event_time_ms, msg))
    out.count("entries.audio")
