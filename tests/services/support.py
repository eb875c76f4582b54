"""Helpers shared by the services tests: feature/prediction/verdict factories, waiting, subprocesses."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import redis

from linewatch.contract import (
    AudioFeatures,
    PlcFeatures,
    Prediction,
    StreamNames,
    ThermalFeatures,
    Verdict,
    encode_message,
)
from linewatch.streaming import StreamWorker

REPO = Path(__file__).resolve().parents[2]
CLASSES = ["normal", "bearing_wear", "electrical_overheating", "cooling_failure", "imbalance", "cavitation"]
#: Length of the model-input ``vector`` the shipped models read (features v3: pipeline.features).
SHAPES = {"plc": (45,), "thermal": (69,), "audio": (86,)}


def features(modality: str, asset_id: str, t_ms: int, seed: int = 0, asset_type: str = "pump",
             value: np.ndarray | None = None, stats: dict[str, float] | None = None
             ) -> ThermalFeatures | PlcFeatures | AudioFeatures:
    """A features message of ``modality`` whose model input (``vector``) is random (or ``value``);
    ``stats``: the message's statistics."""
    from pipeline.features import FEATURES_VERSION

    rng = np.random.default_rng(seed)
    x = np.asarray(value if value is not None else rng.normal(size=SHAPES[modality]), np.float32)
    now = int(time.time() * 1000)
    common = dict(asset_id=asset_id, asset_type=asset_type, event_time_ms=t_ms, features_version=FEATURES_VERSION,
                  source=f"{modality}/{asset_id}/{t_ms}", ingest_time_ms=now, vector=x)
    if modality == "thermal":
        return ThermalFeatures(stats=dict(stats or {}), frame=np.zeros((120, 160), np.float16), **common)
    if modality == "audio":
        return AudioFeatures(stats=dict(stats or {}), logmel=np.zeros((64, 101), np.float32), **common)
    return PlcFeatures(window_start_ms=t_ms - 1000, window_end_ms=t_ms, feature_names=[f"f{i}" for i in range(37)],
                       values=np.zeros(37, np.float32), n_samples=10, stats=dict(stats or {}), **common)


def prediction(modality: str, asset_id: str, t_ms: int, label: str, p: float = 0.9,
               asset_type: str = "pump", withheld: tuple[str, ...] = ()) -> Prediction:
    rest = (1.0 - p) / (len(CLASSES) - 1)
    probs = [p if c == label else rest for c in CLASSES]
    return Prediction(asset_id=asset_id, modality=modality, event_time_ms=t_ms, model_name=f"{modality}-student",
                      model_version="v1", model_sha256="ab" * 32, classes=CLASSES, probabilities=probs, label=label,
                      features_entry_id="0-1", inferred_at_ms=t_ms, asset_type=asset_type, source=f"{modality}/{t_ms}",
                      withheld=list(withheld))


def verdict(asset_id: str, label: str, state: str, severity: float = 0.6, t_ms: int = 0,
            asset_type: str = "pump") -> Verdict:
    return Verdict(asset_id=asset_id, event_time_ms=t_ms, label=label, confidence=0.8, state=state,  # type: ignore[arg-type]
                   severity=severity, asset_type=asset_type, modalities={"thermal": label})


def write(client: redis.Redis, stream: str, msg) -> str:  # type: ignore[no-untyped-def]
    eid = client.xadd(stream, encode_message(msg))
    return eid.decode() if isinstance(eid, bytes) else eid


def wait_for(cond: Callable[[], object], timeout: float = 30.0, what: str = "condition") -> object:
    """Poll ``cond`` until truthy (a deadline, not a sleep that hides a race)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


@contextmanager
def running(worker: StreamWorker) -> Iterator[StreamWorker]:
    """Run a worker in a thread for the duration of the block; it must stop cleanly."""
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: worker.health.ready()[0], 10, "worker ready")
        yield worker
    finally:
        worker.stop()
        thread.join(timeout=30)
        assert not thread.is_alive(), "worker did not stop within 30 s"


def stream_len(client: redis.Redis, streams: list[str]) -> int:
    return sum(int(client.xlen(s)) for s in streams)


def pending(client: redis.Redis, streams: list[str], group: str) -> int:
    total = 0
    for s in streams:
        try:
            total += int(client.xpending(s, group)["pending"])
        except redis.ResponseError:
            pass
    return total


def env_for(redis_url: str, names: StreamNames, **extra: str) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), LINEWATCH_REDIS__URL=redis_url, LINEWATCH_STREAMS__PREFIX=names.prefix,
               LINEWATCH_STREAMS__SHARDS=str(names.shards), PYTHONUNBUFFERED="1")
    env.update(extra)
    return env


def linewatch_cmd(python: str | None = None) -> list[str]:
    return [python or sys.executable, "-m", "linewatch.cli.app"]


def start(cmd: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    fh = open(log, "ab")  # noqa: SIM115 - owned by the process
    return subprocess.Popen(cmd, env=env, cwd=REPO, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
