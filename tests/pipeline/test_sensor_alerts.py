"""A sensor whose inputs the line keeps refusing raises an alert for the operators (``pipeline.sensor_refusals``).

Through the ingestor the Flink function runs, on a real landing zone, with its entries written by the
job's Redis sink to a real server and routed by the real alerts service: a covered camera, a frozen one,
a PLC export whose every row is refused. A few refusals between accepted inputs raise nothing; the
count survives a restart (it is in the asset's state); a replay writes the request once."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest
import redis

from linewatch.contract import AlertRequest, DeadLetterReason, StreamNames, decode_message
from linewatch.service_settings import AlertsSettings
from linewatch.streaming import StreamWorker, WorkerConfig
from pipeline.asset_state import AssetState
from pipeline.ingestor import AssetIngestor
from pipeline.landing import ManifestWriter
from pipeline.landing.contract import ManifestEntry, format_time_ms
from pipeline.redis_sink import PendingEntry, RedisStreamWriter
from pipeline.sensor_refusals import LABEL
from services.alerts.router import AlertRouter
from services.alerts.store import AlertStore
from tests.pipeline.conftest import job_spec, scene_frame, tiff_bytes
from tests.pipeline.test_no_signal import covered_lens
from tests.services.support import running, wait_for

ASSET = "MTR-S"
TAGS = [{"name": "motor_current_a", "unit": "A", "valid_min": 0, "valid_max": 500}]


class Line:
    """One asset's inputs, fed to the ingestor as the job does (its state through storage after every
    line), the entries written by the job's sink."""

    def __init__(self, landing: Path, redis_url: str = "redis://unused", prefix: str = "x", **flink: object) -> None:
        landing.mkdir(parents=True, exist_ok=True)
        (landing / "assets.json").write_text(json.dumps({"assets": [
            {"asset_id": ASSET, "asset_type": "fan", "regions": {}, "region_fit": False, "tags": TAGS}]}))
        self.spec = job_spec(landing, prefix, redis_url, thermal_reference_frames=0, audio_baseline_clips=0,
                             **flink)
        self.ingestor = AssetIngestor(self.spec)
        self.writer = ManifestWriter(landing, epoch=1)
        self.state = AssetState()
        self.at = (int(time.time()) - 600) * 1000
        self.k = 0
        self.entries: list[PendingEntry] = []

    def announce(self, kind: str, data: bytes) -> ManifestEntry:
        self.k += 1
        path = {"thermal": f"thermal/frames/{ASSET}/{self.k}.tiff", "plc": f"plc/{ASSET}-{self.k}.csv"}[kind]
        entry = self.writer.write_blob(path, data, ASSET, self.at + 1000 * self.k)
        self.writer.publish([entry])
        return entry

    def feed(self, entry: ManifestEntry) -> list[PendingEntry]:
        out = self.ingestor.on_line(entry.to_json(), self.state, ASSET)
        self.state = self.state.copy_through_storage()  # what Flink would restore
        self.entries += out.entries
        return out.entries

    def send(self, kind: str, data: bytes) -> list[PendingEntry]:
        return self.feed(self.announce(kind, data))

    def requests(self) -> list[AlertRequest]:
        return [e.message for e in self.entries if isinstance(e.message, AlertRequest)]


def good(k: int) -> bytes:
    return tiff_bytes(scene_frame(29_315 + 7 * k))


def covered(k: int) -> bytes:
    return tiff_bytes(covered_lens(np.random.default_rng(k), 0.05))


