"""CPU latency of every model variant, per modality (results: docs/models.md, docs/benchmarks.md).

    .venv/bin/python bench/bench_models_cpu.py --registry models/default --runs 200 --out /tmp/bench_cpu.json

Variants: teacher torch eager; teacher ORT FP32; student torch eager; student torch.compile; student ORT FP32;
student ORT INT8 ``cpu`` (uint8 act / int8 per-channel weights) and ``tensorrt`` (symmetric
int8, run here on ORT CPU). One intra-op thread everywhere; batch 1 and 32; the variants are
interleaved run by run (one call of each per round) so machine noise hits all alike; medians
and p99 in ms. Torch models are rebuilt from the card's architecture config (latency does not
depend on the weights); ONNX files come from the registry.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from models.common.normalization import fit_standardizer
from models.config import StudentConfig, TeacherConfig
from models.export.onnx_export import ort_session
from models.families import family
from models.registry import ModelRegistry
from models.specs import INPUT_NAME, OUTPUT_NAME


def build_variants(registry: ModelRegistry, modality: str, batch: int, compile_student: bool) -> tuple[dict[str, Callable[[], object]], dict[str, float]]:
    model = registry.latest(modality)
    card = model.card
    shape = tuple(card.input["shape"])
    fam = family(modality)
    x_np = np.random.default_rng(0).normal(size=(batch, *shape)).astype(np.float32)
    x_t = torch.from_numpy(x_np)
    stats = fit_standardizer(x_np, fam.per_feature_standardization)
    teacher = fam.build_teacher(TeacherConfig(**{**card.teacher["config"], "checkpoint": None}), tuple(card.classes), shape, stats).eval()
    student = fam.build_student(StudentConfig(**card.student["config"]), len(card.classes), shape, stats).eval()
    extra: dict[str, float] = {}
    variants: dict[str, Callable[[], object]] = {}

    def torch_call(m: torch.nn.Module) -> Callable[[], object]:
        def run() -> object:
            with torch.inference_mode():
                return m(x_t)
        return run

    variants["teacher_torch_eager"] = torch_call(teacher)
    variants["student_torch_eager"] = torch_call(student)
    if compile_student:
        compiled = torch.compile(student)
        t0 = time.perf_counter()
        with torch.inference_mode():
            compiled(x_t)
        extra["student_torch_compile_cold_s"] = time.perf_counter() - t0
        variants["student_torch_compile"] = torch_call(compiled)
    for role, name in (("teacher_fp32", "teacher_ort_fp32"), ("student_fp32", "student_ort_fp32"),
                       ("student_int8_cpu", "student_ort_int8_cpu"),
                       ("student_int8_tensorrt", "student_ort_int8_tensorrt")):
        if role not in card.files:
            continue
        session = ort_session(model.path(role), threads=1)
        variants[name] = (lambda s=session: s.run([OUTPUT_NAME], {INPUT_NAME: x_np}))
    return variants, extra


def bench(variants: dict[str, Callable[[], object]], runs: int, warmup: int) -> dict[str, dict[str, float]]:
    times: dict[str, list[float]] = {k: [] for k in variants}
    for i in range(warmup + runs):
        for name, fn in variants.items():  # interleaved: one call of each variant per round
            t0 = time.perf_counter()
            fn()
            if i >= warmup:
                times[name].append((time.perf_counter() - t0) * 1e3)
    return {k: {"median_ms": float(np.median(v)), "p99_ms": float(np.percentile(v, 99)), "runs": len(v)} for k, v in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--registry", type=Path, default=Path("models/default"))
    parser.add_argument("--modalities", default="plc,thermal,audio")
    parser.add_argument("--batches", default="1,32")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    registry = ModelRegistry(args.registry)
    results: dict[str, object] = {
        "machine": {"platform": platform.platform(), "processor": platform.processor(), "torch": torch.__version__,
                    "threads": 1},
        "runs": args.runs, "modalities": {},
    }
    lines = ["| modality | batch | variant | median ms | p99 ms | vs teacher eager | vs student ORT FP32 |", "|---|---|---|---|---|---|---|"]
    for modality in [m.strip() for m in args.modalities.split(",") if m.strip()]:
        per_batch = {}
        for batch in [int(b) for b in args.batches.split(",")]:
            variants, extra = build_variants(registry, modality, batch, not args.no_compile)
            res = bench(variants, args.runs if batch == 1 else max(20, args.runs // 4), args.warmup)
            per_batch[str(batch)] = {"results": res, **extra}
            teacher = res["teacher_torch_eager"]["median_ms"]
            fp32 = res["student_ort_fp32"]["median_ms"]
            for name, r in res.items():
                lines.append(f"| {modality} | {batch} | {name} | {r['median_ms']:.3f} | {r['p99_ms']:.3f} | "
                             f"{teacher / r['median_ms']:.1f}× | {fp32 / r['median_ms']:.2f}× |")
            print("\n".join(lines[-len(res):]), flush=True)
        results["modalities"][modality] = per_batch  # type: ignore[index]
    print("\n" + "\n".join(lines))
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
