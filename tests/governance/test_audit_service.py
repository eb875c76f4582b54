"""The audit workers against a real Redis: one record per kind with who/what/inputs/models, the
verdict policy, idempotent redelivery, bad input to the dead-letter stream."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import redis
from prometheus_client import Counter, CollectorRegistry

from governance.audit.handler import AuditHandler
from governance.audit.service import audit_workers
from governance.audit.store import AuditRecord as AuditStoreRecord
from governance.audit.store import AuditStore
from linewatch.audit_settings import AuditSettings
from linewatch.contract import (
    Alert,
    AlertSeverity,
    DeadLetter,
    DriftFeature,
    DriftReport,
    Explanation,
    FeatureWeight,
    ModalityExplanation,
    ModelRef,
    RuleHit,
    StreamNames,
    Verdict,
    decode_message,
    encode_message,
)
from linewatch.streaming import Batch, Entry, StreamWorker
from tests.services.support import running, wait_for, write

THERMAL = ModelRef(name="thermal-student", version="v3", sha256="a1" * 32)
THERMAL_V4 = ModelRef(name="thermal-student", version="v4", sha256="b2" * 32)
PLC = ModelRef(name="plc-student", version="v3", sha256="c3" * 32)


def verdict(asset: str, state: str, label: str, t: int, models: dict[str, ModelRef] | None = None) -> Verdict:
    return Verdict(asset_id=asset, event_time_ms=t, label=label, confidence=0.8, state=state,  # type: ignore[arg-type]
                   instant_label=label, severity=0.6, source=f"thermal/{asset}-{t}.tiff",
                   input_entry_ids={"thermal": f"{t}-0", "plc": f"{t}-1"},
                   models=models if models is not None else {"thermal": THERMAL, "plc": PLC})


def settings(**kw: object) -> AuditSettings:
    return AuditSettings(lease_ttl_ms=1000, block_ms=50, **kw)  # type: ignore[arg-type]


@contextmanager
def audit_running(client: redis.Redis, names: StreamNames, s: AuditSettings, data_dir: Path) -> Iterator[list[StreamWorker]]:
    workers = audit_workers(client, names, s, data_dir)
    with ExitStack() as stack:
        for w in workers:
            stack.enter_context(running(w))
        yield workers


def rows(path: Path, kind: str | None = None) -> list[dict]:
    with AuditStore(path) as store:
        return [r for r in store.rows() if kind is None or r["kind"] == kind]


def test_every_kind_is_recorded_with_who_what_inputs_and_model(redis_client: redis.Redis, stream_names: StreamNames,
                                                                 tmp_path: Path) -> None:
    names, s = stream_names, settings()
    db = s.store_path(tmp_path)
    v_id = write(redis_client, names.verdicts("PRS-02"), verdict("PRS-02", "raised", "bearing_wear", 1_000))
    write(redis_client, names.alerts, Alert(
        asset_id="PRS-02", severity=AlertSeverity.WARNING, label="bearing_wear", message="bearing wear on PRS-02",
        verdict_entry_id=v_id, created_at_ms=1_001, alert_id="A-1", event="raised", source_ref="thermal/x.tiff"))
    ack_id = write(redis_client, names.alerts, Alert(
        asset_id="PRS-02", severity=AlertSeverity.WARNING, label="bearing_wear", message="m", created_at_ms=1_002,
        alert_id="A-1", event="acknowledged", state="acknowledged", user="maria", comment="bearing ordered"))
    write(redis_client, names.explanations(), Explanation(
        explanation_id=v_id, verdict_entry_id=v_id, alert_id="A-1", asset_id="PRS-02", label="bearing_wear",
        event_time_ms=1_000, agreement=True, explained_at_ms=1_003,
        modalities=[ModalityExplanation(modality="plc", model=PLC, explained_label="bearing_wear", probability=0.9,
                                        top_features=[FeatureWeight(name="env_bpfo", weight=0.4)], stability=0.86,
                                        num_samples=1000, seed=0, features_entry_id="999-1")],
        rule_hits=[RuleHit(rule_id="outer-race", label="bearing_wear", cause="outer-race wear",
                           action="plan a bearing change")]))
    write(redis_client, names.drift(), DriftReport(
        kind="feature", scope="asset", asset_id="PRS-02", modality="plc", window_start_ms=0, window_end_ms=1_004,
        n_live=500, n_reference=2000, drifted=True, state="raised", cause="sensor", correction="bh", alpha=0.01,
        features=[DriftFeature(name="temp_mean", statistic=0.4, p_value=1e-9, p_adjusted=1e-8, effect_size=1.2,
                               drifted=True)], detector="ks", model=PLC, decided_at_ms=1_005))
    # a second verdict from a new thermal model: one model_change for v4, none again for plc v3
    write(redis_client, names.verdicts("PRS-02"), verdict("PRS-02", "raised", "bearing_wear", 2_000,
                                                          {"thermal": THERMAL_V4, "plc": PLC}))
    with audit_running(redis_client, names, s, tmp_path):
        wait_for(lambda: len(rows(db)) >= 8, 20, "8 audit rows")
    by_kind: dict[str, list[dict]] = {}
    for r in rows(db):
        by_kind.setdefault(r["kind"], []).append(r)
    assert sorted((k, len(v)) for k, v in by_kind.items()) == [
        ("alert", 1), ("drift", 1), ("explanation", 1), ("model_change", 3), ("operator_action", 1), ("verdict", 1)]
    v = by_kind["verdict"][0]  # the second raised verdict is no change of state: not recorded (policy "changes")
    assert (v["entry_id"], v["event"], v["label"], v["actor"]) == (v_id, "raised", "bearing_wear", "services.fusion")
    assert json.loads(v["input_refs"]) == {"predictions": {"thermal": "1000-0", "plc": "1000-1"},
                                           "raw": "thermal/PRS-02-1000.tiff"}
    assert json.loads(v["models"])["thermal"] == {"name": "thermal-student", "version": "v3", "sha256": "a1" * 32}
    assert sorted(json.loads(m["models"]).popitem()[1]["version"] + m["label"] for m in by_kind["model_change"]) == \
        ["v3plc", "v3thermal", "v4thermal"]
    op = by_kind["operator_action"][0]
    assert (op["actor"], op["event"], op["entry_id"]) == ("maria", "acknowledged", ack_id)
    assert "bearing ordered" in op["summary"]
    assert json.loads(by_kind["alert"][0]["input_refs"])["verdict_entry_id"] == v_id
    e = by_kind["explanation"][0]
    assert "env_bpfo" in e["summary"] and "outer-race" in e["summary"] and "stability 0.86" in e["summary"]
    assert json.loads(e["models"])["plc"]["sha256"] == PLC.sha256
    assert by_kind["drift"][0]["event"] == "raised" and "temp_mean" in by_kind["drift"][0]["summary"]
    with AuditStore(db) as store:
        assert store.verify().ok
    for stream in (names.alerts, names.explanations(), names.drift(), names.verdicts("PRS-02")):
        assert redis_client.xpending(stream, "audit")["pending"] == 0


def _handler(store: AuditStore, names: StreamNames, s: AuditSettings) -> AuditHandler:
    rows_counter = Counter("rows", "rows", ["role", "kind"], registry=CollectorRegistry())
    return AuditHandler(store, names, s, lambda u: [names.verdicts_shard(u)], rows_counter, "audit.verdicts")


def _entries(client: redis.Redis, stream: str) -> list[Entry]:
    return [Entry(stream, eid.decode(), fields) for eid, fields in client.xrange(stream)]


def test_changes_policy_and_redelivery_make_no_spurious_or_double_rows(redis_client: redis.Redis,
                                                                        stream_names: StreamNames,
                                                                        tmp_path: Path) -> None:
    names = stream_names
    stream = names.verdicts("CNV-03")
    states = [("normal", "normal"), ("normal", "normal"), ("raised", "imbalance"), ("raised", "imbalance"),
              ("raised", "misalignment"), ("cleared", "imbalance"), ("normal", "normal"), ("normal", "normal")]
    for i, (state, label) in enumerate(states):
        write(redis_client, stream, verdict("CNV-03", state, label, 1_000 * (i + 1)))
    entries = _entries(redis_client, stream)
    store = AuditStore(tmp_path / "a.sqlite")
    h = _handler(store, names, settings())
    batch = Batch(entries, lambda s: 0, "audit")
    h.handle(batch)
    assert all(batch.finished(e) for e in entries)
    recorded = [(r["event"], r["label"]) for r in store.rows() if r["kind"] == "verdict"]
    assert recorded == [("normal", "normal"), ("raised", "imbalance"), ("raised", "misalignment"),
                        ("cleared", "imbalance")]
    n = store.count()
    # a crash after COMMIT and before XACK redelivers: e.g. the tail, or one skipped entry in the middle
    for again in (entries[3:], [entries[3]], entries):
        h.handle(Batch(again, lambda s: 0, "audit"))
    assert store.count() == n
    # policy "all": every verdict, still once
    store_all = AuditStore(tmp_path / "b.sqlite")
    h_all = _handler(store_all, names, settings(verdicts="all"))
    h_all.handle(Batch(entries, lambda s: 0, "audit"))
    h_all.handle(Batch(entries, lambda s: 0, "audit"))
    assert store_all.count("verdict") == len(states)
    store.close()
    store_all.close()


def test_bad_entries_go_to_the_dead_letter_stream_with_a_reason(redis_client: redis.Redis, stream_names: StreamNames,
                                                                tmp_path: Path) -> None:
    names, s = stream_names, settings()
    redis_client.xadd(names.alerts, {"schema": b"alert", "v": b"1", "body": b'{"asset_id": 3}'})
    redis_client.xadd(names.drift(), encode_message(verdict("X-1", "raised", "f", 1)))  # wrong kind on lw:drift
    good = write(redis_client, names.alerts, Alert(asset_id="X-1", severity=AlertSeverity.INFO, label="f",
                                                   message="m", created_at_ms=1, alert_id="A-9"))
    with audit_running(redis_client, names, s, tmp_path):
        wait_for(lambda: redis_client.xlen(names.deadletter) >= 2 and rows(s.store_path(tmp_path)), 20,
                 "2 dead letters and the good row")
    dead = [decode_message(f) for _, f in redis_client.xrange(names.deadletter)]
    assert all(isinstance(d, DeadLetter) and d.source == "governance.audit" for d in dead)
    assert sorted(d.reason.value for d in dead) == ["schema_error", "schema_error"]  # type: ignore[union-attr]
    assert [r["entry_id"] for r in rows(s.store_path(tmp_path))] == [good]
    assert redis_client.xpending(names.alerts, "audit")["pending"] == 0


def test_worker_runs_the_retention_job_and_records_it(redis_client: redis.Redis, stream_names: StreamNames,
                                                      tmp_path: Path) -> None:
    s = settings(retention_days=30)
    db = s.store_path(tmp_path)
    old = AuditStore(db, clock=lambda: 1_000_000.0)  # rows recorded in 1970: far older than 30 days
    old.append([AuditStoreRecord(f"old/{i}", kind="alert", summary=f"old {i}") for i in range(5)])
    old.close()
    with audit_running(redis_client, stream_names, s, tmp_path):
        wait_for(lambda: [r for r in rows(db) if r["kind"] == "retention"], 20, "a retention record")
    left = rows(db)
    assert [r["kind"] for r in left] == ["retention"]
    assert "removed 5 rows" in left[0]["summary"]
    with AuditStore(db) as store:
        assert store.verify().ok
