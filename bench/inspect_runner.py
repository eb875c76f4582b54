"""How the foreign-data benches (``bench_foreign_fleet.py``, ``bench_foreign_plc.py``) call
``linewatch inspect``: with the working tree or with HEAD exported by ``git archive`` (``--code
tree|head``), with the shipped or another registry, and what their reports record about the code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CLI = ROOT / ".venv" / "bin" / "linewatch"


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


def run_inspect(files: Sequence[str], assets: Path, code: Path | None, registry: Path | None = None,
                extra: Sequence[str] = ()) -> tuple[list[dict[str, Any]], str, int, float]:
    """One ``linewatch inspect FILES --assets ASSETS --json [EXTRA]`` call, one BLAS thread:
    ``(records, stderr, exit code, seconds)`` (no records when stdout is not JSON). ``code``: the
    exported commit (imported ahead of the editable install, its own ``models/default``), else the
    working tree with ``registry`` (default: the shipped one)."""
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    if code is None:
        cmd, cwd = [str(CLI), "inspect"], ROOT
        if registry is not None:
            cmd += ["--registry", str(registry)]
    else:
        cmd = [sys.executable, "-c", "import sys; from linewatch.cli.app import main; sys.argv[0] = 'linewatch'; "
               "sys.exit(main())", "inspect", "--registry", str(code / "models" / "default")]
        cwd, env["PYTHONPATH"] = code, str(code)
    cmd += [*files, "--assets", str(assets), "--json", *extra]
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=str(cwd))
    try:
        recs = json.loads(p.stdout)
    except json.JSONDecodeError:
        recs = []
    return recs, p.stderr, p.returncode, time.time() - t0
