"""Inference service benchmarks (docs/benchmarks.md, "Services"), all numbers from one run:

1. ``batching``: throughput draining a backlog and latency under steady load, with micro-batching
   (max_batch 32) and without (max_batch 1), plus a max_wait_ms hold; thermal model, ONNX Runtime.
2. ``backends``: the bare runtime call at batch 1 and 32: ONNX Runtime in-process vs Triton HTTP vs
   Triton gRPC (gRPC measured in .venv-services: it cannot import beside Flink).
3. ``overhead``: the consumer's overhead over the bare runtime call at batch 1 (lone entries): the
   service's own time per entry (fenced read, decode, input, encode, fenced commit) = handle +
   commit + read time minus the backend call, from the worker's own timers.

    .venv/bin/python bench/bench_services.py all --out bench/results/bench_services.json

Needs the Redis in LINEWATCH_REDIS__URL (default redis://127.0.0.1:6379/0); uses a unique prefix
and deletes its keys afterwards. Run it under the heavy-run lock.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import numpy as np
import redis

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_report import emit

from linewatch.contract import StreamNames, ThermalFeatures, encode_message
from linewatch.redis_connection import redis_client
from linewatch.service_settings import InferenceSettings
from linewatch.settings import load_settings
from pipeline.features import FEATURES_VERSION
from pipeline.features.thermal_regions import THERMAL_VECTOR_NAMES

URL = os.environ.get("LINEWATCH_REDIS__URL", "redis://127.0.0.1:6379/0")


def pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(xs), q)) if xs else float("nan")


def frame_msg(asset: str, t: int, rng: np.random.Generator) -> dict:
    # features v3: the shipped thermal model reads the 69-value ``vector``; the frame travels too (as in production)
    return encode_message(ThermalFeatures(asset_id=asset, asset_type="pump", event_time_ms=t,
                                          features_version=FEATURES_VERSION, stats={},
                                          frame=rng.normal(size=(120, 160)).astype(np.float16),
                                          ingest_time_ms=int(time.time() * 1000),
                                          vector=rng.normal(size=len(THERMAL_VECTOR_NAMES)).astype(np.float32)))


def _names() -> StreamNames:
    return StreamNames(f"bench{uuid.uuid4().hex[:8]}", 4)


def _cleanup(client: redis.Redis, names: StreamNames) -> None:
    keys = list(client.scan_iter(match=f"{names.prefix}:*", count=1000))
    if keys:
        client.delete(*keys)


def _run_worker(client: redis.Redis, names: StreamNames, settings: InferenceSettings):  # type: ignore[no-untyped-def]
    from services.inference.service import inference_worker

    worker = inference_worker(client, names, settings, "thermal")
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    while not worker.owned_shards():
        time.sleep(0.01)
    return worker, thread


def _predictions(client: redis.Redis, names: StreamNames) -> int:
    return sum(int(client.xlen(names.predictions_shard("thermal", s))) for s in range(names.shards))


def backlog(max_batch: int, n: int = 2000) -> dict:
    """Entries/s draining ``n`` waiting frames."""
    client, names, rng = redis_client(load_settings().redis, URL), _names(), np.random.default_rng(0)
    try:
        pipe = client.pipeline(transaction=False)
        for i in range(n):
            asset = f"PMP-{i % 10:02d}"
            pipe.xadd(names.features("thermal", asset), frame_msg(asset, i, rng))
        pipe.execute()
        t0 = time.perf_counter()
        worker, thread = _run_worker(client, names, InferenceSettings(max_batch=max_batch))
        while _predictions(client, names) < n:
            time.sleep(0.005)
        dt = time.perf_counter() - t0
        worker.stop()
        thread.join()
        return {"max_batch": max_batch, "entries": n, "seconds": dt, "entries_per_s": n / dt,
                "median_batch": statistics.median(worker.stats.batch_sizes)}
    finally:
        _cleanup(client, names)


def steady(max_batch: int, rate: float, seconds: float = 10.0, max_wait_ms: int = 0) -> dict:
    """Latency (XADD of the features -> prediction written) at an offered ``rate`` frames/s."""
    client, names, rng = redis_client(load_settings().redis, URL), _names(), np.random.default_rng(1)
    try:
        worker, thread = _run_worker(client, names, InferenceSettings(max_batch=max_batch, max_wait_ms=max_wait_ms))
        sent: dict[str, float] = {}
        lat: list[float] = []
        done = threading.Event()

        def watch() -> None:
            watcher = redis_client(load_settings().redis, URL)
            last = {names.predictions_shard("thermal", s): "0-0" for s in range(names.shards)}
            while not done.is_set() or len(lat) < len(sent):
                got = watcher.xread(last, block=200)
                now = time.perf_counter()
                for stream, entries in got or []:
                    for eid, _ in entries:
                        e = eid.decode()
                        last[stream.decode()] = e
                        if e in sent:
                            lat.append((now - sent[e]) * 1000)
                if done.is_set() and time.perf_counter() - t_end > 10:
                    break

        t_end = float("inf")
        wt = threading.Thread(target=watch, daemon=True)
        wt.start()
        period, nxt, i = 1.0 / rate, time.perf_counter(), 0
        stop_at = nxt + seconds
        while nxt < stop_at:
            asset = f"PMP-{i % 10:02d}"
            fields = frame_msg(asset, i, rng)
            t = time.perf_counter()
            sent[client.xadd(names.features("thermal", asset), fields).decode()] = t
            i += 1
            nxt += period
            time.sleep(max(0.0, nxt - time.perf_counter()))
        t_end = time.perf_counter()
        done.set()
        wt.join(30)
        worker.stop()
        thread.join()
        return {"max_batch": max_batch, "max_wait_ms": max_wait_ms, "rate": rate, "n": len(lat),
                "p50_ms": pct(lat, 50), "p99_ms": pct(lat, 99),
                "median_batch": statistics.median(worker.stats.batch_sizes) if worker.stats.batch_sizes else 0}
    finally:
        _cleanup(client, names)


def backend_latency(kind: str, url: str | None = None, runs: int = 300) -> dict:
    """Median/p99 ms of the bare ``runtime.predict`` at batch 1 and 32."""
    from services.inference.model import load_served_model

    s = InferenceSettings(flavour="int8_cpu") if kind == "onnxruntime" else InferenceSettings(
        backend="triton", triton_protocol=kind.split("_")[1], triton_url=url, flavour="int8_cpu")
    model = load_served_model(s, "thermal")
    rng = np.random.default_rng(2)
    out = {"backend": kind}
    for b in (1, 32):
        x = rng.normal(size=(b, len(THERMAL_VECTOR_NAMES))).astype(np.float32)  # the v4 model's input
        for _ in range(10):
            model.runtime.predict(x)
        ts = []
        for _ in range(runs if b == 1 else runs // 4):
            t0 = time.perf_counter()
            model.runtime.predict(x)
            ts.append((time.perf_counter() - t0) * 1000)
        out[f"b{b}_median_ms"] = statistics.median(ts)
        out[f"b{b}_p99_ms"] = pct(ts, 99)
        out[f"b{b}_per_sample_ms"] = statistics.median(ts) / b
    model.runtime.close()
    return out


def overhead(n: int = 400) -> dict:
    """Service time per lone entry minus the bare backend call, from the worker's own timers."""
    client, names, rng = redis_client(load_settings().redis, URL), _names(), np.random.default_rng(3)
    try:
        worker, thread = _run_worker(client, names, InferenceSettings(max_batch=32))
        model = worker.handler.model  # type: ignore[attr-defined]
        predict = model.runtime.predict
        backend: list[float] = []
        cycle: list[float] = []

        def timed(x):  # type: ignore[no-untyped-def]
            t0 = time.perf_counter()
            out = predict(x)
            backend.append((time.perf_counter() - t0) * 1000)
            return out

        model.runtime.predict = timed
        process = worker._process  # the read is timed from before the fenced read to after the commit

        def timed_process(entries):  # type: ignore[no-untyped-def]
            t0 = time.perf_counter()
            process(entries)
            cycle.append((time.perf_counter() - t0) * 1000)

        worker._process = timed_process  # type: ignore[method-assign]
        read = worker.fenced.read_new
        reads: list[float] = []

        def timed_read(*a, **k):  # type: ignore[no-untyped-def]
            t0 = time.perf_counter()
            r = read(*a, **k)
            if r[0]:
                reads.append((time.perf_counter() - t0) * 1000)
            return r

        worker.fenced.read_new = timed_read  # type: ignore[method-assign]
        msgs = [frame_msg("PMP-01", i, rng) for i in range(n)]
        for i in range(n):  # lone entries: the next is written after the previous prediction is in
            before = _predictions(client, names)
            client.xadd(names.features("thermal", "PMP-01"), msgs[i])
            while _predictions(client, names) == before:
                time.sleep(0.0005)
        worker.stop()
        thread.join()
        per_entry = [c + r - b for c, r, b in zip(cycle, reads, backend)]
        return {"n": n, "backend_median_ms": statistics.median(backend), "cycle_median_ms": statistics.median(cycle),
                "read_median_ms": statistics.median(reads), "overhead_median_ms": statistics.median(per_entry),
                "overhead_p99_ms": pct(per_entry, 99), "batch_sizes": sorted(set(worker.stats.batch_sizes))}
    finally:
        _cleanup(client, names)


