"""``linewatch inspect`` with the shipped models on simulator files: the right class for each fault
(per modality where the physics shows it, and the fused verdict), files of other formats (44.1 kHz
stereo WAV of 3 s, a 240 x 320 float °C TIFF, a wide PLC CSV), and bad files reported, not fatal."""

from __future__ import annotations

import io
import json
import math
import re
import wave
from pathlib import Path

import numpy as np
import pytest
import tifffile
from typer.testing import CliRunner

from linewatch.cli.app import app
from linewatch.simulator.assets import asset_registry_json, make_fleet
from linewatch.simulator.config import SimulatorConfig
from linewatch.simulator.dataset import SampleRenderer, make_spec
from linewatch.simulator.health import FAULTS
from linewatch.simulator.plc import format_lines, plc_file_text
from linewatch.simulator.timefmt import iso_ms
from linewatch.simulator.writer import encode_tiff, encode_wav
from models.inspect import InspectInputError, Inspector
from models.inspect.readers import load_assets
from models.registry import default_registry

pytestmark = pytest.mark.skipif(not default_registry().modalities(), reason="no shipped models")
STAMP = "20261129T140000500"
#: What each modality of the shipped models is expected to recognise (docs/models.md).
SEEN_BY = {"audio": ("bearing_wear", "cavitation"), "thermal": ("bearing_wear", "electrical_overheating",
                                                                   "cooling_failure"), "plc": ("imbalance",)}


@pytest.fixture(scope="module")
def plant(tmp_path_factory) -> tuple[Path, dict[str, list[Path]]]:
    """One pump of the plant simulator, each fault at severity 0.8 and healthy: a WAV clip, a TIFF
    frame and a PLC window per case, landing-zone names, an assets.json."""
    cfg = SimulatorConfig(seed=7)
    fleet = make_fleet(6, seed=7)
    pump = fleet[0]
    root = tmp_path_factory.mktemp("inspect")
    (root / "assets.json").write_text(json.dumps(asset_registry_json(fleet, cfg)))
    renderer = SampleRenderer(cfg, fleet)
    cases: dict[str, list[Path]] = {}
    for i, fault in enumerate(("normal", *FAULTS)):
        r = renderer.render(make_spec(pump, fault, 0.8 if fault != "normal" else 0.0, index=40 + i))
        d = root / fault
        d.mkdir()
        wav, tif, plc = d / f"{pump.asset_id}-{STAMP}.wav", d / f"{pump.asset_id}-{STAMP}.tiff", d / f"plc-{pump.asset_id}-{STAMP}.csv"
        wav.write_bytes(encode_wav(r.clip, 16_000))
        tif.write_bytes(encode_tiff(r.frame))
        plc.write_text(plc_file_text(format_lines(r.plc, iso_ms(cfg.start_time, r.plc.t), "csv"), "csv"))
        cases[fault] = [wav, tif, plc]
    return root, cases


@pytest.mark.parametrize("fault", ["normal", *FAULTS])
def test_inspect_returns_the_right_class_for_each_fault(fault: str, plant) -> None:
    root, cases = plant
    results, verdicts = Inspector(assets=load_assets(root / "assets.json")).score(cases[fault])
    assert all(r.error is None for r in results), [r.error for r in results]
    by_modality = {r.modality: r for r in results}
    assert {r.asset_id for r in results} == {"PMP-01"}
    for modality, seen in SEEN_BY.items():
        if fault in seen:
            assert by_modality[modality].label == fault, (modality, by_modality[modality].probabilities)
        if fault == "normal":
            assert by_modality[modality].label == "normal", (modality, by_modality[modality].probabilities)
    assert len(verdicts) == 1 and verdicts[0].label == fault, verdicts[0].probabilities


def _wav_44k_stereo_3s(clip16k: np.ndarray) -> bytes:
    from scipy.signal import resample_poly

    x = resample_poly(clip16k.astype(np.float32) / 32768.0, 441, 160)
    x = np.tile(x, 3)
    stereo = np.stack([x, 0.5 * x], axis=1)
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(2)
        w.setsampwidth(2)
        w.setframerate(44_100)
        w.writeframes(np.clip(stereo * 32767, -32768, 32767).astype("<i2").tobytes())
    return buf.getvalue()


def test_cli_json_other_formats_and_bad_files(plant, tmp_path) -> None:
    """A bearing fault recorded in other formats: 44.1 kHz stereo WAV of 3 s, a frame at 2x the
    resolution in float °C (regions stay in the assets.json's 160 x 120 pixels), PLC as JSON lines;
    plus a corrupt WAV. ``--json``: one record per file with the fused verdict inside."""
    root, cases = plant
    wav, tif, plc = cases["bearing_wear"]
    with wave.open(str(wav)) as w:
        clip = np.frombuffer(w.readframes(w.getnframes()), "<i2")
    (tmp_path / "a").mkdir()
    other_wav = tmp_path / "a" / f"PMP-01-{STAMP}.wav"
    other_wav.write_bytes(_wav_44k_stereo_3s(clip))
    frame_c = tifffile.imread(tif).astype(np.float32) / 100.0 - 273.15
    other_tif = tmp_path / "a" / f"PMP-01-{STAMP}.tif"
    tifffile.imwrite(other_tif, np.kron(frame_c, np.ones((2, 2), np.float32)))
    other_plc = tmp_path / "a" / "window.jsonl"
    from linewatch.simulator.dataset import SampleRenderer  # noqa: F401 - same renderer as the fixture

    lines = []
    for line in plc.read_text().splitlines()[1:]:
        ts, tag, value, quality, unit = line.split(",")
        lines.append(json.dumps({"timestamp": ts, "tag": tag, "value": float(value), "quality": quality, "unit": unit}))
    other_plc.write_text("\n".join(lines) + "\n")
    bad = tmp_path / "a" / f"PMP-01-{STAMP}-bad.wav"
    bad.write_bytes(b"RIFF\x00\x00")
    result = CliRunner().invoke(app, ["inspect", str(other_wav), str(other_tif), str(other_plc), str(bad),
                                      "--assets", str(root / "assets.json"), "--json"])
    assert result.exit_code == 1, result.output  # one file could not be scored
    records = json.loads(result.stdout)
    assert [Path(r["file"]).name for r in records] == [other_wav.name, other_tif.name, other_plc.name, bad.name]
    audio, thermal, plc_rec, broken = records
    assert broken["error"] and "WAV" in broken["error"] and broken["class"] is None
    for rec in (audio, thermal, plc_rec):
        assert rec["error"] is None and rec["asset_id"] == "PMP-01"
        assert set(rec["probabilities"]) >= {"normal", "bearing_wear"}
        assert abs(sum(rec["probabilities"].values()) - 1.0) < 1e-4
    assert audio["class"] == "bearing_wear" and thermal["class"] == "bearing_wear"
    assert audio["fused"]["class"] == "bearing_wear" and set(audio["fused"]["modalities"]) == {"audio", "thermal", "plc"}


def test_cli_table_and_unknown_machine(plant) -> None:
    """Without assets.json the machine is still scored, with a warning that says what to add."""
    _, cases = plant
    result = CliRunner().invoke(app, ["inspect", str(cases["cavitation"][0])])
    assert result.exit_code == 0, result.output
    assert "cavitation" in result.stdout or "normal" in result.stdout
    assert "not in assets.json" in result.stderr


def test_a_healthy_recording_of_the_machine_lets_audio_name_an_imbalance(plant) -> None:
    """Audio reads a clip against the machine's healthy sound when ``--healthy-audio`` gives one."""
    root, cases = plant
    inspector = Inspector(assets=load_assets(root / "assets.json"))
    wav = cases["imbalance"][0]
    alone, _ = inspector.score([wav])
    against, _ = inspector.score([wav], healthy_audio=[cases["normal"][0]])
    assert any("--healthy-audio" in w for w in alone[0].warnings)
    assert not any("--healthy-audio" in w for w in against[0].warnings)
    # one recording alone cannot show an imbalance: audio withholds it (its mass goes to normal)
    assert alone[0].withheld == ["imbalance"] and alone[0].probabilities["imbalance"] == 0.0
    assert against[0].withheld == []
    assert against[0].label == "imbalance", against[0].probabilities
    assert against[0].probabilities["imbalance"] > alone[0].probabilities["imbalance"]
    healthy, _ = inspector.score([cases["normal"][0]], healthy_audio=[cases["normal"][0]])
    assert healthy[0].label == "normal", healthy[0].probabilities


def test_a_1x_far_over_the_healthy_recording_s_is_not_called_healthy(plant, tmp_path) -> None:
    """The pump's healthy clip with a tone at its own shaft speed added (its 1x far over the healthy
    recording's): audio rules ``normal`` out, names imbalance and says what to check; the healthy clip
    read against itself rules nothing out. Read without the healthy recording, the same raised clip
    withholds imbalance and rules nothing out (no level to rise over)."""
    import soundfile

    root, cases = plant
    inspector = Inspector(assets=load_assets(root / "assets.json"))
    healthy = cases["normal"][0]
    (alone,), _ = inspector.score([healthy], healthy_audio=[healthy])
    assert alone.ruled_out == [] and alone.label == "normal", alone.probabilities
    samples, rate = soundfile.read(healthy, dtype="float64")
    t = np.arange(len(samples)) / rate
    raised = samples + np.sqrt(np.mean(samples**2)) * np.sin(2 * np.pi * alone.shaft_hz * t)
    wav = tmp_path / healthy.name
    wav.write_bytes(encode_wav(np.clip(raised * 32767, -32768, 32767).astype(np.int16), rate))
    (read,), _ = inspector.score([wav], healthy_audio=[healthy])
    assert read.ruled_out == ["normal"] and read.label == "imbalance", (read.probabilities, read.warnings)
    assert any("1x tone stands" in w for w in read.warnings), read.warnings
    (without,), _ = inspector.score([wav])
    assert without.ruled_out == [] and without.withheld == ["imbalance"]


def test_a_healthy_recording_at_another_speed_is_not_the_clip_s_baseline(plant, tmp_path) -> None:
    """The same machine sped up by a quarter (its clip replayed 1.25x faster: every tone, the shaft's
    too) is read without the healthy recording made at the old speed, and says why."""
    import soundfile

    _, cases = plant
    samples, rate = soundfile.read(cases["normal"][0], dtype="int16")
    assert rate == 16_000
    healthy, faster, same = tmp_path / "VFD-1-healthy.wav", tmp_path / "VFD-1-faster.wav", tmp_path / "VFD-1-same.wav"
    healthy.write_bytes(encode_wav(samples, 16_000))
    faster.write_bytes(encode_wav(samples, 20_000))
    same.write_bytes(encode_wav(samples, 16_000))
    inspector = Inspector()  # a machine assets.json does not describe: its speed is searched in 8-65 Hz
    results, _ = inspector.score([same, faster], asset_id="VFD-1", healthy_audio=[healthy])
    at_speed, off_speed = results
    assert at_speed.withheld == [] and not any("healthy recording at" in w for w in at_speed.warnings)
    assert off_speed.withheld == ["imbalance"], off_speed.warnings
    assert any("healthy recording at" in w and "this speed" in w for w in off_speed.warnings), off_speed.warnings


def test_a_reciprocating_machine_s_audio_withholds_bearing_wear_and_thermal_still_judges_it(plant, tmp_path) -> None:
    """The same worn-bearing files of a machine that assets.json calls reciprocating (by its type, or
    by ``"reciprocating": true``): audio withholds bearing wear and says why; the thermal frame and
    the fused verdict still name it."""
    root, cases = plant
    wav, tif, _ = cases["bearing_wear"]
    data = json.loads((root / "assets.json").read_text())
    aid = wav.name.split("-20")[0]
    shown, _ = Inspector(assets=load_assets(root / "assets.json")).score([wav, tif])
    assert shown[0].label == "bearing_wear" and shown[0].withheld == ["imbalance"]  # no healthy recording
    for how in ({"asset_type": "reciprocating compressor"}, {"reciprocating": True}):
        entries = [({**e, **how} if (e.get("asset_id") or e.get("id")) == aid else e) for e in data["assets"]]
        path = tmp_path / f"assets-{len(how)}-{next(iter(how))}.json"
        path.write_text(json.dumps({**data, "assets": entries}))
        results, verdicts = Inspector(assets=load_assets(path)).score([wav, tif])
        audio, thermal = results
        assert audio.withheld == ["bearing_wear", "imbalance"] and audio.probabilities["bearing_wear"] == 0.0, how
        assert audio.label != "bearing_wear" and any("reciprocating" in w for w in audio.warnings), audio.warnings
        assert thermal.label == "bearing_wear" and not thermal.withheld, thermal.probabilities
        assert [v.label for v in verdicts] == ["bearing_wear"], verdicts
        assert verdicts[0].withheld == {"audio": ["bearing_wear", "imbalance"]}, verdicts[0].withheld
        assert verdicts[0].to_json()["withheld"] == {"audio": ["bearing_wear", "imbalance"]}


def test_a_frame_read_through_proposed_boxes_names_no_thermal_fault_and_lists_the_boxes(plant, tmp_path) -> None:
    """Without ``regions`` in assets.json the boxes are proposed from the frame: thermal withholds
    every fault it names there (neutral in the fusion) and the warning gives the boxes to check and
    copy; audio still names the worn bearing, and so does the verdict."""
    root, cases = plant
    wav, tif, _ = cases["bearing_wear"]
    data = json.loads((root / "assets.json").read_text())
    entries = [{k: v for k, v in e.items() if k != "regions"} for e in data["assets"]]
    path = tmp_path / "assets-no-regions.json"
    path.write_text(json.dumps({**data, "assets": entries}))
    (audio, thermal), verdicts = Inspector(assets=load_assets(path)).score([wav, tif])
    assert thermal.withheld == ["bearing_wear", "cooling_failure", "electrical_overheating"], thermal.warnings
    assert thermal.label == "normal" and thermal.probabilities["bearing_wear"] == 0.0
    note = next(w for w in thermal.warnings if "proposed" in w)
    assert "names no fault" in note and '"motor_body": [' in note, note
    assert audio.label == "bearing_wear" and [v.label for v in verdicts] == ["bearing_wear"], verdicts


