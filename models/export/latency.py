"""Quick ONNX Runtime latency for the model card (the rigorous numbers come from bench/)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from models.export.onnx_export import ort_session
from models.registry.card import Latency
from models.specs import INPUT_NAME, OUTPUT_NAME


def measure_latencies(
    files: dict[str, Path], sample: np.ndarray, batches: tuple[int, ...], runs: int, warmup: int = 5
) -> list[Latency]:
    """Median and p99 ms per (file, batch), one intra-op thread, files interleaved run by run."""
    sessions = {role: ort_session(path, threads=1) for role, path in files.items()}
    out: list[Latency] = []
    for batch in batches:
        x = np.ascontiguousarray(np.resize(sample, (batch, *sample.shape[1:])), np.float32)
        times: dict[str, list[float]] = {role: [] for role in sessions}
        for i in range(warmup + runs):
            for role, session in sessions.items():
                t0 = time.perf_counter()
                session.run([OUTPUT_NAME], {INPUT_NAME: x})
                if i >= warmup:
                    times[role].append((time.perf_counter() - t0) * 1e3)
        for role, t in times.items():
            out.append(Latency(role=role, batch=batch, median_ms=float(np.median(t)), p99_ms=float(np.percentile(t, 99)), runs=runs))
    return out
