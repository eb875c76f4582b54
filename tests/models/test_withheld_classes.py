"""A class an input cannot show is withheld: the modality is neutral on it in the fusion (shipped
``fusion.json``), in the per-sample and the vectorised rule alike."""

from __future__ import annotations

import numpy as np
import pytest

from models.fusion import FusionWeights, fuse
from models.fusion.fit import fuse_arrays
from models.registry.store import DEFAULT_ROOT
from models.withheld_classes import drop_withheld_rows, withheld_rows
from pipeline.features.audio_physics import AUDIO_VECTOR_NAMES

FUSION = DEFAULT_ROOT / "fusion.json"
pytestmark = pytest.mark.skipif(not FUSION.exists(), reason="no shipped fusion.json")
CLASSES = ("normal", "bearing_wear", "electrical_overheating", "cooling_failure", "imbalance", "cavitation")


def _audio(p_imbalance: float) -> dict[str, float]:
    rest = 1.0 - p_imbalance
    return {"normal": 0.8 * rest, "bearing_wear": 0.1 * rest, "electrical_overheating": 0.0, "cooling_failure": 0.0,
            "imbalance": p_imbalance, "cavitation": 0.1 * rest}


def _others() -> dict[str, dict[str, float]]:
    plc = {"normal": 0.4, "bearing_wear": 0.05, "electrical_overheating": 0.05, "cooling_failure": 0.05,
           "imbalance": 0.4, "cavitation": 0.05}
    thermal = {"normal": 0.7, "bearing_wear": 0.1, "electrical_overheating": 0.1, "cooling_failure": 0.1,
               "imbalance": 0.0, "cavitation": 0.0}
    return {"plc": plc, "thermal": thermal}


def _imbalance_over_normal(p_imbalance: float, withheld: list[str]) -> float:
    weights = FusionWeights.load(FUSION)
    fused = fuse({**_others(), "audio": _audio(p_imbalance)}, classes=CLASSES, weights=weights, asset_type="pump",
                 withheld={"audio": withheld})
    return fused.probabilities["imbalance"] / fused.probabilities["normal"]


def test_a_withheld_class_gets_neither_support_nor_veto_from_that_modality() -> None:
    withheld = [_imbalance_over_normal(p, ["imbalance"]) for p in (0.0, 0.05, 0.5, 0.95)]
    assert max(withheld) == pytest.approx(min(withheld), rel=1e-9)
    shown = [_imbalance_over_normal(p, []) for p in (0.0, 0.05, 0.5, 0.95)]
    assert shown[-1] > 100 * shown[0]  # without withholding, audio's imbalance moves the verdict


def test_the_vectorised_rule_equals_the_per_sample_rule() -> None:
    weights = FusionWeights.load(FUSION)
    rng = np.random.default_rng(3)
    n = 40
    per = {m: rng.dirichlet(np.ones(len(CLASSES)), n) for m in ("plc", "thermal", "audio")}
    blind = np.zeros((n, len(CLASSES)), bool)
    blind[::2, CLASSES.index("imbalance")] = True
    possible = np.ones((n, len(CLASSES)), bool)
    possible[1::3, CLASSES.index("cavitation")] = False
    fused = fuse_arrays(per, weights, CLASSES, possible, {"audio": blind})
    for i in range(n):
        one = fuse({m: dict(zip(CLASSES, per[m][i].tolist(), strict=True)) for m in per}, classes=CLASSES,
                   weights=weights, asset_type="pump" if possible[i, -1] else "fan",
                   withheld={"audio": [c for c, b in zip(CLASSES, blind[i], strict=True) if b]})
        assert np.allclose(fused[i], [one.probabilities[c] for c in CLASSES], atol=1e-9), i


def test_audio_without_a_learned_baseline_withholds_imbalance() -> None:
    x = np.zeros((2, len(AUDIO_VECTOR_NAMES)), np.float32)
    x[1, AUDIO_VECTOR_NAMES.index("baseline.available")] = 1.0
    blind = withheld_rows("audio", x, CLASSES)
    assert blind[0].tolist() == [c == "imbalance" for c in CLASSES] and not blind[1].any()
    p = np.full((2, len(CLASSES)), 1.0 / len(CLASSES))
    moved = drop_withheld_rows(p, blind)
    assert moved[0, CLASSES.index("imbalance")] == 0.0 and moved[0, 0] == pytest.approx(1.0 / (len(CLASSES) - 1))
    assert np.allclose(moved.sum(axis=1), 1.0) and np.allclose(moved[1], p[1])
    assert not withheld_rows("plc", np.zeros((1, 5), np.float32), CLASSES).any()


