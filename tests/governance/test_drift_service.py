"""The drift workers on a real Redis: feature drift -> DriftReport + AlertRequest, the shadow teacher
against a healthy and a deliberately degraded student, operator-feedback error drift."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import redis
from onnx import numpy_helper

from governance.drift.service import drift_workers
from linewatch.contract import (
    AlertRequest,
    DeadLetter,
    DriftReport,
    Feedback,
    Prediction,
    StreamNames,
    decode_message,
    encode_message,
)
from linewatch.governance_settings import DriftSettings
from linewatch.streaming import StreamWorker
from governance.drift.scenarios import REGISTRY, AssetStream, plc_reference, plc_temp_offset
from tests.services.support import features, running, wait_for

T0 = 1_764_000_000_000


def _messages(client: redis.Redis, stream: str) -> list:
    return [decode_message(f) for _, f in client.xrange(stream)]


def _worker(workers: list[StreamWorker], role: str) -> StreamWorker:
    return next(w for w in workers if w.config.role == role)


def test_feature_drift_worker_writes_report_and_alert_request(redis_client: redis.Redis,
                                                              stream_names: StreamNames) -> None:
    names = stream_names
    settings = DriftSettings(modalities=("plc",), window=100, baseline_size=100, fleet_window=400, raise_after=2,
                             shadow=False, prediction_drift=False, block_ms=50)
    feature_names, ref = plc_reference()
    assets = [f"PMP-{i:02d}" for i in range(4)]
    streams = {a: AssetStream(feature_names, ref, row=17 * i + 5, noise=0.25, seed=100 + i) for i, a in enumerate(assets)}
    target, onset, windows = "PMP-01", 2, 5
    pipe = redis_client.pipeline(transaction=False)
    t = T0
    for w in range(-1, windows):  # window -1: the baseline
        for a, s in streams.items():
            x = s.draw(100)
            if w >= onset and a == target:
                x = plc_temp_offset(s, x)
            for v in x:
                pipe.xadd(names.features("plc", a), encode_message(features("plc", a, t, value=v)))
                t += 1000
    bad = features("plc", "PMP-03", t, value=np.zeros(0, np.float32))  # a features-v1 writer: no vector
    pipe.xadd(names.features("plc", "PMP-03"), encode_message(bad))
    pipe.execute()
    worker = _worker(drift_workers(redis_client, names, settings), "drift.plc")
    total = 4 * 100 * (windows + 1) + 1
    with running(worker):
        wait_for(lambda: worker.stats.handled + worker.stats.dead_letters >= total, 60, "every features entry")
        wait_for(lambda: redis_client.xlen(names.alert_requests()) >= 1, 10, "an alert request")
    reports = [m for m in _messages(redis_client, names.drift()) if isinstance(m, DriftReport)]
    asset_reports = [r for r in reports if r.scope == "asset"]
    assert {r.asset_id for r in asset_reports if r.drifted} == {target}
    raised = next(r for r in asset_reports if r.state == "raised" and r.asset_id == target)
    assert raised.kind == "feature" and raised.cause == "sensor" and raised.modality == "plc"
    assert raised.n_live == 100 and raised.n_reference == 100 and raised.correction == "bonferroni"
    top = raised.features[0]
    assert top.drifted and top.name in ("temp.bearing_c_over_100", "temp.winding_c_over_100")
    assert top.p_adjusted <= settings.alpha and top.test == "ks" and top.effect_size > 0.5
    requests = [m for m in _messages(redis_client, names.alert_requests()) if isinstance(m, AlertRequest)]
    req = next(r for r in requests if r.asset_id == target)
    assert req.source == "drift" and req.state == "raise" and req.episode_key == f"drift:feature:plc:{target}"
    assert "temp." in req.message and "sensor" in req.message
    details = req.details
    assert details["window"]["n_live"] == 100 and details["window"]["end_ms"] > details["window"]["start_ms"]
    f0 = details["features"][0]
    assert {"name", "statistic", "p_value", "p_adjusted", "effect_size"} <= set(f0)
    assert {r.asset_id for r in requests} <= {target, "fleet"}
    dead = [m for m in _messages(redis_client, names.deadletter) if isinstance(m, DeadLetter)]
    assert len(dead) == 1 and "no model-input vector" in dead[0].detail


def _served_plc_student() -> Path:
    """The shipped PLC student whose teacher the shadow monitor loads (the latest version)."""
    from models.registry import ModelRegistry

    return ModelRegistry(REGISTRY).latest("plc").directory / "student.fp32.onnx"


def _degraded_student(tmp: Path, noise: float) -> Path:
    path = tmp / "student.fp32.onnx"
    shutil.copy(_served_plc_student(), path)
    model = onnx.load(path)
    rng = np.random.default_rng(5)
    for init in model.graph.initializer:  # the layers' weights (not the baked-in standardiser or calibration)
        a = numpy_helper.to_array(init)
        if init.name.endswith(".weight"):
            init.CopyFrom(numpy_helper.from_array((a + rng.normal(size=a.shape) * noise * a.std()).astype(np.float32),
                                                  init.name))
    onnx.save(model, path)
    return path


@pytest.mark.parametrize("student", ["healthy", "degraded"])
def test_shadow_teacher_alarm_only_for_a_degraded_student(student: str, redis_client: redis.Redis,
                                                          stream_names: StreamNames, tmp_path: Path) -> None:
    names = stream_names
    settings = DriftSettings(modalities=("plc",), shadow_fraction=1.0, shadow_window=200, block_ms=50,
                             prediction_drift=False)
    path = _served_plc_student() if student == "healthy" else _degraded_student(tmp_path, 0.5)
    version = _served_plc_student().parent.name
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    _, ref = plc_reference()
    x = ref[np.arange(600) % len(ref)].astype(np.float32)
    logits = session.run(None, {session.get_inputs()[0].name: x})[0]
    classes = ["normal", "bearing_wear", "electrical_overheating", "cooling_failure", "imbalance", "cavitation"]
    assets = ["PMP-01", "FAN-02", "CNV-03"]
    for i, (v, z) in enumerate(zip(x, logits)):
        a = assets[i % 3]
        t = T0 + i * 1000
        fid = redis_client.xadd(names.features("plc", a), encode_message(features("plc", a, t, value=v))).decode()
        p = np.exp(z - z.max())
        p /= p.sum()
        pred = Prediction(asset_id=a, modality="plc", event_time_ms=t, model_name="plc-student", model_version=version,
                          classes=classes, probabilities=[float(q) for q in p], label=classes[int(np.argmax(p))],
                          features_entry_id=fid, inferred_at_ms=t)
        redis_client.xadd(names.predictions("plc", a), encode_message(pred), id=fid)
    worker = _worker(drift_workers(redis_client, names, settings), "shadow.plc")
    with running(worker):
        wait_for(lambda: redis_client.xlen(names.shadow_predictions("plc")) >= 600, 60, "600 teacher predictions")
    teacher = [m for m in _messages(redis_client, names.shadow_predictions("plc")) if isinstance(m, Prediction)]
    assert {t.model_name for t in teacher} == {"plc-student:teacher"} and len(teacher) == 600
    reports = [m for m in _messages(redis_client, names.drift()) if isinstance(m, DriftReport)]
    requests = [m for m in _messages(redis_client, names.alert_requests()) if isinstance(m, AlertRequest)]
    if student == "healthy":
        assert not [r for r in reports if r.state == "raised"], [r.cause_detail for r in reports]
        assert not requests
        return
    raised = next(r for r in reports if r.state == "raised")
    assert raised.kind == "shadow" and raised.cause == "model" and raised.error_rate is not None
    assert raised.error_rate > 0.1 and "binomial" in raised.detector
    req = next(r for r in requests if r.state == "raise")
    assert req.source == "drift" and req.episode_key == "drift:shadow:plc:fleet" and "teacher" in req.message
    assert req.details["teacher"]["name"] == "plc-student:teacher"


def test_feedback_error_drift_raises_on_a_jump_in_rejections(redis_client: redis.Redis,
                                                            stream_names: StreamNames) -> None:
    names = stream_names
    settings = DriftSettings(modalities=("plc",), shadow=False, block_ms=50, error_detectors=("ADWIN",))
    rng = np.random.default_rng(9)
    outcomes = np.concatenate([rng.random(400) < 0.05, rng.random(300) < 0.5])
    pipe = redis_client.pipeline(transaction=False)
    for i, rejected in enumerate(outcomes):
        fb = Feedback(alert_id=f"A{i}", asset_id="PMP-01", predicted_label="bearing_wear",
                      outcome="rejected" if rejected else "confirmed", user="op", time_ms=T0 + i * 1000)
        pipe.xadd(names.feedback(), encode_message(fb))
    pipe.execute()
    worker = _worker(drift_workers(redis_client, names, settings), "drift.feedback")
    with running(worker):
        wait_for(lambda: worker.stats.handled >= len(outcomes), 60, "all feedback")
    reports = [m for m in _messages(redis_client, names.drift()) if isinstance(m, DriftReport)]
    first = reports[0]
    assert first.kind == "error" and first.detector == "ADWIN" and first.state == "raised"
    assert first.n_live > 400  # not before the jump
    requests = [m for m in _messages(redis_client, names.alert_requests()) if isinstance(m, AlertRequest)]
    assert requests[0].episode_key == "drift:error:all" and requests[0].state == "raise"


def test_feedback_on_alerts_not_raised_by_a_verdict_is_no_model_error(redis_client: redis.Redis,
                                                                      stream_names: StreamNames) -> None:
    """Operators rejecting sensor alerts (a camera that was only being cleaned) amid confirmed
    verdicts: the models' error stream does not see them, so no error drift is raised."""
    names = stream_names
    settings = DriftSettings(modalities=("plc",), shadow=False, block_ms=50, error_detectors=("ADWIN",))
    pipe = redis_client.pipeline(transaction=False)
    n = 0
    for i in range(700):
        sensor = i >= 400 and i % 2 == 0
        fb = Feedback(alert_id=f"A{i}", asset_id="PMP-01", predicted_label="sensor_fault" if sensor else "bearing_wear",
                      outcome="rejected" if sensor else "confirmed", user="op", time_ms=T0 + i * 1000,
                      source="sensor" if sensor else "verdict")
        pipe.xadd(names.feedback(), encode_message(fb))
        n += 1
    pipe.execute()
    worker = _worker(drift_workers(redis_client, names, settings), "drift.feedback")
    with running(worker):
        wait_for(lambda: worker.stats.handled >= n, 60, "all feedback")
    assert not [m for m in _messages(redis_client, names.drift()) if isinstance(m, DriftReport)]
    assert not [m for m in _messages(redis_client, names.alert_requests()) if isinstance(m, AlertRequest)]


