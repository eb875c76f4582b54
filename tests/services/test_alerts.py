"""The alerts service (router + store) on a real Redis: episodes, escalation, shelving, floods,
AlertRequests, operator actions and feedback."""

from __future__ import annotations

import pytest
import redis

from linewatch.contract import (
    Alert,
    AlertRequest,
    Feedback,
    StreamNames,
    decode_message,
)
from linewatch.service_settings import AlertsSettings
from linewatch.streaming import StreamWorker, WorkerConfig
from services.alerts.router import AlertRouter
from services.alerts.store import AlertStore, InvalidAction
from tests.services.support import running, verdict, wait_for, write


class Clock:
    def __init__(self) -> None:
        self.t = 1_800_000_000.0

    def __call__(self) -> float:
        return self.t


def _setup(client: redis.Redis, names: StreamNames, **kw: object) -> tuple[StreamWorker, AlertStore, Clock]:
    clock = Clock()
    settings = AlertsSettings(**kw)  # type: ignore[arg-type]
    router = AlertRouter(client, names, settings, clock=clock)
    worker = StreamWorker(client, names, WorkerConfig(role="alerting", group="alerting", units=1, tick_ms=50,
                                                      lease_ttl_ms=2000, max_batch=256), router.inputs, router)
    return worker, AlertStore(client, names, clock=clock), clock


def events(client: redis.Redis, names: StreamNames) -> list[Alert]:
    return [decode_message(f) for _, f in client.xrange(names.alerts)]  # type: ignore[misc]


def test_one_alert_per_episode_escalation_and_clear(redis_client: redis.Redis, stream_names: StreamNames) -> None:
    worker, store, clock = _setup(redis_client, stream_names)
    vs = stream_names.verdicts("PMP-01")
    with running(worker):
        for _ in range(5):
            write(redis_client, vs, verdict("PMP-01", "bearing_wear", "raised", severity=0.15))
        write(redis_client, vs, verdict("PMP-01", "bearing_wear", "raised", severity=0.95))
        write(redis_client, vs, verdict("PMP-01", "bearing_wear", "cleared"))
        wait_for(lambda: len(events(redis_client, stream_names)) == 3, 10, "raised, escalated, cleared")
    evs = events(redis_client, stream_names)
    assert [e.event for e in evs] == ["raised", "escalated", "cleared"]
    assert len({e.alert_id for e in evs}) == 1
    assert evs[0].priority == "low" and evs[1].priority == "urgent"  # 0.15 x 0.7 -> low; 0.95 x 0.7 -> urgent
    assert evs[2].state == "rtn_unacknowledged"
    rec = store.ack(evs[0].alert_id, user="maria")
    assert rec.closed and store.list() == [] and len(store.list(open_only=False)) == 1


def test_label_change_is_a_new_episode_and_a_rtn_alert_reactivates(redis_client: redis.Redis,
                                                                   stream_names: StreamNames) -> None:
    worker, store, _ = _setup(redis_client, stream_names)
    vs = stream_names.verdicts("PRS-02")
    with running(worker):
        write(redis_client, vs, verdict("PRS-02", "imbalance", "raised", asset_type="press"))
        write(redis_client, vs, verdict("PRS-02", "imbalance", "cleared", asset_type="press"))
        write(redis_client, vs, verdict("PRS-02", "imbalance", "raised", asset_type="press"))
        write(redis_client, vs, verdict("PRS-02", "cavitation", "raised", asset_type="press"))
        wait_for(lambda: len(events(redis_client, stream_names)) == 5, 10, "5 events")
    evs = events(redis_client, stream_names)
    assert [(e.event, e.label) for e in evs] == [("raised", "imbalance"), ("cleared", "imbalance"),
                                                 ("raised", "imbalance"), ("cleared", "imbalance"),
                                                 ("raised", "cavitation")]
    assert evs[0].alert_id == evs[2].alert_id != evs[4].alert_id
    assert evs[0].criticality == 0.9  # press


