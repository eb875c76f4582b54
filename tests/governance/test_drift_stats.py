"""Drift statistics: KS equals scipy, corrections equal a hand computation, the false-alarm rate,
detection delay and cause per drift kind, river detectors' decisions."""

from __future__ import annotations

import numpy as np
import pytest
from river import drift as river_drift
from scipy import stats

from governance.drift.cause import CauseRules
from governance.drift.correction import adjust, reject
from governance.drift.error_detectors import ErrorStreamMonitor, make_detector
from governance.drift.ks import PresortedKS
from governance.drift.monitor import DriftParams, FeatureDriftMonitor, ReferenceTests
from governance.drift.scenarios import (
    AssetStream,
    ambient_shift,
    machine_change,
    plc_reference,
    plc_temp_offset,
)


@pytest.mark.parametrize("n_ref,n_live,kind", [(256, 500, "normal"), (300, 200, "shifted"), (256, 500, "ties"),
                                               (50, 7, "normal"), (256, 256, "same")])
def test_ks_statistic_and_p_value_equal_scipy(n_ref: int, n_live: int, kind: str) -> None:
    rng = np.random.default_rng(n_ref + n_live)
    ref = rng.normal(size=n_ref)
    live = {"normal": rng.normal(size=n_live), "shifted": rng.normal(0.3, 1.2, size=n_live),
            "ties": rng.integers(0, 4, size=n_live).astype(float), "same": ref.copy()}[kind]
    if kind == "ties":
        ref = rng.integers(0, 5, size=n_ref).astype(float)
    ours = PresortedKS(ref).test(live)
    asymp = stats.ks_2samp(ref, live, method="asymp")
    assert ours.statistic == asymp.statistic
    assert ours.p_value == asymp.pvalue
    exact = PresortedKS(ref, method="exact").test(live)
    assert exact.p_value == stats.ks_2samp(ref, live, method="exact").pvalue


def test_ks_on_real_feature_vectors_equals_scipy() -> None:
    names, ref = plc_reference()
    stream = AssetStream(names, ref, row=3, noise=0.25, seed=1)
    live = plc_temp_offset(stream, stream.draw(200))
    for j in range(len(names)):
        if np.ptp(ref[:, j]) == 0 and np.ptp(live[:, j]) == 0:
            continue
        ours, theirs = PresortedKS(ref[:, j]).test(live[:, j]), stats.ks_2samp(ref[:, j], live[:, j], method="asymp")
        assert (ours.statistic, ours.p_value) == (theirs.statistic, theirs.pvalue), names[j]


def test_corrections_equal_a_hand_computation() -> None:
    p = [0.01, 0.04, 0.03, 0.005, 0.2]
    # Bonferroni: min(1, 5 p)
    assert adjust(p, "bonferroni") == pytest.approx([0.05, 0.2, 0.15, 0.025, 1.0])
    # BH by hand: sorted 0.005 0.01 0.03 0.04 0.2 -> p*m/rank = 0.025 0.025 0.05 0.05 0.2, then the
    # running minimum from the largest rank down (already monotone), back in the input order
    assert adjust(p, "bh") == pytest.approx([0.025, 0.05, 0.05, 0.025, 0.2])
    assert reject(p, "bonferroni", 0.03) == [False, False, False, True, False]
    assert reject(p, "bh", 0.03) == [True, False, False, True, False]
    assert reject(p, "bh", 0.05) == [True, True, True, True, False]
    with pytest.raises(ValueError, match="bonferroni"):
        adjust(p, "holm")  # type: ignore[arg-type]


@pytest.mark.parametrize("correction", ["bonferroni", "bh"])
def test_false_alarm_rate_per_window_at_most_the_configured_level(correction: str) -> None:
    """1,000 windows x 45 features with no drift (continuous data, reference 256 as the cards,
    window 200): the share of windows with any drifted feature stays <= alpha, so the share of
    feature-windows does too."""
    alpha, n_windows, n_features = 0.01, 1000, 45
    rng = np.random.default_rng(7)
    ref = rng.normal(size=(256, n_features))
    tests = ReferenceTests([f"f{j}" for j in range(n_features)], ref)
    window_alarms = feature_alarms = 0
    for _ in range(n_windows):
        out = tests.evaluate(rng.normal(size=(200, n_features)), alpha, correction)  # type: ignore[arg-type]
        flagged = sum(f.drifted for f in out)
        window_alarms += flagged > 0
        feature_alarms += flagged
    assert window_alarms / n_windows <= alpha, window_alarms
    assert feature_alarms / (n_windows * n_features) <= alpha