def test_serve_drift_process_exports_metrics_and_stops_on_sigterm(redis_url: str, redis_client: redis.Redis,
                                                                   stream_names: StreamNames, tmp_path: Path) -> None:
    import signal
    import socket
    import urllib.request

    from tests.services.support import env_for, linewatch_cmd, start

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = env_for(redis_url, stream_names, LINEWATCH_DRIFT__METRICS_PORT=str(port), LINEWATCH_DRIFT__WINDOW="20",
                  LINEWATCH_DRIFT__BASELINE_SIZE="20", LINEWATCH_DRIFT__MODALITIES='["plc"]',
                  LINEWATCH_DRIFT__SHADOW_FRACTION="0.5")
    log = tmp_path / "drift.log"
    proc = start([*linewatch_cmd(), "serve", "drift"], env, log)
    try:
        feature_names, ref = plc_reference()
        stream = AssetStream(feature_names, ref, row=1, noise=0.25, seed=3)
        for i, v in enumerate(stream.draw(75)):  # 15 s warm-up + baseline 20 + two windows of 20
            redis_client.xadd(stream_names.features("plc", "PMP-01"),
                              encode_message(features("plc", "PMP-01", T0 + i * 1000, value=v)))

        def scraped() -> str:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
                    text = r.read().decode()
            except OSError:
                return ""
            return text if 'linewatch_drift_windows_total{kind="feature",role="drift.plc",scope="asset"} 2.0' in text \
                else ""

        text = wait_for(scraped, 90, "two asset windows in /metrics")
        assert "linewatch_drift_evaluation_seconds_bucket" in str(text)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, log.read_text()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
    roles = {"drift.plc", "drift.feedback", "shadow.plc"}
    assert all(f'"{r}"' in log.read_text() for r in roles), log.read_text()[-2000:]


