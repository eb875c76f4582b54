"""Stream messages -> audit records: who, when, what, input references, models.

One function per message kind; each returns the records of one stream entry (a verdict may add
``model_change`` records, keyed by the model's identity so each model is recorded once).

>>> from linewatch.contract import Alert, AlertSeverity
>>> a = Alert(asset_id="PRS-02", severity=AlertSeverity.WARNING, label="bearing_wear", message="m",
...           created_at_ms=5, alert_id="A-7", event="acknowledged", user="maria", verdict_entry_id="4-0")
>>> r = alert_records("lw:alerts", "9-0", a)[0]
>>> (r.kind, r.event, r.actor, r.source_key, r.input_refs["verdict_entry_id"])
('operator_action', 'acknowledged', 'maria', 'lw:alerts/9-0', '4-0')
"""

from __future__ import annotations

from typing import Any

from governance.audit.store import AuditRecord
from linewatch.contract import Alert, DriftReport, Explanation, Message, ModelRef, Verdict

FUSION_ACTOR = "services.fusion"
ALERTS_ACTOR = "services.alerts"
EXPLAIN_ACTOR = "governance.explain"
DRIFT_ACTOR = "governance.drift"
AUDIT_ACTOR = "governance.audit"


def source_key(stream: str, entry_id: str) -> str:
    return f"{stream}/{entry_id}"


def _body(msg: Message) -> dict[str, Any]:
    return msg.model_dump(mode="json", exclude=set(msg.array_fields()))


def _model(ref: ModelRef) -> dict[str, str]:
    return {"name": ref.name, "version": ref.version, "sha256": ref.sha256}


def verdict_record(stream: str, entry_id: str, v: Verdict) -> AuditRecord:
    refs: dict[str, Any] = {"predictions": dict(v.input_entry_ids)}
    if v.source:
        refs["raw"] = v.source
    summary = (f"{v.asset_id}: {v.state} {v.label} (now {v.instant_label or v.label}, confidence {v.confidence:.2f}, "
               f"severity {v.severity:.2f}" + (f", missing {','.join(v.missing)}" if v.missing else "") + ")")
    return AuditRecord(source_key(stream, entry_id), kind="verdict", event=v.state, event_time_ms=v.event_time_ms,
                  actor=FUSION_ACTOR, asset_id=v.asset_id, label=v.label, summary=summary, stream=stream,
                  entry_id=entry_id, input_refs=refs, models={m: _model(r) for m, r in v.models.items()},
                  payload=_body(v))


def model_records(stream: str, entry_id: str, v: Verdict) -> list[AuditRecord]:
    """One ``model_change`` (event ``first_seen``) per model identity (modality, name, version, sha256)
    named in the verdict; the store keeps the first and skips the rest (same ``source_key``)."""
    out = []
    for modality, ref in sorted(v.models.items()):
        key = f"model:{modality}:{ref.name}:{ref.version}:{ref.sha256}"
        sha = ref.sha256[:12] or "no sha256"
        out.append(AuditRecord(
            key, kind="model_change", event="first_seen", event_time_ms=v.event_time_ms, actor=FUSION_ACTOR,
            asset_id=v.asset_id, label=modality,
            summary=f"{modality} model {ref.name} {ref.version} ({sha}) first seen, verdict of {v.asset_id}",
            input_refs={"verdict": source_key(stream, entry_id),
                        "prediction_entry_id": v.input_entry_ids.get(modality, "")},
            models={modality: _model(ref)}, payload={"modality": modality, **_model(ref)}))
    return out