def test_on_proposed_boxes_thermal_names_only_an_unmistakable_hot_connection(plant, tmp_path) -> None:
    """Without ``regions`` thermal still names electrical overheating where the proposed terminal box
    holds a hot spot far above the box (``ratio.terminal_excess_over_body`` >= 0.6: a loose lug at
    severity 0.8); it withholds bearing wear and cooling failure there, and on the healthy frame of the
    same machine it names nothing, withholding all three (models.withheld_classes.STATS_RELEASE)."""
    from pipeline.features.messages import thermal_message_any_unit
    from pipeline.features.thermal_regions import THERMAL_VECTOR_NAMES
    from models.inspect.frame_files import read_frame
    from models.withheld_classes import PROPOSED_TERMINAL_EXCESS

    root, cases = plant
    data = json.loads((root / "assets.json").read_text())
    path = tmp_path / "assets-no-regions.json"
    path.write_text(json.dumps({**data, "assets": [{k: v for k, v in e.items() if k != "regions"}
                                                   for e in data["assets"]]}))
    assets = load_assets(path)
    ratio = THERMAL_VECTOR_NAMES.index("ratio.terminal_excess_over_body")
    read = {}
    for case in ("electrical_overheating", "normal"):
        tif = cases[case][1]
        msg = thermal_message_any_unit("PMP-01", "pump", 0, read_frame(tif), assets["PMP-01"], warnings=[])
        assert msg.stats["regions_proposed"] == 1.0
        read[case] = (float(msg.vector[ratio]), Inspector(assets=assets).score([tif])[0][0])
    (hot, lug), (cool, healthy) = read["electrical_overheating"], read["normal"]
    assert hot >= PROPOSED_TERMINAL_EXCESS > cool, (hot, cool)
    assert lug.label == "electrical_overheating" and lug.withheld == ["bearing_wear", "cooling_failure"], lug.probabilities
    assert healthy.label == "normal", healthy.probabilities
    assert healthy.withheld == ["bearing_wear", "cooling_failure", "electrical_overheating"]
    assert any("far hotter than the box" in w for w in lug.warnings), lug.warnings
    note = next(w for w in lug.warnings if w.startswith("the proposed terminal box holds a hot spot"))
    assert f"({hot:.2f} x the motor body's rise" in note, note
    assert not any(w.startswith("the proposed terminal box holds") for w in healthy.warnings), healthy.warnings


def test_a_lug_hotter_than_any_in_training_is_evidence_not_an_extrapolation(plant, tmp_path) -> None:
    """The pump's loose lug (severity 0.8) made 40 K hotter on a 3 x 3 spot: four terminal-box inputs lie
    beyond the thermal model's training range, on the side of the electrical overheating it names. They
    are listed, said to be evidence, and do not flag the frame as extrapolating, so the fused verdict
    gives the hotter lug more weight, not less (models.fault_evidence)."""
    from models.training_range import OUT_OF_RANGE_WARN
    from pipeline.features.thermal_regions import scaled_regions

    root, cases = plant
    wav, tif, plc = cases["electrical_overheating"]
    inspector = Inspector(assets=load_assets(root / "assets.json"))
    frame = tifffile.imread(tif).astype(np.int64)
    x0, y0, x1, y1 = (int(v) for v in scaled_regions(inspector.profile("PMP-01", []), frame.shape)["terminal_box"])
    iy, ix = np.unravel_index(np.argmax(frame[y0:y1, x0:x1]), (y1 - y0, x1 - x0))
    frame[y0 + iy - 1:y0 + iy + 2, x0 + ix - 1:x0 + ix + 2] += 4000  # centikelvin
    hotter = tmp_path / "hotter" / tif.name
    hotter.parent.mkdir()
    tifffile.imwrite(hotter, frame.astype(np.uint16))

    (lug,), _ = inspector.score([tif])
    (hot,), _ = inspector.score([hotter])
    assert lug.label == hot.label == "electrical_overheating", (lug.probabilities, hot.probabilities)
    assert not lug.outside_training and not lug.extrapolating
    assert len(hot.outside_training) >= OUT_OF_RANGE_WARN and "terminal_box.hotspot_excess" in hot.outside_training
    assert hot.evidence_beyond_training == hot.outside_training and not hot.extrapolating
    assert hot.probabilities["electrical_overheating"] > lug.probabilities["electrical_overheating"]
    assert any("on the side of electrical_overheating" in w for w in hot.warnings), hot.warnings
    assert not any("extrapolates" in w for w in hot.warnings), hot.warnings
    assert hot.to_json()["evidence_beyond_training"] == hot.evidence_beyond_training
    _, (as_recorded,) = inspector.score([wav, tif, plc])
    _, (hotter_lug,) = inspector.score([wav, hotter, plc])
    assert as_recorded.label == hotter_lug.label == "electrical_overheating"
    assert hotter_lug.probabilities["electrical_overheating"] > as_recorded.probabilities["electrical_overheating"]


@pytest.fixture(scope="module")
def cooling_fleet(tmp_path_factory) -> tuple[Path, list[tuple[Path, Path, Path]]]:
    """Randomised machines of the training domain (a seed no model was trained on), cooling failures
    past moderate severity: per case the faulty frame and two healthy frames of the same machine at
    the same load and ambient (landing-zone names), and the fleet's assets.json."""
    from dataclasses import replace

    from linewatch.simulator.domain import DOMAINS, DomainRenderer, domain_registry_json
    from models.data.domain_data import domain_world

    fleet, _, specs = domain_world("train", 12, 4321, 30)
    renderer = DomainRenderer(fleet, 4321)
    root = tmp_path_factory.mktemp("cooling")
    (root / "assets.json").write_text(json.dumps(domain_registry_json(fleet, 4321, DOMAINS["train"])))
    cases = []
    for k, s in enumerate(x for x in specs if x.fault == "cooling_failure" and x.severity >= 0.6):
        healthy = [replace(s, index=s.index + off, fault="normal", physical_fault="normal", severity=0.0, variant="")
                   for off in (5_000_000, 6_000_000)]
        paths = [root / f"{s.asset_id}-20261129T{hh}0000{k:03d}.tiff" for hh in ("14", "13", "12")]
        for path, spec in zip(paths, (s, *healthy), strict=True):
            tifffile.imwrite(path, renderer.render(spec, ("thermal",)).frame)
        cases.append((paths[0], paths[1], paths[2]))
    return root, cases


def test_a_healthy_frame_of_the_machine_lets_thermal_tell_a_cooling_failure(cooling_fleet) -> None:
    """Thermal reads a frame against the machine's healthy frame when ``--healthy-thermal`` gives
    one: one frame cannot tell a cooling failure from a machine that runs hot anyway, the
    difference from its healthy self can (bench/bench_thermal_limits.py)."""
    root, cases = cooling_fleet
    assert len(cases) >= 8
    inspector = Inspector(assets=load_assets(root / "assets.json"))
    alone = [inspector.score([faulty])[0][0] for faulty, _, _ in cases]
    against = [inspector.score([faulty], healthy_thermal=[ref])[0][0] for faulty, ref, _ in cases]
    healthy = [inspector.score([other], healthy_thermal=[ref])[0][0] for _, ref, other in cases]
    assert all(r.error is None for r in alone + against + healthy)
    assert [r.label for r in against] == ["cooling_failure"] * len(cases), [r.probabilities for r in against]
    assert [r.label for r in healthy] == ["normal"] * len(cases), [r.probabilities for r in healthy]
    found_alone = sum(r.label == "cooling_failure" for r in alone)
    assert found_alone < len(cases)  # else this fleet shows nothing a reference adds
    assert np.mean([r.probabilities["cooling_failure"] for r in against]) > \
        np.mean([r.probabilities["cooling_failure"] for r in alone])


def test_a_motor_warmer_at_its_fan_end_is_not_called_healthy(cooling_fleet) -> None:
    """A frame read through given boxes whose motor body is warmer at its fan end than at its drive
    end rules ``normal`` out (models.ruled_out): thermal names a fault and says why; the healthy frames
    of the same machines are all warmer towards the drive end and are read as before."""
    from models.inspect.frame_files import read_frame
    from pipeline.features.body_axial import MID_AXIAL_STAT
    from pipeline.features.messages import thermal_message_any_unit

    root, cases = cooling_fleet
    assets = load_assets(root / "assets.json")
    inspector = Inspector(assets=assets)

    def mid(path: Path) -> float:
        aid = path.name.split("-2026")[0]
        msg = thermal_message_any_unit(aid, assets[aid].asset_type, 0, read_frame(path), assets[aid], warnings=[])
        assert msg.stats["regions_registered"] == msg.stats["regions_proposed"] == 0.0
        return msg.stats[MID_AXIAL_STAT]

    reversed_ = [faulty for faulty, _, _ in cases if mid(faulty) < 0]
    assert reversed_, "no cooling failure of this fleet turned the gradient round"
    for faulty in reversed_:
        r = inspector.score([faulty])[0][0]
        assert r.ruled_out == ["normal"] and r.probabilities["normal"] == 0.0, r.probabilities
        assert r.label == "cooling_failure", r.probabilities
        assert any("warmer towards its fan end" in w for w in r.warnings), r.warnings
    for _, ref, other in cases:
        assert mid(ref) > 0 and mid(other) > 0
        r = inspector.score([other])[0][0]
        assert r.ruled_out == [] and not any("fan end" in w for w in r.warnings)


def test_without_regions_a_motor_clearly_warmer_at_its_fan_end_is_called_a_cooling_failure(cooling_fleet, tmp_path) -> None:
    """Without ``regions`` the boxes are proposed and thermal names no fault there, but where the drive end
    is known (``fan_side`` declared) a motor body clearly warmer at its fan end is named a cooling failure
    (models.ruled_out.fan_end_warmer, models.withheld_classes.STATS_RELEASE); the same machines' healthy
    frames are not ruled on and keep cooling failure withheld."""
    from models.inspect.frame_files import read_frame
    from models.ruled_out import FITTED_FAN_END_WARMER_RATIO, FITTED_MIN_BODY_RISE_K
    from pipeline.features.body_axial import MID_AXIAL_STAT
    from pipeline.features.messages import thermal_message_any_unit
    from pipeline.features.thermal_fit import PROPOSED_ENDS_KNOWN_STAT
    from pipeline.features.thermal_regions import THERMAL_VECTOR_NAMES

    root, cases = cooling_fleet
    registry = json.loads((root / "assets.json").read_text())
    for entry in registry["assets"]:
        entry.pop("regions", None)
    declared = {e["asset_id"] for e in registry["assets"] if e.get("fan_side") in ("left", "right")}
    cases = [c for c in cases if c[0].name.split("-2026")[0] in declared]
    (tmp_path / "assets.json").write_text(json.dumps(registry))
    assets = load_assets(tmp_path / "assets.json")
    inspector = Inspector(assets=assets)
    rise = THERMAL_VECTOR_NAMES.index("motor_body.mean_rise")

    def reading(path: Path) -> tuple[float, float]:
        """(the body's drive end minus fan end over its rise + 2 K, its rise)"""
        aid = path.name.split("-2026")[0]
        msg = thermal_message_any_unit(aid, assets[aid].asset_type, 0, read_frame(path), assets[aid], warnings=[])
        assert msg.stats["regions_proposed"] == 1.0 and msg.stats[PROPOSED_ENDS_KNOWN_STAT] == 1.0
        return msg.stats[MID_AXIAL_STAT] / (abs(float(msg.vector[rise])) + 2.0), float(msg.vector[rise])

    readings = {faulty: reading(faulty) for faulty, _, _ in cases}
    reversed_ = [f for f, (ratio, body_rise) in readings.items()
                 if ratio < FITTED_FAN_END_WARMER_RATIO and body_rise >= FITTED_MIN_BODY_RISE_K]
    assert reversed_, "no cooling failure of this fleet turned the gradient round clearly"
    for faulty in reversed_:
        r = inspector.score([faulty])[0][0]
        assert r.ruled_out == ["normal"] and r.label == "cooling_failure", r.probabilities
        assert "cooling_failure" not in r.withheld and "bearing_wear" in r.withheld
        assert any("fan_side in assets.json, or the proposed boxes" in w for w in r.warnings), r.warnings
    for _, ref, other in cases:
        for healthy in (ref, other):
            assert reading(healthy)[0] > 0
            r = inspector.score([healthy])[0][0]
            assert r.ruled_out == [] and "cooling_failure" in r.withheld, r.probabilities


def test_a_healthy_frame_from_another_camera_position_is_read_in_its_own_boxes(cooling_fleet, tmp_path) -> None:
    """A reference taken by another camera (twice the resolution, float °C, the machine shifted in
    the frame) gives the same reading: each reference is read in the region boxes fitted to it."""
    root, cases = cooling_fleet
    faulty, ref, _ = cases[0]
    frame_c = tifffile.imread(ref).astype(np.float32) / 100.0 - 273.15
    big = np.kron(frame_c, np.ones((2, 2), np.float32))
    moved = np.roll(big, (6, -10), axis=(0, 1))
    other = tmp_path / ref.name
    tifffile.imwrite(other, moved)
    inspector = Inspector(assets=load_assets(root / "assets.json"))
    same, _ = inspector.score([faulty], healthy_thermal=[ref])
    elsewhere, _ = inspector.score([faulty], healthy_thermal=[other])
    assert elsewhere[0].label == same[0].label == "cooling_failure"
    assert abs(elsewhere[0].probabilities["cooling_failure"] - same[0].probabilities["cooling_failure"]) < 0.1


