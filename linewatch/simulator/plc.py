"""PLC tag measurement and historian-style serialisation.

:func:`measure` adds the sensor layer to the physics: per-asset calibration
errors, drifting RTD offsets, measurement noise, rounding to display precision
and sample quality (``Good`` / ``Uncertain`` / ``Bad``; a ``Bad`` sample holds a
rail value - 0 or the sensor's full scale - and must be discarded by
consumers).  :func:`format_lines` writes the long ("one tag sample per row")
format of ``plc/plc-<ASSET>-<stamp>.csv|jsonl``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .assets import Asset
from .config import DifficultyProfile, SimulatorConfig
from .drift import DriftState
from .noise import hash_normal, hash_uniform, stream_key
from .physics import PhysicsBlock
from .tags import PLC_TAGS, QUALITIES, TAG_DECIMALS, TAG_UNITS

CSV_HEADER = "timestamp,tag,value,quality,unit"
GOOD, UNCERTAIN, BAD = 0, 1, 2
#: Tags whose measurement noise an asset may scale (``Asset.extra["<tag>_noise"]``, default 1: a
#: damped transmitter to a noisy one; the domain fleets draw it per machine). The vibration
#: transmitter's is ``vibration_noise`` (multiplicative); the run state has no noise.
SENSOR_NOISE_TAGS: tuple[str, ...] = ("motor_current_a", "speed_rpm", "bearing_temp_c", "winding_temp_c", "pressure_bar")


@dataclass
class PlcSamples:
    """Measured tag values of one asset on consecutive ticks.

    ``values[i, k]`` is tag ``PLC_TAGS[k]`` at time ``t[i]`` (seconds since the
    run/sample epoch), already rounded as written; ``quality`` holds indices
    into ``QUALITIES``.
    """

    asset_id: str
    t: np.ndarray
    values: np.ndarray
    quality: np.ndarray

    def __len__(self) -> int:
        return int(self.t.shape[0])

    def select(self, mask: np.ndarray) -> PlcSamples:
        """Rows where ``mask`` is true."""
        return PlcSamples(self.asset_id, self.t[mask], self.values[mask], self.quality[mask])

    def column(self, tag: str) -> np.ndarray:
        """Values of one tag."""
        return self.values[:, PLC_TAGS.index(tag)]


def measure(asset: Asset, block: PhysicsBlock, drift: DriftState, profile: DifficultyProfile,
            config: SimulatorConfig) -> PlcSamples:
    """Measured PLC samples for a physics block (noise keyed by tick index: chunking-independent)."""
    n = len(block)
    idx = block.idx
    cal = asset.calibration
    k = profile.plc_noise
    n_tags = len(PLC_TAGS)
    grid = idx[:, None] * 16 + np.arange(n_tags)[None, :]  # one counter per (tick, tag)
    noise = hash_normal(stream_key(config.seed, "plc", asset.asset_id), grid)
    temp_off = np.broadcast_to(np.asarray(drift.plc_temp_offset_c, dtype=np.float64), (n,))
    std = np.empty((n, n_tags))
    true = np.empty((n, n_tags))
    true[:, 0] = block.current_a * cal.current_gain
    std[:, 0] = (0.006 * block.current_a + 0.05) * k
    true[:, 1] = block.shaft_hz * 60.0
    std[:, 1] = (0.2 + 1.3 * block.speed_frac) * k
    true[:, 2] = block.bearing_c + cal.bearing_temp_offset_c + temp_off
    std[:, 2] = 0.15 * k
    true[:, 3] = block.winding_c + cal.winding_temp_offset_c + temp_off
    std[:, 3] = 0.2 * k
    true[:, 4] = block.vibration_mm_s
    std[:, 4] = 0.0
    true[:, 5] = block.pressure_bar
    std[:, 5] = 0.002 * asset.pressure_full_scale_bar * k
    true[:, 6] = block.run
    std[:, 6] = 0.0
    for tag in SENSOR_NOISE_TAGS:
        std[:, PLC_TAGS.index(tag)] *= asset.extra.get(f"{tag}_noise", 1.0)
    vals = true + std * noise
    vals[:, 4] = block.vibration_mm_s * np.exp(0.06 * k * asset.extra.get("vibration_noise", 1.0) * noise[:, 4])

    # Quality: Uncertain samples are noisier, Bad samples sit on a rail value.
    qkey = stream_key(config.seed, "plc-quality", asset.asset_id)
    u = hash_uniform(qkey, grid)
    quality = np.full((n, n_tags), GOOD, dtype=np.uint8)
    quality[u < config.bad_quality_rate + config.uncertain_quality_rate] = UNCERTAIN
    quality[u < config.bad_quality_rate] = BAD
    quality[:, 6] = GOOD
    vals = np.where(quality == UNCERTAIN, vals + 2.0 * std * np.roll(noise, 1, axis=1), vals)
    rails = np.array([spec.valid_max for spec in asset.tag_specs()])
    rail_pick = hash_uniform(qkey + 99, idx)[:, None] < 0.5
    vals = np.where(quality == BAD, np.where(rail_pick, 0.0, rails[None, :]), vals)

    lo = np.array([spec.valid_min for spec in asset.tag_specs()])
    vals = np.clip(vals, lo[None, :], rails[None, :])
    for j, tag in enumerate(PLC_TAGS):
        vals[:, j] = np.round(vals[:, j], TAG_DECIMALS[tag])
    return PlcSamples(asset.asset_id, block.t.copy(), vals, quality)


def _value_strings(values: np.ndarray) -> list[np.ndarray]:
    cols = []
    for j, tag in enumerate(PLC_TAGS):
        d = TAG_DECIMALS[tag]
        fmt = f"%.{d}f" if d else "%d"
        col = values[:, j] if d else values[:, j].astype(np.int64)
        cols.append(np.char.mod(fmt, col))
    return cols


def format_lines(samples: PlcSamples, timestamps: np.ndarray, fmt: str = "csv") -> list[str]:
    """Long-format lines (no header), ordered by time then tag.

    ``timestamps`` holds one ISO-8601 string per row of ``samples``.
    CSV: ``timestamp,tag,value,quality,unit``; JSONL: one object per line with
    the same keys (``value`` is a JSON number).
    """
    cols = _value_strings(samples.values)
    out: list[str] = []
    aid = samples.asset_id
    tag_names = [f"{aid}.{t}" for t in PLC_TAGS]
    units = [TAG_UNITS[t] for t in PLC_TAGS]
    q = samples.quality
    if fmt == "csv":
        for i, ts in enumerate(timestamps):
            for j in range(len(PLC_TAGS)):
                out.append(f"{ts},{tag_names[j]},{cols[j][i]},{QUALITIES[q[i, j]]},{units[j]}")
    elif fmt == "jsonl":
        for i, ts in enumerate(timestamps):
            for j in range(len(PLC_TAGS)):
                out.append(f'{{"timestamp": "{ts}", "tag": "{tag_names[j]}", "value": {cols[j][i]}, '
                           f'"quality": "{QUALITIES[q[i, j]]}", "unit": "{units[j]}"}}')
    else:
        raise ValueError(f"unknown PLC format {fmt!r}")
    return out


def plc_file_text(lines: list[str], fmt: str) -> str:
    """Complete file content for a list of lines (CSV gets the header)."""
    body = "\n".join(lines) + ("\n" if lines else "")
    return (CSV_HEADER + "\n" + body) if fmt == "csv" else body
