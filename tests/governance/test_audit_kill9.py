"""kill -9 of ``linewatch serve audit`` mid-write, several times, under load: every entry Redis
shows as acknowledged has exactly one audit row after every kill, and after the last restart every
entry has exactly one row (nothing lost, nothing doubled, the hash chain intact)."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import threading
from pathlib import Path

import redis

from linewatch.contract import Alert, AlertSeverity, StreamNames, Verdict, encode_message
from tests.services.support import env_for, linewatch_cmd, start, wait_for

KILLS = 5
GROUP = "audit"


def produce(client: redis.Redis, names: StreamNames, stop: threading.Event, total: int) -> None:
    """Write ``total`` entries (verdicts of 6 assets over the shards, every 10th an alert), paced."""
    i = 0
    while i < total and not stop.is_set():
        pipe = client.pipeline(transaction=False)
        for _ in range(40):
            asset = f"A-{i % 6}"
            if i % 10 == 9:
                msg: Alert | Verdict = Alert(asset_id=asset, severity=AlertSeverity.WARNING, label="f", message="m",
                                             created_at_ms=i, alert_id=f"A-{i}", event="acknowledged", user="maria")
                pipe.xadd(names.alerts, encode_message(msg))
            else:
                msg = Verdict(asset_id=asset, event_time_ms=i, label="normal", confidence=0.9, state="normal")
                pipe.xadd(names.verdicts(asset), encode_message(msg))
            i += 1
        pipe.execute()
        stop.wait(0.01)  # pacing of the producer (load arrives while the worker writes), not a race guard


def streams(names: StreamNames) -> list[str]:
    return [*names.all_verdict_streams(), names.alerts]


def acknowledged(client: redis.Redis, names: StreamNames) -> set[tuple[str, str]]:
    """Entries delivered to the group and no longer pending: what the worker has XACK'd."""
    out: set[tuple[str, str]] = set()
    for s in streams(names):
        try:
            groups = client.xinfo_groups(s)
        except redis.ResponseError:
            continue
        info = next((g for g in groups if g["name"] in (GROUP, GROUP.encode())), None)
        if info is None:
            continue
        last = info["last-delivered-id"]
        last = last.decode() if isinstance(last, bytes) else last
        pending = {p["message_id"].decode() for p in client.xpending_range(s, GROUP, "-", "+", 100_000)}
        for eid, _ in client.xrange(s, "-", last):
            e = eid.decode()
            if e not in pending:
                out.add((s, e))
    return out


def all_entries(client: redis.Redis, names: StreamNames) -> set[tuple[str, str]]:
    return {(s, eid.decode()) for s in streams(names) for eid, _ in client.xrange(s)}


def recorded(db: Path) -> list[tuple[str, str]]:
    conn = sqlite3.connect(db)
    try:
        return [(s, e) for s, e in conn.execute("SELECT stream, entry_id FROM audit_log WHERE stream != ''")]
    except sqlite3.OperationalError:  # not created yet
        return []
    finally:
        conn.close()


def check_no_ack_lost(client: redis.Redis, names: StreamNames, db: Path) -> int:
    rows = recorded(db)
    assert len(rows) == len(set(rows)), "an entry was recorded twice"
    lost = acknowledged(client, names) - set(rows)
    assert not lost, f"{len(lost)} acknowledged entries have no audit row, e.g. {sorted(lost)[:3]}"
    return len(rows)


def test_kill_9_mid_write_loses_and_duplicates_nothing(redis_client: redis.Redis, redis_url: str,
                                                       stream_names: StreamNames, tmp_path: Path) -> None:
    names = stream_names
    db = tmp_path / "audit.sqlite"
    env = env_for(redis_url, names, LINEWATCH_AUDIT__PATH=str(db), LINEWATCH_AUDIT__VERDICTS="all",
                  LINEWATCH_AUDIT__MAX_BATCH="16", LINEWATCH_AUDIT__LEASE_TTL_MS="600",
                  LINEWATCH_AUDIT__MAX_DELIVERIES="100", LINEWATCH_DATA_DIR=str(tmp_path))
    cmd = [*linewatch_cmd(), "serve", "audit"]
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    stop = threading.Event()
    total = 6_000
    producer = threading.Thread(target=produce, args=(redis_client, names, stop, total), daemon=True)
    producer.start()
    log = tmp_path / "audit.log"
    kills: list[int] = []
    proc: subprocess.Popen[bytes] | None = None
    try:
        for _ in range(KILLS):
            proc = start(cmd, env, log)
            before = len(recorded(db))
            target = before + rng.randrange(20, 600)
            # poll the store until the worker has written a random amount more, then pull the plug
            wait_for(lambda: proc.poll() is not None or len(recorded(db)) >= target, 60,
                     f"audit rows to pass {target} (seed {seed})")
            assert proc.poll() is None, f"audit worker exited early ({proc.returncode}); see {log}"
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
            kills.append(check_no_ack_lost(redis_client, names, db))
        producer.join(timeout=120)
        assert not producer.is_alive()
        proc = start(cmd, env, log)
        every = all_entries(redis_client, names)
        assert len(every) == total

        def drained() -> bool:
            return proc.poll() is None and acknowledged(redis_client, names) == every

        wait_for(drained, 120, f"the restarted worker to acknowledge all {total} entries (seed {seed})")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        stop.set()
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
    rows = recorded(db)
    assert len(rows) == len(set(rows)) == total, (len(rows), len(set(rows)), total)
    assert set(rows) == every
    assert redis_client.xlen(names.deadletter) == 0
    # the kills landed while rows were being written (not all before or after the load)
    assert len(set(kills)) == KILLS and kills[-1] < total, kills
    verify = subprocess.run([*cmd[:-2], "audit", "verify", "--path", str(db)], env=env, capture_output=True,
                            text=True, timeout=60)
    assert verify.returncode == 0, verify.stdout + verify.stderr