def test_bearing_boxes_below_the_measurement_spot_withhold_bearing_wear(plant, tmp_path) -> None:
    """The pump's worn bearing seen by a camera of an eighth the resolution (20 x 15, the mean of 8 x 8
    blocks; the regions stay in the assets.json's 160 x 120 pixels, where the bearing boxes are 12-13 pixels
    wide): its bearing boxes are under 3 pixels wide, narrower than a thermal camera's measurement spot, so
    thermal withholds bearing wear and says why, in ``inspect`` and in the live job's message; at the
    recorded resolution the same frame names it, with no such note."""
    from pipeline.features.measurement_spot import BEARING_BELOW_SPOT_STAT
    from pipeline.features.messages import thermal_features_message
    from pipeline.features.thermal_regions import scaled_regions

    root, cases = plant
    tif = cases["bearing_wear"][1]
    frame_ck = tifffile.imread(tif)
    coarse_ck = frame_ck.reshape(15, 8, 20, 8).mean(axis=(1, 3)).round().astype(np.uint16)
    coarse = tmp_path / tif.name
    tifffile.imwrite(coarse, coarse_ck)
    inspector = Inspector(assets=load_assets(root / "assets.json"))
    (full,), _ = inspector.score([tif])
    (small,), _ = inspector.score([coarse])
    assert full.label == "bearing_wear" and "bearing_wear" not in full.withheld, full.probabilities
    assert not any("measurement" in w for w in full.warnings), full.warnings
    assert small.error is None and "bearing_wear" in small.withheld and small.probabilities["bearing_wear"] == 0.0
    notes = [w for w in small.warnings if "narrower than the 3 x 3 pixels a thermal camera needs" in w]
    assert len(notes) == 1 and "thermal withholds bearing wear" in notes[0], small.warnings

    profile = inspector.profile("PMP-01", [])
    for frame, flagged in ((frame_ck, 0.0), (coarse_ck, 1.0)):
        boxes = scaled_regions(profile, frame.shape)
        msg = thermal_features_message("PMP-01", profile.asset_type, 0, frame, regions=boxes, asset=profile)
        assert msg.stats[BEARING_BELOW_SPOT_STAT] == flagged


def test_cli_healthy_thermal(cooling_fleet) -> None:
    root, cases = cooling_fleet
    faulty, ref, _ = cases[0]
    out = CliRunner().invoke(app, ["inspect", str(faulty), "--assets", str(root / "assets.json"),
                                   "--healthy-thermal", str(ref), "--json"])
    assert out.exit_code == 0, out.output
    records = json.loads(out.stdout)
    assert records[0]["class"] == "cooling_failure", records[0]


#: A historian's export of the same tags: its own column names and units (canonical → (header, to its unit)).
HISTORIAN = {"motor_current_a": ("Motor Current (A)", lambda v: v), "speed_rpm": ("Shaft Speed [Hz]", lambda v: v / 60.0),
             "bearing_temp_c": ("DE_BRG_TEMP_F", lambda v: v * 9 / 5 + 32),
             "winding_temp_c": ("Stator Winding Temperature (K)", lambda v: v + 273.15),
             "vibration_rms_mm_s": ("VibVelocity [in/s]", lambda v: v / 25.4),
             "pressure_bar": ("Discharge Pressure psi", lambda v: v / 0.0689476),
             "run_state": ("Running", lambda v: "RUNNING" if v > 0.5 else "STOPPED")}


def _long_rows(plc: Path) -> list[tuple[str, str, str, float]]:
    """The contract file's rows; a value of ``Bad`` quality is left out (a historian export without
    a quality column leaves such a cell empty)."""
    rows = []
    for line in plc.read_text().splitlines()[1:]:
        ts, tag, value, quality, _ = line.split(",")
        asset, _, name = tag.rpartition(".")
        if quality != "Bad":
            rows.append((ts, asset, name, float(value)))
    return rows


@pytest.mark.parametrize("fault", ["imbalance", "cavitation"])
def test_a_historian_export_with_its_own_tag_names_and_units_reads_like_the_contract_file(fault, plant, tmp_path) -> None:
    """The PLC window of a fault the PLC model sees, exported as a historian writes it (wide: other
    column names, °F / K / Hz / in/s / psi, run state as a word, plus an alarm, a setpoint and an
    unrelated column; long: the bearing temperature under another tag name in °F): the same
    probabilities as the contract's file (within 0.02: the export has no quality column, so a Bad
    value is an empty cell and Uncertain ones read as Good: PLC v5 puts the two 0.012 apart, v4
    under 0.01), and the mapping reported."""
    root, cases = plant
    plc = cases[fault][2]
    rows = _long_rows(plc)
    stamps = sorted({r[0] for r in rows})
    table = {(ts, name): v for ts, _, name, v in rows}
    header = ["Time", *(h for h, _ in HISTORIAN.values()), "Bearing Temp High Alarm", "Speed Setpoint (rpm)", "Oil Level (%)"]
    lines = [",".join(header)]
    for ts in stamps:
        cells = [ts]
        for tag, (_, to_theirs) in HISTORIAN.items():
            v = table.get((ts, tag))
            cells.append("" if v is None else (to_theirs(v) if tag == "run_state" else f"{to_theirs(v):.6f}"))
        lines.append(",".join([*cells, "0", "3000", "87"]))
    wide = tmp_path / f"plc-PMP-01-{STAMP}.csv"
    wide.write_text("\n".join(lines) + "\n")
    long = tmp_path / f"plc-PMP-01-{STAMP}.jsonl"
    long.write_text("".join(json.dumps({"timestamp": ts, "tag": f"{a}.BRG_TEMP" if n == "bearing_temp_c" else f"{a}.{n}",
                                        "value": v * 9 / 5 + 32 if n == "bearing_temp_c" else v, "quality": "Good",
                                        "unit": "degF" if n == "bearing_temp_c" else ""}) + "\n" for ts, a, n, v in rows))
    inspector = Inspector(assets=load_assets(root / "assets.json"))
    (reference,), _ = inspector.score([plc])
    (from_wide,), _ = inspector.score([wide])
    (from_long,), _ = inspector.score([long])
    for rec in (from_wide, from_long):
        assert rec.error is None and rec.asset_id == "PMP-01" and rec.windows == reference.windows
        assert rec.label == reference.label == fault
        for c, p in reference.probabilities.items():
            assert abs(rec.probabilities[c] - p) < 0.02, (c, rec.probabilities, reference.probabilities)
    notes = " ".join(from_wide.warnings)
    assert "'DE_BRG_TEMP_F' → bearing_temp_c (°F → degC)" in notes and "'Shaft Speed [Hz]' → speed_rpm (Hz → rpm)" in notes
    read = next(w for w in from_wide.warnings if w.startswith("columns read as PLC tags"))
    assert "Alarm" not in read and "Setpoint" not in read and "Oil" not in read
    assert ("columns that name no PLC tag (not read): 'Bearing Temp High Alarm', 'Speed Setpoint (rpm)', "
            "'Oil Level (%)'") in notes
    assert "'BRG_TEMP' → bearing_temp_c (°F → degC)" in " ".join(from_long.warnings)


#: The same tags as a control engineer names them in a PLC (asset prefix, abbreviations) and as a SCADA
#: historian writes tag paths (Ignition: ``[provider]folders/tag``), each with its unit (to theirs).
PLC_ABBREVIATIONS = {"motor_current_a": "PMP01_MTR_CUR_A", "speed_rpm": "PMP01_SPD_RPM",
                     "bearing_temp_c": "PMP01_BRG_DE_TEMP_DEGC", "winding_temp_c": "PMP01_WDG_TEMP_DEGC",
                     "vibration_rms_mm_s": "PMP01_VIB_VEL_MMS", "pressure_bar": "PMP01_DISCH_PRESS_BAR",
                     "run_state": "PMP01_RUNNING"}
TAG_PATHS = {"motor_current_a": ("[default]Site/Line1/PMP-01/Motor/Current", lambda v: v),
             "speed_rpm": ("[default]Site/Line1/PMP-01/Motor/Speed", lambda v: v),
             "bearing_temp_c": ("[default]Site/Line1/PMP-01/Motor/DEBearingTemp", lambda v: v),
             "winding_temp_c": ("[default]Site/Line1/PMP-01/Motor/WindingTemp", lambda v: v),
             "vibration_rms_mm_s": ("[default]Site/Line1/PMP-01/Motor/Vibration (in/s pk)",
                                    lambda v: v * math.sqrt(2) / 25.4),
             "pressure_bar": ("[default]Site/Line1/PMP-01/Process/DischargePressure", lambda v: v),
             "run_state": ("[default]Site/Line1/PMP-01/Motor/Running", lambda v: v)}


def test_historian_exports_as_aveva_and_ignition_write_them_read_like_the_contract_file(plant, tmp_path) -> None:
    """The imbalanced pump's window exported as an AVEVA (Wonderware) Historian query writes it
    (long: ``DateTime,TagName,Value,Quality``, the PLC's own abbreviated tag names with the asset
    prefix) and as an Ignition tag-history export (wide: ``t_stamp`` in epoch ms, a tag path per
    column, the vibration as a peak in in/s): the same probabilities as the contract's file (within
    0.02, as the exports above). Before, the first was read as a wide file without a tag column and
    refused, the second had every tag but the pressure left out (found by a fleet written blind,
    ``bench/bench_blind_fleet.py``)."""
    from datetime import datetime

    root, cases = plant
    plc = cases["imbalance"][2]
    rows = _long_rows(plc)
    aveva = tmp_path / f"plc-PMP-01-{STAMP}.csv"
    aveva.write_text("DateTime,TagName,Value,Quality\n" + "".join(
        f"{ts.replace('T', ' ').rstrip('Z')},{PLC_ABBREVIATIONS[n]},{v:.6f},Good\n" for ts, _, n, v in rows))
    table = {(ts, n): v for ts, _, n, v in rows}
    lines = [",".join(["t_stamp", *(h for h, _ in TAG_PATHS.values())])]
    for ts in sorted({r[0] for r in rows}):
        ms = round(datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp() * 1000)
        cells = [str(ms)] + ["" if (v := table.get((ts, tag))) is None else f"{to_theirs(v):.6f}"
                             for tag, (_, to_theirs) in TAG_PATHS.items()]
        lines.append(",".join(cells))
    ignition = tmp_path / f"PMP-01_trend_{STAMP}.csv"
    ignition.write_text("\n".join(lines) + "\n")
    inspector = Inspector(assets=load_assets(root / "assets.json"))
    (reference,), _ = inspector.score([plc])
    for path in (aveva, ignition):
        (rec,), _ = inspector.score([path])
        assert rec.error is None and rec.asset_id == "PMP-01" and rec.windows == reference.windows, rec
        assert rec.label == reference.label == "imbalance" and not rec.withheld, rec
        for c, p in reference.probabilities.items():
            assert abs(rec.probabilities[c] - p) < 0.02, (path.name, c, rec.probabilities, reference.probabilities)
    notes = " ".join(rec.warnings)
    assert ("'[default]Site/Line1/PMP-01/Motor/Vibration (in/s pk)' → vibration_rms_mm_s (in/s peak → mm/s)"
            in notes), notes


#: A historian's deadband per tag: a value is stored only when it moved this far from the last stored one.
def _aveva_line(ts: str, name: str) -> str:
    """An AVEVA-style long export's line of contract tag ``name`` at ``ts``, its value left as ``{:.6f}``."""
    return f"{ts.replace('T', ' ').rstrip('Z')},{PLC_ABBREVIATIONS[name]},{{:.6f}},Good"


DEADBAND = {"motor_current_a": 0.5, "speed_rpm": 5.0, "bearing_temp_c": 0.5, "winding_temp_c": 0.5,
            "vibration_rms_mm_s": 0.1, "pressure_bar": 0.02, "run_state": 0.5}


@pytest.mark.parametrize("fault", ["normal", "imbalance", "cavitation"])
def test_a_historian_export_that_stores_values_on_change_reads_as_the_historian_retrieves_it(
        fault, plant, tmp_path) -> None:
    """AVEVA-style delta storage (a value stored only when it moved past the tag's deadband, so a
    steady temperature appears once in minutes): each tag's value holds until the next one, as the
    historian's own stair-step retrieval returns it. The sparse export reads as that retrieval written
    out in full, every tag at every tick (the same class, probabilities within 0.03: a value missing for
    one tick is not filled, ``HOLD_AFTER_TICKS``, so a tag that changes every other tick weighs its
    values by sample, not by time; measured 0.022 at most over the three). Before, a window
    without a sample of a tag read it as missing: the fleet written blind (``bench_blind_fleet.py``)
    had 32 % PLC false alarms on such exports. (What the deadband itself loses, the noise within it,
    is the next test's.)"""
    root, cases = plant
    rows = _long_rows(cases[fault][2])
    stored: dict[str, float] = {}
    sparse, full = ["DateTime,TagName,Value,Quality"], ["DateTime,TagName,Value,Quality"]
    for ts, _, name, v in rows:
        line = _aveva_line(ts, name)
        if name not in stored or abs(v - stored[name]) > DEADBAND[name]:
            stored[name] = v
            sparse.append(line.format(v))
        full.append(line.format(stored[name]))
    assert len(sparse) < 0.6 * len(full)  # the export is sparse
    delta = tmp_path / "delta" / f"plc-PMP-01-{STAMP}.csv"
    retrieved = tmp_path / "retrieved" / f"plc-PMP-01-{STAMP}.csv"
    for path, lines in ((delta, sparse), (retrieved, full)):
        path.parent.mkdir()
        path.write_text("\n".join(lines) + "\n")
    inspector = Inspector(assets=load_assets(root / "assets.json"))
    (reference,), _ = inspector.score([retrieved])
    (rec,), _ = inspector.score([delta])
    assert rec.error is None and rec.windows == reference.windows and rec.withheld == reference.withheld == [], rec
    assert rec.label == reference.label, (rec.probabilities, reference.probabilities)
    for c, p in reference.probabilities.items():
        assert abs(rec.probabilities[c] - p) < 0.03, (c, rec.probabilities, reference.probabilities)
    assert any(w.startswith("values held between the export's samples") for w in rec.warnings), rec.warnings
    assert not any(w.startswith("values held") for w in reference.warnings), reference.warnings


