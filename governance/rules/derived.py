"""Physics-derived rule features (``derived.*``), computed from the modalities' model-input vectors.

A motor's temperature rise follows its copper losses, ``~ 0.2 + 0.8 (I / I_rated)^2`` (magnetising
and iron losses at no load, I^2 R under load: the winding model of ``linewatch/simulator/physics.py``).
A healthy motor at full load runs as hot as a poorly cooled one at half load; dividing the rise by
the loss share separates the two. Both need the PLC current over rated current (``flag.rated_current_known``).

>>> f = derived_features({"plc": {"current.mean_over_rated": 0.9, "temp.winding_minus_bearing": 29.0,
...                               "flag.rated_current_known": 1.0}, "thermal": {"motor_body.mean_rise": 19.7}})
>>> {k: round(v, 1) for k, v in f.items()}
{'winding_excess_per_load': 34.2, 'body_rise_per_load': 23.2}
"""

from __future__ import annotations

from collections.abc import Mapping

#: name -> (meaning, the vector features it reads as ``modality.feature``)
DERIVED_FEATURES: dict[str, tuple[str, tuple[str, ...]]] = {
    "winding_excess_per_load": ("winding minus bearing temperature (K) over the copper-loss share "
                                "0.2 + 0.8 (I/I_rated)^2", ("plc.temp.winding_minus_bearing", "plc.current.mean_over_rated")),
    "body_rise_per_load": ("thermal motor-body rise over ambient (K) over the copper-loss share",
                           ("thermal.motor_body.mean_rise", "plc.current.mean_over_rated")),
}
MIN_LOAD_SHARE = 0.25


def _loss_share(plc: Mapping[str, float]) -> float | None:
    if plc.get("flag.rated_current_known", 0.0) < 0.5 or "current.mean_over_rated" not in plc:
        return None
    i = max(float(plc["current.mean_over_rated"]), 0.0)
    return max(0.2 + 0.8 * i * i, MIN_LOAD_SHARE)


def derived_features(features: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """The ``derived.*`` values computable from ``features`` (modality -> name -> value)."""
    plc = features.get("plc", {})
    share = _loss_share(plc)
    out: dict[str, float] = {}
    if share is None:
        return out
    if "temp.winding_minus_bearing" in plc:
        out["winding_excess_per_load"] = float(plc["temp.winding_minus_bearing"]) / share
    body = features.get("thermal", {}).get("motor_body.mean_rise")
    if body is not None:
        out["body_rise_per_load"] = float(body) / share
    return out
