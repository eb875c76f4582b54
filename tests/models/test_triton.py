"""TritonRunner against a real Triton server (PyTriton 0.7.0, tritonserver 2.51, CPU).

One server per module, started from .venv-triton (scripts/setup_model_venvs.sh triton). The
gRPC client runs in .venv-services: tritonclient.grpc cannot be imported beside apache-flink.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from tests.models.test_runtime_support import (
    CLASSES,
    REPO_ROOT,
    SETUP_HINT,
    make_model_dir,
    sample_batch,
    services_python,
)

from models.runtime import RemoteInferenceError, RuntimeInputError, RuntimeSettings, load_runtime
from models.runtime.pytriton_process import TRITON_VENV, PyTritonProcess, venv_ready
from models.runtime.triton_runner import TritonRunner

pytestmark = pytest.mark.triton

MAX_BATCH = 16

GRPC_CLIENT = r"""
import json, sys
import numpy as np
import tritonclient.grpc as grpcclient
from models.runtime import RuntimeSettings, load_runtime

model_dir, url, x_path, out_path = sys.argv[1:5]
rt = load_runtime(model_dir, "triton", "fp32", RuntimeSettings(triton_url=url, triton_protocol="grpc"))
np.save(out_path, rt.predict(np.load(x_path)))
# a wrong-shape request straight to the server, bypassing the runner's own check
bad = np.zeros((2, 1, 5, 5), np.float32)
inp = grpcclient.InferInput(rt.input_spec.name, list(bad.shape), "FP32")
inp.set_data_from_numpy(bad)
try:
    grpcclient.InferenceServerClient(url).infer(rt.model_name, [inp])
    error = None
except Exception as exc:
    error = str(exc)
ok_after = rt.predict(np.load(x_path)[:1]).shape
print(json.dumps({"wrong_shape_error": error, "ok_after": list(ok_after), "max_batch": rt.max_batch_size}))
"""


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_model_dir(tmp_path_factory.mktemp("triton-model"), int8=False)


@pytest.fixture(scope="module")
def server(model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PyTritonProcess]:
    if not venv_ready(TRITON_VENV):
        pytest.skip(f"PyTriton venv {TRITON_VENV} is missing: {SETUP_HINT} triton")
    srv = PyTritonProcess(
        model_dir,
        tmp_path_factory.mktemp("pytriton"),
        flavour="fp32",
        extra_args=["--max-batch", str(MAX_BATCH), "--preferred-batch", "4", "8"],
    ).start()
    yield srv
    rc = srv.stop()
    assert rc == 0, f"PyTriton did not exit cleanly on SIGTERM (rc={rc}):\n{srv.log_tail()}"


@pytest.fixture(scope="module")
def local(model_dir: Path):
    return load_runtime(model_dir, "onnxruntime", "fp32")


@pytest.fixture(scope="module")
def http(model_dir: Path, server: PyTritonProcess) -> Iterator[TritonRunner]:
    rt = load_runtime(model_dir, "triton", "fp32", RuntimeSettings(triton_url=server.http_url))
    yield rt  # type: ignore[misc]
    rt.close()


@pytest.mark.parametrize("n", [1, 5, 3 * MAX_BATCH + 2])
def test_http_predictions_equal_in_process_ort(http: TritonRunner, local, n: int) -> None:
    x = sample_batch(n, seed=n)
    probs = http.predict(x)
    assert probs.shape == (n, len(CLASSES))
    np.testing.assert_allclose(probs, local.predict(x), atol=1e-5)
    assert http.max_batch_size == MAX_BATCH and http.classes == CLASSES


def test_grpc_predictions_equal_in_process_ort(model_dir: Path, server: PyTritonProcess, local, tmp_path: Path) -> None:
    python = services_python()
    if python is None:
        pytest.skip(f".venv-services is missing (gRPC cannot run beside flink): {SETUP_HINT} services")
    x = sample_batch(2 * MAX_BATCH + 3, seed=7)
    np.save(tmp_path / "x.npy", x)
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    done = subprocess.run(
        [str(python), "-c", GRPC_CLIENT, str(model_dir), server.grpc_url, str(tmp_path / "x.npy"),
         str(tmp_path / "p.npy")],
        capture_output=True, text=True, timeout=60, env=env, cwd=REPO_ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    np.testing.assert_allclose(np.load(tmp_path / "p.npy"), local.predict(x), atol=1e-5)
    assert report["max_batch"] == MAX_BATCH
    assert report["wrong_shape_error"] and "shape" in report["wrong_shape_error"].lower()
    assert report["ok_after"] == [1, len(CLASSES)]


def test_wrong_shape_is_refused_by_the_server_not_a_crash(http: TritonRunner, server: PyTritonProcess, local) -> None:
    import tritonclient.http as httpclient
    from tritonclient.utils import InferenceServerException

    client = httpclient.InferenceServerClient(server.http_url)
    bad = np.zeros((2, 1, 5, 5), np.float32)
    inp = httpclient.InferInput("input", list(bad.shape), "FP32")
    inp.set_data_from_numpy(bad)
    with pytest.raises(InferenceServerException, match="(?i)shape"):
        client.infer(server.model_name, [inp])
    client.close()
    x = sample_batch(2, seed=11)
    np.testing.assert_allclose(http.predict(x), local.predict(x), atol=1e-5)  # server still serves


def test_wrong_shape_is_caught_by_the_runner(http: TritonRunner) -> None:
    with pytest.raises(RuntimeInputError, match=r"expects shape \(n, 1, 12, 16\)"):
        http.predict(np.zeros((2, 1, 16, 12), np.float32))


def test_unknown_model_gives_clear_error(model_dir: Path, server: PyTritonProcess) -> None:
    with pytest.raises(RemoteInferenceError, match="not ready|unknown model"):
        TritonRunner(server.http_url, "no_such_model")


def test_concurrent_clients_each_get_their_own_rows(model_dir: Path, server: PyTritonProcess, local) -> None:
    """Requests from many threads are merged by the dynamic batcher and must come back unmixed."""

    def worker(seed: int) -> float:
        rt = load_runtime(model_dir, "triton", "fp32", RuntimeSettings(triton_url=server.http_url))
        worst = 0.0
        for i in range(5):
            x = sample_batch(1 + (seed + i) % 3, seed=100 * seed + i)
            worst = max(worst, float(np.abs(rt.predict(x) - local.predict(x)).max()))
        rt.close()
        return worst

    with ThreadPoolExecutor(8) as pool:
        assert max(pool.map(worker, range(8))) < 1e-5


if __name__ == "__main__":  # pragma: no cover - manual run
    sys.exit(pytest.main([__file__, "-v"]))
