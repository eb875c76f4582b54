"""Real simulator output (batch mode) through decoders → validation → features, with no errors."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from linewatch.contract import decode_message, encode_message
from linewatch.simulator import Factory, SimulatorConfig
from linewatch.simulator.tags import PLC_TAGS as SIMULATOR_TAGS
from pipeline.decoders import (
    decode_alarm_file,
    decode_plc_file,
    decode_thermal_tiff,
    decode_wav,
)
from pipeline.features.asset_profile import RECIPROCATING_STAT
from pipeline.features.audio_features import AUDIO_STAT_NAMES
from pipeline.features.audio_physics import BAND_LIMITED_STAT, ORDERS_ABOVE_ENVELOPE_STAT
from pipeline.features.messages import audio_features_message, plc_features_message, thermal_features_message
from pipeline.features.plc_window import PLC_TAGS, PlcWindowBuffer
from pipeline.features.thermal_features import ThermalBaseline
from pipeline.landing import LandingZone, ManifestEntry, read_manifest
from pipeline.validation import AssetRegistry, EventTimePolicy, check_clip, check_frame

N_ASSETS = 3
MINUTES = 0.25


def test_feature_tag_order_is_the_simulators() -> None:
    assert PLC_TAGS == SIMULATOR_TAGS


@pytest.fixture(scope="module")
def landing(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("landing-csv")
    Factory(SimulatorConfig(plc_format="csv"), n_assets=N_ASSETS).run_batch(out, MINUTES, progress=False)
    return out


def test_simulator_jsonl_plc_files_decode_like_csv(landing: Path, tmp_path: Path) -> None:
    Factory(SimulatorConfig(plc_format="jsonl"), n_assets=N_ASSETS).run_batch(tmp_path, MINUTES, progress=False)
    for csv_path in sorted((landing / "plc").glob("plc-*.csv")):
        jsonl_path = tmp_path / "plc" / csv_path.with_suffix(".jsonl").name
        from_csv = decode_plc_file(csv_path.read_bytes(), csv_path.name, "csv")
        from_jsonl = decode_plc_file(jsonl_path.read_bytes(), jsonl_path.name, "jsonl")
        assert from_csv.errors == [] and from_jsonl.errors == []
        assert from_jsonl.samples == from_csv.samples  # same seed, same values, other encoding


def test_simulator_output_decodes_validates_and_featurizes_cleanly(landing: Path) -> None:
    registry = AssetRegistry.from_file(landing / "assets.json")
    assert len(registry) == N_ASSETS
    policy = EventTimePolicy()  # the job's event-time checks
    last_ms: dict[tuple[str, str], int] = {}
    buffers = {aid: PlcWindowBuffer(aid) for aid in registry.ids()}
    problems: list[str] = []

    plc_files = sorted((landing / "plc").glob("plc-*.*"))
    assert plc_files
    n_samples = 0
    for path in plc_files:
        result = decode_plc_file(path.read_bytes(), str(path.relative_to(landing)), path.suffix[1:])  # type: ignore[arg-type]
        problems += [str(e) for e in result.errors]
        now_ms = max(s.timestamp_ms for s in result.samples) + 1_000
        for k, sample in enumerate(result.samples):
            ref = f"{path.name}:{k + 2}"
            for check in (registry.check_tag_sample(sample, ref), policy.future(sample.timestamp_ms, now_ms, ref)):
                if check is not None:
                    problems.append(str(check))
            buffers[sample.asset_id].add_sample(sample)
            n_samples += 1
    assert n_samples == N_ASSETS * len(PLC_TAGS) * 10 * 60 * MINUTES  # 10 Hz per tag

    for path in sorted((landing / "alarms").glob("*.log")):
        alarms = decode_alarm_file(path.read_bytes(), path.name)
        problems += [str(e) for e in alarms.errors]
        for event in alarms.events:
            problems += [str(p) for p in [registry.check_alarm(event, path.name)] if p is not None]
            buffers[event.asset_id].add_alarm_event(event)

    windows = {aid: buf.flush() for aid, buf in buffers.items()}
    for aid, wins in windows.items():
        assert len(wins) == 60 * MINUTES + 9  # one per second plus the trailing partial windows
        full = [w for w in wins if w.start_ms >= wins[0].first_sample_ms and w.end_ms <= wins[-1].last_sample_ms + 1]
        assert full and all(np.all(np.isfinite(w.values[: 4 * len(PLC_TAGS)])) for w in full)
        msg = plc_features_message(full[0], registry[aid].asset_type, source="plc")
        assert decode_message(encode_message(msg)).asset_id == aid

    baselines: dict[str, ThermalBaseline] = defaultdict(ThermalBaseline)
    counts = {"thermal": 0, "audio": 0}
    announced = []  # the simulator's own manifests, in publication order
    zone = LandingZone(landing)
    for manifest in sorted((landing / "manifests").glob("*.jsonl")):
        for line in read_manifest(manifest) or []:
            if isinstance(line.parsed, ManifestEntry):
                announced.append(line.parsed)
            else:
                problems.append(str(line.parsed))
    for kind in ("thermal", "audio"):
        for entry in [b for b in announced if b.kind == kind]:
            info = registry.get(entry.asset_id)
            assert info is not None
            data = zone.read(entry)
            order = policy.after_last(entry.event_time_ms, last_ms.get((kind, entry.asset_id)), kind, entry.path,
                                      entry.asset_id)
            problems += [str(order)] if order is not None else []
            last_ms[kind, entry.asset_id] = entry.event_time_ms
            blob = SimpleNamespace(asset_id=entry.asset_id, timestamp_ms=entry.event_time_ms, raw_ref=entry.path)
            if kind == "thermal":
                frame = decode_thermal_tiff(data, blob.raw_ref)
                problems += [str(p) for p in [check_frame(frame, blob.raw_ref)] if p is not None]
                baseline = baselines[blob.asset_id]
                msg = thermal_features_message(blob.asset_id, info.asset_type, blob.timestamp_ms, frame,
                                               baseline.baseline_ck, info.regions)
                baseline.update(frame)
                assert 0.0 < msg.stats["ambient_c"] < 60.0 and msg.stats["max_c"] >= msg.stats["p99_c"]
                assert "de_bearing.max_c" in msg.stats
            else:
                clip = decode_wav(data, blob.raw_ref)
                problems += [str(p) for p in [check_clip(clip, 16_000, blob.raw_ref)] if p is not None]
                msg = audio_features_message(blob.asset_id, info.asset_type, blob.timestamp_ms, clip,
                                             asset=info)
                # the clip's, then the machine's, then the recording's, then whether its bearing rings within reach
                assert tuple(msg.stats) == (*AUDIO_STAT_NAMES, RECIPROCATING_STAT, BAND_LIMITED_STAT,
                                            ORDERS_ABOVE_ENVELOPE_STAT)
                assert msg.stats["bearing_freqs_available"] == 1.0 and msg.stats[RECIPROCATING_STAT] == 0.0
                assert msg.stats[BAND_LIMITED_STAT] == msg.stats[ORDERS_ABOVE_ENVELOPE_STAT] == 0.0  # 16 kHz; bearings under 800 Hz
                assert msg.logmel.shape == (64, 101)
            assert decode_message(encode_message(msg)) == msg
            counts[kind] += 1
    assert problems == []
    assert counts["thermal"] == N_ASSETS * 2 * 60 * MINUTES and counts["audio"] == N_ASSETS * 60 * MINUTES