@pytest.mark.parametrize("fault", ["normal", "imbalance", "cavitation"])
def test_temperatures_a_historian_stores_on_a_deadband_read_like_the_measured_ones(fault, plant, tmp_path) -> None:
    """A temperature's standard deviation over a window is its RTD's noise, which a historian that
    stores a value only when it moves 1 K rounds away (about 0, where the PLC model learnt one RTD's
    0.12-0.21 K). The window with its bearing and winding temperatures so stored (held between changes,
    every other tag as measured) reads as the measured one: the same class, probabilities within 0.05
    (measured 0.010 at most over the three), and the record says why. Before
    (models.missing_tags.NOISE_ONLY_INPUTS, NOISE_INPUTS) each of the three differed by more than 0.05
    (the normal window's by 0.07, the cavitation window's by 0.36) and the cavitation window read as
    normal."""
    root, cases = plant
    rows = _long_rows(cases[fault][2])
    stored: dict[str, float] = {}
    measured, held = ["DateTime,TagName,Value,Quality"], ["DateTime,TagName,Value,Quality"]
    for ts, _, name, v in rows:
        line = _aveva_line(ts, name)
        measured.append(line.format(v))
        if name in ("bearing_temp_c", "winding_temp_c"):
            if name not in stored or abs(v - stored[name]) >= 1.0:
                stored[name] = v
            v = stored[name]
        held.append(line.format(v))
    files = {}
    for name, lines in (("measured", measured), ("held", held)):
        files[name] = tmp_path / name / f"plc-PMP-01-{STAMP}.csv"
        files[name].parent.mkdir()
        files[name].write_text("\n".join(lines) + "\n")
    inspector = Inspector(assets=load_assets(root / "assets.json"))
    (reference,), _ = inspector.score([files["measured"]])
    (rec,), _ = inspector.score([files["held"]])
    assert rec.error is None and rec.windows == reference.windows and rec.withheld == reference.withheld == [], rec
    assert rec.label == reference.label, (rec.probabilities, reference.probabilities)
    for c, p in reference.probabilities.items():
        assert abs(rec.probabilities[c] - p) < 0.05, (c, rec.probabilities, reference.probabilities)
    assert not {"temp.bearing_std", "temp.winding_std"} & set(rec.outside_training)
    note = "the bearing temperature and winding temperature hold steadier than any RTD the PLC model learnt from"
    assert any(w.startswith(note) for w in rec.warnings), rec.warnings
    assert not any("steadier than any RTD" in w for w in reference.warnings), reference.warnings


#: The plant pump's tags as an OSIsoft PI export names them (a dotted hierarchy under the machine id
#: without its dash), in German (a WinCC export) and as a US PLC abbreviates them (vibration in in/s peak
#: as ``INS_PK``), each with its conversion from the contract's unit.
PI_TAGS = {"motor_current_a": ("PMP01.AMPS", lambda v: v), "speed_rpm": ("PMP01.SPEED", lambda v: v),
           "bearing_temp_c": ("PMP01.BRG.DE.TEMP", lambda v: v), "winding_temp_c": ("PMP01.WDG.TEMP", lambda v: v),
           "vibration_rms_mm_s": ("PMP01.VIB.VEL", lambda v: v), "pressure_bar": ("PMP01.DISCH.PRESS", lambda v: v),
           "run_state": ("PMP01.RUN.STATUS", lambda v: v)}
GERMAN_COLUMNS = {"motor_current_a": "Motorstrom [A]", "speed_rpm": "Drehzahl [U/min]",
                  "bearing_temp_c": "Lagertemperatur AS [°C]", "winding_temp_c": "Wicklungstemperatur [°C]",
                  "vibration_rms_mm_s": "Schwinggeschwindigkeit [mm/s]", "pressure_bar": "Förderdruck [bar]",
                  "run_state": "Betrieb"}
US_COLUMNS = {"motor_current_a": ("PMP01_MTR_CUR_A", lambda v: v), "speed_rpm": ("PMP01_SPD_RPM", lambda v: v),
              "bearing_temp_c": ("PMP01_BRG_DE_TEMP_DEGF", lambda v: v * 9 / 5 + 32),
              "winding_temp_c": ("PMP01_WDG_TEMP_DEGF", lambda v: v * 9 / 5 + 32),
              "vibration_rms_mm_s": ("PMP01_VIB_INS_PK", lambda v: v * math.sqrt(2) / 25.4),
              "pressure_bar": ("PMP01_DISCH_PRESS_PSI", lambda v: v / 0.0689476), "run_state": ("PMP01_RUN", lambda v: v)}


def test_pi_german_us_and_json_lines_exports_read_like_the_contract_file(plant, tmp_path) -> None:
    """The imbalanced pump's window as four more historians write it: an OSIsoft PI export
    (``Tag,Timestamp,Value``, ``03-Nov-2026 09:04:40.100`` times, dotted tag hierarchies under
    ``PMP01``, a suction pressure beside the discharge one), a German export (``;``, decimal commas,
    ``Motorstrom``, ``Wicklungstemperatur``, ``Schwinggeschwindigkeit``, ``Förderdruck``, ``U/min``, a
    ``Saugdruck``), a US PLC's columns with the vibration as ``VIB_INS_PK`` (in/s peak) and one JSON
    object per time with the machine under ``asset`` in a file whose name names none. Each gives the
    contract file's probabilities (within 0.02, as the exports above). Before, the first and second were
    refused ("no decodable PLC row", "no column names a PLC tag"), the third read its vibration 25x
    too low, the fourth was refused (found by a second fleet written blind)."""
    from datetime import datetime

    root, cases = plant
    plc = cases["imbalance"][2]
    rows = _long_rows(plc)
    table = {(ts, n): v for ts, _, n, v in rows}
    stamps = sorted({r[0] for r in rows})
    times = {ts: datetime.fromisoformat(ts.replace("Z", "+00:00")) for ts in stamps}

    def pi_time(ts: str) -> str:
        return times[ts].strftime("%d-%b-%Y %H:%M:%S.") + f"{times[ts].microsecond // 1000:03d}"

    pi = tmp_path / f"plc-PMP-01-{STAMP}.csv"
    pi.write_text("Tag,Timestamp,Value\n" + "".join(
        f"{PI_TAGS[n][0]},{pi_time(ts)},{PI_TAGS[n][1](v):.6f}\n" for ts, _, n, v in rows)
        + "".join(f"PMP01.SUCT.PRESS,{pi_time(ts)},0.4\n" for ts in stamps))
    german = tmp_path / f"PMP-01 Export {STAMP}.csv"
    lines = [";".join(["Zeit", "Saugdruck [bar]", *GERMAN_COLUMNS.values()])]
    for ts in stamps:
        cells = [times[ts].strftime("%d.%m.%Y %H:%M:%S,") + f"{times[ts].microsecond // 1000:03d}", "0,4"]
        cells += ["" if (v := table.get((ts, tag))) is None else f"{v:.6f}".replace(".", ",") for tag in GERMAN_COLUMNS]
        lines.append(";".join(cells))
    german.write_text("\n".join(lines) + "\n", encoding="utf-8")
    us = tmp_path / f"plc-PMP-01-{STAMP}.csv".replace(".csv", "_us.csv")
    lines = [",".join(["TIME", *(h for h, _ in US_COLUMNS.values())])]
    for ts in stamps:
        lines.append(",".join([times[ts].strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]] + [
            "" if (v := table.get((ts, tag))) is None else f"{to_theirs(v):.6f}" for tag, (_, to_theirs) in US_COLUMNS.items()]))
    us.write_text("\n".join(lines) + "\n")
    jsonl = tmp_path / "historian-export.jsonl"
    jsonl.write_text("".join(json.dumps({"timestamp": ts, "asset": "PMP-01", **{
        h: to_theirs(table[(ts, tag)]) for tag, (h, to_theirs) in HISTORIAN.items() if (ts, tag) in table}}) + "\n"
        for ts in stamps))
    inspector = Inspector(assets=load_assets(root / "assets.json"))
    (reference,), _ = inspector.score([plc])
    for path in (pi, german, us, jsonl):
        (rec,), _ = inspector.score([path])
        assert rec.error is None and rec.asset_id == "PMP-01" and rec.windows == reference.windows, (path.name, rec)
        assert rec.label == reference.label == "imbalance" and not rec.withheld, (path.name, rec)
        for c, p in reference.probabilities.items():
            assert abs(rec.probabilities[c] - p) < 0.02, (path.name, c, rec.probabilities, reference.probabilities)
        notes = " ".join(rec.warnings)
        assert "not in assets.json" not in notes and "SUCT" not in notes.split("tags read as PLC tags")[-1], notes
    (rec,), _ = inspector.score([us])
    assert "'PMP01_VIB_INS_PK' → vibration_rms_mm_s (in/s peak → mm/s)" in " ".join(rec.warnings)


def test_a_plc_file_whose_columns_name_no_tag_says_what_to_do(tmp_path) -> None:
    bad = tmp_path / f"plc-PMP-01-{STAMP}.csv"
    bad.write_text("Time,Oil Level (%),Vibration (g)\n2026-11-29T14:00:00Z,80,0.3\n")
    (rec,), _ = Inspector(assets={}).score([bad])
    assert rec.error is not None and "rename the columns" in rec.error
    assert "'Vibration (g)' is vibration_rms_mm_s in 'g', which cannot be converted to mm/s" in rec.error


def test_a_european_historian_export_reads_like_the_contract_file(plant, tmp_path) -> None:
    """Semicolons, decimal commas, ``dd.mm.yyyy hh:mm:ss,fff`` times under a ``Zeit`` header,
    pressure in kPa, a suction pressure before the discharge one and a pressure in Pa (neither
    read), an abbreviated speed column: the same probabilities as the contract's file (within 0.02,
    as the export above)."""
    from datetime import datetime

    root, cases = plant
    plc = cases["imbalance"][2]
    rows = _long_rows(plc)
    table = {(ts, name): v for ts, _, name, v in rows}
    header = ["Zeit", "Saugdruck Suction Pressure (bar)", "Static Pressure (Pa)", "Motor Current (A)",
              "SHAFT_SPD_RPM", "DE Bearing Temp (°C)", "Winding Temp (°C)", "Vib Velocity (mm/s)",
              "Disch Press [kPa]", "Running"]
    tags = ["motor_current_a", "speed_rpm", "bearing_temp_c", "winding_temp_c", "vibration_rms_mm_s", "pressure_bar"]
    lines = [";".join(header)]
    for ts in sorted({r[0] for r in rows}):
        t = datetime.fromisoformat(ts.replace("Z", "+00:00"))
        cells = [t.strftime("%d.%m.%Y %H:%M:%S,") + f"{t.microsecond // 1000:03d}", "1,2", "99000"]
        for tag in tags:
            v = table.get((ts, tag))
            cells.append("" if v is None else f"{v * 100.0 if tag == 'pressure_bar' else v:.6f}".replace(".", ","))
        v = table.get((ts, "run_state"))
        cells.append("" if v is None else ("RUN" if v > 0.5 else "STOP"))
        lines.append(";".join(cells))
    eu = tmp_path / f"plc-PMP-01-{STAMP}.csv"
    eu.write_text("\n".join(lines) + "\n", encoding="utf-8")
    inspector = Inspector(assets=load_assets(root / "assets.json"))
    (reference,), _ = inspector.score([plc])
    (rec,), _ = inspector.score([eu])
    assert rec.error is None and rec.windows == reference.windows and rec.label == reference.label == "imbalance"
    for c, p in reference.probabilities.items():
        assert abs(rec.probabilities[c] - p) < 0.02, (c, rec.probabilities, reference.probabilities)
    notes = " ".join(rec.warnings)
    assert "'Disch Press [kPa]' → pressure_bar (kPa → bar)" in notes
    assert "'Static Pressure (Pa)' is pressure_bar in 'Pa', which cannot be converted to bar" in notes
    assert "'Saugdruck Suction Pressure (bar)'" in notes.split("name no PLC tag")[1]


def test_a_plc_file_without_the_vibration_tag_withholds_imbalance(plant, tmp_path) -> None:
    """The PLC model names imbalance from the vibration: a historian export of the imbalanced
    pump's window without that column withholds the class (models.withheld_classes) instead of
    guessing from the other tags, and reads the absent tag as a healthy machine's; the same window
    with it names imbalance."""
    root, cases = plant
    rows = _long_rows(cases["imbalance"][2])
    table = {(ts, name): v for ts, _, name, v in rows}
    tags = ("motor_current_a", "speed_rpm", "bearing_temp_c", "winding_temp_c", "pressure_bar", "run_state")
    lines = [",".join(["timestamp", *tags])]
    for ts in sorted({r[0] for r in rows}):
        lines.append(",".join([ts, *("" if (v := table.get((ts, t))) is None else f"{v:.6f}" for t in tags)]))
    no_vib = tmp_path / f"plc-PMP-01-{STAMP}.csv"
    no_vib.write_text("\n".join(lines) + "\n")
    inspector = Inspector(assets=load_assets(root / "assets.json"))
    (with_vib,), _ = inspector.score([cases["imbalance"][2]])
    (rec,), _ = inspector.score([no_vib])
    assert with_vib.label == "imbalance" and with_vib.withheld == []
    assert rec.error is None and rec.withheld == ["imbalance"]
    assert rec.probabilities["imbalance"] == 0.0 and rec.label != "imbalance"
    # no machine the model learnt from lacked a tag: it reads the vibration as a healthy machine's
    # (models.missing_tags), so the absent tag is no input outside its training, and the record says so
    assert "missing.vibration" not in rec.to_json()["outside_training"] and not rec.extrapolating
    assert any(w.startswith("the export has no vibration tag: the PLC model reads it as a healthy machine's")
               and w.endswith("it withholds imbalance") for w in rec.warnings), rec.warnings


