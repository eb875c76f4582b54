"""Explanations with the shipped models on simulated faults: reproducible under a seed, a bearing
fault is pinned on bearing signals by LIME and the rules alike, stability at the chosen settings,
heatmaps that follow the model's input regions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from governance.explain.explainer import ExplainInput, ModelBank, VerdictExplainer
from governance.explain.signals import FAULT_SIGNALS, signal_group
from governance.rules import load_rules
from linewatch.contract import Verdict
from linewatch.explain_settings import ExplainSettings
from models.registry import default_registry
from tests.governance.sim import SimulatedCase, simulated_case

pytestmark = pytest.mark.skipif(not default_registry().modalities(), reason="no shipped models")
BEARING = FAULT_SIGNALS["bearing_wear"]


@pytest.fixture(scope="module")
def bank() -> ModelBank:
    return ModelBank()


@pytest.fixture(scope="module")
def bearing() -> SimulatedCase:
    return simulated_case("bearing_wear", 0.8, index=41)


def _explain(case: SimulatedCase, label: str, bank: ModelBank, out: Path | None = None,
             settings: ExplainSettings | None = None):  # type: ignore[no-untyped-def]
    settings = settings or ExplainSettings(write_png=out is not None)
    ex = VerdictExplainer(settings, load_rules(), out, case.profiles, bank)
    verdict = Verdict(asset_id=case.asset_id, event_time_ms=1, label=label, confidence=0.8, state="raised",
                      asset_type=case.asset_type)
    return ex.explain(verdict, "1764000000000-0", [ExplainInput(m, msg) for m, msg in case.messages.items()])


def test_explanations_are_reproducible_under_a_seed(bearing: SimulatedCase, bank: ModelBank) -> None:
    lime = bank.get("thermal").lime
    x = bearing.messages["thermal"].vector
    label = bank.get("thermal").classes.index("bearing_wear")
    a = lime.explain(x, label, 400, (0, 1, 2), 5)
    b = lime.explain(x, label, 400, (0, 1, 2), 5)
    c = lime.explain(x, label, 400, (3, 4, 5), 5)
    assert np.array_equal(a.weights, b.weights) and a.stability == b.stability
    assert not np.array_equal(a.per_seed[0], a.per_seed[1]), "different seeds draw different perturbations"
    assert not np.array_equal(a.weights, c.weights)


def test_a_bearing_fault_is_pinned_on_bearing_signals_by_lime_and_rules(bearing: SimulatedCase, bank: ModelBank,
                                                                       tmp_path: Path) -> None:
    e = _explain(bearing, "bearing_wear", bank, tmp_path)
    by = {m.modality: m for m in e.modalities}
    assert set(by) == {"plc", "thermal", "audio"}
    for modality in ("thermal", "audio"):  # the modalities that see bearing wear (docs/models.md)
        top = [f for f in by[modality].top_features if f.weight > 0][:3]
        groups = {signal_group(modality, f.name.split(".", 1)[1]) for f in top}
        assert groups & BEARING, (modality, [(f.name, f.weight) for f in by[modality].top_features])
    bearing_hits = [h for h in e.rule_hits if h.label == "bearing_wear"]
    assert bearing_hits, [h.rule_id for h in e.rule_hits]
    assert all(h.label == "bearing_wear" for h in e.rule_hits), [h.rule_id for h in e.rule_hits]
    assert e.agreement, e.agreement_detail
    assert "bearing" in e.agreement_detail
    # heatmaps: float32 maps of the model's frame / log-mel shapes, hottest where the DE bearing is
    frame = bearing.messages["thermal"].frame
    assert e.thermal_heatmap.shape == frame.shape and e.thermal_heatmap.dtype == np.float32
    assert e.audio_heatmap.shape == bearing.messages["audio"].logmel.shape
    x0, y0, x1, y1 = bearing.profiles[bearing.asset_id].regions["de_bearing"]
    assert e.thermal_heatmap[int(y0):int(y1), int(x0):int(x1)].mean() > 2 * abs(float(e.thermal_heatmap.mean()))
    for m in e.modalities:
        assert Path(m.heatmap_png).is_file() and Path(m.heatmap_png).read_bytes()[:4] == b"\x89PNG"


def test_a_healthy_machine_fires_no_rule_and_a_lug_fault_fires_the_terminal_rule(bank: ModelBank) -> None:
    healthy = simulated_case("normal", 0.0, index=43)
    rules = load_rules()
    features = {m: dict(zip(bank.get(m).names, msg.vector.tolist(), strict=True))
                for m, msg in healthy.messages.items()}
    assert rules.evaluate(features) == []
    lug = simulated_case("electrical_overheating", 0.8, index=42)
    e = _explain(lug, "electrical_overheating", bank)
    assert [h.label for h in e.rule_hits] == ["electrical_overheating"], [h.rule_id for h in e.rule_hits]
    assert e.agreement, e.agreement_detail


def test_stability_at_the_chosen_settings(bank: ModelBank) -> None:
    """Mean top-k Jaccard stability >= 0.8 at the default settings over simulated faults each model sees."""
    settings = ExplainSettings()
    cases = [("bearing_wear", 41), ("bearing_wear", 44), ("electrical_overheating", 42), ("cooling_failure", 45),
             ("imbalance", 46)]
    stability: dict[str, list[float]] = {}
    for fault, index in cases:
        case = simulated_case(fault, 0.8, index=index)
        for modality, msg in case.messages.items():
            model = bank.get(modality)
            r = model.lime.explain(msg.vector, model.classes.index(fault), settings.num_samples[modality],
                                   settings.seeds, settings.top_k)
            stability.setdefault(modality, []).append(r.stability)
    means = {m: float(np.mean(v)) for m, v in stability.items()}
    assert min(means.values()) >= 0.8, stability


# Where each fault shows in a frame: a worn DE bearing its housing, a loose lug the terminal box, a
# cooling failure the whole motor (body, and what the winding heats: terminal box, bearing housings).
MOTOR = ("motor_body", "terminal_box", "de_bearing", "nde_bearing")


@pytest.mark.parametrize(("fault", "index", "regions"), [
    ("bearing_wear", 41, ("de_bearing",)), ("electrical_overheating", 42, ("terminal_box",)),
    ("cooling_failure", 45, MOTOR)])
def test_the_thermal_heatmap_follows_the_model(fault: str, index: int, regions: tuple[str, ...],
                                               bank: ModelBank) -> None:
    """Faithfulness: the region the heatmap weighs most is where the fault shows, and so is the one
    whose removal from the raw frame (every pixel set to the region's 10th percentile, then the
    pipeline's thermal_vector again) lowers the model's probability of the fault the most, by at
    least a third of it. For a fault of one part that is one region; a cooling failure shows over
    the whole motor, and the model (thermal v5) reads it from relations between the parts, so the
    heatmap and the removal may pick different parts of the motor."""
    from governance.explain.heatmaps import thermal_weight_map
    from pipeline.features.thermal_regions import scaled_regions, thermal_vector

    case = simulated_case(fault, 0.8, index=index)
    assert case.frame_ck is not None
    model = bank.get("thermal")
    label = model.classes.index(fault)
    r = model.lime.explain(case.messages["thermal"].vector, label, 3000, (0, 1, 2), 5)
    boxes = scaled_regions(case.profiles[case.asset_id], case.frame_ck.shape)
    wmap = thermal_weight_map(case.frame_ck.shape, boxes, r.names, r.weights)
    p0 = float(model.lime.predict(thermal_vector(case.frame_ck, case.entry)[None])[0, label])
    weight, drop = {}, {}
    for name, (x0, y0, x1, y1) in boxes.items():
        frame = case.frame_ck.copy()
        frame[y0:y1, x0:x1] = np.percentile(frame[y0:y1, x0:x1], 10)
        drop[name] = float(p0 - model.lime.predict(thermal_vector(frame, case.entry)[None])[0, label])
        weight[name] = float(wmap[y0:y1, x0:x1].mean())
    assert max(weight, key=weight.__getitem__) in regions, weight
    top = max(drop, key=drop.__getitem__)
    assert top in regions, drop
    assert drop[top] >= p0 / 3, (p0, drop)


def test_an_old_features_entry_is_left_out_with_the_reason(bearing: SimulatedCase, bank: ModelBank) -> None:
    old = bearing.messages["thermal"].model_copy(update={"features_version": 1, "vector": np.zeros(0, np.float32)})
    ex = VerdictExplainer(ExplainSettings(write_png=False), load_rules(), None, bearing.profiles, bank)
    verdict = Verdict(asset_id=bearing.asset_id, event_time_ms=1, label="bearing_wear", confidence=0.8,
                      state="raised")
    e = ex.explain(verdict, "1-0", [ExplainInput("thermal", old), ExplainInput("audio", bearing.messages["audio"])])
    assert [m.modality for m in e.modalities] == ["audio"]
    assert "not explained: thermal:" in e.agreement_detail and "upgrade" in e.agreement_detail
    assert e.thermal_heatmap.size == 0


def test_an_explanation_says_which_modality_extrapolated(bearing: SimulatedCase, bank: ModelBank) -> None:
    """A verdict the fusion made while thermal's model extrapolated (Verdict.extrapolating): the explanation's
    detail says so; without it, it says nothing of the kind."""
    ex = VerdictExplainer(ExplainSettings(write_png=False), load_rules(), None, bearing.profiles, bank)
    far = ["global.frame_max_rise", "global.hot_area_frac", "global.hot_outside_regions_frac", "rel.de_minus_body"]
    verdict = Verdict(asset_id=bearing.asset_id, event_time_ms=1, label="bearing_wear", confidence=0.8,
                      state="raised", extrapolating={"thermal": far})
    inputs = [ExplainInput("thermal", bearing.messages["thermal"])]
    e = ex.explain(verdict, "1-0", inputs)
    assert ("thermal's model extrapolated for this machine (4 inputs far outside its training range: "
            "global.frame_max_rise, global.hot_area_frac, global.hot_outside_regions_frac, …)") in e.agreement_detail
    plain = ex.explain(verdict.model_copy(update={"extrapolating": {}}), "1-0", inputs)
    assert "extrapolated" not in plain.agreement_detail


def test_a_healthy_motor_at_high_load_is_not_a_cooling_failure(bank: ModelBank) -> None:
    """PMP-04 runs near rated current: its body is as hot as a poorly cooled motor at part load. The
    cooling rules divide the rise by the copper-loss share (governance.rules.derived) and stay quiet;
    the same machine with a failed fan fires them."""
    rules = load_rules()

    def hits(case: SimulatedCase) -> list[str]:
        feats = {m: dict(zip(bank.get(m).names, msg.vector.tolist(), strict=True)) for m, msg in case.messages.items()}
        return [h.rule_id for h in rules.evaluate(feats)]

    healthy = simulated_case("normal", 0.0, index=1003, asset=3)
    assert healthy.messages["thermal"].vector[1] > 16.0, "the healthy body rise exceeds a fixed cooling threshold"
    assert hits(healthy) == []
    failed = simulated_case("cooling_failure", 0.6, index=1003, asset=3)
    assert {"cooling-loss-thermal", "cooling-loss-winding"} <= set(hits(failed))


def test_no_agreement_when_the_rules_point_at_another_fault(bearing: SimulatedCase, bank: ModelBank) -> None:
    """Explaining the bearing machine as if fusion had said 'electrical_overheating': LIME explains
    that class, the rules still name bearing wear, so the flag is down and the detail says why."""
    e = _explain(bearing, "electrical_overheating", bank)
    assert not e.agreement
    assert "rules point at bearing_wear, the verdict is electrical_overheating" in e.agreement_detail
    assert all(m.explained_label == "electrical_overheating" for m in e.modalities)