def run_backends(results: dict) -> None:
    results["backends"] = [backend_latency("onnxruntime")]
    from models.registry.store import DEFAULT_ROOT, ModelRegistry
    from models.runtime.pytriton_process import PyTritonProcess

    workdir = Path(tempfile.mkdtemp(prefix="pt", dir="/tmp"))
    srv = PyTritonProcess(ModelRegistry(DEFAULT_ROOT).version_dir("thermal"), workdir, flavour="int8_cpu",
                          extra_args=["--max-batch", "32"]).start()
    try:
        results["backends"].append(backend_latency("triton_http", srv.http_url))
        py = REPO / ".venv-services" / "bin" / "python"
        out = subprocess.run([str(py), __file__, "grpc", "--url", srv.grpc_url], capture_output=True, text=True,
                             env=dict(os.environ, PYTHONPATH=str(REPO)), cwd=REPO, timeout=300)
        if out.returncode == 0:
            results["backends"].append(json.loads(out.stdout.strip().splitlines()[-1]))
        else:
            results["backends"].append({"backend": "triton_grpc", "error": out.stderr[-500:]})
    finally:
        srv.stop()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["all", "batching", "backends", "overhead", "grpc"])
    ap.add_argument("--url", default=None)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--rate", type=float, default=150.0)
    args = ap.parse_args()
    if args.what == "grpc":
        print(json.dumps(backend_latency("triton_grpc", args.url)))
        return
    results: dict = {"machine": f"{os.cpu_count()} cores", "time": time.strftime("%Y-%m-%d %H:%M")}
    if args.what in ("all", "batching"):
        results["backlog"] = [backlog(1), backlog(32)]
        results["backlog_speedup"] = results["backlog"][1]["entries_per_s"] / results["backlog"][0]["entries_per_s"]
        results["steady"] = [steady(1, args.rate), steady(32, args.rate), steady(32, args.rate, max_wait_ms=5),
                             steady(1, 20.0), steady(32, 20.0)]
    if args.what in ("all", "backends"):
        run_backends(results)
    if args.what in ("all", "overhead"):
        results["overhead"] = overhead()
    emit(results, args.out)


if __name__ == "__main__":
    main()
