"""Shared fixtures for the simulator tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from linewatch.simulator import Factory, SimulatorConfig


@pytest.fixture(scope="session")
def batch_config() -> SimulatorConfig:
    """Config of the shared batch run: every asset gets a fault, a third drift."""
    return SimulatorConfig(seed=11, batch_roll_seconds=10.0, fault_fraction=1.0, drift_fraction=0.34)


@pytest.fixture(scope="session")
def batch_dir(batch_config: SimulatorConfig, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A short batch run: 3 assets x 30 simulated seconds, rolling files every 10 s."""
    out = tmp_path_factory.mktemp("batch")
    Factory(batch_config, n_assets=3).run_batch(out, minutes=0.5, progress=False)
    return out
