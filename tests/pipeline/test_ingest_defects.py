"""Issue 8's ingestion defects, one test each, on the job's Python functions (no JVM; the same
cases run end to end through a real Flink job in test_hostile_gateway_flink.py).

The invariant every test checks: each announced blob ends as exactly one entry or exactly one
dead letter with a reason, its blob leaves the landing zone, and every manifest is archived."""

from __future__ import annotations

import json
import os
import random
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from linewatch.contract import DeadLetter, DeadLetterReason
from linewatch.flink_settings import ValidationSettings
from linewatch.settings import Settings
from pipeline.asset_state import AssetState
from pipeline.ingestor import AssetIngestor
from pipeline.landing import (
    Janitor,
    LandingZone,
    ManifestEntry,
    ManifestIndex,
    ManifestWriter,
    format_time_ms,
    manifest_asset,
)
from pipeline.step import StepOutput
from tests.pipeline.conftest import job_spec, scene_frame, tiff_bytes

ASSETS = ["A-01", "B-02", "C-03"]
T0 = 1_795_960_800_000  # 2026-11-29T14:00:00Z, in the past of the job's clock


@pytest.fixture
def landing(tmp_path: Path) -> Path:
    root = tmp_path / "landing"
    root.mkdir()
    tags = [{"name": "motor_current_a", "unit": "A", "valid_min": 0, "valid_max": 500}]
    assets = [{"asset_id": a, "asset_type": "pump", "regions": {}, "region_fit": False, "tags": tags} for a in ASSETS]
    (root / "assets.json").write_text(json.dumps({"assets": assets}))
    return root


def frame(value: int) -> bytes:
    return tiff_bytes(scene_frame(29315 + value % 1000))


class Run:
    """Feeds lines to one ingestor like the job does (state through storage, blobs archived after
    each step) and keeps everything it produced."""

    def __init__(self, landing: Path, **flink: object) -> None:
        self.landing = landing
        self.spec = job_spec(landing, "x", "redis://unused", **flink)
        self.ingestor = AssetIngestor(self.spec)
        self.states: dict[str, AssetState] = {}
        self.out = StepOutput()

    def feed(self, line: str, key: str | None = None) -> StepOutput:
        key = manifest_asset(line) if key is None else key  # what the job's key_by does
        state = self.states.setdefault(key, AssetState())
        out = self.ingestor.on_line(line, state, key)
        self._done(key, state, out)
        return out

    def timeout(self, key: str, waited_ms: int) -> StepOutput:
        state = self.states[key]
        out = self.ingestor.on_timeout(state, key, waited_ms)
        self._done(key, state, out)
        return out

    def _done(self, key: str, state: AssetState, out: StepOutput) -> None:
        zone = LandingZone(self.landing)
        for path in out.archive:
            zone.archive_file(path)
        self.states[key] = state.copy_through_storage()  # what Flink would restore
        self.out.extend(out)

    def entries(self, kind: str = "thermal") -> list[tuple[str, int]]:
        return [(e.message.asset_id, e.message.event_time_ms) for e in self.out.entries  # type: ignore[attr-defined]
                if e.hwm_key is not None and e.stream.split(":")[2] == kind]

    def dead(self) -> list:
        return [e.message for e in self.out.entries if isinstance(e.message, DeadLetter)]  # not alert requests

    def janitor_empties_the_directory(self) -> None:
        zone = LandingZone(self.landing)
        Janitor(zone, ManifestIndex(zone)).run_once()
        left = sorted(p.name for p in zone.manifests.iterdir())
        assert left == [], f"manifests never archived: {left}"


def assert_each_blob_once(run: Run, published: list[ManifestEntry]) -> None:
    """Exactly one entry or one dead letter per announced frame, and its blob out of the landing zone."""
    outcome: Counter[str] = Counter()
    for asset, t in run.entries("thermal"):
        outcome[f"{asset}@{t}"] += 1
    for d in run.dead():
        outcome[f"{d.asset_id}@{d.event_time_ms}"] += 1
    want = Counter(f"{e.asset_id}@{e.event_time_ms}" for e in published)
    assert outcome == want, f"lost {want - outcome}, twice {outcome - want}"
    assert not [e.path for e in published if (run.landing / e.path).exists()], "blobs left in the landing zone"


