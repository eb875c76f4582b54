"""End to end on the reference line: file closed -> verdict -> alert in ``lw:alerts``, p50/p99, CPU per stage.

Reference line: 10 assets, 2 thermal frames/s, 1 audio clip/s, PLC at 10 Hz in 1 s rolls (the
simulator's defaults), in real time, into the landing zone; the PyFlink ingestion job (embedded
MiniCluster, the project's default low-latency settings); ``linewatch serve inference`` x3,
``serve fusion`` and ``serve alerts`` as separate processes; a private redis-server. "File closed"
is the simulator's ``on_file`` callback (the blob was renamed into place); a verdict and an alert
name the file of the prediction that triggered them (``Verdict.source``, ``Alert.source_ref``).

    .venv/bin/python bench/bench_e2e.py --seconds 60 --out bench/results/bench_e2e.json

CPU per stage: user+system seconds of each process tree (``/proc``), divided by the wall time.
The first ``--warmup`` seconds are excluded from the latencies (JVM and model warm-up).

Ingestion, stage by stage (``stages_ms``), from real stamps on one clock (``time.time()``):
``closed`` (``on_file`` of the blob) → ``published`` (``on_file`` of the manifest that lists it) →
the job's stamps (``flink.stage_times_file``, ``pipeline/stage_times.py``): ``seen`` (line reached
the ingest function), ``read`` (blob read, checked), ``handled`` (decoded, features), ``written``
(entries in Redis), ``done`` (archived). Stages per blob: ``gateway`` = published − closed;
``queue`` = waiting for the job to finish the blobs before it (max(published, previous element's
done) − published); ``source`` = seen − max(published, previous done) (Flink lists the directory,
reads the split, shuffles: the job was idle); ``read``, ``handle``, ``write``, ``archive``; ``services`` =
verdict decided − written (inference, fusion) for the blobs a verdict names.
``--manifest-max-delay-ms`` sets the simulated gateway's ``manifest_max_delay_ms`` (1000: the
old once-per-tick manifests); ``--sensor-clocks synchronised`` makes every asset's frame, clip and
PLC roll close at the same instants (the worst case; the default, independent, gives every
asset's camera, microphone and historian its own phase, as on a real line).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import redis

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_report import emit

from linewatch.contract import Alert, StreamNames, Verdict, decode_message
from linewatch.redis_connection import RedisConnectionSettings, redis_client
from linewatch.settings import load_settings
from models.runtime.pytriton_process import free_port

TICK = os.sysconf("SC_CLK_TCK")


def tree_cpu_s(pid: int) -> float:
    """CPU seconds of ``pid`` and its live descendants."""
    total = 0.0
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / TICK
            children = Path(f"/proc/{p}/task/{p}/children").read_text().split()
            todo += [int(c) for c in children]
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
    return total


def pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(xs), q)) if xs else float("nan")


def summary(xs: list[float]) -> dict[str, float]:
    return {"n": len(xs), "mean": round(float(np.mean(xs)), 1) if xs else float("nan"),
            "p50": round(pct(xs, 50), 1), "p99": round(pct(xs, 99), 1)}


def stage_breakdown(times_file: Path, closed: dict[str, float], published: dict[str, float],
                    verdict_at: dict[str, float], t_min: float) -> dict[str, object]:
    """Per kind and stage: n, mean, p50, p99 (ms) of the blobs closed after ``t_min`` (module docstring)."""
    per: dict[str, dict[str, list[float]]] = {}
    busy: list[float] = []
    for subtask_file in sorted(times_file.parent.glob(times_file.name + "*")):  # one file per subtask
        _subtask_stages(subtask_file, closed, published, verdict_at, t_min, per, busy)
    return {"job_busy_share_per_subtask": busy,
            **{kind: {name: summary(v) for name, v in stages_.items()} for kind, stages_ in sorted(per.items())}}


def _subtask_stages(times_file: Path, closed: dict[str, float], published: dict[str, float],
                    verdict_at: dict[str, float], t_min: float, per: dict[str, dict[str, list[float]]],
                    busy: list[float]) -> None:
    records = [json.loads(line) for line in times_file.read_text().splitlines() if line.strip()]
    if records:  # share of the wall time this subtask spent handling elements (seen -> done)
        spans = {r["seen_ms"]: r["done_ms"] for r in records if r["seen_ms"] >= t_min * 1000}
        wall = max(spans.values(), default=0.0) - min(spans, default=0.0)
        busy.append(round(sum(d - s for s, d in spans.items()) / wall, 3) if wall > 0 else float("nan"))
    prev_done = 0.0
    element_seen, element_prev_done = None, 0.0
    for r in records:  # file order = this subtask's processing order
        if r["seen_ms"] != element_seen:  # a new element: the subtask finished the previous one at prev_done
            element_seen, element_prev_done = r["seen_ms"], prev_done
        prev_done = r["done_ms"]
        path = r["path"]
        if path not in closed or path not in published or closed[path] < t_min:
            continue
        c, p = closed[path] * 1000, published[path] * 1000
        free = max(p, element_prev_done)
        stages = {"gateway": p - c, "queue": free - p, "source": r["seen_ms"] - free,
                  "read": r["read_ms"] - r["seen_ms"], "handle": r["handled_ms"] - r["read_ms"],
                  "write": r["written_ms"] - r["handled_ms"], "archive": r["done_ms"] - r["written_ms"],
                  "closed_to_written": r["written_ms"] - c}
        if path in verdict_at:
            stages["services"] = verdict_at[path] - r["written_ms"]
        for kind in (r["kind"], "all"):
            for name, ms in stages.items():
                per.setdefault(kind, {}).setdefault(name, []).append(ms)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=90.0)
    ap.add_argument("--warmup", type=float, default=15.0)
    ap.add_argument("--assets", type=int, default=10)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--manifest-max-delay-ms", type=float, default=None,
                    help="the simulated gateway's manifest_max_delay_ms (default: the simulator's setting)")
    ap.add_argument("--sensor-clocks", choices=["independent", "synchronised"], default=None,
                    help="the simulator's sensor_clocks (default: its setting, independent): synchronised = every "
                         "asset's frame, clip and PLC roll close at the same instants (the worst case)")
    ap.add_argument("--flink", action="append", default=[], metavar="KEY=VALUE",
                    help="override a flink setting, e.g. scan_interval_ms=5 (repeatable)")
    args = ap.parse_args()

    from linewatch.simulator import Factory
    from pipeline.runner import IngestJob

    base = Path(tempfile.mkdtemp(prefix="lw-e2e-"))
    port = free_port()
    rs = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly",
                           "no", "--dir", str(base)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    client = redis_client(RedisConnectionSettings(url=url))
    for _ in range(100):
        try:
            client.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.05)
    times_file = base / "stage_times.jsonl"
    settings = load_settings(None, **{"landing_dir": base / "landing", "data_dir": base,
                                      "flink.checkpoint_dir": base / "ckpt", "streams.prefix": "e2e",
                                      "flink.stage_times_file": times_file,
                                      **{f"flink.{kv.split('=', 1)[0]}": kv.split("=", 1)[1] for kv in args.flink}})
    settings.landing.mkdir(parents=True)
    names = StreamNames(settings.streams.prefix, settings.streams.shards)
    env = dict(os.environ, PYTHONPATH=str(REPO), LINEWATCH_REDIS__URL=url, LINEWATCH_STREAMS__PREFIX=names.prefix,
               LINEWATCH_ALERTS__MQTT__ENABLED="false", LINEWATCH_ALERTS__API_PORT="0")
    cli = [sys.executable, "-m", "linewatch.cli.app", "serve"]
    procs: dict[str, subprocess.Popen] = {}
    logs = base / "logs"
    logs.mkdir()
    for name, extra in [("inference.plc", ["inference", "-m", "plc"]), ("inference.thermal", ["inference", "-m", "thermal"]),
                        ("inference.audio", ["inference", "-m", "audio"]), ("fusion", ["fusion"]), ("alerts", ["alerts"])]:
        procs[name] = subprocess.Popen([*cli, *extra], env=env, cwd=REPO, stdout=open(logs / f"{name}.log", "wb"),
                                       stderr=subprocess.STDOUT, start_new_session=True)
    job = IngestJob.from_settings(settings, url, resume=False)
    job.start()
    job.wait_ready()
    closed: dict[str, float] = {}
    published: dict[str, float] = {}
    manifests = [0]
    landing = settings.landing

    def on_file(path: Path, kind: str) -> None:
        now = time.time()
        if kind in ("thermal", "audio", "plc", "alarms"):
            closed[str(Path(path).relative_to(landing))] = now
        elif kind == "manifest":  # read back right away: the job archives manifests it finished
            manifests[0] += 1
            for line in Path(path).read_text().splitlines():
                published[json.loads(line)["path"]] = now

    stop = threading.Event()
    sim_update: dict[str, float | str] = {"realtime_episode_s": 60.0, "fault_fraction": 0.6}
    if args.manifest_max_delay_ms is not None:
        sim_update["manifest_max_delay_ms"] = args.manifest_max_delay_ms
    if args.sensor_clocks is not None:
        sim_update["sensor_clocks"] = args.sensor_clocks
    sim_config = settings.simulator.model_copy(update=sim_update)
    factory = Factory(sim_config, n_assets=args.assets)
    sim = threading.Thread(target=factory.run_realtime, kwargs={"out_dir": landing, "duration_s": args.seconds,
                                                                 "stop": stop, "on_file": on_file}, daemon=True)
    t_start = time.time()
    cpu0 = {n: tree_cpu_s(p.pid) for n, p in procs.items()}
    cpu0["flink"] = tree_cpu_s(job.process.pid) if job.process else 0.0
    cpu0["redis"] = tree_cpu_s(rs.pid)
    self0 = time.process_time()
    sim.start()
    sim.join()
    time.sleep(5)  # let the last files drain through every stage (a measurement pause, not a race guard)
    wall = time.time() - t_start
    cpu = {n: (tree_cpu_s(p.pid) - cpu0[n]) / wall for n, p in procs.items()}
    cpu["flink"] = (tree_cpu_s(job.process.pid) - cpu0["flink"]) / wall if job.process else 0.0
    cpu["redis"] = (tree_cpu_s(rs.pid) - cpu0["redis"]) / wall
    cpu["simulator (bench process)"] = (time.process_time() - self0) / wall
    to_verdict: dict[str, list[float]] = {"thermal": [], "audio": [], "plc": []}
    ingest_to_verdict: list[float] = []
    verdict_at: dict[str, float] = {}
    for s in names.all_verdict_streams():
        for _, f in client.xrange(s):
            v = decode_message(f)
            if isinstance(v, Verdict) and v.source:
                verdict_at.setdefault(v.source, v.decided_at_ms)  # the first verdict a file triggered
            if isinstance(v, Verdict) and v.source in closed and closed[v.source] > t_start + args.warmup:
                kind = v.source.split("/", 1)[0]
                to_verdict.setdefault(kind, []).append(v.decided_at_ms - closed[v.source] * 1000)
                if v.ingest_time_ms:
                    ingest_to_verdict.append(v.decided_at_ms - v.ingest_time_ms)
    to_alert: list[float] = []
    to_alert_raised: list[float] = []
    events: dict[str, int] = {}
    for _, f in client.xrange(names.alerts):
        a = decode_message(f)
        if isinstance(a, Alert):
            events[a.event] = events.get(a.event, 0) + 1
            if a.event in ("raised", "escalated", "cleared") and a.source_ref in closed \
                    and closed[a.source_ref] > t_start + args.warmup:
                to_alert.append(a.created_at_ms - closed[a.source_ref] * 1000)
                if a.event == "raised":
                    to_alert_raised.append(a.created_at_ms - closed[a.source_ref] * 1000)
    all_v = [x for xs in to_verdict.values() for x in xs]
    result = {
        "command": " ".join(sys.argv), "assets": args.assets, "seconds": args.seconds, "warmup_s": args.warmup,
        "manifest_max_delay_ms": sim_config.manifest_max_delay_ms, "sensor_clocks": sim_config.sensor_clocks,
        "flink_overrides": args.flink, "load_avg_1m_at_end": round(os.getloadavg()[0], 2),
        "files_closed": len(closed), "manifests_per_s": round(manifests[0] / args.seconds, 1),
        "stages_ms": stage_breakdown(times_file, closed, published, verdict_at, t_start + args.warmup),
        "file_to_verdict_ms": {"n": len(all_v), "p50": pct(all_v, 50), "p99": pct(all_v, 99)},
        "file_to_verdict_by_kind_ms": {k: {"n": len(v), "p50": pct(v, 50), "p99": pct(v, 99)} for k, v in to_verdict.items()},
        "features_in_redis_to_verdict_ms": {"n": len(ingest_to_verdict), "p50": pct(ingest_to_verdict, 50),
                                            "p99": pct(ingest_to_verdict, 99)},
        "file_to_alert_event_ms": {"n": len(to_alert), "p50": pct(to_alert, 50), "p99": pct(to_alert, 99)},
        "file_to_alert_raised_ms": {"n": len(to_alert_raised), "p50": pct(to_alert_raised, 50),
                                    "p99": pct(to_alert_raised, 99)},
        "alert_events": events,
        "cpu_cores_per_stage": {k: round(v, 3) for k, v in cpu.items()},
        "cpu_cores_total": round(sum(cpu.values()), 3),
    }
    emit(result, args.out)
    stop.set()
    job.stop()
    for p in procs.values():
        p.send_signal(signal.SIGTERM)
    codes = {n: p.wait(60) for n, p in procs.items()}
    print("service exit codes:", codes)
    rs.terminate()
    rs.wait(10)
    shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
