"""``scripts/render_plc_data.py --into-run``: the PLC vectors land in a run folder that
``load_run_data`` (``train_gpu.py --data``, ``package_models.py --gpu-run``) reads back unchanged."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from models.data.domain_data import DomainDataset, load_run_data

ROOT = Path(__file__).resolve().parents[2]


def _render(tmp_path: Path, domain: str, seed: int, run: Path) -> DomainDataset:
    out = tmp_path / f"{domain}.npz"
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "render_plc_data.py"), "--samples-per-class", "4",
                           "--assets", "6", "--seed", str(seed), "--domain", domain, "--out", str(out),
                           "--into-run", str(run)], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return DomainDataset.load(out)


def test_both_domains_written_into_a_run_folder_load_back_equal(tmp_path: Path) -> None:
    run = tmp_path / "run"
    train = _render(tmp_path, "train", 3, run)
    unseen = _render(tmp_path, "unseen", 5, run)
    loaded_train, loaded_unseen = load_run_data(run)
    for original, loaded in ((train, loaded_train), (unseen, loaded_unseen)):
        assert loaded.domain == original.domain and loaded.seed == original.seed
        np.testing.assert_array_equal(loaded.plc, original.plc)
        np.testing.assert_array_equal(loaded.y, original.y)
        np.testing.assert_array_equal(loaded.groups, original.groups)
        assert loaded.thermal.shape == (len(original.y), 0) and loaded.audio.shape == (len(original.y), 0)
    assert set(loaded_train.groups.tolist()).isdisjoint(loaded_unseen.groups.tolist())
