"""``linewatch serve explain``: fault verdicts → explanations, on the explain consumer group.

The handler reads the verdict shards with its own consumer group (``ConsumerGroup.EXPLAIN``), so the
hot path (inference → fusion → alerts) never waits for it: a slow explanation only grows this
group's lag. It explains verdicts whose ``state`` is ``raised`` (a fault); the first raised verdict
of a fault on an asset is always explained, later ones of the same episode at most every
``min_interval_ms`` of event time.

For each verdict it fetches the evidence: ``Verdict.input_entry_ids`` → the ``Prediction`` entries
→ ``Prediction.features_entry_id`` on the feature streams (``XRANGE`` by id), runs
:class:`~governance.explain.explainer.VerdictExplainer` and writes one ``Explanation`` to
``StreamNames.explanations()`` with ``explanation_id`` = the verdict entry id.

**Exactly once.** Per asset, the last handled verdict entry id and the last explained fault live in
``StreamNames.stage_state("explain", shard)``, written in the same fenced commit as the explanation
and the acknowledgement: a redelivered verdict (crash before the ack, a reset group) is acknowledged
without a second explanation.
"""

from __future__ import annotations

import json
from typing import Any
import logging
import time
from pathlib import Path

import redis
from prometheus_client import Counter

from governance.explain.explainer import ExplainInput, VerdictExplainer
from governance.rules import RuleSet, load_rules
from linewatch.contract import (
    AudioFeatures,
    ConsumerGroup,
    ContractError,
    DeadLetterReason,
    PlcFeatures,
    Prediction,
    StreamNames,
    ThermalFeatures,
    Verdict,
    decode_message,
    encode_message,
)
from linewatch.explain_settings import ExplainSettings
from linewatch.streaming import Batch, Commit, Entry, StreamWorker, WorkerConfig, WorkerMetrics
from pipeline.features.asset_profile import AssetProfile, load_profiles

ROLE = "explain"
log = logging.getLogger("governance.explain")


def _id_key(entry_id: str) -> tuple[int, int]:
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)


def load_asset_profiles(path: Path | None) -> dict[str, AssetProfile]:
    """Asset profiles (thermal region layout, line frequency ...) from an ``assets.json``; {} when absent."""
    if path is None or not path.is_file():
        return {}
    return load_profiles(json.loads(path.read_text(encoding="utf-8")))


