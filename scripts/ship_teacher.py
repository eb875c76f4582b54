"""Ship each modality's teacher next to its registered student, for shadow scoring (governance drift).

    .venv/bin/python scripts/ship_teacher.py \
        --gpu-run .runs/gpu_drift --registry models/default

``--gpu-run`` holds what ``scripts/train_gpu.py`` wrote (bundles + feature vectors). For each
modality the script

1. checks that the run reproduces the *registered* student (the bundle's calibrated student in torch
   against the registry's ``student.fp32.onnx`` on the card's reference sample): only then is the
   bundle's teacher the teacher that student was distilled from;
2. exports the calibrated teacher to ``teacher.fp32.onnx`` (calibration baked in, as every model;
   parity against torch checked by ``check_parity``);
3. scores the ONNX teacher on the run's grouped test split and the unseen fleet (severity-aware
   metrics) and measures how often the serving INT8 student disagrees with it (argmax, as the
   inference service labels) — the shadow monitor's expected disagreement;
4. records file, parity, metrics and agreement in the card (``files.teacher_fp32``,
   ``teacher.onnx_parity``, ``teacher.onnx_metrics``, ``teacher.shadow``).
"""

from __future__ import annotations

import argparse
import json
import tarfile
import tempfile
from pathlib import Path

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpu-run", type=Path, required=True)
    parser.add_argument("--registry", type=Path, default=Path("models/default"))
    parser.add_argument("--modalities", default="plc,thermal,audio")
    parser.add_argument("--student-tolerance", type=float, default=1e-3,
                        help="max |logit| difference between the run's student and the registered one")
    args = parser.parse_args()
    import torch

    from models.data.domain_data import load_run_data
    from models.export.onnx_export import check_parity, export_onnx, ort_logits, ort_session
    from models.registry import ModelRegistry
    from models.registry.store import file_entry
    from models.runtime.probabilities import softmax
    from models.training.evaluation import apply_mask, evaluate, possible_mask
    from models.training.fitting import FitBundle

    torch.set_num_threads(1)
    registry = ModelRegistry(args.registry)
    train, unseen = load_run_data(args.gpu_run)
    for m in [m.strip() for m in args.modalities.split(",") if m.strip()]:
        reg = registry.latest(m)
        card, vdir = reg.card, reg.directory
        with tempfile.TemporaryDirectory() as tmp:
            with tarfile.open(args.gpu_run / f"bundle_{m}.tar.gz") as tar:
                tar.extractall(tmp, filter="data")
            bundle = FitBundle.load(Path(tmp) / m)
        data = train.samples(m)
        split = bundle.split_of(data)
        ref = np.load(vdir / card.reference["path"], allow_pickle=False)
        x_ref = np.ascontiguousarray(ref["features"], np.float32)
        student = bundle.calibrated("student").eval()
        with torch.no_grad():
            torch_student = student(torch.from_numpy(x_ref)).numpy()
        shipped = ort_logits(ort_session(reg.path("student_fp32")), x_ref)
        student_diff = float(np.max(np.abs(torch_student - shipped)))
        if student_diff > args.student_tolerance:
            raise SystemExit(f"{m}: the run's student differs from the registered {card.version} by "
                             f"{student_diff:.2e} (> {args.student_tolerance}); its teacher is not that student's "
                             "teacher — ship a teacher only with the student it taught")
        teacher = bundle.calibrated("teacher").eval()
        path = export_onnx(teacher, bundle.sample_shape, vdir / "teacher.fp32.onnx")
        parity = check_parity(teacher, path, split.test.inputs[:64], 1e-3)
        t_sess, s_sess = ort_session(path), ort_session(reg.path(card.serving_role))
        metrics: dict[str, dict[str, float]] = {}
        agreement: dict[str, dict[str, float]] = {}
        for name, part in (("test", split.test), ("unseen", unseen.samples(m)), ("reference", None)):
            inputs = x_ref if part is None else part.inputs
            tp = softmax(ort_logits(t_sess, inputs))
            sp = softmax(ort_logits(s_sess, inputs))
            disagree = tp.argmax(1) != sp.argmax(1)
            agreement[name] = {"n": int(len(inputs)), "disagreement": float(disagree.mean())}
            if part is not None:
                e = evaluate(apply_mask(tp, possible_mask(part.asset_types, bundle.classes)), part.labels,
                             part.severity, bundle.classes)
                metrics[name] = {"macro_f1": e.macro_f1, "macro_f1_past_moderate": e.macro_f1_past_moderate,
                                 "healthy_fpr": e.healthy_fpr, "ece": e.ece}
                healthy = part.labels == 0
                agreement[name]["disagreement_healthy"] = float(disagree[healthy].mean())
        card.files["teacher_fp32"] = file_entry(vdir, path.name)
        card.teacher["onnx_parity"] = parity.to_dict()
        card.teacher["onnx_metrics"] = metrics
        teacher_fit = bundle.fits.get("teacher")
        card.teacher["shadow"] = {
            "file": path.name, "role": "teacher_fp32",
            "reproduced_from": (f"scripts/train_gpu.py run {args.gpu_run.name!r} (data seed and grouped split of the "
                                f"card; teacher trained {teacher_fit.epochs_run if teacher_fit else '?'} epochs, best "
                                f"epoch restored); the run's student equals the registered student.fp32.onnx within "
                                f"{student_diff:.1e} (max |logit|) on the reference sample"),
            "student_vs_teacher": agreement,
            "note": "disagreement = argmax of the serving INT8 student != argmax of the teacher (raw, unmasked), "
                    "the error stream of the label-free shadow monitor",
        }
        card.save(vdir)
        registry.verify(m, card.version)
        print(json.dumps({"modality": m, "student_diff": student_diff, "bytes": path.stat().st_size,
                          "parity": parity.max_abs_diff, "metrics": metrics, "agreement": agreement}, default=float),
              flush=True)


if __name__ == "__main__":
    main()
