"""Fixtures of the ingestion tests: real Redis (127.0.0.1:6379), real PyFlink jobs, simulator data.

Every test module gets its own key prefix (deleted afterwards) and its own landing zone; Flink
jobs run as child processes (:class:`pipeline.runner.IngestJob`) and are shared by the tests of
a module, because each start costs 5-15 s.
"""

from __future__ import annotations

import io
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
import redis

from linewatch.contract import StreamNames, decode_message
from linewatch.flink_settings import FlinkSettings
from linewatch.settings import StreamSettings
from pipeline.job_spec import JobSpec
from pipeline.runner import IngestJob

REDIS_URL = "redis://127.0.0.1:6379/0"


@pytest.fixture(scope="module")
def ingest_redis(redis_url: str) -> Iterator[redis.Redis]:
    """A module-wide client of the real Redis (``redis_url`` of tests/conftest.py)."""
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


@pytest.fixture(scope="module")
def prefix(ingest_redis: redis.Redis) -> Iterator[str]:
    """A unique key prefix; every key under it is deleted after the module."""
    value = f"t{uuid.uuid4().hex[:10]}"
    yield value
    keys = list(ingest_redis.scan_iter(f"{value}:*", count=1000))
    if keys:
        ingest_redis.delete(*keys)


def simulate(out_dir: Path, n_assets: int, seconds: float, roll_s: float = 5.0, seed: int = 7,
             write_manifests: bool = False) -> None:
    """A batch run of the real simulator into ``out_dir``; by default without its own manifests
    (the tests publish them with ``publish_existing``, in their own order)."""
    from linewatch.simulator.config import SimulatorConfig
    from linewatch.simulator.factory import Factory

    config = SimulatorConfig(batch_roll_seconds=roll_s, seed=seed, write_manifests=write_manifests)
    Factory(config, n_assets=n_assets).run_batch(out_dir, seconds / 60.0, progress=False)


def job_spec(landing: Path, prefix: str, redis_url: str = REDIS_URL, checkpoints: Path | None = None,
             **flink: object) -> JobSpec:
    """The spec of a job on ``landing`` writing under ``prefix`` (2 shards); ``flink``: FlinkSettings fields."""
    from pipeline.runner import latest_checkpoint

    checkpoints = checkpoints or landing.parent / "checkpoints"
    return JobSpec(landing=landing, redis_url=redis_url, checkpoint_dir=checkpoints,
                   streams=StreamSettings(prefix=prefix, shards=2), flink=FlinkSettings(**flink),  # type: ignore[arg-type]
                   restore_from=latest_checkpoint(checkpoints))


def make_job(landing: Path, prefix: str, work: Path, redis_url: str = REDIS_URL, **flink: object) -> IngestJob:
    return IngestJob(job_spec(landing, prefix, redis_url, work / "checkpoints", **flink), work_dir=work / "run")


def wait_for(condition: Callable[[], bool], timeout_s: float, what: str, job: IngestJob | None = None) -> None:
    """Poll ``condition`` until true; fail with ``what`` (and the job's log) at the deadline."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        if job is not None and not job.alive:
            pytest.fail(f"ingest job died while waiting for {what}: {job.log_tail()}")
        time.sleep(0.05)
    pytest.fail(f"timed out after {timeout_s}s waiting for {what}" + (f"\n{job.log_tail(2000)}" if job else ""))


def kill_after_a_checkpoint(job: IngestJob, checkpoints: Path, condition: Callable[[], bool], what: str) -> None:
    """Run ``job`` until ``condition`` (``what``), then until a checkpoint newer than that moment, then
    kill it (no clean shutdown: only the checkpoint keeps its state)."""
    from pipeline.runner import latest_checkpoint

    try:
        wait_for(condition, 120, what, job)
        at = latest_checkpoint(checkpoints)
        wait_for(lambda: latest_checkpoint(checkpoints) not in (None, at), 60, f"a checkpoint after {what}", job)
    finally:
        job.kill()


def read_stream(client: redis.Redis, stream: str) -> list[tuple[str, object]]:
    """Every entry of ``stream`` decoded: ``[(entry id, message), ...]``."""
    return [(eid.decode(), decode_message(fields)) for eid, fields in client.xrange(stream)]


def feature_entries(client: redis.Redis, names: StreamNames, modality: str) -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = []
    for shard in range(names.shards):
        out += read_stream(client, names.features_shard(modality, shard))
    return out


def assert_exactly_once_in_order(client: redis.Redis, names: StreamNames, prefix: str, entries: list,
                                 what: str) -> None:
    """Every frame and clip of ``entries`` (``ManifestEntry``) exactly once, per-asset event-time
    order in every stream, PLC windows every second without a hole, no dead letter."""
    stats = {k.decode(): v.decode() for k, v in client.hgetall(StreamNames(prefix).ingest_stats()).items()}
    for modality in ("thermal", "audio"):
        want = Counter((e.asset_id, e.event_time_ms) for e in entries if e.kind == modality)
        got = Counter((m.asset_id, m.event_time_ms) for _, m in feature_entries(client, names, modality))  # type: ignore[attr-defined]
        assert got == want, f"{modality}: lost {want - got}, duplicated {got - want}; job stats {stats}"
    for modality in ("thermal", "audio", "plc"):
        per_asset: dict[str, list[int]] = defaultdict(list)
        for _, m in feature_entries(client, names, modality):
            per_asset[m.asset_id].append(m.event_time_ms)  # type: ignore[attr-defined]
        for asset, times in per_asset.items():
            assert times == sorted(set(times)), f"{modality} {asset}: out of order or duplicated"
    plc = [m for _, m in feature_entries(client, names, "plc")]
    for asset in {e.asset_id for e in entries}:
        ends = [m.window_end_ms for m in plc if m.asset_id == asset]  # type: ignore[attr-defined]
        assert ends and all(b - a == 1000 for a, b in zip(ends, ends[1:], strict=False)), f"PLC windows of {asset} have a hole"
    assert not list(client.xrange(names.deadletter)), f"{what} must not dead-letter valid input: {stats}"


def scene_frame(hall_ck: int) -> np.ndarray:
    """A 160 x 120 centikelvin frame the line reads: a hall at ``hall_ck`` and a machine 15 K over
    it (a frame of one value has no contrast: refused as ``no_signal``). The ingestion tests' assets
    have no regions and ``region_fit: false``, so no boxes are proposed on it (≈ 1.4 ms a frame
    through the handler, as the constant frames they used before; proposing costs ≈ 30 ms)."""
    frame = np.full((120, 160), hall_ck, np.uint16)
    frame[50:80, 60:110] += 1_500
    return frame


def tiff_bytes(frame: np.ndarray) -> bytes:
    import tifffile

    buf = io.BytesIO()
    tifffile.imwrite(buf, frame)
    return buf.getvalue()


def wav_bytes(samples: np.ndarray, rate: int = 16_000) -> bytes:
    import soundfile

    buf = io.BytesIO()
    soundfile.write(buf, samples, rate, format="WAV", subtype="PCM_16")
    return buf.getvalue()