def test_a_covered_camera_raises_one_alert_and_its_next_frame_clears_it(tmp_path: Path, redis_url: str,
                                                                        redis_client: redis.Redis,
                                                                        stream_names: StreamNames) -> None:
    line = Line(tmp_path / "landing", redis_url, stream_names.prefix, sensor_alert_after=3)
    line.send("thermal", good(0))
    checkpoint = line.state.copy_through_storage()  # the job's last checkpoint before the camera was covered
    announced = [line.announce("thermal", covered(k)) for k in range(5)]
    for entry in announced:
        line.feed(entry)
    back = line.announce("thermal", good(1))
    line.feed(back)
    raise_, clear = line.requests()
    assert (raise_.state, clear.state) == ("raise", "clear")
    assert raise_.source == "sensor" and raise_.label == LABEL and raise_.episode_key == f"sensor:{ASSET}:thermal"
    assert raise_.details["refused"] == 3 and raise_.details["reason"] == "no_signal"
    assert raise_.event_time_ms == announced[2].event_time_ms and raise_.details["since_ms"] == announced[0].event_time_ms
    assert "thermal camera: 3 inputs in a row refused" in raise_.message and "check the camera" in raise_.message
    assert clear.event_time_ms == back.event_time_ms and "after 5 refused inputs" in clear.message
    assert line.state.refusals == {} and "refusals" not in line.state.order_json()

    sink = RedisStreamWriter.open(redis_url, 3600)
    sink.write(line.entries)
    # a crash after the last write: the job restores its checkpoint and reads the same lines again
    replay = Line(tmp_path / "landing", redis_url, stream_names.prefix, sensor_alert_after=3)
    replay.state = checkpoint
    for entry in (*announced, back):
        replay.feed(entry)
    assert [r.model_dump() for r in replay.requests()] == [r.model_dump() for r in line.requests()]
    sink.write(replay.entries)
    sink.close()
    written = [decode_message(f) for _, f in redis_client.xrange(stream_names.alert_requests())]
    assert [(r.state, r.event_time_ms) for r in written] == [("raise", raise_.event_time_ms),
                                                           ("clear", clear.event_time_ms)]

    router = AlertRouter(redis_client, stream_names, AlertsSettings())
    worker = StreamWorker(redis_client, stream_names, WorkerConfig(role="alerting", group="alerting", units=1,
                                                                   tick_ms=50, lease_ttl_ms=2000, max_batch=256),
                          router.inputs, router)
    store = AlertStore(redis_client, stream_names, AlertsSettings())
    with running(worker):
        wait_for(lambda: store.list(open_only=False) and not store.list(open_only=False)[0].active, 10,
                 "the sensor alert raised and returned to normal")
    [alert] = store.list(open_only=False)
    assert (alert.source, alert.asset_id, alert.label) == ("sensor", ASSET, LABEL)
    assert alert.state(now_ms=int(time.time() * 1000)) == "rtn_unacknowledged" and "covered lens" in alert.message


def test_a_frozen_camera_raises_it_too(tmp_path: Path) -> None:
    line = Line(tmp_path, sensor_alert_after=3)
    frozen = good(0)
    for _ in range(4):
        line.send("thermal", frozen)
    [req] = line.requests()
    assert req.details["reason"] == DeadLetterReason.DUPLICATE.value and "check that the camera updates" in req.message


def test_a_few_refusals_between_accepted_frames_raise_nothing(tmp_path: Path) -> None:
    line = Line(tmp_path, sensor_alert_after=3)
    for k in range(4):
        line.send("thermal", covered(2 * k))
        line.send("thermal", covered(2 * k + 1))
        line.send("thermal", good(k))
    assert line.requests() == [] and line.state.refusals == {}


def test_late_and_resent_frames_are_not_a_sensor_fault(tmp_path: Path) -> None:
    """A gateway that sends old frames again (new manifest lines, old time stamps): refused as late or
    duplicate, and nothing about the camera now."""
    line = Line(tmp_path, sensor_alert_after=3)
    sent = [line.send("thermal", good(k)) for k in range(3)]
    assert all(len(s) == 1 for s in sent)
    old = line.at
    for k in range(6):
        entry = line.writer.write_blob(f"thermal/frames/{ASSET}/again-{k}.tiff", good(k % 3), ASSET, old + 1000 * (k % 3 + 1))
        line.writer.publish([entry])
        [letter] = line.feed(entry)
        assert letter.message.reason in (DeadLetterReason.LATE, DeadLetterReason.DUPLICATE)
    assert line.requests() == [] and line.state.refusals == {}


def test_the_count_survives_a_restart_and_0_turns_it_off(tmp_path: Path) -> None:
    line = Line(tmp_path / "a", sensor_alert_after=3)
    line.send("thermal", covered(0))
    line.send("thermal", covered(1))
    assert line.state.refusals["thermal"].refused == 2  # restored from storage after every line
    line.send("thermal", covered(2))
    assert [r.state for r in line.requests()] == ["raise"]
    off = Line(tmp_path / "b", sensor_alert_after=0)
    for k in range(10):
        off.send("thermal", covered(k))
    assert off.requests() == [] and off.state.refusals == {}


def plc_file(start_ms: int, value: str) -> bytes:
    rows = [f"{format_time_ms(start_ms + 100 * i)},{ASSET}.motor_current_a,{value},Good,A" for i in range(20)]
    return ("\n".join(["timestamp,tag,value,quality,unit", *rows]) + "\n").encode()


@pytest.mark.parametrize("bad_rows", ["999999", "abc"])
def test_a_plc_export_whose_every_row_is_refused(tmp_path: Path, bad_rows: str) -> None:
    """Files whose every row is refused (out of range, not a number) count; a file with one bad row
    among good ones is an accepted input."""
    line = Line(tmp_path, sensor_alert_after=3)
    for _ in range(3):
        line.send("plc", plc_file(line.at + 1000 * (line.k + 1), bad_rows))
    [req] = line.requests()
    assert "PLC export: 3 inputs in a row refused" in req.message
    mixed = plc_file(line.at + 1000 * (line.k + 1), "12.5").replace(b",12.5,", b"," + bad_rows.encode() + b",", 1)
    line.send("plc", mixed)
    assert [r.state for r in line.requests()] == ["raise", "clear"]
