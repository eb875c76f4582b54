"""The demo's drift on a real Redis: the microphone drift ``linewatch demo`` injects by default, rendered by
the plant simulator and turned into model inputs by the pipeline's own audio feature code, is raised by the
drift worker with the demo's settings within the stated time with cause "sensor" (the microphone); the
same asset without it raises nothing over the same run (docs/drift.md "Demo drift")."""

from __future__ import annotations

import numpy as np
import redis

from governance.drift.live_line import T0_MS, render_line
from governance.drift.service import drift_workers
from linewatch.cli.demo_cmd import DEFAULT_SECONDS
from linewatch.cli.demo_governance import DEMO_DRIFT, add_drift, demo_drift_settings, demo_simulator_config
from linewatch.contract import AlertRequest, DriftReport, StreamNames, decode_message, encode_message
from linewatch.governance_settings import DriftSettings
from linewatch.settings import Settings
from tests.services.support import running, wait_for

#: Stated: raised within this long after the drift's onset (3 audio windows of 60 clips at 1 clip/s).
STATED_S = 180


def _line(drift: bool, seconds: float, seed: int = 7) -> list[tuple[str, int, np.ndarray]]:
    """(asset, event time, audio model input) of the demo fleet's last asset, with or without the demo drift."""
    config = demo_simulator_config(Settings().simulator.model_copy(update={"seed": seed}))
    onset, ramp = DEMO_DRIFT.onset_ramp(DEFAULT_SECONDS)

    def prepare(factory) -> None:  # type: ignore[no-untyped-def]
        if drift:
            add_drift(factory, DEMO_DRIFT.kind, onset, ramp, DEMO_DRIFT.magnitude)

    from linewatch.simulator import Factory

    target = Factory(config, n_assets=6).fleet[-1].asset_id
    return [(s.message.asset_id, s.message.event_time_ms, np.asarray(s.message.vector))
            for s in render_line(config, 6, seconds, ("audio",), prepare, audio_vector_only=True, only={target})]


def _replay(client: redis.Redis, names: StreamNames, rows: list[tuple[str, int, np.ndarray]]) -> list[DriftReport]:
    from tests.services.support import features

    settings, _ = demo_drift_settings(DriftSettings(modalities=("audio",), shadow=False, prediction_drift=False,
                                                    block_ms=50), DEFAULT_SECONDS)
    pipe = client.pipeline(transaction=False)
    for a, t, v in rows:
        pipe.xadd(names.features("audio", a), encode_message(features("audio", a, t, value=v)))
    pipe.execute()
    worker = next(w for w in drift_workers(client, names, settings) if w.config.role == "drift.audio")
    with running(worker):
        wait_for(lambda: worker.stats.handled >= len(rows), 60, "every audio features entry")
    return [m for _, f in client.xrange(names.drift()) if isinstance(m := decode_message(f), DriftReport)]


def test_the_demo_drift_is_raised_within_the_stated_time_as_a_microphone_and_nothing_without_it(
        redis_client: redis.Redis, stream_names: StreamNames) -> None:
    onset, ramp = DEMO_DRIFT.onset_ramp(DEFAULT_SECONDS)
    seconds = onset + STATED_S + 5
    assert seconds <= DEFAULT_SECONDS  # the demo runs long enough to show it
    drifted = _line(True, seconds)
    target = drifted[0][0]
    reports = _replay(redis_client, stream_names, drifted)
    raised = [r for r in reports if r.state == "raised"]
    assert raised, [(r.window_end_ms, r.drifted) for r in reports]
    first = raised[0]
    delay_s = (first.window_end_ms - T0_MS) / 1000 - onset
    assert first.scope == "asset" and first.asset_id == target and first.kind == "feature"
    assert 0 < delay_s <= STATED_S, delay_s
    assert first.cause == "sensor" and "microphone" in first.cause_detail
    top = [f for f in first.features if f.drifted]
    assert top and all(f.p_adjusted <= first.alpha for f in top)
    assert any(f.name.startswith("shape.band") for f in top[:3])  # the lost high-frequency band shares
    assert not [r for r in reports if r.drifted and r.window_end_ms < T0_MS + onset * 1000]  # nothing before
    req = next(m for _, f in redis_client.xrange(stream_names.alert_requests())
               if isinstance(m := decode_message(f), AlertRequest))
    assert req.state == "raise" and req.asset_id == target and "sensor" in req.message and "shape.band" in req.message

    clean_names = StreamNames(prefix=stream_names.prefix + "n", shards=stream_names.shards)
    try:
        clean = _replay(redis_client, clean_names, _line(False, seconds))
        assert not [r for r in clean if r.state == "raised"], [
            (r.window_end_ms, [f.name for f in r.features if f.drifted]) for r in clean if r.drifted]
        assert redis_client.xlen(clean_names.alert_requests()) == 0
    finally:
        keys = list(redis_client.scan_iter(match=f"{clean_names.prefix}:*", count=1000))
        if keys:
            redis_client.delete(*keys)
