"""Issue #10 experiment: does a *learned* reading of the order-normalised envelope spectrum find
more bearing wear than the 79-value audio vector? Validation split only.

Three stages (the GPU ones ran on the lent H200, see docs/models.md "Audio: what the v4 features
changed"):

    # 1. data: the v4 fleets (same seeds, same feature code as the v4 models) + the order spectra
    python scripts/audio_order_experiment.py render --out DIR --workers 15
    # 2. the v4 audio teacher (v4 recipe) -> its logits on every training-domain sample
    python scripts/audio_order_experiment.py teacher --data DIR --out DIR/teacher_logits.npy --device cuda
    # 3. students on the same grouped split, calibrated the same way, scored on validation
    python scripts/audio_order_experiment.py fit --data DIR --teacher-logits DIR/teacher_logits.npy \
        --variants mlp79,hybrid --seeds 0,1 --out DIR/fit.npz --device cuda

``render`` writes the files of ``scripts/train_gpu.py``'s data stage (``data_train_{audio,thermal}.npz``,
``data_train_plc_meta.npz``, ``data_unseen.npz``), the grouped split of the v4 models (``split.npz``:
``train``/``val``/``test`` indices, ``grouped_split_indices(groups, 0.15, 0.2, seed 0)``) and the
order spectra of the training-domain clips (``order_spectra_{0,1}.npz``: ``q`` uint8, value =
``PROM_CLIP[0] + q * (PROM_CLIP[1] - PROM_CLIP[0]) / 255``; rows in the data order).

Every student is trained with the loop and hyper-parameters of ``models.training.fitting`` (AdamW
lr 3e-3, wd 1e-4, batch 512, up to 80 epochs, patience 40, class-weighted CE with label smoothing,
best validation epoch; distilled: T = 4, alpha 0.5 on the v4 teacher's logits) and calibrated by
``models.training.calibration.calibrate`` (validation-FPR budget 0.5 %). Reported on validation:
(a) calibrated on all of validation, scored there (what the shipped calibration does), and (b)
calibrated on one half of the validation machines and scored on the other half, both ways, pooled
(an honest healthy FPR). The test split is never touched.

``summary --fits A.npz,B.npz`` prints the table of one or more ``fit`` outputs.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

T0 = time.perf_counter()
SPLIT = (0.15, 0.2, 0)  # val fraction, test fraction, seed of the v4 models' split
N_VECTOR = 79


def log(msg: str) -> None:
    print(f"[{time.perf_counter() - T0:7.1f} s] {msg}", flush=True)


# --------------------------------------------------------------------------------------------- data
def save_run_data(ds, out: Path, name: str, split_modalities: bool) -> list[Path]:
    """The files ``scripts/train_gpu.py`` writes (``models.data.domain_data.load_run_data`` reads them)."""
    from scripts.train_gpu import save_data

    return save_data(ds, out, name, split_modalities)


def quantize(spectra: np.ndarray) -> np.ndarray:
    from pipeline.features.audio_physics import PROM_CLIP

    lo, hi = PROM_CLIP
    return np.round((np.clip(spectra, lo, hi) - lo) / (hi - lo) * 255.0).astype(np.uint8)


def dequantize(q: np.ndarray) -> np.ndarray:
    from pipeline.features.audio_physics import PROM_CLIP

    lo, hi = PROM_CLIP
    return (lo + q.astype(np.float32) * ((hi - lo) / 255.0)).astype(np.float32)


def cmd_render(args: argparse.Namespace) -> None:
    from models.data.domain_data import build_domain_dataset
    from models.data.samples import grouped_split_indices
    from pipeline.features.audio_orders import order_spectra

    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    ds = build_domain_dataset(args.per_class, args.assets, seed=11, domain="train", workers=args.workers,
                              audio_extra=order_spectra)
    log(f"train-domain data: {ds.n} samples, {len(set(ds.groups.tolist()))} machines")
    unseen = build_domain_dataset(args.unseen_per_class, args.unseen_assets, seed=23, domain="unseen",
                                  workers=args.workers)
    log(f"unseen-domain data: {unseen.n} samples")
    files = save_run_data(ds, out, "train", True) + save_run_data(unseen, out, "unseen", False)
    tr, va, te = grouped_split_indices(ds.groups, *SPLIT)
    np.savez_compressed(out / "split.npz", train=tr, val=va, test=te)
    assert ds.audio_extra is not None
    q = quantize(ds.audio_extra)
    half = (len(q) + 1) // 2
    for i, part in enumerate((q[:half], q[half:])):
        np.savez_compressed(out / f"order_spectra_{i}.npz", q=part)
    log("saved: " + ", ".join(f"{p.name} {p.stat().st_size / 2**20:.1f} MiB" for p in sorted(out.iterdir())
                              if p.is_file()) + f"; split {len(tr)}/{len(va)}/{len(te)}; files {len(files)}")


def load(data: Path) -> tuple[SimpleNamespace, np.ndarray, dict[str, np.ndarray]]:
    """(train-domain audio vectors + labels, order spectra float32, split). Reads
    ``data_train_audio.npz`` and ``data_train_plc_meta.npz`` (or a ``data_train_meta.npz`` without
    the PLC vectors: less to carry to the device)."""
    meta_file = data / "data_train_meta.npz"
    with np.load(meta_file if meta_file.exists() else data / "data_train_plc_meta.npz") as z:
        ds = SimpleNamespace(**{k: z[k] for k in ("y", "severity", "groups", "asset_types")})
        ds.classes = tuple(json.loads(str(z["meta"]))["classes"])
    with np.load(data / "data_train_audio.npz") as z:
        ds.audio = z["audio"]
    parts = []
    for i in (0, 1):
        with np.load(data / f"order_spectra_{i}.npz") as z:
            parts.append(z["q"])
    spectra = dequantize(np.concatenate(parts))
    with np.load(data / "split.npz") as z:
        split = {k: z[k] for k in ("train", "val", "test")}
    return ds, spectra, split


# ------------------------------------------------------------------------------------------ teacher
def cmd_teacher(args: argparse.Namespace) -> None:
    import torch

    from models.common.normalization import fit_standardizer
    from models.config import TrainConfig
    from models.families import family
    from models.training.loop import fit, predict_logits

    ds, _, split = load(args.data)
    cfg = TrainConfig(device=args.device, batch_size=512, patience=40, progress=False)
    cfg.teacher.hidden_size, cfg.teacher.num_layers, cfg.teacher.num_heads = 192, 6, 8
    cfg.teacher.intermediate_size, cfg.teacher.value_embedding, cfg.teacher.lr = 384, "mlp", 5e-4
    x = np.ascontiguousarray(ds.audio, np.float32)
    y = ds.y.astype(np.int64)
    tr, va = split["train"], split["val"]
    stats = fit_standardizer(x[tr], per_feature=True)
    torch.manual_seed(0)
    np.random.seed(0)
    teacher = family("audio").build_teacher(cfg.teacher, ds.classes, (x.shape[1],), stats).to(args.device)
    res = fit(teacher, x[tr], y[tr], x[va], y[va], ds.classes, epochs=400, lr=5e-4, weight_decay=cfg.teacher.weight_decay,
              batch_size=512, patience=40, seed=0, desc="audio teacher", progress=False, min_epochs=200,
              max_seconds=args.max_seconds)
    logits = predict_logits(teacher, x, batch_size=2048).astype(np.float32)
    np.save(args.out, logits)
    log(f"teacher: {res.epochs_run} epochs, best {res.best_epoch} (val macro-F1 {res.best_val_macro_f1:.3f}); "
        f"logits of {len(logits)} samples -> {args.out}")


# ----------------------------------------------------------------------------------------- students
def build_model(variant: str, n_classes: int, mean: np.ndarray, std: np.ndarray):
    import torch
    from torch import nn

    from models.common.normalization import InputStandardizer
    from models.config import StudentConfig
    from models.plc.student import VECTOR_CLIP, PlcStudent
    from pipeline.features.audio_orders import FAULT_BINS, ORDER_BINS

    standardizer = InputStandardizer(mean, std, clip=VECTOR_CLIP)
    if variant in ("mlp79", "mlp79_big", "mlp79_huge", "mlp_spec"):
        hidden = {"mlp79": 128, "mlp79_big": 512, "mlp79_huge": 1024, "mlp_spec": 256}[variant]
        return PlcStudent(StudentConfig(hidden=hidden), n_classes, len(mean), standardizer)

    def branch(channels: int, length: int, width: int) -> tuple[nn.Module, int]:
        body = nn.Sequential(
            nn.Conv1d(channels, width, 5, padding=2), nn.ReLU(), nn.MaxPool1d(2),
            nn.Conv1d(width, 2 * width, 5, padding=2), nn.ReLU(), nn.MaxPool1d(2),
            nn.Conv1d(2 * width, 2 * width, 3, padding=1), nn.ReLU(), nn.MaxPool1d(3), nn.Flatten())
        return body, 2 * width * (length // 12)

    class OrderSpectraNet(nn.Module):
        """Standardised [79-vector | shaft-order grids (2, 144) | fault grids (3, 96)] -> logits."""

        def __init__(self, use_vector: bool) -> None:
            super().__init__()
            self.standardizer = standardizer
            self.use_vector = use_vector
            self.orders, n_o = branch(2, ORDER_BINS, 16)
            self.faults, n_f = branch(3, FAULT_BINS, 16)
            self.orders_fc = nn.Sequential(nn.Linear(n_o, 64), nn.ReLU())
            self.faults_fc = nn.Sequential(nn.Linear(n_f, 64), nn.ReLU())
            n_in = 128 + (N_VECTOR if use_vector else 0)
            self.head = nn.Sequential(nn.Linear(n_in, 128), nn.ReLU(), nn.Dropout(0.1), nn.Linear(128, 64), nn.ReLU(),
                                      nn.Linear(64, n_classes))

        def forward(self, input: torch.Tensor) -> torch.Tensor:  # noqa: A002 - ONNX input name
            z = self.standardizer(input)
            s = z[:, N_VECTOR:]
            o = s[:, : 2 * ORDER_BINS].reshape(-1, 2, ORDER_BINS)
            f = s[:, 2 * ORDER_BINS:].reshape(-1, 3, FAULT_BINS)
            parts = [self.orders_fc(self.orders(o)), self.faults_fc(self.faults(f))]
            if self.use_vector:
                parts.insert(0, z[:, :N_VECTOR])
            return self.head(torch.cat(parts, dim=1))

    class CombBranch(nn.Module):
        """Learned fault combs on the fault-order grids: local peak filters, a +-2-bin tolerance
        (slip grows with the harmonic), then a conv dilated by one harmonic (24 bins) whose 4 taps
        weigh harmonics 1-4 at every deviation of the fundamental (-0.5 ... +0.5)."""

        def __init__(self) -> None:
            super().__init__()
            self.body = nn.Sequential(
                nn.Conv1d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool1d(5, stride=1, padding=2),
                nn.Conv1d(8, 16, 4, dilation=24), nn.ReLU(), nn.Flatten())
            self.out = 16 * (FAULT_BINS - 72)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.body(x)

    if variant in ("hybrid", "hybrid_reg"):
        return OrderSpectraNet(use_vector=True)
    if variant == "hybrid_comb":
        net = OrderSpectraNet(use_vector=True)
        comb = CombBranch()
        net.faults = comb
        net.faults_fc = nn.Sequential(nn.Linear(comb.out, 64), nn.ReLU())
        return net
    if variant == "cnn_spec":
        return OrderSpectraNet(use_vector=False)
    raise ValueError(f"unknown variant {variant!r}")


def standardizer_stats(x_train: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per feature for the 79 values; per spectrum (one scalar each) for the order spectra."""
    from models.common.normalization import fit_standardizer
    from pipeline.features.audio_orders import ORDER_SPECTRA_LAYOUT

    mean, std = fit_standardizer(x_train[:, :N_VECTOR], per_feature=True)
    means, stds = [mean], [std]
    start = N_VECTOR
    for _, n in ORDER_SPECTRA_LAYOUT:
        if start >= x_train.shape[1]:
            break
        block = x_train[:, start:start + n]
        means.append(np.full(n, float(block.mean()), np.float32))
        stds.append(np.full(n, float(block.std()) or 1.0, np.float32))
        start += n
    return np.concatenate(means), np.concatenate(stds)


