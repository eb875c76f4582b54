"""Awkward and hostile gateways against a real PyFlink job (issue 8): every announced blob ends as
exactly one entry or exactly one dead letter with a reason, and every manifest is archived.

One job serves the module; each test uses its own asset. Each case failed on the code before
issue 8 (docs/ingestion.md, "Hostile gateways"): older epochs and a clock set back were dropped
silently, rejected lines kept their manifest forever, a reused seq was dropped as a replay, blank
lines became dead letters, a future PLC row poisoned its asset, a 2 GB "frame" was read. Also a
camera whose lens is covered: its run of refused frames raises a sensor alert.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import redis

from linewatch.contract import AlertRequest, DeadLetterReason, StreamNames
from pipeline.landing import ManifestWriter, format_time_ms
from pipeline.runner import IngestJob
from tests.pipeline.conftest import feature_entries, make_job, read_stream, scene_frame, tiff_bytes, wait_for
from tests.pipeline.test_no_signal import covered_lens

pytestmark = [pytest.mark.flink, pytest.mark.slow]

ASSETS = ["EPO-1", "CLK-1", "PAR-1", "REU-1", "CRL-1", "PLC-1", "BIG-1", "COV-1"]
T0 = 1_795_960_800_000  # 2026-11-29T14:00:00Z


@pytest.fixture(scope="module")
def landing(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    tags = [{"name": "motor_current_a", "unit": "A", "valid_min": 0, "valid_max": 500}]
    (root / "assets.json").write_text(json.dumps(
        {"assets": [{"asset_id": a, "asset_type": "pump", "regions": {}, "region_fit": False, "tags": tags} for a in ASSETS]}))
    return root


@pytest.fixture(scope="module")
def names(prefix: str) -> StreamNames:
    return StreamNames(prefix=prefix, shards=2)


@pytest.fixture(scope="module")
def job(landing: Path, prefix: str, redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[IngestJob]:
    job = make_job(landing, prefix, tmp_path_factory.mktemp("job"), redis_url, checkpoint_interval_ms=500,
                   reorder_timeout_ms=2000)
    job.start()
    job.wait_ready()
    yield job
    job.stop()


def frame(value: int) -> bytes:
    return tiff_bytes(scene_frame(29315 + value))


def frames_of(client: redis.Redis, names: StreamNames, asset: str) -> list[int]:
    return [m.event_time_ms for _, m in feature_entries(client, names, "thermal") if m.asset_id == asset]  # type: ignore[attr-defined]


def dead_of(client: redis.Redis, names: StreamNames, asset: str) -> list:
    return [m for _, m in read_stream(client, names.deadletter) if m.asset_id == asset]  # type: ignore[attr-defined]


def wait_archived(job: IngestJob, manifests: list[Path]) -> None:
    wait_for(lambda: not any(p.exists() for p in manifests), 60, f"manifests archived: {[p.name for p in manifests]}",
             job)


def test_epochs_interleaved_in_random_directory_order(job, landing, ingest_redis, names) -> None:
    published, manifests, t = [], [], T0
    batches = []
    for epoch in (1000, 2000, 3000):  # three gateway restarts' worth of one-line manifests
        writer = ManifestWriter(landing, epoch=epoch, name_prefix=f"epo{epoch}", manifest_dir="staged-epo")
        for i in range(4):
            entry = writer.write_blob(f"thermal/frames/EPO-1/{epoch}-{i}.tiff", frame(i), "EPO-1", t)
            batches.append(writer.publish([entry]))
            published.append(t)
            t += 100
    for path in random.Random(5).sample(batches, len(batches)):  # all visible in one scan, any order
        target = landing / "manifests" / f"{random.Random(path.name).getrandbits(40):x}.jsonl"
        path.rename(target)
        manifests.append(target)
    wait_for(lambda: len(frames_of(ingest_redis, names, "EPO-1")) >= len(published), 60, "every epoch's frames", job)
    assert frames_of(ingest_redis, names, "EPO-1") == published
    assert dead_of(ingest_redis, names, "EPO-1") == []
    wait_archived(job, manifests)


def test_a_gateway_whose_clock_went_back(job, landing, ingest_redis, names) -> None:
    before = ManifestWriter(landing, epoch=1_795_960_000_000, name_prefix="clk-a")
    first = [before.write_blob(f"thermal/frames/CLK-1/a{i}.tiff", frame(i), "CLK-1", T0 + i) for i in range(3)]
    manifests = [before.publish(first)]
    wait_for(lambda: len(frames_of(ingest_redis, names, "CLK-1")) >= 3, 60, "the first epoch", job)
    after = ManifestWriter(landing, epoch=5, name_prefix="clk-b")  # restarted without a real-time clock
    later = [after.write_blob(f"thermal/frames/CLK-1/b{i}.tiff", frame(i), "CLK-1", T0 + 1000 + i) for i in range(3)]
    manifests.append(after.publish(later))
    wait_for(lambda: len(frames_of(ingest_redis, names, "CLK-1")) >= 6, 60, "the lower epoch's frames", job)
    assert frames_of(ingest_redis, names, "CLK-1") == [T0, T0 + 1, T0 + 2, T0 + 1000, T0 + 1001, T0 + 1002]
    assert dead_of(ingest_redis, names, "CLK-1") == []
    wait_archived(job, manifests)


def test_lines_the_job_rejects_are_dead_letters_and_their_manifest_is_archived(job, landing, ingest_redis,
                                                                               names) -> None:
    writer = ManifestWriter(landing, epoch=1, name_prefix="par")
    good = writer.write_blob("thermal/frames/PAR-1/ok.tiff", frame(1), "PAR-1", T0)
    bad = []
    for i, change in enumerate(({"timestamp": T0 + 10}, {"timestamp": "2026-11-29T14:00:00.010"}, {"bytes": None},
                                {"sha256": None})):  # epoch ms, no zone, no size, no checksum
        blob = writer.write_blob(f"thermal/frames/PAR-1/bad{i}.tiff", frame(i), "PAR-1", T0 + 10 + i)
        data = json.loads(blob.to_json()) | change
        bad.append(json.dumps({k: v for k, v in data.items() if v is not None}))
    manifest = writer.publish([good], raw_lines=bad)
    wait_for(lambda: len(dead_of(ingest_redis, names, "PAR-1")) >= 4 and frames_of(ingest_redis, names, "PAR-1"),
             60, "four dead letters and one entry", job)
    assert sorted(d.reason for d in dead_of(ingest_redis, names, "PAR-1")) == [DeadLetterReason.SCHEMA_ERROR] * 4
    wait_archived(job, [manifest])


def test_a_reused_seq_with_a_new_blob_is_processed(job, landing, ingest_redis, names) -> None:
    writer = ManifestWriter(landing, epoch=7, name_prefix="reu")
    entries = [writer.write_blob(f"thermal/frames/REU-1/{i}.tiff", frame(i), "REU-1", T0 + i) for i in range(3)]
    manifests = [writer.publish(entries)]
    wait_for(lambda: len(frames_of(ingest_redis, names, "REU-1")) >= 3, 60, "the first three", job)
    again = replace(writer.write_blob("thermal/frames/REU-1/new.tiff", frame(7), "REU-1", T0 + 5000), seq=1)
    manifests.append(writer.publish([again]))  # a counter reset without a new epoch
    wait_for(lambda: len(frames_of(ingest_redis, names, "REU-1")) >= 4, 60, "the reused seq's blob", job)
    assert frames_of(ingest_redis, names, "REU-1") == [T0, T0 + 1, T0 + 2, T0 + 5000]
    wait_archived(job, manifests)


def test_blank_lines_are_ignored_and_a_bad_middle_line_names_its_manifest(job, landing, ingest_redis, names) -> None:
    writer = ManifestWriter(landing, epoch=1, name_prefix="crl")
    a = writer.write_blob("thermal/frames/CRL-1/1.tiff", frame(1), "CRL-1", T0)
    b = writer.write_blob("thermal/frames/CRL-1/2.tiff", frame(2), "CRL-1", T0 + 1)
    staged = landing / ".staging" / "crlf.jsonl"
    staged.parent.mkdir(exist_ok=True)
    staged.write_bytes(f'{a.to_json()}\r\n{{"asset_id": "CRL-1", "path\r\n{b.to_json()}\r\n\r\n  \r\n'.encode())
    manifest = landing / "manifests" / "crlf-gateway.jsonl"
    staged.rename(manifest)
    def dead() -> list[tuple[DeadLetterReason, str]]:  # the bad line names no asset: find it by its reference
        return [(m.reason, m.raw_ref) for _, m in read_stream(ingest_redis, names.deadletter)  # type: ignore[attr-defined]
                if m.raw_ref.startswith("manifests/crlf-gateway") or m.asset_id == "CRL-1"]  # type: ignore[attr-defined]

    wait_for(lambda: len(frames_of(ingest_redis, names, "CRL-1")) >= 2 and dead(), 60,
             "two entries and the bad line's dead letter", job)
    wait_archived(job, [manifest])
    assert dead() == [(DeadLetterReason.DECODE_ERROR, "manifests/crlf-gateway.jsonl:2")], "blank lines must be ignored"
    assert frames_of(ingest_redis, names, "CRL-1") == [T0, T0 + 1]


def plc_file(rows: list[tuple[int, float]]) -> bytes:
    lines = ["timestamp,tag,value,quality,unit"] + [f"{format_time_ms(t)},PLC-1.motor_current_a,{v},Good,A"
                                                     for t, v in rows]
    return ("\n".join(lines) + "\n").encode()


def test_a_plc_row_years_ahead_is_a_future_dead_letter_and_poisons_nothing(job, landing, ingest_redis,
                                                                            names) -> None:
    writer = ManifestWriter(landing, epoch=1, name_prefix="plc")
    years_ahead = int(time.time() * 1000) + 5 * 365 * 86_400_000
    first = writer.write_blob("plc/plc-PLC-1-1.csv", plc_file([(T0 + i * 100, 10.0) for i in range(20)]
                                                             + [(years_ahead, 11.0)]), "PLC-1", T0)
    second = writer.write_blob("plc/plc-PLC-1-2.csv", plc_file([(T0 + 2000 + i * 100, 12.0) for i in range(30)]),
                               "PLC-1", T0 + 2000)
    manifests = [writer.publish([first]), writer.publish([second])]
    stats = names.ingest_stats()
    wait_for(lambda: dead_of(ingest_redis, names, "PLC-1") and int(ingest_redis.hget(stats, "blobs.plc") or 0) >= 2,
             60, "both PLC files", job)
    dead = dead_of(ingest_redis, names, "PLC-1")
    assert [(d.reason, d.raw_ref) for d in dead] == [(DeadLetterReason.FUTURE, "plc/plc-PLC-1-1.csv:22")]
    ends = [m.window_end_ms for _, m in feature_entries(ingest_redis, names, "plc") if m.asset_id == "PLC-1"]  # type: ignore[attr-defined]
    assert ends == list(range(T0 + 1000, T0 + 5000, 1000)), ends  # windows of both files, none in the future
    wait_archived(job, manifests)


def test_a_2_gb_frame_is_a_dead_letter(job, landing, ingest_redis, names) -> None:
    writer = ManifestWriter(landing, epoch=1, name_prefix="big")
    entry = writer.write_blob("thermal/frames/BIG-1/huge.tiff", frame(1), "BIG-1", T0)
    manifest = writer.publish([replace(entry, nbytes=2 * 1024**3)])
    wait_for(lambda: dead_of(ingest_redis, names, "BIG-1"), 60, "the dead letter", job)
    assert [d.reason for d in dead_of(ingest_redis, names, "BIG-1")] == [DeadLetterReason.OUT_OF_RANGE]
    wait_archived(job, [manifest])


def test_a_covered_camera_raises_a_sensor_alert_and_its_next_frame_clears_it(job, landing, ingest_redis,
                                                                             names) -> None:
    """Five frames in a row without contrast (``flink.sensor_alert_after``): one ``sensor_fault``
    request; the next real frame: one clear (pipeline.sensor_refusals, the count in Flink state)."""
    writer = ManifestWriter(landing, epoch=1, name_prefix="cov")
    blobs = [frame(0), *(tiff_bytes(covered_lens(np.random.default_rng(k), 0.05)) for k in range(5)), frame(1)]
    manifests = [writer.publish([writer.write_blob(f"thermal/frames/COV-1/{k}.tiff", data, "COV-1", T0 + 1000 * k)])
                 for k, data in enumerate(blobs)]

    def requests() -> list[AlertRequest]:
        return [m for _, m in read_stream(ingest_redis, names.alert_requests())
                if isinstance(m, AlertRequest) and m.asset_id == "COV-1"]

    wait_for(lambda: len(requests()) == 2, 60, "the sensor alert's raise and clear", job)
    raise_, clear = requests()
    assert (raise_.state, raise_.label, raise_.details["refused"], raise_.event_time_ms) == (
        "raise", "sensor_fault", 5, T0 + 5000)
    assert (clear.state, clear.event_time_ms) == ("clear", T0 + 6000)
    assert [d.reason for d in dead_of(ingest_redis, names, "COV-1")] == [DeadLetterReason.NO_SIGNAL] * 5
    assert frames_of(ingest_redis, names, "COV-1") == [T0, T0 + 6000]
    wait_archived(job, manifests)
