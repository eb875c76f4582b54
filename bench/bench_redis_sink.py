"""Ingestion sink round trips (docs/benchmarks.md, "Redis sink"), all numbers from one run:

* ``single``: ``RedisStreamWriter`` on a private standalone ``redis-server``;
* ``cluster``: the same writer on a private Redis Cluster of 3 masters (``tests/redis_cluster.py``),
  a ``RedisCluster`` client picked by ``connect``;
* ``old-script``: the script before issue 8 (mark first, ``XADD MAXLEN ~``) on the standalone
  server through the same pipelined round trip — what write-first costs.

Two workloads, one round trip per Flink input element as in the job: ``thermal`` (one 38 KB frame
entry) and ``plc10`` (10 PLC windows of 10 assets spread over the 4 shards, i.e. over all three
masters on the cluster). Modes alternate round trip by round trip, so load from other processes
hits them alike. Reports the median and p99 of the round trip in ms and the ratios.

    .venv/bin/python bench/bench_redis_sink.py --rounds 5 --per-round 200 --out bench/results/bench_redis_sink.json

Needs Debian's ``redis-server``; starts and stops its own servers. Run it under the heavy-run lock.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_report import emit  # noqa: E402

from linewatch.contract import PlcFeatures, StreamNames, ThermalFeatures, encode_message  # noqa: E402
from pipeline.redis_sink import PendingEntry, RedisClient, RedisStreamWriter, connect  # noqa: E402
from tests.redis_cluster import LocalRedisCluster, RedisServer, free_ports  # noqa: E402

#: pipeline/redis_sink.py before issue 8 (mark moved before XADD, MAXLEN trimming), for comparison only
OLD_XADD_ONCE_LUA = """
if ARGV[1] == 'hwm' then
  local cur = redis.call('HGET', KEYS[2], ARGV[2])
  if cur and tonumber(cur) >= tonumber(ARGV[3]) then return 0 end
  redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
else
  if not redis.call('SET', KEYS[2], '1', 'NX', 'EX', tonumber(ARGV[2])) then return 0 end
end
local args = {KEYS[1], 'MAXLEN', '~', ARGV[4], '*'}
for i = 5, #ARGV do args[#args + 1] = ARGV[i] end
return redis.call('XADD', unpack(args))
"""


class OldScriptWriter:
    """The pre-issue-8 round trip: one EVALSHA per entry of the old script, pipelined."""

    def __init__(self, client: RedisClient, maxlen: int = 100_000) -> None:
        self.client, self.maxlen = client, maxlen
        self.sha = client.script_load(OLD_XADD_ONCE_LUA)

    def write(self, entries: list[PendingEntry]) -> None:
        pipe = self.client.pipeline(transaction=False)
        for e in entries:
            flat: list[bytes | str | int] = []
            for k, v in encode_message(e.message).items():
                flat += [k, v]
            pipe.execute_command("EVALSHA", self.sha, 2, e.stream, e.hwm_key or "", "hwm", e.hwm_field or "",
                                 int(e.hwm_value or 0), self.maxlen, *flat)
        pipe.execute()


def thermal(names: StreamNames, t: int, rng: np.random.Generator) -> list[PendingEntry]:
    msg = ThermalFeatures(asset_id="PMP-01", asset_type="pump", event_time_ms=t, features_version=1, stats={},
                          frame=rng.normal(size=(120, 160)).astype(np.float16), ingest_time_ms=t)
    return [PendingEntry(names.features("thermal", "PMP-01"), msg, names.ingest_marks_of("thermal", "PMP-01"),
                         "PMP-01", t)]


def plc10(names: StreamNames, t: int, rng: np.random.Generator) -> list[PendingEntry]:
    out = []
    for i in range(10):
        asset = f"PMP-{i:02d}"
        msg = PlcFeatures(asset_id=asset, asset_type="pump", event_time_ms=t, window_start_ms=t - 1000,
                          window_end_ms=t, features_version=1, feature_names=[f"f{j}" for j in range(37)],
                          values=rng.normal(size=37).astype(np.float32), n_samples=10, ingest_time_ms=t)
        out.append(PendingEntry(names.features("plc", asset), msg, names.ingest_marks_of("plc", asset), asset, t))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--per-round", type=int, default=200)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-redis-sink-"))
    single = RedisServer(free_ports(1)[0], work / "single").start()
    cluster = LocalRedisCluster(work / "cluster").start()
    try:
        single_client = connect(single.url)
        cluster_writer = RedisStreamWriter.open(cluster.url, dedup_ttl_s=600)
        writers: dict[str, Callable[[list[PendingEntry]], object]] = {
            "single": RedisStreamWriter(single_client, dedup_ttl_s=600).write,
            "cluster": cluster_writer.write,
            "old-script": OldScriptWriter(single_client).write,
        }
        rng = np.random.default_rng(0)
        workloads = {"thermal": thermal, "plc10": plc10}
        times: dict[str, dict[str, list[float]]] = {w: {m: [] for m in writers} for w in workloads}
        t = 1_000
        for _ in range(args.rounds):
            for wname, make in workloads.items():
                for _ in range(args.per_round):  # modes alternate entry by entry
                    t += 1
                    for mode, write in writers.items():
                        entries = make(StreamNames(f"b-{mode}", shards=4), t, rng)
                        t0 = time.perf_counter()
                        write(entries)
                        times[wname][mode].append((time.perf_counter() - t0) * 1000)
        result: dict[str, object] = {"rounds": args.rounds, "per_round": args.per_round,
                                     "redis_server": single_client.info("server")["redis_version"]}
        for wname, by_mode in times.items():
            stats = {m: {"median_ms": round(statistics.median(v), 3),
                         "p99_ms": round(float(np.percentile(v, 99)), 3), "n": len(v)} for m, v in by_mode.items()}
            result[wname] = {**stats,
                             "cluster_over_single": round(stats["cluster"]["median_ms"] / stats["single"]["median_ms"], 2),
                             "new_over_old_script": round(stats["single"]["median_ms"]
                                                          / stats["old-script"]["median_ms"], 2)}
        emit(result, args.out)
        cluster_writer.close()
        single_client.close()
    finally:
        cluster.stop()
        single.stop()


if __name__ == "__main__":
    main()
