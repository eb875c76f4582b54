"""``serve explain`` end to end on a real Redis: a raised verdict with its predictions and features on
real streams → one Explanation (stability, rule hits, agreement, heatmaps); normal verdicts and a
throttled repeat are not explained; a redelivery writes no second explanation; the CLI refuses a
malformed rules file."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import redis

from governance.explain.service import explain_worker
from linewatch.contract import (
    ConsumerGroup,
    Explanation,
    ModelRef,
    Prediction,
    StreamNames,
    Verdict,
    decode_message,
    encode_message,
)
from linewatch.explain_settings import ExplainSettings
from models.registry import default_registry
from tests.governance.sim import simulated_case
from tests.services.support import env_for, linewatch_cmd, running, wait_for

pytestmark = pytest.mark.skipif(not default_registry().modalities(), reason="no shipped models")
T0 = 1_764_000_000_000


def _write(client: redis.Redis, stream: str, msg) -> str:  # type: ignore[no-untyped-def]
    eid = client.xadd(stream, encode_message(msg))
    return eid.decode() if isinstance(eid, bytes) else str(eid)


def _evidence(client: redis.Redis, names: StreamNames, case, t_ms: int) -> tuple[dict[str, str], dict[str, ModelRef]]:  # type: ignore[no-untyped-def]
    """Features on the feature streams and the predictions made from them (as inference writes them)."""
    reg = default_registry()
    ids, models = {}, {}
    for modality, msg in case.messages.items():
        fid = _write(client, names.features(modality, case.asset_id), msg.model_copy(update={"event_time_ms": t_ms}))
        card = reg.load_card(modality)
        ref = ModelRef(name=card.name, version=card.version, sha256=card.files[card.serving_role].sha256)
        pred = Prediction(asset_id=case.asset_id, modality=modality, event_time_ms=t_ms, model_name=ref.name,
                          model_version=ref.version, model_sha256=ref.sha256, classes=list(card.classes),
                          probabilities=[0.1, 0.5, 0.1, 0.1, 0.1, 0.1], label="bearing_wear",
                          features_entry_id=fid, inferred_at_ms=t_ms, asset_type=case.asset_type)
        ids[modality] = _write(client, names.predictions(modality, case.asset_id), pred)
        models[modality] = ref
    return ids, models


def _verdict(case, state: str, label: str, t_ms: int, ids: dict[str, str], models: dict[str, ModelRef]) -> Verdict:  # type: ignore[no-untyped-def]
    return Verdict(asset_id=case.asset_id, event_time_ms=t_ms, label=label, confidence=0.8, state=state,
                   asset_type=case.asset_type, input_entry_ids=ids, models=models, decided_at_ms=t_ms)


def _explanations(client: redis.Redis, names: StreamNames) -> list[Explanation]:
    out = []
    for _, fields in client.xrange(names.explanations()):
        msg = decode_message(fields)
        assert isinstance(msg, Explanation)
        out.append(msg)
    return out


def _settled(client: redis.Redis, stream: str) -> bool:
    for g in client.xinfo_groups(stream):
        name = g["name"].decode() if isinstance(g["name"], bytes) else g["name"]
        if name == ConsumerGroup.EXPLAIN.value:
            return int(g["pending"]) == 0 and int(g.get("lag") or 0) == 0
    return False


def test_a_raised_verdict_gets_one_explanation_and_redelivery_adds_none(
        redis_client: redis.Redis, stream_names: StreamNames, tmp_path: Path) -> None:
    case = simulated_case("bearing_wear", 0.8, index=41)
    names = stream_names
    assets = tmp_path / "assets.json"
    assets.write_text(json.dumps(case.assets_json))
    # min_interval_ms=0: every raised verdict is explained, so only the exactly-once state stops a duplicate
    settings = ExplainSettings(block_ms=50, output_dir=tmp_path / "explanations", assets=assets, min_interval_ms=0)
    ids, models = _evidence(redis_client, names, case, T0)
    vstream = names.verdicts(case.asset_id)
    _write(redis_client, vstream, _verdict(case, "normal", "normal", T0 - 1000, ids, models))
    raised_id = _write(redis_client, vstream, _verdict(case, "raised", "bearing_wear", T0, ids, models))
    worker = explain_worker(redis_client, names, settings, consumer="explain-test")
    with running(worker):
        wait_for(lambda: redis_client.xlen(names.explanations()) >= 1, 60, "an explanation")
        wait_for(lambda: _settled(redis_client, vstream), 60, "verdicts acknowledged")
        got = _explanations(redis_client, names)
        assert len(got) == 1, "one explanation: the normal verdict is not explained"
        e = got[0]
        assert e.explanation_id == e.verdict_entry_id == raised_id and e.label == "bearing_wear"
        assert {m.modality for m in e.modalities} == {"plc", "thermal", "audio"}
        assert all(0.0 <= m.stability <= 1.0 and m.num_samples == settings.num_samples[m.modality] for m in e.modalities)
        assert {m.features_entry_id for m in e.modalities} == {
            decode_message(redis_client.xrange(names.predictions(m, case.asset_id), i, i)[0][1]).features_entry_id  # type: ignore[union-attr]
            for m, i in ids.items()}
        assert any(h.label == "bearing_wear" for h in e.rule_hits) and e.agreement, e.agreement_detail
        assert e.thermal_heatmap.shape == (120, 160) and e.audio_heatmap.shape[0] == 64
        assert all(Path(m.heatmap_png).parent == tmp_path / "explanations" / raised_id for m in e.modalities)
        # a redelivery: the group forgets what it read, every verdict comes again
        redis_client.xgroup_setid(vstream, ConsumerGroup.EXPLAIN.value, id="0")
        wait_for(lambda: _settled(redis_client, vstream), 60, "redelivered verdicts acknowledged")
        assert len(_explanations(redis_client, names)) == 1, "a redelivered verdict must not be explained twice"
        assert worker.stats.dead_letters == 0
    metrics = worker.metrics.registry.get_sample_value(
        "linewatch_explain_latency_seconds_count", {"role": "explain", "stage": "total"})
    assert metrics == 1.0


def test_one_episode_is_explained_first_then_at_most_every_min_interval(
        redis_client: redis.Redis, stream_names: StreamNames) -> None:
    case = simulated_case("bearing_wear", 0.8, index=41)
    names = stream_names
    settings = ExplainSettings(block_ms=50, write_png=False, min_interval_ms=30_000)
    ids, models = _evidence(redis_client, names, case, T0)
    vstream = names.verdicts(case.asset_id)
    first = _write(redis_client, vstream, _verdict(case, "raised", "bearing_wear", T0, ids, models))
    _write(redis_client, vstream, _verdict(case, "raised", "bearing_wear", T0 + 1_000, ids, models))
    later = _write(redis_client, vstream, _verdict(case, "raised", "bearing_wear", T0 + 31_000, ids, models))
    worker = explain_worker(redis_client, names, settings, consumer="explain-test")
    with running(worker):
        wait_for(lambda: _settled(redis_client, vstream) and redis_client.xlen(names.explanations()) >= 2, 60,
                 "verdicts handled")
    assert [e.verdict_entry_id for e in _explanations(redis_client, names)] == [first, later]


def test_a_verdict_whose_evidence_is_gone_is_dead_lettered(redis_client: redis.Redis,
                                                           stream_names: StreamNames) -> None:
    names = stream_names
    v = Verdict(asset_id="PMP-09", event_time_ms=T0, label="bearing_wear", confidence=0.8, state="raised",
                input_entry_ids={"thermal": "1-1"})
    _write(redis_client, names.verdicts(v.asset_id), v)
    worker = explain_worker(redis_client, names, ExplainSettings(block_ms=50), consumer="explain-test")
    with running(worker):
        wait_for(lambda: redis_client.xlen(names.deadletter) >= 1, 30, "a dead letter")
    (_, fields), = redis_client.xrange(names.deadletter)
    dead = decode_message(fields)
    assert dead.reason == "trimmed" and "nothing to explain" in dead.detail  # type: ignore[attr-defined]
    assert redis_client.xlen(names.explanations()) == 0


def test_cli_refuses_a_malformed_rules_file(redis_url: str, stream_names: StreamNames, tmp_path: Path) -> None:
    bad = tmp_path / "rules.yaml"
    bad.write_text("rules:\n  - id: x\n    label: bearing_wear\n    all: [audio.comb.max >> 2]\n"
                   "    cause: a cause\n    action: an action\n")
    env = env_for(redis_url, stream_names, LINEWATCH_DATA_DIR=str(tmp_path))
    proc = subprocess.run([*linewatch_cmd(), "serve", "explain", "--rules", str(bad)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    said = " ".join((proc.stdout + proc.stderr).split())
    assert f"{bad}:4:" in said.replace(" ", "") or f"{bad}:4:" in said, said
    assert "cannot read condition" in said, said


def test_serve_explain_process_explains_and_stops_on_sigterm(redis_url: str, redis_client: redis.Redis,
                                                              stream_names: StreamNames, tmp_path: Path) -> None:
    import signal

    from tests.services.support import start

    case = simulated_case("bearing_wear", 0.8, index=41)
    names = stream_names
    assets = tmp_path / "assets.json"
    assets.write_text(json.dumps(case.assets_json))
    ids, models = _evidence(redis_client, names, case, T0)
    vid = _write(redis_client, names.verdicts(case.asset_id), _verdict(case, "raised", "bearing_wear", T0, ids, models))
    env = env_for(redis_url, names, LINEWATCH_DATA_DIR=str(tmp_path), LINEWATCH_EXPLAIN__ASSETS=str(assets),
                  LINEWATCH_EXPLAIN__BLOCK_MS="50")
    proc = start([*linewatch_cmd(), "serve", "explain", "--metrics-port", "0"], env, tmp_path / "explain.log")
    try:
        wait_for(lambda: redis_client.xlen(names.explanations()) >= 1 or proc.poll() is not None, 120,
                 "an explanation from the process")
        assert proc.poll() is None, (tmp_path / "explain.log").read_text()[-3000:]
        (e,) = _explanations(redis_client, names)
        assert e.verdict_entry_id == vid and e.agreement
        assert (tmp_path / "explanations" / vid / "thermal.png").is_file()
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
    assert code == 0, (tmp_path / "explain.log").read_text()[-3000:]
