"""A Hugging Face (``PreTrainedModel``) transformer over a window's feature vector.

The stream carries one feature vector per 10 s PLC window (``plc_window_features``), not the
raw 10 Hz tag series, so a patching time-series model (PatchTST) has no time axis to patch.
This is an FT-Transformer-style encoder instead: every scalar feature becomes a token
(``value * w_f + b_f``), a [CLS] token attends over them, a linear head classifies it.
It is a regular ``transformers`` model: ``save_pretrained`` / ``from_pretrained`` work.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from transformers import PretrainedConfig, PreTrainedModel
from transformers.modeling_outputs import SequenceClassifierOutput


class FeatureTokenTransformerConfig(PretrainedConfig):
    """Sizes of :class:`FeatureTokenTransformerForClassification`."""

    model_type = "linewatch_feature_token_transformer"

    def __init__(
        self,
        num_features: int = 32,
        hidden_size: int = 64,
        num_hidden_layers: int = 3,
        num_attention_heads: int = 4,
        intermediate_size: int = 128,
        hidden_dropout_prob: float = 0.1,
        layer_norm_eps: float = 1e-6,
        value_embedding: str = "linear",
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        self.value_embedding = value_embedding
        self.num_features = num_features
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.hidden_dropout_prob = hidden_dropout_prob
        self.layer_norm_eps = layer_norm_eps


class _Block(nn.Module):
    """Pre-norm transformer block (scaled-dot-product attention + GELU MLP)."""

    def __init__(self, config: FeatureTokenTransformerConfig) -> None:
        super().__init__()
        d = config.hidden_size
        self.heads = config.num_attention_heads
        self.norm1 = nn.LayerNorm(d, eps=config.layer_norm_eps)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.norm2 = nn.LayerNorm(d, eps=config.layer_norm_eps)
        self.mlp = nn.Sequential(
            nn.Linear(d, config.intermediate_size), nn.GELU(), nn.Linear(config.intermediate_size, d)
        )
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).reshape(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, n, d)
        x = x + self.dropout(self.proj(a))
        return x + self.dropout(self.mlp(self.norm2(x)))


class FeatureTokenTransformerForClassification(PreTrainedModel):
    """``input_values (B, num_features)`` (already standardised) → logits ``(B, num_labels)``."""

    config_class = FeatureTokenTransformerConfig
    base_model_prefix = "feature_transformer"
    main_input_name = "input_values"

    def __init__(self, config: FeatureTokenTransformerConfig) -> None:
        super().__init__(config)
        d = config.hidden_size
        self.value_weight = nn.Parameter(torch.randn(config.num_features, d) * 0.1)
        self.value_bias = nn.Parameter(torch.zeros(config.num_features, d))
        # "mlp": a per-feature nonlinear embedding (value -> GELU(v w_f + b_f) -> shared linear + the
        # feature's own offset), which lets attention see thresholds on a value, not only its size
        # (Gorishniy et al. 2022, "On embeddings for numerical features in tabular deep learning")
        self.embed_mlp = config.value_embedding == "mlp"
        if self.embed_mlp:
            self.value_proj = nn.Linear(d, d)
            self.feature_offset = nn.Parameter(torch.zeros(config.num_features, d))
        self.cls_token = nn.Parameter(torch.zeros(1, 1, d))
        self.blocks = nn.ModuleList(_Block(config) for _ in range(config.num_hidden_layers))
        self.norm = nn.LayerNorm(d, eps=config.layer_norm_eps)
        self.classifier = nn.Linear(d, config.num_labels)
        self.post_init()

    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.trunc_normal_(module.weight, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)

    def forward(self, input_values: torch.Tensor, labels: torch.Tensor | None = None) -> SequenceClassifierOutput:
        tokens = input_values.unsqueeze(-1) * self.value_weight + self.value_bias
        if self.embed_mlp:
            tokens = self.value_proj(F.gelu(tokens)) + self.feature_offset
        x = torch.cat([self.cls_token.expand(tokens.shape[0], -1, -1), tokens], dim=1)
        for block in self.blocks:
            x = block(x)
        logits = self.classifier(self.norm(x[:, 0]))
        loss = F.cross_entropy(logits, labels) if labels is not None else None
        return SequenceClassifierOutput(loss=loss, logits=logits)
