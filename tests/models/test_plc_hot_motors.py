"""The shipped PLC model on healthy motors that run hot: a winding 75-95 K over ambient at rated
current is an ordinary motor (insulation class F, designed for a class B rise), not a cooling
failure. PLC v5, trained on machines of at most 70 K, called 9 of the 30 healthy exports below
cooling failure (29-75 % of the healthy windows above 75 K in bench/bench_plc_winding_rise.py;
docs/models.md, "PLC v6: motors that run hot")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from linewatch.simulator.config import SimulatorConfig
from linewatch.simulator.plc import format_lines, plc_file_text
from linewatch.simulator.timefmt import iso_ms
from models.inspect import Inspector
from models.inspect.readers import load_assets
from models.registry import default_registry

pytestmark = pytest.mark.skipif(not default_registry().modalities(), reason="no shipped models")
SEED = 8642  # a fleet no model was trained on


def _write(root: Path, renderer, specs, stamp_hour: str) -> list[Path]:
    start = SimulatorConfig().start_time
    paths = []
    for k, spec in enumerate(specs):
        plc = renderer.render(spec, ("plc",)).plc
        path = root / f"plc-{spec.asset_id}-20261129T{stamp_hour}{k:02d}00500.csv"
        path.write_text(plc_file_text(format_lines(plc, iso_ms(start, plc.t), "csv"), "csv"))
        paths.append(path)
    return paths


@pytest.fixture(scope="module")
def hot_fleet(tmp_path_factory) -> tuple[Path, list[Path], list[Path]]:
    """Machines of the training domain whose winding runs 78 K or more over ambient at rated
    current: healthy PLC exports of them, and exports of cooling failures of severity 0.8 or more of
    machines of an ordinary rise (50-70 K), with the fleet's assets.json."""
    from linewatch.simulator.domain import DOMAINS, DomainRenderer, domain_registry_json
    from models.data.domain_data import domain_world

    fleet, _, specs = domain_world("train", 60, SEED, 150)
    renderer = DomainRenderer(fleet, SEED)
    rise = {a.asset_id: a.winding_rise_k for a in fleet}
    root = tmp_path_factory.mktemp("hot")
    (root / "assets.json").write_text(json.dumps(domain_registry_json(fleet, SEED, DOMAINS["train"])))
    healthy = [s for s in specs if s.fault == "normal" and rise[s.asset_id] >= 78.0][:30]
    cooling = [s for s in specs if s.fault == "cooling_failure" and s.severity >= 0.8
               and 50.0 <= rise[s.asset_id] <= 70.0][:12]
    return root, _write(root, renderer, healthy, "14"), _write(root, renderer, cooling, "15")


def test_a_healthy_motor_that_runs_hot_is_not_a_cooling_failure(hot_fleet) -> None:
    root, healthy, _ = hot_fleet
    assert len(healthy) >= 20
    records, _ = Inspector(assets=load_assets(root / "assets.json")).score(healthy)
    assert all(r.error is None and r.modality == "plc" for r in records)
    flagged = [(Path(r.file).name, r.label) for r in records if r.label != "normal"]
    assert len(flagged) <= 1, flagged


def test_a_severe_cooling_failure_of_an_ordinary_motor_is_still_named(hot_fleet) -> None:
    """A severe cooling failure (severity >= 0.8) of a motor of an ordinary rise still shows from one
    window: its winding is then hotter than a healthy motor's of any rise at that current. (A motor
    that runs cool when healthy, <= 50 K, is mostly missed by the PLC model alone since v6: one
    window cannot tell its failure from a healthy hot motor; docs/models.md.)"""
    root, _, cooling = hot_fleet
    assert len(cooling) >= 6
    records, _ = Inspector(assets=load_assets(root / "assets.json")).score(cooling)
    named = sum(r.label == "cooling_failure" for r in records)
    assert named >= 2 * len(records) // 3, [(Path(r.file).name, r.probabilities) for r in records]


@pytest.fixture(scope="module")
def cool_fleet(tmp_path_factory) -> tuple[Path, list[tuple[Path, list[Path]]], list[tuple[Path, list[Path]]]]:
    """Motors of the training domain that run cool (winding rise <= 50 K at rated current): exports of
    their cooling failures past moderate severity and healthy exports, each with three healthy exports
    of the same machine at other times (what ``--healthy-plc`` is given), and the fleet's assets.json."""
    from dataclasses import replace

    from linewatch.simulator.domain import DOMAINS, DomainRenderer, domain_registry_json, draw_domain_specs
    from models.data.domain_data import domain_world

    fleet, _, specs = domain_world("train", 120, SEED + 1, 150)
    renderer = DomainRenderer(fleet, SEED + 1)
    index = {a.asset_id: k for k, a in enumerate(fleet)}
    cool = {a.asset_id for a in fleet if a.winding_rise_k <= 50.0}
    root = tmp_path_factory.mktemp("cool")
    (root / "assets.json").write_text(json.dumps(domain_registry_json(fleet, SEED + 1, DOMAINS["train"])))
    start = SimulatorConfig().start_time
    written = 0

    def write(spec) -> Path:
        nonlocal written
        written += 1
        plc = renderer.render(spec, ("plc",)).plc
        path = root / f"plc-{spec.asset_id}-20261129T{written // 60:02d}{written % 60:02d}00500.csv"
        path.write_text(plc_file_text(format_lines(plc, iso_ms(start, plc.t), "csv"), "csv"))
        return path

    def references(asset_id: str) -> list[Path]:
        ai = index[asset_id]
        drawn = draw_domain_specs(40, [fleet[ai]], 7_919 + ai, DOMAINS["train"])
        normal = [replace(s, asset_index=ai, index=60_000_000 + ai * 100 + k)
                  for k, s in enumerate(drawn) if s.fault == "normal"]
        return [write(s) for s in normal[:3]]

    failures = [s for s in specs if s.fault == "cooling_failure" and s.severity >= 0.5 and s.asset_id in cool][:16]
    healthy = [s for s in specs if s.fault == "normal" and s.asset_id in cool][:16]
    return (root, [(write(s), references(s.asset_id)) for s in failures],
            [(write(s), references(s.asset_id)) for s in healthy])


def test_a_cool_motor_s_cooling_failure_is_named_against_its_healthy_export(cool_fleet) -> None:
    """One window cannot tell a cool-running motor's cooling failure from a healthy hot motor; read against
    the machine's own healthy export (``--healthy-plc``: its healthy winding level, as the job learns it,
    pipeline.features.plc_physics.winding_scale) most are named, and its healthy exports stay normal. (The
    ones still missed run with a winding barely warmer than the bearing when healthy, where the reading's
    cap of 2x binds; bench/bench_plc_winding_rise.py --learned: 30-50 K band 0.15 -> 0.88.)"""
    root, failures, healthy = cool_fleet
    assert len(failures) >= 10 and len(healthy) >= 10
    inspector = Inspector(assets=load_assets(root / "assets.json"))

    def labels(pairs, reference: bool) -> list[str]:
        out = []
        for path, refs in pairs:
            records, _ = inspector.score([path], healthy_plc=refs if reference else None)
            assert records[0].error is None
            out.append(records[0].label)
        return out

    alone = labels(failures, reference=False).count("cooling_failure")
    against = labels(failures, reference=True).count("cooling_failure")
    assert against >= len(failures) // 2 and against >= alone + len(failures) // 4, (alone, against)
    assert sum(label != "normal" for label in labels(healthy, reference=True)) <= 1
