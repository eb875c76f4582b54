"""Landing-zone lease (real Redis), locks and temp dirs without a Flink job (issue 13)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import redis

from linewatch.contract import StreamNames
from pipeline.supervision.guard import IngestBusy, LandingGuard
from pipeline.supervision.lease import LeaseHeld, RedisLease, zone_id
from pipeline.supervision.lock import LANDING_LOCK_NAME, is_locked, read_holder
from pipeline.supervision.tempdirs import TempRoot


@pytest.fixture
def lease_key(redis_client: redis.Redis) -> Iterator[str]:
    key = f"t{uuid.uuid4().hex[:10]}:ingest:lease:zone"
    yield key
    redis_client.delete(key)


def test_a_second_host_is_refused_by_the_lease_and_a_crashed_same_host_owner_is_taken_over(
    tmp_path: Path, redis_url: str, lease_key: str, redis_client: redis.Redis
) -> None:
    first = RedisLease(redis_url, lease_key, tmp_path, ttl_s=30)
    first.acquire()
    other_host = RedisLease(redis_url, lease_key, tmp_path, ttl_s=30)
    other_host.owner = replace(other_host.owner, host="edge-02")
    with pytest.raises(LeaseHeld) as refused:
        other_host.acquire()
    assert f"PID {os.getpid()}" in str(refused.value) and first.owner.host in str(refused.value)
    assert 25_000 < redis_client.pttl(lease_key) <= 30_000
    assert first.renew()
    # a restart on the same host (it holds the zone's flock, so the old owner is dead): taken over at once
    restarted = RedisLease(redis_url, lease_key, tmp_path, ttl_s=30)
    restarted.acquire(holds_local_lock=True)
    assert not first.renew() and "lost the landing-zone lease" in (first.lost or "")
    restarted.release()
    assert redis_client.get(lease_key) is None
    first.client.close()
    other_host.client.close()


def test_the_guard_refuses_a_second_ingest_naming_the_holder_and_releases(tmp_path: Path, redis_url: str) -> None:
    landing, work = tmp_path / "landing", tmp_path / "run"
    landing.mkdir()
    prefix = f"t{uuid.uuid4().hex[:10]}"

    def key(zone: str) -> str:
        return StreamNames(prefix).ingest_lease(zone)

    guard = LandingGuard.acquire(landing, work, redis_url, key)
    try:
        # another process: flock is per open file description, so ask from a child
        code = ("import sys; from pathlib import Path; from pipeline.supervision.guard import LandingGuard, IngestBusy\n"
                "try:\n LandingGuard.acquire(Path(sys.argv[1]), Path(sys.argv[2]), None)\n"
                "except IngestBusy as e:\n print(e); sys.exit(3)\n")
        child = subprocess.run([sys.executable, "-c", code, str(landing), str(tmp_path / "run2")],
                               capture_output=True, text=True, timeout=60)
        assert child.returncode == 3, child.stdout + child.stderr
        assert f"PID {os.getpid()}" in child.stdout and "already being ingested" in child.stdout
        assert is_locked(landing / LANDING_LOCK_NAME)
        holder = read_holder(landing / LANDING_LOCK_NAME)
        assert holder is not None and holder.pid == os.getpid()
        assert zone_id(landing) in (guard.lease.key if guard.lease else "")
    finally:
        guard.release()
    assert not is_locked(landing / LANDING_LOCK_NAME)
    LandingGuard.acquire(landing, work, redis_url, key).release()  # free again
    with pytest.raises(IngestBusy):
        held = LandingGuard.acquire(landing, work, None)
        try:  # flock conflicts between open file descriptions, even in one process
            LandingGuard.acquire(landing, tmp_path / "run3", None)  # same zone, another data dir
        finally:
            held.release()


def test_stale_run_temp_dirs_are_removed_and_live_ones_kept(tmp_path: Path) -> None:
    root = TempRoot(tmp_path / "tmp")
    live = root.new_run()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], pass_fds=(live.fd,))
    live.release()  # only the child holds the owner lock now, as the job process does
    try:
        crashed = root.new_run()
        (crashed.path / "flink-rpc-akka.jar").write_bytes(b"x" * 1000)
        crashed.release()  # its "job" died
        third = root.new_run()  # the start after the crash
        names = {p.name for p in root.runs()}
        assert crashed.path.name not in names and live.path.name in names and third.path.name in names
    finally:
        child.kill()
        child.wait()
    third.remove()
    assert [p.name for p in root.remove_stale()] == [live.path.name]
