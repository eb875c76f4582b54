"""What every CLI command receives from the root callback: the config file and the console."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from linewatch.settings import Settings, describe_errors, load_settings


@dataclass
class CliContext:
    """Options of the root command, passed to subcommands through ``typer.Context.obj``."""

    config_file: Path | None = None
    console: Console = field(default_factory=Console)

    def settings(self, **overrides: Any) -> Settings:
        """Effective settings; CLI options given as dotted ``overrides`` win over env and file."""
        try:
            return load_settings(self.config_file, **overrides)
        except FileNotFoundError as exc:
            self.console.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(2) from exc
        except ValidationError as exc:
            self.console.print(f"[red]error:[/red] invalid settings: {escape(describe_errors(exc))}")
            raise typer.Exit(2) from None


def cli_context(ctx: typer.Context) -> CliContext:
    obj = ctx.find_root().obj
    return obj if isinstance(obj, CliContext) else CliContext()