# ---- defect 1: older-epoch lines were dropped without a trace
@pytest.mark.parametrize("n_epochs", [2, 3])
def test_epochs_interleaved_in_random_directory_order_all_arrive(landing: Path, n_epochs: int) -> None:
    published: list[ManifestEntry] = []
    t = T0
    for epoch in range(1, n_epochs + 1):  # the gateway restarts: a new, higher epoch, seq from 0
        writer = ManifestWriter(landing, epoch=epoch * 1000, name_prefix=f"gw{epoch}")
        for i in range(6):
            entry = writer.write_blob(f"thermal/frames/A-01/{epoch}-{i}.tiff", frame(i), "A-01", t)
            writer.publish([entry])
            published.append(entry)
            t += 100
    run = Run(landing)
    for entry in random.Random(n_epochs).sample(published, len(published)):  # directory order after a restart
        run.feed(entry.to_json())
    assert_each_blob_once(run, published)
    assert run.entries() == [(e.asset_id, e.event_time_ms) for e in published], "older epochs first, seq order"
    assert run.dead() == []
    run.janitor_empties_the_directory()


def test_a_gateway_whose_clock_went_back_keeps_its_data(landing: Path) -> None:
    """No real-time clock: the gateway restarts with a *lower* epoch; its blobs still arrive."""
    before = ManifestWriter(landing, epoch=1_795_960_000_000, name_prefix="before")
    published = [before.write_blob(f"thermal/frames/B-02/a{i}.tiff", frame(i), "B-02", T0 + i) for i in range(3)]
    for e in published:
        before.publish([e])
    run = Run(landing)
    for e in published:
        run.feed(e.to_json())
    after = ManifestWriter(landing, epoch=5, name_prefix="after")  # clock set back at boot
    later = [after.write_blob(f"thermal/frames/B-02/b{i}.tiff", frame(i), "B-02", T0 + 1000 + i) for i in range(3)]
    for e in later:
        after.publish([e])
    for e in reversed(later):
        run.feed(e.to_json())
    assert_each_blob_once(run, published + later)
    assert run.dead() == [] and len(run.entries()) == 6
    run.janitor_empties_the_directory()


# ---- defect 2: two manifest parsers disagreed; the janitor waited forever for rejected lines
def test_a_line_the_job_rejects_is_a_dead_letter_and_its_manifest_is_still_archived(landing: Path) -> None:
    writer = ManifestWriter(landing, epoch=1)
    good = writer.write_blob("thermal/frames/C-03/ok.tiff", frame(1), "C-03", T0)
    bad_lines = []
    for i, change in enumerate(({"timestamp": T0}, {"timestamp": "2026-11-29T14:00:00"}, {"bytes": None},
                                {"sha256": None})):
        blob = writer.write_blob(f"thermal/frames/C-03/bad{i}.tiff", frame(i), "C-03", T0 + 10 + i)
        data = json.loads(blob.to_json()) | change
        bad_lines.append(json.dumps({k: v for k, v in data.items() if v is not None}))
    manifest = writer.publish([good], raw_lines=bad_lines)
    run = Run(landing)
    for line in manifest.read_text().splitlines():
        run.feed(line)
    reasons = [d.reason for d in run.dead()]
    assert reasons == [DeadLetterReason.SCHEMA_ERROR] * 4, reasons
    assert all(d.raw_ref.startswith(f"manifests/{manifest.name}:") for d in run.dead())
    assert run.entries() == [("C-03", T0)]
    run.janitor_empties_the_directory()