def test_prediction_label_mix_drift_chi2(redis_client: redis.Redis, stream_names: StreamNames) -> None:
    names = stream_names
    settings = DriftSettings(modalities=("plc",), shadow=False, prediction_baseline=200, prediction_window=200,
                             raise_after=1, block_ms=50)
    rng = np.random.default_rng(4)
    classes = ["normal", "bearing_wear", "electrical_overheating", "cooling_failure", "imbalance", "cavitation"]
    healthy = rng.choice(classes, size=600, p=[0.9, 0.04, 0.02, 0.02, 0.01, 0.01])
    shifted = rng.choice(classes, size=200, p=[0.6, 0.3, 0.04, 0.03, 0.02, 0.01])  # bearing wear spreading
    pipe = redis_client.pipeline(transaction=False)
    for i, label in enumerate([*healthy, *shifted]):
        a = f"PMP-{i % 3:02d}"
        pred = Prediction(asset_id=a, modality="plc", event_time_ms=T0 + i * 1000, model_name="plc-student",
                          model_version="v4", classes=classes, probabilities=[1 / 6] * 6, label=str(label),
                          features_entry_id=f"{T0 + i}-0", inferred_at_ms=T0)
        pipe.xadd(names.predictions("plc", a), encode_message(pred))
    pipe.execute()
    worker = _worker(drift_workers(redis_client, names, settings), "drift.plc")
    with running(worker):
        wait_for(lambda: worker.stats.handled >= 800, 60, "all predictions")
    reports = [m for m in _messages(redis_client, names.drift()) if isinstance(m, DriftReport)]
    assert [r.kind for r in reports] == ["prediction"], [(r.kind, r.drifted) for r in reports]  # windows 1-2 clean
    r = reports[0]
    assert r.state == "raised" and r.detector == "chi2" and r.features[0].test == "chi2"
    assert r.features[0].p_value < 1e-6 and r.features[0].effect_size > 0.2 and r.window_end_ms == T0 + 799_000
    assert "bearing_wear" in r.cause_detail


