"""Rows per second the audit trail sustains: the SQLite store alone, and the audit workers end to end.

1. **store**: ``AuditStore.append`` of verdict-sized records (JSON columns + hash chain) in
   transactions of 1, 16 and 256 records, ``synchronous=FULL`` (the default: an acknowledged row
   survives a power cut) and ``NORMAL``; one fsync per transaction.
2. **worker**: ``governance.audit.service.audit_workers`` (threads, real Redis) draining a backlog of
   verdicts (policy ``all``: one row each) and alert events; time from start to every entry
   acknowledged, default ``max_batch`` (256).

Medians of ``--repeats`` runs, measured in one run of this script.

    .venv/bin/python bench/bench_audit.py \
        --redis-url redis://127.0.0.1:6379/0 --out bench/results/bench_audit.json
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import redis
from bench_report import emit

from governance.audit.records import verdict_record
from governance.audit.schema import dumps
from governance.audit.service import audit_workers
from governance.audit.store import AuditRecord, AuditStore
from linewatch.redis_connection import RedisConnectionSettings, redis_client  # noqa: E402
from linewatch.audit_settings import AuditSettings
from linewatch.contract import Alert, AlertSeverity, ModelRef, StreamNames, Verdict, encode_message

MODELS = {m: ModelRef(name=f"{m}-student", version="v3", sha256="ab" * 32) for m in ("plc", "thermal", "audio")}


def a_verdict(i: int) -> Verdict:
    return Verdict(asset_id=f"A-{i % 24:02d}", event_time_ms=1_000 + i, label="bearing_wear", confidence=0.81,
                   state="raised", instant_label="bearing_wear", severity=0.62, coverage=1.0,
                   modalities={"plc": "bearing_wear", "thermal": "normal", "audio": "bearing_wear"},
                   probabilities={"normal": 0.2, "bearing_wear": 0.8}, reasons=["k of n"],
                   input_entry_ids={m: f"{1_000 + i}-{j}" for j, m in enumerate(MODELS)}, models=MODELS,
                   source=f"thermal/A-{i % 24:02d}/{i}.tiff", decided_at_ms=1_000 + i)


def records(n: int) -> list[AuditRecord]:
    stream = StreamNames().verdicts_shard(0)
    return [verdict_record(stream, f"{1_000 + i}-0", a_verdict(i)) for i in range(n)]


def bench_store(n: int, batch: int, sync: str, repeats: int) -> dict[str, float]:
    rates = []
    recs = records(n)
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(dir=REPO / "bench") as tmp:
            store = AuditStore(Path(tmp) / "a.sqlite", synchronous=sync)
            t0 = time.perf_counter()
            for i in range(0, n, batch):
                store.append(recs[i:i + batch])
            rates.append(n / (time.perf_counter() - t0))
            assert store.count() == n
            store.close()
    return {"rows_per_s_median": round(statistics.median(rates)), "runs": [round(r) for r in rates]}


def bench_worker(url: str, n: int, sync: str, repeats: int) -> dict[str, float]:
    client = redis_client(RedisConnectionSettings(url=url))
    rates = []
    for _ in range(repeats):
        names = StreamNames(prefix=f"bench{uuid.uuid4().hex[:8]}", shards=4)
        try:
            pipe = client.pipeline(transaction=False)
            for i in range(n):
                if i % 10 == 9:
                    pipe.xadd(names.alerts, encode_message(Alert(
                        asset_id="A-01", severity=AlertSeverity.WARNING, label="f", message="m", created_at_ms=i,
                        alert_id=f"A-{i}", event="acknowledged", user="maria")))
                else:
                    v = a_verdict(i)
                    pipe.xadd(names.verdicts(v.asset_id), encode_message(v))
                if i % 1000 == 999:
                    pipe.execute()
            pipe.execute()
            streams = [*names.all_verdict_streams(), names.alerts]
            with tempfile.TemporaryDirectory(dir=REPO / "bench") as tmp:
                settings = AuditSettings(verdicts="all", synchronous=sync, block_ms=20)  # type: ignore[arg-type]
                workers = audit_workers(client, names, settings, Path(tmp))
                t0 = time.perf_counter()
                threads = [threading.Thread(target=w.run, daemon=True) for w in workers]
                for t in threads:
                    t.start()
                done = threading.Event()
                while not done.wait(0.01):
                    acked = 0
                    for s in streams:
                        try:
                            g = [x for x in client.xinfo_groups(s) if x["name"] in (b"audit", "audit")]
                        except redis.ResponseError:
                            g = []
                        if g and int(g[0]["lag"] or 0) == 0 and int(g[0]["pending"]) == 0:
                            acked += 1
                    if acked == len(streams):
                        done.set()
                elapsed = time.perf_counter() - t0
                for w in workers:
                    w.stop()
                for t in threads:
                    t.join(timeout=30)
                with AuditStore(Path(tmp) / "audit" / "audit.sqlite") as store:
                    rows = store.count("verdict") + store.count("operator_action")
                assert rows == n, (rows, n)
                rates.append(n / elapsed)
        finally:
            keys = list(client.scan_iter(match=f"{names.prefix}:*", count=1000))
            if keys:
                client.delete(*keys)
    return {"rows_per_s_median": round(statistics.median(rates)), "runs": [round(r) for r in rates]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=5_000)
    ap.add_argument("--worker-rows", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    r = records(1)[0]
    result: dict[str, object] = {"rows": args.rows, "worker_rows": args.worker_rows, "repeats": args.repeats,
                                 "record": "verdict with 3 models, hash-chained",
                                 "record_json_bytes": len(dumps(r.payload)) + len(dumps(r.models))
                                 + len(dumps(r.input_refs))}
    store: dict[str, object] = {}
    for sync in ("FULL", "NORMAL"):
        for batch in (1, 16, 256):
            n = min(args.rows, 500) if batch == 1 else args.rows
            store[f"{sync}_batch{batch}"] = bench_store(n, batch, sync, args.repeats)
    result["store"] = store
    result["worker"] = {sync: bench_worker(args.redis_url, args.worker_rows, sync, args.repeats)
                        for sync in ("FULL", "NORMAL")}
    emit(result, args.out)


if __name__ == "__main__":
    main()