def test_an_alert_says_which_modality_extrapolated(redis_client: redis.Redis, stream_names: StreamNames) -> None:
    """A verdict raised while thermal's model extrapolated for the machine (Verdict.extrapolating): the alert's
    text marks thermal, its details list the inputs; one without says nothing of it."""
    worker, _, _ = _setup(redis_client, stream_names)
    far = ["global.frame_max_rise", "global.hot_area_frac", "global.hot_outside_regions_frac"]
    guessed = verdict("PMP-01", "bearing_wear", "raised").model_copy(
        update={"modalities": {"thermal": "bearing_wear", "plc": "normal"}, "extrapolating": {"thermal": far}})
    with running(worker):
        write(redis_client, stream_names.verdicts("PMP-01"), guessed)
        write(redis_client, stream_names.verdicts("PMP-02"), verdict("PMP-02", "bearing_wear", "raised"))
        wait_for(lambda: len(events(redis_client, stream_names)) == 2, 10, "2 alerts")
    by_asset = {e.asset_id: e for e in events(redis_client, stream_names)}
    assert "plc=normal, thermal=bearing_wear (extrapolates)" in by_asset["PMP-01"].message
    assert by_asset["PMP-01"].details["extrapolating"] == {"thermal": far}
    assert "extrapolates" not in by_asset["PMP-02"].message and by_asset["PMP-02"].details["extrapolating"] == {}


def test_shelved_alert_is_not_notified_and_comes_back(redis_client: redis.Redis, stream_names: StreamNames) -> None:
    worker, store, clock = _setup(redis_client, stream_names)
    vs = stream_names.verdicts("CNV-03")
    with running(worker):
        write(redis_client, vs, verdict("CNV-03", "cooling_failure", "raised", severity=0.2, asset_type="conveyor"))
        wait_for(lambda: store.list(), 10, "alert")
        aid = store.list()[0].alert_id
        rec = store.shelve(aid, user="ivan", duration_s=600, reason="maintenance today")
        assert rec.state(store.now_ms()) == "shelved"
        write(redis_client, vs, verdict("CNV-03", "cooling_failure", "raised", severity=0.9, asset_type="conveyor"))
        wait_for(lambda: any(e.event == "escalated" for e in events(redis_client, stream_names)), 10, "escalation")
        clock.t += 601
        wait_for(lambda: any(e.event == "unshelved" for e in events(redis_client, stream_names)), 10, "unshelve")
    evs = {e.event: e for e in events(redis_client, stream_names)}
    assert evs["shelved"].user == "ivan" and evs["escalated"].notify is False and evs["unshelved"].notify
    assert store.get(aid).state(store.now_ms()) == "unacknowledged"  # type: ignore[union-attr]
    with pytest.raises(InvalidAction, match="between 1 s"):
        store.shelve(aid, user="ivan", duration_s=10 * 86400)


def test_flood_is_grouped(redis_client: redis.Redis, stream_names: StreamNames) -> None:
    worker, store, clock = _setup(redis_client, stream_names)
    assets = [f"PMP-{i:03d}" for i in range(120)]
    with running(worker):
        for a in assets:  # the whole line faults at once
            write(redis_client, stream_names.verdicts(a), verdict(a, "electrical_overheating", "raised"))
        wait_for(lambda: len(store.list(include_members=True)) == 121, 20, "120 alerts + 1 group")
        notified = [e for e in events(redis_client, stream_names) if e.notify]
        groups = [r for r in store.list(include_members=False) if r.is_group]
        assert len(notified) <= 12, [e.event for e in notified]
        assert len(groups) == 1 and len(groups[0].members) == 110
        assert len(store.list(include_members=False)) == 11  # what an operator sees: 10 alerts + 1 group
        store.ack(groups[0].alert_id, user="lead")  # acknowledges the members too
        assert all(r.acked for r in store.list() if r.group_id or r.is_group)
        for r in store.list(include_members=False):
            store.ack(r.alert_id, user="lead")
        for a in assets:
            write(redis_client, stream_names.verdicts(a), verdict(a, "electrical_overheating", "cleared"))
        clock.t += 700
        wait_for(lambda: not store.list(), 20, "everything closed")


