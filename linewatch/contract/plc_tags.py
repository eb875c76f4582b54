"""The PLC tags every asset reports: names, order and units (gateway ↔ ingestion contract).

The order is the column order of PLC window arrays (``values[:, i]`` is ``PLC_TAGS[i]``) in the
simulator, the feature code and the models.

>>> PLC_TAGS.index("bearing_temp_c"), TAG_UNITS["bearing_temp_c"]
(2, 'degC')
"""

from __future__ import annotations

PLC_TAGS: tuple[str, ...] = (
    "motor_current_a",
    "speed_rpm",
    "bearing_temp_c",
    "winding_temp_c",
    "vibration_rms_mm_s",
    "pressure_bar",
    "run_state",
)

TAG_UNITS: dict[str, str] = {
    "motor_current_a": "A",
    "speed_rpm": "rpm",
    "bearing_temp_c": "degC",
    "winding_temp_c": "degC",
    "vibration_rms_mm_s": "mm/s",
    "pressure_bar": "bar",
    "run_state": "bool",
}
