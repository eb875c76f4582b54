"""Drift workers on a real Redis: what a window did not test is reported (report, alert, metrics), and drift
that comes with a real fault (an open fusion verdict on the asset) is called a fault, not a stale model or an
ageing sensor."""

from __future__ import annotations

import numpy as np
import pytest
import redis

from governance.drift.scenarios import AssetStream, plc_reference, plc_temp_offset
from governance.drift.service import drift_workers
from linewatch.contract import AlertRequest, DriftReport, Prediction, StreamNames, Verdict, decode_message, encode_message
from linewatch.governance_settings import DriftSettings
from linewatch.streaming import StreamWorker
from tests.services.support import CLASSES, features, running, wait_for

T0 = 1_764_000_000_000
SLOW = "current.mean_over_rated"  #: made a slow random walk: a few effective draws per window


def _messages(client: redis.Redis, stream: str) -> list:
    return [decode_message(f) for _, f in client.xrange(stream)]


def _worker(workers: list[StreamWorker], role: str) -> StreamWorker:
    return next(w for w in workers if w.config.role == role)


def _verdicts(client: redis.Redis, names: StreamNames, asset: str, label: str, t0: int, t1: int,
              step_ms: int = 1000) -> None:
    pipe = client.pipeline(transaction=False)
    for t in range(t0, t1 + 1, step_ms):
        v = Verdict(asset_id=asset, event_time_ms=t, label=label, confidence=0.9, state="raised",
                    instant_label=label)
        pipe.xadd(names.verdicts(asset), encode_message(v))
    pipe.execute()


def _plc_line(client: redis.Redis, names: StreamNames, target: str, onset: int, windows: int) -> int:
    """4 assets x (baseline + windows) of 100 PLC vectors, 1 s apart; ``target``'s RTDs +4 K from window
    ``onset``; every asset's SLOW feature a random walk. Returns the entries written."""
    feature_names, ref = plc_reference()
    slow = feature_names.index(SLOW)
    assets = [f"PMP-{i:02d}" for i in range(4)]
    streams = {a: AssetStream(feature_names, ref, row=17 * i + 5, noise=0.25, seed=100 + i) for i, a in enumerate(assets)}
    walks = {a: np.random.default_rng(200 + i) for i, a in enumerate(assets)}
    level = dict.fromkeys(assets, 0.0)
    pipe = client.pipeline(transaction=False)
    t, n = T0, 0
    for w in range(-1, windows):
        for a, s in streams.items():
            x = s.draw(100)
            if w >= onset and a == target:
                x = plc_temp_offset(s, x)
            steps = np.cumsum(walks[a].normal(scale=0.05, size=100)) + level[a]
            level[a] = float(steps[-1])
            x[:, slow] = s.anchor[slow] + steps
            for v in x:
                pipe.xadd(names.features("plc", a), encode_message(features("plc", a, t, value=v)))
                t += 1000
                n += 1
    pipe.execute()
    return n


def test_features_not_tested_are_listed_in_report_alert_and_metrics(redis_client: redis.Redis,
                                                                    stream_names: StreamNames) -> None:
    names = stream_names
    settings = DriftSettings(modalities=("plc",), window=100, baseline_size=100, fleet_window=400, warmup_s=0,
                             shadow=False, prediction_drift=False, block_ms=50)
    total = _plc_line(redis_client, names, "PMP-01", onset=2, windows=5)
    worker = _worker(drift_workers(redis_client, names, settings), "drift.plc")
    with running(worker):
        wait_for(lambda: worker.stats.handled >= total, 60, "every features entry")
        wait_for(lambda: redis_client.xlen(names.alert_requests()) >= 1, 10, "an alert request")
    reports = [m for m in _messages(redis_client, names.drift()) if isinstance(m, DriftReport)]
    raised = next(r for r in reports if r.state == "raised" and r.asset_id == "PMP-01")
    assert raised.cause == "sensor" and raised.features[0].name.startswith("temp.")
    slow = next(f for f in raised.skipped if f.name == SLOW)
    assert slow.reason == "n_eff" and slow.n_eff_live is not None and slow.n_eff_live < settings.min_n_eff
    assert SLOW not in {f.name for f in raised.features}  # not tested, so not among the tested
    req = next(m for m in _messages(redis_client, names.alert_requests())
               if isinstance(m, AlertRequest) and m.asset_id == "PMP-01")
    assert any(f["name"] == SLOW and f["reason"] == "n_eff" for f in req.details["skipped"])
    assert "not tested" in req.message and SLOW in req.message
    skipped = worker.metrics.registry.get_sample_value(
        "linewatch_drift_features_skipped_total", {"role": "drift.plc", "scope": "asset", "reason": "n_eff"})
    assert skipped is not None and skipped >= 4 * 5  # every asset window left SLOW out


