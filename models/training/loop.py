"""Supervised training and distillation loops with early stopping on validation macro-F1."""

from __future__ import annotations

import copy
import logging
import math
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from tqdm.auto import tqdm

from models.training.metrics import classification_report

log = logging.getLogger(__name__)


@dataclass
class FitResult:
    """What a training run did: epochs run, best epoch, per-epoch history."""

    epochs_run: int
    best_epoch: int
    best_val_macro_f1: float
    stopped_early: bool
    history: list[dict[str, float]] = field(default_factory=list)


def model_device(model: nn.Module) -> torch.device:
    return next(model.parameters()).device


@torch.no_grad()
def predict_logits(model: nn.Module, inputs: np.ndarray, batch_size: int = 256) -> np.ndarray:
    """Eval-mode logits of ``inputs`` (n, ...), computed on the model's device."""
    model.eval()
    device = model_device(model)
    outs = [
        model(torch.from_numpy(np.ascontiguousarray(inputs[i : i + batch_size], np.float32)).to(device)).cpu().numpy()
        for i in range(0, len(inputs), batch_size)
    ]
    return np.concatenate(outs) if outs else np.zeros((0, 0), np.float32)


def distillation_loss(
    student_logits: torch.Tensor, teacher_logits: torch.Tensor, labels: torch.Tensor, temperature: float, alpha: float
) -> torch.Tensor:
    """Hinton distillation: ``alpha * T² * KL(teacher_T || student_T) + (1 - alpha) * CE(labels)``.

    >>> z = torch.tensor([[2.0, 0.0]]); y = torch.tensor([0])
    >>> float(distillation_loss(z, z, y, 4.0, 1.0))
    0.0
    """
    soft = F.kl_div(
        F.log_softmax(student_logits / temperature, dim=1),
        F.log_softmax(teacher_logits / temperature, dim=1),
        reduction="batchmean",
        log_target=True,
    ) * (temperature * temperature)
    hard = F.cross_entropy(student_logits, labels)
    return alpha * soft + (1.0 - alpha) * hard


def fit(
    model: nn.Module,
    x_train: np.ndarray,
    y_train: np.ndarray,
    x_val: np.ndarray,
    y_val: np.ndarray,
    classes: tuple[str, ...],
    *,
    epochs: int,
    lr: float,
    weight_decay: float,
    batch_size: int,
    patience: int,
    seed: int,
    desc: str,
    progress: bool,
    teacher_logits: np.ndarray | None = None,
    temperature: float = 4.0,
    alpha: float = 0.0,
    min_epochs: int | None = None,
    max_seconds: float | None = None,
) -> FitResult:
    """Train ``model`` in place (AdamW, cosine LR, class-balanced CE), keep the best val epoch.

    With ``teacher_logits`` (aligned with ``x_train``) the loss is :func:`distillation_loss`. A model
    with ``member_logits`` (``models.plc.student.StudentEnsemble``) gets that loss once per member,
    summed, and early stopping reads the ensemble's (mean-logit) validation macro-F1.
    Stops when val macro-F1 has not improved for ``patience`` epochs, but not before
    ``min_epochs`` (default: half of ``epochs``; transformers from scratch start slowly and a
    noisy early peak must not end their training); restores the best weights. ``max_seconds``
    ends training after that wall time (a GPU lease is finite), keeping the best epoch so far.
    """
    import time

    started = time.perf_counter()
    min_epochs = epochs // 2 if min_epochs is None else min_epochs
    generator = torch.Generator().manual_seed(seed)
    counts = np.bincount(y_train, minlength=len(classes)).astype(np.float64)
    weights = torch.tensor(
        np.where(counts > 0, counts.sum() / np.maximum(counts, 1) / max((counts > 0).sum(), 1), 0.0), dtype=torch.float32
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    steps_per_epoch = max(1, math.ceil(len(x_train) / batch_size))
    total = max(1, epochs * steps_per_epoch)
    warmup = min(steps_per_epoch, total // 10 + 1)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * min(s, total) / total))
    )
    device = model_device(model)
    weights = weights.to(device)
    x_t = torch.from_numpy(np.ascontiguousarray(x_train, np.float32)).to(device)
    y_t = torch.from_numpy(np.asarray(y_train, np.int64)).to(device)
    t_t = torch.from_numpy(np.asarray(teacher_logits, np.float32)).to(device) if teacher_logits is not None else None
    best_f1, best_epoch, best_state, history = -1.0, 0, copy.deepcopy(model.state_dict()), []
    # an ensemble (``member_logits``) gives each member its own loss; their sum trains them independently
    member_logits = getattr(model, "member_logits", None)
    bar = tqdm(range(1, epochs + 1), desc=desc, disable=not progress, leave=False, unit="epoch")
    stopped = False
    for epoch in bar:
        model.train()
        order = torch.randperm(len(x_t), generator=generator).to(device)
        running = 0.0
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            if len(idx) < 2 and len(order) > 1:
                continue  # BatchNorm needs more than one sample
            outputs = member_logits(x_t[idx]) if member_logits is not None else model(x_t[idx]).unsqueeze(0)
            loss = torch.stack([
                distillation_loss(logits, t_t[idx], y_t[idx], temperature, alpha) if t_t is not None
                else F.cross_entropy(logits, y_t[idx], weight=weights, label_smoothing=0.05)
                for logits in outputs
            ]).sum()
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 5.0 * math.sqrt(len(outputs)))  # ~5 per member
            optimizer.step()
            scheduler.step()
            running += float(loss.detach()) / len(outputs) * len(idx)
        val_pred = predict_logits(model, x_val).argmax(1)
        val_f1 = classification_report(y_val, val_pred, classes).macro_f1
        history.append({"epoch": epoch, "loss": running / max(len(order), 1), "val_macro_f1": val_f1})
        bar.set_postfix(loss=f"{running / max(len(order), 1):.3f}", val_f1=f"{val_f1:.3f}")
        log.info("%s epoch %d loss %.4f val macro-F1 %.4f", desc, epoch, running / max(len(order), 1), val_f1)
        if val_f1 > best_f1 + 1e-4:
            best_f1, best_epoch, best_state = val_f1, epoch, copy.deepcopy(model.state_dict())
        elif epoch - best_epoch >= patience and epoch >= min_epochs:
            stopped = True
            break
        if max_seconds is not None and time.perf_counter() - started > max_seconds:
            log.warning("%s: stopped after %d epochs at the %.0f s time limit", desc, epoch, max_seconds)
            stopped = True
            break
    bar.close()
    model.load_state_dict(best_state)
    model.eval()
    return FitResult(len(history), best_epoch, max(best_f1, 0.0), stopped, history)


