"""INT8 quantization: the two flavours have the documented layouts, keep the standardisation
and the classifier in FP32, agree with FP32 on real (simulated) data, and the accuracy gate
catches an INT8 model that was made worse on purpose (calibrated on the wrong range)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
import torch
from onnx import numpy_helper

from models.common.normalization import fit_standardizer
from models.config import GateConfig, QuantizeConfig, StudentConfig
from models.data.samples import split_samples
from models.data.simulated import simulated_samples
from models.export.onnx_export import export_onnx, ort_logits, ort_session
from models.export.quantize import classifier_nodes, input_preprocessing_nodes, quantize_int8
from models.families import family
from models.training.gates import evaluate_gates
from models.training.loop import fit
from models.training.metrics import classification_report

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def trained_plc(tmp_path_factory):
    from dataclasses import replace

    # a random (not grouped) split: this is about quantization, not about unseen machines
    data = replace(simulated_samples(30, modalities=("plc",))["plc"], groups=None)
    split = split_samples(data, 0.15, 0.3, seed=0)
    torch.manual_seed(0)
    stats = fit_standardizer(split.train.inputs, per_feature=True)
    model = family("plc").build_student(StudentConfig(hidden=32), len(data.classes), data.sample_shape, stats)
    fit(model, split.train.inputs, split.train.labels, split.val.inputs, split.val.labels, data.classes,
        epochs=15, lr=3e-3, weight_decay=1e-4, batch_size=32, patience=15, seed=0, desc="t", progress=False)
    path = export_onnx(model, data.sample_shape, tmp_path_factory.mktemp("q") / "fp32.onnx")
    return split, path


def _zero_points(model: onnx.ModelProto) -> list[np.ndarray]:
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    return [inits[n.input[2]] for n in model.graph.node if n.op_type == "QuantizeLinear" and len(n.input) > 2]


def test_flavours_have_the_documented_layout(trained_plc, tmp_path) -> None:
    split, fp32 = trained_plc
    calib = split.train.inputs[:64]
    fp32_graph = onnx.load(str(fp32))
    keep_float = set(input_preprocessing_nodes(fp32_graph)) | set(classifier_nodes(fp32_graph))
    cpu_recipe = quantize_int8(fp32, tmp_path / "cpu.onnx", calib, "cpu", QuantizeConfig())
    trt_recipe = quantize_int8(fp32, tmp_path / "trt.onnx", calib, "tensorrt", QuantizeConfig())
    cpu, trt = onnx.load(str(tmp_path / "cpu.onnx")), onnx.load(str(tmp_path / "trt.onnx"))
    # cpu: asymmetric uint8 activations
    assert {z.dtype for z in _zero_points(cpu)} == {np.dtype(np.uint8)}
    # tensorrt: symmetric int8 activations (zero point 0) and Relu kept explicit
    assert {z.dtype for z in _zero_points(trt)} == {np.dtype(np.int8)}
    assert all(int(np.abs(z).max()) == 0 for z in _zero_points(trt))
    assert any(n.op_type == "Relu" for n in trt.graph.node)
    # per-channel int8 weights: one scale per output unit of the first layer
    inits = {i.name: numpy_helper.to_array(i) for i in cpu.graph.initializer}
    weight_scales = [v for k, v in inits.items() if k.endswith("weight_scale")]
    assert weight_scales and max(v.size for v in weight_scales) > 1
    for recipe in (cpu_recipe, trt_recipe):
        assert set(recipe.nodes_excluded) == keep_float
    classifier = classifier_nodes(fp32_graph)[0]
    for graph in (cpu, trt):
        gemm = next(n for n in graph.graph.node if n.name == classifier)
        assert not any(i.endswith("DequantizeLinear_Output") for i in gemm.input[1:]), "classifier weights stay FP32"


def test_int8_agrees_with_fp32_on_held_out_data(trained_plc, tmp_path) -> None:
    split, fp32 = trained_plc
    reference = ort_logits(ort_session(fp32), split.test.inputs).argmax(1)
    for flavour in ("cpu", "tensorrt"):
        out = tmp_path / f"{flavour}.onnx"
        quantize_int8(fp32, out, split.train.inputs, flavour, QuantizeConfig())
        session = ort_session(out, emulate_qdq=flavour == "tensorrt")  # as train() gates them
        agreement = float(np.mean(ort_logits(session, split.test.inputs).argmax(1) == reference))
        assert agreement >= 0.85, f"{flavour}: INT8 agrees with FP32 on only {agreement:.0%} of test windows"


def test_gate_fails_for_an_int8_model_calibrated_on_the_wrong_range(trained_plc, tmp_path) -> None:
    split, fp32 = trained_plc
    classes = split.test.classes
    fp32_f1 = classification_report(split.test.labels, ort_logits(ort_session(fp32), split.test.inputs).argmax(1), classes).macro_f1
    good, bad = tmp_path / "good.onnx", tmp_path / "bad.onnx"
    quantize_int8(fp32, good, split.train.inputs, "cpu", QuantizeConfig())
    # Calibration data that is one point (the mean window): every activation range collapses, so
    # real inputs saturate. (Scaled-up data no longer breaks it: the standardised input is clamped.)
    wrong = np.repeat(split.train.inputs.mean(axis=0, keepdims=True), 32, axis=0)
    quantize_int8(fp32, bad, wrong, "cpu", QuantizeConfig())
    f1 = {
        name: classification_report(split.test.labels, ort_logits(ort_session(p), split.test.inputs).argmax(1), classes).macro_f1
        for name, p in (("good", good), ("bad", bad))
    }
    gates = GateConfig(int8_max_drop=0.05, student_max_drop=1.0)
    good_checks = evaluate_gates(fp32_f1, fp32_f1, {"cpu": f1["good"]}, gates)
    bad_checks = evaluate_gates(fp32_f1, fp32_f1, {"cpu": f1["bad"]}, gates)
    assert all(c.passed for c in good_checks), good_checks
    failed = [c for c in bad_checks if not c.passed]
    assert [c.name for c in failed] == ["int8_cpu_vs_fp32"], (f1, fp32_f1)
    assert "needs >=" in failed[0].detail
