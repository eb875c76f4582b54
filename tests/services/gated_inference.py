"""An inference worker process whose backend call waits for a gate (test helper for the takeover test).

Usage: python -m tests.services.gated_inference <redis_url> <prefix> <shards> <gate_key> <name>

Prints ``IN_BATCH <n>`` when a batch reaches the backend, then blocks until the Redis list
``gate_key`` has an element (BLPOP), so the test can freeze the process (SIGSTOP) mid-batch,
let another worker take over, and wake it up. Prints ``FENCED <n>`` and ``HANDLED <n>`` at exit.
"""

from __future__ import annotations

import sys

import redis

from linewatch.contract import StreamNames
from linewatch.service_settings import InferenceSettings
from linewatch.streaming import stop_on_signals
from services.inference.service import inference_worker


def main() -> None:
    url, prefix, shards, gate, name = sys.argv[1:6]
    client = redis.Redis.from_url(url)
    names = StreamNames(prefix, int(shards))
    worker = inference_worker(client, names, InferenceSettings(lease_ttl_ms=1000, max_batch=8), "plc", consumer=name)
    runtime = worker.handler.model.runtime  # type: ignore[attr-defined]
    predict = runtime.predict

    def gated(batch):  # type: ignore[no-untyped-def]
        print(f"IN_BATCH {len(batch)}", flush=True)
        if gate != "-":
            client.blpop([gate], timeout=0)
        return predict(batch)

    runtime.predict = gated
    stop_on_signals(worker.stop)
    worker.run()
    print(f"FENCED {worker.stats.fenced}", flush=True)
    print(f"HANDLED {worker.stats.handled}", flush=True)


if __name__ == "__main__":
    main()
