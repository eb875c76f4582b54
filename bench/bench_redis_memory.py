"""Redis memory of the reference line (issue 8): bytes per entry per stream family, and the server's
memory at steady state under ``streams.retention`` (docs/redis.md, docs/benchmarks.md).

1. ``sizes``: real entries. The simulator writes a few minutes of a line (thermal TIFFs, WAV clips,
   PLC CSVs); the project's feature code turns them into ``ThermalFeatures`` / ``AudioFeatures`` /
   ``PlcFeatures`` exactly as the ingestion handlers do (pipeline.features.messages); the real
   inference workers (ONNX Runtime, shipped models) and the real fusion worker turn those into
   predictions and verdicts. Bytes per entry = ``MEMORY USAGE key SAMPLES 0`` / ``XLEN`` on a
   private server (what Redis really spends, listpack + radix tree), next to the encoded field bytes.
2. ``steady``: the reference line (10 assets, 2 thermal frames/s, 1 audio clip/s, PLC at 10 Hz →
   one 10 s window per second per asset) for ``--line-minutes`` of *line time*, time compressed:
   each line second, the sampled real entries of step 1 are written at the line's rates (40
   features, 40 predictions, 40 verdicts per second) with entry ids = synthetic line time; consumer
   groups (inference on features, fusion on predictions, alerting on verdicts) read and acknowledge
   each line second what was written; the RetentionKeeper (default ``streams.retention``) runs a
   pass every ``interval_s`` line seconds with its clock on line time; ``INFO memory`` is sampled
   every 10 line seconds. Compressed: wall time only (as fast as the server takes it); rates,
   entry sizes, ids, ages and trimming follow line time. The server is a private
   valkey/redis-server started with the default ``maxmemory`` (noeviction), so nothing else shares it.

    PYTHONPATH=. .venv/bin/python bench/bench_redis_memory.py \\
        --line-minutes 30 --out bench/results/bench_redis_memory.json --plot bench/results/redis_memory.png
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

import redis

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_report import emit

from linewatch.contract import ConsumerGroup, Modality, StreamNames, decode_message, encode_message
from linewatch.embedded_redis import EmbeddedRedis
from linewatch.settings import Settings
from linewatch.simulator import Factory, SimulatorConfig
from linewatch.streaming.retention import RetentionKeeper

T0 = 1_767_225_600_000  # line time zero (2026-01-01T00:00:00Z), ms
ASSETS = 10
RATES = {"thermal": 2, "audio": 1, "plc": 1}  # entries per second per asset (PLC: 10 Hz rows -> 1 window/s)
Fields = dict  # stream entry fields (str keys as encoded, bytes keys as read back)


# -- 1. real entries ---------------------------------------------------------------------------------
def feature_messages(landing: Path) -> dict[str, list[Fields]]:
    """Features entries of every modality from the simulator's files, as the ingestion handlers build them."""
    from pipeline.decoders import decode_plc_file, decode_thermal_tiff, decode_wav
    from pipeline.features.messages import audio_features_message, plc_features_message, thermal_features_message
    from pipeline.features.plc_window import PlcWindowBuffer
    from pipeline.features.thermal_features import ThermalBaseline
    from pipeline.landing import LandingZone, ManifestEntry, read_manifest
    from pipeline.validation import AssetRegistry

    registry = AssetRegistry.from_file(landing / "assets.json")
    zone = LandingZone(landing)
    out: dict[str, list[Fields]] = defaultdict(list)
    baselines: dict[str, ThermalBaseline] = {}
    buffers: dict[str, PlcWindowBuffer] = {}
    for manifest in sorted((landing / "manifests").glob("*.jsonl")):
        for line in read_manifest(manifest) or []:
            blob = line.parsed
            if not isinstance(blob, ManifestEntry):
                continue
            info = registry[blob.asset_id]
            data = zone.read(blob)
            if blob.kind == "thermal":
                frame = decode_thermal_tiff(data, blob.path)
                base = baselines.setdefault(blob.asset_id, ThermalBaseline())
                msg = thermal_features_message(blob.asset_id, info.asset_type, blob.event_time_ms, frame,
                                               base.baseline_ck, dict(info.regions) or None, source=blob.path,
                                               ingest_time_ms=blob.event_time_ms + 40, asset=info)
                base.update(frame)
                out["thermal"].append(encode_message(msg))  # type: ignore[arg-type]
            elif blob.kind == "audio":
                msg = audio_features_message(blob.asset_id, info.asset_type, blob.event_time_ms, decode_wav(data, blob.path),
                                             asset=info, source=blob.path, ingest_time_ms=blob.event_time_ms + 40)
                out["audio"].append(encode_message(msg))  # type: ignore[arg-type]
            elif blob.kind == "plc":
                buf = buffers.setdefault(blob.asset_id, PlcWindowBuffer(blob.asset_id))
                result = decode_plc_file(data, blob.path, "jsonl" if blob.path.endswith(".jsonl") else "csv")
                newest = None
                for sample in result.samples:
                    if sample.asset_id == blob.asset_id and buf.add_sample(sample):
                        newest = max(newest or 0, sample.timestamp_ms)
                if newest is not None:
                    for window in buf.advance(newest - 1):
                        msg = plc_features_message(window, info.asset_type, source=blob.path,
                                                   ingest_time_ms=window.end_ms + 40, asset=info)
                        out["plc"].append(encode_message(msg))  # type: ignore[arg-type]
    return dict(out)