def test_plc_alarm_family_mix_drift_chi2(redis_client: redis.Redis, stream_names: StreamNames) -> None:
    from pipeline.features.plc_window import ALARM_FAMILIES

    names = stream_names
    settings = DriftSettings(modalities=("plc",), shadow=False, prediction_drift=False, baseline_size=100,
                             window=100, fleet_window=100, raise_after=1, block_ms=50)
    feature_names, ref = plc_reference()
    stream = AssetStream(feature_names, ref, row=9, noise=0.25, seed=8)
    rng = np.random.default_rng(8)
    pipe = redis_client.pipeline(transaction=False)
    for i, v in enumerate(stream.draw(300)):
        counts = dict.fromkeys(ALARM_FAMILIES, 0)
        if rng.random() < 0.1:
            counts["A1xx"] = 1  # now and then a process alarm
        if i >= 200 and rng.random() < 0.5:
            counts["A2xx"] = int(rng.integers(1, 4))  # a new alarm family starts firing
        msg = features("plc", "PMP-01", T0 + i * 1000, value=v).model_copy(update={"alarm_counts": counts})
        pipe.xadd(names.features("plc", "PMP-01"), encode_message(msg))
    pipe.execute()
    worker = _worker(drift_workers(redis_client, names, settings), "drift.plc")
    with running(worker):
        wait_for(lambda: worker.stats.handled >= 300, 60, "all features")
    reports = [m for m in _messages(redis_client, names.drift()) if isinstance(m, DriftReport)]
    alarm = [r for r in reports if r.features and r.features[0].name == "alarm_counts"]
    assert len(alarm) == 1 and alarm[0].state == "raised" and alarm[0].window_end_ms == T0 + 299_000
    assert alarm[0].features[0].p_value < 1e-6 and "A2xx" in alarm[0].cause_detail
    requests = [m for m in _messages(redis_client, names.alert_requests()) if isinstance(m, AlertRequest)]
    req = next(m for m in requests if m.episode_key == "drift:alarm_counts:plc:fleet")
    assert req.state == "raise" and "alarm-family mix" in req.message


def test_drift_workers_for_every_shipped_modality(redis_client: redis.Redis, stream_names: StreamNames) -> None:
    """Each shipped student has its teacher, its reference and an expected disagreement: one feature worker
    and one shadow worker per modality, plus the feedback worker, sharing one metrics registry."""
    workers = drift_workers(redis_client, stream_names, DriftSettings())
    roles = [w.config.role for w in workers]
    assert roles == ["drift.plc", "drift.thermal", "drift.audio", "drift.feedback", "shadow.plc", "shadow.thermal",
                     "shadow.audio"]
    assert len({id(w.metrics.registry) for w in workers}) == 1
    assert {w.config.group for w in workers if w.config.role.startswith("shadow")} == {"shadow"}
    for w in workers:
        if w.config.role.startswith("shadow."):
            x = np.zeros((2, {"plc": 45, "thermal": 69, "audio": 86}[w.config.role.split(".")[1]]), np.float32)
            assert w.handler.teacher.predict(x).shape == (2, 6)  # type: ignore[attr-defined]



def test_a_registry_without_teacher_is_refused_for_shadow_only(redis_client: redis.Redis, stream_names: StreamNames,
                                                               tmp_path: Path) -> None:
    import json

    from governance.drift.shadow import TeacherMissing

    version = tmp_path / "plc" / "v4"
    shutil.copytree(REGISTRY / "plc" / "v4", version, ignore=shutil.ignore_patterns("teacher.fp32.onnx", "*.png"))
    card = json.loads((version / "card.json").read_text())
    del card["files"]["teacher_fp32"]
    card["files"] = {k: v for k, v in card["files"].items() if (version / v["path"]).is_file()}
    (version / "card.json").write_text(json.dumps(card))
    with pytest.raises(TeacherMissing, match="scripts/ship_teacher.py"):
        drift_workers(redis_client, stream_names, DriftSettings(registry=tmp_path, modalities=("plc",)))
    workers = drift_workers(redis_client, stream_names, DriftSettings(registry=tmp_path, modalities=("plc",),
                                                                      shadow=False))
    assert [w.config.role for w in workers] == ["drift.plc", "drift.feedback"]