def _run(monitor: FeatureDriftMonitor, streams: dict[str, AssetStream], windows: int, onset: int,
         perturb: dict[str, object], t0: int = 0) -> list:
    """Feed every asset ``windows`` windows (after its warm-up and baseline); ``perturb[asset]`` from window
    ``onset``."""
    decisions = []
    p = monitor.params
    t = t0
    for a, s in streams.items():
        for v in s.draw(p.baseline_size + p.warmup_ms // 1000):
            decisions += monitor.add(a, v, t)
            t += 1000
    for w in range(windows):
        for a, s in streams.items():
            x = s.draw(p.window)
            if w >= onset and a in perturb:
                x = perturb[a](s, x)  # type: ignore[operator]
            for v in x:
                decisions += monitor.add(a, v, t)
                t += 1000
    return [d for d in decisions if d.scope == "asset"]


def _fleet(seed: int, n: int = 5) -> tuple[list[str], np.ndarray, dict[str, AssetStream]]:
    names, ref = plc_reference()
    return names, ref, {f"PMP-{i:02d}": AssetStream(names, ref, row=11 * i + 2, noise=0.25, seed=seed + i)
                        for i in range(n)}


ONSET, WINDOWS, MAX_DELAY = 4, 10, 2  # stated: raised within 2 windows of the onset (raise_after=2)


LIVE = {"warmup_ms": 15_000, "min_effect": 0.2}  # docs/drift.md "Live lines": +4 K is 0.25 card sd


@pytest.mark.parametrize("live", [False, True], ids=["plain", "live-settings"])
@pytest.mark.parametrize("kind", ["sensor", "machine", "fleet"])
def test_injected_drift_detected_in_stated_windows_with_the_right_cause(kind: str, live: bool) -> None:
    names, ref, streams = _fleet(seed={"sensor": 10, "machine": 20, "fleet": 30}[kind])
    target = "PMP-02"
    perturb = {"sensor": {target: plc_temp_offset}, "machine": {target: machine_change},
               "fleet": {a: ambient_shift for a in streams}}[kind]
    extra: dict = LIVE if live else {}
    monitor = FeatureDriftMonitor(names, ref, DriftParams(window=200, baseline_size=300, raise_after=2, **extra))
    decisions = _run(monitor, streams, WINDOWS, ONSET, perturb)
    by_asset: dict[str, list] = {}
    for d in decisions:
        by_asset.setdefault(d.asset_id, []).append(d)
    moved = list(perturb)
    for a, ds in by_asset.items():
        assert len(ds) == WINDOWS
        before = [d for d in ds[:ONSET] if d.drifted]
        assert not before, f"{a}: false alarm before the onset: {[d.drifted_names for d in before]}"
        if a not in moved:
            assert not any(d.event == "raised" for d in ds), f"{a} never drifted but was raised"
            continue
        raised_at = next(i for i, d in enumerate(ds) if d.event == "raised")
        assert raised_at - ONSET + 1 <= MAX_DELAY, f"{a}: raised {raised_at - ONSET + 1} windows after the onset"
        assert ds[raised_at].cause is not None and ds[raised_at].cause.cause == kind, ds[raised_at].cause
    if kind == "sensor":
        d = next(d for d in by_asset[target] if d.event == "raised")
        assert set(d.drifted_names) <= {"temp.bearing_c_over_100", "temp.winding_c_over_100"}
        assert d.features[0].effect_size > 0.5  # 4 K against ~4 K of noise (0.25 x fleet std)


def test_hysteresis_clears_after_the_drift_ends() -> None:
    names, ref, streams = _fleet(seed=40, n=3)
    monitor = FeatureDriftMonitor(names, ref, DriftParams(window=200, baseline_size=300, raise_after=2,
                                                          clear_after=2))
    ends_at = 7

    def until(s: AssetStream, x: np.ndarray) -> np.ndarray:
        until.calls += 1  # type: ignore[attr-defined]
        return plc_temp_offset(s, x) if until.calls <= ends_at - 2 else x  # type: ignore[attr-defined]

    until.calls = 0  # type: ignore[attr-defined]
    ds = [d for d in _run(monitor, streams, 12, 2, {"PMP-01": until}) if d.asset_id == "PMP-01"]
    events = [d.event for d in ds]
    assert events.index("raised") < events.index("cleared")
    assert not ds[-1].raised


def test_cause_rules_need_enough_assets_for_fleet() -> None:
    rules = CauseRules(fleet_fraction=0.6, min_fleet_assets=3)
    assert rules.cause("A", {"A": {"temp.x"}, "B": {"temp.x"}}).cause == "sensor"  # two assets are no fleet
    assert rules.cause("A", {"A": {"temp.x"}, "B": {"temp.x"}, "C": set(), "D": set()}).cause == "sensor"
    assert rules.cause("A", {"A": {"temp.x"}, "B": {"temp.x"}, "C": {"vib.y"}, "D": set()}).cause == "fleet"


def _error_stream(seed: int) -> list[int]:
    rng = np.random.default_rng(seed)
    return [int(v) for v in np.concatenate([rng.random(1500) < 0.05, rng.random(600) < 0.35,
                                            rng.random(900) < 0.08])]


@pytest.mark.parametrize("name,cls", [("EDDM", river_drift.binary.EDDM), ("ADWIN", river_drift.ADWIN),
                                      ("PageHinkley", river_drift.PageHinkley)])
def test_error_detector_decisions_equal_rivers(name: str, cls: type) -> None:
    stream = _error_stream(3)
    ours = ErrorStreamMonitor((name,))
    theirs = cls()
    mine = [i for i, e in enumerate(stream) if ours.update(e)]
    ref = []
    for i, e in enumerate(stream):
        theirs.update(e)
        if theirs.drift_detected:
            ref.append(i)
    assert mine == ref
    assert any(1500 <= i < 2100 for i in mine), f"{name} missed the error-rate jump: {mine}"
    assert type(make_detector(name)) is cls


def test_camera_ageing_is_a_sensor_and_a_change_seen_by_two_modalities_is_the_machine() -> None:
    """The thermal camera is one device: camera ageing on one asset -> sensor. A load change that the
    PLC and the camera of the same asset both see -> machine (the monitors share a DriftBoard)."""
    from governance.drift.monitor import DriftBoard
    from governance.drift.scenarios import camera_ageing, reference, thermal_machine_change

    def run(perturb_thermal: object, perturb_plc: object) -> list:
        board = DriftBoard()
        mons, streams = {}, {}
        for m, single in (("plc", None), ("thermal", "thermal camera")):
            names, ref = reference(m)
            mons[m] = FeatureDriftMonitor(names, ref, DriftParams(window=200, baseline_size=300, raise_after=2,
                                                                  single_device=single), m, board)
            streams[m] = {f"PMP-{i:02d}": AssetStream(names, ref, row=13 * i + 1, noise=0.25, seed=50 + i)
                          for i in range(4)}
        out = []
        t = 0
        for w in range(-1, 6):
            for a in streams["plc"]:
                for m, perturb in (("plc", perturb_plc), ("thermal", perturb_thermal)):
                    s = streams[m][a]
                    x = s.draw(300 if w < 0 else 200)
                    if w >= 2 and a == "PMP-01" and perturb is not None:
                        x = perturb(s, x)  # type: ignore[operator]
                    for v in x:
                        out += [(m, d) for d in mons[m].add(a, v, t) if d.scope == "asset"]
                        t += 1000
        return out

    sensor = run(lambda s, x: camera_ageing(s, x, 2.0), None)
    raised = [(m, d) for m, d in sensor if d.event == "raised"]
    assert [(m, d.asset_id) for m, d in raised] == [("thermal", "PMP-01")]
    assert raised[0][1].cause.cause == "sensor" and "thermal camera" in raised[0][1].cause.detail
    assert "global.ambient_c_over_40" in raised[0][1].drifted_names
    machine = run(thermal_machine_change, machine_change)
    raised = [(m, d) for m, d in machine if d.event == "raised"]
    assert {(m, d.asset_id) for m, d in raised} == {("plc", "PMP-01"), ("thermal", "PMP-01")}
    assert all(d.cause.cause == "machine" for _, d in raised), [d.cause for _, d in raised]


def test_fleet_window_against_the_lines_own_baseline() -> None:
    """fleet_reference="baseline": the first pooled window is the reference; a hall warming up (every
    asset) drifts the fleet window, and nothing before it does."""
    names, ref, streams = _fleet(seed=60, n=5)
    monitor = FeatureDriftMonitor(names, ref, DriftParams(window=200, baseline_size=300, fleet_window=1000,
                                                          fleet_reference="baseline"))
    t = 0
    fleet = []
    for w in range(8):
        for a, s in streams.items():
            x = s.draw(200)
            if w >= 5:
                x = ambient_shift(s, x)
            for v in x:
                fleet += [(w, d) for d in monitor.add(a, v, t) if d.scope == "fleet"]
                t += 1000
    assert [w for w, _ in fleet] == [1, 2, 3, 4, 5, 6, 7]  # window 0 formed the baseline
    assert not any(d.drifted for w, d in fleet if w < 5)
    assert all(d.drifted and d.cause is not None and d.cause.cause == "fleet" for w, d in fleet if w >= 5)
    assert {"temp.bearing_c_over_100", "temp.winding_c_over_100"} <= set(fleet[-1][1].drifted_names)
