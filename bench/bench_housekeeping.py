"""Checkpoint barriers vs. the landing zone's file-system housekeeping (issue 8, defect 5).

A real embedded ingestion job takes a checkpoint every ``--checkpoint-ms`` while a gateway
publishes one-frame manifests for ``--assets`` assets at ``--rate`` lines/s. Every ``--every-s``
seconds an expired archive hour holding ``--files`` archived blobs appears (renamed into
``archive/`` in one step, built beforehand), so the job's next prune deletes ``--files`` files.
Before issue 8 that prune (``shutil.rmtree``), the janitor's listing and the manifest index's
re-reads ran inside the Flink operator, so a checkpoint barrier waited behind them; now they
run on a housekeeping thread.

Measured per checkpoint: trigger → completion (``chk-N`` appears → its ``_metadata`` appears,
polled every 2 ms), which includes the time the barrier waits at the ingest operator. Reported:
median and max over all checkpoints, and over the checkpoints triggered within 3 s after a
prune was due. Run with the same arguments on the old and the new code (the script uses only
``Settings``, ``IngestJob.from_settings`` and ``ManifestWriter``, which both have)::

    .venv/bin/python bench/bench_housekeeping.py --out /tmp/hk.json
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import numpy as np
import tifffile

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from linewatch.flink_settings import FlinkSettings
from linewatch.redis_connection import redis_client
from linewatch.settings import Settings
from pipeline.landing import ManifestWriter
from pipeline.runner import IngestJob

REDIS_URL = "redis://127.0.0.1:6379/0"


def frame_bytes(value: int) -> bytes:
    buf = io.BytesIO()
    frame = np.full((120, 160), 29315 + value % 500, np.uint16)
    frame[50:80, 60:110] += 1_500  # a machine 15 K over its hall: a frame of one value is refused (no_signal)
    tifffile.imwrite(buf, frame)
    return buf.getvalue()


def build_bucket(root: Path, files: int) -> Path:
    """An archive hour bucket of ``files`` small archived blobs (what an hour of frames leaves)."""
    bucket = root / uuid.uuid4().hex
    for i in range(files):
        d = bucket / "thermal" / "frames" / f"A{i % 10}"
        if i < 10:
            d.mkdir(parents=True, exist_ok=True)
        (d / f"{i}.tiff").write_bytes(b"x" * 64)
    return bucket


class CheckpointWatch(threading.Thread):
    """Polls ``<dir>/<job>/chk-N`` and records when each appears and when its ``_metadata`` does."""

    def __init__(self, checkpoint_dir: Path) -> None:
        super().__init__(daemon=True)
        self.dir = checkpoint_dir
        self.started: dict[str, float] = {}
        self.completed: dict[str, float] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.002):
            now = time.monotonic()
            for chk in self.dir.glob("*/chk-*"):
                key = f"{chk.parent.name}/{chk.name}"
                self.started.setdefault(key, now)
                if key not in self.completed and (chk / "_metadata").exists():
                    self.completed[key] = now

    def durations(self) -> list[tuple[float, float]]:
        """(trigger time, trigger → completion seconds) of every completed checkpoint."""
        return sorted((self.started[k], self.completed[k] - self.started[k]) for k in self.completed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000, help="archived blobs in each expired hour")
    parser.add_argument("--rounds", type=int, default=3, help="expired hours dropped in")
    parser.add_argument("--every-s", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=20.0, help="manifest lines per second (one per manifest)")
    parser.add_argument("--assets", type=int, default=2)
    parser.add_argument("--checkpoint-ms", type=int, default=500)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="lw-bench-hk-") as tmp:
        work = Path(tmp)
        landing = work / "landing"
        landing.mkdir()
        assets = [f"HK-{i:02d}" for i in range(args.assets)]
        (landing / "assets.json").write_text(json.dumps(
            {"assets": [{"asset_id": a, "asset_type": "pump", "regions": {}, "region_fit": False, "tags": []} for a in assets]}))
        print(f"# building {args.rounds} archive hours of {args.files} files", file=sys.stderr)
        spare = work / "spare"
        buckets = [build_bucket(spare, args.files) for _ in range(args.rounds)]
        prefix = f"hk{uuid.uuid4().hex[:8]}"
        settings = Settings(data_dir=work / "data", landing_dir=landing, streams={"prefix": prefix, "shards": 2},
                            flink=FlinkSettings(checkpoint_interval_ms=args.checkpoint_ms, archive_retention_s=3600))
        job = IngestJob.from_settings(settings, REDIS_URL, resume=False)
        job.start()
        job.wait_ready(120)
        watch = CheckpointWatch(settings.flink.resolved_checkpoint_dir(settings.data_dir))
        watch.start()
        writer = ManifestWriter(landing, epoch=1)
        t_start = time.monotonic()
        drops: list[float] = []
        n = 0
        duration = args.every_s * (args.rounds + 1)
        next_drop = t_start + args.every_s
        frames = [frame_bytes(i) for i in range(50)]
        t0_ms = 1_795_960_800_000
        while time.monotonic() - t_start < duration:
            asset = assets[n % len(assets)]
            entry = writer.write_blob(f"thermal/frames/{asset}/{n}.tiff", frames[n % 50], asset, t0_ms + n * 10)
            writer.publish([entry])
            n += 1
            if buckets and time.monotonic() >= next_drop:
                bucket = buckets.pop()
                target = landing / "archive" / f"200001010{len(buckets)}"  # an hour long expired
                target.parent.mkdir(exist_ok=True)
                os.rename(bucket, target)
                drops.append(time.monotonic())
                next_drop += args.every_s
            time.sleep(max(0.0, t_start + n / args.rate - time.monotonic()))
        time.sleep(2 * args.checkpoint_ms / 1000)
        watch.stop.set()
        watch.join()
        stats = job.stats()
        job.stop()
        client = redis_client(settings.redis, REDIS_URL)
        keys = list(client.scan_iter(f"{prefix}:*"))
        if keys:
            client.delete(*keys)
        pruned = not any((landing / "archive").glob("20000101*"))

    durations = watch.durations()
    all_ms = [d * 1000 for _, d in durations]
    near = [d * 1000 for t, d in durations if any(0 <= t - drop <= 3.0 or 0 <= drop - t <= d for drop in drops)]
    result = {
        "command": " ".join(sys.argv), "files_per_hour": args.files, "drops": len(drops), "pruned": pruned,
        "lines": n, "checkpoints": len(all_ms),
        "checkpoint_ms_median": round(statistics.median(all_ms), 1) if all_ms else None,
        "checkpoint_ms_max": round(max(all_ms), 1) if all_ms else None,
        "near_prune_ms_median": round(statistics.median(near), 1) if near else None,
        "near_prune_ms_max": round(max(near), 1) if near else None,
        "latency_p50_ms": stats.get("latency_p50_ms.0"), "latency_p99_ms": stats.get("latency_p99_ms.0"),
    }
    print(json.dumps(result, indent=2))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
