"""Fusion stage code: each asset's modality predictions -> one verdict per evaluation.

**Event-time window join.** Every prediction that arrives for an asset triggers an evaluation at
``T`` = the newest event time seen for the asset. The latest prediction of each modality whose
event time lies in ``[T - window_ms, T]`` takes part; an older one (a late or silent modality)
is left out and listed in ``missing``: the verdict is still made, with a lower ``coverage`` and
so a lower ``confidence``. Nothing ever waits for a modality.

**Fusion rule.** ``models.fusion.fuse`` (the same rule ``linewatch inspect`` and the offline
evaluation use), with the weights from settings or ``models/default/fusion.json``.

**Extrapolation guard.** A modality whose model extrapolates for this machine (3 or more inputs far
outside its training range that do not show more of the class it names: ``models.training_range``)
enters the rule with flattened probabilities, so a confident guess cannot outvote the other
modalities; the verdict lists it in ``extrapolating`` and its reasons. ``linewatch inspect`` does the same.

**Hysteresis.** An evaluation is evidence of a fault when the fused label is not ``normal`` and
its confidence reaches ``min_confidence``; ``services.fusion.hysteresis`` turns the evidence of
``hop_ms`` event-time windows (the last evaluation of a window stands for it) into raise (k of n
windows) and clear (m clean windows) decisions.

**Exactly once.** The per-asset state (latest predictions, history, raised fault, last entry id
per input stream) is read fresh from ``StreamNames.stage_state("fusion", k)`` for every batch and
written back in the same fenced commit as the verdicts and the acknowledgements.
"""

from __future__ import annotations

import time
from pathlib import Path

from linewatch.contract import (
    DeadLetterReason,
    ModelRef,
    Prediction,
    StreamNames,
    Verdict,
    encode_message,
)
from linewatch.service_settings import FusionSettings
from linewatch.streaming import Batch, Entry, WorkerMetrics
from models.fusion import FusionWeights, fuse, temper
from models.training_range import EXTRAPOLATION_POWER, extrapolation
from models.withheld_classes import drop_withheld
from services.fusion.hysteresis import AssetState, Hysteresis, LatestPrediction

ROLE = "fusion"
DEFAULT_WEIGHTS = Path(__file__).resolve().parents[2] / "models" / "default" / "fusion.json"


def load_weights(settings: FusionSettings) -> FusionWeights:
    path = settings.weights or (DEFAULT_WEIGHTS if DEFAULT_WEIGHTS.is_file() else None)
    return FusionWeights.load(path) if path is not None else FusionWeights()


def _id_key(entry_id: str) -> tuple[int, int]:
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)


