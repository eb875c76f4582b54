"""Audio features per clip with the BLAS thread pool at 1 thread vs the library default, with the
other cores idle and with them busy (as the JVM's threads keep them busy beside the job).

Backs ``FlinkSettings.python_threads`` (default 1). Real simulator clips; ``threadpoolctl``
switches the pool size inside one process; cases interleaved per round; median per clip.

    .venv/bin/python bench/bench_blas_threads.py --rounds 15
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from threadpoolctl import threadpool_info, threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from linewatch.simulator import Factory, SimulatorConfig  # noqa: E402
from pipeline.decoders import decode_wav  # noqa: E402
from pipeline.features.audio_features import audio_features  # noqa: E402


def burn(stop: multiprocessing.synchronize.Event) -> None:  # type: ignore[name-defined]
    while not stop.is_set():
        sum(i * i for i in range(10_000))


def clips(n: int) -> list:
    with tempfile.TemporaryDirectory() as d:
        Factory(SimulatorConfig(seed=3, write_manifests=False), n_assets=2).run_batch(Path(d), 0.2, progress=False)
        paths = sorted(Path(d, "audio", "clips").rglob("*.wav"))[:n]
        return [decode_wav(p.read_bytes(), p.name) for p in paths]


def per_clip_ms(samples: list, threads: int | None) -> float:
    with threadpool_limits(limits=threads, user_api="blas"):
        t = time.perf_counter()
        for s in samples:
            audio_features(s, 16_000)
        return (time.perf_counter() - t) / len(samples) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--clips", type=int, default=20)
    args = parser.parse_args()
    samples = clips(args.clips)
    default_threads = max((i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"), default=1)
    result: dict[str, object] = {"cpus": os.cpu_count(), "blas_default_threads": default_threads,
                                 "clips": len(samples), "rounds": args.rounds}
    for busy in (0, (os.cpu_count() or 2) - 1):
        stop = multiprocessing.Event()
        burners = [multiprocessing.Process(target=burn, args=(stop,)) for _ in range(busy)]
        for b in burners:
            b.start()
        try:
            times: dict[str, list[float]] = {"1 thread": [], "default": []}
            per_clip_ms(samples, 1)  # warm-up
            for _ in range(args.rounds):
                times["1 thread"].append(per_clip_ms(samples, 1))
                times["default"].append(per_clip_ms(samples, None))
        finally:
            stop.set()
            for b in burners:
                b.join()
        med = {k: round(statistics.median(v), 2) for k, v in times.items()}
        result[f"busy_cores_{busy}"] = {"median_ms_per_clip": med,
                                        "default_over_1_thread": round(med["default"] / med["1 thread"], 2)}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
