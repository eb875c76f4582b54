"""Drift on a live line (docs/drift.md "Live lines"): what a freshly started line produces that is not
drift — partial PLC windows and the missing thermal running baseline during warm-up, the card's mix of
rows with and without a baseline — is not reported; injected drift still is (tests/governance/
test_drift_stats.py runs the stated detection with the live settings too)."""

from __future__ import annotations

import numpy as np

from governance.drift.monitor import DriftParams, FeatureDriftMonitor, ReferenceTests
from governance.drift.service import GATES
from linewatch.contract.plc_tags import PLC_TAGS
from linewatch.governance_settings import DriftSettings
from governance.drift.scenarios import reference
from linewatch.simulator import Factory
from linewatch.simulator.assets import asset_registry_json
from linewatch.simulator.config import SimulatorConfig
from linewatch.simulator.tags import QUALITIES
from pipeline.features.messages import plc_features_message
from pipeline.features.plc_window import WINDOW_MS, PlcWindowBuffer


def thermal_reference() -> tuple[list[str], np.ndarray]:
    return reference("thermal")  # the shipped thermal model's reference sample


def fresh_line_plc(seconds: int, n_assets: int = 3) -> list[tuple[str, int, np.ndarray, int]]:
    """(asset, window end ms, model-input vector, samples in the window) of a freshly started simulated
    line, through the pipeline's own PLC window and feature code (what the Flink job writes)."""
    config = SimulatorConfig(fault_fraction=0.0, drift_fraction=0.0)
    factory = Factory(config, n_assets=n_assets)
    _, streams = factory._setup(config.realtime_episode_s)
    info = {a["asset_id"]: a for a in asset_registry_json(factory.fleet, config)["assets"]}
    buffers = {a.asset_id: PlcWindowBuffer(a.asset_id) for a in factory.fleet}
    out = []
    for k in range(seconds):
        t_end = float(k + 1)
        for s in streams:
            aid = s.asset.asset_id
            o = s.advance(t_end)
            if o.plc is not None:
                for i, t in enumerate(o.plc.t):
                    for j, tag in enumerate(PLC_TAGS):
                        bad = QUALITIES[int(o.plc.quality[i, j])] == "Bad"
                        buffers[aid].add(tag, int(round(t * 1000)), float(o.plc.values[i, j]), bad)
            for e in o.alarms:
                buffers[aid].add_alarm(int(round(e.t * 1000)), e.code, e.state)
            for w in buffers[aid].advance(int(t_end * 1000) - 1):
                msg = plc_features_message(w, s.asset.asset_type, asset=info[aid])
                out.append((aid, w.end_ms, np.asarray(msg.vector, np.float64), w.n_samples))
    return out


def test_warm_up_keeps_partial_plc_windows_out_of_the_assets_baselines() -> None:
    rows = fresh_line_plc(40)
    names, features = reference("plc")
    full = max(n for *_, n in rows)
    first = {a: min(t for b, t, _, _ in rows if b == a) for a, *_ in rows}
    partial = [(a, t) for a, t, _, n in rows if n < 0.95 * full]
    # the first windows of every asset hold 1..9 s of samples (10 s windows sliding by 1 s)
    assert {a for a, _ in partial} == set(first)
    assert all(t - first[a] < WINDOW_MS for a, t in partial)
    warmup_ms = int(DriftSettings().warmup_s * 1000)
    assert warmup_ms >= WINDOW_MS
    monitor = FeatureDriftMonitor(names, features,
                                  DriftParams(baseline_size=1000, warmup_ms=warmup_ms))
    for a, t, v, _ in rows:
        monitor.add(a, v, t)
    for a, st in monitor.assets.items():
        kept = [n for b, t, _, n in rows if b == a and t - first[a] >= warmup_ms]
        assert len(st.baseline) == len(kept) > 0
        assert min(kept) >= 0.95 * full  # only full windows in the asset's baseline
    old = FeatureDriftMonitor(names, features,
                              DriftParams(baseline_size=1000))
    for a, t, v, _ in rows:
        old.add(a, v, t)
    assert all(len(st.baseline) == sum(1 for b, *_ in rows if b == a) for a, st in old.assets.items())


def test_a_line_with_a_thermal_baseline_is_not_drift_against_the_cards_mixed_sample() -> None:
    """The card's thermal sample mixes rows without a running baseline (baseline.* = 0) and with one; a
    warmed-up line always has one. Rows of the card's own training distribution that have a baseline are
    no drift; a real change of a gated feature still is."""
    names, ref = thermal_reference()
    flag = names.index("baseline.baseline_available")
    with_baseline = ref[ref[:, flag] == 1]
    assert 0.2 < len(with_baseline) / len(ref) < 0.8
    rng = np.random.default_rng(3)
    live = with_baseline[rng.integers(0, len(with_baseline), 500)]
    ungated = ReferenceTests(names, ref).evaluate(live, 0.01, "bonferroni")
    assert "baseline.baseline_available" in {f.name for f in ungated if f.drifted}  # the old false alarm
    monitor = FeatureDriftMonitor(names, ref, DriftParams(fleet_window=500, gates=GATES["thermal"]), "thermal")
    decisions = [d for i, v in enumerate(live) for d in monitor.add(f"A{i % 6}", v, i * 500)]
    fleet = [d for d in decisions if d.scope == "fleet"]
    assert len(fleet) == 1 and not fleet[0].drifted, fleet[0].drifted_names
    assert "baseline.baseline_available" not in {f.name for f in fleet[0].features}  # the flag is not tested
    hotter = live.copy()
    hotter[:, names.index("baseline.delta_de_max")] += 5.0  # the DE bearing 5 K above its running baseline
    decisions = [d for i, v in enumerate(hotter) for d in monitor.add(f"A{i % 6}", v, 10**7 + i * 500)]
    assert [d.drifted_names for d in decisions if d.scope == "fleet"] == [["baseline.delta_de_max"]]


def test_practical_effect_threshold_in_card_standard_deviations() -> None:
    """Large windows make tiny shifts significant: 0.1 card standard deviations is "drift" to the KS test
    alone, not at min_effect 0.25; a shift of 0.5 is drift either way."""
    rng = np.random.default_rng(5)
    names = ["small", "large", "none"]
    tests = ReferenceTests(names, rng.normal(size=(5000, 3)), scale=np.ones(3))
    live = rng.normal(size=(5000, 3)) + np.array([0.1, 0.5, 0.0])
    plain = {f.name for f in tests.evaluate(live, 0.01, "bonferroni") if f.drifted}
    strict = {f.name for f in tests.evaluate(live, 0.01, "bonferroni", min_effect=0.25) if f.drifted}
    assert plain == {"small", "large"}
    assert strict == {"large"}


def test_a_modality_without_asset_windows_is_tested_on_fleet_windows_only() -> None:
    """``asset_windows=False`` (the demo's thermal): no asset baseline or window, the fleet windows as before."""
    rng = np.random.default_rng(2)
    names = ["a", "b"]
    ref = rng.normal(size=(300, 2))
    monitor = FeatureDriftMonitor(names, ref, DriftParams(window=50, baseline_size=50, fleet_window=100,
                                                          asset_windows=False))
    decisions = [d for i in range(1000) for d in monitor.add(f"A{i % 4}", rng.normal(size=2), i * 1000)]
    assert decisions and {d.scope for d in decisions} == {"fleet"}
    assert all(not st.baseline and st.tests is None for st in monitor.assets.values())