def test_feature_drift_on_an_asset_with_an_open_fault_is_a_fault(redis_client: redis.Redis,
                                                                  stream_names: StreamNames) -> None:
    names = stream_names
    settings = DriftSettings(modalities=("plc",), window=100, baseline_size=100, fleet_window=400, warmup_s=0,
                             shadow=False, prediction_drift=False, block_ms=50)
    # fusion holds bearing_wear raised on PMP-01 from the onset window on (its temperatures rise with it)
    _verdicts(redis_client, names, "PMP-01", "bearing_wear", T0 + 4 * 100 * 3 * 1000, T0 + 4 * 100 * 6 * 1000)
    total = _plc_line(redis_client, names, "PMP-01", onset=2, windows=5)
    worker = _worker(drift_workers(redis_client, names, settings), "drift.plc")
    with running(worker):
        wait_for(lambda: worker.stats.handled >= total, 60, "every features entry")
        wait_for(lambda: redis_client.xlen(names.alert_requests()) >= 1, 10, "an alert request")
    raised = next(r for r in _messages(redis_client, names.drift())
                  if isinstance(r, DriftReport) and r.state == "raised" and r.asset_id == "PMP-01")
    assert raised.cause == "fault" and "bearing_wear on PMP-01" in raised.cause_detail
    req = next(m for m in _messages(redis_client, names.alert_requests())
               if isinstance(m, AlertRequest) and m.asset_id == "PMP-01")
    assert "suspected cause: fault" in req.message and "not a sensor" in req.message


@pytest.mark.parametrize("fault_open", [True, False])
def test_prediction_drift_during_a_real_fault_names_the_fault_not_the_model(
        fault_open: bool, redis_client: redis.Redis, stream_names: StreamNames) -> None:
    """The label mix moves because PMP-01's bearing really wears (its predictions turn to bearing_wear): with
    fusion holding that fault open the cause is "fault" naming the asset and its verdict; without an open
    fault episode the same shift is the model's."""
    names = stream_names
    settings = DriftSettings(modalities=("plc",), shadow=False, prediction_baseline=300, prediction_window=300,
                             raise_after=1, block_ms=50)
    rng = np.random.default_rng(4)
    assets = ["PMP-01", "PMP-02", "PMP-03"]
    pipe = redis_client.pipeline(transaction=False)
    n = 900
    for i in range(n):
        a, t = assets[i % 3], T0 + i * 1000
        wearing = a == "PMP-01" and i >= 600
        label = "bearing_wear" if wearing and rng.random() < 0.8 else str(
            rng.choice(CLASSES, p=[0.94, 0.02, 0.01, 0.01, 0.01, 0.01]))
        pred = Prediction(asset_id=a, modality="plc", event_time_ms=t, model_name="plc-student", model_version="v4",
                          classes=CLASSES, probabilities=[1 / 6] * 6, label=label, features_entry_id=f"{t}-0",
                          inferred_at_ms=t)
        pipe.xadd(names.predictions("plc", a), encode_message(pred))
    pipe.execute()
    if fault_open:
        _verdicts(redis_client, names, "PMP-01", "bearing_wear", T0 + 610_000, T0 + 899_000, step_ms=3000)
    _verdicts(redis_client, names, "PMP-02", "normal", T0, T0 + 899_000, step_ms=30_000)  # healthy, no episode
    worker = _worker(drift_workers(redis_client, names, settings), "drift.plc")
    with running(worker):
        wait_for(lambda: worker.stats.handled >= n, 60, "all predictions")
        wait_for(lambda: redis_client.xlen(names.alert_requests()) >= 1, 10, "an alert request")
    r = next(m for m in _messages(redis_client, names.drift()) if isinstance(m, DriftReport) and m.state == "raised")
    assert r.kind == "prediction" and r.window_start_ms == T0 + 600_000
    req = next(m for m in _messages(redis_client, names.alert_requests()) if isinstance(m, AlertRequest))
    if fault_open:
        assert r.cause == "fault"
        assert "bearing_wear on PMP-01" in r.cause_detail and "PMP-02" not in r.cause_detail
        assert "not the model" in req.message and "not stale" in req.message
        assert "cause: the model" not in req.message and req.details["cause"] == "fault"
    else:
        assert r.cause == "model" and "cause: the model" in req.message
