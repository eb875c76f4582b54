"""The simulator announces every closed blob in ``<landing>/manifests/`` as the ingestion job
expects (docs/ingestion.md, "The landing-zone contract"), read back with the pipeline's own
decoders."""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

from linewatch.simulator import Factory, SimulatorConfig
from linewatch.simulator.manifests import epoch_ms
from linewatch.simulator.timefmt import file_stamp
from pipeline.decoders import decode_alarm_file, decode_plc_file
from pipeline.landing import MODALITY_OF_KIND, LandingZone, ManifestEntry, parse_manifest_line, read_manifest

ISO = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z"
ROLL_S = 5.0


@dataclass(frozen=True)
class Published:
    """One manifest line, where it was published (manifest index, line index) and its fields."""

    position: tuple[int, int]
    manifest: str
    fields: dict


def published_lines(root: Path) -> list[Published]:
    """Every manifest line in publication order (manifest names carry a zero-padded counter)."""
    out: list[Published] = []
    for i, path in enumerate(sorted((root / "manifests").iterdir())):
        for j, line in enumerate(path.read_text().splitlines()):
            out.append(Published((i, j), path.name, json.loads(line)))
    return out


def blob_files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for sub in ("plc", "alarms", "thermal", "audio")
            for p in (root / sub).rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def alarm_config() -> SimulatorConfig:
    """Frequent nuisance alarms, so that rolls with alarm logs are certain."""
    return SimulatorConfig(seed=5, batch_roll_seconds=ROLL_S, nuisance_alarms_per_hour=2000.0, fault_fraction=1.0)


