"""The ingestion job end to end: real simulator output -> real PyFlink job -> real Redis.

One job (embedded MiniCluster in a child process) serves every test of this module.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import redis

from linewatch.contract import DeadLetterReason, StreamNames
from pipeline.decoders import decode_alarm_file, decode_plc_file, decode_thermal_tiff, decode_wav
from pipeline.features.asset_profile import RECIPROCATING_STAT, as_profile
from pipeline.features.audio_features import audio_features
from pipeline.features.audio_physics import BAND_LIMITED_STAT, ORDERS_ABOVE_ENVELOPE_STAT, audio_vector
from pipeline.features.body_axial import MID_AXIAL_STAT, mid_axial_k
from pipeline.features.measurement_spot import BEARING_BELOW_SPOT_STAT
from pipeline.features.plc_window import plc_windows
from pipeline.features.terminal_crossing import TERMINAL_CROSSED_STAT
from pipeline.features.thermal_features import ThermalBaseline, thermal_features
from pipeline.features.thermal_fit import PROPOSED_ENDS_KNOWN_STAT
from pipeline.features.thermal_regions import frame_to_celsius, scaled_regions, thermal_vector
from pipeline.landing import STAGING_DIR, ManifestWriter, atomic_write, publish_existing
from pipeline.runner import IngestJob
from pipeline.validation import AssetRegistry
from tests.pipeline.conftest import feature_entries, make_job, read_stream, simulate, wait_for, wav_bytes

pytestmark = [pytest.mark.flink, pytest.mark.slow]

N_ASSETS = 3
SECONDS = 30


@pytest.fixture(scope="module")
def landing(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("landing")
    simulate(root, N_ASSETS, SECONDS, roll_s=5.0)
    return root


@pytest.fixture(scope="module")
def names(prefix: str) -> StreamNames:
    return StreamNames(prefix=prefix, shards=2)


@pytest.fixture(scope="module")
def job(landing: Path, prefix: str, redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[IngestJob]:
    job = make_job(landing, prefix, tmp_path_factory.mktemp("job"), redis_url, checkpoint_interval_ms=2000)
    job.start()
    job.wait_ready()
    yield job
    job.stop()


@pytest.fixture(scope="module")
def writer(landing: Path) -> ManifestWriter:
    return ManifestWriter(landing, epoch=1)


@pytest.fixture(scope="module")
def published(job: IngestJob, landing: Path, writer: ManifestWriter, ingest_redis: redis.Redis, names: StreamNames):
    """Publish manifests for the whole simulator run and wait until every frame and clip is in."""
    # snapshot the blobs before the job archives them (expected values are computed from these)
    blobs = {p.relative_to(landing).as_posix(): p.read_bytes()
             for sub in ("plc", "alarms", "thermal/frames", "audio/clips") for p in (landing / sub).rglob("*")
             if p.is_file() and not p.name.startswith(".")}
    entries = publish_existing(landing, writer, lines_per_manifest=25)
    n_thermal = sum(e.kind == "thermal" for e in entries)
    n_audio = sum(e.kind == "audio" for e in entries)

    def done() -> bool:
        return (len(feature_entries(ingest_redis, names, "thermal")) >= n_thermal
                and len(feature_entries(ingest_redis, names, "audio")) >= n_audio)

    wait_for(done, 120, f"{n_thermal} thermal and {n_audio} audio entries", job)
    # PLC windows close with the last PLC file of each asset; wait until the job has read them all
    wait_for(lambda: int(ingest_redis.hget(names.prefix + ":ingest:stats", "blobs.plc") or 0)
             >= sum(e.kind == "plc" for e in entries), 60, "every PLC file", job)
    return entries, blobs


def _events_in_order(messages: list[tuple[str, object]]) -> dict[str, list[int]]:
    per_asset: dict[str, list[int]] = defaultdict(list)
    for _, msg in messages:
        per_asset[msg.asset_id].append(msg.event_time_ms)  # type: ignore[attr-defined]
    return per_asset


def test_every_record_arrives_in_its_stream_in_per_asset_order(published, ingest_redis, names) -> None:
    entries, _ = published
    for modality, kind in (("thermal", "thermal"), ("audio", "audio")):
        expected = sorted((e.asset_id, e.event_time_ms) for e in entries if e.kind == kind)
        got = []
        for shard in range(names.shards):
            stream = names.features_shard(modality, shard)
            for _, msg in read_stream(ingest_redis, stream):
                assert names.features(modality, msg.asset_id) == stream  # type: ignore[attr-defined]
                got.append((msg.asset_id, msg.event_time_ms))  # type: ignore[attr-defined]
        assert sorted(got) == expected, f"{modality}: lost or duplicated entries"
        for asset, times in _events_in_order(feature_entries(ingest_redis, names, modality)).items():
            assert times == sorted(times) and len(set(times)) == len(times), f"{modality} {asset} out of order"
    plc = feature_entries(ingest_redis, names, "plc")
    assert {m.asset_id for _, m in plc} == {e.asset_id for e in entries}  # type: ignore[attr-defined]
    for asset, ends in _events_in_order(plc).items():
        assert ends == sorted(ends) and np.all(np.diff(ends) == 1000), f"plc windows of {asset} not every 1 s in order"


def test_plc_window_features_match_the_batch_computation(published, ingest_redis, names, landing) -> None:
    entries, blobs = published
    registry = AssetRegistry.from_file(landing / "assets.json")
    samples, alarms = [], []
    for e in entries:
        if e.kind == "plc":
            samples += [s for s in decode_plc_file(blobs[e.path], e.path, "csv").samples
                        if registry.check_tag_sample(s, e.path) is None]
        elif e.kind == "alarms":
            alarms += decode_alarm_file(blobs[e.path], e.path).events
    expected = plc_windows(samples, alarms)
    got = {(m.asset_id, m.window_end_ms): m for _, m in feature_entries(ingest_redis, names, "plc")}  # type: ignore[attr-defined]
    checked = 0
    for asset, windows in expected.items():
        last_sample = max(s.timestamp_ms for s in samples if s.asset_id == asset)
        closable = [w for w in windows if w.end_ms - 1 <= last_sample]
        assert {end for (a, end) in got if a == asset} == {w.end_ms for w in closable}
        for w in closable[:: max(1, len(closable) // 4)]:  # a few windows per asset, by hand: start, middle, end
            msg = got[(asset, w.end_ms)]
            np.testing.assert_allclose(msg.values, w.values, rtol=1e-6, equal_nan=True)
            assert msg.n_samples == w.n_samples and msg.alarm_counts == w.alarm_counts
            assert msg.window_start_ms == w.end_ms - 10_000
            checked += 1
    assert checked >= N_ASSETS * 4
    # one value recomputed without the feature code: mean motor current of the first window of an asset
    asset = sorted(expected)[0]
    first = expected[asset][0]
    currents = [s.value for s in samples if s.asset_id == asset and s.tag == "motor_current_a"
                and first.start_ms <= s.timestamp_ms < first.end_ms and s.quality != "Bad"]
    msg = got[(asset, first.end_ms)]
    idx = msg.feature_names.index("motor_current_a.mean")
    assert msg.values[idx] == pytest.approx(np.mean(currents), rel=1e-5)


def test_thermal_and_audio_features_match_the_feature_code(published, ingest_redis, names, landing) -> None:
    entries, blobs = published
    registry = AssetRegistry.from_file(landing / "assets.json")
    thermal = {(m.asset_id, m.event_time_ms): m for _, m in feature_entries(ingest_redis, names, "thermal")}  # type: ignore[attr-defined]
    for asset in sorted({e.asset_id for e in entries}):
        baseline = ThermalBaseline()
        frames = [e for e in entries if e.kind == "thermal" and e.asset_id == asset]
        for i, e in enumerate(frames):
            frame = decode_thermal_tiff(blobs[e.path], e.path)
            stats, normalized = thermal_features(frame, baseline.baseline_ck, dict(registry[asset].regions))
            vector = thermal_vector(frame, registry[asset], baseline.baseline_ck, frame_meta={"unit": "centikelvin"})
            baseline.update(frame)
            if i in (0, 15, len(frames) - 1):  # before, at and long after the baseline warms up
                msg = thermal[(asset, e.event_time_ms)]
                # the simulator's boxes sit on the machine: region fitting leaves them as given
                fit_flags = {k: msg.stats[k] for k in ("regions_registered", "regions_proposed", PROPOSED_ENDS_KNOWN_STAT,
                                                       BEARING_BELOW_SPOT_STAT, TERMINAL_CROSSED_STAT,
                                                       "baseline_reference", "dead_pixels")}
                # ... its bearing boxes are wider than the measurement spot, no pipe runs through its terminal boxes;
                # the frames span less than the learned reference's commissioning: the running baseline; and the
                # simulator's camera has no dead pixels
                assert fit_flags == {"regions_registered": 0.0, "regions_proposed": 0.0, PROPOSED_ENDS_KNOWN_STAT: 0.0,
                                     BEARING_BELOW_SPOT_STAT: 0.0, TERMINAL_CROSSED_STAT: 0.0,
                                     "baseline_reference": 0.0, "dead_pixels": 0.0}
                # the motor body's drive end minus its fan end, read in the middle half of its box (models.ruled_out)
                frame_c = frame_to_celsius(frame, {"unit": "centikelvin"})
                profile = as_profile(registry[asset])
                mid = mid_axial_k(frame_c, scaled_regions(profile, frame_c.shape), profile)
                assert mid is not None and mid > 0 and msg.stats[MID_AXIAL_STAT] == pytest.approx(mid, rel=1e-6)
                assert {k: v for k, v in msg.stats.items() if k not in {*fit_flags, MID_AXIAL_STAT}} == \
                    pytest.approx(stats, rel=1e-6, abs=1e-9)
                np.testing.assert_array_equal(msg.frame, normalized)
                np.testing.assert_allclose(msg.vector, vector, rtol=1e-5, atol=1e-5)  # the models' input
                assert msg.source == e.path and msg.asset_type == registry[asset].asset_type
    audio = {(m.asset_id, m.event_time_ms): m for _, m in feature_entries(ingest_redis, names, "audio")}  # type: ignore[attr-defined]
    clips = [e for e in entries if e.kind == "audio"][::29]
    for e in clips:
        logmel, stats = audio_features(decode_wav(blobs[e.path], e.path), 16_000, asset=registry[e.asset_id])
        msg = audio[(e.asset_id, e.event_time_ms)]
        # float32 ulps only: the job runs BLAS single-threaded (FlinkSettings.python_threads), this
        # process may not, and the summation order of the mel matmul follows the thread count
        np.testing.assert_allclose(msg.logmel, logmel, rtol=1e-6, atol=1e-6)
        # no plant pump knocks, the line records at 16 kHz, and its bearings ring below the envelope top
        assert msg.stats == pytest.approx({**stats, RECIPROCATING_STAT: 0.0, BAND_LIMITED_STAT: 0.0,
                                          ORDERS_ABOVE_ENVELOPE_STAT: 0.0}, rel=1e-6, abs=1e-9)
        vector = audio_vector(decode_wav(blobs[e.path], e.path), 16_000, registry[e.asset_id])
        np.testing.assert_allclose(msg.vector, vector, rtol=1e-4, atol=1e-4)  # the models' input


def test_processed_files_leave_the_landing_zone(published, landing, job) -> None:
    entries, _ = published
    wait_for(lambda: not any((landing / e.path).exists() for e in entries), 30, "blobs archived", job)
    assert all(any((landing / "archive").glob(f"*/{e.path}")) for e in entries[::20])
    # manifests are archived once their blobs are gone and a checkpoint has passed
    wait_for(lambda: not [p for p in (landing / "manifests").glob("gw-*.jsonl")], 30, "manifests archived", job)


def test_hostile_inputs_each_give_one_dead_letter_and_the_job_keeps_going(
    published, job, landing, writer, ingest_redis, names
) -> None:
    entries, blobs = published
    asset = entries[0].asset_id
    t0 = max(e.event_time_ms for e in entries) + 10_000
    good_tiff = blobs[next(e.path for e in entries if e.kind == "thermal")]
    good_wav = blobs[next(e.path for e in entries if e.kind == "audio")]
    csv_no_quality = b"timestamp,tag,value,unit\n2026-11-29T14:10:00.000Z,X.motor_current_a,1.0,A\n"
    cases: list[tuple[str, object, DeadLetterReason]] = []
    lines: list[str] = []

    def blob(rel: str, data: bytes, reason: DeadLetterReason, t: int, **kw: object) -> None:
        entry = writer.write_blob(rel, data, asset, t, **kw)  # type: ignore[arg-type]
        lines.append(entry.to_json())
        cases.append((rel, entry, reason))

    blob(f"thermal/frames/{asset}/bad-truncated.tiff", good_tiff[: len(good_tiff) // 2], DeadLetterReason.TRUNCATED, t0)
    blob(f"audio/clips/{asset}/bad-8k.wav", wav_bytes(np.zeros(8000, np.float32), 8000), DeadLetterReason.BAD_SHAPE, t0)
    blob(f"plc/plc-{asset}-bad-columns.csv", csv_no_quality, DeadLetterReason.SCHEMA_ERROR, t0)
    blob(f"thermal/frames/{asset}/bad-garbage.tiff", bytes(range(256)) * 40, DeadLetterReason.DECODE_ERROR, t0 + 1)
    # half-written blob: the manifest promises more bytes than the file has
    half = writer.write_blob(f"thermal/frames/{asset}/bad-half.tiff", good_tiff, asset, t0 + 2)
    (landing / half.path).write_bytes(good_tiff[:1000])
    lines.append(half.to_json())
    cases.append((half.path, half, DeadLetterReason.TRUNCATED))
    outside = json.loads(writer.write_blob(f"audio/clips/{asset}/x.wav", good_wav, asset, t0 + 3).to_json())
    (landing / outside["path"]).unlink()
    outside["path"] = "../../etc/passwd"
    lines.append(json.dumps(outside))  # a dead letter naming the manifest line (below)
    # valid records after all of that: they must arrive
    good_frame = writer.write_blob(f"thermal/frames/{asset}/good-after.tiff", good_tiff, asset, t0 + 5)
    good_clip = writer.write_blob(f"audio/clips/{asset}/good-after.wav", good_wav, asset, t0 + 5)
    writer.publish([], raw_lines=lines + [good_frame.to_json(), good_clip.to_json()])
    # a manifest that became visible half-written (no hidden name): its cut last line is bad input
    cut_line = writer.write_blob(f"thermal/frames/{asset}/never-listed.tiff", good_tiff, asset, t0 + 9).to_json()
    atomic_write(landing / "manifests" / "visible-too-early.jsonl", cut_line[: len(cut_line) // 2].encode(),
                 staging=landing / STAGING_DIR)

    dl_stream = names.deadletter

    def dead_letters() -> list:
        return [m for _, m in read_stream(ingest_redis, dl_stream)]

    def manifest_letters(reason: DeadLetterReason) -> list:  # dead letters of manifest lines name file:line
        return [d for d in dead_letters() if d.source == "pipeline.manifest" and d.reason == reason]

    def all_arrived() -> bool:
        refs = {d.raw_ref.split(":")[0] for d in dead_letters()}
        return (bool(manifest_letters(DeadLetterReason.TRUNCATED))
                and bool(manifest_letters(DeadLetterReason.PATH_OUTSIDE_LANDING))
                and all(ref in refs for ref, _, _ in cases))

    wait_for(all_arrived, 60, f"{len(cases) + 2} dead letters", job)
    thermal = {(m.asset_id, m.event_time_ms) for _, m in feature_entries(ingest_redis, names, "thermal")}  # type: ignore[attr-defined]
    wait_for(lambda: (asset, t0 + 5) in {(m.asset_id, m.event_time_ms) for _, m in  # type: ignore[attr-defined]
                                          feature_entries(ingest_redis, names, "audio")}, 30, "the good clip", job)
    assert (asset, t0 + 5) in {(m.asset_id, m.event_time_ms) for _, m in feature_entries(ingest_redis, names, "thermal")}  # type: ignore[attr-defined]
    assert thermal  # the valid data before is untouched
    letters = dead_letters()
    for ref, _, reason in cases:
        mine = [d for d in letters if d.raw_ref == ref or d.raw_ref.startswith(ref + ":")]
        assert len(mine) == 1, f"{ref}: expected one dead letter, got {[(d.reason, d.detail) for d in mine]}"
        assert mine[0].reason == reason, f"{ref}: {mine[0].reason} ({mine[0].detail})"
        assert mine[0].detail and mine[0].source.startswith("pipeline.")
    cut = manifest_letters(DeadLetterReason.TRUNCATED)  # the last line of a file, cut without a line break
    assert [d.raw_ref for d in cut] == ["manifests/visible-too-early.jsonl:1"] and cut[0].excerpt
    outside_letters = manifest_letters(DeadLetterReason.PATH_OUTSIDE_LANDING)
    assert len(outside_letters) == 1 and "../../etc/passwd" in outside_letters[0].detail
    assert outside_letters[0].raw_ref.startswith("manifests/gw-") and outside_letters[0].excerpt
    assert job.alive