def halves(groups: np.ndarray, seed: int = 7) -> np.ndarray:
    """Bool mask: validation machines of half A (the rest: half B)."""
    names = np.unique(groups)
    chosen = set(np.random.default_rng(seed).permutation(names)[: len(names) // 2].tolist())
    return np.array([g in chosen for g in groups])


def scores(logits: np.ndarray, y: np.ndarray, sev: np.ndarray, types: np.ndarray, groups: np.ndarray,
           classes: tuple[str, ...], budget: float = 0.005) -> dict[str, dict[str, float]]:
    from models.training.calibration import calibrate, softmax
    from models.training.evaluation import apply_mask, evaluate, possible_mask

    possible = possible_mask(types, classes)
    assert possible is not None

    def metrics(pred: np.ndarray, probs: np.ndarray, rows: np.ndarray) -> dict[str, float]:
        e = evaluate(probs, y[rows], sev[rows], classes, pred=pred)
        return {"bearing": e.recall_past_moderate["bearing_wear"], "cavitation": e.recall_past_moderate["cavitation"],
                "fpr": e.healthy_fpr, "f1pm": e.macro_f1_past_moderate, "f1": e.macro_f1}

    cal = calibrate(logits, y, budget, severity=sev, possible=possible)
    probs = apply_mask(softmax(cal.apply(logits)), possible)
    out = {"val": metrics(probs.argmax(1), probs, np.arange(len(y)))}
    a = halves(groups)
    pooled = np.zeros_like(probs)
    for fit_rows, score_rows in ((a, ~a), (~a, a)):
        c = calibrate(logits[fit_rows], y[fit_rows], budget, severity=sev[fit_rows], possible=possible[fit_rows])
        pooled[score_rows] = apply_mask(softmax(c.apply(logits[score_rows])), possible[score_rows])
    out["heldout"] = metrics(pooled.argmax(1), pooled, np.arange(len(y)))
    return out


def cmd_fit(args: argparse.Namespace) -> None:
    import torch

    from models.training.loop import fit, predict_logits

    ds, spectra, split = load(args.data)
    teacher = np.load(args.teacher_logits) if args.teacher_logits else None
    tr, va = split["train"], split["val"]
    y = ds.y.astype(np.int64)
    results: dict[str, object] = {}
    arrays: dict[str, np.ndarray] = {"val_index": va}
    if args.device.startswith("cuda"):
        torch.backends.cuda.matmul.allow_tf32 = True
    for variant in args.variants.split(","):
        x = np.ascontiguousarray(ds.audio, np.float32) if variant.startswith("mlp79") else \
            np.ascontiguousarray(np.concatenate([ds.audio, spectra], axis=1), np.float32)
        mean, std = standardizer_stats(x[tr])
        for distilled in (False, True) if args.distill == "both" else (args.distill == "yes",):
            if distilled and teacher is None:
                continue
            for seed in (int(s) for s in args.seeds.split(",")):
                name = f"{variant}{'_distilled' if distilled else ''}_s{seed}"
                t = time.perf_counter()
                torch.manual_seed(seed + 1)
                np.random.seed(seed + 1)
                model = build_model(variant, len(ds.classes), mean, std).to(args.device)
                wd = 1e-2 if variant.endswith("_reg") else 1e-4
                res = fit(model, x[tr], y[tr], x[va], y[va], ds.classes, epochs=80, lr=3e-3, weight_decay=wd,
                          batch_size=512, patience=40, seed=seed + 1, desc=name, progress=False, min_epochs=26,
                          teacher_logits=teacher[tr] if distilled else None, temperature=4.0,
                          alpha=0.5 if distilled else 0.0)
                logits = predict_logits(model, x[va], batch_size=2048)
                arrays[name] = logits.astype(np.float32)
                sc = scores(logits, y[va], ds.severity[va], ds.asset_types[va], ds.groups[va], ds.classes)
                results[name] = {"scores": sc, "epochs": res.epochs_run, "best_epoch": res.best_epoch,
                                 "params": int(sum(p.numel() for p in model.parameters())),
                                 "seconds": round(time.perf_counter() - t, 1)}
                v, h = sc["val"], sc["heldout"]
                log(f"{name}: bearing {v['bearing']:.3f} cav {v['cavitation']:.3f} fpr {v['fpr']:.4f} "
                    f"f1pm {v['f1pm']:.3f} | held-out halves bearing {h['bearing']:.3f} fpr {h['fpr']:.4f} "
                    f"({res.epochs_run} ep, best {res.best_epoch}, {results[name]['params']} params, "
                    f"{results[name]['seconds']} s)")
                np.savez_compressed(args.out, results=np.asarray(json.dumps(results)), **arrays)
    if teacher is not None:
        sc = scores(teacher[va], y[va], ds.severity[va], ds.asset_types[va], ds.groups[va], ds.classes)
        results["teacher_v4"] = {"scores": sc}
        log(f"teacher: bearing {sc['val']['bearing']:.3f} fpr {sc['val']['fpr']:.4f}")
    np.savez_compressed(args.out, results=np.asarray(json.dumps(results)), **arrays)
    log(f"-> {args.out}")


def recall_at_fpr(score: np.ndarray, y: np.ndarray, severity: np.ndarray, fpr: float) -> float:
    """Bearing recall past moderate severity at the score threshold that flags ``fpr`` of the healthy rows."""
    threshold = np.quantile(score[y == 0], 1.0 - fpr)
    bearing = (y == 1) & (severity >= 0.5)
    return float(np.mean(score[bearing] > threshold))


def machine_healthy_median(x: np.ndarray, y: np.ndarray, groups: np.ndarray, at_most: int = 8) -> np.ndarray:
    """Per row: the median vector of up to ``at_most`` *other* healthy clips of the same machine
    (an idealised per-machine audio baseline; the row itself when the machine has none)."""
    out = x.copy()
    for g in np.unique(groups):
        rows = np.flatnonzero(groups == g)
        healthy = rows[y[rows] == 0]
        for i in rows:
            others = healthy[healthy != i][:at_most]
            if len(others):
                out[i] = np.median(x[others], axis=0)
    return out


def cmd_probe(args: argparse.Namespace) -> None:
    """Is the information there at all? Healthy-vs-bearing detectors of another kind (logistic
    regression, gradient-boosted trees; CPU, seconds) on the 79 values with and without the order
    spectra and with a per-machine healthy baseline; bearing recall past moderate at 1 % / 0.5 %
    healthy FPR on validation (threshold from validation's healthy rows)."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    ds, spectra, split = load(args.data)
    tr, va = split["train"], split["val"]
    y, sev = ds.y, ds.severity
    x79 = ds.audio.astype(np.float64)
    inputs = {"79 values": x79, "79 values + order spectra": np.concatenate([x79, spectra], axis=1),
              "order spectra only": spectra.astype(np.float64),
              "79 values + change vs the machine's healthy median":
                  np.concatenate([x79, x79 - machine_healthy_median(x79, y, ds.groups)], axis=1)}
    keep_tr, keep_va = np.isin(y[tr], (0, 1)), np.isin(y[va], (0, 1))
    y_tr, y_va, s_va = y[tr][keep_tr], y[va][keep_va], sev[va][keep_va]
    pooled = np.zeros(0)
    print("| input | learner | bearing recall past moderate @ 1 % / 0.5 % healthy FPR (validation) |")
    print("|---|---|---|")
    for name, x in inputs.items():
        if args.aggregation_only and name != "79 values":
            continue
        x_tr, x_va = x[tr][keep_tr], x[va][keep_va]
        scaler = StandardScaler().fit(x_tr)
        learners = {"logistic regression (C 0.1)": lambda: LogisticRegression(C=0.1, max_iter=2000).fit(
            scaler.transform(x_tr), y_tr).decision_function(scaler.transform(x_va))}
        if name != "order spectra only":
            learners["gradient-boosted trees"] = lambda: HistGradientBoostingClassifier(
                max_iter=300, learning_rate=0.05, early_stopping=True, random_state=0).fit(x_tr, y_tr).decision_function(x_va)
        for learner, run in learners.items():
            if args.aggregation_only and not learner.startswith("gradient"):
                continue
            score = run()
            print(f"| {name} | {learner} | {recall_at_fpr(score, y_va, s_va, 0.01):.3f} / "
                  f"{recall_at_fpr(score, y_va, s_va, 0.005):.3f} |", flush=True)
            if name == "79 values" and learner == "gradient-boosted trees":
                pooled = score
                threshold = np.quantile(score[y_va == 0], 0.99)
                for lo, hi in ((0.5, 0.65), (0.65, 0.8), (0.8, 1.01)):
                    rows = (y_va == 1) & (s_va >= lo) & (s_va < hi)
                    print(f"| 79 values, bearing severity {lo}-{min(hi, 1.0)} ({int(rows.sum())} clips) | {learner} | "
                          f"{np.mean(score[rows] > threshold):.3f} at 1 % |", flush=True)
    # several clips of one machine in one state: the mean score of k clips (each clip with k - 1 others
    # of the same machine in the same state: healthy, or bearing wear past moderate severity); only
    # machine-states with at least 4 clips, so that every k is scored on the same clips
    groups_va = ds.groups[va][keep_va]
    rng = np.random.default_rng(0)
    sets = []
    for g in np.unique(groups_va):
        for label, rows in ((0, np.flatnonzero((groups_va == g) & (y_va == 0))),
                            (1, np.flatnonzero((groups_va == g) & (y_va == 1) & (s_va >= 0.5)))):
            if len(rows) >= 4:
                sets += [(label, int(i), rows[rows != i]) for i in rows]
    lab = np.asarray([label for label, _, _ in sets])
    for k in (1, 2, 4):
        m = np.asarray([np.mean(pooled[np.append(i, rng.choice(others, k - 1, replace=False))])
                        for _, i, others in sets])
        print(f"| mean score of {k} clip(s) of the same machine and state (79 values, gradient-boosted trees; "
              f"{int(np.sum(lab == 0))} healthy / {int(np.sum(lab == 1))} bearing clips of machine-states with >= 4 clips) | "
              f"{recall_at_fpr(m, lab, np.ones(len(lab)), 0.01):.3f} / {recall_at_fpr(m, lab, np.ones(len(lab)), 0.005):.3f} |",
              flush=True)


def cmd_merge(args: argparse.Namespace) -> None:
    """One file of several ``fit`` outputs (+ the teacher logits): the device returns few files."""
    results: dict = {}
    arrays: dict[str, np.ndarray] = {}
    for path in args.fits.split(","):
        if not Path(path).exists():
            log(f"missing {path}")
            continue
        with np.load(path) as z:
            results.update(json.loads(str(z["results"])))
            arrays.update({k: z[k] for k in z.files if k != "results"})
    if args.teacher_logits and args.teacher_logits.exists():
        arrays["teacher_logits"] = np.load(args.teacher_logits)
    np.savez_compressed(args.out, results=np.asarray(json.dumps(results)), **arrays)
    log(f"merged {len(results)} runs -> {args.out}")


def cmd_summary(args: argparse.Namespace) -> None:
    """Mean over seeds (per-seed bearing recall in brackets) of one or more ``fit`` / ``merge`` outputs."""
    import re
    from collections import defaultdict

    rows: dict[str, dict] = {}
    for path in args.fits.split(","):
        with np.load(path) as z:
            rows.update(json.loads(str(z["results"])))
    runs: dict[str, list[dict]] = defaultdict(list)
    for name, r in sorted(rows.items()):
        m = re.match(r"(.*)_s(\d+)$", name)
        runs[m.group(1) if m else name].append(r)
    print("| model | params | seeds | val bearing recall past moderate | val cavitation | val macro-F1 past moderate "
          "| held-out halves: bearing / healthy FPR |")
    print("|---|---|---|---|---|---|---|")
    for name, rs in runs.items():
        v = {k: [r["scores"]["val"][k] for r in rs] for k in ("bearing", "cavitation", "f1pm")}
        h = {k: [r["scores"]["heldout"][k] for r in rs] for k in ("bearing", "fpr")}
        per_seed = ", ".join(f"{b:.3f}" for b in v["bearing"]) if len(rs) > 1 else ""
        print(f"| {name} | {rs[0].get('params', '1.85 M')} | {len(rs)} | {np.mean(v['bearing']):.3f}"
              f"{f' ({per_seed})' if per_seed else ''} | {np.mean(v['cavitation']):.3f} | {np.mean(v['f1pm']):.3f} | "
              f"{np.mean(h['bearing']):.3f} / {100 * np.mean(h['fpr']):.2f} % |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("render")
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--workers", type=int, default=2)
    r.add_argument("--per-class", type=int, default=6000)
    r.add_argument("--assets", type=int, default=900)
    r.add_argument("--unseen-per-class", type=int, default=1500)
    r.add_argument("--unseen-assets", type=int, default=240)
    t = sub.add_parser("teacher")
    t.add_argument("--data", type=Path, required=True)
    t.add_argument("--out", type=Path, required=True)
    t.add_argument("--device", default="cuda")
    t.add_argument("--max-seconds", type=float, default=150.0)
    f = sub.add_parser("fit")
    f.add_argument("--data", type=Path, required=True)
    f.add_argument("--out", type=Path, required=True)
    f.add_argument("--teacher-logits", type=Path, default=None)
    f.add_argument("--variants", default="mlp79,hybrid")
    f.add_argument("--distill", choices=("no", "yes", "both"), default="no")
    f.add_argument("--seeds", default="0,1")
    f.add_argument("--device", default="cuda")
    s = sub.add_parser("summary")
    s.add_argument("--fits", required=True)
    m = sub.add_parser("merge")
    m.add_argument("--fits", required=True)
    m.add_argument("--teacher-logits", type=Path, default=None)
    m.add_argument("--out", type=Path, required=True)
    pr = sub.add_parser("probe")
    pr.add_argument("--data", type=Path, required=True)
    pr.add_argument("--aggregation-only", action="store_true", help="only the several-clips rows")
    args = parser.parse_args()
    {"render": cmd_render, "teacher": cmd_teacher, "fit": cmd_fit, "summary": cmd_summary, "merge": cmd_merge,
     "probe": cmd_probe}[args.cmd](args)


if __name__ == "__main__":
    main()
