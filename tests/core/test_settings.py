from __future__ import annotations

from pathlib import Path

import pytest

from linewatch.settings import Settings, load_settings, settings_with_sources


def _sources(rows: list[tuple[str, object, str]]) -> dict[str, tuple[object, str]]:
    return {name: (value, source) for name, value, source in rows}


def test_precedence_cli_over_env_over_file_over_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(__import__("os").environ):
        if name.startswith("LINEWATCH_"):
            monkeypatch.delenv(name)
    cfg = tmp_path / "linewatch.toml"
    cfg.write_text('[redis]\nurl = "redis://file:1/0"\n[streams]\nshards = 8\nmaxlen = 5000\n')
    monkeypatch.setenv("LINEWATCH_STREAMS__SHARDS", "16")
    monkeypatch.setenv("LINEWATCH_DATA_DIR", str(tmp_path / "data"))
    settings = load_settings(cfg, **{"streams.maxlen": 7000})
    assert settings.redis.url == "redis://file:1/0"
    assert settings.streams.shards == 16
    assert settings.streams.maxlen == 7000
    assert settings.landing == tmp_path / "data" / "landing"
    rows = _sources(settings_with_sources(cfg, **{"streams.maxlen": 7000}))
    assert rows["redis.url"] == ("redis://file:1/0", f"file {cfg}")
    assert rows["streams.shards"] == (16, "env LINEWATCH_STREAMS__SHARDS")
    assert rows["streams.maxlen"] == (7000, "cli")
    assert rows["streams.prefix"] == ("lw", "default")
    assert rows["data_dir"][1] == "env LINEWATCH_DATA_DIR"


def test_config_file_from_env_and_missing_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text('[simulator]\ndifficulty = "hard"\n')
    monkeypatch.setenv("LINEWATCH_CONFIG", str(cfg))
    assert load_settings().simulator.difficulty == "hard"
    monkeypatch.setenv("LINEWATCH_CONFIG", str(tmp_path / "nope.toml"))
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_settings()


def test_invalid_values_fail_with_the_field_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LINEWATCH_STREAMS__SHARDS", "0")
    with pytest.raises(ValueError, match="shards"):
        Settings()
