"""Inputs that show *more* of a fault beyond the training range: not an extrapolation of that fault.

``linewatch inspect`` flags a file whose model inputs lie far outside what the model saw in
training (``models.inspect.scoring``, ``outside_training``) and lets that modality enter the fused
verdict with less weight: the model is guessing there. One case is not a guess. A loose terminal lug
55 K hotter than its box (the thermal model's reference sample of training frames reaches 30 K)
lies outside the range *and* shows the fault the model names, more strongly than any training
frame: the physics is monotone (a hotter connection is more, not less, electrical overheating),
and a model that names the fault at the edge of its range names it beyond. Distrusting that call is distrusting the
strongest evidence there is (docs/models.md, "Evidence beyond the training range").

:data:`FAULT_EVIDENCE` lists, per modality and class, the inputs whose growth (``+1``) or fall
(``-1``) *is* that fault's physics: a terminal box's hot spot for electrical overheating, a bearing
housing's rise over the motor body for bearing wear, the motor body's rise for a cooling failure;
the winding's rise, the vibration level and the pressure's drop and fluctuation for the PLC's
cooling failure, imbalance and cavitation. They were picked from the physics each class is built
on (docs/simulator.md), not fitted to any fleet. Audio is not listed: a clip's impulsiveness and
high-band level grow with bearing wear and cavitation, but also with a clank, an air leak or a
neighbouring machine, so beyond the range they are no evidence of one fault.

An input counts as evidence only beyond its training range on its fault's side, and only for the
class the modality names: a hot lug on a frame the model calls ``bearing_wear`` is still counted.

>>> evidence_beyond_training("thermal", "electrical_overheating",
...                          {"terminal_box.hotspot_excess": 1, "global.hot_outside_regions_frac": 1})
['terminal_box.hotspot_excess']
>>> evidence_beyond_training("thermal", "normal", {"terminal_box.hotspot_excess": 1})
[]
>>> evidence_beyond_training("plc", "cavitation", {"pressure.mean_over_nominal": -1, "vib.mean_log": 1})
['pressure.mean_over_nominal']
>>> evidence_beyond_training("plc", "cavitation", {"pressure.mean_over_nominal": 1})  # above: not a drop
[]
"""

from __future__ import annotations

from collections.abc import Mapping

_TERMINAL = ("terminal_box.max_rise", "terminal_box.p90_rise", "terminal_box.hotspot_excess", "terminal_box.spread",
             "rel.terminal_minus_body", "ratio.terminal_excess_over_body", "baseline.delta_terminal_max")
_BEARINGS = ("de_bearing.mean_rise", "de_bearing.p90_rise", "de_bearing.max_rise", "de_bearing.hotspot_excess",
             "nde_bearing.mean_rise", "nde_bearing.p90_rise", "nde_bearing.max_rise", "nde_bearing.hotspot_excess",
             "rel.de_minus_body", "rel.nde_minus_body", "ratio.de_over_body", "ratio.nde_over_body",
             "baseline.delta_de_max", "baseline.delta_nde_max")
_BODY = ("motor_body.mean_rise", "motor_body.p90_rise", "motor_body.max_rise", "baseline.delta_body_mean")

#: ``{modality: {class: {input name: +1 (the fault raises it) or -1 (the fault lowers it)}}}``.
FAULT_EVIDENCE: dict[str, dict[str, dict[str, int]]] = {
    "thermal": {
        "electrical_overheating": {name: 1 for name in _TERMINAL},
        "bearing_wear": {name: 1 for name in _BEARINGS},
        "cooling_failure": {name: 1 for name in _BODY},
    },
    "plc": {
        "cooling_failure": {"temp.winding_minus_bearing": 1, "temp.winding_c_over_100": 1,
                            "temp.winding_slope_k_per_min": 1},
        "imbalance": {"vib.mean_log": 1},
        "cavitation": {"pressure.mean_over_nominal": -1, "pressure.affinity_ratio": -1,
                       "pressure.std_over_mean": 1, "pressure.max_over_mean": 1},
    },
}


def evidence_beyond_training(modality: str, label: str | None, beyond: Mapping[str, int]) -> list[str]:
    """Which of ``beyond`` (input name -> ``+1`` above its training range, ``-1`` below it) show more of
    ``label``, the class ``modality``'s model names, than any training sample (:data:`FAULT_EVIDENCE`),
    sorted."""
    sides = FAULT_EVIDENCE.get(modality, {}).get(label or "", {})
    return sorted(name for name, side in beyond.items() if sides.get(name) == side)
