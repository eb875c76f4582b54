"""The inference service with the Triton backend against a real Triton server (PyTriton's
tritonserver): HTTP from the main install, gRPC from the install without Flink (.venv-services)."""

from __future__ import annotations

import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import redis

from linewatch.contract import StreamNames, decode_message
from linewatch.service_settings import InferenceSettings
from models.registry.store import DEFAULT_ROOT, ModelRegistry
from models.runtime.pytriton_process import TRITON_VENV, PyTritonProcess, venv_ready
from services.inference.model import load_served_model
from services.inference.service import inference_worker
from tests.models.test_runtime_support import SETUP_HINT, services_python
from tests.services.support import (
    env_for,
    features,
    linewatch_cmd,
    pending,
    running,
    start,
    wait_for,
    write,
)

pytestmark = pytest.mark.triton

MODEL_DIR = ModelRegistry(DEFAULT_ROOT).version_dir("thermal")  # the shipped (latest) version


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PyTritonProcess]:
    if not venv_ready(TRITON_VENV):
        pytest.skip(f"PyTriton venv {TRITON_VENV} is missing: {SETUP_HINT} triton")
    workdir = Path(tempfile.mkdtemp(prefix="pt", dir="/tmp"))  # short: PyTriton's unix socket path is limited
    srv = PyTritonProcess(MODEL_DIR, workdir, flavour="int8_cpu", extra_args=["--max-batch", "32"]).start()
    yield srv
    srv.stop()
    shutil.rmtree(workdir, ignore_errors=True)


def _check(client: redis.Redis, names: StreamNames, sent: dict[str, np.ndarray]) -> None:
    local = load_served_model(InferenceSettings(flavour="int8_cpu"), "thermal")
    got = {}
    for s in range(names.shards):
        for eid, f in client.xrange(names.predictions_shard("thermal", s)):
            got[eid.decode()] = decode_message(f)
    assert set(got) == set(sent)
    for eid, x in sent.items():
        want = local.runtime.predict(x[None].astype(np.float32))[0]
        np.testing.assert_allclose(got[eid].probabilities, want, atol=1e-4)
        assert got[eid].model_sha256 == local.ref.sha256


def _produce(client: redis.Redis, names: StreamNames, n: int) -> dict[str, np.ndarray]:
    sent = {}
    for i in range(n):
        msg = features("thermal", f"PMP-{i % 3:02d}", i, seed=i)
        sent[write(client, names.features("thermal", msg.asset_id), msg)] = msg.vector.astype(np.float32)
    return sent


def test_triton_http_backend(server: PyTritonProcess, redis_client: redis.Redis, stream_names: StreamNames) -> None:
    settings = InferenceSettings(backend="triton", triton_url=server.http_url, triton_protocol="http",
                                 flavour="int8_cpu", lease_ttl_ms=2000)
    worker = inference_worker(redis_client, stream_names, settings, "thermal")
    with running(worker):
        sent = _produce(redis_client, stream_names, 40)
        wait_for(lambda: worker.stats.handled == 40, 60, "40 predictions over Triton HTTP")
    _check(redis_client, stream_names, sent)


def test_triton_grpc_backend_in_the_install_without_flink(server: PyTritonProcess, redis_url: str,
                                                          redis_client: redis.Redis, stream_names: StreamNames,
                                                          tmp_path: Path) -> None:
    python = services_python()
    if python is None:
        pytest.skip(f".venv-services is missing (gRPC cannot run beside flink): {SETUP_HINT} services")
    env = env_for(redis_url, stream_names, LINEWATCH_INFERENCE__BACKEND="triton",
                  LINEWATCH_INFERENCE__TRITON_PROTOCOL="grpc", LINEWATCH_INFERENCE__TRITON_URL=server.grpc_url,
                  LINEWATCH_INFERENCE__FLAVOUR="int8_cpu", LINEWATCH_INFERENCE__LEASE_TTL_MS="2000")
    proc = start([*linewatch_cmd(str(python)), "serve", "inference", "--modality", "thermal"], env, tmp_path / "g.log")
    try:
        sent = _produce(redis_client, stream_names, 40)
        wait_for(lambda: sum(redis_client.xlen(stream_names.predictions_shard("thermal", s))
                             for s in range(stream_names.shards)) == 40, 90, "40 predictions over Triton gRPC")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, (tmp_path / "g.log").read_text()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
    _check(redis_client, stream_names, sent)
    assert pending(redis_client, stream_names.all_feature_streams(), "inference") == 0