class FusionHandler:
    """Handler of the ``fusion`` role (one lease per shard covers its three prediction streams)."""

    def __init__(self, names: StreamNames, settings: FusionSettings, maxlen: int, metrics: WorkerMetrics,
                 client=None, weights: FusionWeights | None = None, clock=time.time) -> None:  # type: ignore[no-untyped-def]
        self.names = names
        self.settings = settings
        self.maxlen = maxlen
        self.client = client
        self.weights = weights or load_weights(settings)
        self.hysteresis = Hysteresis(settings.raise_k, settings.raise_n, settings.clear_m, settings.hop_ms)
        self.clock = clock
        self.role = metrics.role
        self.latency = metrics.stage_latency(
            "linewatch_stage_latency_seconds", "Ingest (features written) -> verdict written.")

    def inputs(self, shard: int) -> list[str]:
        return [self.names.predictions_shard(m, shard) for m in self.settings.expected]

    def _states(self, shard: int, assets: list[str]) -> dict[str, AssetState]:
        key = self.names.stage_state(ROLE, shard)
        raw = self.client.hmget(key, assets) if assets else []
        return {a: (AssetState.model_validate_json(r) if r else AssetState()) for a, r in zip(assets, raw)}

    def handle(self, batch: Batch) -> None:
        decoded: list[tuple[Entry, Prediction]] = []
        for entry in batch.entries:
            msg = batch.decode(entry, Prediction)
            if not isinstance(msg, Prediction):
                continue
            if msg.modality not in self.settings.expected:
                batch.dead_letter(entry, DeadLetterReason.SCHEMA_ERROR,
                                  f"fusion reads predictions of {self.settings.expected}, got {msg.modality}")
                continue
            if len(msg.classes) != len(msg.probabilities):
                batch.dead_letter(entry, DeadLetterReason.BAD_SHAPE, "classes and probabilities differ in length",
                                  msg.asset_id, msg.event_time_ms)
                continue
            decoded.append((entry, msg))
        by_shard: dict[int, list[tuple[Entry, Prediction]]] = {}
        for entry, msg in decoded:
            by_shard.setdefault(batch.shard(entry), []).append((entry, msg))
        now = int(self.clock() * 1000)
        for shard, items in by_shard.items():
            items.sort(key=lambda em: (em[1].event_time_ms, _id_key(em[0].entry_id)))
            states = self._states(shard, sorted({m.asset_id for _, m in items}))
            commit = batch.commit(shard)
            for entry, msg in items:
                state = states[msg.asset_id]
                done = state.last_ids.get(entry.stream)
                if done is None or _id_key(entry.entry_id) > _id_key(done):
                    verdict = self.evaluate(state, entry, msg, now)
                    commit.xadd(self.names.verdicts_shard(shard), encode_message(verdict))  # retention: docs/redis.md
                    if verdict.ingest_time_ms:
                        self.latency.labels(role=self.role, stage="ingest_to_verdict").observe(
                            max(now - verdict.ingest_time_ms, 0) / 1000.0)
                batch.ack(entry)
            commit.hset(self.names.stage_state(ROLE, shard), {a: s.model_dump_json() for a, s in states.items()})

    def evaluate(self, state: AssetState, entry: Entry, msg: Prediction, now_ms: int) -> Verdict:
        """Update ``state`` with ``msg`` and return the verdict of this evaluation."""
        s = self.settings
        state.asset_type = msg.asset_type or state.asset_type
        state.last_ids[entry.stream] = entry.entry_id
        prev = state.latest.get(msg.modality)
        if prev is None or msg.event_time_ms >= prev.event_time_ms:
            state.latest[msg.modality] = LatestPrediction(
                probabilities=dict(zip(msg.classes, msg.probabilities)), label=msg.label,
                event_time_ms=msg.event_time_ms, entry_id=entry.entry_id,
                model=ModelRef(name=msg.model_name, version=msg.model_version, sha256=msg.model_sha256),
                source=msg.source, ingest_time_ms=msg.ingest_time_ms, withheld=list(msg.withheld),
                beyond_training=dict(msg.beyond_training))
        t = max(p.event_time_ms for p in state.latest.values())
        window = {m: p for m, p in state.latest.items() if p.event_time_ms >= t - s.window_ms}
        classes = list(msg.classes)
        asset_type = state.asset_type or None
        # each modality as the fusion reads it (impossible, invisible and withheld classes at 0): the label the
        # verdict shows for it, and the class its extrapolation is judged against
        read = {m: self._as_read(m, p, classes, asset_type) for m, p in window.items()} if classes else {}
        named = {m: max(classes, key=lambda c: r.get(c, 0.0)) for m, r in read.items()}
        guessing = self._extrapolating(window, read, named)
        result = fuse({m: temper(p.probabilities, EXTRAPOLATION_POWER) if m in guessing else p.probabilities
                       for m, p in window.items()}, classes=classes, weights=self.weights,
                      expected=s.expected, asset_type=asset_type,
                      withheld={m: p.withheld for m, p in window.items() if p.withheld})
        evidence = result.label if result.label != "normal" and result.confidence >= s.min_confidence else "normal"
        prior = state.raised
        verdict_state = self.hysteresis.step(state, evidence, t)
        state.evaluations += 1
        label = state.raised if verdict_state == "raised" else (prior if verdict_state == "cleared" else "normal")
        votes = sum(1 for o in state.history[-s.raise_n:] if o == label)
        reasons = []
        if verdict_state == "raised":
            reasons.append(f"{label}: {votes} of the last {len(state.history[-s.raise_n:])} windows (raise at "
                           f"{s.raise_k} of {s.raise_n})")
            if prior is not None and prior != label:
                reasons.append(f"replaces {prior}")
        elif verdict_state == "cleared":
            reasons.append(f"{prior} cleared after {s.clear_m} clean windows")
        if result.missing:
            reasons.append("missing or late: " + ", ".join(result.missing))
        blind = {m: sorted(p.withheld) for m, p in sorted(window.items()) if p.withheld}
        if blind:  # classes a modality could not judge here (models.withheld_classes)
            reasons.append("not judged: " + "; ".join(f"{m} {', '.join(w)}" for m, w in blind.items()))
        if guessing:  # models that extrapolate for this machine count for less (models.training_range)
            reasons.append("extrapolates, counted with less weight: " + "; ".join(
                f"{m} ({len(n)} inputs far outside its training range: {', '.join(n[:3])}{', …' if len(n) > 3 else ''})"
                for m, n in guessing.items()))
        normal_p = result.probabilities.get("normal", 0.0) if "normal" in classes else 0.0
        return Verdict(
            asset_id=msg.asset_id, event_time_ms=t, label=label or "normal", confidence=round(result.confidence, 6),
            modalities={m: named.get(m, p.label) for m, p in window.items()},
            probabilities={c: round(v, 6) for c, v in result.probabilities.items()}, reasons=reasons,
            asset_type=state.asset_type, state=verdict_state, instant_label=result.label,  # type: ignore[arg-type]
            severity=round(min(max(1.0 - normal_p, 0.0), 1.0), 6), coverage=round(result.coverage, 6),
            missing=list(result.missing), input_entry_ids={m: p.entry_id for m, p in window.items()},
            models={m: p.model for m, p in window.items()}, source=msg.source, ingest_time_ms=msg.ingest_time_ms,
            decided_at_ms=now_ms, withheld=blind, extrapolating=guessing)

    def _as_read(self, modality: str, p: LatestPrediction, classes: list[str], asset_type: str | None
                 ) -> dict[str, float]:
        """What ``modality`` says as the fusion reads it (as ``linewatch inspect`` reports it): its
        probabilities over the classes the machine can have and the modality may name (``fusion.json``
        ``impossible`` and ``visible``) without those its input withholds; the raw ``Prediction.label``
        may be a withheld class."""
        impossible = self.weights.impossible_for(asset_type)
        probs = dict(p.probabilities)
        if impossible and len(impossible) < len(classes):
            probs = {c: (0.0 if c in impossible else v) for c, v in probs.items()}
        return drop_withheld(self.weights.restrict(modality, probs, classes), p.withheld, classes)

    @staticmethod
    def _extrapolating(window: dict[str, LatestPrediction], read: dict[str, dict[str, float]],
                       named: dict[str, str]) -> dict[str, list[str]]:
        """``{modality: the inputs that make it a guess}`` for the modalities in ``window`` whose model
        extrapolates (:func:`models.training_range.extrapolation`, judged on the class it names as read here).
        A modality that can name no fault here (every one it sees withheld, e.g. a PLC window in which the
        machine stood still) says nothing flattening could weaken, and is not listed."""
        out = {}
        for m, p in sorted(window.items()):
            if not p.beyond_training or m not in read or not any(v > 0.0 for c, v in read[m].items() if c != "normal"):
                continue
            judged = extrapolation(m, named[m], p.beyond_training)
            if judged.extrapolating:
                out[m] = judged.counted
        return out