@pytest.fixture(scope="module")
def alarm_dir(alarm_config: SimulatorConfig, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """2 assets x 20 simulated seconds, rolling files every 5 s, alarms in most rolls."""
    out = tmp_path_factory.mktemp("manifests")
    Factory(alarm_config, n_assets=2).run_batch(out, minutes=20 / 60, progress=False)
    return out


def test_the_ingestion_decoders_accept_every_line(alarm_dir: Path) -> None:
    kinds: set[str] = set()
    zone = LandingZone(alarm_dir)
    manifests = sorted((alarm_dir / "manifests").iterdir())
    assert manifests
    for path in manifests:
        lines = read_manifest(path) or []
        assert len(lines) == len(path.read_text().splitlines())
        for line in lines:
            entry = line.parsed  # the pipeline's one manifest parser
            assert isinstance(entry, ManifestEntry), entry
            zone.read(entry)  # raises on a missing file, another size or another SHA-256
            assert entry == parse_manifest_line(line.text) and entry.seq is not None
            kinds.add(entry.kind)
    assert kinds == {"plc", "alarms", "thermal", "audio"}


@pytest.mark.parametrize("fixture", ["batch_dir", "alarm_dir"])
def test_every_closed_blob_is_announced_once_with_its_size_and_hash(fixture: str, request: pytest.FixtureRequest) -> None:
    root: Path = request.getfixturevalue(fixture)
    lines = published_lines(root)
    paths = [p.fields["path"] for p in lines]
    assert len(paths) == len(set(paths)), "a blob announced twice"
    assert set(paths) == blob_files(root)
    for p in lines:
        data = (root / p.fields["path"]).read_bytes()
        assert len(data) == p.fields["bytes"] and hashlib.sha256(data).hexdigest() == p.fields["sha256"]
    # the old per-modality manifests are gone; nothing is left in staging or hidden in manifests/
    assert not list(root.glob("*/manifest-*.jsonl"))
    assert list((root / ".staging").iterdir()) == []


def test_line_fields_and_manifest_names(alarm_dir: Path, alarm_config: SimulatorConfig) -> None:
    epoch = epoch_ms(alarm_config.start_time)
    names = {p.name for p in (alarm_dir / "manifests").iterdir()}
    assert all(re.fullmatch(rf"sim-{epoch}-\d{{9}}\.jsonl", n) for n in names), names
    assert len(names) == 4  # one per 5 s roll
    for p in published_lines(alarm_dir):
        f = p.fields
        kind = f["kind"]
        rolling = kind in ("plc", "alarms")
        want = {"asset_id", "timestamp", "path", "bytes", "sha256", "seq", "epoch", "kind"} | ({"end"} if rolling else set())
        assert set(f) == want
        assert f["epoch"] == epoch and f["path"].split("/")[0] == kind and f["asset_id"] in f["path"]
        assert re.fullmatch(ISO, f["timestamp"])
        stamp = f["timestamp"].replace("-", "").replace(":", "").replace(".", "").rstrip("Z")
        assert stamp in f["path"]  # the frame time / clip start / roll start, as in the file name
        if rolling:
            start = parse_manifest_line(json.dumps(f)).event_time_ms
            end = parse_manifest_line(json.dumps(f)).end_ms
            assert end == start + int(ROLL_S * 1000)


def test_rows_of_a_rolling_file_lie_in_its_roll(alarm_dir: Path) -> None:
    alarm_events = 0
    for p in published_lines(alarm_dir):
        if p.fields["kind"] not in ("plc", "alarms"):
            continue
        entry = parse_manifest_line(json.dumps(p.fields))
        assert entry.end_ms is not None
        data = (alarm_dir / entry.path).read_bytes()
        if entry.kind == "plc":
            result = decode_plc_file(data, entry.path, "csv")
            times = [s.timestamp_ms for s in result.samples]
        else:
            result = decode_alarm_file(data, entry.path)
            times = [e.timestamp_ms for e in result.events]
            alarm_events += len(times)
        assert result.errors == [] and times
        assert entry.event_time_ms <= min(times) and max(times) < entry.end_ms
    assert alarm_events > 0


@pytest.mark.parametrize("fixture", ["batch_dir", "alarm_dir"])
def test_seq_counts_each_asset_and_modality_in_publication_order(fixture: str, request: pytest.FixtureRequest) -> None:
    lines = published_lines(request.getfixturevalue(fixture))
    seqs: dict[tuple[str, str], list[int]] = defaultdict(list)
    times: dict[tuple[str, str], list[str]] = defaultdict(list)
    for p in lines:  # publication order
        key = (p.fields["asset_id"], MODALITY_OF_KIND[p.fields["kind"]])
        seqs[key].append(p.fields["seq"])
        times[(p.fields["asset_id"], p.fields["kind"])].append(p.fields["timestamp"])
    assert {m for _, m in seqs} == {"plc", "thermal", "audio"}
    for key, got in seqs.items():
        assert got == list(range(len(got))), f"{key}: seq not 0, 1, 2, ... in publication order"
    for key, stamps in times.items():
        assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps), f"{key}: event times not increasing"


def test_an_alarm_log_comes_right_before_the_plc_file_of_its_roll(alarm_dir: Path) -> None:
    lines = published_lines(alarm_dir)
    plc = {(p.fields["asset_id"], p.fields["timestamp"]): p for p in lines if p.fields["kind"] == "plc"}
    alarms = [p for p in lines if p.fields["kind"] == "alarms"]
    assert alarms
    for a in alarms:
        partner = plc[(a.fields["asset_id"], a.fields["timestamp"])]
        assert a.fields["seq"] + 1 == partner.fields["seq"]
        assert a.position < partner.position and a.manifest == partner.manifest
        assert a.fields["end"] == partner.fields["end"]


def test_manifests_can_be_switched_off(tmp_path: Path) -> None:
    cfg = SimulatorConfig(seed=3, batch_roll_seconds=5.0, write_manifests=False)
    summary = Factory(cfg, n_assets=1).run_batch(tmp_path, minutes=5 / 60, progress=False)
    assert summary.manifest_files == 0
    assert not (tmp_path / "manifests").exists() and not (tmp_path / ".staging").exists()
    assert summary.thermal_frames > 0 and summary.audio_clips > 0 and summary.plc_files == 1
    stamp = file_stamp(cfg.start_time, 0.0)
    assert (tmp_path / "plc" / f"plc-PMP-01-{stamp}.csv").is_file()
