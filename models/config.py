"""Training configuration (a pydantic model the lead can nest into ``Settings`` as ``models``).

>>> c = TrainConfig()
>>> c.gates.int8_max_drop, c.gates.student_max_drop
(0.01, 0.05)
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field


class TeacherConfig(BaseModel):
    """Transformer teacher built from a Hugging Face config (no hub needed)."""

    model_config = ConfigDict(extra="forbid")

    checkpoint: Path | None = Field(
        default=None,
        description="A local Hugging Face checkpoint directory (save_pretrained layout) to start from "
        "instead of random weights; its architecture must match the modality (ViT / AST / "
        "linewatch feature-token transformer).",
    )
    hidden_size: int = Field(default=128, ge=8)
    num_layers: int = Field(default=3, ge=1)
    num_heads: int = Field(default=8, ge=1)
    intermediate_size: int = Field(default=256, ge=8)
    dropout: float = Field(default=0.1, ge=0.0, lt=1.0)
    value_embedding: str = Field(default="linear", pattern="^(linear|mlp)$", description="Feature-token "
                                 "transformer: how a value becomes a token (linear, or a per-feature GELU MLP).")
    max_seconds: float | None = Field(default=None, gt=0, description="Stop training after this wall time "
                                      "(best validation epoch kept); None: epochs / early stopping only.")
    thermal_patch: int = Field(default=20, ge=2, description="ViT patch size on 120x160 frames (frame ablation).")
    audio_patch: int = Field(default=16, ge=2, description="AST patch size on the log-mel (log-mel ablation).")
    audio_stride: int = Field(default=10, ge=1, description="AST frequency and time stride.")
    epochs: int = Field(default=60, ge=0, description="0 with a checkpoint: use it as-is.")
    min_epochs: int | None = Field(default=None, ge=0, description="No early stop before this (None: epochs // 2).")
    lr: float = Field(default=5e-4, gt=0)
    weight_decay: float = Field(default=0.05, ge=0)


class StudentConfig(BaseModel):
    """Small CNN (thermal, audio) / MLP (plc) sized for Jetson-class devices."""

    model_config = ConfigDict(extra="forbid")

    width: int = Field(default=16, ge=4, description="Channels of the first conv block (image CNNs, ablation).")
    hidden: int = Field(default=128, ge=8, description="Hidden units of the MLP over the model-input vector.")
    members: int = Field(
        default=1, ge=1, le=32,
        description="MLPs in the vector student: >1 trains that many from different initial weights, each with its "
        "own loss, and serves the mean of their logits in one graph (models/plc/student.py).",
    )
    dropout: float = Field(default=0.1, ge=0.0, lt=1.0)
    epochs: int = Field(default=60, ge=1)
    min_epochs: int | None = Field(default=None, ge=0, description="No early stop before this (None: epochs // 2).")
    lr: float = Field(default=3e-3, gt=0)
    weight_decay: float = Field(default=1e-4, ge=0)
    temperature: float = Field(default=4.0, gt=0, description="Distillation temperature.")
    alpha: float = Field(
        default=0.5, ge=0.0, le=1.0, description="Weight of the soft-target loss (1 - alpha: hard labels)."
    )


class QuantizeConfig(BaseModel):
    """ONNX Runtime static QDQ quantization."""

    model_config = ConfigDict(extra="forbid")

    calibration_samples: int = Field(default=256, ge=1, description="Drawn from the training split.")
    per_channel: bool = True
    reduce_range: bool = Field(
        default=True,
        description="7-bit weights in the cpu flavour. Needed on x86 CPUs without VNNI (like the training "
        "machine), where ORT's u8*s8 kernels saturate int16 pair sums: measured audio student macro-F1 "
        "0.40 with 8-bit vs 0.505 with 7-bit weights (FP32 0.49).",
    )
    calibration_method: str = Field(
        default="Percentile", pattern="^(MinMax|Percentile)$",
        description="Activation range calibration: Percentile (below) or MinMax. Thermal student, "
        "tensorrt flavour: MinMax 0.552 / 0.543 (256 / 512 samples) vs Percentile 0.572 (FP32 0.566).",
    )
    percentile: float = Field(default=99.999, gt=90.0, le=100.0, description="For Percentile calibration.")
    keep_last_layer_float: bool = Field(
        default=True, description="Leave the classifier layer in FP32 so logits are not clipped."
    )


class GateConfig(BaseModel):
    """Accuracy gates checked before a version is registered (test split, scored once).

    Absolute floors are guard rails set before training, not tuned on the test split: a model
    below them is not worth serving whatever it replaces. Visible classes per modality:
    ``models.training.evaluation.VISIBLE_CLASSES``; "past moderate" = severity >= 0.5.
    """

    model_config = ConfigDict(extra="forbid")

    int8_max_drop: float = Field(default=0.01, description="INT8 >= FP32 student - this (both flavours).")
    student_max_drop: float = Field(default=0.05, description="Student >= teacher - this.")
    parity_atol: float = Field(default=1e-3, gt=0, description="|ORT FP32 - torch| logits tolerance.")
    min_macro_f1: float = Field(default=0.5, description="Floor: macro-F1 past moderate severity (healthy + severe).")
    min_visible_recall: float = Field(default=0.6, description="Floor: recall past moderate severity of each "
                                      "class the modality can see (evaluation.VISIBLE_CLASSES).")
    max_healthy_fpr: float = Field(default=0.03, description="Floor: healthy machines flagged as faulty at most this.")
    regression_tolerance: float = Field(default=0.01, description="No-regression: the new serving model may lose "
                                        "at most this macro-F1 against the registered latest (else --force).")


class TrainConfig(BaseModel):
    """Everything ``train_modality`` needs besides the data."""

    model_config = ConfigDict(extra="forbid")

    seed: int = 0
    batch_size: int = Field(default=64, ge=1)
    val_fraction: float = Field(default=0.15, gt=0, lt=0.5)
    test_fraction: float = Field(default=0.2, gt=0, lt=0.5)
    patience: int = Field(default=8, ge=1, description="Early stopping: epochs without val macro-F1 gain.")
    threads: int = Field(default=1, ge=1, description="torch intra-op threads while training.")
    device: str = Field(default="cpu", description="torch device for training ('cpu', 'cuda'); export runs on CPU.")
    export_teacher: bool = Field(default=True, description="Also write teacher.onnx (server GPU path).")
    save_teacher_checkpoint: bool = Field(default=True, description="save_pretrained the teacher.")
    reference_samples: int = Field(default=256, ge=1, description="Training features kept for drift.")
    latency_runs: int = Field(default=50, ge=1, description="ORT runs per latency measurement in the card.")
    progress: bool = True
    val_fpr_budget: float = Field(default=0.005, ge=0.0, lt=0.5, description="Healthy false-positive rate the "
                                  "calibration allows on the validation split (normal-class prior shift).")
    distillation: str = Field(default="auto", pattern="^(auto|always|never)$", description="auto: keep the "
                              "distilled student only where it beats the label-only student on validation.")
    teacher: TeacherConfig = Field(default_factory=TeacherConfig)
    student: StudentConfig = Field(default_factory=StudentConfig)
    quantize: QuantizeConfig = Field(default_factory=QuantizeConfig)
    gates: GateConfig = Field(default_factory=GateConfig)


def default_train_config(modality: str, **overrides: object) -> TrainConfig:
    """The defaults of ``modality`` (what ``linewatch train`` and the shipped models use).

    Every modality reads its physics-normalised vector (features v3) with the same model
    families, so the defaults are shared; the dict form keeps per-modality overrides possible.

    >>> default_train_config("audio").teacher.hidden_size
    128
    """
    from models.specs import check_modality

    check_modality(modality)
    return TrainConfig(**overrides)  # type: ignore[arg-type]