class ExplainHandler:
    """Handler of the ``explain`` role: one lease per verdict shard."""

    def __init__(self, client: redis.Redis, names: StreamNames, settings: ExplainSettings, explainer: VerdictExplainer,
                 maxlen: int, metrics: WorkerMetrics) -> None:
        self.client = client
        self.names = names
        self.settings = settings
        self.explainer = explainer
        self.maxlen = maxlen
        self.role = metrics.role
        self.latency = metrics.stage_latency(
            "linewatch_explain_latency_seconds",
            "Explanation work per verdict (stage=total) and per modality (stage=plc|thermal|audio), and "
            "verdict decided -> explanation written (stage=verdict_to_explanation).")
        self.outcomes = Counter("linewatch_explain_verdicts", "Verdicts seen by explain, by outcome "
                                "(explained, not_a_fault, throttled, duplicate, no_evidence).",
                                ["role", "outcome"], registry=metrics.registry)

    def inputs(self, shard: int) -> list[str]:
        return [self.names.verdicts_shard(shard)]

    def _states(self, shard: int, assets: list[str]) -> dict[str, dict[str, object]]:
        raw: list[Any] = list(self.client.hmget(self.names.stage_state(ROLE, shard), assets)) if assets else []  # type: ignore[arg-type]
        return {a: (json.loads(r) if r else {}) for a, r in zip(assets, raw, strict=True)}

    def handle(self, batch: Batch) -> None:
        decoded: list[tuple[int, Entry, Verdict]] = []
        for entry in batch.entries:
            msg = batch.decode(entry, Verdict)
            if isinstance(msg, Verdict):
                decoded.append((batch.shard(entry), entry, msg))
        by_shard: dict[int, list[tuple[Entry, Verdict]]] = {}
        for shard, entry, msg in decoded:
            by_shard.setdefault(shard, []).append((entry, msg))
        for shard, items in by_shard.items():
            states = self._states(shard, sorted({m.asset_id for _, m in items}))
            commit = batch.commit(shard)
            for entry, verdict in items:
                self._one(batch, commit, states[verdict.asset_id], entry, verdict)
            commit.hset(self.names.stage_state(ROLE, shard), {a: json.dumps(s) for a, s in states.items()})

    def _one(self, batch: Batch, commit: Commit, state: dict[str, object], entry: Entry, verdict: Verdict) -> None:
        eid = entry.entry_id
        last = state.get("last_id")
        if isinstance(last, str) and _id_key(eid) <= _id_key(last):
            self.outcomes.labels(role=self.role, outcome="duplicate").inc()
            batch.ack(entry)
            return
        state["last_id"] = eid
        if verdict.state != "raised" or verdict.label == "normal":
            if verdict.state == "cleared":
                state.pop("label", None)
            self.outcomes.labels(role=self.role, outcome="not_a_fault").inc()
            batch.ack(entry)
            return
        last_t = state.get("explained_event_ms")
        if (state.get("label") == verdict.label and isinstance(last_t, int)
                and verdict.event_time_ms - last_t < self.settings.min_interval_ms):
            self.outcomes.labels(role=self.role, outcome="throttled").inc()
            batch.ack(entry)
            return
        inputs = self.evidence(verdict)
        if not inputs:
            state["label"] = verdict.label
            self.outcomes.labels(role=self.role, outcome="no_evidence").inc()
            batch.dead_letter(entry, DeadLetterReason.TRIMMED,
                              f"none of the predictions/features behind verdict {eid} ({verdict.input_entry_ids}) "
                              "are still in their streams: nothing to explain (raise the streams' retention)",
                              verdict.asset_id, verdict.event_time_ms)
            return
        t0 = time.perf_counter()
        explanation = self.explainer.explain(verdict, eid, inputs)
        total = time.perf_counter() - t0
        self.latency.labels(role=self.role, stage="total").observe(total)
        for m in explanation.modalities:
            self.latency.labels(role=self.role, stage=m.modality).observe(m.latency_ms / 1000.0)
        commit.xadd(self.names.explanations(), dict(encode_message(explanation)),  # type: ignore[arg-type]
                    maxlen=min(self.maxlen, self.settings.retention))
        if verdict.decided_at_ms:
            self.latency.labels(role=self.role, stage="verdict_to_explanation").observe(
                max(explanation.explained_at_ms - verdict.decided_at_ms, 0) / 1000.0)
        state["label"] = verdict.label
        state["explained_event_ms"] = verdict.event_time_ms
        self.outcomes.labels(role=self.role, outcome="explained").inc()
        log.info("explained", extra={"role": self.role, "asset_id": verdict.asset_id, "label": verdict.label,
                                     "verdict": eid, "agreement": explanation.agreement,
                                     "seconds": round(total, 3)})
        batch.ack(entry)

    def evidence(self, verdict: Verdict) -> list[ExplainInput]:
        """The features entries behind the verdict's predictions (modalities whose entries are gone are left out)."""
        out: list[ExplainInput] = []
        for modality, pred_id in sorted(verdict.input_entry_ids.items()):
            pred = self._entry(self.names.predictions(modality, verdict.asset_id), pred_id)
            if not isinstance(pred, Prediction) or not pred.features_entry_id:
                continue
            feats = self._entry(self.names.features(modality, verdict.asset_id), pred.features_entry_id)
            if not isinstance(feats, PlcFeatures | ThermalFeatures | AudioFeatures):
                continue
            model = verdict.models.get(modality)
            out.append(ExplainInput(modality, feats, pred.features_entry_id, model))
        return out

    def _entry(self, stream: str, entry_id: str) -> object | None:
        try:
            got: Any = self.client.xrange(stream, entry_id, entry_id, count=1)
        except redis.ResponseError:  # not an entry id
            return None
        if not got:
            return None
        try:
            return decode_message(got[0][1])
        except ContractError as exc:
            log.warning("evidence entry does not decode", extra={"stream": stream, "entry_id": entry_id,
                                                                  "error": str(exc)})
            return None


def explain_worker(client: redis.Redis, names: StreamNames, settings: ExplainSettings, maxlen: int = 100_000,
                   consumer: str | None = None, data_dir: Path | None = None, landing: Path | None = None,
                   rules: RuleSet | None = None) -> StreamWorker:
    """The ``explain`` worker. ``data_dir``: PNGs go to ``settings.output_dir`` or ``<data_dir>/explanations``;
    ``landing``: ``assets.json`` is read from there unless ``settings.assets`` names one.
    Raises :class:`governance.rules.RulesError` for a malformed rules file."""
    metrics = WorkerMetrics(ROLE)
    rules = rules if rules is not None else load_rules(settings.rules)
    out_dir = settings.output_dir or (data_dir / "explanations" if data_dir is not None else None)
    assets = settings.assets or (landing / "assets.json" if landing is not None else None)
    explainer = VerdictExplainer(settings, rules, out_dir, load_asset_profiles(assets))
    handler = ExplainHandler(client, names, settings, explainer, maxlen, metrics)
    config = WorkerConfig(
        role=ROLE, group=ConsumerGroup.EXPLAIN.value, units=names.shards, max_batch=settings.max_batch,
        block_ms=settings.block_ms, lease_ttl_ms=settings.lease_ttl_ms, max_deliveries=settings.max_deliveries,
        maxlen=maxlen, consumer=consumer, dead_letter_source="governance.explain")
    return StreamWorker(client, names, config, handler.inputs, handler, metrics=metrics)
