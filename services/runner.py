"""Run one stream worker as a service process: JSON logs, /metrics /healthz /readyz, SIGTERM drains.

Used by every ``linewatch serve ...`` command. Exit code 0 after a graceful stop.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

from linewatch.service_settings import WorkerSettings
from linewatch.streaming import (
    ObservabilityServer,
    StreamWorker,
    configure_json_logging,
    stop_on_signals,
)

log = logging.getLogger("linewatch.services")


def serve_workers(workers: Sequence[StreamWorker], settings: WorkerSettings, log_level: str = "INFO",
                  extra: dict[str, Callable[[], object]] | None = None,
                  on_started: Callable[[str], None] | None = None, install_signals: bool = True,
                  on_stop: Callable[[], None] | None = None) -> int:
    """Run ``workers`` (the first in this thread, the others in threads) until SIGTERM/SIGINT.

    The first worker's metrics registry and health back the HTTP endpoints; the other workers
    must share that registry (pass ``metrics=`` when building them).
    """
    configure_json_logging(log_level)
    main, *others = workers
    server = ObservabilityServer(main.metrics.registry, main.health, settings.metrics_host, settings.metrics_port,
                                 extra=extra).start()

    def stop_all() -> None:
        for w in workers:
            w.stop()
        if on_stop is not None:
            on_stop()

    if install_signals:
        stop_on_signals(stop_all)
    threads = [threading.Thread(target=w.run, name=w.config.role, daemon=True) for w in others]
    for t in threads:
        t.start()
    log.info("serving", extra={"roles": [w.config.role for w in workers], "consumer": main.consumer,
                               "metrics_url": server.url})
    if on_started is not None:
        on_started(server.url)
    try:
        main.run()
    finally:
        stop_all()
        for t in threads:
            t.join(timeout=60)
        server.stop()
    log.info("stopped", extra={"roles": [w.config.role for w in workers], "handled": main.stats.handled})
    return 0
