"""Entry point of the ingestion job: embedded MiniCluster or ``flink run -py`` on a cluster.

Reads a job spec (JSON, written by :mod:`pipeline.runner`)::

    python -m pipeline.ingest_job --spec spec.json            # embedded MiniCluster, blocks
    $PF/bin/flink run -d -py pipeline/ingest_job.py --spec spec.json --cluster

Embedded: prints ``JOB_ID <id>`` once submitted, runs until SIGTERM/SIGINT, then cancels the
job (its last checkpoint is retained, so the next start resumes from it) and exits 0. With
``--lifeline FD --parent-pid PID`` (what :class:`pipeline.runner.IngestJob` passes) it also stops
when its supervisor dies: a parent-death signal and EOF on the liveness pipe
(``pipeline.supervision.lifeline``); a stop that does not finish within ``--stop-grace-s`` kills
the process group (this process and its JVM).
"""

from __future__ import annotations

import argparse
import os
import signal
import site
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pipeline.job_spec import JobSpec

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def python_path() -> str:
    """What the embedded interpreter of thread mode must see: the venv and the project."""
    parts = [str(PROJECT_ROOT), *site.getsitepackages()]
    if os.environ.get("PYTHONPATH"):
        parts.append(os.environ["PYTHONPATH"])
    return os.pathsep.join(dict.fromkeys(parts))


def make_environment(spec: JobSpec, cluster: bool) -> Any:
    from pyflink.common import Configuration
    from pyflink.datastream import StreamExecutionEnvironment

    conf = Configuration()
    for key, value in spec.flink_conf().items():
        conf.set_string(key, str(value))
    # cluster: the TaskManagers import pipeline/linewatch through their PYTHONPATH
    # (pipeline.cluster sets it on this machine; on remote workers install the package there)
    return StreamExecutionEnvironment.get_execution_environment(conf)


def phase(name: str) -> None:
    """``PHASE <name> <unix time>`` on stdout: where a (re)start spends its time (bench/bench_restart.py)."""
    print(f"PHASE {name} {time.time():.3f}", flush=True)


#: Seconds an orphaned job (its supervisor died) tries a clean cancel before killing its process group.
ORPHAN_GRACE_S = 10.0


def main(argv: list[str] | None = None) -> int:
    phase("process")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", required=True, type=Path, help="job spec JSON written by pipeline.runner")
    parser.add_argument("--cluster", action="store_true", help="submitted with `flink run`: submit and return")
    parser.add_argument("--lifeline", type=int, default=None, help="read end of the supervisor's liveness pipe")
    parser.add_argument("--parent-pid", type=int, default=None, help="the supervisor's PID (parent-death signal)")
    parser.add_argument("--stop-grace-s", type=float, default=30.0, help="kill the process group after this long")
    args = parser.parse_args(argv)
    stop = threading.Event()
    supervisor_gone = threading.Event()  # the liveness pipe's EOF: it comes before the kernel re-parents us
    if not args.cluster:
        from linewatch.stop_signals import call_on_signals
        from pipeline.supervision.lifeline import deadline_on_stop, set_parent_death_signal, watch_lifeline

        # before the JVM starts: a stop is always a clean cancel (a handler that takes no lock: two signals
        # at once, a parent-death SIGTERM and another, must not deadlock the job on its own stop event)
        call_on_signals(stop.set, (signal.SIGTERM, signal.SIGINT))
        if args.parent_pid is not None:
            set_parent_death_signal(signal.SIGTERM, args.parent_pid)
        if args.lifeline is not None:
            watch_lifeline(args.lifeline, supervisor_gone, stop)

        def grace_s() -> float:
            """An orphan (its supervisor died) has nobody waiting for a clean cancel: a short grace."""
            orphaned = supervisor_gone.is_set() or (args.parent_pid is not None and os.getppid() != args.parent_pid)
            return float(min(args.stop_grace_s, ORPHAN_GRACE_S) if orphaned else args.stop_grace_s)

        deadline_on_stop(stop, grace_s)
    if not args.cluster:
        os.environ["PYTHONPATH"] = python_path()  # before the JVM starts: thread mode imports pemja
    sys.path.insert(0, str(PROJECT_ROOT))
    from pipeline.job import build_job
    from pipeline.job_spec import JobSpec

    spec = JobSpec.model_validate_json(args.spec.read_text())
    phase("imports")
    if stop.is_set():
        return 0
    env = make_environment(spec, args.cluster)
    phase("jvm")
    build_job(env, spec)
    phase("graph")
    client = env.execute_async(spec.job_name)
    job_id = str(client.get_job_id())
    phase("submitted")
    print(f"JOB_ID {job_id}", flush=True)
    if args.cluster:
        return 0
    announced = False
    while not stop.wait(0.1 if not announced else 0.5):
        status = client.get_job_status().result().name
        if status == "RUNNING" and not announced:
            phase("running")
            print(f"JOB_RUNNING {job_id}", flush=True)
            announced = True
        if status in ("FAILED", "FINISHED", "CANCELED"):
            print(f"JOB_STATUS {status}", flush=True)
            return 1 if status == "FAILED" else 0
    from pipeline.supervision.lifeline import end_children

    # the deadline (deadline_on_stop) runs since the stop was asked; it kills the group if what follows hangs
    try:
        client.cancel().result()
    except Exception as exc:  # already gone
        print(f"cancel: {exc}", file=sys.stderr, flush=True)
    print("JOB_STATUS CANCELED", flush=True)
    end_children()  # the JVM goes before the job does, also when nobody waits for the job (an orphan)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
