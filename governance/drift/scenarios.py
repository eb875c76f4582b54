"""Drift scenarios for tests and bench/bench_drift.py: real model-input vectors with the simulator's drift kinds.

An asset's healthy stream is one real PLC vector of the shipped card's reference sample (computed by
the project's feature code from a simulated machine) plus measurement noise of ``noise`` times the
fleet's standard deviation per feature (binary and constant features keep their value). The drift
kinds perturb those vectors with the physical magnitudes of ``linewatch.simulator.drift``:

* ``plc_temp_offset`` (one asset's RTDs creep: sensor): bearing and winding temperature + 4 K x level;
* ``ambient_shift`` (the hall warms, every asset: fleet): every temperature sensor + 6 K x level;
* a machine change (one asset, many groups): load, speed, vibration and pressure move by ``shift``
  fleet standard deviations.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from linewatch.simulator.drift import constant_drift
from models.registry.store import DEFAULT_ROOT as REGISTRY
from models.registry.store import ModelRegistry


def plc_reference() -> tuple[list[str], NDArray[np.float64]]:
    return reference("plc")


class AssetStream:
    def __init__(self, names: list[str], reference: NDArray[np.float64], row: int, noise: float, seed: int) -> None:
        self.names = names
        self.anchor = reference[row].copy()
        self.scale = np.where([len(np.unique(reference[:, j])) > 2 for j in range(reference.shape[1])],
                              reference.std(axis=0) * noise, 0.0)
        self.fleet_std = reference.std(axis=0)
        self.rng = np.random.default_rng(seed)

    def draw(self, n: int) -> NDArray[np.float64]:
        out: NDArray[np.float64] = self.anchor + self.rng.normal(size=(n, len(self.anchor))) * self.scale
        return out

    def idx(self, prefix: str) -> list[int]:
        return [j for j, name in enumerate(self.names) if name.startswith(prefix)]


def temperature_shift(stream: AssetStream, x: NDArray[np.float64], kelvin: float) -> NDArray[np.float64]:
    out = x.copy()
    for name in ("temp.bearing_c_over_100", "temp.winding_c_over_100"):
        out[:, stream.names.index(name)] += kelvin / 100.0
    return out


def plc_temp_offset(stream: AssetStream, x: NDArray[np.float64], level: float = 1.0) -> NDArray[np.float64]:
    return temperature_shift(stream, x, float(constant_drift("plc_temp_offset", level).plc_temp_offset_c))


def ambient_shift(stream: AssetStream, x: NDArray[np.float64], level: float = 1.0) -> NDArray[np.float64]:
    return temperature_shift(stream, x, float(constant_drift("ambient_shift", level).ambient_delta_k))


def machine_change(stream: AssetStream, x: NDArray[np.float64], shift: float = 0.5) -> NDArray[np.float64]:
    out = x.copy()
    for prefix in ("current.mean", "speed.mean", "vib.mean", "pressure.mean"):
        for j in stream.idx(prefix):
            out[:, j] += shift * stream.fleet_std[j]
    return out


def reference(modality: str) -> tuple[list[str], NDArray[np.float64]]:
    """Feature names and reference vectors of the shipped ``modality`` model (its latest version)."""
    with np.load(ModelRegistry(REGISTRY).latest(modality).directory / "reference.npz", allow_pickle=False) as z:
        return [str(n) for n in z["names"]], np.asarray(z["features"], np.float64)


def camera_ageing(stream: AssetStream, x: NDArray[np.float64], level: float = 1.0) -> NDArray[np.float64]:
    """The simulator's ``camera_ageing`` on thermal vectors: the offset moves the estimated ambient
    (``global.ambient_c_over_40``), the gain scales every temperature rise."""
    d = constant_drift("camera_ageing", level)
    out = x.copy()
    out[:, stream.names.index("global.ambient_c_over_40")] += float(d.camera_offset_k) / 40.0
    for j, name in enumerate(stream.names):
        if name.endswith("_rise"):
            out[:, j] *= float(d.camera_gain)
    return out


def thermal_machine_change(stream: AssetStream, x: NDArray[np.float64], shift: float = 0.5) -> NDArray[np.float64]:
    """A heavier load seen by the camera: motor body, bearings and terminal box run warmer."""
    out = x.copy()
    for prefix in ("motor_body.mean_rise", "de_bearing.mean_rise", "nde_bearing.mean_rise", "terminal_box.mean_rise"):
        for j in stream.idx(prefix):
            out[:, j] += shift * stream.fleet_std[j]
    return out
