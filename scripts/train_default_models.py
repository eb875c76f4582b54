"""Train the default models that ship in ``models/default`` (or reproduce them elsewhere).

    .venv/bin/python scripts/train_default_models.py --out models/default
    .venv/bin/python scripts/train_default_models.py --out /tmp/repro --modalities thermal

Data: the simulator's ``generate_arrays`` at its default config (seed 7, difficulty
"realistic"), ``--samples-per-class`` per class; training seed ``--seed``. The shipped
versions keep the ONNX files (teacher FP32 for the server GPU path, student FP32 and both
INT8 flavours), cards, confusion matrices and the drift reference, but not the teacher's
safetensors checkpoint (its weights are in teacher.fp32.onnx; keeps the folder < 5 MB).
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path

from linewatch.simulator.config import SimulatorConfig
from models.config import default_train_config
from models.training.run_all import load_training_data
from models.training.train import train_modality


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("models/default"))
    parser.add_argument("--modalities", default="plc,thermal,audio")
    parser.add_argument("--samples-per-class", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--keep-teacher-checkpoint", action="store_true")
    parser.add_argument("--calibration", default=None, choices=["MinMax", "Percentile"])
    parser.add_argument("--calibration-samples", type=int, default=None)
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    mods = tuple(m.strip() for m in args.modalities.split(",") if m.strip())
    t0 = time.perf_counter()
    data = load_training_data(mods, None, args.samples_per_class, SimulatorConfig(), progress=not args.no_progress)
    print(f"data: {time.perf_counter() - t0:.0f} s", flush=True)
    for m in mods:
        cfg = default_train_config(
            m, seed=args.seed, threads=args.threads, device=args.device, progress=not args.no_progress,
            save_teacher_checkpoint=args.keep_teacher_checkpoint,
        )
        if args.calibration:
            cfg.quantize.calibration_method = args.calibration
        if args.calibration_samples:
            cfg.quantize.calibration_samples = args.calibration_samples
        card = train_modality(m, data[m], args.out, cfg)
        summary = {r: round(card.macro_f1(r), 4) for r in card.metrics}
        print(json.dumps({"modality": m, "version": card.version, "macro_f1": summary,
                          "duration_s": card.training.get("duration_s")}), flush=True)


if __name__ == "__main__":
    main()
