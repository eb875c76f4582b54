"""PLC tag catalogue: names, units, display precision and valid ranges.

Every asset publishes the same seven tags (the full tag name is
``<ASSET_ID>.<tag>``), so ML windows have a fixed layout ``PLC_TAGS``.
``pressure_bar`` means pump discharge pressure for pumps, hydraulic cylinder
pressure for presses, and gearbox lubrication-oil pressure for conveyors.
"""

from __future__ import annotations

from dataclasses import dataclass

from linewatch.contract.plc_tags import PLC_TAGS, TAG_UNITS  # noqa: F401 - re-exported

#: Decimal places written to files (values are rounded to these).
TAG_DECIMALS: dict[str, int] = {
    "motor_current_a": 2,
    "speed_rpm": 1,
    "bearing_temp_c": 2,
    "winding_temp_c": 2,
    "vibration_rms_mm_s": 3,
    "pressure_bar": 2,
    "run_state": 0,
}

QUALITIES: tuple[str, ...] = ("Good", "Uncertain", "Bad")


@dataclass(frozen=True)
class TagSpec:
    """One tag of one asset: full name, unit and the sensor's valid range."""

    tag: str
    name: str
    unit: str
    valid_min: float
    valid_max: float

    def as_dict(self) -> dict[str, str | float]:
        """JSON-ready dict as written into ``assets.json``."""
        return {"tag": self.tag, "name": self.name, "unit": self.unit,
                "valid_min": self.valid_min, "valid_max": self.valid_max}


def tag_ranges(asset_type: str, rated_current_a: float, sync_rpm: float,
               pressure_full_scale_bar: float) -> dict[str, tuple[float, float]]:
    """Valid (sensor) range of each tag; values outside are sensor faults."""
    return {
        "motor_current_a": (0.0, round(8.0 * rated_current_a, 1)),
        "speed_rpm": (0.0, round(1.1 * sync_rpm, 1)),
        "bearing_temp_c": (-20.0, 150.0),
        "winding_temp_c": (-20.0, 180.0),
        "vibration_rms_mm_s": (0.0, 50.0),
        "pressure_bar": (0.0, pressure_full_scale_bar),
        "run_state": (0.0, 1.0),
    }
