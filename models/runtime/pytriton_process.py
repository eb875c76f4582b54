"""Run deploy/triton/pytriton_server.py as a child process: start, wait until ready, stop.

Used by the tests, the runtime bench and local demos. The server runs in its own venv
(``.venv-triton``, made by ``scripts/setup_model_venvs.sh triton``) because PyTriton pins
``numpy<2`` and bundles its own ``tritonserver``.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from models.runtime.model_dir import triton_model_name

REPO_ROOT = Path(__file__).resolve().parents[2]
SERVER_SCRIPT = REPO_ROOT / "deploy" / "triton" / "pytriton_server.py"
TRITON_VENV = REPO_ROOT / ".venv-triton"


def free_port() -> int:
    """A TCP port that was free a moment ago on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def venv_ready(venv: Path) -> bool:
    """True once scripts/setup_model_venvs.sh finished ``venv`` (it writes the stamp last)."""
    return (venv / ".linewatch-stamp").is_file() and (venv / "bin" / "python").exists()


@dataclass
class PyTritonProcess:
    """A PyTriton server for one flavour of a model directory, on free local ports.

    >>> PyTritonProcess(Path("m"), Path("w"), http_port=8000, grpc_port=8001).http_url
    '127.0.0.1:8000'
    """

    model_dir: Path
    workdir: Path
    flavour: str | None = None  # None: default_flavour(model_dir, "triton"), the card's serving role
    extra_args: list[str] = field(default_factory=list)
    venv: Path = TRITON_VENV
    http_port: int = field(default_factory=free_port)
    grpc_port: int = field(default_factory=free_port)
    metrics_port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    def __post_init__(self) -> None:
        if self.flavour is None and Path(self.model_dir).is_dir():
            from models.runtime.factory import default_flavour

            self.flavour = default_flavour(self.model_dir, "triton")

    @property
    def model_name(self) -> str:
        return triton_model_name(self.model_dir, self.flavour or "")

    @property
    def http_url(self) -> str:
        return f"127.0.0.1:{self.http_port}"

    @property
    def grpc_url(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    @property
    def log_path(self) -> Path:
        return Path(self.workdir) / "pytriton.log"

    def start(self, ready_timeout_s: float = 90.0) -> PyTritonProcess:
        """Launch the server and poll its model-ready endpoint until 200 or the deadline."""
        if not venv_ready(self.venv):
            raise FileNotFoundError(f"{self.venv} is missing or incomplete: run scripts/setup_model_venvs.sh triton")
        Path(self.workdir).mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, PYTRITON_HOME=str(Path(self.workdir) / "pytriton-home"))
        env.pop("PYTHONPATH", None)  # the server adds the repo root itself; keep the main venv out
        cmd = [
            str(self.venv / "bin" / "python"), str(SERVER_SCRIPT),
            "--model-dir", str(self.model_dir), "--flavour", str(self.flavour),
            "--http-port", str(self.http_port), "--grpc-port", str(self.grpc_port),
            "--metrics-port", str(self.metrics_port), *self.extra_args,
        ]  # fmt: skip
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        ready = f"http://{self.http_url}/v2/models/{self.model_name}/ready"
        deadline = time.monotonic() + ready_timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"PyTriton server exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(ready, timeout=1) as resp:
                    if resp.status == 200:
                        return self
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.1)  # poll interval
        self.stop()
        raise TimeoutError(f"PyTriton model not ready after {ready_timeout_s} s:\n{self.log_tail()}")

    def log_tail(self, n: int = 4000) -> str:
        return self.log_path.read_text(errors="replace")[-n:] if self.log_path.exists() else ""

    def stop(self, timeout_s: float = 30.0) -> int | None:
        """SIGTERM and wait; SIGKILL the process group only if it does not exit in time."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            return self.proc.wait(10)

    def __enter__(self) -> PyTritonProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
