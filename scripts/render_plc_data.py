"""Render only the PLC vectors of a domain-randomised fleet (fast: ~5 ms a sample on one core).

    .venv/bin/python scripts/render_plc_data.py --samples-per-class 6000 --assets 900 --seed 11 \
        --domain train --out /tmp/plc_train.npz [--workers 2] [--into-run .runs/plc-data]
        [--sensor-noise 0.05 3.0 --vibration-noise 0.1 1.6 --cavitation-burst-floor 0]

The same specs, renderer and feature code as :func:`models.data.domain_data.build_domain_dataset`
(the PLC window of a sample does not depend on the other modalities), so the vectors equal that
dataset's ``plc`` array; ``--expect-digest`` checks them against a model card's dataset digest.
The output loads with :meth:`DomainDataset.load` (thermal and audio are empty, shape (N, 0)).
``--into-run DIR`` also writes it into a run folder as ``scripts/train_gpu.py`` saves its data (the train
domain as ``data_train_*.npz``, any other as ``data_unseen.npz``), which ``train_gpu.py --data DIR``,
``package_models.py --gpu-run`` and ``bench_model_versions.py --data`` read.
"""

from __future__ import annotations

import argparse
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np


def _chunk(args: tuple[str, int, int, int, list[int]]) -> tuple[list[int], np.ndarray, np.ndarray]:
    from linewatch.simulator.domain import DomainRenderer
    from models.data.domain_data import _wide_rows, domain_world
    from models.data.featurize import plc_input
    from pipeline.features.plc_physics import plc_vector

    domain, n_assets, seed, spc, indices = args
    fleet, profiles, specs = domain_world(domain, n_assets, seed, spc)
    renderer = DomainRenderer(fleet, seed)
    rows, raws = [], []
    for i in indices:
        sample = renderer.render(specs[i], ("plc",))
        raws.append(plc_input(*_wide_rows(sample.plc)))
        rows.append(plc_vector(raws[-1], profiles[specs[i].asset_id]))
    return indices, np.stack(rows), np.stack(raws)


def main() -> None:
    from models.data.domain_overrides import add_domain_arguments, apply_domain_changes

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples-per-class", type=int, required=True)
    parser.add_argument("--assets", type=int, required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--domain", default="train")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--raw-out", type=Path, default=None,
                        help="also save the raw window features (plc_window_features, float64) as .npy")
    parser.add_argument("--into-run", type=Path, default=None,
                        help="also write the vectors into this scripts/train_gpu.py run folder (PLC only)")
    parser.add_argument("--expect-digest", default=None, help="SHA-256 of a card's dataset (LabelledSamples.digest)")
    add_domain_arguments(parser)  # --winding-rise, --sensor-noise, --vibration-noise, --cavitation-burst-floor
    args = parser.parse_args()
    apply_domain_changes(args)  # before the workers fork: they read the same domains
    from linewatch.simulator.health import FAULT_CLASSES, FAULT_INDEX
    from models.data.domain_data import DomainDataset, _chunks, domain_world

    _, _, specs = domain_world(args.domain, args.assets, args.seed, args.samples_per_class)
    tasks = [(args.domain, args.assets, args.seed, args.samples_per_class, c) for c in _chunks(specs, 256)]
    parts: list[tuple[list[int], np.ndarray, np.ndarray]] = []
    if args.workers <= 1:
        parts = [_chunk(t) for t in tasks]
    else:
        with ProcessPoolExecutor(max_workers=args.workers) as pool:
            parts = list(pool.map(_chunk, tasks))
    plc = np.zeros((len(specs), parts[0][1].shape[1]), np.float32)
    raw = np.zeros((len(specs), parts[0][2].shape[1]), np.float64)
    for idx, rows, raws in parts:
        plc[np.asarray(idx)] = rows
        raw[np.asarray(idx)] = raws
    if args.raw_out:
        np.save(args.raw_out, raw)
    n = len(specs)
    ds = DomainDataset(
        domain=args.domain, seed=args.seed, classes=tuple(FAULT_CLASSES),
        y=np.array([FAULT_INDEX[s.fault] for s in specs], np.int64),
        severity=np.array([s.severity for s in specs], np.float32),
        groups=np.array([s.asset_id for s in specs]), asset_types=np.array([s.asset_type for s in specs]),
        variants=np.array([s.variant for s in specs]), drifts=np.array([s.drift for s in specs]),
        shaft_hz=np.zeros(n, np.float32), plc=plc, thermal=np.zeros((n, 0), np.float32),
        audio=np.zeros((n, 0), np.float32))
    ds.save(args.out)
    digest = ds.samples("plc").digest()
    print(f"{n} samples, {len(set(ds.groups.tolist()))} machines -> {args.out}; plc digest {digest}")
    if args.expect_digest and digest != args.expect_digest:
        raise SystemExit(f"digest differs from the expected {args.expect_digest}")
    if args.into_run is not None:
        from train_gpu import save_data  # a sibling script: scripts/ is sys.path[0] when run as one

        args.into_run.mkdir(parents=True, exist_ok=True)
        train = args.domain == "train"
        written = save_data(ds, args.into_run, "train" if train else "unseen", split_modalities=train)
        print("run folder: " + ", ".join(str(p) for p in written))


if __name__ == "__main__":
    main()
