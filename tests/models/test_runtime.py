"""In-process runtimes: ONNX Runtime runner, load_runtime factory, optional-dependency errors."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from tests.models.test_runtime_support import CLASSES, make_model_dir, sample_batch, torch_probabilities

from models.runtime import (
    OnnxRuntimeRunner,
    OrtOptions,
    RuntimeInputError,
    RuntimeSettings,
    RuntimeUnavailableError,
    load_runtime,
)
from models.runtime.onnxruntime_runner import select_providers


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_model_dir(tmp_path_factory.mktemp("model"))


def test_fp32_probabilities_match_torch(model_dir: Path) -> None:
    runner = load_runtime(model_dir, "onnxruntime", "fp32")
    x = sample_batch(7)
    probs = runner.predict(x)
    assert probs.shape == (7, len(CLASSES)) and probs.dtype == np.float32
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(probs, torch_probabilities(x), atol=1e-5)
    assert runner.classes == CLASSES
    assert runner.output_kind == "logits"


def test_probability_output_is_not_softmaxed_twice(tmp_path: Path) -> None:
    d = make_model_dir(tmp_path, probabilities=True, int8=False)
    runner = load_runtime(d, "onnxruntime", "fp32")
    x = sample_batch(5)
    assert runner.output_kind == "probabilities"
    np.testing.assert_allclose(runner.predict(x), torch_probabilities(x, probabilities_model=True), atol=1e-5)


def test_fixed_batch_model_is_split_and_padded(tmp_path: Path, model_dir: Path) -> None:
    fixed = OnnxRuntimeRunner(make_model_dir(tmp_path, fixed_batch=4, int8=False, card=False) / "student_fp32.onnx")
    assert fixed.input_spec.fixed_batch == 4
    for n in (1, 4, 7, 9):
        x = sample_batch(n, seed=n)
        np.testing.assert_allclose(fixed.predict(x), torch_probabilities(x), atol=1e-5)


def test_max_batch_splitting_gives_same_result(model_dir: Path) -> None:
    x = sample_batch(11)
    whole = load_runtime(model_dir, "onnxruntime", "fp32").predict(x)
    split = load_runtime(model_dir, flavour="fp32", settings=RuntimeSettings(ort=OrtOptions(max_batch=3))).predict(x)
    np.testing.assert_allclose(split, whole, atol=1e-6)


def test_int8_flavour_and_auto_choice(model_dir: Path) -> None:
    x = sample_batch(64, seed=3)
    int8 = load_runtime(model_dir, "onnxruntime", "int8_cpu")
    assert int8.model_path.name == "student.int8.cpu.onnx"  # type: ignore[attr-defined]
    diff = np.abs(int8.predict(x) - torch_probabilities(x))
    assert diff.max() < 0.1, f"INT8 probabilities off by {diff.max():.3f}"
    if "TensorrtExecutionProvider" not in ort.get_available_providers():
        assert load_runtime(model_dir).model_path.name == "student.int8.cpu.onnx"  # the card's serving_role


def test_session_settings_for_edge(model_dir: Path) -> None:
    runner = load_runtime(model_dir, "onnxruntime", "fp32")
    assert runner.providers[-1] == "CPUExecutionProvider"
    assert set(runner.providers) <= set(ort.get_available_providers())
    opts = runner.session.get_session_options()
    assert (opts.intra_op_num_threads, opts.inter_op_num_threads) == (1, 1)
    assert opts.execution_mode == ort.ExecutionMode.ORT_SEQUENTIAL


def test_unavailable_providers_are_dropped_or_refused() -> None:
    if "TensorrtExecutionProvider" in ort.get_available_providers():
        pytest.skip("TensorRT EP is available here; this checks the CPU-only fallback")
    chosen = select_providers(OrtOptions(), "/tmp/cache")
    assert "TensorrtExecutionProvider" not in [p if isinstance(p, str) else p[0] for p in chosen]
    with pytest.raises(ValueError, match="available"):
        select_providers(OrtOptions(providers=("TensorrtExecutionProvider",)), "/tmp/cache")


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        (np.zeros((2, 1, 12, 15), np.float32), r"expects shape \(n, 1, 12, 16\)"),
        (np.zeros((1, 12, 16), np.float32), "expects shape"),
        (np.zeros((0, 1, 12, 16), np.float32), "empty batch"),
        (np.zeros((2, 1, 12, 16), np.complex64), "expects dtype float32"),
    ],
)
def test_bad_input_raises_clear_error(model_dir: Path, bad: np.ndarray, match: str) -> None:
    runner = load_runtime(model_dir, "onnxruntime", "fp32")
    with pytest.raises(RuntimeInputError, match=match):
        runner.predict(bad)
    assert runner.predict(sample_batch(1)).shape == (1, len(CLASSES))  # still usable afterwards


def test_float64_input_is_converted(model_dir: Path) -> None:
    runner = load_runtime(model_dir, "onnxruntime", "fp32")
    x = sample_batch(3)
    np.testing.assert_allclose(runner.predict(x.astype(np.float64)), runner.predict(x), atol=1e-7)


def test_model_dir_without_card_still_loads(tmp_path: Path) -> None:
    d = make_model_dir(tmp_path, int8=False, card=False)
    runner = load_runtime(d, "onnxruntime", "fp32")
    assert runner.classes == () and runner.input_spec.name == "input"
    assert runner.predict(sample_batch(2)).shape == (2, len(CLASSES))


def test_missing_flavour_lists_what_is_there(tmp_path: Path, model_dir: Path) -> None:
    d = tmp_path / "m"
    d.mkdir()
    shutil.copy(model_dir / "student.fp32.onnx", d / "student_fp32.onnx")
    with pytest.raises(FileNotFoundError, match=r"present: \['student_fp32.onnx'\]"):
        load_runtime(d, "onnxruntime", "int8_trt")
    assert load_runtime(d).model_path.name == "student_fp32.onnx"  # type: ignore[attr-defined]


def test_registry_roles_and_tensorrt_flavour_on_cpu(tmp_path: Path) -> None:
    d = make_model_dir(tmp_path, int8=False, int8_trt=True)
    by_role = load_runtime(d, "onnxruntime", "student_int8_tensorrt")
    by_flavour = load_runtime(d, "onnxruntime", "int8_trt")
    assert by_role.model_path == by_flavour.model_path == d / "student.int8.tensorrt.onnx"  # type: ignore[attr-defined]
    x = sample_batch(32, seed=5)
    assert np.abs(by_flavour.predict(x) - torch_probabilities(x)).max() < 0.1  # symmetric QDQ runs on CPU too
    assert load_runtime(d).model_path.name == "student.fp32.onnx"  # type: ignore[attr-defined]  # serving_role


@pytest.mark.skipif(importlib.util.find_spec("tensorrt") is not None, reason="tensorrt is installed here")
def test_tensorrt_kind_says_what_to_install(model_dir: Path) -> None:
    with pytest.raises(RuntimeUnavailableError, match="python3-libnvinfer"):
        load_runtime(model_dir, "tensorrt")


def test_grpc_client_import_error_says_what_to_do() -> None:
    from models.runtime.triton_runner import import_client

    try:
        import tritonclient.grpc  # noqa: F401
    except Exception:
        with pytest.raises(RuntimeUnavailableError, match="setup_model_venvs.sh services"):
            import_client("grpc")
    else:
        pytest.skip("tritonclient.grpc imports in this environment (no flink extra)")


def test_unreachable_triton_gives_clear_error() -> None:
    from models.runtime import RemoteInferenceError
    from models.runtime.pytriton_process import free_port
    from models.runtime.triton_runner import TritonRunner

    with pytest.raises(RemoteInferenceError, match="readiness check failed: ConnectionRefusedError"):
        TritonRunner(f"127.0.0.1:{free_port()}", "tinythermal_fp32")