def run_services(client: redis.Redis, names: StreamNames, features: dict[str, list[Fields]]) -> None:
    """Write the features entries and let the real inference x3 and fusion workers process them."""
    from services.fusion.service import fusion_worker
    from services.inference.service import inference_worker

    settings = Settings()
    workers = [inference_worker(client, names, settings.inference, m.value) for m in Modality]
    workers.append(fusion_worker(client, names, settings.fusion))
    threads = [threading.Thread(target=w.run, daemon=True) for w in workers]
    for t in threads:
        t.start()
    total = 0
    for modality, entries in features.items():
        for fields in entries:
            asset = json.loads(fields["body"])["asset_id"]  # type: ignore[index]
            client.xadd(names.features(modality, asset), fields)  # type: ignore[arg-type]
            total += 1
    t0 = time.monotonic()
    last, progress_at = (-1, -1), time.monotonic()
    while time.monotonic() - progress_at < 30:  # until done, or no progress for 30 s
        preds = sum(int(client.xlen(s)) for s in names.all_prediction_streams())
        verdicts = sum(int(client.xlen(s)) for s in names.all_verdict_streams())
        if preds >= total and verdicts >= total:
            break
        if (preds, verdicts) != last:
            last, progress_at = (preds, verdicts), time.monotonic()
        time.sleep(0.2)
    print(f"services: {total} features -> {preds} predictions, {verdicts} verdicts in "
          f"{time.monotonic() - t0:.1f} s", file=sys.stderr)
    for w in workers:
        w.stop()
    for t in threads:
        t.join(timeout=30)


def family_of(names: StreamNames, stream: str) -> str | None:
    from linewatch.streaming.retention import family_streams

    for family, streams in family_streams(names).items():
        if stream in streams:
            return family
    return None


def measure_sizes(client: redis.Redis, names: StreamNames) -> dict[str, dict[str, float]]:
    """Per family: entries, bytes per entry as Redis counts them, encoded field bytes per entry."""
    from linewatch.streaming.retention import family_streams

    sizes: dict[str, dict[str, float]] = {}
    for family, streams in family_streams(names).items():
        n = mem = raw = 0
        for s in streams:
            length = int(client.xlen(s))
            if not length:
                continue
            n += length
            mem += int(client.memory_usage(s, samples=0) or 0)
            raw += sum(len(k) + len(v) for _, f in client.xrange(s) for k, v in f.items())
        if n:
            sizes[family] = {"entries": n, "redis_bytes_per_entry": round(mem / n, 1),
                             "field_bytes_per_entry": round(raw / n, 1)}
    return sizes


def samples_by_stream_family(client: redis.Redis, names: StreamNames) -> dict[str, list[Fields]]:
    out: dict[str, list[Fields]] = {}
    for m in Modality:
        out[f"predictions.{m.value}"] = [f for s in range(names.shards)
                                         for _, f in client.xrange(names.predictions_shard(m, s))]
    out["verdicts"] = [f for s in names.all_verdict_streams() for _, f in client.xrange(s)]
    return out


