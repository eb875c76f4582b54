"""The job's Python functions without a JVM: landing-zone contract, per-asset order, idempotent
writes (real Redis)."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from linewatch.contract import DeadLetter, DeadLetterReason, StreamNames
from pipeline.asset_state import AssetState, MemoryHeldLines
from pipeline.effects import IngestEffects
from pipeline.ingestor import AssetIngestor
from pipeline.job_spec import JobSpec
from pipeline.landing import Janitor, LandingZone, ManifestError, ManifestIndex, ManifestWriter
from pipeline.redis_sink import PendingEntry, RedisStreamWriter
from pipeline.step import StepOutput
from tests.pipeline.conftest import job_spec, scene_frame, tiff_bytes

ASSETS = ["A-01", "B-02"]


@pytest.fixture
def landing(tmp_path: Path) -> Path:
    assets = [{"asset_id": a, "asset_type": "pump", "regions": {}, "region_fit": False, "tags": []} for a in ASSETS]
    (tmp_path / "assets.json").write_text(json.dumps({"assets": assets}))
    return tmp_path


def frame(value: int) -> bytes:
    return tiff_bytes(scene_frame(29315 + value))


def spec(landing: Path, **flink: object) -> JobSpec:
    return job_spec(landing, "x", "redis://unused", **flink)


def archive(landing: Path, out: StepOutput) -> StepOutput:
    """What the effects do after the Redis write: move the handled blobs to the archive."""
    zone = LandingZone(landing)
    for path in out.archive:
        zone.archive_file(path)
    return out


def test_paths_outside_the_landing_zone_are_refused(tmp_path: Path) -> None:
    zone = LandingZone(tmp_path)
    for bad in ("../x.tiff", "/etc/passwd", "thermal/../../x", "manifests/m.jsonl", "archive/2026/x.tiff"):
        with pytest.raises(ManifestError) as err:
            zone.resolve(bad)
        assert err.value.reason == DeadLetterReason.PATH_OUTSIDE_LANDING
    (tmp_path / "thermal").mkdir()
    (tmp_path / "thermal" / "link").symlink_to("/etc")
    with pytest.raises(ManifestError):
        zone.resolve("thermal/link/passwd")


def test_archived_blob_is_found_again_for_a_replay(tmp_path: Path) -> None:
    zone = LandingZone(tmp_path)
    writer = ManifestWriter(tmp_path, epoch=1)
    entry = writer.write_blob("audio/clips/A/a.wav", b"RIFF", "A", 1)
    moved = zone.archive_file(tmp_path / entry.path)
    assert moved is not None and not (tmp_path / entry.path).exists()
    assert zone.locate(entry.path) == moved
    assert zone.archive_file(tmp_path / entry.path) is None  # already moved: no error


def test_janitor_archives_a_manifest_only_when_its_blobs_are_gone_and_a_checkpoint_passed(tmp_path: Path) -> None:
    zone = LandingZone(tmp_path)
    writer = ManifestWriter(tmp_path, epoch=1)
    entry = writer.write_blob("thermal/frames/A/1.tiff", b"x", "A", 1)
    manifest = writer.publish([entry])
    checkpoints = tmp_path / "chk"
    janitor = Janitor(zone, ManifestIndex(zone), settle_s=0.0, checkpoint_dir=checkpoints)

    def checkpoint(n: int, complete: bool = True) -> None:
        (checkpoints / "job" / f"chk-{n}").mkdir(parents=True, exist_ok=True)  # Flink: at trigger
        if complete:
            (checkpoints / "job" / f"chk-{n}" / "_metadata").write_bytes(b"m")  # Flink: at completion

    checkpoint(1)
    assert janitor.run_once(now_s=100.0) == 0  # blob still there
    checkpoint(2, complete=False)  # triggered: its snapshot may be taken before the blob is handled
    zone.archive_file(tmp_path / entry.path)
    assert janitor.run_once(now_s=101.0) == 0  # done, but no checkpoint since
    checkpoint(2)  # completes *after* the blob was seen gone, but was triggered before: not enough
    assert janitor.run_once(now_s=102.0) == 0 and manifest.exists()
    checkpoint(3)  # triggered after: its state includes the blob
    assert janitor.run_once(now_s=103.0) == 0 and manifest.exists()  # one more as a margin for the reader
    checkpoint(4)
    assert janitor.run_once(now_s=104.0) == 1
    assert not manifest.exists()


def test_janitor_parses_each_waiting_manifest_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    zone = LandingZone(tmp_path)
    writer = ManifestWriter(tmp_path, epoch=1)
    entries = [writer.write_blob(f"audio/clips/A/{i}.wav", b"x", "A", i) for i in range(40)]
    for i in range(0, 40, 4):
        writer.publish(entries[i:i + 4])
    janitor = Janitor(zone, ManifestIndex(zone), settle_s=0.0)
    reads: list[Path] = []
    import pipeline.landing.index as index_module

    original = index_module.read_manifest

    def counting(manifest: Path):  # type: ignore[no-untyped-def]
        reads.append(manifest)
        return original(manifest)

    monkeypatch.setattr(index_module, "read_manifest", counting)
    for _ in range(5):
        assert janitor.run_once() == 0
    assert len(reads) == 10  # ten manifests, each parsed once over five passes
    for e in entries[:20]:
        zone.archive_file(tmp_path / e.path)
    assert janitor.run_once() == 5 and len(reads) == 10


def test_lines_arriving_in_any_order_are_processed_in_seq_order(landing: Path) -> None:
    writer = ManifestWriter(landing, epoch=7)
    entries = [writer.write_blob(f"thermal/frames/A-01/{i}.tiff", frame(i), "A-01", 1_000 + i) for i in range(12)]
    # every line in its own manifest, as after a backlog; then delivered in a shuffled order
    for e in entries:
        writer.publish([e])
    ingestor = AssetIngestor(spec(landing))
    state = AssetState()
    order = list(range(12))
    random.Random(3).shuffle(order)
    emitted = []
    for i in order:
        out = ingestor.on_line(entries[i].to_json(), state, "A-01")
        emitted += [e.message.event_time_ms for e in out.entries]  # type: ignore[attr-defined]
        state = state.copy_through_storage()  # as Flink state would
    assert emitted == [1_000 + i for i in range(12)]
    # a line whose seq can never arrive (not in any manifest) does not block the rest
    lost = writer.write_blob("thermal/frames/A-01/lost.tiff", frame(50), "A-01", 2_000)  # seq 12, never published
    after = writer.write_blob("thermal/frames/A-01/after.tiff", frame(51), "A-01", 2_001)  # seq 13
    writer.publish([after])
    out = ingestor.on_line(after.to_json(), state, "A-01")
    assert [e.message.event_time_ms for e in out.entries] == [2_001]  # type: ignore[attr-defined]
    assert out.counters.get("seq_gaps") == 1 and lost.seq == 12


def test_a_held_line_read_again_is_a_replay_and_a_reused_seq_with_a_new_blob_is_processed(landing: Path) -> None:
    """Defect 8 (issue 8): a reused seq with a new blob was dropped silently as a replay (or, while
    held, dead-lettered without archiving its blob, so its manifest stayed forever)."""
    writer = ManifestWriter(landing, epoch=3)
    entries = [writer.write_blob(f"thermal/frames/A-01/{i}.tiff", frame(i), "A-01", 1_000 + i) for i in range(3)]
    writer.publish(entries)  # all three listed: seq 0 is on its way
    ingestor = AssetIngestor(spec(landing))
    state = AssetState()
    assert ingestor.on_line(entries[2].to_json(), state, "A-01").entries == []  # held, waits for 0 and 1
    # a restored job's fresh source reads the same manifest again: a replay, not a dead letter
    again = ingestor.on_line(entries[2].to_json(), state, "A-01")
    assert again.entries == [] and again.counters.get("already_handled") == 1
    done = archive(landing, ingestor.on_line(entries[0].to_json(), state, "A-01"))
    done.extend(archive(landing, ingestor.on_line(entries[1].to_json(), state, "A-01")))
    assert [e.message.event_time_ms for e in done.entries] == [1_000, 1_001, 1_002]  # type: ignore[attr-defined]
    # replays of handled seqs (their blobs are archived) are recognised as such
    replay = ingestor.on_line(entries[1].to_json(), state, "A-01")
    assert replay.entries == [] and replay.counters.get("already_handled") == 1
    # a gateway whose counter reset without a new epoch: seq 1 again, with a new blob
    reused = ManifestWriter(landing, epoch=3, name_prefix="gw2")
    new = reused.write_blob("thermal/frames/A-01/new.tiff", frame(9), "A-01", 5_000)
    new = type(new)(**{**{f: getattr(new, f) for f in ("asset_id", "event_time_ms", "path", "kind", "nbytes",
                                                       "sha256", "epoch", "end_ms")}, "seq": 1})
    manifest = reused.publish([new])
    out = archive(landing, ingestor.on_line(new.to_json(), state, "A-01"))
    assert [e.message.event_time_ms for e in out.entries] == [5_000]  # type: ignore[attr-defined]
    assert out.counters.get("reused_seq") == 1 and not (landing / new.path).exists()
    janitor = Janitor(LandingZone(landing), ManifestIndex(LandingZone(landing)))
    janitor.run_once()
    assert not manifest.exists(), "the manifest of the reused seq must be archived"


def test_the_reorder_timer_waits_for_a_listed_seq_and_gives_up_only_after_give_up_ms(landing: Path) -> None:
    """A backlog can take the source minutes to reach a file: a seq still listed is waited for
    (before 2026-11-30 the 30 s timer released the held lines, and the missing seq, when it
    came, was dropped as a replay: measured, 2,869 seqs lost in a 4,000-file backlog)."""
    writer = ManifestWriter(landing, epoch=2)
    entries = [writer.write_blob(f"thermal/frames/A-01/{i}.tiff", frame(i), "A-01", 1_000 + i) for i in range(4)]
    waiting = writer.publish(entries[1:2])  # seq 1 listed but not yet read by the source
    writer.publish([entries[0], entries[2], entries[3]])
    ingestor = AssetIngestor(spec(landing, reorder_timeout_ms=30_000, reorder_give_up_ms=600_000))
    state = AssetState()
    times = lambda out: [e.message.event_time_ms for e in out.entries]  # type: ignore[attr-defined]  # noqa: E731
    assert times(ingestor.on_line(entries[0].to_json(), state, "A-01")) == [1_000]
    assert ingestor.on_line(entries[3].to_json(), state, "A-01").entries == []
    assert ingestor.on_line(entries[2].to_json(), state, "A-01").entries == []
    out = ingestor.on_timeout(state, "A-01", waited_ms=31_000)
    assert out.entries == [] and state.has_pending  # seq 1 is still listed: keep waiting
    # the listing disappears (say an operator removed the file): the next look skips the gap
    zone = LandingZone(landing)
    zone.archive_file(waiting)
    out = ingestor.on_timeout(state, "A-01", waited_ms=61_000)
    assert times(out) == [1_002, 1_003] and out.counters.get("seq_gaps") == 1 and not state.has_pending
    # ... and if seq 1 turns up after all, it is processed late, not dropped as a replay
    late = ingestor.on_line(entries[1].to_json(), state, "A-01")
    assert late.counters.get("late_after_gap") == 1
    assert [e.message.reason for e in late.entries] == [DeadLetterReason.LATE]  # type: ignore[attr-defined]


def test_a_seq_listed_but_never_delivered_is_read_from_the_directory_after_give_up_ms(landing: Path) -> None:
    writer = ManifestWriter(landing, epoch=4)
    entries = [writer.write_blob(f"audio/clips/A-01/{i}.wav", b"RIFF", "A-01", 1_000 + i) for i in range(3)]
    writer.publish(entries)  # seq 1 stays listed forever (think: a reused name Flink skips)
    ingestor = AssetIngestor(spec(landing, reorder_give_up_ms=600_000))
    state = AssetState()
    ingestor.on_line(entries[0].to_json(), state, "A-01")
    ingestor.on_line(entries[2].to_json(), state, "A-01")
    assert ingestor.on_timeout(state, "A-01", waited_ms=599_000).counters.get("blobs.audio") is None
    out = ingestor.on_timeout(state, "A-01", waited_ms=600_000)
    # seq 1 is read from the manifest the source never delivered: nothing is skipped, every blob handled
    assert out.counters.get("from_index") == 1 and out.counters.get("blobs.audio") == 2 and not state.has_pending
    assert "seq_gaps" not in out.counters
    assert sorted(p.name for p in out.archive) == ["1.wav", "2.wav"]


class CountingHeldLines(MemoryHeldLines):
    """The in-memory store, counting full walks of the keys (what a MapState iteration costs)."""

    def __init__(self) -> None:
        super().__init__()
        self.walks = 0

    def keys(self) -> Iterator[str]:
        self.walks += 1
        return super().keys()


def test_what_a_line_costs_does_not_grow_with_the_lines_held_back(landing: Path) -> None:
    """A backlog read in random order holds many lines; the per-line state must stay small
    (before: one JSON value with every held line, re-encoded on every line)."""
    writer = ManifestWriter(landing, epoch=1)
    n = 400
    entries = [writer.write_blob(f"audio/clips/A-01/{i}.wav", b"RIFF", "A-01", 1_000 + i)
               for i in range(n)]
    for i in range(0, n, 10):
        writer.publish(entries[i:i + 10])
    ingestor = AssetIngestor(spec(landing))
    store = CountingHeldLines()
    state = AssetState(held_lines=store)
    order = list(range(1, n)) + [0]  # seq 0 last: everything else is held until it arrives
    sizes = []
    for i in order:
        out = ingestor.on_line(entries[i].to_json(), state, "A-01")
        sizes.append(len(state.order_json()))
    assert state.order["audio"][1].held == 0 and state.order["audio"][1].next_seq == n
    assert out.counters.get("blobs.audio") == n, out.counters  # all released, in order, when seq 0 came
    assert max(sizes[:-1]) - min(sizes) < 20  # the stored record does not carry the held lines
    # the last line released 400 clips that are no WAV ("RIFF"): the record now holds their run of
    # refusals (pipeline.sensor_refusals), a few hundred bytes whatever the run's length
    assert state.refusals["audio"].refused == n and sizes[-1] - min(sizes) < 500
    assert store.walks <= 2  # held lines are looked up by key, not by walking the store


def test_high_water_mark_makes_replays_idempotent(redis_url: str, redis_client: redis.Redis) -> None:
    prefix = "tjob" + str(random.randrange(10**9))
    names = StreamNames(prefix=prefix, shards=1)
    writer = RedisStreamWriter.open(redis_url, dedup_ttl_s=60)
    try:
        def dl(ref: str) -> PendingEntry:
            msg = DeadLetter(source="pipeline.thermal", reason=DeadLetterReason.TRUNCATED, detail="d", raw_ref=ref,
                             failed_at_ms=1)
            return PendingEntry(stream=names.deadletter, message=msg, dedup_key=names.ingest_dedup(ref))

        def feature(t: int) -> PendingEntry:
            msg = DeadLetter(source="x", reason=DeadLetterReason.LATE, detail=str(t), raw_ref="r", failed_at_ms=t)
            return PendingEntry(stream=names.features("thermal", "A"), message=msg, hwm_key=names.ingest_marks_of("thermal", "A"),
                                hwm_field="A", hwm_value=t)

        first = writer.write([feature(1), feature(2), dl("a")])
        replay = writer.write([feature(1), feature(2), feature(3), dl("a")])
        assert (first.added, first.duplicates) == (3, 0)
        assert (replay.added, replay.duplicates) == (1, 3)
        assert redis_client.xlen(names.features("thermal", "A")) == 3
        assert redis_client.xlen(names.deadletter) == 1
    finally:
        writer.close()
        keys = list(redis_client.scan_iter(f"{prefix}:*"))
        if keys:
            redis_client.delete(*keys)


def test_effects_archive_the_blob_only_after_the_write(landing: Path, redis_url: str, redis_client: redis.Redis) -> None:
    prefix = "tjob" + str(random.randrange(10**9))
    writer = ManifestWriter(landing, epoch=1)
    entry = writer.write_blob("thermal/frames/B-02/1.tiff", frame(3), "B-02", 5_000)
    writer.publish([entry])
    config = job_spec(landing, prefix, redis_url)
    ingestor, effects = AssetIngestor(config), IngestEffects(config)
    try:
        out = ingestor.on_line(entry.to_json(), AssetState(), "B-02")
        assert (landing / entry.path).exists() and out.archive
        effects.commit(out)
        assert not (landing / entry.path).exists()
        assert redis_client.xlen(StreamNames(prefix, 2).features("thermal", "B-02")) == 1
    finally:
        effects.close()
        keys = list(redis_client.scan_iter(f"{prefix}:*"))
        if keys:
            redis_client.delete(*keys)


def test_the_janitor_leaves_manifests_present_at_start_until_the_source_has_read_them(tmp_path: Path) -> None:
    """A restored job's fresh source reads every manifest in the directory again; archiving one it has
    not read yet can make the reader fail on the missing file, and every restore after it (a stuck job)."""
    zone = LandingZone(tmp_path)
    index = ManifestIndex(zone)
    writer = ManifestWriter(tmp_path, epoch=1)
    lines = [writer.write_blob(f"thermal/frames/A/{i}.tiff", b"x", "A", i) for i in range(2)]
    old = writer.publish(lines)  # handled before the restore: its blobs are archived
    for entry in lines:
        zone.archive_file(tmp_path / entry.path)
    janitor = Janitor(zone, index, wait_for_source=True)
    assert janitor.run_once() == 0 and old.exists()  # done, but this job's source has not read it
    index.saw(lines[0].to_json())  # the source delivers it again, line by line (replays)
    assert janitor.run_once() == 0 and old.exists()
    index.saw(lines[1].to_json())
    assert janitor.run_once() == 1 and not old.exists()
    later = writer.publish([writer.write_blob("thermal/frames/A/9.tiff", b"y", "A", 9)])
    zone.archive_file(tmp_path / "thermal/frames/A/9.tiff")
    assert janitor.run_once() == 1 and not later.exists()  # published after the start: the usual rule


def test_a_line_delivered_before_the_first_listing_still_counts_as_read(tmp_path: Path) -> None:
    """The source may hand the operator a line before the index has listed the directory (a loaded
    machine; the CI run of 2026-12-01 timed out on a manifest that was never archived): the line
    must count once its manifest is known, or the janitor leaves that manifest for good."""
    zone = LandingZone(tmp_path)
    index = ManifestIndex(zone)
    writer = ManifestWriter(tmp_path, epoch=1)
    lines = [writer.write_blob(f"thermal/frames/A/{i}.tiff", b"x", "A", i) for i in range(2)]
    present = writer.publish(lines)
    for entry in lines:
        index.saw(entry.to_json())  # delivered before any listing
        zone.archive_file(tmp_path / entry.path)
    janitor = Janitor(zone, index, wait_for_source=True)
    assert janitor.run_once() == 1 and not present.exists()
