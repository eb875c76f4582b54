"""``linewatch inspect --healthy-thermal`` reads a healthy frame taken at another load at the scored frame's load
where the PLC exports of both times give the motor current (:mod:`models.inspect.reference_load`)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import tifffile

from linewatch.simulator.config import SimulatorConfig
from linewatch.simulator.plc import format_lines, plc_file_text
from linewatch.simulator.timefmt import iso_ms
from models.inspect import Inspector
from models.inspect.readers import load_assets
from models.registry import default_registry

pytestmark = pytest.mark.skipif(not default_registry().modalities(), reason="no shipped models")
SEED = 5813  # a fleet no model was trained on


@pytest.fixture(scope="module")
def load_fleet(tmp_path_factory) -> tuple[Path, list[dict[str, Path]]]:
    """Machines of the training domain with a rated current, each: a healthy frame and PLC export at full
    load (``ref``), a healthy frame and export at light load (``light``), a cooling failure of severity
    0.6 or more at light load (``cooling``) and a healthy frame and export at full load (``full``)."""
    from linewatch.simulator.domain import DOMAINS, DomainRenderer, domain_registry_json
    from models.data.domain_data import domain_world

    fleet, profiles, specs = domain_world("train", 24, SEED, 40)
    renderer = DomainRenderer(fleet, SEED)
    root = tmp_path_factory.mktemp("reference-load")
    (root / "assets.json").write_text(json.dumps(domain_registry_json(fleet, SEED, DOMAINS["train"])))
    start = SimulatorConfig().start_time
    cases, seen = [], set()
    for s in specs:
        if (s.fault != "cooling_failure" or s.severity < 0.6 or s.asset_id in seen
                or not profiles[s.asset_id].rated_current_a):
            continue
        seen.add(s.asset_id)
        healthy = replace(s, fault="normal", physical_fault="normal", severity=0.0, variant="")
        states = {"ref": replace(healthy, index=s.index + 5_000_000, load_level=1.0),
                  "light": replace(healthy, index=s.index + 6_000_000, load_level=-1.0),
                  "cooling": replace(s, load_level=-1.0),
                  "full": replace(healthy, index=s.index + 7_000_000, load_level=1.0)}
        case = {}
        for k, (name, spec) in enumerate(states.items()):
            sample = renderer.render(spec, ("thermal", "plc"))
            stamp = f"20261129T1{k}0000{len(cases):03d}"
            frame, plc = root / f"{s.asset_id}-{stamp}.tiff", root / f"plc-{s.asset_id}-{stamp}.csv"
            tifffile.imwrite(frame, sample.frame)
            plc.write_text(plc_file_text(format_lines(sample.plc, iso_ms(start, sample.plc.t), "csv"), "csv"))
            case[name], case[f"{name}_plc"] = frame, plc
        cases.append(case)
    return root, cases


def test_a_healthy_frame_at_another_load_is_read_at_the_frame_s_load(load_fleet) -> None:
    """Against a healthy frame at full load a cooling failure at light load shows a body less warm than it is
    against the machine's own healthy body at that load; read at its own load (both PLC exports give the
    current) it shows more of the failure. A healthy frame at full load read against one at light load is
    not called a fault then. Where the currents differ, the file says how the reference was read."""
    root, cases = load_fleet
    assert len(cases) >= 8
    inspector = Inspector(assets=load_assets(root / "assets.json"))

    def thermal(files: list[Path], ref: Path, ref_plc: Path | None) -> object:
        records, _ = inspector.score(files, healthy_thermal=[ref], healthy_plc=[ref_plc] if ref_plc else None)
        (record,) = [r for r in records if r.modality == "thermal"]
        assert record.error is None
        return record

    as_is = [thermal([c["cooling"]], c["ref"], None) for c in cases]
    at_load = [thermal([c["cooling"], c["cooling_plc"]], c["ref"], c["ref_plc"]) for c in cases]
    noted = [any("read at this frame's load" in w for w in r.warnings) for r in at_load]
    assert sum(noted) >= len(cases) // 2, noted  # loads far enough apart that the current shows it
    assert not any(any("read at this frame's load" in w for w in r.warnings) for r in as_is)
    gain = [b.probabilities["cooling_failure"] - a.probabilities["cooling_failure"]
            for a, b, n in zip(as_is, at_load, noted, strict=True) if n]
    assert min(gain) > -0.02 and np.mean(gain) > 0.03, gain
    assert sum(r.label == "cooling_failure" for r in at_load) >= sum(r.label == "cooling_failure" for r in as_is)

    healthy_as_is = [thermal([c["full"]], c["light"], None) for c in cases]
    healthy = [thermal([c["full"], c["full_plc"]], c["light"], c["light_plc"]) for c in cases]
    assert [r.label for r in healthy] == ["normal"] * len(cases), [r.probabilities for r in healthy]
    assert np.mean([r.probabilities["normal"] for r in healthy]) > \
        np.mean([r.probabilities["normal"] for r in healthy_as_is])


def test_a_healthy_export_that_gives_no_level_still_gives_its_load(load_fleet, tmp_path) -> None:
    """A commissioning export of a machine running below its nameplate speed, without a bearing temperature,
    gives no level (vibration and pressure are learnt at nameplate speed only, the winding against the
    bearing): its machine's PLC file says the export was not used and why, and the export's current still
    reads the healthy frame at the scored frame's load. Before, such an export stopped the whole call."""
    root, cases = load_fleet
    inspector = Inspector(assets=load_assets(root / "assets.json"))
    read_at_load = 0
    for c in cases:
        lines = c["ref_plc"].read_text().splitlines()
        slow = tmp_path / c["ref_plc"].name
        slow.write_text("\n".join([lines[0], *(
            ",".join([ts, tag, f"{float(value) * 0.85:.3f}" if tag.endswith(".speed_rpm") else value, *rest])
            for ts, tag, value, *rest in (line.split(",") for line in lines[1:])
            if not tag.endswith(".bearing_temp_c"))]) + "\n")
        assert inspector.plc_baselines([slow]).popitem()[1].empty
        records, _ = inspector.score([c["cooling"], c["cooling_plc"]], healthy_thermal=[c["ref"]], healthy_plc=[slow])
        frame, plc = sorted(records, key=lambda r: r.modality != "thermal")
        assert frame.error is None and plc.error is None, (frame.error, plc.error)
        assert any("was not used: it has no window of normal running" in w and "not_at_rated_speed" in w
                   for w in plc.warnings), plc.warnings
        read_at_load += any("read at this frame's load" in w for w in frame.warnings)
    assert read_at_load >= len(cases) // 2