def test_the_fusion_is_fitted_on_what_is_served_when_a_class_is_withheld() -> None:
    """``fit_fusion`` sees a withheld class as the services do: what the model said about it does
    not move the fit, and the fitted normal prior holds the healthy FPR budget as served."""
    from models.fusion.fit import fit_fusion

    rng = np.random.default_rng(7)
    classes = ("normal", "a", "b")
    n = 600
    y = rng.integers(0, 3, n)
    sharp = 0.6 * np.eye(3)[y] + 0.4 * rng.dirichlet(np.ones(3), n)
    other = 0.3 * np.eye(3)[y] + 0.7 * rng.dirichlet(np.ones(3), n)
    blind = np.zeros((n, 3), bool)
    blind[::2, 2] = True  # every other input of "x" cannot show class b

    def fitted(noise: float) -> FusionWeights:
        x = sharp.copy()
        x[blind] = noise  # what the model says about a class its input cannot show
        x /= x.sum(axis=1, keepdims=True)
        return fit_fusion({"x": x, "y": other}, y, classes, max_fpr=0.05, withheld={"x": blind})

    quiet, loud = fitted(0.0), fitted(5.0)
    assert quiet.to_json() == loud.to_json()
    x = sharp / sharp.sum(axis=1, keepdims=True)
    served = [fuse_arrays(p, quiet, classes, None, {"x": blind} if "x" in p else None).argmax(1)[y == 0]
              for p in ({"x": x}, {"y": other}, {"x": x, "y": other})]
    assert float(np.mean([np.mean(s != 0) for s in served])) <= 0.05


def test_a_reciprocating_machine_s_plc_windows_withhold_imbalance_until_its_level_is_known() -> None:
    """The PLC features message of a machine that assets.json calls reciprocating carries the flag while
    its normal vibration is unknown; a declared or learnt level lifts it; other machines never carry it."""
    from models.withheld_classes import withheld_classes
    from pipeline.features.asset_profile import RECIPROCATING_LEVEL_UNKNOWN_STAT, AssetProfile
    from pipeline.features.messages import plc_features_message
    from pipeline.features.plc_window import PlcWindow, plc_feature_names

    values = np.zeros(len(plc_feature_names()), np.float32)
    values[plc_feature_names().index("run_state.mean")] = 1.0
    values[plc_feature_names().index("vibration_rms_mm_s.mean")] = 6.0
    window = PlcWindow(asset_id="AC-1", start_ms=0, end_ms=10_000, values=values, n_samples=100, alarm_counts={})
    piston = AssetProfile(asset_id="AC-1", asset_type="piston compressor", reciprocating=True)
    cases = {"reciprocating, level unknown": piston,
             "reciprocating, level declared": AssetProfile(asset_id="AC-1", reciprocating=True, vibration_normal_mm_s=6.0),
             "reciprocating, level learnt": piston.with_normal_vibration(6.1),
             "screw compressor": AssetProfile(asset_id="AC-1", asset_type="screw compressor")}
    withheld = {}
    for name, profile in cases.items():
        msg = plc_features_message(window, profile.asset_type, asset=profile)
        withheld[name] = withheld_classes("plc", msg.vector, msg.stats)
        assert (msg.stats.get(RECIPROCATING_LEVEL_UNKNOWN_STAT) == 1.0) == (name == "reciprocating, level unknown")
    assert withheld == {"reciprocating, level unknown": ("imbalance",), "reciprocating, level declared": (),
                        "reciprocating, level learnt": (), "screw compressor": ()}
    from pipeline.validation.registry import AssetInfo

    info = AssetInfo.from_entry({"asset_id": "AC-1", "asset_type": "piston compressor"})  # what the job passes
    assert plc_features_message(window, info.asset_type, asset=info).stats[RECIPROCATING_LEVEL_UNKNOWN_STAT] == 1.0


def test_on_proposed_boxes_only_a_hot_connection_past_the_threshold_is_named() -> None:
    """Proposed boxes withhold all three thermal faults; electrical overheating comes back from the
    threshold on (``ratio.terminal_excess_over_body``), never without the proposed flag's context
    (given boxes withhold nothing) and never from an input of another width."""
    from models.withheld_classes import PROPOSED_TERMINAL_EXCESS, withheld_classes
    from pipeline.features.thermal_regions import THERMAL_VECTOR_NAMES

    x = np.zeros(len(THERMAL_VECTOR_NAMES), np.float32)
    i = THERMAL_VECTOR_NAMES.index("ratio.terminal_excess_over_body")
    proposed = {"regions_proposed": 1.0}
    every = ("bearing_wear", "electrical_overheating", "cooling_failure")
    x[i] = np.nextafter(np.float32(PROPOSED_TERMINAL_EXCESS), np.float32(0.0))
    assert withheld_classes("thermal", x, proposed) == every
    x[i] = PROPOSED_TERMINAL_EXCESS
    assert withheld_classes("thermal", x, proposed) == ("bearing_wear", "cooling_failure")
    assert withheld_classes("thermal", x, {"regions_proposed": 0.0}) == ()
    assert withheld_classes("thermal", np.full(5, 9.0, np.float32), proposed) == every