def _with_vibration_scaled(src: Path, dst: Path, factor: float) -> Path:
    """The contract file with every vibration reading multiplied by ``factor`` (a machine that runs
    rougher, e.g. a piston compressor, with the same process)."""
    lines = src.read_text().splitlines()
    out = [lines[0]]
    for line in lines[1:]:
        ts, tag, value, quality, unit = line.split(",")
        if tag.endswith(".vibration_rms_mm_s"):
            value = f"{float(value) * factor:.4f}"
        out.append(",".join([ts, tag, value, quality, unit]))
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text("\n".join(out) + "\n")
    return dst


def _plant_pump_at(inspector: Inspector, cases: dict[str, list[Path]], tmp_path: Path, normal_mm_s: float
                   ) -> tuple[dict[str, Path], Path]:
    """The plant pump's healthy and imbalanced PLC files, and a commissioning copy of the healthy one, with
    every vibration reading scaled so that its healthy level is ``normal_mm_s``."""
    from pipeline.features.plc_window import plc_feature_names

    _, windows = inspector._plc_windows(cases["normal"][2], None, [])
    vib = float(np.median([w.values[plc_feature_names().index("vibration_rms_mm_s.mean")] for w in windows]))
    factor = normal_mm_s / vib
    files = {name: _with_vibration_scaled(cases[name][2], tmp_path / name / cases[name][2].name, factor)
             for name in ("normal", "imbalance")}
    return files, _with_vibration_scaled(cases["normal"][2], tmp_path / "commissioning" / cases["normal"][2].name, factor)


