"""export_triton_repository: the written config.pbtxt must parse as Triton's ModelConfig protobuf.

tritonclient's generated ``model_config_pb2`` needs protobuf >= 6, which the main venv cannot
have beside apache-beam; then the parse runs in .venv-services (scripts/setup_model_venvs.sh).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from tests.models.test_runtime_support import CLASSES, REPO_ROOT, SETUP_HINT, make_model_dir, services_python

from models.runtime import TensorRTAccelerator, TritonRepositoryOptions, export_triton_repository

PARSE = r"""
import sys
from google.protobuf import json_format, text_format
from tritonclient.grpc import model_config_pb2
config = text_format.Parse(open(sys.argv[1]).read(), model_config_pb2.ModelConfig())
print(json_format.MessageToJson(config, preserving_proto_field_name=True))
"""


def parse_model_config(path: Path) -> dict[str, Any]:
    """config.pbtxt -> ModelConfig protobuf -> dict (in-process when possible, else .venv-services)."""
    try:
        import tritonclient
        from google.protobuf import json_format, text_format

        pb2_file = Path(tritonclient.__file__).parent / "grpc" / "model_config_pb2.py"
        spec = importlib.util.spec_from_file_location("linewatch_model_config_pb2", pb2_file)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    except Exception:  # protobuf VersionError beside apache-beam: use the services venv
        python = services_python()
        if python is None:
            pytest.skip(f"model_config_pb2 does not import here and .venv-services is missing: {SETUP_HINT} services")
        env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
        done = subprocess.run(
            [str(python), "-c", PARSE, str(path)], capture_output=True, text=True, timeout=60, env=env
        )
        assert done.returncode == 0, f"config.pbtxt does not parse as ModelConfig:\n{done.stderr[-3000:]}"
        return json.loads(done.stdout)
    config = text_format.Parse(path.read_text(), module.ModelConfig())
    return json.loads(json_format.MessageToJson(config, preserving_proto_field_name=True))


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_model_dir(tmp_path_factory.mktemp("repo-model"), int8=True, int8_trt=True)


def test_gpu_int8_repository(model_dir: Path, tmp_path: Path) -> None:
    target = export_triton_repository(model_dir, tmp_path / "repo", TritonRepositoryOptions(gpus=(0,)))
    assert target == tmp_path / "repo" / "tinythermal_int8_trt"
    assert (target / "1" / "model.onnx").read_bytes() == (model_dir / "student.int8.tensorrt.onnx").read_bytes()
    assert (target / "labels.txt").read_text().split() == list(CLASSES)
    cfg = parse_model_config(target / "config.pbtxt")
    assert cfg["name"] == "tinythermal_int8_trt" and cfg["backend"] == "onnxruntime"
    assert cfg["max_batch_size"] == 32
    (inp,), (out,) = cfg["input"], cfg["output"]
    assert (inp["name"], inp["data_type"], [int(d) for d in inp["dims"]]) == ("input", "TYPE_FP32", [1, 12, 16])
    assert (out["name"], out["data_type"], [int(d) for d in out["dims"]]) == ("logits", "TYPE_FP32", [len(CLASSES)])
    assert out["label_filename"] == "labels.txt"
    assert cfg["dynamic_batching"]["preferred_batch_size"] == [8, 16]
    assert int(cfg["dynamic_batching"]["max_queue_delay_microseconds"]) == 2000
    assert cfg["instance_group"] == [{"count": 1, "kind": "KIND_GPU", "gpus": [0]}]
    (accel,) = cfg["optimization"]["execution_accelerators"]["gpu_execution_accelerator"]
    assert accel["name"] == "tensorrt"
    assert accel["parameters"]["precision_mode"] == "INT8"
    assert accel["parameters"]["trt_engine_cache_enable"] == "1"
    assert cfg["parameters"]["intra_op_thread_count"] == {"string_value": "1"}
    assert cfg["parameters"]["execution_mode"] == {"string_value": "0"}


def test_cpu_repository_has_no_gpu_accelerator(model_dir: Path, tmp_path: Path) -> None:
    options = TritonRepositoryOptions(
        flavour="int8_cpu", instance_kind="KIND_CPU", instance_count=2, max_batch_size=8,
        preferred_batch_sizes=(4, 16), max_queue_delay_us=500, intra_op_threads=2,
    )  # fmt: skip
    cfg = parse_model_config(export_triton_repository(model_dir, tmp_path, options) / "config.pbtxt")
    assert cfg["instance_group"] == [{"count": 2, "kind": "KIND_CPU"}]
    assert "optimization" not in cfg
    assert cfg["dynamic_batching"]["preferred_batch_size"] == [4]  # 16 > max_batch_size is dropped
    assert cfg["parameters"]["intra_op_thread_count"] == {"string_value": "2"}


def test_accelerator_choices(model_dir: Path, tmp_path: Path) -> None:
    fp32 = parse_model_config(
        export_triton_repository(model_dir, tmp_path, TritonRepositoryOptions(flavour="fp32")) / "config.pbtxt"
    )
    (accel,) = fp32["optimization"]["execution_accelerators"]["gpu_execution_accelerator"]
    assert accel["parameters"]["precision_mode"] == "FP16"
    custom = TritonRepositoryOptions(
        model_name="thermal", tensorrt=TensorRTAccelerator(precision_mode="FP16", engine_cache_path=None)
    )
    cfg = parse_model_config(export_triton_repository(model_dir, tmp_path, custom) / "config.pbtxt")
    (accel,) = cfg["optimization"]["execution_accelerators"]["gpu_execution_accelerator"]
    assert cfg["name"] == "thermal" and "trt_engine_cache_enable" not in accel["parameters"]
    off = TritonRepositoryOptions(model_name="plain", tensorrt=None)
    assert "optimization" not in parse_model_config(export_triton_repository(model_dir, tmp_path, off) / "config.pbtxt")


def test_reexport_replaces_the_model_directory(model_dir: Path, tmp_path: Path) -> None:
    target = export_triton_repository(model_dir, tmp_path)
    (target / "1" / "stale.onnx").write_bytes(b"old")
    assert not (export_triton_repository(model_dir, tmp_path) / "1" / "stale.onnx").exists()


def test_fixed_batch_model_is_refused(tmp_path: Path) -> None:
    fixed = make_model_dir(tmp_path / "fixed", fixed_batch=4, int8=False)
    with pytest.raises(ValueError, match="dynamic batch"):
        export_triton_repository(fixed, tmp_path / "repo", TritonRepositoryOptions(flavour="fp32"))