def test_on_proposed_boxes_with_known_ends_a_body_clearly_warmer_at_its_fan_end_is_a_cooling_failure() -> None:
    """Cooling failure comes back on proposed boxes where the drive end was declared or read from the
    machine's shape and the body is warmer at its fan end by more than a tenth of its rise (+2 K); the
    same reversal through boxes whose drive end was taken to be the warmer end, or a smaller one, names
    nothing; the frame then rules ``normal`` out (models.ruled_out), as one read through registered
    boxes does; on fitted boxes a body less than 15 K above ambient rules nothing."""
    from models.ruled_out import FITTED_FAN_END_WARMER_RATIO, FITTED_MIN_BODY_RISE_K, ruled_out
    from models.withheld_classes import withheld_classes
    from pipeline.features.body_axial import MID_AXIAL_STAT
    from pipeline.features.thermal_fit import PROPOSED_ENDS_KNOWN_STAT
    from pipeline.features.thermal_regions import THERMAL_VECTOR_NAMES

    x = np.zeros(len(THERMAL_VECTOR_NAMES), np.float32)
    x[THERMAL_VECTOR_NAMES.index("motor_body.mean_rise")] = 38.0  # rise + 2 K = 40 K
    every = ("bearing_wear", "electrical_overheating", "cooling_failure")
    known = {"regions_proposed": 1.0, PROPOSED_ENDS_KNOWN_STAT: 1.0}
    clear = 40.0 * FITTED_FAN_END_WARMER_RATIO - 0.01
    assert withheld_classes("thermal", x, {**known, MID_AXIAL_STAT: clear}) == ("bearing_wear", "electrical_overheating")
    assert ruled_out("thermal", x, {**known, MID_AXIAL_STAT: clear}) == ("normal",)
    slight = 40.0 * FITTED_FAN_END_WARMER_RATIO + 0.01  # warmer at the fan end, but within the margin
    assert withheld_classes("thermal", x, {**known, MID_AXIAL_STAT: slight}) == every
    assert ruled_out("thermal", x, {**known, MID_AXIAL_STAT: slight}) == ()
    by_warmth = {"regions_proposed": 1.0, PROPOSED_ENDS_KNOWN_STAT: 0.0, MID_AXIAL_STAT: -20.0}
    assert withheld_classes("thermal", x, by_warmth) == every and ruled_out("thermal", x, by_warmth) == ()
    assert withheld_classes("thermal", x, known) == every  # no reading of the body's ends
    steeper = {**known, MID_AXIAL_STAT: 40.0 * -2.0 - 0.01}  # its drive end would lie below ambient: not a body
    assert withheld_classes("thermal", x, steeper) == every and ruled_out("thermal", x, steeper) == ()
    registered = {"regions_registered": 1.0, MID_AXIAL_STAT: clear}  # boxes moved onto the machine: judged, not withheld
    assert withheld_classes("thermal", x, registered) == () and ruled_out("thermal", x, registered) == ("normal",)
    assert ruled_out("thermal", x, {**registered, MID_AXIAL_STAT: slight}) == ()
    cool = x.copy()
    cool[THERMAL_VECTOR_NAMES.index("motor_body.mean_rise")] = FITTED_MIN_BODY_RISE_K - 0.5
    turned = {MID_AXIAL_STAT: (FITTED_MIN_BODY_RISE_K + 1.5) * FITTED_FAN_END_WARMER_RATIO * 3}  # clearly turned round
    for flags in (known, {"regions_registered": 1.0}):  # a cool body in a fitted box: the box may lie off it
        assert ruled_out("thermal", cool, {**flags, **turned}) == ()
    assert ruled_out("thermal", cool, turned) == ("normal",)  # boxes as given: read as before


def test_a_1x_far_over_the_machine_s_healthy_level_rules_normal_out_only_against_a_baseline() -> None:
    """Audio rules ``normal`` out where the clip's 1x stands at least ``AUDIO_1X_RISE_DB`` over the
    machine's healthy level; not just below it, not on a drive, and not where the clip is read without a
    baseline (none learnt, or one learnt at other speeds: ``baseline.available`` 0), however large the
    delta."""
    from models.ruled_out import AUDIO_1X_RISE_DB, raised_one_x, ruled_out, ruled_out_note

    x = np.zeros(len(AUDIO_VECTOR_NAMES), np.float32)
    x[AUDIO_VECTOR_NAMES.index("baseline.available")] = 1.0
    x[AUDIO_VECTOR_NAMES.index("baseline.shaft.1x.delta_db")] = AUDIO_1X_RISE_DB
    assert ruled_out("audio", x) == ("normal",) and raised_one_x(x)
    assert "1x tone stands" in ruled_out_note("audio", x, {})
    x[AUDIO_VECTOR_NAMES.index("baseline.shaft.1x.delta_db")] = AUDIO_1X_RISE_DB - 0.1
    assert ruled_out("audio", x) == ()
    x[AUDIO_VECTOR_NAMES.index("baseline.shaft.1x.delta_db")] = 30.0
    x[AUDIO_VECTOR_NAMES.index("flag.vfd")] = 1.0  # on a drive the 1x level moves with speed: not read
    assert ruled_out("audio", x) == ()
    x[AUDIO_VECTOR_NAMES.index("flag.vfd")] = 0.0
    x[AUDIO_VECTOR_NAMES.index("baseline.available")] = 0.0
    assert ruled_out("audio", x) == ()
    assert ruled_out("plc", np.full(len(AUDIO_VECTOR_NAMES), 30.0, np.float32)) == ()