def test_a_healthy_plc_export_lets_the_plc_model_read_a_rough_machine_against_its_own_vibration(
        plant, tmp_path) -> None:
    """A machine that runs at 6 mm/s when healthy (a piston compressor, ISO 10816-6) is above every
    healthy machine the PLC model learnt from: read alone, its healthy window is called imbalanced and
    the warning says what to give. With a healthy export of it (``--healthy-plc``, or
    ``vibration_normal_mm_s`` in assets.json) the healthy window is normal and the same machine's
    imbalance is still named."""
    root, cases = plant
    inspector = Inspector(assets=load_assets(root / "assets.json"))
    rough, reference = _plant_pump_at(inspector, cases, tmp_path, 6.0)

    (alone,), _ = inspector.score([rough["normal"]])
    assert alone.label == "imbalance", alone.probabilities
    assert any("--healthy-plc" in w and "vibration_normal_mm_s" in w for w in alone.warnings), alone.warnings
    healthy, imbalanced = inspector.score([rough["normal"], rough["imbalance"]], healthy_plc=[reference])[0]
    assert healthy.label == "normal", healthy.probabilities
    assert not any("give its normal level" in w for w in healthy.warnings)
    assert any("read against the machine's normal 6.0 mm/s from its healthy export" in w for w in healthy.warnings)
    assert imbalanced.label == "imbalance", imbalanced.probabilities

    entries = json.loads((root / "assets.json").read_text())
    for entry in entries["assets"]:
        entry["vibration_normal_in_s"] = round(6.0 / 25.4, 4)  # a US report's unit
    declared = tmp_path / "assets_declared.json"
    declared.write_text(json.dumps(entries))
    result = CliRunner().invoke(app, ["inspect", str(rough["normal"]), str(rough["imbalance"]), "--assets",
                                      str(declared), "--json"])
    assert result.exit_code == 0, result.output
    records = json.loads(result.stdout.splitlines()[-1])
    assert [r["class"] for r in records] == ["normal", "imbalance"], records

    result = CliRunner().invoke(app, ["inspect", str(rough["normal"]), "--assets", str(root / "assets.json"),
                                      "--healthy-plc", str(reference), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout.splitlines()[-1])[0]["class"] == "normal"


def test_a_reciprocating_machine_s_plc_file_withholds_imbalance_until_its_level_is_known(plant, tmp_path) -> None:
    """The 6 mm/s machine again, and assets.json calls it reciprocating: read alone, PLC withholds
    imbalance (its healthy level reads as one) and says what to give; with a healthy export of it
    the class is back, the healthy window is normal and the imbalance is named."""
    root, cases = plant
    entries = json.loads((root / "assets.json").read_text())
    for entry in entries["assets"]:
        entry["reciprocating"] = True
    flagged = tmp_path / "assets_reciprocating.json"
    flagged.write_text(json.dumps(entries))
    inspector = Inspector(assets=load_assets(flagged))
    rough, reference = _plant_pump_at(inspector, cases, tmp_path, 6.0)

    (alone,), _ = inspector.score([rough["normal"]])
    assert alone.withheld == ["imbalance"] and alone.label == "normal", alone.probabilities
    assert any("reciprocating machine" in w and "--healthy-plc" in w for w in alone.warnings), alone.warnings
    healthy, imbalanced = inspector.score([rough["normal"], rough["imbalance"]], healthy_plc=[reference])[0]
    assert healthy.withheld == [] and healthy.label == "normal", healthy.probabilities
    assert imbalanced.withheld == [] and imbalanced.label == "imbalance", imbalanced.probabilities


def test_a_healthy_plc_export_lets_the_plc_model_read_a_smooth_machine_against_its_own_vibration(
        plant, tmp_path) -> None:
    """A machine that runs at 0.8 mm/s when healthy: its imbalance (the plant pump's, about 3.8 times its
    normal) reaches 3 mm/s, within the healthy levels of the machines the PLC model learnt from (up to
    3.2 mm/s), and read alone it is called normal. With a healthy export its normal is known, its level reads twice as high
    (``vibration_scale``'s cap) and the imbalance is named; its healthy window stays normal."""
    root, cases = plant
    inspector = Inspector(assets=load_assets(root / "assets.json"))
    smooth, reference = _plant_pump_at(inspector, cases, tmp_path, 0.8)

    healthy, imbalanced = inspector.score([smooth["normal"], smooth["imbalance"]])[0]
    assert healthy.label == "normal" and imbalanced.label == "normal", imbalanced.probabilities
    healthy, imbalanced = inspector.score([smooth["normal"], smooth["imbalance"]], healthy_plc=[reference])[0]
    assert healthy.label == "normal", healthy.probabilities
    assert imbalanced.label == "imbalance", imbalanced.probabilities
    assert any("normal 0.8 mm/s from its healthy export" in w and "reads x2.00" in w for w in imbalanced.warnings), \
        imbalanced.warnings


def test_a_healthy_plc_export_without_normal_running_is_not_used_and_says_why(plant, tmp_path) -> None:
    """An export of the machine standing still gives no level: the machine's PLC file is read as without it
    and says why and what to give. Before, the whole call stopped (exit code 2), every other file's result
    lost with it."""
    root, cases = plant
    stopped = tmp_path / "commissioning" / cases["normal"][2].name
    stopped.parent.mkdir(parents=True)
    lines = cases["normal"][2].read_text().splitlines()
    stopped.write_text("\n".join([lines[0]] + [",".join([*ln.split(",")[:2], "0", *ln.split(",")[3:]])
                                              if ".run_state," in ln else ln for ln in lines[1:]]) + "\n")
    inspector = Inspector(assets=load_assets(root / "assets.json"))
    (alone, frame), _ = inspector.score([cases["normal"][2], cases["normal"][1]])
    (rec, with_it), _ = inspector.score([cases["normal"][2], cases["normal"][1]], healthy_plc=[stopped])
    assert rec.error is None and rec.probabilities == alone.probabilities, rec
    assert with_it.error is None and with_it.probabilities == frame.probabilities
    notes = [w for w in rec.warnings if "was not used: it has no window of normal running" in w]
    assert len(notes) == 1 and "not_running" in notes[0] and "give an export of the machine in normal" in notes[0]


@pytest.mark.parametrize("lacking", [("vibration_rms_mm_s", "pressure_bar", "winding_temp_c"),
                                     ("vibration_rms_mm_s", "pressure_bar", "bearing_temp_c")])
def test_a_healthy_plc_export_without_the_tags_it_gives_levels_of_is_not_used_and_says_so(plant, tmp_path,
                                                                                          lacking) -> None:
    """A historian without a vibration, pressure or winding tag has nothing a healthy export could give
    (those are the levels it is read for): its export is not an error (before, the whole call was
    refused, the healthy recordings and frames with it: a fleet written blind, ``bench_blind_fleet.py``);
    the machine's PLC files are read as without it and say why. A winding without a bearing temperature
    gives no winding level either (a motor spindle's historian; before session 45 it was refused)."""
    root, cases = plant
    export = tmp_path / "commissioning" / cases["normal"][2].name
    export.parent.mkdir(parents=True)
    lines = cases["normal"][2].read_text().splitlines()
    export.write_text("\n".join([lines[0]] + [ln for ln in lines[1:] if not any(f".{t}," in ln for t in lacking)]) + "\n")
    inspector = Inspector(assets=load_assets(root / "assets.json"))
    (alone,), _ = inspector.score([cases["imbalance"][2]])
    (rec,), _ = inspector.score([cases["imbalance"][2]], healthy_plc=[export])
    assert rec.error is None and rec.label == alone.label and rec.probabilities == alone.probabilities, rec
    assert any("healthy PLC export (--healthy-plc) was not used" in w for w in rec.warnings), rec.warnings


def test_a_bearing_that_gives_no_fault_orders_says_what_to_give(plant, tmp_path) -> None:
    """A bearing designation linewatch does not know, or half a geometry, leaves audio without the
    bearing's fault orders (a blind comb): the audio record says so and what to give. Before, it was
    read without a word. A known designation or a full geometry gives no such warning."""
    root, cases = plant
    doc = json.loads((root / "assets.json").read_text())
    wav = cases["bearing_wear"][0]
    entry = {k: v for k, v in next(a for a in doc["assets"] if a["asset_id"] == "PMP-01").items()
             if k not in ("bearing", "bearing_orders", "bearing_frequencies_hz")}
    for bearing, noted in (({"designation": "NU 312 ECP"}, True), ({"n_balls": 9}, True), ("SKF 6205-2RS1", False),
                           ({"n_balls": 9, "ball_d_mm": 7.94, "pitch_d_mm": 39.04}, False)):
        path = tmp_path / "assets.json"
        path.write_text(json.dumps({**doc, "assets": [{**entry, "bearing": bearing}]}))
        read = Inspector(assets=load_assets(path)).score([wav])[0][0]
        notes = [w for w in read.warnings if "gave no fault orders" in w]
        assert bool(notes) == noted, (bearing, read.warnings)
        if noted:
            assert "n_balls, ball_d_mm, pitch_d_mm" in notes[0] and "blind comb" in notes[0], notes


def test_a_bearing_too_fast_for_the_envelope_spectrum_is_withheld_by_audio(plant, tmp_path) -> None:
    """The audio model reads the envelope spectrum up to 800 Hz. A motor spindle's 20-ball angular-contact
    bearing (2 x BSF 8.2 orders) at 7,000 rpm has its lowest fault line at 950 Hz: no defect can show
    there, so audio withholds bearing wear and says why; at the pump's own speed (a clip read at its
    speed in the sound) the same bearing's lines lie below 800 Hz and nothing is withheld."""
    root, cases = plant
    doc = json.loads((root / "assets.json").read_text())
    entry = {k: v for k, v in next(a for a in doc["assets"] if a["asset_id"] == "PMP-01").items()
             if k not in ("bearing", "bearing_orders", "bearing_frequencies_hz")}
    path = tmp_path / "assets.json"
    path.write_text(json.dumps({**doc, "assets": [{**entry, "bearing": {"n_balls": 20, "ball_d_mm": 7.938,
                                                                         "pitch_d_mm": 65.0, "contact_angle_deg": 15.0}}]}))
    inspector = Inspector(assets=load_assets(path))
    wav = cases["bearing_wear"][0]
    own = inspector.score([wav])[0][0]
    fast = inspector.score([wav], speeds_hz={"PMP-01": 7000.0 / 60.0})[0][0]
    note = "the bearing's lowest fault frequency"
    assert own.error is None and "bearing_wear" not in own.withheld and not any(note in w for w in own.warnings)
    assert fast.error is None and "bearing_wear" in fast.withheld and fast.probabilities["bearing_wear"] == 0.0
    assert any(note in w and "lies above the 800 Hz" in w for w in fast.warnings), fast.warnings


def test_a_measured_speed_is_where_audio_reads_the_machine(plant) -> None:
    """``--speed-rpm`` (a tachometer reading) sets the speed audio reads a clip at, before a PLC
    file's speed; without either the speed is searched in the sound. Each audio record says which."""
    root, cases = plant
    wav, _, plc = cases["bearing_wear"]
    inspector = Inspector(assets=load_assets(root / "assets.json"))
    alone = inspector.score([wav])[0][0]
    with_plc = next(r for r in inspector.score([wav, plc])[0] if r.modality == "audio")
    assert alone.speed_source == "estimated from the sound" and with_plc.speed_source == "the PLC file's speed"
    measured = with_plc.shaft_hz
    assert measured is not None and abs(alone.shaft_hz - measured) < 0.02 * measured  # the search finds it here
    slower = 0.9 * measured  # a reading 10 % below what the sound and the PLC say: audio must read there
    given = next(r for r in inspector.score([wav, plc], speeds_hz={"PMP-01": slower})[0] if r.modality == "audio")
    assert given.speed_source == "given (--speed-rpm)" and abs(given.shaft_hz - slower) <= 0.04 * slower + 0.02
    other = inspector.score([wav], speeds_hz={"OTHER-9": slower})[0][0]
    assert other.speed_source == "estimated from the sound"  # another machine's reading does not apply

    rpm = 60.0 * slower
    result = CliRunner().invoke(app, ["inspect", str(wav), "--assets", str(root / "assets.json"), "--json",
                                      "--speed-rpm", f"{rpm:.0f}"])
    assert result.exit_code == 0, result.output
    rec = json.loads(result.stdout)[0]
    assert rec["speed_source"] == "given (--speed-rpm)" and abs(rec["shaft_hz"] - slower) <= 0.04 * slower + 0.05
    table = CliRunner().invoke(app, ["inspect", str(wav), "--assets", str(root / "assets.json"),
                                     "--speed-rpm", f"PMP-01={rpm:.0f}"])
    assert table.exit_code == 0 and "(given)" in table.stdout, table.output
    typo = CliRunner().invoke(app, ["inspect", str(wav), "--assets", str(root / "assets.json"), "--json",
                                    "--speed-rpm", f"PMP-1={rpm:.0f}"])
    assert typo.exit_code == 0 and json.loads(typo.stdout)[0]["speed_source"] == "estimated from the sound"
    assert "no audio file of machine 'PMP-1'" in typo.stderr, typo.stderr
    for bad in ("fast", "PMP-01=99999", "=1480"):
        refused = CliRunner().invoke(app, ["inspect", str(wav), "--speed-rpm", bad])
        assert refused.exit_code == 2 and "--speed-rpm" in refused.stderr, (bad, refused.output)


def test_a_drive_s_speed_setpoint_is_where_audio_reads_a_machine_without_a_speed_tag(plant, tmp_path) -> None:
    """A historian export without a speed tag but with the drive's speed setpoint in rpm (a fan on a
    drive without a speed sensor): audio reads the machine around the setpoint, as around a measured
    speed, and both records say so. A setpoint in Hz (the drive's output frequency, or the shaft's) is not
    read. Before, the setpoint was a column that names no PLC tag and audio searched the sound."""
    root, cases = plant
    wav, _, plc = cases["bearing_wear"]
    inspector = Inspector(assets=load_assets(root / "assets.json"))
    measured = next(r for r in inspector.score([wav, plc])[0] if r.modality == "audio").shaft_hz
    assert measured is not None
    slower = 0.9 * measured  # a setpoint 10 % below what the sound says: audio must read there
    rows = _long_rows(plc)
    table = {(ts, name): v for ts, _, name, v in rows}
    tags = ("motor_current_a", "bearing_temp_c", "winding_temp_c", "vibration_rms_mm_s", "pressure_bar", "run_state")
    for unit, expected in (("rpm", "the PLC file's speed setpoint"), ("Hz", "estimated from the sound")):
        setpoint = 60.0 * slower if unit == "rpm" else slower
        lines = [",".join(["Time", *tags, f"Speed Setpoint ({unit})"])]
        for ts in sorted({r[0] for r in rows}):
            cells = ("" if (v := table.get((ts, t))) is None else f"{v:.6f}" for t in tags)
            lines.append(",".join([ts, *cells, f"{setpoint:.1f}"]))
        export = tmp_path / unit / f"plc-PMP-01-{STAMP}.csv"
        export.parent.mkdir()
        export.write_text("\n".join(lines) + "\n")
        results, _ = inspector.score([wav, export])
        audio = next(r for r in results if r.modality == "audio")
        plc_rec = next(r for r in results if r.modality == "plc")
        assert audio.speed_source == expected, (unit, audio.speed_source)
        notes = [w for w in plc_rec.warnings if w.startswith("no speed tag: its drive's speed setpoint")]
        if unit == "rpm":
            assert abs(audio.shaft_hz - slower) <= 0.04 * slower + 0.02, (audio.shaft_hz, slower)
            assert notes and f"({setpoint:.0f} rpm)" in notes[0], plc_rec.warnings
        else:
            assert not notes and abs(audio.shaft_hz - measured) < 0.02 * measured


def test_a_healthy_export_without_a_speed_tag_is_read_at_the_drive_s_speed_setpoint(plant, tmp_path) -> None:
    """The plant pump's healthy export written as a historian without a speed tag (a drive without a speed
    sensor) but with its speed setpoint in rpm, given as ``--healthy-plc``: its windows are read at the
    setpoint, so its pressure, vibration and winding levels are learnt as from the export with its speed tag.
    Without the setpoint nothing says the machine ran at its nameplate speed, and the export is refused."""
    root, cases = plant
    entries = json.loads((root / "assets.json").read_text())
    pump = next(e for e in entries["assets"] if e["asset_id"] == "PMP-01")
    on_drive = tmp_path / "assets.json"
    on_drive.write_text(json.dumps({**entries, "assets": [{**pump, "vfd": True}]}))
    inspector = Inspector(assets=load_assets(on_drive))
    plc = cases["normal"][2]
    with_speed = inspector.plc_baselines([plc])["PMP-01"]
    rows = _long_rows(plc)
    table = {(ts, name): v for ts, _, name, v in rows}
    speed = float(np.median([v for (_, name), v in table.items() if name == "speed_rpm"]))
    tags = ("motor_current_a", "bearing_temp_c", "winding_temp_c", "vibration_rms_mm_s", "pressure_bar", "run_state")
    for setpoint in (True, False):
        lines = [",".join(["Time", *tags, *(["Speed Setpoint (rpm)"] if setpoint else [])])]
        for ts in sorted({r[0] for r in rows}):
            cells = ["" if (v := table.get((ts, t))) is None else f"{v:.6f}" for t in tags]
            lines.append(",".join([ts, *cells, *([f"{speed:.0f}"] if setpoint else [])]))
        export = tmp_path / str(setpoint) / f"plc-PMP-01-{STAMP}.csv"
        export.parent.mkdir()
        export.write_text("\n".join(lines) + "\n")
        if setpoint:
            got = inspector.plc_baselines([export])["PMP-01"]
            assert got.pressure_bar == pytest.approx(with_speed.pressure_bar, rel=1e-3)
            assert got.vibration_mm_s == pytest.approx(with_speed.vibration_mm_s, rel=1e-3)
            assert got.winding_k is not None and got.winding_k == pytest.approx(with_speed.winding_k, rel=0.02)
        else:
            nothing = inspector.plc_baselines([export])["PMP-01"]
            assert nothing.empty and nothing.has_level_tags and set(nothing.rejected) == {"no_speed"}


def test_a_healthy_export_of_a_machine_on_the_mains_needs_no_speed_tag(plant, tmp_path) -> None:
    """The plant pump (on the mains: no ``vfd`` in assets.json) with its healthy export written without a
    speed tag: it runs at its nameplate speed while its run state says it runs, so its pressure, vibration
    and winding levels are learnt as from the export with the speed tag (before session 54 the export was
    not used, ``no_speed``: 10 of 30 machines of a second fleet written blind)."""
    root, cases = plant
    inspector = Inspector(assets=load_assets(root / "assets.json"))
    assert not inspector.assets["PMP-01"].vfd
    plc = cases["normal"][2]
    with_speed = inspector.plc_baselines([plc])["PMP-01"]
    export = tmp_path / f"plc-PMP-01-{STAMP}.csv"
    export.write_text("".join(line + "\n" for line in plc.read_text().splitlines() if ".speed_rpm," not in line))
    got = inspector.plc_baselines([export])["PMP-01"]
    assert not got.empty and "no_speed" not in got.rejected, got
    assert got.pressure_bar == pytest.approx(with_speed.pressure_bar, rel=0.02)
    assert got.vibration_mm_s == pytest.approx(with_speed.vibration_mm_s, rel=0.02)
    assert got.winding_k is not None and got.winding_k == pytest.approx(with_speed.winding_k, rel=0.05)


def test_a_drive_machine_read_at_the_speed_of_its_sound_says_so(plant, tmp_path) -> None:
    """A drive machine's clip read without a measured speed carries a warning with the speed found
    in the sound and how to give the right one; with ``--speed-rpm`` it does not."""
    root, cases = plant
    doc = json.loads((root / "assets.json").read_text())
    entries = doc["assets"] if isinstance(doc, dict) else doc
    next(e for e in entries if e.get("asset_id", e.get("id")) == "PMP-01")["vfd"] = True
    (tmp_path / "assets.json").write_text(json.dumps(doc))
    inspector = Inspector(assets=load_assets(tmp_path / "assets.json"))
    wav = cases["normal"][0]
    heard = inspector.score([wav])[0][0]
    warning = [w for w in heard.warnings if "drive machine" in w]
    assert len(warning) == 1 and f"{60.0 * heard.shaft_hz:.0f} rpm" in warning[0] and "--speed-rpm" in warning[0]
    given = inspector.score([wav], speeds_hz={"PMP-01": heard.shaft_hz})[0][0]
    assert not [w for w in given.warnings if "drive machine" in w]


def test_a_drive_whose_pwm_carrier_shows_is_read_at_the_speed_it_gives(plant, tmp_path) -> None:
    """The same drive clip with a PWM carrier added (3 kHz, sidebands at +- 2 f_e for the motor's
    poles): audio reads the speed off the carrier, says so in ``speed_source`` and the table, and
    leaves out the warning about a speed found in the sound."""
    import soundfile as sf

    root, cases = plant
    doc = json.loads((root / "assets.json").read_text())
    entries = doc["assets"] if isinstance(doc, dict) else doc
    entry = next(e for e in entries if e.get("asset_id", e.get("id")) == "PMP-01")
    entry["vfd"] = True
    (tmp_path / "assets.json").write_text(json.dumps(doc))
    inspector = Inspector(assets=load_assets(tmp_path / "assets.json"))
    heard = inspector.score([cases["normal"][0]])[0][0]
    x, rate = sf.read(cases["normal"][0])
    t = np.arange(len(x)) / rate
    f_e = heard.shaft_hz * int(entry["poles"]) / 2 / (1 - 0.02)
    peak = float(np.max(np.abs(x)))
    carrier = sum(a * np.sin(2 * np.pi * f * t) for f, a in ((3_000.0, 1.0), (3_000.0 - 2 * f_e, 0.6),
                                                              (3_000.0 + 2 * f_e, 0.6)))
    wav = tmp_path / f"PMP-01-{cases['normal'][0].name.split('-', 2)[-1]}"
    sf.write(wav, x + 0.05 * peak * carrier, rate)
    read = inspector.score([wav])[0][0]
    assert read.speed_source == "the drive's PWM carrier in the sound", read.speed_source
    assert abs(read.shaft_hz - heard.shaft_hz) < 0.02 * heard.shaft_hz
    assert not [w for w in read.warnings if "drive machine" in w], read.warnings
    assert read.label == heard.label == "normal", (heard.probabilities, read.probabilities)
    table = CliRunner().invoke(app, ["inspect", str(wav), "--assets", str(tmp_path / "assets.json")])
    assert table.exit_code == 0 and "carrier)" in table.stdout, table.output  # "(drive carrier)", maybe wrapped


def test_audio_recorded_below_16_khz_withholds_what_it_cannot_hold(plant, tmp_path) -> None:
    """A clip recorded at 8 kHz holds nothing above 4 kHz, where bearing defects and cavitation
    ring: audio withholds both (and says why) instead of calling the worn bearing normal; the same
    clip at 16 kHz names it."""
    import soundfile as sf
    from scipy.signal import resample_poly

    root, cases = plant
    inspector = Inspector(assets=load_assets(root / "assets.json"))
    wav = cases["bearing_wear"][0]
    full = inspector.score([wav])[0][0]
    assert full.label == "bearing_wear" and full.withheld == ["imbalance"]
    clip, rate = sf.read(wav, dtype="float32")
    low = tmp_path / wav.name
    sf.write(low, resample_poly(clip, 1, 2), rate // 2, subtype="PCM_16")
    narrow = inspector.score([low])[0][0]
    assert narrow.error is None and set(narrow.withheld) == {"bearing_wear", "cavitation", "imbalance"}
    assert narrow.label == "normal" and narrow.probabilities["bearing_wear"] == 0.0
    assert any("recorded at 8000 Hz" in w and "withholds" in w for w in narrow.warnings), narrow.warnings
    mulaw = tmp_path / "mulaw" / wav.name  # a logger's mu-law WAV at the full rate: read, not refused
    mulaw.parent.mkdir()
    sf.write(mulaw, clip, rate, subtype="ULAW")
    logged = inspector.score([mulaw])[0][0]
    assert logged.error is None and "bearing_wear" not in logged.withheld


def test_a_clipped_recording_says_so(plant, tmp_path) -> None:
    """A recording driven past full scale (flat tops) carries a warning with its clipped share; the
    same clip recorded with headroom does not."""
    import soundfile as sf

    root, cases = plant
    inspector = Inspector(assets=load_assets(root / "assets.json"))
    wav = cases["normal"][0]
    clip, rate = sf.read(wav, dtype="float64")
    assert not [w for w in inspector.score([wav])[0][0].warnings if "clipped" in w]
    loud = tmp_path / wav.name
    sf.write(loud, np.clip(clip * 10.0 / np.max(np.abs(clip)), -1.0, 1.0), rate, subtype="PCM_16")
    warned = [w for w in inspector.score([loud])[0][0].warnings if "clipped" in w]
    assert len(warned) == 1 and "less gain" in warned[0], warned



def test_flac_and_mp3_recordings_are_read_and_a_low_bit_rate_says_so(plant, tmp_path) -> None:
    """The worn-bearing clip as FLAC reads exactly like the WAV; as MP3 at a high bit rate it is still
    named, without a warning; at a low bit rate the record warns that the codec blurs the impacts."""
    import soundfile as sf

    from models.inspect.scoring import LOSSY_KBPS_WARN

    root, cases = plant
    inspector = Inspector(assets=load_assets(root / "assets.json"))
    wav = cases["bearing_wear"][0]
    clip, rate = sf.read(wav, dtype="float32")
    as_wav = inspector.score([wav])[0][0]
    paths = {}
    for name, kwargs in (("flac", {"format": "FLAC"}),
                         ("mp3_high", {"format": "MP3", "subtype": "MPEG_LAYER_III", "compression_level": 0.0,
                                       "bitrate_mode": "CONSTANT"}),
                         ("mp3_low", {"format": "MP3", "subtype": "MPEG_LAYER_III", "compression_level": 0.9,
                                      "bitrate_mode": "CONSTANT"})):
        (tmp_path / name).mkdir()
        paths[name] = tmp_path / name / wav.with_suffix(".flac" if name == "flac" else ".mp3").name
        sf.write(paths[name], clip, rate, **kwargs)
    flac, high, low = (inspector.score([paths[n]])[0][0] for n in ("flac", "mp3_high", "mp3_low"))
    assert flac.error is None and flac.asset_id == "PMP-01"
    assert flac.probabilities == pytest.approx(as_wav.probabilities, abs=1e-6)
    assert high.error is None and high.label == "bearing_wear"
    assert not [w for w in high.warnings if "lossy" in w], high.warnings
    assert low.error is None
    warned = [w for w in low.warnings if "lossy" in w]
    assert len(warned) == 1 and f"below {LOSSY_KBPS_WARN:.0f} kbit/s" in warned[0], low.warnings


def test_compressed_and_multi_page_tiffs_are_read(plant, tmp_path) -> None:
    """A frame saved with LZW or PackBits (MATLAB's default) reads exactly like the plain TIFF; a
    TIFF of several frames scores the first and says so."""
    root, cases = plant
    inspector = Inspector(assets=load_assets(root / "assets.json"))
    tif = cases["electrical_overheating"][1]
    frame = tifffile.imread(tif)
    plain = inspector.score([tif])[0][0]
    for compression in ("lzw", "packbits"):
        (tmp_path / compression).mkdir()
        path = tmp_path / compression / tif.name
        tifffile.imwrite(path, frame, compression=compression)
        read = inspector.score([path])[0][0]
        assert read.error is None and read.probabilities == pytest.approx(plain.probabilities, abs=1e-9)
        assert not [w for w in read.warnings if "frames" in w]
    (tmp_path / "burst").mkdir()
    burst = tmp_path / "burst" / tif.name
    with tifffile.TiffWriter(burst) as writer:
        for page in (frame, np.full_like(frame, 29_315), np.full_like(frame, 29_315)):
            writer.write(page)
    first = inspector.score([burst])[0][0]
    assert first.error is None and first.probabilities == pytest.approx(plain.probabilities, abs=1e-9)
    assert any("holds 3 frames" in w and "the first was scored" in w for w in first.warnings), first.warnings


def test_regions_under_other_names_or_as_fractions_read_like_the_schema_s(plant, tmp_path) -> None:
    """assets.json regions as users name them (``Motor``, ``Drive End Bearing``, ``Junction Box``)
    or as fractions of the frame give the probabilities of the schema's boxes; a name that is no
    part warns. Before, the parts were silently missing and the worn bearing read normal."""
    root, cases = plant
    doc = json.loads((root / "assets.json").read_text())
    tif = cases["bearing_wear"][1]
    height, width = tifffile.imread(tif).shape
    plain = Inspector(assets=load_assets(root / "assets.json")).score([tif])[0][0]
    assert plain.label == "bearing_wear"
    names = {"motor_body": "Motor", "de_bearing": "Drive End Bearing", "nde_bearing": "NDE", "terminal_box":
             "Junction Box", "driven": "pump", "pump_inlet": "suction"}
    unit_only = {k: v for k, v in doc["frame"].items() if k not in ("width", "height")}  # fractions of any size
    entry = next(a for a in doc["assets"] if a["asset_id"] == "PMP-01")
    for variant in ("names", "fractions", "lamp"):
        if variant == "fractions":
            regions = {k: [b[0] / width, b[1] / height, b[2] / width, b[3] / height] for k, b in entry["regions"].items()}
        else:
            regions = {names.get(k, k): b for k, b in entry["regions"].items()}
            regions |= {"lamp": [0, 0, 4, 4]} if variant == "lamp" else {}
        path = tmp_path / f"assets_{variant}.json"
        path.write_text(json.dumps({**doc, "frame": unit_only, "assets": [{**entry, "regions": regions}]}))
        read = Inspector(assets=load_assets(path)).score([tif])[0][0]
        warned = [w for w in read.warnings if "no part the thermal model reads" in w]
        if variant == "lamp":  # a part of its own: it masks the background, and the record says so
            assert read.label == "bearing_wear" and len(warned) == 1 and "lamp" in warned[0], read.warnings
        else:
            assert read.probabilities == pytest.approx(plain.probabilities, abs=1e-6), variant
            assert not warned, read.warnings


def test_region_boxes_as_other_tools_write_them_read_like_the_schema_s(plant, tmp_path) -> None:
    """Boxes as labelling tools and exports write them (COCO-style objects with width and height, Pascal
    VOC, CVAT, LabelMe outlines, a list of named regions, strings; also under a ``camera`` section)
    give the probabilities of the schema's boxes. A box that cannot be read is named in a warning with what to write. Before, every
    one of them was dropped without a word: the frame was read through proposed boxes and thermal
    named no fault."""
    root, cases = plant
    doc = json.loads((root / "assets.json").read_text())
    tif = cases["bearing_wear"][1]
    plain = Inspector(assets=load_assets(root / "assets.json")).score([tif])[0][0]
    assert plain.label == "bearing_wear"
    entry = next(a for a in doc["assets"] if a["asset_id"] == "PMP-01")
    boxes = entry["regions"]
    forms = {
        "x y width height": {k: {"x": a, "y": b, "width": c - a, "height": d - b} for k, (a, b, c, d) in boxes.items()},
        "voc": {k: {"xmin": a, "ymin": b, "xmax": c, "ymax": d} for k, (a, b, c, d) in boxes.items()},
        "cvat list": [{"label": k, "xtl": a, "ytl": b, "xbr": c, "ybr": d} for k, (a, b, c, d) in boxes.items()],
        "labelme outlines": [{"label": k, "points": [[a, b], [c, b], [c, d], [a, d]]} for k, (a, b, c, d) in
                             boxes.items()],
        "strings": {k: f"{a}, {b}, {c}, {d}" for k, (a, b, c, d) in boxes.items()},
    }
    for name, regions in forms.items():
        path = tmp_path / f"assets_{name.replace(' ', '_')}.json"
        path.write_text(json.dumps({**doc, "assets": [{**entry, "regions": regions}]}))
        read = Inspector(assets=load_assets(path)).score([tif])[0][0]
        assert read.probabilities == pytest.approx(plain.probabilities, abs=1e-6), (name, read.warnings)
        assert not [w for w in read.warnings if "not read" in w or "proposed" in w], (name, read.warnings)
    nested = {**{k: v for k, v in entry.items() if k != "regions"}, "camera": {"model": "A50", "regions": boxes}}
    path = tmp_path / "assets_camera_section.json"
    path.write_text(json.dumps({**doc, "assets": [nested]}))
    read = Inspector(assets=load_assets(path)).score([tif])[0][0]
    assert read.probabilities == pytest.approx(plain.probabilities, abs=1e-6), read.warnings
    coco = {k: [a, b, c - a, d - b] for k, (a, b, c, d) in boxes.items()}  # [x, y, w, h]: not corners
    coco["motor_body"] = list(boxes["motor_body"])
    path = tmp_path / "assets_coco.json"
    path.write_text(json.dumps({**doc, "assets": [{**entry, "regions": coco}]}))
    read = Inspector(assets=load_assets(path)).score([tif])[0][0]
    [note] = [w for w in read.warnings if "regions of assets.json not read" in w]
    assert "de_bearing: [" in note and "COCO [x, y, width, height]" in note and '"w"' in note, note


def test_pixels_that_are_no_temperature_are_filled_and_reported(plant, tmp_path) -> None:
    """A float °C export with a fill value inside the motor body (1e6) and a NaN band reads like the
    clean frame, with a warning that counts them (the spike used to swamp the body's statistics and
    turn the worn bearing normal); a frame of NaN only is an error, not a verdict."""
    root, cases = plant
    inspector = Inspector(assets=load_assets(root / "assets.json"))
    tif = cases["bearing_wear"][1]
    celsius = tifffile.imread(tif).astype(np.float32) / 100.0 - 273.15
    clean_path = tmp_path / "clean" / tif.name
    clean_path.parent.mkdir()
    tifffile.imwrite(clean_path, celsius)
    body = json.loads((root / "assets.json").read_text())["assets"][0]["regions"]["motor_body"]
    spoiled = celsius.copy()
    spoiled[(body[1] + body[3]) // 2, (body[0] + body[2]) // 2] = 1e6
    spoiled[:4, :] = np.nan
    spoiled_path = tmp_path / "spoiled" / tif.name
    spoiled_path.parent.mkdir()
    tifffile.imwrite(spoiled_path, spoiled)
    empty_path = tmp_path / "empty" / tif.name
    empty_path.parent.mkdir()
    tifffile.imwrite(empty_path, np.full_like(celsius, np.nan))
    clean, read, empty = (inspector.score([p])[0][0] for p in (clean_path, spoiled_path, empty_path))
    assert clean.label == read.label == "bearing_wear"
    assert read.probabilities == pytest.approx(clean.probabilities, abs=0.02)
    assert any(w.startswith(f"{4 * celsius.shape[1] + 1} of {celsius.size} pixels are no temperature")
               for w in read.warnings), read.warnings
    assert empty.label is None and "holds no temperature" in (empty.error or "")


def test_channels_in_opposite_phase_and_a_short_clip_say_what_was_read(plant, tmp_path) -> None:
    """A stereo file whose channels cancel when averaged (a differential pair) reads its loudest
    channel, like the mono clip, and says so (the mean used to be silence: an error); a clip shorter
    than the 1 s the models read warns."""
    import soundfile as sf

    root, cases = plant
    inspector = Inspector(assets=load_assets(root / "assets.json"))
    wav = cases["bearing_wear"][0]
    clip, rate = sf.read(wav, dtype="float32")
    mono = inspector.score([wav])[0][0]
    pair = tmp_path / "pair" / wav.name
    pair.parent.mkdir()
    sf.write(pair, np.stack([clip, -0.8 * clip], axis=1), rate, subtype="FLOAT")
    read = inspector.score([pair])[0][0]
    assert read.error is None and read.probabilities == pytest.approx(mono.probabilities, abs=1e-5)
    assert any("cancel when averaged" in w and "channel 1" in w for w in read.warnings), read.warnings
    assert not [w for w in mono.warnings if "cancel" in w or " s long" in w]
    short = tmp_path / "short" / wav.name
    short.parent.mkdir()
    sf.write(short, clip[: rate // 2], rate, subtype="PCM_16")
    assert any(w.startswith("0.50 s long") for w in inspector.score([short])[0][0].warnings)


def test_a_file_named_otherwise_finds_its_machine(plant, tmp_path) -> None:
    """The machine id anywhere in the name as a word of its own, in another case, or before a suffix
    that the landing pattern would take for part of the id, is the machine of the file."""
    root, cases = plant
    inspector = Inspector(assets=load_assets(root / "assets.json"))
    wav = cases["bearing_wear"][0]
    for name in ("20261129T140000_PMP-01.wav", "recording pmp-01 bearing.wav", "PMP-01-DE-20261129T140000.wav"):
        (tmp_path / name).write_bytes(wav.read_bytes())
        record = inspector.score([tmp_path / name])[0][0]
        assert record.asset_id == "PMP-01" and record.label == "bearing_wear", (name, record.warnings)


def test_a_fahrenheit_frame_reads_right_when_declared_and_warns_when_not(plant, tmp_path) -> None:
    """A US camera's °F export: declared (``"frame": {"unit": "fahrenheit"}``) it reads like the
    centikelvin frame; undeclared it is read as °C (the values alone cannot tell) and the record
    warns that its background is too warm for a plant hall."""
    root, cases = plant
    tif = cases["electrical_overheating"][1]
    fahrenheit = (tifffile.imread(tif).astype(np.float32) / 100.0 - 273.15) * 1.8 + 32.0
    path = tmp_path / "f" / tif.name
    path.parent.mkdir()
    tifffile.imwrite(path, fahrenheit)
    doc = json.loads((root / "assets.json").read_text())
    declared = tmp_path / "declared.json"
    declared.write_text(json.dumps({**doc, "frame": {**doc["frame"], "unit": "fahrenheit", "scale": None}}))
    plain = Inspector(assets=load_assets(root / "assets.json")).score([tif])[0][0]
    read = Inspector(assets=load_assets(declared)).score([path])[0][0]
    guessed = Inspector(assets=load_assets(root / "assets.json")).score([path])[0][0]
    assert read.probabilities == pytest.approx(plain.probabilities, abs=0.01)
    assert not [w for w in read.warnings if "fahrenheit" in w]
    assert any("fahrenheit" in w and "read as °C" in w for w in guessed.warnings), guessed.warnings


def test_cli_reads_a_folder(plant, tmp_path) -> None:
    """A folder argument is read recursively: every file inspect reads, in name order (an assets.json
    inside it and other files left out); a folder without any such file exits 2 with the reason."""
    root, cases = plant
    folder = tmp_path / "survey"
    (folder / "audio").mkdir(parents=True)
    wav, tif, plc = cases["bearing_wear"]
    (folder / "audio" / wav.name).write_bytes(wav.read_bytes())
    (folder / tif.name).write_bytes(tif.read_bytes())
    (folder / "assets.json").write_text((root / "assets.json").read_text())
    (folder / "README.txt").write_text("survey of 29 Nov")
    result = CliRunner().invoke(app, ["inspect", str(folder), "--assets", str(folder / "assets.json"), "--json"])
    assert result.exit_code == 0, result.output
    records = json.loads(result.stdout)
    assert [Path(r["file"]).name for r in records] == [tif.name, wav.name]
    assert records[0]["fused"]["class"] == "bearing_wear"
    (tmp_path / "empty").mkdir()
    empty = CliRunner().invoke(app, ["inspect", str(tmp_path / "empty")])
    assert empty.exit_code == 2 and "without any file inspect reads" in empty.output


def test_plc_windows_in_which_the_machine_stood_still_are_left_out(plant, tmp_path) -> None:
    """A historian export of two minutes of the healthy pump with an unplanned stop in it (the plant
    physics' own stop): the windows around the stop are left out with a note and the others judge the
    machine; an export of the stop alone withholds every PLC fault (pipeline.features.plc_running)."""
    from linewatch.simulator.drift import constant_drift
    from linewatch.simulator.health import constant_health
    from linewatch.simulator.physics import AssetPhysics
    from linewatch.simulator.plc import measure

    root, _ = plant
    cfg = SimulatorConfig(seed=7, stops_per_hour=60.0)  # a stop in nearly every 2 minutes
    pump = make_fleet(6, seed=7)[0]
    n = round(120 * cfg.plc_rate_hz)
    t = np.arange(n) / cfg.plc_rate_hz
    drift = constant_drift("none", 0.0)
    block = AssetPhysics(pump, cfg, cfg.profile).step(t, np.arange(n), constant_health("normal", 0.0, "", n), drift)
    stopped = np.flatnonzero(block.run < 0.5)
    assert stopped.size >= 40, "the physics drew no stop of at least 4 s"
    plc = measure(pump, block, drift, cfg.profile, cfg)

    def export(name: str, rows: slice) -> Path:
        part = type(plc)(**{k: (v[rows] if isinstance(v, np.ndarray) and v.shape[:1] == (n,) else v)
                            for k, v in vars(plc).items()})
        path = tmp_path / f"plc-{pump.asset_id}-{name}.csv"
        path.write_text(plc_file_text(format_lines(part, iso_ms(cfg.start_time, part.t), "csv"), "csv"))
        return path

    first = int(stopped[0]) - int(stopped[0]) % 100  # the 10 s window where the stop begins
    inspector = Inspector(assets=load_assets(root / "assets.json"))
    (whole, stop), _ = inspector.score([export("whole", slice(0, n)), export("stop", slice(first, first + 100))],
                                       asset_id=pump.asset_id)
    left_out = [w for w in whole.warnings if "windows left out" in w]
    assert whole.error is None and whole.withheld == [] and whole.label == "normal", whole.warnings
    assert left_out, whole.warnings
    k, of = (int(w) for w in left_out[0].split(" 10 s")[0].split(" of "))
    assert 2 <= k <= 5 and whole.windows == of - k  # the stop (1-3 windows) and its run-up (2)
    assert stop.error is None and stop.label == "normal" and "normal" not in stop.withheld
    assert set(stop.withheld) == set(stop.probabilities) - {"normal"}
    assert any("did not run steadily" in w for w in stop.warnings)


def test_frames_as_camera_software_exports_them_read_like_the_tiff(plant, tmp_path) -> None:
    """The worn-bearing frame of the plant pump as a 16-bit PNG (centikelvin), a NumPy array (°C),
    a temperature-matrix CSV as FLIR-style software writes it (metadata lines, °C, 0.01 °C steps)
    and a European one (``;``, decimal commas, a °F header): the TIFF's class and probabilities. An
    8-bit PNG (the palette picture) is refused with what to export; the PLC CSV of the same folder
    is still read as PLC."""
    import imagecodecs

    root, cases = plant
    inspector = Inspector(assets=load_assets(root / "assets.json"))
    tif = cases["bearing_wear"][1]
    ck = tifffile.imread(tif)
    celsius = ck.astype(np.float32) / 100.0 - 273.15
    stem = tif.stem
    png = tmp_path / f"{stem}.png"
    png.write_bytes(imagecodecs.png_encode(ck))
    npy = tmp_path / "npy" / f"{stem}.npy"
    npy.parent.mkdir()
    np.save(npy, celsius)
    flir = tmp_path / "flir" / f"{stem}.csv"
    flir.parent.mkdir()
    flir.write_text("File:,IR_0042.jpg\nDate:,2026-11-29 14:00:00\nTemperature unit:,Celsius\n\n"
                    + "\n".join(",".join(f"{v:.2f}" for v in row) for row in celsius) + "\n")
    euro = tmp_path / "euro" / f"{stem}.csv"
    euro.parent.mkdir()
    euro.write_text("Bild;IR000123.BMT\nEinheit;°F\n"
                    + "\n".join(";".join(f"{v * 9 / 5 + 32:.2f}".replace(".", ",") for v in row) for row in celsius)
                    + "\n", encoding="utf-8")
    eight_bit = tmp_path / "palette" / f"{stem}.png"
    eight_bit.parent.mkdir()
    eight_bit.write_bytes(imagecodecs.png_encode((ck // 256).astype(np.uint8)))
    (ref,), _ = inspector.score([tif])
    results, _ = inspector.score([png, npy, flir, euro, eight_bit, cases["bearing_wear"][2]])
    for rec in results[:4]:
        assert rec.error is None and rec.modality == "thermal", (rec.file, rec.error)
        assert rec.label == ref.label == "bearing_wear" and rec.asset_id == ref.asset_id
        assert rec.probabilities == pytest.approx(ref.probabilities, abs=0.01), rec.file
    assert any("°F" in w and "converted" in w for w in results[3].warnings), results[3].warnings
    assert results[4].error and "palette" in results[4].error and "16-bit" in results[4].error
    assert results[5].modality == "plc" and results[5].error is None


def test_a_sensor_that_recorded_nothing_is_reported_and_a_dropout_is_skipped(plant, tmp_path) -> None:
    """A frame without contrast (a covered lens) and a silent recording get an error that says what
    to check (before, the frame was scored ``normal``); a recording with a silent second (a dropout)
    is read from its other seconds, as the same fault."""
    root, cases = plant
    wav = cases["bearing_wear"][0]
    with wave.open(str(wav)) as w:
        clip = np.frombuffer(w.readframes(w.getnframes()), "<i2")
    with_dropout = np.concatenate([clip, np.zeros(16_000, np.int16), clip, clip])
    (tmp_path / "a").mkdir()
    files = {"blank": tmp_path / "a" / f"PMP-01-{STAMP}.tiff", "silent": tmp_path / "a" / f"PMP-01-{STAMP}.wav",
             "dropout": tmp_path / "a" / f"PMP-01-{STAMP}-2.wav"}
    files["blank"].write_bytes(encode_tiff(np.full((120, 160), 29_515, np.uint16)))
    files["silent"].write_bytes(encode_wav(np.zeros(48_000, np.int16), 16_000))
    files["dropout"].write_bytes(encode_wav(with_dropout, 16_000))
    results, _ = Inspector(assets=load_assets(root / "assets.json")).score(list(files.values()))
    blank, silent, dropout = results
    assert blank.label is None and "no contrast" in blank.error and "covered lens" in blank.error
    assert silent.label is None and "silent" in silent.error and "check the microphone" in silent.error
    assert dropout.error is None and dropout.label == "bearing_wear", dropout.probabilities


def test_a_healthy_reference_that_cannot_be_read_is_reported_and_the_rest_is_scored(plant, tmp_path) -> None:
    """``--healthy-thermal`` / ``--healthy-audio`` / ``--healthy-plc`` files that cannot be read name
    themselves and their option (before session 32 the reason alone read as if the file scored were
    wrong). Each is a record with that error, and the machine's files are scored without it and say
    so; the call exits 1. Before session 54 one such file stopped the whole call with exit code 2,
    every other machine's files unscored (a second fleet written blind: 7 commissioning exports of a
    dialect the reader refused left 30 machines unscored in each call)."""
    root, cases = plant
    wav, tif, plc = cases["normal"]
    blank, silent = tmp_path / f"PMP-01-{STAMP}-ref.tiff", tmp_path / f"PMP-01-{STAMP}-ref.wav"
    blank.write_bytes(encode_tiff(np.full((120, 160), 29_515, np.uint16)))
    silent.write_bytes(encode_wav(np.zeros(48_000, np.int16), 16_000))
    unreadable = tmp_path / f"plc-PMP-01-{STAMP}-ref.csv"
    unreadable.write_text("Time,Oil Level (%)\n2026-11-29T14:00:00Z,80\n")
    inspector = Inspector(assets=load_assets(root / "assets.json"))
    alone = {r.modality: r for r in inspector.score([wav, tif, plc])[0]}
    results, verdicts = inspector.score([wav, tif, plc], healthy_thermal=[blank], healthy_audio=[silent],
                                        healthy_plc=[unreadable])
    scored, unread = results[:3], {Path(r.file).name: r for r in results[3:]}
    assert [r.error for r in scored] == [None] * 3 and len(verdicts) == 1
    for r in scored:  # read as without the references, and saying so
        assert r.label == alone[r.modality].label and r.probabilities == alone[r.modality].probabilities
        assert any("which could not be read" in w for w in r.warnings), r.warnings
    assert re.search(r"-ref\.tiff \(--healthy-thermal\): the frame has no contrast", unread[blank.name].error)
    assert re.search(r"-ref\.wav \(--healthy-audio\): the clip is silent", unread[silent.name].error)
    assert "no column names a PLC tag" in unread[unreadable.name].error
    assert "(--healthy-plc): this machine's files were read without it" in unread[unreadable.name].error
    assert {r.asset_id for r in unread.values()} == {"PMP-01"}
    cli = CliRunner().invoke(app, ["inspect", "--json", "--assets", str(root / "assets.json"), str(tif),
                                   "--healthy-thermal", str(blank)])
    assert cli.exit_code == 1, cli.output
    records = json.loads(cli.stdout)
    assert records[0]["error"] is None and records[0]["class"] and "no contrast" in records[1]["error"]
    with pytest.raises(InspectInputError, match=r"-ref\.tiff \(--healthy-thermal\): the frame has no contrast"):
        inspector.thermal_references([blank])  # without ``unread``, as before


def test_a_slow_drive_s_self_ventilated_motor_is_read_as_at_nameplate_speed_and_inspect_says_so(plant, tmp_path) -> None:
    """The plant pump's healthy export with its speed tag at half its nameplate speed, the pump declared on a
    drive: the PLC reads its winding as its own shaft fan would cool it at nameplate speed, and the record
    says so (and how to turn it off); declared blower-cooled, or on the mains, it is read as measured and
    no such note is written."""
    root, cases = plant
    entries = json.loads((root / "assets.json").read_text())
    pump = next(e for e in entries["assets"] if e["asset_id"] == "PMP-01")
    lines = cases["normal"][2].read_text().splitlines()
    slow = tmp_path / f"plc-PMP-01-{STAMP}.csv"
    slow.write_text("\n".join([lines[0], *(
        ",".join([ts, tag, f"{float(value) * 0.5:.3f}" if tag.endswith(".speed_rpm") else value, *rest])
        for ts, tag, value, *rest in (line.split(",") for line in lines[1:]))]) + "\n")

    def inspector(**entry: object) -> Inspector:
        doc = {**entries, "assets": [{**pump, **entry}]}
        path = tmp_path / f"assets-{len(entry)}-{'-'.join(map(str, entry.values()))}.json"
        path.write_text(json.dumps(doc))
        return Inspector(assets=load_assets(path))

    def scored(**entry: object):
        (rec,), _ = inspector(**entry).score([slow])
        assert rec.error is None
        return rec

    drive = scored(vfd=True)
    note = [w for w in drive.warnings if w.startswith("the drive ran at 50 % of the nameplate speed")]
    assert len(note) == 1 and "x0.72" in note[0] and '"cooling"' in note[0]
    for as_measured in (scored(vfd=True, cooling="IC416"), scored(vfd=False)):
        assert not any("nameplate speed: a motor cooled by its own shaft fan" in w for w in as_measured.warnings)
    # the same export as the drive's healthy one (--healthy-plc): its winding level, read as at nameplate
    # speed (vibration and pressure are learnt at nameplate speed only); on the mains it shows no normal running
    learnt = inspector(vfd=True).plc_baselines([slow])["PMP-01"]
    at_blower = inspector(vfd=True, cooling="IC416").plc_baselines([slow])["PMP-01"]
    assert learnt.vibration_mm_s is None and learnt.pressure_bar is None
    assert learnt.winding_k == pytest.approx((1 / 3 + 2 / 3 * 0.5**0.8) * at_blower.winding_k, rel=0.01)  # per window
    on_mains = inspector(vfd=False).plc_baselines([slow])["PMP-01"]
    assert on_mains.empty and "not_at_rated_speed" in on_mains.rejected


def test_a_hot_pipe_through_the_terminal_box_is_not_named_a_loose_lug(plant, tmp_path) -> None:
    """A hot pipe drawn across the healthy pump's frame, through the top of its terminal box and on past it
    on both sides, reads inside the box as a lug's hot spot does: without the rule the model names it
    electrical overheating (0.77; checked by taking the rule out of STATS_WITHHOLD). Thermal withholds
    electrical overheating there and says why (pipeline.features.terminal_crossing); the loose lug
    (severity 0.8), a spot inside the box, is still named."""
    from models.inspect.frame_files import read_frame
    from pipeline.features.messages import thermal_message_any_unit
    from pipeline.features.terminal_crossing import TERMINAL_CROSSED_STAT
    from pipeline.features.thermal_regions import THERMAL_VECTOR_NAMES, scaled_regions

    root, cases = plant
    inspector = Inspector(assets=load_assets(root / "assets.json"))
    frame = tifffile.imread(cases["normal"][1]).astype(np.int64)
    y0 = int(scaled_regions(inspector.profile("PMP-01", []), frame.shape)["terminal_box"][1])
    frame[y0:y0 + 2, :] = frame[y0:y0 + 2, :].max() + 3000  # centikelvin: a pipe 30 K over the box, 2 px thick
    piped = tmp_path / "piped" / cases["normal"][1].name
    piped.parent.mkdir()
    tifffile.imwrite(piped, frame.astype(np.uint16))

    (pipe,), _ = inspector.score([piped])
    (lug,), _ = inspector.score([cases["electrical_overheating"][1]])
    msg = thermal_message_any_unit("PMP-01", "pump", 0, read_frame(piped), inspector.profile("PMP-01", []), warnings=[])
    assert msg.stats[TERMINAL_CROSSED_STAT] == 1.0
    assert msg.vector[THERMAL_VECTOR_NAMES.index("terminal_box.hotspot_excess")] > 20.0  # the box sees a hot spot
    assert "electrical_overheating" in pipe.withheld and pipe.probabilities["electrical_overheating"] == 0.0
    assert pipe.label == "normal", pipe.probabilities
    assert any(w.startswith("something hot runs through the terminal box") for w in pipe.warnings), pipe.warnings
    assert lug.label == "electrical_overheating" and "electrical_overheating" not in lug.withheld, lug.probabilities
    assert not any(w.startswith("something hot runs through") for w in lug.warnings)
