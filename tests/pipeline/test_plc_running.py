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


def test_windows_with_a_stop_and_the_run_up_after_it_are_marked_and_withhold_every_plc_fault(tmp_path: Path) -> None:
    t0 = (int(time.time()) - 3_600) * 1000

    def windows(asset: str, stopped: tuple[float, float] | None, run_up_s: float = 20.0
                ) -> list[tuple[int, dict[str, float], tuple[str, ...]]]:
        """(window start s, stats, withheld classes) of a 90 s file, each case a fresh job and landing zone."""
        landing = tmp_path / f"{asset}-{run_up_s}"
        landing.mkdir()
        (landing / "assets.json").write_text(json.dumps({"assets": [
            {"asset_id": asset, "asset_type": "pump", "nominal_rpm": 1480, "rated_current_a": 25.0,
             "tags": {tag: {"unit": unit} for tag, unit in UNITS.items()}}]}))
        ingestor = AssetIngestor(job_spec(landing, "x", "redis://unused", plc_run_up_s=run_up_s))
        writer = ManifestWriter(landing, epoch=1)
        entry = writer.write_blob(f"plc/{asset}/0.csv", plc_csv(asset, t0, 90, stopped), asset, t0,
                                  end_ms=t0 + 90_000)
        writer.publish([entry])
        out = ingestor.on_line(entry.to_json(), AssetState(), asset)
        msgs = [e.message for e in out.entries if hasattr(e.message, "vector")]
        assert msgs, out
        return [((m.window_start_ms - t0) // 1000, m.stats, withheld_classes("plc", m.vector, m.stats)) for m in msgs]

    stop = windows("PMP-S", (30.0, 36.0))  # a 6 s stop: windows starting 21-35 s hold it, 36-55 s run up
    marked = sorted(start for start, stats, _ in stop if stats[NOT_RUNNING_STAT] == 1.0)
    assert marked == list(range(21, 56)), marked
    assert max(start for start, _, _ in stop) > 60  # and later windows are read again
    assert all({"imbalance", "cooling_failure", "cavitation"} <= set(w) for _, s, w in stop if s[NOT_RUNNING_STAT])
    assert all(w == () for _, s, w in stop if not s[NOT_RUNNING_STAT])  # every tag there: nothing withheld
    no_run_up = windows("PMP-S", (30.0, 36.0), run_up_s=0.0)  # flink.plc_run_up_s 0: the standstill alone
    assert sorted(start for start, stats, _ in no_run_up if stats[NOT_RUNNING_STAT] == 1.0) == list(range(21, 36))
    untagged = windows("PMP-T", (-1, -1))  # a historian without a run-state tag: read as before
    assert untagged and all(stats == {} for _, stats, _ in untagged)
