"""Inference stage code: a batch of feature entries -> one backend call -> one prediction per entry.

Each prediction is written to ``names.predictions_shard(modality, k)``
(``lw:predictions:<modality>:{s<k>}``) **with the features entry id as its own entry id**, in the
same fenced commit that acknowledges the input: a redelivery after a crash finds the id taken and
only acknowledges (never a second, different prediction).

Poison input never stops the service: an unknown schema, a message that does not validate, a
NaN, a wrong shape each go to the dead-letter stream with the reason; the rest of the batch is
predicted. A backend failure (Triton down) raises: the batch is retried, then dead-lettered after
``max_deliveries``.

A prediction carries the classes its input cannot show (``withheld``: :mod:`models.withheld_classes`),
and its probabilities already honour what the input rules out on physics (:mod:`models.ruled_out`: a
thermal frame whose motor body is warmer at its fan end is not called healthy). It also lists the model
inputs far outside the model's training range (``beyond_training``: :mod:`models.training_range`); the
fusion decides from them whether the model extrapolates for this machine.
"""

from __future__ import annotations

import time

import numpy as np

from linewatch.contract import DeadLetterReason, Prediction, StreamNames, encode_message
from linewatch.streaming import Batch, Entry, WorkerMetrics
from models.inputs import InputMismatchError, input_array
from models.runtime import RuntimeInputError
from models.ruled_out import rule_out, ruled_out
from models.withheld_classes import withheld_classes
from services.inference.model import ServedModel


class InferenceHandler:
    """Handler of the ``inference.<modality>`` role."""

    def __init__(self, model: ServedModel, names: StreamNames, maxlen: int, metrics: WorkerMetrics,
                 clock=time.time) -> None:  # type: ignore[no-untyped-def]
        self.model = model
        self.modality = model.modality
        self.names = names
        self.maxlen = maxlen
        self.clock = clock
        self.classes = model.classes
        self.role = metrics.role
        self.backend_seconds = metrics.stage_latency(
            "linewatch_backend_seconds", "Model runtime call per batch (ONNX Runtime, Triton, TensorRT).")
        self.latency = metrics.stage_latency(
            "linewatch_stage_latency_seconds", "Ingest (features written) -> prediction written.")

    def inputs(self, shard: int) -> list[str]:
        return [self.names.features_shard(self.modality, shard)]

    def _sample(self, batch: Batch, entry: Entry
                ) -> tuple[object, np.ndarray, tuple[str, ...], tuple[str, ...], dict[str, int]] | None:
        msg = batch.decode(entry)
        if msg is None:
            return None
        asset = getattr(msg, "asset_id", None)
        when = getattr(msg, "event_time_ms", None)
        try:
            x = input_array(self.modality, msg)
        except InputMismatchError as exc:
            reason = DeadLetterReason.OUT_OF_RANGE if "NaN" in str(exc) else DeadLetterReason.SCHEMA_ERROR
            batch.dead_letter(entry, reason, str(exc), asset, when)
            return None
        withheld = withheld_classes(self.modality, x, getattr(msg, "stats", None))
        ruled = ruled_out(self.modality, x, getattr(msg, "stats", None))
        try:
            model_input = self.model.model_input(x)
            x = self.model.fit(model_input)
        except ValueError as exc:
            batch.dead_letter(entry, DeadLetterReason.BAD_SHAPE, f"{self.modality} model: {exc}", asset, when)
            return None
        return msg, x, withheld, ruled, self.model.beyond_training(model_input)

    def handle(self, batch: Batch) -> None:
        kept: list[tuple[Entry, object, np.ndarray, tuple[str, ...], tuple[str, ...], dict[str, int]]] = []
        for entry in batch.entries:
            got = self._sample(batch, entry)
            if got is not None:
                kept.append((entry, *got))
        if not kept:
            return
        t0 = time.perf_counter()
        try:
            probs = self.model.runtime.predict(np.stack([x for _, _, x, _, _, _ in kept]))
        except RuntimeInputError as exc:  # checked per sample above; a model/input mismatch for all of them
            for entry, msg, _, _, _, _ in kept:
                batch.dead_letter(entry, DeadLetterReason.BAD_SHAPE, str(exc), getattr(msg, "asset_id", None))
            return
        self.backend_seconds.labels(role=self.role, stage="backend").observe(time.perf_counter() - t0)
        now = int(self.clock() * 1000)
        ref = self.model.ref
        for (entry, msg, _, withheld, ruled, beyond), p in zip(kept, probs):
            if ruled and np.all(np.isfinite(p)):  # ruled out on physics: at 0, the rest renormalised
                kept_p = rule_out(dict(zip(self.classes, (float(v) for v in p), strict=True)), ruled, self.classes)
                p = np.array([kept_p[c] for c in self.classes], np.float64)
            row = [float(v) for v in p]
            if not np.all(np.isfinite(p)):
                batch.dead_letter(entry, DeadLetterReason.OUT_OF_RANGE, "model output has NaN/inf for this input",
                                  msg.asset_id, msg.event_time_ms)  # type: ignore[attr-defined]
                continue
            pred = Prediction(
                asset_id=msg.asset_id, modality=self.modality, event_time_ms=msg.event_time_ms,  # type: ignore[attr-defined]
                model_name=ref.name, model_version=ref.version, model_sha256=ref.sha256, classes=self.classes,
                probabilities=row, label=self.classes[int(np.argmax(p))], features_entry_id=entry.entry_id,
                inferred_at_ms=now, asset_type=msg.asset_type, source=msg.source,  # type: ignore[attr-defined]
                ingest_time_ms=msg.ingest_time_ms,  # type: ignore[attr-defined]
                withheld=[c for c in withheld if c in self.classes], beyond_training=beyond)
            shard = batch.shard(entry)
            batch.commit(shard).xadd(self.names.predictions_shard(self.modality, shard), encode_message(pred),
                                     entry_id=entry.entry_id)  # retention: docs/redis.md
            batch.ack(entry)
            if pred.ingest_time_ms:
                self.latency.labels(role=self.role, stage="ingest_to_prediction").observe(
                    max(now - pred.ingest_time_ms, 0) / 1000.0)
