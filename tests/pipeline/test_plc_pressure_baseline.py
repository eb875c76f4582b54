"""The learned PLC pressure and vibration baseline: the learner's rules, and the job's handlers end to end
(real landing zone, the ingestor the Flink function runs, state written and read back as Flink would)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from pipeline.asset_state import AssetState
from pipeline.features.plc_baseline import BaselineRules, PlcBaseline
from pipeline.features.plc_physics import PLC_VECTOR_NAMES
from pipeline.features.plc_window import plc_feature_names
from pipeline.ingestor import AssetIngestor
from pipeline.landing import ManifestWriter
from tests.pipeline.conftest import job_spec

NAMES = plc_feature_names()
UNITS = {"motor_current_a": "A", "speed_rpm": "rpm", "pressure_bar": "bar", "run_state": "bool",
         "vibration_rms_mm_s": "mm/s", "winding_temp_c": "degC", "bearing_temp_c": "degC"}


def raw_window(pressure: float, p_cv: float = 0.01, speed: float = 1480.0, alarms: str | None = None,
               p_max: float | None = None) -> np.ndarray:
    w = np.zeros(len(NAMES))
    w[NAMES.index("run_state.mean")] = 1.0
    w[NAMES.index("speed_rpm.mean")] = speed
    w[NAMES.index("speed_rpm.std")] = 0.001 * speed
    w[NAMES.index("pressure_bar.mean")] = pressure
    w[NAMES.index("pressure_bar.std")] = p_cv * pressure
    w[NAMES.index("pressure_bar.max")] = pressure * (1 + 2 * p_cv) if p_max is None else p_max
    if alarms:
        w[NAMES.index(f"alarms.{alarms}")] = 1.0
    return w


def feed(b: PlcBaseline, windows: list[np.ndarray], nominal_rpm: float | None = 1480.0) -> None:
    for i, w in enumerate(windows):
        b.observe(w, end_ms=10_000 * (i + 1), nominal_rpm=nominal_rpm)


def test_a_cavitating_start_is_not_learnt_and_a_steady_machine_is() -> None:
    rng = np.random.default_rng(0)
    cavitating = PlcBaseline(BaselineRules(windows=10))
    feed(cavitating, [raw_window(3.0 * rng.uniform(0.95, 1.0), p_cv=rng.uniform(0.03, 0.07)) for _ in range(50)])
    assert not cavitating.learned and cavitating.rejected == {"pressure_not_steady": 50}
    steady = PlcBaseline(BaselineRules(windows=10))
    feed(steady, [raw_window(4.0 * rng.uniform(0.98, 1.02)) for _ in range(10)])
    assert steady.learned_bar == pytest.approx(4.0, rel=0.02) and steady.learned_kind == "steady"


def test_windows_off_speed_with_alarms_or_too_close_are_skipped() -> None:
    b = PlcBaseline(BaselineRules(windows=3))
    feed(b, [raw_window(2.0, speed=900.0), raw_window(2.0, alarms="A3xx"), raw_window(2.0, alarms="A9xx")])
    assert b.rejected == {"not_at_rated_speed": 1, "alarm": 1} and len(b.values) == 1  # A9xx is a nuisance alarm
    b.observe(raw_window(2.0), end_ms=35_000)  # 5 s after the last accepted one: overlapping data
    assert len(b.values) == 1


def test_a_cyclic_pressure_learns_the_stroke_peak_and_disagreeing_windows_restart() -> None:
    press = PlcBaseline(BaselineRules(windows=6))
    feed(press, [raw_window(80.0, p_cv=0.9, p_max=200.0 + i) for i in range(6)])
    assert press.learned_kind == "cyclic" and press.learned_bar == pytest.approx(202.5)
    changing = PlcBaseline(BaselineRules(windows=6))
    feed(changing, [raw_window(p) for p in (4.0, 4.0, 4.0, 2.0, 2.0, 2.0)])
    assert not changing.learned and changing.restarts == 1 and changing.values == [2.0, 2.0, 2.0]


def _plc_csv(asset: str, start_ms: int, seconds: int, pressure: float, rng: np.random.Generator,
             vibration: float | None = None, winding_c: float | None = None, run: float = 1.0,
             speed_ratio: float = 1.0, speed_tag: bool = True) -> bytes:
    from pipeline.decoders import format_timestamp_ms

    rows = ["timestamp,tag,value,quality,unit"]
    for k in range(seconds * 10):
        ts = format_timestamp_ms(start_ms + 100 * k)
        values = {"motor_current_a": 20.0 + rng.normal(0, 0.2), "speed_rpm": 1480.0 * speed_ratio + rng.normal(0, 1.0),
                  "pressure_bar": pressure * (1 + rng.normal(0, 0.005)), "run_state": 1.0}
        if vibration is not None:
            values["vibration_rms_mm_s"] = vibration * (1 + rng.normal(0, 0.03))
        if winding_c is not None:  # a bearing at 40 degC
            values.update(winding_temp_c=winding_c + rng.normal(0, 0.2), bearing_temp_c=40.0 + rng.normal(0, 0.2))
        if run != 1.0:
            values.update(run_state=run, motor_current_a=run * values["motor_current_a"],
                          speed_rpm=run * values["speed_rpm"])
        if not speed_tag:
            del values["speed_rpm"]
        rows += [f"{ts},{asset}.{tag},{v:.4f},Good,{UNITS[tag]}" for tag, v in values.items()]
    return ("\n".join(rows) + "\n").encode()


def test_an_asset_without_nominal_pressure_learns_it_and_the_model_input_reads_it_after_a_restore(
        tmp_path: Path) -> None:
    tags = {tag: {"unit": unit} for tag, unit in UNITS.items()}
    assets = [{"asset_id": "PMP-X", "asset_type": "pump", "nominal_rpm": 1480, "rated_current_a": 25.0, "tags": tags},
              {"asset_id": "PMP-N", "asset_type": "pump", "nominal_rpm": 1480, "rated_current_a": 25.0,
               "pressure_nominal_bar": 5.0, "tags": tags}]
    (tmp_path / "assets.json").write_text(json.dumps({"assets": assets}))
    ingestor = AssetIngestor(job_spec(tmp_path, "x", "redis://unused", plc_pressure_baseline_windows=4))
    writer = ManifestWriter(tmp_path, epoch=1)
    rng = np.random.default_rng(1)
    t0 = (int(time.time()) - 3_600) * 1000
    flag, ratio = PLC_VECTOR_NAMES.index("flag.pressure_nominal_known"), PLC_VECTOR_NAMES.index(
        "pressure.mean_over_nominal")
    states = {"PMP-X": AssetState(), "PMP-N": AssetState()}

    def ingest(asset: str, minute: int, pressure: float, job: AssetIngestor = ingestor
               ) -> tuple[list[np.ndarray], dict[str, int]]:
        start = t0 + 60_000 * minute
        entry = writer.write_blob(f"plc/{asset}/{minute}.csv", _plc_csv(asset, start, 60, pressure, rng), asset,
                                  start, end_ms=start + 60_000)
        writer.publish([entry])
        out = job.on_line(entry.to_json(), states[asset], asset)
        states[asset] = states[asset].copy_through_storage()  # what a checkpoint and restore keep
        return [e.message.vector for e in out.entries if hasattr(e.message, "vector")], out.counters

    before, counters = ingest("PMP-X", 0, 4.0)  # learning period: 4 windows at least 10 s apart
    assert counters.get("plc_pressure_baseline_learned") == 1
    assert before and before[0][flag] == 0.0  # until learned, as today: no nominal pressure
    learned = states["PMP-X"].pressure
    assert learned.learned_bar == pytest.approx(4.0, rel=0.01) and learned.learned_kind == "steady"
    after, counters = ingest("PMP-X", 1, 3.0)  # a 25 % pressure drop (cavitation's signature)
    assert "plc_pressure_baseline_learned" not in counters
    full = after[len(after) // 2]
    assert full[flag] == 1.0 and full[ratio] == pytest.approx(0.75, rel=0.02)
    named, _ = ingest("PMP-N", 0, 4.0)  # nameplate value: used as is, no pressure learnt
    assert named[-1][flag] == 1.0 and named[-1][ratio] == pytest.approx(0.8, rel=0.02)
    assert states["PMP-N"].pressure.learned_bar is None and not states["PMP-N"].pressure.values

    # the operator asks PMP-X to learn again (say after a repair): once, at its next file
    relearn = AssetIngestor(job_spec(tmp_path, "x", "redis://unused", plc_pressure_baseline_windows=4,
                                     plc_pressure_baseline_relearn={"PMP-X": 1}))
    _, counters = ingest("PMP-X", 2, 3.0, relearn)
    assert counters.get("plc_pressure_baseline_reset") == 1 and counters.get("plc_pressure_baseline_learned") == 1
    assert states["PMP-X"].pressure.learned_bar == pytest.approx(3.0, rel=0.01)
    _, counters = ingest("PMP-X", 3, 3.0, relearn)
    assert "plc_pressure_baseline_reset" not in counters


def test_a_machine_on_the_mains_without_a_speed_tag_learns_at_its_nameplate_speed(tmp_path: Path) -> None:
    """A historian without a speed tag: a machine on the mains runs at its nameplate speed while its run state
    says it runs, so the job learns its pressure and vibration (before session 54 nothing, ``no_speed``); one on
    a drive (``vfd``) still learns nothing without its speed (or the drive's setpoint, which inspect reads)."""
    tags = {tag: {"unit": unit} for tag, unit in UNITS.items()}
    assets = [{"asset_id": "PMP-M", "asset_type": "pump", "nominal_rpm": 1480, "tags": tags},
              {"asset_id": "PMP-D", "asset_type": "pump", "nominal_rpm": 1480, "vfd": True, "tags": tags}]
    (tmp_path / "assets.json").write_text(json.dumps({"assets": assets}))
    ingestor = AssetIngestor(job_spec(tmp_path, "x", "redis://unused", plc_pressure_baseline_windows=4))
    writer = ManifestWriter(tmp_path, epoch=1)
    rng = np.random.default_rng(3)
    start = (int(time.time()) - 3_600) * 1000
    learnt = {}
    for asset in ("PMP-M", "PMP-D"):
        entry = writer.write_blob(f"plc/{asset}/0.csv", _plc_csv(asset, start, 60, 4.0, rng, vibration=2.0,
                                                                  speed_tag=False), asset, start, end_ms=start + 60_000)
        writer.publish([entry])
        state = AssetState()
        out = ingestor.on_line(entry.to_json(), state, asset)
        learnt[asset] = (state.pressure, out.counters)
    mains, counters = learnt["PMP-M"]
    assert counters.get("plc_pressure_baseline_learned") == 1 and counters.get("plc_vibration_baseline_learned") == 1
    assert mains.learned_bar == pytest.approx(4.0, rel=0.01) and mains.learned_vib_mm_s == pytest.approx(2.0, rel=0.03)
    drive, counters = learnt["PMP-D"]
    assert drive.learned_bar is None and drive.learned_vib_mm_s is None and set(drive.rejected) == {"no_speed"}
    assert "plc_pressure_baseline_learned" not in counters


def test_vibration_windows_follow_the_operating_rules_and_a_changing_level_restarts() -> None:
    def vib_window(v: float, **kw: object) -> np.ndarray:
        w = raw_window(2.0, **kw)  # type: ignore[arg-type]
        w[NAMES.index("vibration_rms_mm_s.mean")] = v
        return w

    b = PlcBaseline(BaselineRules(windows=4))
    for i, w in enumerate([vib_window(6.0, speed=900.0), vib_window(6.0, alarms="A2xx"), raw_window(2.0)]):
        b.observe_vibration(w, end_ms=10_000 * (i + 1), nominal_rpm=1480.0)
    assert b.vibration.rejected == {"not_at_rated_speed": 1, "alarm": 1, "no_vibration": 1} and not b.vibration.values
    for i, v in enumerate([2.0, 2.1, 6.0, 6.2]):  # the machine changed state while learning
        b.observe_vibration(vib_window(v), end_ms=100_000 + 10_000 * i, nominal_rpm=1480.0)
    assert b.learned_vib_mm_s is None and b.vibration.restarts == 1 and b.vibration.values == [6.0, 6.2]
    for i, v in enumerate([6.1, 5.9]):
        b.observe_vibration(vib_window(v), end_ms=200_000 + 10_000 * i, nominal_rpm=1480.0)
    assert b.learned_vib_mm_s == pytest.approx(6.05)
    restored = PlcBaseline.from_state(json.loads(json.dumps(b.to_state())))
    assert restored.vibration == b.vibration and restored.vibration.restarts == 1
    old = {k: v for k, v in b.to_state().items() if k != "vibration"}  # a state written before vibration was learnt
    assert PlcBaseline.from_state(old).learned_vib_mm_s is None


def test_a_machine_that_runs_rough_when_healthy_is_read_against_its_own_vibration(tmp_path: Path) -> None:
    """A piston compressor runs at 6 mm/s when healthy (ISO 10816-6), above every healthy machine the
    model learnt from; once its level is learnt the model input reads it as a healthy level of the fleet,
    and a doubling (imbalance) stands out again. A machine that runs smoother than a typical one (1.1
    mm/s) is read the other way, its normal as a typical level; one within the fleet's range is read as
    before, and a declared ``vibration_normal_mm_s`` is used as is, without learning."""
    from pipeline.features.plc_physics import SMOOTH_VIBRATION_READ_AS_MM_S, VIBRATION_READ_AS_MM_S

    tags = {tag: {"unit": unit} for tag, unit in UNITS.items()}
    base = {"asset_type": "compressor", "nominal_rpm": 1480, "rated_current_a": 25.0, "pressure_nominal_bar": 7.0,
            "tags": tags}
    assets = [{"asset_id": "CMP-R", **base}, {"asset_id": "CMP-S", **base}, {"asset_id": "CMP-L", **base},
              {"asset_id": "CMP-D", **base, "vibration_normal_mm_s": 6.0}]
    (tmp_path / "assets.json").write_text(json.dumps({"assets": assets}))
    ingestor = AssetIngestor(job_spec(tmp_path, "x", "redis://unused", plc_pressure_baseline_windows=4))
    writer = ManifestWriter(tmp_path, epoch=1)
    rng = np.random.default_rng(2)
    t0 = (int(time.time()) - 3_600) * 1000
    level = PLC_VECTOR_NAMES.index("vib.mean_log")
    states = {a["asset_id"]: AssetState() for a in assets}
    saved: dict[str, bool] = {}

    def ingest(asset: str, minute: int, vibration: float) -> tuple[list[np.ndarray], dict[str, int]]:
        start = t0 + 60_000 * minute
        entry = writer.write_blob(f"plc/{asset}/{minute}.csv", _plc_csv(asset, start, 60, 7.0, rng, vibration),
                                  asset, start, end_ms=start + 60_000)
        writer.publish([entry])
        out = ingestor.on_line(entry.to_json(), states[asset], asset)
        saved[asset] = states[asset].pressure_touched  # what the job writes back to Flink state
        states[asset] = states[asset].copy_through_storage()
        return [e.message.vector for e in out.entries if hasattr(e.message, "vector")], out.counters

    before, counters = ingest("CMP-R", 0, 6.0)
    assert counters.get("plc_vibration_baseline_learned") == 1
    assert counters.get("plc_vibration_baseline_above_fleet") == 1  # the operator can tell rough from imbalanced
    assert np.exp(before[0][level]) == pytest.approx(6.0, rel=0.05)  # before it is learnt: the level as read
    assert states["CMP-R"].pressure.learned_vib_mm_s == pytest.approx(6.0, rel=0.02)
    assert saved["CMP-R"]
    healthy, _ = ingest("CMP-R", 1, 6.0)
    assert not saved["CMP-R"]  # learnt (its pressure is on the nameplate): nothing changes, nothing is rewritten
    assert np.exp(np.median([v[level] for v in healthy])) == pytest.approx(VIBRATION_READ_AS_MM_S, rel=0.03)
    doubled, _ = ingest("CMP-R", 2, 12.0)
    assert np.exp(np.median([v[level] for v in doubled])) == pytest.approx(2 * VIBRATION_READ_AS_MM_S, rel=0.03)

    smooth, counters = ingest("CMP-S", 0, 1.8)  # within the fleet's range: learnt, and nothing changes
    assert counters.get("plc_vibration_baseline_learned") == 1 and "plc_vibration_baseline_above_fleet" not in counters
    again, _ = ingest("CMP-S", 1, 1.8)
    assert np.exp(np.median([v[level] for v in again])) == pytest.approx(1.8, rel=0.03)

    quiet, counters = ingest("CMP-L", 0, 1.1)  # smoother than a typical machine: learnt, then read up to it
    assert counters.get("plc_vibration_baseline_learned") == 1 and "plc_vibration_baseline_above_fleet" not in counters
    assert np.exp(quiet[0][level]) == pytest.approx(1.1, rel=0.05)  # before it is learnt: the level as read
    quiet, _ = ingest("CMP-L", 1, 1.1)
    assert np.exp(np.median([v[level] for v in quiet])) == pytest.approx(SMOOTH_VIBRATION_READ_AS_MM_S, rel=0.03)
    quiet_doubled, _ = ingest("CMP-L", 2, 2.2)
    assert np.exp(np.median([v[level] for v in quiet_doubled])) == pytest.approx(2 * SMOOTH_VIBRATION_READ_AS_MM_S,
                                                                                 rel=0.03)

    declared, counters = ingest("CMP-D", 0, 6.0)  # assets.json says it: read against it from the first window
    assert "plc_vibration_baseline_learned" not in counters
    assert states["CMP-D"].pressure.learned_vib_mm_s is None and not states["CMP-D"].pressure.vibration.values
    assert np.exp(np.median([v[level] for v in declared])) == pytest.approx(VIBRATION_READ_AS_MM_S, rel=0.03)


def test_the_winding_is_read_against_the_machine_s_own_healthy_level(tmp_path: Path) -> None:
    """A motor whose winding runs 16 K over its bearing at 80 % of rated current when healthy (a winding
    level of 22 K at rated current, cooler than the fleet's) learns that level, after the settling time
    that follows a standstill, and the model input then reads its winding-over-bearing difference
    against it (pipeline.features.plc_physics.winding_scale): x2, the cap; the learnt level survives a
    restore. A machine without a rated current learns no winding level."""
    from pipeline.features.plc_physics import MAX_WINDING_SCALE

    tags = {tag: {"unit": unit} for tag, unit in UNITS.items()}
    base = {"asset_type": "pump", "nominal_rpm": 1480, "pressure_nominal_bar": 4.0, "vibration_normal_mm_s": 1.5,
            "tags": tags}
    assets = [{"asset_id": "MTR-C", **base, "rated_current_a": 25.0}, {"asset_id": "MTR-U", **base}]
    (tmp_path / "assets.json").write_text(json.dumps({"assets": assets}))
    ingestor = AssetIngestor(job_spec(tmp_path, "x", "redis://unused", plc_pressure_baseline_windows=4,
                                      plc_winding_settle_s=120.0))
    writer = ManifestWriter(tmp_path, epoch=1)
    rng = np.random.default_rng(3)
    t0 = (int(time.time()) - 3_600) * 1000
    diff = PLC_VECTOR_NAMES.index("temp.winding_minus_bearing")
    states = {a["asset_id"]: AssetState() for a in assets}

    def ingest(asset: str, minute: int, winding_c: float, run: float = 1.0
               ) -> tuple[list[np.ndarray], dict[str, int]]:
        start = t0 + 60_000 * minute
        entry = writer.write_blob(f"plc/{asset}/{minute}.csv",
                                  _plc_csv(asset, start, 60, 4.0, rng, 1.5, winding_c, run), asset, start,
                                  end_ms=start + 60_000)
        writer.publish([entry])
        out = ingestor.on_line(entry.to_json(), states[asset], asset)
        states[asset] = states[asset].copy_through_storage()
        return [e.message.vector for e in out.entries if hasattr(e.message, "vector")], out.counters

    _, counters = ingest("MTR-C", 0, 40.0, run=0.0)  # standing still
    first, counters = ingest("MTR-C", 1, 56.0)  # started: settling, nothing learnt
    assert "plc_winding_baseline_learned" not in counters and states["MTR-C"].pressure.winding.rejected["settling"] > 0
    assert np.median([v[diff] for v in first]) == pytest.approx(16.0, abs=0.5)
    _, counters = ingest("MTR-C", 3, 56.0)  # 2 min after the stop
    assert counters.get("plc_winding_baseline_learned") == 1
    assert states["MTR-C"].pressure.learned_winding_k == pytest.approx(16.0 / (0.2 + 0.8 * 0.8**2), rel=0.03)
    after, _ = ingest("MTR-C", 4, 56.0)
    assert np.median([v[diff] for v in after]) == pytest.approx(MAX_WINDING_SCALE * 16.0, abs=1.0)

    _, counters = ingest("MTR-U", 0, 56.0)
    assert "plc_winding_baseline_learned" not in counters and states["MTR-U"].pressure_json() is None


def test_the_learner_state_stays_small_at_its_fullest() -> None:
    """docs/ingestion.md: the ``plc-pressure-baseline`` value stays under 5 KB. Its largest: every level one
    window short of its learning period (60), with rejection counts."""
    b = PlcBaseline(BaselineRules())
    n = b.rules.windows - 1
    b.values, b.cyclic = [123.456789] * n, [False] * n
    b.vibration.values, b.winding.values = [1.23456789] * n, [45.6789123] * n
    b.rejected = {"not_at_rated_speed": 123_456, "alarm": 7_890, "pressure_not_steady": 45_678}
    b.vibration.rejected, b.winding.rejected = dict(b.rejected), {"settling": 123_456, "not_running": 7_890}
    b.last_ms = b.vibration.last_ms = b.winding.last_ms = b.win_standstill_ms = 1_795_960_801_300
    text = json.dumps(b.to_state())
    assert len(text.encode()) < 5_000
    assert PlcBaseline.from_state(json.loads(text)) == b


def test_a_drive_learns_its_winding_level_below_nameplate_speed_as_at_it() -> None:
    """A pump on a drive whose self-ventilated motor keeps a third of its cooling with the fan stopped (the
    simulator's ``motor_fan_still_share``, as real TEFC motors cool less at low speed): a healthy window at
    75 % speed gives the winding level a window at nameplate speed gives, read as its fan would cool it
    there (before, such a window gave none: ``not_at_rated_speed``). Read as measured it would be a fifth
    higher. On the mains, or below 30 % of nameplate speed, nothing is learnt from it; an export that also has
    windows at nameplate speed gives the level from those alone."""
    from dataclasses import replace

    from linewatch.simulator.domain import DomainRenderer, domain_fleet, draw_domain_specs
    from models.data.domain_data import _wide_rows
    from models.data.featurize import plc_input
    from pipeline.features.asset_profile import AssetProfile
    from pipeline.features.plc_baseline import healthy_levels

    pump = next(a for a in domain_fleet(3, 5) if a.asset_type == "pump")
    pump = replace(pump, extra={**pump.extra, "motor_fan_still_share": 1 / 3})
    spec = next(s for s in draw_domain_specs(2, [pump], 5) if s.fault == "normal")
    drive = AssetProfile(asset_id=pump.asset_id, nominal_rpm=pump.nominal_rpm, rated_current_a=pump.rated_current_a,
                         vfd=True)

    def window(fraction: float) -> np.ndarray:
        at = replace(spec, asset_index=0, drift="none", drift_level=0.0, load_level=0.8, drive_fraction=fraction)
        return plc_input(*_wide_rows(DomainRenderer([pump], 5).render(at, ("plc",)).plc))

    def level(fraction: float, profile: AssetProfile | None, *more: np.ndarray) -> tuple[float | None, dict[str, int]]:
        got = healthy_levels([window(fraction), *more], pump.nominal_rpm, rated_current_a=pump.rated_current_a,
                             profile=profile)
        return got.winding_k, got.rejected

    rated, _ = level(1.0, drive)
    slow, _ = level(0.75, drive)
    as_measured, _ = level(0.75, replace(drive, self_ventilated=False))
    assert rated is not None and slow is not None and as_measured is not None
    assert abs(slow / rated - 1.0) < 0.12 and as_measured / rated > 1.2
    assert level(0.75, replace(drive, vfd=False)) == (None, {"not_at_rated_speed": 1})
    assert level(0.75, None)[0] is None and level(0.25, drive)[0] is None
    assert level(0.75, drive, window(1.0))[0] == rated


def test_the_job_learns_a_drive_s_winding_below_nameplate_speed_only_when_it_never_reaches_it() -> None:
    """The job's learner (``PlcBaseline.observe_winding``) learns at nameplate speed. A drive seen running only
    below it for ``below_speed_wait_ms`` since its first such window learns from its slower windows from then
    on, read as at nameplate speed (its state keeps the wait across a restore); one that reached nameplate
    speed in that time keeps to it; a machine on the mains never learns off-speed."""
    from pipeline.features.asset_profile import AssetProfile
    from pipeline.features.plc_physics import ventilation_share

    nominal, rated = 1480.0, 20.0
    drive = AssetProfile(asset_id="FAN-D", nominal_rpm=nominal, rated_current_a=rated, vfd=True)
    rules = BaselineRules(windows=3, winding_settle_ms=0, below_speed_wait_ms=60_000)

    def window(speed_ratio: float, winding_c: float) -> np.ndarray:
        w = np.zeros(len(NAMES))
        w[NAMES.index("run_state.mean")] = 1.0
        w[NAMES.index("speed_rpm.mean")] = speed_ratio * nominal
        w[NAMES.index("speed_rpm.std")] = 0.001 * speed_ratio * nominal
        w[NAMES.index("motor_current_a.mean")] = rated
        w[NAMES.index("winding_temp_c.mean")], w[NAMES.index("bearing_temp_c.mean")] = winding_c, 40.0
        return w

    def run(b: PlcBaseline, speeds: list[float], profile: AssetProfile = drive, start_s: int = 10) -> list[bool]:
        return [b.observe_winding(window(n, 90.0 if n < 1.0 else 75.0), 1000 * (start_s + 10 * i), nominal, rated,
                                  profile) for i, n in enumerate(speeds)]

    slow = PlcBaseline(rules)
    run(slow, [0.6] * 4)  # 10-40 s: waiting (the first slower window at 10 s)
    assert slow.learned_winding_k is None and not slow.win_below and slow.winding.rejected == {"not_at_rated_speed": 4}
    slow = PlcBaseline.from_state(json.loads(json.dumps(slow.to_state())), rules)  # a restore mid-wait
    done = run(slow, [0.6] * 6, start_s=50)  # from 70 s on, its slower windows count
    assert done == [False, False, False, False, True, False] and slow.win_below  # 70, 80 and 90 s
    assert slow.learned_winding_k == pytest.approx(50.0 * ventilation_share(0.6, drive), rel=1e-3)

    reached = PlcBaseline(rules)
    run(reached, [0.6, 1.0, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 1.0, 1.0])  # nameplate speed at 20 s: kept to it
    assert reached.learned_winding_k == pytest.approx(35.0) and not reached.win_below

    mains = PlcBaseline(rules)
    run(mains, [0.6] * 12, AssetProfile(asset_id="FAN-M", nominal_rpm=nominal, rated_current_a=rated))
    assert mains.learned_winding_k is None and mains.win_below_since_ms is None


def test_the_job_counts_a_drive_that_learnt_its_winding_below_nameplate_speed(tmp_path: Path) -> None:
    """Through the job's PLC handler (real landing zone, the ingestor the Flink function runs, state written
    and read back): a fan on a drive that runs at 60 % speed learns its winding level once it has run below
    nameplate speed for ``plc_winding_below_speed_wait_s``, read as at nameplate speed, and the counter says
    so; the same fan declared on the mains learns none."""
    from pipeline.features.asset_profile import AssetProfile
    from pipeline.features.plc_physics import ventilation_share

    tags = {tag: {"unit": unit} for tag, unit in UNITS.items()}
    base = {"asset_type": "fan", "nominal_rpm": 1480, "pressure_nominal_bar": 4.0, "vibration_normal_mm_s": 1.5,
            "rated_current_a": 25.0, "tags": tags}
    assets = [{"asset_id": "FAN-V", **base, "vfd": True}, {"asset_id": "FAN-M", **base}]
    (tmp_path / "assets.json").write_text(json.dumps({"assets": assets}))
    ingestor = AssetIngestor(job_spec(tmp_path, "x", "redis://unused", plc_pressure_baseline_windows=4,
                                      plc_winding_settle_s=0.0, plc_winding_below_speed_wait_s=90.0))
    writer = ManifestWriter(tmp_path, epoch=1)
    rng = np.random.default_rng(5)
    t0 = (int(time.time()) - 3_600) * 1000
    states = {a["asset_id"]: AssetState() for a in assets}
    counters: dict[str, dict[str, int]] = {a["asset_id"]: {} for a in assets}
    for minute in range(3):
        for asset in states:
            start = t0 + 60_000 * minute
            entry = writer.write_blob(f"plc/{asset}/{minute}.csv",
                                      _plc_csv(asset, start, 60, 4.0, rng, 1.5, 56.0, speed_ratio=0.6), asset, start,
                                      end_ms=start + 60_000)
            writer.publish([entry])
            out = ingestor.on_line(entry.to_json(), states[asset], asset)
            states[asset] = states[asset].copy_through_storage()
            for k, v in out.counters.items():
                counters[asset][k] = counters[asset].get(k, 0) + v
    assert counters["FAN-V"].get("plc_winding_baseline_below_speed") == 1
    assert counters["FAN-V"].get("plc_winding_baseline_learned") == 1
    share = ventilation_share(0.6, AssetProfile(vfd=True))
    assert states["FAN-V"].pressure.learned_winding_k == pytest.approx(16.0 / (0.2 + 0.8 * 0.8**2) * share, rel=0.03)
    assert "plc_winding_baseline_below_speed" not in counters["FAN-M"]
    assert states["FAN-M"].pressure.learned_winding_k is None
