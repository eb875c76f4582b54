"""Ingestion benchmarks: latency file-closed -> entry in Redis, CPU, RSS, backlog, soak.

Runs the real job (embedded MiniCluster, tuned defaults unless overridden) against the real
Redis on 127.0.0.1:6379 and a gateway emulator that writes blobs + manifests at a fixed rate.

    python bench/bench_ingest.py thermal --rate 200 --seconds 20      # 200 frames/s over 10 assets
    python bench/bench_ingest.py plc --rate 2000 --seconds 20          # 2,000 PLC rows/s, 10 assets
    python bench/bench_ingest.py mixed --seconds 20                    # 50 fps thermal + audio, 10 assets
    python bench/bench_ingest.py backlog --count 3000                  # frames waiting before start
    python bench/bench_ingest.py soak --count 14400 --rate 100         # many manifests: scan CPU, memory
    python bench/bench_ingest.py soak --count 14400 --rollover 3600    # ... with source rollovers
    ... --flink scan_interval_ms=100 --flink execution_mode=process   # compare with other settings

Latency = Redis entry id time (server clock, same machine) - mtime of the blob when it was
renamed into place (file closed). Prints one JSON line of results.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import numpy as np
import redis

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from linewatch.contract import StreamNames
from linewatch.flink_settings import FlinkSettings
from linewatch.redis_connection import RedisConnectionSettings, redis_client
from linewatch.settings import StreamSettings
from pipeline.job_spec import JobSpec
from pipeline.landing import ManifestWriter, format_time_ms
from pipeline.runner import IngestJob

ASSETS = [f"BEN-{i:02d}" for i in range(10)]
CLK = os.sysconf("SC_CLK_TCK")


def proc_tree(root: int) -> list[int]:
    pids, frontier = [root], [root]
    while frontier:
        pid = frontier.pop()
        try:
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        except OSError:
            continue
        for c in children:
            pids.append(int(c))
            frontier.append(int(c))
    return pids


def cpu_seconds(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / CLK
        except OSError:
            pass
    return total


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


def registry(landing: Path) -> None:
    from linewatch.simulator.tags import PLC_TAGS

    assets = [{"asset_id": a, "asset_type": "pump", "regions": {},
               "tags": [{"tag": f"{a}.{t}", "name": t, "unit": "", "valid_min": -1e9, "valid_max": 1e9}
                        for t in PLC_TAGS]} for a in ASSETS]
    (landing / "assets.json").write_text(json.dumps({"assets": assets, "audio": {"sample_rate_hz": 16000}}))


def tiff(seed: int) -> bytes:
    import tifffile

    rng = np.random.default_rng(seed)
    buf = io.BytesIO()
    tifffile.imwrite(buf, (29315 + rng.integers(0, 800, (120, 160))).astype(np.uint16))
    return buf.getvalue()


def wav(seed: int) -> bytes:
    import soundfile

    buf = io.BytesIO()
    soundfile.write(buf, (np.random.default_rng(seed).standard_normal(16000) * 0.05).astype(np.float32), 16000,
                    format="WAV", subtype="PCM_16")
    return buf.getvalue()


class Gateway:
    """Writes blobs and one manifest per tick (default 10 ms) with what closed in that tick."""

    def __init__(self, landing: Path) -> None:
        self.writer = ManifestWriter(landing, epoch=int(time.time() * 1000))
        self.frame = tiff(1)
        self.clip = wav(2)
        self.closed: dict[str, float] = {}  # rel path -> close time (s, wall)
        self.n = 0

    def thermal(self, asset: str, t_ms: int):  # type: ignore[no-untyped-def]
        rel = f"thermal/frames/{asset}/{asset}-{t_ms}.tiff"
        return self.writer.write_blob(rel, self.frame, asset, t_ms)

    def audio(self, asset: str, t_ms: int):  # type: ignore[no-untyped-def]
        return self.writer.write_blob(f"audio/clips/{asset}/{asset}-{t_ms}.wav", self.clip, asset, t_ms)

    def plc(self, asset: str, t0_ms: int, rows: int, period_ms: int):  # type: ignore[no-untyped-def]
        from linewatch.simulator.tags import PLC_TAGS

        lines = ["timestamp,tag,value,quality,unit"]
        for i in range(rows):
            ts = t0_ms + (i * period_ms) // rows
            lines.append(f"{format_time_ms(ts)},{asset}.{PLC_TAGS[i % len(PLC_TAGS)]},{10 + i % 7},Good,")
        data = ("\n".join(lines) + "\n").encode()
        return self.writer.write_blob(f"plc/plc-{asset}-{t0_ms}.csv", data, asset, t0_ms, end_ms=t0_ms + period_ms)


def flink_settings(flink: dict[str, str], **fixed: object) -> FlinkSettings:
    """``FlinkSettings`` from the ``--flink key=value`` overrides (numbers parsed) plus ``fixed``."""
    return FlinkSettings(**{**{k: (json.loads(v) if v[:1].isdigit() else v) for k, v in flink.items()}, **fixed})


def start_job(landing: Path, prefix: str, work: Path, flink: dict[str, str]) -> IngestJob:
    spec = JobSpec(landing=landing, redis_url="redis://127.0.0.1:6379/0", checkpoint_dir=work / "checkpoints",
                   streams=StreamSettings(prefix=prefix, shards=4), flink=flink_settings(flink))
    job = IngestJob(spec, work_dir=work / "run")
    t0 = time.monotonic()
    job.start()
    ready = job.wait_ready(120)
    print(f"# job running after {time.monotonic() - t0:.1f}s (probe {ready:.2f}s)", file=sys.stderr)
    return job


def latencies(client: redis.Redis, names: StreamNames, closed: dict[str, float], modality: str,
              after: float = 0.0) -> list[float]:
    """Latencies of entries whose source file closed after ``after`` (wall-clock s; warm-up excluded)."""
    out = []
    for shard in range(names.shards):
        for eid, fields in client.xrange(names.features_shard(modality, shard)):
            source = json.loads(fields[b"body"])["source"]
            if source in closed and closed[source] >= after:
                out.append(int(eid.split(b"-")[0]) - closed[source] * 1000)
    return out


def stats(values: list[float]) -> dict[str, float]:
    if not values:
        return {"n": 0}
    a = np.asarray(values)
    return {"n": int(a.size), "p50_ms": round(float(np.percentile(a, 50)), 1),
            "p99_ms": round(float(np.percentile(a, 99)), 1), "max_ms": round(float(a.max()), 1)}


def run_rate(args: argparse.Namespace, landing: Path, job: IngestJob, names: StreamNames, client: redis.Redis) -> dict:
    gw = Gateway(landing)
    assets = ASSETS[: args.assets]
    tick = args.tick_ms / 1000
    thermal_per_tick = args.rate * tick if args.mode == "thermal" else (50 * len(assets) * tick if args.mode == "mixed" else 0)
    plc_period_ms = 100
    pids = proc_tree(job.process.pid)  # type: ignore[union-attr]
    cpu0, t_start = cpu_seconds(pids), time.monotonic()
    warm_until = time.time() + args.warmup
    credit_thermal = 0.0
    next_plc = next_audio = time.monotonic()
    k = 0
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        now_ms = int(time.time() * 1000)
        batch = []
        credit_thermal += thermal_per_tick
        while credit_thermal >= 1:
            credit_thermal -= 1
            batch.append(gw.thermal(assets[k % len(assets)], now_ms + k // len(assets) % 1000))
            k += 1
        if args.mode == "mixed" and time.monotonic() >= next_audio:
            next_audio += 1.0
            batch += [gw.audio(a, now_ms) for a in assets]
        if args.mode == "plc" and time.monotonic() >= next_plc:
            next_plc += plc_period_ms / 1000
            rows = max(1, int(args.rate * plc_period_ms / 1000 / len(assets)))
            t0 = now_ms // plc_period_ms * plc_period_ms
            batch += [gw.plc(a, t0, rows, plc_period_ms) for a in assets]
        if batch:
            for e in batch:
                gw.closed[e.path] = os.stat(landing / e.path).st_mtime
            gw.writer.publish(batch)
        time.sleep(max(0.0, tick - (time.monotonic() - (deadline - args.seconds)) % tick))
    elapsed = time.monotonic() - t_start
    cpu = cpu_seconds(pids) - cpu0
    time.sleep(1.5)
    result: dict[str, object] = {"mode": args.mode, "rate": args.rate, "assets": len(assets), "seconds": args.seconds,
                                 "warmup_s": args.warmup, "tick_ms": args.tick_ms,
                                 "job_cpu_cores": round(cpu / elapsed, 2)}
    for modality in ("thermal", "audio", "plc"):
        lat = latencies(client, names, gw.closed, modality, warm_until)
        if lat:
            result[modality] = stats(lat)
    result["rss_mb"] = {f"{comm(p)}:{p}": round(rss_mb(p)) for p in pids}
    return result


def run_backlog(args: argparse.Namespace, landing: Path, prefix: str, work: Path, names: StreamNames,
                client: redis.Redis) -> dict:
    gw = Gateway(landing)
    base = int(time.time() * 1000)
    entries = [gw.thermal(ASSETS[i % len(ASSETS)], base + i) for i in range(args.count)]
    per = max(1, args.lines_per_manifest)
    for start in range(0, len(entries), per):
        gw.writer.publish(entries[start:start + per])
    job = start_job(landing, prefix, work, dict(args.flink))
    pids = proc_tree(job.process.pid)  # type: ignore[union-attr]
    cpu0 = cpu_seconds(pids)
    t0 = time.monotonic()
    done = 0
    progress = []
    try:
        while time.monotonic() - t0 < args.seconds_max:
            done = sum(client.xlen(names.features_shard("thermal", s)) for s in range(names.shards))
            if not progress or time.monotonic() - t0 >= progress[-1][0] + 10:
                progress.append((round(time.monotonic() - t0, 1), done))
                print(f"# {progress[-1]}", file=sys.stderr)
            if done >= args.count:
                break
            time.sleep(0.05)
        elapsed = time.monotonic() - t0
        cpu = cpu_seconds(pids) - cpu0
        job_stats = job.stats()
        return {"mode": "backlog", "frames": args.count, "lines_per_manifest": per,
                "manifests": (args.count + per - 1) // per, "done": done, "seconds": round(elapsed, 1),
                "frames_per_s": round(done / elapsed, 1), "job_cpu_cores": round(cpu / elapsed, 2),
                "progress": progress,
                "job_stats": {k: job_stats.get(k) for k in ("seq_gaps", "reorder_held", "already_handled", "deadletters")}}
    finally:
        job.stop()


def heap_used_mb(heap_info: str) -> float:
    """Used heap (MB) from ``jcmd <pid> GC.heap_info``; the number after "used", not "total".

    >>> heap_used_mb(" garbage-first heap   total 78848K, used 38038K [0x0, 0x1)\\n Metaspace used 55729K")
    37.1
    """
    for line in heap_info.splitlines():
        if "heap" in line and "total" in line and "used" in line:
            words = line.replace(",", " ").split()
            value = words[words.index("used") + 1]
            if value.endswith("K") and value[:-1].isdigit():
                return round(int(value[:-1]) / 1024, 1)
    return 0.0


def run_soak(args: argparse.Namespace, landing: Path, prefix: str, work: Path, client: redis.Redis) -> dict:
    """Publish ``count`` tiny manifests (one PLC line each) at ``rate``, in four parts; after each
    part, once the janitor has emptied the directory, sample the job's idle CPU, JVM RSS and the
    heap used after a full GC. With ``--rollover N`` the job runs under ``IngestSupervisor`` and
    rolls over to a fresh source after N archived manifests (the time each rollover took is kept)."""
    import subprocess

    from linewatch.settings import Settings
    from pipeline.runner import IngestSupervisor

    settings = Settings(data_dir=work / "data", landing_dir=landing, streams={"prefix": prefix, "shards": 4},
                        flink=flink_settings(dict(args.flink), source_rollover_manifests=args.rollover))
    supervisor = IngestSupervisor(settings, "redis://127.0.0.1:6379/0", resume=False)
    t0 = time.monotonic()
    supervisor.start()
    print(f"# job running after {time.monotonic() - t0:.1f}s", file=sys.stderr)
    rollover_s: list[float] = []

    def check() -> None:
        t = time.monotonic()
        if supervisor.check():
            rollover_s.append(round(time.monotonic() - t, 1))
            print(f"# rollover {supervisor.rollovers} took {rollover_s[-1]}s", file=sys.stderr)

    def pids() -> list[int]:
        return proc_tree(supervisor.job.process.pid)  # type: ignore[union-attr]

    def java() -> int | None:
        found = [p for p in pids() if comm(p) == "java"]
        return found[0] if found else None

    def idle_cpu(seconds: float = 5.0) -> float:
        procs = pids()
        c0 = cpu_seconds(procs)
        time.sleep(seconds)
        return round((cpu_seconds(procs) - c0) / seconds, 3)

    def sample(published: int) -> dict:
        pid = java()
        if pid is not None:
            subprocess.run(["jcmd", str(pid), "GC.run"], capture_output=True)
        heap = subprocess.run(["jcmd", str(pid), "GC.heap_info"], capture_output=True, text=True).stdout if pid else ""
        return {"manifests": published, "left_in_dir": len(os.listdir(landing / "manifests")),
                "rollovers": supervisor.rollovers, "idle_cpu_cores": idle_cpu(),
                "jvm_rss_mb": round(rss_mb(pid)) if pid else 0, "heap_used_mb": heap_used_mb(heap)}

    gw = Gateway(landing)
    stats_key = StreamNames(prefix).ingest_stats()
    samples = [sample(0)]
    base = int(time.time() * 1000) // 100 * 100
    published = 0
    step = args.count // 4
    try:
        for _ in range(4):
            pace = time.monotonic()
            for i in range(step):
                n = published + i
                gw.writer.publish([gw.plc(ASSETS[n % len(ASSETS)], base + (n // len(ASSETS)) * 100, 7, 100)])
                pace += 1 / args.rate
                time.sleep(max(0.0, pace - time.monotonic()))  # a gateway's steady manifest rate
                if i % 200 == 0:
                    check()
            published += step
            t0 = time.monotonic()
            while int(client.hget(stats_key, "blobs.plc") or 0) < published and time.monotonic() - t0 < 900:
                check()
                time.sleep(0.2)
            # wait for the janitor to archive what is done (listing cost back to ~0 files)
            t0 = time.monotonic()
            while len(os.listdir(landing / "manifests")) > 10 and time.monotonic() - t0 < 120:
                check()
                time.sleep(0.5)
            check()
            samples.append(sample(published))
            print(f"# {samples[-1]}", file=sys.stderr)
        job_stats = supervisor.job.stats() if supervisor.job else {}
    finally:
        supervisor.stop()
    return {"mode": "soak", "rate": args.rate, "rollover_after": args.rollover, "samples": samples,
            "rollover_seconds": rollover_s,
            "job_stats": {k: job_stats.get(k) for k in ("blobs.plc", "already_handled", "seq_gaps", "deadletters",
                                                         "duplicates_skipped", "manifests_archived")}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["thermal", "plc", "mixed", "backlog", "soak"])
    parser.add_argument("--rate", type=int, default=200, help="records/s (thermal: frames, plc: rows)")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--count", type=int, default=3000)
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds excluded from latency stats")
    parser.add_argument("--tick-ms", type=float, default=10, help="gateway: one manifest per tick")
    parser.add_argument("--assets", type=int, default=10, help="assets the gateway emulates (mixed: 50 fps + 1 clip/s each)")
    parser.add_argument("--lines-per-manifest", type=int, default=50, help="backlog: lines per manifest file")
    parser.add_argument("--seconds-max", type=float, default=600, help="backlog: give up after this long")
    parser.add_argument("--rollover", type=int, default=0,
                        help="soak: run under IngestSupervisor, rolling over after this many archived manifests")
    parser.add_argument("--flink", action="append", default=[], type=lambda s: s.split("=", 1),
                        help="FlinkSettings override, e.g. scan_interval_ms=100")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="lw-bench-"))
    landing = work / "landing"
    landing.mkdir()
    registry(landing)
    prefix = f"bench{uuid.uuid4().hex[:6]}"
    names = StreamNames(prefix=prefix, shards=4)
    client = redis_client(RedisConnectionSettings(url="redis://127.0.0.1:6379/0"))
    try:
        if args.mode == "backlog":
            result = run_backlog(args, landing, prefix, work, names, client)
        elif args.mode == "soak":
            result = run_soak(args, landing, prefix, work, client)
        else:
            job = start_job(landing, prefix, work, dict(args.flink))
            try:
                result = run_rate(args, landing, job, names, client)
            finally:
                job.stop()
        result["flink"] = dict(args.flink)
        print(json.dumps(result))
    finally:
        keys = list(client.scan_iter(f"{prefix}:*", count=1000))
        if keys:
            client.delete(*keys)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    threading.current_thread().name = "bench"
    main()