# -- 2. steady state ---------------------------------------------------------------------------------
class Line:
    """The reference line written in compressed time, with groups that read and acknowledge."""

    def __init__(self, client: redis.Redis, names: StreamNames, pool: dict[str, list[Fields]]) -> None:
        self.client = client
        self.names = names
        self.pool = pool
        self.assets = [f"AST-{i:02d}" for i in range(ASSETS)]
        self.i = 0
        self.groups = {ConsumerGroup.INFERENCE.value: names.all_feature_streams(),
                       ConsumerGroup.FUSION.value: names.all_prediction_streams(),
                       ConsumerGroup.ALERTING.value: names.all_verdict_streams()}
        for group, streams in self.groups.items():
            for s in streams:
                client.xgroup_create(s, group, id="0", mkstream=True)

    def _pick(self, key: str) -> Fields:
        self.i += 1
        entries = self.pool[key]
        return entries[self.i % len(entries)]

    def second(self, t_s: int) -> int:
        """Write line second ``t_s``: features, one prediction per features entry (same id, as the
        inference service does) and one verdict per prediction, in event-time order. Returns entries written."""
        events = sorted((T0 + t_s * 1000 + k * (1000 // per_s), modality, asset)
                        for modality, per_s in RATES.items() for k in range(per_s) for asset in self.assets)
        pipe = self.client.pipeline(transaction=False)
        for ms, modality, asset in events:
            pipe.xadd(self.names.features_shard(modality, self.names.shard_of(asset)), self._pick(modality),
                      id=f"{ms}-*")
        ids = pipe.execute()
        pipe = self.client.pipeline(transaction=False)
        for (ms, modality, asset), entry_id in zip(events, ids, strict=True):
            shard = self.names.shard_of(asset)
            pipe.xadd(self.names.predictions_shard(modality, shard), self._pick(f"predictions.{modality}"), id=entry_id)
            pipe.xadd(self.names.verdicts_shard(shard), self._pick("verdicts"), id=f"{ms}-*")
        pipe.execute()
        return 3 * len(events)

    def consume(self, stalled: str | None = None) -> None:
        """Every group (but ``stalled``) reads what is new and acknowledges it."""
        for group, streams in self.groups.items():
            if group == stalled:
                continue
            got = self.client.xreadgroup(group, "bench", {s: ">" for s in streams}, count=100_000)
            pipe = self.client.pipeline(transaction=False)
            for stream, entries in got or []:
                if entries:
                    pipe.xack(stream, group, *[eid for eid, _ in entries])
            pipe.execute()


def steady_state(client: redis.Redis, names: StreamNames, pool: dict[str, list[Fields]], settings: Settings,
                 line_s: int, stall: tuple[int, int] | None = None) -> dict[str, object]:
    """The line for ``line_s`` line seconds; ``stall=(a, b)``: the inference group reads nothing from
    line second a to b (a consumer down), to show retention held back and the backpressure alert."""
    from rich.progress import Progress

    line = Line(client, names, pool)
    now = {"ms": T0}
    keeper = RetentionKeeper(client, names, settings.streams.retention, clock=lambda: now["ms"] / 1000.0)
    interval = max(1, int(settings.streams.retention.interval_s))
    series: list[dict[str, float]] = []
    written = trimmed = 0
    blocked = oom_seconds = 0
    wall0 = time.perf_counter()
    with Progress(transient=True) as bar:
        task = bar.add_task("line seconds", total=line_s)
        for t in range(line_s):
            now["ms"] = T0 + (t + 1) * 1000
            try:
                written += line.second(t)
            except redis.OutOfMemoryError:  # maxmemory reached (noeviction): the writer is refused, loudly
                oom_seconds += 1
            line.consume(ConsumerGroup.INFERENCE.value if stall and stall[0] <= t < stall[1] else None)
            if (t + 1) % interval == 0:
                reports = keeper.run_once()
                trimmed += sum(r.trimmed for r in reports)
                blocked += sum(1 for r in reports if r.blocked)
            if (t + 1) % 10 == 0:
                mem = client.info("memory")
                series.append({"line_s": t + 1, "used_memory": float(mem["used_memory"]),
                               "used_memory_rss": float(mem["used_memory_rss"]),
                               "backpressured_streams": len(keeper.backpressured)})
            bar.advance(task)
    wall = time.perf_counter() - wall0
    per_family: dict[str, float] = defaultdict(float)
    entries: dict[str, int] = defaultdict(int)
    for r in keeper.run_once():
        per_family[r.family] += r.bytes
        entries[r.family] += r.length
    requests = [decode_message(f) for _, f in client.xrange(names.alert_requests())]
    tail = [p for p in series if p["line_s"] >= line_s / 2]
    used = [p["used_memory"] for p in tail]
    rss = [p["used_memory_rss"] for p in tail]
    return {
        "line_seconds": line_s, "wall_seconds": round(wall, 1), "entries_written": written,
        "entries_trimmed": trimmed, "passes_held_back_by_unread_entries": blocked,
        "line_seconds_with_writes_refused_oom": oom_seconds,
        "second_half": {
            "used_memory_median": statistics.median(used), "used_memory_min": min(used), "used_memory_max": max(used),
            "used_memory_rss_median": statistics.median(rss), "used_memory_rss_min": min(rss),
            "used_memory_rss_max": max(rss),
            "used_memory_spread_pct": round(100 * (max(used) - min(used)) / statistics.median(used), 2),
        },
        "end_bytes_per_family": dict(per_family), "end_entries_per_family": dict(entries),
        "stall_line_s": list(stall) if stall else None,
        "backpressure_requests": [{"state": r.state, "stream": r.details.get("stream"),  # type: ignore[union-attr]
                                   "line_s": (r.event_time_ms - T0) / 1000} for r in requests],  # type: ignore[union-attr]
        "max_used_memory": max(p["used_memory"] for p in series),
        "series": series,
    }


def plot(result: dict[str, object], budget: dict[str, int], maxmemory: int, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = result["series"]  # type: ignore[index]
    xs = [p["line_s"] / 60 for p in series]  # type: ignore[union-attr,index]
    fig, ax = plt.subplots(figsize=(9, 4.5))
    ax.plot(xs, [p["used_memory"] / 2**20 for p in series], label="used_memory")  # type: ignore[union-attr,index]
    ax.plot(xs, [p["used_memory_rss"] / 2**20 for p in series], label="used_memory_rss")  # type: ignore[union-attr,index]
    ax.axhline(sum(budget.values()) / 2**20, color="grey", ls="--", label="sum of retention byte budgets")
    ax.axhline(maxmemory / 2**20, color="red", ls=":", label="maxmemory (noeviction)")
    stall = result.get("stall_line_s")
    if stall:
        ax.axvspan(stall[0] / 60, stall[1] / 60, color="orange", alpha=0.15,  # type: ignore[index]
                   label="inference group stalled (reads nothing)")
        held = [p["line_s"] / 60 for p in series if p["backpressured_streams"]]  # type: ignore[index]
        if held:
            ax.axvspan(min(held), max(held), ymax=0.04, color="red", alpha=0.6, label="backpressure alert raised")
    ax.set_xlabel("line time (min): 10 assets, 2 thermal fps, 1 audio clip/s, PLC 10 Hz")
    ax.set_ylabel("MiB")
    ax.set_title("Redis memory of the reference line under streams.retention (default settings)")
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--line-minutes", type=float, default=30.0)
    parser.add_argument("--sample-minutes", type=float, default=1.0, help="simulated line for the real entries")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--plot", type=Path, default=None)
    parser.add_argument("--stall", default=None, help="A:B — the inference group reads nothing from line minute A "
                        "to B (retention held back, backpressure alert), e.g. 20:30")
    args = parser.parse_args()

    settings = Settings()
    retention = settings.streams.retention
    maxmemory = retention.maxmemory_bytes()
    names = StreamNames("bench", settings.streams.shards)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        Factory(SimulatorConfig(), n_assets=3).run_batch(Path(tmp) / "landing", args.sample_minutes, progress=False)
        features = feature_messages(Path(tmp) / "landing")
        print(f"real features: { {k: len(v) for k, v in features.items()} } in {time.perf_counter() - t0:.1f} s",
              file=sys.stderr)
        with EmbeddedRedis(Path(tmp) / "sizes", persist=False) as server:
            client = server.client()
            run_services(client, names, features)
            sizes = measure_sizes(client, names)
            pool = {**features, **samples_by_stream_family(client, names)}
            client.close()
        with EmbeddedRedis(Path(tmp) / "steady", persist=False, maxmemory=maxmemory) as server:
            client = server.client()
            stall = tuple(int(float(x) * 60) for x in args.stall.split(":")) if args.stall else None
            steady = steady_state(client, names, pool, settings, int(args.line_minutes * 60), stall)  # type: ignore[arg-type]
            info = client.info("server")
            client.close()
    budget = {f: r.max_bytes for f, r in retention.families().items() if r.max_bytes}
    rates = {"features.thermal": ASSETS * 2, "features.audio": ASSETS, "features.plc": ASSETS,
             "predictions": ASSETS * 4, "verdicts": ASSETS * 4}
    expected = {f: round(rates[f] * sizes[f]["redis_bytes_per_entry"] * min(
        retention.family(f).max_age_s or 1e12, args.line_minutes * 60)) for f in rates if f in sizes}
    result = {
        "bench": "redis_memory", "python": platform.python_version(),
        "server": f"{info.get('server_name', 'redis')} {info.get('redis_version')}",
        "line": {"assets": ASSETS, "thermal_fps": 2, "audio_clips_per_s": 1, "plc_hz": 10,
                 "entries_per_s": rates, "line_minutes": args.line_minutes},
        "bytes_per_entry": sizes,
        "retention": {f: r.model_dump() for f, r in retention.families().items()},
        "maxmemory": maxmemory, "sum_of_byte_budgets": sum(budget.values()),
        "expected_steady_bytes_by_age_limit": expected,
        "steady": {k: v for k, v in steady.items() if k != "series"},
    }
    if args.plot:
        plot(steady, budget, maxmemory, args.plot)
    if args.out:
        series_path = args.out.with_suffix(".series.json")
        series_path.write_text(json.dumps(steady["series"]) + "\n")
    emit(result, args.out)


if __name__ == "__main__":
    main()
