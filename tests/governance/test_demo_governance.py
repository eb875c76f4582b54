"""The governance half of ``linewatch demo``: guarded start of the governance workers, the drift
injected into the running simulator, and the live view of drift, explanations and the audit trail."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
import redis
from rich.console import Console

from linewatch.cli import demo_governance
from linewatch.cli.demo_governance import DemoGovernance
from linewatch.contract import (
    Alert,
    AlertSeverity,
    DriftFeature,
    DriftReport,
    DriftSkipped,
    Explanation,
    FeatureWeight,
    ModalityExplanation,
    ModelRef,
    RuleHit,
    StreamNames,
    Verdict,
)
from linewatch.settings import Settings
from linewatch.simulator import Factory
from linewatch.simulator.config import SimulatorConfig
from tests.services.support import wait_for, write

PLC = ModelRef(name="plc-student", version="v3", sha256="c3" * 32)


def text(gov: DemoGovernance) -> str:
    console = Console(width=220, record=True, color_system=None)
    for part in gov.tables():
        console.print(part)
    return console.export_text()


def test_missing_governance_services_are_reported_and_the_audit_worker_runs(
        redis_client: redis.Redis, stream_names: StreamNames, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    components = {"audit": demo_governance.COMPONENTS["audit"],  # explain left out: no LIME in this test
                  "drift": ("governance.no_such_drift.service", "drift_workers", "audit")}  # a tree without it
    monkeypatch.setattr(demo_governance, "COMPONENTS", components)
    settings = Settings(data_dir=tmp_path)
    gov = DemoGovernance(redis_client, stream_names, settings, tmp_path / "demo").start()
    try:
        assert gov.status["audit"] == "running"
        assert gov.status["drift"] == "not installed"
        assert "drift: not installed" in text(gov)
        v_id = write(redis_client, stream_names.verdicts("PMP-01"), Verdict(
            asset_id="PMP-01", event_time_ms=1, label="cavitation", confidence=0.9, state="raised",
            models={"plc": PLC}))
        wait_for(lambda: gov.audit_path().is_file() and "cavitation" in text(gov), 20, "the verdict in the audit view")
        assert v_id
    finally:
        gov.stop()
    assert all(not t.is_alive() for t in gov.threads)


def test_view_shows_drift_reports_alerts_and_explanation_summaries(redis_client: redis.Redis,
                                                                    stream_names: StreamNames, tmp_path: Path) -> None:
    names = stream_names
    gov = DemoGovernance(redis_client, names, Settings(data_dir=tmp_path), tmp_path)
    gov.status = {"audit": "off", "drift": "running", "explain": "running"}  # the view only, no workers
    write(redis_client, names.drift(), DriftReport(
        kind="feature", scope="asset", asset_id="CNV-06", modality="plc", window_start_ms=0, window_end_ms=1,
        n_live=500, n_reference=2000, drifted=True, state="raised", cause="sensor",
        features=[DriftFeature(name="bearing_temp_c_mean", statistic=0.5, p_value=1e-12, p_adjusted=3e-11,
                               effect_size=2.0, drifted=True)], decided_at_ms=1_700_000_000_000,
        skipped=[DriftSkipped(name="temp.slope", reason="n_eff", n_eff_live=7.0, n_eff_reference=30.0)]))
    write(redis_client, names.alerts, Alert(asset_id="CNV-06", severity=AlertSeverity.WARNING, label="drift",
                                            message="audio feature drift on CNV-06 (suspected cause: sensor)",
                                            created_at_ms=1, source="drift", event="raised"))
    v_id = write(redis_client, names.verdicts("PMP-01"), Verdict(asset_id="PMP-01", event_time_ms=1,
                                                                 label="bearing_wear", confidence=0.9, state="raised"))
    write(redis_client, names.verdicts("PMP-02"), Verdict(asset_id="PMP-02", event_time_ms=1, label="imbalance",
                                                          confidence=0.9, state="raised"))
    write(redis_client, names.explanations(), Explanation(
        explanation_id=v_id, verdict_entry_id=v_id, asset_id="PMP-01", label="bearing_wear", event_time_ms=1,
        agreement=True, explained_at_ms=2,
        modalities=[ModalityExplanation(modality="audio", model=PLC, explained_label="bearing_wear", probability=0.8,
                                        top_features=[FeatureWeight(name="env_bpfo_order", weight=0.5),
                                                      FeatureWeight(name="kurtosis", weight=0.2)],
                                        stability=0.87, num_samples=600, seed=0)],
        rule_hits=[RuleHit(rule_id="outer-race", label="bearing_wear", cause="outer-race wear", action="a")]))
    out = text(gov)
    assert "1 drift alert(s) raised" in out
    assert "CNV-06" in out and "sensor" in out and "bearing_temp_c_mean 0.50 3e-11 +2.0" in out
    assert "1 (n_eff)" in out  # one feature not tested
    assert "newest drift alert (CNV-06): audio feature drift on CNV-06 (suspected cause: sensor)" in out
    assert "env_bpfo_order" in out and "outer-race" in out and "0.87" in out and "yes" in out
    assert "1 raised fault(s) not explained yet: PMP-02" in out  # PMP-02's fault is not explained yet


def test_drift_is_injected_into_the_running_simulator(tmp_path: Path, redis_client: redis.Redis,
                                                      stream_names: StreamNames) -> None:
    factory = Factory(SimulatorConfig(seed=3, drift_fraction=0.0, thermal_fps=1.0), n_assets=3)
    stop = threading.Event()
    sim = threading.Thread(target=factory.run_realtime, kwargs={"out_dir": tmp_path / "landing", "stop": stop},
                           daemon=True)
    sim.start()
    try:
        wait_for(lambda: factory.scenario is not None, 20, "the simulator's scenario")
        gov = DemoGovernance(redis_client, stream_names, Settings(data_dir=tmp_path), tmp_path)
        target = factory.fleet[-1].asset_id
        assert factory.scenario is not None
        before = factory.scenario.drift(target, np.array([100.0])).plc_temp_offset_c
        desc = gov.inject_drift(factory, "plc_temp_offset", onset_s=50.0, ramp_s=10.0)
        assert target in desc and "plc_temp_offset" in desc
        assert factory.scenario.drift_kinds_at(target, 40.0) == ()
        assert factory.scenario.drift_kinds_at(target, 100.0) == ("plc_temp_offset",)
        after = factory.scenario.drift(target, np.array([100.0])).plc_temp_offset_c
        assert np.all(np.abs(np.asarray(after) - np.asarray(before)) > 3.0)  # +-4 degC x magnitude
        gov.inject_drift(factory, "ambient_shift", onset_s=50.0, ramp_s=10.0)
        assert all("ambient_shift" in factory.scenario.drift_kinds_at(a.asset_id, 100.0) for a in factory.fleet)
        with pytest.raises(ValueError, match="unknown drift kind"):
            gov.inject_drift(factory, "gremlins", 1.0, 1.0)
    finally:
        stop.set()
        sim.join(timeout=30)


def test_demo_drift_settings_keep_plc_windows_size_audio_for_its_rate_and_test_thermal_fleet_only() -> None:
    from linewatch.governance_settings import DriftSettings

    configured = DriftSettings()
    demo, note = demo_governance.demo_drift_settings(configured, 150)
    assert demo.windows("plc") == configured.windows("plc")  # PLC: the configured sizes (docs/drift.md)
    assert demo.fleet_window == configured.fleet_window
    assert demo.windows("audio")[:2] == (60, 120)  # audio clips: 1/s, nearly independent ("Demo drift")
    assert not demo.asset_windows("thermal") and demo.asset_windows("audio")  # thermal: fleet windows only,
    assert demo.windows("thermal")[3] == demo_governance.DEMO_THERMAL_WARMUP_S >= 5 * 60  # from steady state
    assert demo.fleet_reference == "baseline" and demo.warmup_s == configured.warmup_s
    assert demo.min_effect == max(demo_governance.DEMO_MIN_EFFECT, configured.min_effect)
    assert demo.serial_dependence and demo.min_n_eff >= 20  # honest p-values on a live line (no threshold needed)
    assert "plc 15 s + 300 + 200 at 1/s: first decision ~515 s" in note
    assert "audio 15 s + 120 + 60 at 1/s: first decision ~195 s" in note and "later than this 150 s run" in note
    assert "thermal fleet windows only, 300 s warm-up" in note
    long_run, note = demo_governance.demo_drift_settings(configured, 3_600)
    assert "later than" not in note and long_run.window == configured.window
    own = DriftSettings.model_validate({"modality_windows": {"audio": {"window": 90}}})
    assert demo_governance.demo_drift_settings(own, 360)[0].windows("audio")[0] == 90  # configured wins


def test_the_default_demo_injects_the_microphone_drift_after_the_audio_baselines() -> None:
    from linewatch.cli.demo_cmd import DEFAULT_SECONDS
    from linewatch.governance_settings import DriftSettings

    settings, _ = demo_governance.demo_drift_settings(DriftSettings(), DEFAULT_SECONDS)
    window, baseline, _, warmup = settings.windows("audio")
    onset, ramp = demo_governance.DEMO_DRIFT.onset_ramp(DEFAULT_SECONDS)
    assert demo_governance.DEMO_DRIFT.kind == "mic_degradation"
    assert onset >= warmup + baseline  # after the asset's audio baseline (clips at 1/s), not inside it
    assert onset + 3 * window <= DEFAULT_SECONDS  # three windows after onset fit into the default run
    sim = demo_governance.demo_simulator_config(Settings().simulator)
    assert sim.drift_fraction == 0.0 and sim.fault_fraction == 0.0  # only what the demo injects


def test_fault_is_started_early_on_an_asset_without_its_own_fault(tmp_path: Path, redis_client: redis.Redis,
                                                                  stream_names: StreamNames) -> None:
    factory = Factory(SimulatorConfig(), n_assets=6)
    factory._setup(factory.config.realtime_episode_s)
    assert factory.scenario is not None
    # the scenario's own faults of this fleet become visible only after a 150 s demo has ended
    own = [e.label_onset_s for eps in factory.scenario.episodes.values() for e in eps]
    assert min(own) > 150
    gov = DemoGovernance(redis_client, stream_names, Settings(data_dir=tmp_path), tmp_path)
    desc = gov.inject_fault(factory, "bearing_wear", onset_s=5.0, ramp_s=45.0)
    target = next(a.asset_id for a in factory.fleet if a.asset_id in desc)
    assert target != factory.fleet[-1].asset_id  # not the drift-injected asset
    assert all(e.onset_s > 100 for e in factory.scenario.episodes[target][:-1])
    assert factory.scenario.label_at(target, 4.0) == "normal"
    assert factory.scenario.label_at(target, 6.0) == "bearing_wear"
    h = factory.scenario.health(target, np.array([6.0, 30.0, 50.0, 140.0]))
    assert h.severity[0] < 0.1 and 0.1 < h.severity[1] < 1.0 and h.severity[2] == pytest.approx(1.0)
    assert h.severity[3] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="unknown fault"):
        gov.inject_fault(factory, "gremlins", 1.0, 1.0)