def test_alert_request_routes_like_a_verdict_and_feedback(redis_client: redis.Redis,
                                                         stream_names: StreamNames) -> None:
    worker, store, _ = _setup(redis_client, stream_names)
    req = AlertRequest(source="drift", episode_key="thermal:PMP-01", asset_id="PMP-01", label="feature_drift",
                       severity=0.5, state="raise", message="thermal features drifted", details={"p": 1e-4},
                       event_time_ms=1)
    with running(worker):
        for _ in range(3):
            write(redis_client, stream_names.alert_requests(), req)
        wait_for(lambda: store.list(), 10, "drift alert")
        [rec] = store.list()
        assert rec.source == "drift" and rec.details == {"p": 1e-4}
        write(redis_client, stream_names.alert_requests(), req.model_copy(update={"state": "clear"}))
        wait_for(lambda: not store.get(rec.alert_id).active, 10, "cleared")  # type: ignore[union-attr]
    assert [e.event for e in events(redis_client, stream_names)] == ["raised", "cleared"]
    out = store.reject(rec.alert_id, user="ana", comment="camera recalibrated")
    assert out.closed and out.outcome == "rejected"
    [(_, fb_fields)] = redis_client.xrange(stream_names.feedback())
    fb = decode_message(fb_fields)
    assert isinstance(fb, Feedback) and fb.outcome == "rejected" and fb.true_label == "normal" and fb.user == "ana"


def test_confirm_writes_feedback_with_models(redis_client: redis.Redis, stream_names: StreamNames) -> None:
    worker, store, _ = _setup(redis_client, stream_names)
    v = verdict("PMP-04", "bearing_wear", "raised")
    from linewatch.contract import ModelRef

    v = v.model_copy(update={"models": {"audio": ModelRef(name="audio-student", version="v1", sha256="cd")}})
    with running(worker):
        write(redis_client, stream_names.verdicts("PMP-04"), v)
        wait_for(lambda: store.list(), 10, "alert")
    aid = store.list()[0].alert_id
    with pytest.raises(InvalidAction, match="acting user"):
        store.confirm(aid, user=" ")
    store.confirm(aid, user="maria", comment="DE bearing noisy")
    fb = decode_message(redis_client.xrange(stream_names.feedback())[0][1])
    assert fb.outcome == "confirmed" and fb.true_label == "bearing_wear" and fb.models["audio"].sha256 == "cd"
    assert store.get(aid).acked  # type: ignore[union-attr]


def test_operator_ack_is_not_lost_to_a_concurrent_router_write(redis_client: redis.Redis,
                                                              stream_names: StreamNames) -> None:
    worker, store, _ = _setup(redis_client, stream_names)
    vs = stream_names.verdicts("PMP-07")
    with running(worker):
        write(redis_client, vs, verdict("PMP-07", "imbalance", "raised", severity=0.2))
        wait_for(lambda: store.list(), 10, "alert")
        aid = store.list()[0].alert_id
        for i in range(30):
            write(redis_client, vs, verdict("PMP-07", "imbalance", "raised", severity=0.2 + 0.02 * i))
            if i == 10:
                store.ack(aid, user="maria")
        wait_for(lambda: worker.stats.handled >= 31, 10, "all verdicts")
    rec = store.get(aid)
    assert rec.acked and rec.acked_by == "maria" and rec.severity > 0.6  # type: ignore[union-attr]


def test_the_demo_view_times_an_alert_whose_verdict_is_far_behind_the_newest(
        redis_client: redis.Redis, stream_names: StreamNames) -> None:
    """`linewatch demo`'s stage table: verdict -> alert for an alert raised early in the run, when
    hundreds of newer verdicts have come since (the view reads only the newest ones)."""
    from linewatch.cli.demo_services import ServicesSampler

    worker, _, clock = _setup(redis_client, stream_names)
    vs = stream_names.verdicts("PMP-01")
    first = verdict("PMP-01", "bearing_wear", "raised", severity=0.9).model_copy(
        update={"decided_at_ms": int(clock.t * 1000) - 40})
    with running(worker):
        write(redis_client, vs, first)
        wait_for(lambda: len(events(redis_client, stream_names)) == 1, 10, "raised")
    for i in range(400):  # the line goes on: newer verdicts of the same and other assets
        write(redis_client, stream_names.verdicts(f"CNV-{i % 7:02d}"), verdict(f"CNV-{i % 7:02d}", "normal", "normal"))
    _, _, latencies = ServicesSampler(redis_client, stream_names).tables()
    rows = {row[0]: row for row in zip(*(c._cells for c in latencies.columns))}  # type: ignore[attr-defined]
    assert rows["verdict -> alert"][3] == "1"
    assert rows["verdict -> alert"][1] == f"{events(redis_client, stream_names)[0].created_at_ms - first.decided_at_ms} ms"