def alert_records(stream: str, entry_id: str, a: Alert) -> list[AuditRecord]:
    """An alert event; ``operator_action`` when a user made it (ack, shelve, confirm, reject ...)."""
    refs = {"alert_id": a.alert_id, "verdict_entry_id": a.verdict_entry_id, "source_entry_id": a.source_entry_id,
            "source_ref": a.source_ref, "episode_key": a.episode_key}
    what = f"alert {a.alert_id or '?'} {a.event} -> {a.state} ({a.source}, {a.priority})"
    if a.comment:
        what += f": {a.comment}"
    return [AuditRecord(source_key(stream, entry_id), kind="operator_action" if a.user else "alert", event=a.event,
                   event_time_ms=a.event_time_ms or a.created_at_ms, actor=a.user or f"{ALERTS_ACTOR}:{a.source}",
                   asset_id=a.asset_id, label=a.label, summary=what, stream=stream, entry_id=entry_id,
                   input_refs={k: v for k, v in refs.items() if v}, payload=_body(a))]


def explanation_summary(e: Explanation, top: int = 3) -> str:
    """One line: top features per modality, rule hit, agreement, stability."""
    parts = []
    for m in e.modalities:
        feats = ", ".join(f"{f.name} {f.weight:+.2f}" for f in m.top_features[:top])
        parts.append(f"{m.modality}: {feats or '-'} (stability {m.stability:.2f})")
    rule = e.rule_hits[0].rule_id + f" -> {e.rule_hits[0].cause}" if e.rule_hits else "no rule hit"
    return f"{e.label}: {'; '.join(parts) or 'no modality explained'}; {rule}; " + \
        ("agree" if e.agreement else "disagree")


def explanation_records(stream: str, entry_id: str, e: Explanation) -> list[AuditRecord]:
    refs: dict[str, Any] = {"verdict_entry_id": e.verdict_entry_id, "alert_id": e.alert_id,
                            "features": {m.modality: m.features_entry_id for m in e.modalities},
                            "heatmaps": {m.modality: m.heatmap_png for m in e.modalities if m.heatmap_png}}
    return [AuditRecord(source_key(stream, entry_id), kind="explanation", event="explained",
                   event_time_ms=e.explained_at_ms, actor=EXPLAIN_ACTOR, asset_id=e.asset_id, label=e.label,
                   summary=explanation_summary(e), stream=stream, entry_id=entry_id, input_refs=refs,
                   models={m.modality: _model(m.model) for m in e.modalities}, payload=_body(e))]


def drift_records(stream: str, entry_id: str, d: DriftReport) -> list[AuditRecord]:
    drifted = [f for f in d.features if f.drifted]
    feats = ", ".join(f"{f.name} p_adj={f.p_adjusted:.2g}" for f in drifted[:5])
    summary = (f"{d.kind} drift {d.scope} {d.asset_id} {d.modality}: {d.state}"
               + (f", cause {d.cause}" if d.cause else "") + (f" [{feats}]" if feats else "")
               + f" ({d.detector or '?'}, n={d.n_live})")
    return [AuditRecord(source_key(stream, entry_id), kind="drift", event=d.state if d.state != "normal" else
                   ("drifted" if d.drifted else "normal"), event_time_ms=d.window_end_ms, actor=DRIFT_ACTOR,
                   asset_id=d.asset_id, label=d.cause, summary=summary, stream=stream, entry_id=entry_id,
                   input_refs={"window": [d.window_start_ms, d.window_end_ms]},
                   models={d.modality: _model(d.model)} if d.model is not None else {}, payload=_body(d))]


def state_key(event: str, label: str) -> tuple[str, str]:
    """What "the asset's state" is for the ``changes`` verdict policy: a cleared verdict leaves the
    asset normal, so the normal verdicts after it are no change."""
    return ("normal", "normal") if event in ("normal", "cleared") else (event, label)


def verdict_changes(previous: tuple[str, str] | None, v: Verdict) -> bool:
    """AuditRecord this verdict under the ``changes`` policy? The first of an asset, every ``cleared``,
    and any change of (state, fault label) against the last recorded one."""
    if previous is None or v.state == "cleared":
        return True
    return state_key(*previous) != state_key(v.state, v.label)

