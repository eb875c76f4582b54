"""A standalone Flink cluster on this machine, from the scripts the apache-flink wheel ships.

The wheel's ``conf/`` is never modified: the cluster gets a private copy (``FLINK_CONF_DIR``)
with its own free ports, log and pid directories, so several clusters (or engineers) can run
side by side and nothing is left behind.

>>> import pathlib
>>> (pyflink_home() / "bin" / "start-cluster.sh").is_file()
True
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from linewatch.flink_settings import FlinkSettings

PROJECT_ROOT = Path(__file__).resolve().parent.parent


class ClusterError(RuntimeError):
    """The cluster did not start, a submission failed, or a job did not reach a state."""


def pyflink_home() -> Path:
    """Directory of the installed ``pyflink`` package (holds ``bin/``, ``conf/``, ``lib/``)."""
    import pyflink

    return Path(pyflink.__file__).resolve().parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _set(tree: dict[str, Any], dotted: str, value: Any) -> None:
    node = tree
    *parents, leaf = dotted.split(".")
    for part in parents:
        node = node.setdefault(part, {})
    node[leaf] = value


class StandaloneCluster:
    """JobManager + one TaskManager started with ``start-cluster.sh``; a context manager.

    ``stop()`` always runs ``stop-cluster.sh`` and then kills whatever the pid files still name.
    """

    def __init__(self, work_dir: Path, slots: int = 1, conf: dict[str, Any] | None = None,
                 taskmanagers: int = 1) -> None:
        self.home = pyflink_home()
        self.work_dir = Path(work_dir)
        self.conf_dir = self.work_dir / "conf"
        self.log_dir = self.work_dir / "log"
        self.pid_dir = self.work_dir / "pid"
        self.rest_port = _free_port()
        self.slots = slots
        self.taskmanagers = taskmanagers
        self.conf = conf or {}

    @property
    def rest_url(self) -> str:
        return f"http://127.0.0.1:{self.rest_port}"

    def env(self) -> dict[str, str]:
        """Environment of the scripts: private conf/log/pid dirs; PYTHONPATH so that thread-mode
        Python inside the TaskManager imports pemja, linewatch and pipeline."""
        from pipeline.ingest_job import python_path

        return {**os.environ, "FLINK_CONF_DIR": str(self.conf_dir), "FLINK_LOG_DIR": str(self.log_dir),
                "FLINK_PID_DIR": str(self.pid_dir), "PYTHONPATH": python_path(),
                "PYFLINK_CLIENT_EXECUTABLE": sys.executable, **FlinkSettings().thread_env()}

    def write_conf(self) -> None:
        if self.conf_dir.exists():
            shutil.rmtree(self.conf_dir)
        shutil.copytree(self.home / "conf", self.conf_dir)
        for d in (self.log_dir, self.pid_dir):
            d.mkdir(parents=True, exist_ok=True)
        path = self.conf_dir / "config.yaml"
        tree = yaml.safe_load(path.read_text()) or {}
        settings = {
            "rest.port": self.rest_port, "rest.address": "127.0.0.1", "rest.bind-address": "127.0.0.1",
            "jobmanager.rpc.port": _free_port(), "blob.server.port": str(_free_port()),
            "taskmanager.numberOfTaskSlots": self.slots,
            "jobmanager.memory.process.size": "1024m", "taskmanager.memory.process.size": "1536m",
            "python.executable": sys.executable, "python.client.executable": sys.executable,
            **self.conf,
        }
        if self.taskmanagers == 1:  # fixed free ports; several TaskManagers take random ones (Flink's default 0)
            settings.update({"taskmanager.rpc.port": str(_free_port()), "taskmanager.data.port": _free_port()})
        for key, value in settings.items():
            _set(tree, key, value)
        path.write_text(yaml.safe_dump(tree, sort_keys=False))
        # start-cluster.sh starts one TaskManager per line (localhost: locally, without ssh). Each is a
        # JVM with its own embedded Python in thread mode: how the job scales its Python work, since
        # subtasks inside one TaskManager share one interpreter and its GIL.
        (self.conf_dir / "workers").write_text("localhost\n" * self.taskmanagers)

    def _script(self, name: str, timeout_s: float = 60.0) -> str:
        result = subprocess.run([str(self.home / "bin" / name)], env=self.env(), capture_output=True, text=True,
                                timeout=timeout_s)
        if result.returncode != 0:
            raise ClusterError(f"{name} failed ({result.returncode}): {result.stderr[-2000:] or result.stdout[-2000:]}")
        return result.stdout

    def rest(self, path: str, method: str = "GET") -> Any:
        request = urllib.request.Request(self.rest_url + path, method=method)
        with urllib.request.urlopen(request, timeout=5) as response:  # noqa: S310 - localhost only
            body = response.read()
        return json.loads(body) if body else None

    def start(self, timeout_s: float = 90.0) -> None:
        """Start and wait until a TaskManager with free slots has registered."""
        self.write_conf()
        self._script("start-cluster.sh")
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                overview = self.rest("/overview")
                if overview.get("taskmanagers", 0) >= self.taskmanagers and overview.get("slots-available", 0) >= 1:
                    return
            except (urllib.error.URLError, ConnectionError, TimeoutError, json.JSONDecodeError):
                pass
            time.sleep(0.25)
        raise ClusterError(f"no TaskManager registered within {timeout_s:.0f}s; logs in {self.log_dir}")

    def submit(self, spec_path: Path, timeout_s: float = 120.0) -> str:
        """``flink run -d -py pipeline/ingest_job.py --spec ... --cluster``; returns the job id."""
        return submit_job(spec_path, f"127.0.0.1:{self.rest_port}", env=self.env(), timeout_s=timeout_s)

    def job_state(self, job_id: str) -> str:
        return str(self.rest(f"/jobs/{job_id}")["state"])

    def wait_state(self, job_id: str, states: set[str], timeout_s: float = 60.0) -> str:
        deadline = time.monotonic() + timeout_s
        state = "?"
        while time.monotonic() < deadline:
            state = self.job_state(job_id)
            if state in states:
                return state
            time.sleep(0.2)
        raise ClusterError(f"job {job_id} is {state}, not one of {sorted(states)} after {timeout_s:.0f}s")

    def running_jobs(self) -> list[str]:
        return [j["jid"] for j in self.rest("/jobs/overview")["jobs"] if j["state"] == "RUNNING"]

    def cancel(self, job_id: str) -> None:
        """``flink cancel`` (the checkpoint is retained: RETAIN_ON_CANCELLATION)."""
        cmd = [str(self.home / "bin" / "flink"), "cancel", "-m", f"127.0.0.1:{self.rest_port}", job_id]
        result = subprocess.run(cmd, env=self.env(), capture_output=True, text=True, timeout=60)
        if result.returncode != 0:
            raise ClusterError(f"flink cancel failed: {result.stdout[-1000:]} {result.stderr[-1000:]}")
        self.wait_state(job_id, {"CANCELED"})

    def stop(self) -> None:
        """``stop-cluster.sh``; then kill any process its pid files still name."""
        try:
            self._script("stop-cluster.sh")
        except (ClusterError, subprocess.TimeoutExpired):
            pass
        deadline = time.monotonic() + 30
        for pid_file in self.pid_dir.glob("*.pid") if self.pid_dir.exists() else []:
            for raw in pid_file.read_text().split():
                if not raw.isdigit():
                    continue
                pid = int(raw)
                while time.monotonic() < deadline and _alive(pid):
                    time.sleep(0.2)
                if _alive(pid):
                    os.kill(pid, 9)

    def __enter__(self) -> StandaloneCluster:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def flink_run_command(spec_path: Path, address: str) -> list[str]:
    """The ``flink run`` command line that submits the ingestion job to the JobManager at ``address``."""
    return [str(pyflink_home() / "bin" / "flink"), "run", "-d", "-m", address,
            "-pyexec", sys.executable, "-pyclientexec", sys.executable,
            "-py", str(PROJECT_ROOT / "pipeline" / "ingest_job.py"), "--spec", str(spec_path), "--cluster"]


def submit_job(spec_path: Path, address: str, env: dict[str, str] | None = None, timeout_s: float = 120.0) -> str:
    """Submit the ingestion job described by ``spec_path`` to a running cluster; returns the job id."""
    if env is None:
        from pipeline.ingest_job import python_path

        env = {**os.environ, "PYTHONPATH": python_path(), "PYFLINK_CLIENT_EXECUTABLE": sys.executable}
    result = subprocess.run(flink_run_command(spec_path, address), env=env, capture_output=True, text=True,
                            timeout=timeout_s, cwd=PROJECT_ROOT)
    match = re.search(r"JobID ([0-9a-f]{32})", result.stdout) or re.search(r"JOB_ID ([0-9a-f]{32})", result.stdout)
    if result.returncode != 0 or match is None:
        raise ClusterError(f"flink run failed ({result.returncode}): {result.stdout[-2000:]}\n{result.stderr[-3000:]}")
    return match.group(1)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