# ---- defect 4: the directory mtime was trusted
def test_a_manifest_renamed_in_without_an_mtime_change_is_still_waited_for(landing: Path) -> None:
    writer = ManifestWriter(landing, epoch=2)
    entries = [writer.write_blob(f"thermal/frames/A-01/m{i}.tiff", frame(i), "A-01", T0 + i) for i in range(3)]
    writer.publish([entries[0]])
    run = Run(landing)
    run.feed(entries[0].to_json())  # the index has listed the directory now
    manifests = LandingZone(landing).manifests
    stat = os.stat(manifests)
    writer.publish([entries[1]])
    writer.publish([entries[2]])
    os.utime(manifests, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # NFS: a cached, unchanged mtime
    held = run.feed(entries[2].to_json())  # seq 1 is listed: it must be waited for, not skipped
    assert held.entries == [] and "seq_gaps" not in held.counters
    run.feed(entries[1].to_json())
    assert run.entries() == [("A-01", T0), ("A-01", T0 + 1), ("A-01", T0 + 2)] and run.dead() == []


# ---- defect 5: slow file-system work ran inside the operator
def test_archive_pruning_and_listing_run_on_the_housekeeping_thread(landing: Path, redis_url: str,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import pipeline.landing.housekeeping as housekeeping
    from pipeline.effects import IngestEffects

    old = landing / "archive" / "2000010100"  # an expired archive hour with many files
    old.mkdir(parents=True)
    for i in range(2000):
        (old / f"{i}.tiff").write_bytes(b"x")
    callers: list[int] = []
    real_rmtree = housekeeping.shutil.rmtree
    monkeypatch.setattr(housekeeping.shutil, "rmtree", lambda p, **kw: (callers.append(threading.get_ident()),
                                                                         real_rmtree(p, **kw)))
    writer = ManifestWriter(landing, epoch=1)
    entry = writer.write_blob("thermal/frames/A-01/h.tiff", frame(1), "A-01", T0)
    writer.publish([entry])
    spec = job_spec(landing, f"t{random.randrange(10**9)}", redis_url, janitor_interval_ms=50)
    effects = IngestEffects(spec)
    effects.start()
    try:
        run = Run(landing)
        out = run.ingestor.on_line(entry.to_json(), AssetState(), "A-01")
        effects.commit(out)
        assert threading.get_ident() not in callers
        deadline = time.monotonic() + 30
        while old.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not old.exists() and callers and threading.get_ident() not in callers
    finally:
        effects.close()
        import redis as redis_lib

        client = redis_lib.Redis.from_url(redis_url)
        keys = list(client.scan_iter(f"{spec.streams.prefix}:*"))
        if keys:
            client.delete(*keys)
        client.close()


# ---- defect 6: validation settings documented but not wired
def test_validation_settings_reach_the_job(landing: Path) -> None:
    assert Settings().validation.future_tolerance_ms == ValidationSettings().future_tolerance_ms
    writer = ManifestWriter(landing, epoch=1)
    ahead = int(time.time() * 1000) + 10_000
    entry = writer.write_blob("thermal/frames/A-01/f.tiff", frame(1), "A-01", ahead)
    writer.publish([entry])
    strict = Run(landing)
    strict.ingestor = type(strict.ingestor)(strict.spec.model_copy(
        update={"validation": ValidationSettings(future_tolerance_ms=1_000)}))
    strict.feed(entry.to_json())
    assert [d.reason for d in strict.dead()] == [DeadLetterReason.FUTURE]


# ---- defect 7: PLC rows were never checked against the clock
def plc_file(rows: list[tuple[int, float]], asset: str = "A-01") -> bytes:
    lines = ["timestamp,tag,value,quality,unit"]
    lines += [f"{format_time_ms(t)},{asset}.motor_current_a,{v},Good,A" for t, v in rows]
    return ("\n".join(lines) + "\n").encode()


def test_a_plc_row_stamped_years_ahead_is_a_future_dead_letter_and_poisons_nothing(landing: Path) -> None:
    writer = ManifestWriter(landing, epoch=1)
    years = T0 + 3 * 365 * 86_400_000 + 10**12
    first = writer.write_blob("plc/plc-A-01-1.csv", plc_file([(T0 + i * 100, 10.0) for i in range(20)]
                                                           + [(years, 11.0)]), "A-01", T0)
    second = writer.write_blob("plc/plc-A-01-2.csv", plc_file([(T0 + 2000 + i * 100, 12.0) for i in range(20)]),
                               "A-01", T0 + 2000)
    writer.publish([first, second])
    run = Run(landing)
    run.feed(first.to_json())
    run.feed(second.to_json())
    dead = run.dead()
    assert [(d.reason, d.raw_ref) for d in dead] == [(DeadLetterReason.FUTURE, "plc/plc-A-01-1.csv:22")], dead
    ends = [t for _, t in run.entries("plc")]
    assert ends and max(ends) <= T0 + 4000 and all(b - a == 1000 for a, b in zip(ends, ends[1:], strict=False)), ends
    assert "plc_late_samples" not in run.out.counters


# ---- defect 8 is test_a_held_line_read_again_is_a_replay_and_a_reused_seq_with_a_new_blob_is_processed
# (test_job_functions.py); end to end in test_hostile_gateway_flink.py


# ---- defect 9: blank lines, misleading 'truncated', dead letters without path:line
def test_blank_lines_are_ignored_and_bad_lines_name_their_manifest_and_line(landing: Path) -> None:
    writer = ManifestWriter(landing, epoch=1)
    a = writer.write_blob("thermal/frames/B-02/1.tiff", frame(1), "B-02", T0)
    b = writer.write_blob("thermal/frames/B-02/2.tiff", frame(2), "B-02", T0 + 1)
    name = writer.publish([]).name  # reserve a name; rewrite it as a CRLF file with a bad middle line
    manifest = landing / "manifests" / name
    manifest.write_bytes(f"{a.to_json()}\r\n{{\"asset_id\": \"B-02\", \"path\r\n{b.to_json()}\r\n\r\n  \r\n".encode())
    run = Run(landing)
    for line in manifest.read_bytes().decode().replace("\r\n", "\n").split("\n"):
        run.feed(line)
    dead = run.dead()
    assert [(d.reason, d.raw_ref) for d in dead] == [(DeadLetterReason.DECODE_ERROR, f"manifests/{name}:2")], dead
    assert run.entries() == [("B-02", T0), ("B-02", T0 + 1)]
    assert run.out.counters["manifest_lines"] == 3  # blank lines are not lines
    # a cut last line (no line break after it) is what a half-written manifest looks like
    cut = landing / "manifests" / "cut.jsonl"
    cut.write_text('{"asset_id": "B-02", "timest')
    run.feed('{"asset_id": "B-02", "timest')
    assert (run.dead()[-1].reason, run.dead()[-1].raw_ref) == (DeadLetterReason.TRUNCATED, "manifests/cut.jsonl:1")


def test_a_late_plc_row_is_dead_lettered_with_path_line_and_excerpt(landing: Path) -> None:
    writer = ManifestWriter(landing, epoch=1)
    first = writer.write_blob("plc/plc-C-03-1.csv", plc_file([(T0 + 20_000 + i * 100, 10.0) for i in range(10)],
                                                            "C-03"), "C-03", T0, end_ms=T0 + 21_000)
    late = writer.write_blob("plc/plc-C-03-2.csv", plc_file([(T0 + 21_000, 1.0), (T0, 2.0)], "C-03"), "C-03",
                             T0 + 21_000)
    writer.publish([first, late])
    run = Run(landing)
    run.feed(first.to_json())
    run.feed(late.to_json())
    dead = run.dead()
    assert [(d.reason, d.raw_ref) for d in dead] == [(DeadLetterReason.LATE, "plc/plc-C-03-2.csv:3")], dead
    assert "C-03.motor_current_a=2.0" in dead[0].excerpt


# ---- defect 10: read_blob trusted the manifest's size
def test_a_blob_above_its_kinds_size_cap_is_a_dead_letter_not_a_read(landing: Path) -> None:
    writer = ManifestWriter(landing, epoch=1)
    entry = writer.write_blob("thermal/frames/A-01/huge.tiff", frame(1), "A-01", T0)
    huge = ManifestEntry(**{**{f: getattr(entry, f) for f in ("asset_id", "event_time_ms", "path", "kind", "sha256",
                                                            "seq", "epoch")}, "nbytes": 2 * 1024**3})
    writer.publish([huge])
    run = Run(landing)
    run.feed(huge.to_json())
    dead = run.dead()
    assert [d.reason for d in dead] == [DeadLetterReason.OUT_OF_RANGE] and "limit" in dead[0].detail
    assert not (landing / entry.path).exists()  # moved to the archive like any handled blob
    run.janitor_empties_the_directory()


# ---- "Also": a line is parsed once on its way through the job
def test_a_manifest_line_is_decoded_once_on_its_way(landing: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writer = ManifestWriter(landing, epoch=1)
    entries = [writer.write_blob(f"thermal/frames/A-01/p{i}.tiff", frame(i), "A-01", T0 + i) for i in range(2)]
    writer.publish(entries)
    run = Run(landing)
    run.feed(entries[0].to_json())  # warm up: the index has parsed the manifest, assets.json is loaded
    calls: list[str] = []
    real_loads = json.loads
    monkeypatch.setattr(json, "loads", lambda text, *a, **kw: (calls.append(str(text)[:40]), real_loads(text, *a, **kw))[1])
    out = run.ingestor.on_line(entries[1].to_json(), run.states["A-01"], "A-01")
    assert [e.message.event_time_ms for e in out.entries] == [T0 + 1]  # type: ignore[attr-defined]
    assert len(calls) == 1, calls  # before issue 8: five json.loads of the same line
