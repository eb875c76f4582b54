"""Which linewatch code a foreign-data bench scores its files with: the working tree, or HEAD
exported with ``git archive`` (``--code tree|head`` of ``bench_foreign_fleet.py`` and
``bench_foreign_plc.py``), and what the report records about it."""

from __future__ import annotations

import subprocess
import tarfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def code_snapshot(mode: str, data: Path) -> tuple[Path | None, dict[str, Any]]:
    """``(folder of the exported HEAD or None for the tree, {"mode", "head", "dirty_paths"})``."""
    def git(*a: str) -> str:
        return subprocess.run(["git", "-C", str(ROOT), *a], capture_output=True, text=True).stdout

    info: dict[str, Any] = {"mode": mode, "head": git("rev-parse", "HEAD").strip(),
                            "dirty_paths": [line[3:] for line in git("status", "--porcelain").splitlines()]}
    if mode == "tree":
        return None, info
    code = data / "code"
    code.mkdir()
    subprocess.run(["git", "-C", str(ROOT), "archive", "-o", str(data / "code.tar"), "HEAD"], check=True)
    with tarfile.open(data / "code.tar") as tar:
        tar.extractall(code, filter="data")
    return code, info
