"""Settings of ``linewatch serve explain`` (governance explanations), nested in ``Settings`` as ``explain``.

Plain pydantic, no stage imports (core must not import a stage). Environment variables follow the
usual scheme, e.g. ``LINEWATCH_EXPLAIN__NUM_SAMPLES__THERMAL=300``, ``LINEWATCH_EXPLAIN__TOP_K=5``.

>>> s = ExplainSettings()
>>> s.num_samples["plc"] > 0 and len(s.seeds) >= 3
True
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, field_validator

from linewatch.service_settings import WorkerSettings


def _default_samples() -> dict[str, int]:
    # bench/bench_explain.py: mean top-5 Jaccard over 3 seeds 0.86-0.89 at 3,000 (0.80-0.87 at 2,000), ~30-40 ms.
    # Thermal v7 (2026-12-06) needs more on the plant line's faults: 0.72 at 3,000, 0.74 at 6,000, 0.87 at
    # 10,000 (tests/governance/test_explain.py; its own reference fault rows 0.93 / 0.94 / 0.98)
    return {"plc": 3000, "thermal": 10000, "audio": 3000}


class ExplainSettings(WorkerSettings):
    """LIME sample counts, seeds and top-k, the rules file and where heatmaps go."""

    num_samples: dict[str, int] = Field(
        default_factory=_default_samples,
        description="LIME perturbation samples per seed and modality (plc, thermal, audio).")
    seeds: tuple[int, ...] = Field(
        (0, 1, 2), description="LIME runs once per seed; weights are averaged, stability is the mean pairwise "
        "top-k Jaccard overlap across the runs (at least 3 seeds for a stability score).")
    top_k: int = Field(5, ge=1, le=50, description="Features reported per modality (and compared for stability).")
    rules: Path | None = Field(None, description="Rules YAML. Unset: the shipped governance/rules/default.yaml.")
    output_dir: Path | None = Field(None, description="Heatmap PNGs. Unset: <data_dir>/explanations.")
    assets: Path | None = Field(None, description="assets.json with the thermal region layout. Unset: "
                                "<landing>/assets.json when present.")
    registry: Path | None = Field(None, description="Model registry root. Unset: the shipped models/default.")
    min_interval_ms: int = Field(
        30_000, ge=0, description="While one fault stays raised on an asset, explain its verdicts at most this "
        "often (event time); the first raised verdict of a fault is always explained. 0: explain every one.")
    write_png: bool = Field(True, description="Write heatmap / feature-bar PNGs (the float32 maps always travel "
                            "in the Explanation entry).")
    retention: int = Field(10_000, ge=100, description="Approximate MAXLEN of lw:explanations: an entry carries "
                           "the float32 thermal and audio maps (~100 KB), so fewer are kept than of other streams.")
    lease_ttl_ms: int = Field(30_000, ge=200, description="A shard's lease; longer than the other services' "
                              "because one batch of LIME runs takes seconds, not milliseconds.")
    max_batch: int = Field(4, ge=1, le=256, description="Verdicts per handled batch (LIME is slow; keep small).")

    @field_validator("num_samples")
    @classmethod
    def _positive(cls, value: dict[str, int]) -> dict[str, int]:
        bad = {k: v for k, v in value.items() if v < 50}
        if bad:
            raise ValueError(f"num_samples must be >= 50 per modality (LIME fits a linear model on them): {bad}")
        return value
