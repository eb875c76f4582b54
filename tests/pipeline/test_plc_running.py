"""The live line's PLC windows say whether the machine ran throughout (real landing zone, the
ingestor the Flink function runs): a stop in a window marks it ``not_running``, which the PLC
prediction reads to withhold every fault (models.withheld_classes)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from models.withheld_classes import withheld_classes
from pipeline.asset_state import AssetState
from pipeline.features.plc_running import NOT_RUNNING_STAT
from pipeline.ingestor import AssetIngestor
from pipeline.landing import ManifestWriter
from tests.pipeline.conftest import job_spec

UNITS = {"motor_current_a": "A", "speed_rpm": "rpm", "bearing_temp_c": "degC", "winding_temp_c": "degC",
         "vibration_rms_mm_s": "mm/s", "pressure_bar": "bar", "run_state": "bool"}


def plc_csv(asset: str, start_ms: int, seconds: int, stopped: tuple[float, float] | None) -> bytes:
    """10 Hz rows; the machine stands still from ``stopped[0]`` to ``stopped[1]`` s (None: runs), or
    without a run-state tag when ``stopped`` is ``(-1, -1)``."""
    from pipeline.decoders import format_timestamp_ms

    rows = ["timestamp,tag,value,quality,unit"]
    for k in range(seconds * 10):
        at = k / 10
        still = stopped is not None and stopped[0] <= at < stopped[1]
        values = {"motor_current_a": 0.0 if still else 20.0, "speed_rpm": 0.0 if still else 1480.0,
                  "bearing_temp_c": 45.0, "winding_temp_c": 70.0, "vibration_rms_mm_s": 0.2 if still else 1.8,
                  "pressure_bar": 0.2 if still else 4.0, "run_state": 0.0 if still else 1.0}
        if stopped == (-1, -1):
            del values["run_state"]
        rows += [f"{format_timestamp_ms(start_ms + 100 * k)},{asset}.{tag},{v},Good,{UNITS[tag]}"
                 for tag, v in values.items()]
    return ("\n".join(rows) + "\n").encode()


def test_a_window_with_a_stop_is_marked_and_withholds_every_plc_fault(tmp_path: Path) -> None:
    (tmp_path / "assets.json").write_text(json.dumps({"assets": [
        {"asset_id": a, "asset_type": "pump", "nominal_rpm": 1480, "rated_current_a": 25.0,
         "tags": {tag: {"unit": unit} for tag, unit in UNITS.items()}} for a in ("PMP-S", "PMP-T")]}))
    ingestor = AssetIngestor(job_spec(tmp_path, "x", "redis://unused"))
    writer = ManifestWriter(tmp_path, epoch=1)
    t0 = (int(time.time()) - 3_600) * 1000

    def windows(asset: str, stopped: tuple[float, float] | None) -> list[tuple[int, dict[str, float], tuple[str, ...]]]:
        entry = writer.write_blob(f"plc/{asset}/0.csv", plc_csv(asset, t0, 60, stopped), asset, t0, end_ms=t0 + 60_000)
        writer.publish([entry])
        out = ingestor.on_line(entry.to_json(), AssetState(), asset)
        msgs = [e.message for e in out.entries if hasattr(e.message, "vector")]
        assert msgs, out
        return [((m.window_end_ms - t0) // 1000, m.stats, withheld_classes("plc", m.vector, m.stats)) for m in msgs]

    stop = windows("PMP-S", (30.0, 36.0))  # a 6 s stop half-way through the minute
    marked = [end for end, stats, _ in stop if stats[NOT_RUNNING_STAT] == 1.0]
    assert marked and all(30 < end <= 46 for end in marked), marked  # exactly the windows holding a stop tick
    assert all(stats[NOT_RUNNING_STAT] == 0.0 for end, stats, _ in stop if end <= 30 or end > 46)
    assert all({"imbalance", "cooling_failure", "cavitation"} <= set(w) for _, s, w in stop if s[NOT_RUNNING_STAT])
    assert all(w == () for _, s, w in stop if not s[NOT_RUNNING_STAT])  # every tag there: nothing withheld
    untagged = windows("PMP-T", (-1, -1))  # a historian without a run-state tag: read as before
    assert untagged and all(stats == {} for _, stats, _ in untagged)
