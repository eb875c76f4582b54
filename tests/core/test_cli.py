"""The CLI: help everywhere, config sources, simulate end to end, demo without Redis configured."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import soundfile
import tifffile
from typer.testing import CliRunner

from linewatch.cli.app import app

runner = CliRunner()


def _commands() -> list[list[str]]:
    import typer.main

    root = typer.main.get_command(app)
    paths: list[list[str]] = [[]]
    for name, command in root.commands.items():  # type: ignore[attr-defined]
        paths.append([name])
        for sub in getattr(command, "commands", {}):
            paths.append([name, sub])
    return paths


@pytest.mark.parametrize("path", _commands(), ids=lambda p: " ".join(p) or "root")
def test_help_everywhere(path: list[str]) -> None:
    result = runner.invoke(app, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage" in result.output
    assert len(result.output.strip().splitlines()) > 3


def test_config_show_reports_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "lw.toml"
    cfg.write_text('[simulator]\ndifficulty = "hard"\n')
    monkeypatch.setenv("LINEWATCH_STREAMS__SHARDS", "3")
    result = runner.invoke(app, ["--config", str(cfg), "config", "show", "--json"])
    assert result.exit_code == 0, result.output
    rows = {r["name"]: r for r in json.loads(result.output)}
    assert rows["simulator.difficulty"] == {"name": "simulator.difficulty", "value": "hard", "source": f"file {cfg}"}
    assert rows["streams.shards"]["source"] == "env LINEWATCH_STREAMS__SHARDS"
    assert rows["streams.maxlen"]["source"] == "default"


def test_missing_config_file_is_a_clear_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["--config", str(tmp_path / "none.toml"), "config", "show"])
    assert result.exit_code == 2
    assert "does not exist" in " ".join(result.output.split())


def test_simulate_writes_three_modalities_and_ground_truth(tmp_path: Path) -> None:
    out = tmp_path / "line"
    result = runner.invoke(app, ["simulate", "--assets", "3", "--minutes", "0.25", "--out", str(out), "--seed", "3"])
    assert result.exit_code == 0, result.output
    frames = sorted(out.glob("thermal/frames/*/*.tiff"))
    clips = sorted(out.glob("audio/clips/*/*.wav"))
    assert frames and clips and list(out.glob("plc/*.csv")) and (out / "ground_truth.csv").is_file()
    assert tifffile.imread(frames[0]).shape == (120, 160)
    assert soundfile.info(str(clips[0])).samplerate == 16000
    assert {p.name for p in (out / "thermal" / "frames").iterdir()} == {p.name for p in (out / "audio" / "clips").iterdir()}


def test_demo_runs_with_no_redis_configured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LINEWATCH_REDIS__URL", raising=False)
    monkeypatch.setenv("LINEWATCH_DATA_DIR", str(tmp_path))
    result = runner.invoke(app, ["demo", "--seconds", "3", "--assets", "2"])
    assert result.exit_code == 0, result.output
    assert "demo finished" in result.output
    assert (tmp_path / "redis").is_dir()  # the embedded server kept its data under the data dir
