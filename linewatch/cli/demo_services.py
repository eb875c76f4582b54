"""The services half of ``linewatch demo``: inference x3, fusion and alerts as in-process workers,
and the live view of verdicts, open alerts and stage latencies."""

from __future__ import annotations

import statistics
import threading
from dataclasses import dataclass, field
from pathlib import Path

import redis
from rich.table import Table

from linewatch.contract import (
    Alert,
    Modality,
    Prediction,
    StreamNames,
    Verdict,
    decode_message,
)
from linewatch.settings import Settings
from linewatch.streaming import StreamWorker


@dataclass
class DemoServices:
    """The stream services of the demo, each a worker thread in this process."""

    client: redis.Redis
    names: StreamNames
    settings: Settings
    mqtt: bool = False
    log_path: Path | None = None
    workers: list[StreamWorker] = field(default_factory=list)
    threads: list[threading.Thread] = field(default_factory=list)
    stop_event: threading.Event = field(default_factory=threading.Event)

    def start(self) -> DemoServices:
        from services.alerts.service import alert_workers
        from services.fusion.service import fusion_worker
        from services.inference.service import inference_worker

        if self.log_path is not None:  # JSON logs to a file: the terminal shows the live view
            from linewatch.streaming import configure_json_logging

            self._log = open(self.log_path, "a", encoding="utf-8")  # noqa: SIM115 - closed in stop()
            configure_json_logging(self.settings.log_level, stream=self._log)
        maxlen = self.settings.streams.maxlen
        for modality in Modality:
            self.workers.append(inference_worker(self.client, self.names, self.settings.inference, modality.value,
                                                 maxlen))
        self.workers.append(fusion_worker(self.client, self.names, self.settings.fusion, maxlen))
        self.workers += alert_workers(self.client, self.names, self.settings.alerts, maxlen, mqtt=self.mqtt,
                                      stop=self.stop_event)
        for w in self.workers:
            t = threading.Thread(target=w.run, name=w.config.role, daemon=True)
            t.start()
            self.threads.append(t)
        from linewatch.streaming.retention import RetentionKeeper  # redis-memory (issue 8): bounded streams

        self.keeper = RetentionKeeper(self.client, self.names, self.settings.streams.retention)
        self.threads.append(threading.Thread(target=self.keeper.run, name="retention", daemon=True))
        self.threads[-1].start()
        return self

    def stop(self) -> None:
        self.stop_event.set()
        for w in self.workers:
            w.stop()
        if getattr(self, "keeper", None) is not None:
            self.keeper.stop()
        for t in self.threads:
            t.join(timeout=30)
        if getattr(self, "_log", None) is not None:
            self._log.close()


def _median(xs: list[float]) -> str:
    return f"{statistics.median(xs):.0f} ms" if xs else "-"


def _p99(xs: list[float]) -> str:
    if not xs:
        return "-"
    s = sorted(xs)
    return f"{s[min(len(s) - 1, int(0.99 * len(s)))]:.0f} ms"


@dataclass
class ServicesSampler:
    """Reads the newest predictions, verdicts and alerts for the live view."""

    client: redis.Redis
    names: StreamNames

    def _recent(self, streams: list[str], count: int) -> list[object]:
        out = []
        for s in streams:
            out += [decode_message(f) for _, f in self.client.xrevrange(s, count=count)]
        return out

    def _decided_ms(self, alert: Alert) -> int | None:
        """When the verdict that raised ``alert`` was decided (read by its entry id: an alert raised
        early has its verdict far behind the newest ones); None for other sources or a trimmed entry."""
        if alert.source != "verdict" or not alert.verdict_entry_id:
            return None
        found = self.client.xrange(self.names.verdicts(alert.asset_id), alert.verdict_entry_id,
                                   alert.verdict_entry_id, count=1)
        verdict = decode_message(found[0][1]) if found else None
        return verdict.decided_at_ms if isinstance(verdict, Verdict) and verdict.decided_at_ms else None

    def tables(self) -> list[object]:
        from services.alerts.store import AlertStore

        preds = [p for p in self._recent(self.names.all_prediction_streams(), 100) if isinstance(p, Prediction)]
        verdicts = [v for v in self._recent(self.names.all_verdict_streams(), 300) if isinstance(v, Verdict)]
        alerts = [a for a in self._recent([self.names.alerts], 200) if isinstance(a, Alert)]
        latest: dict[str, Verdict] = {}
        for v in sorted(verdicts, key=lambda v: v.decided_at_ms):
            latest[v.asset_id] = v
        store = AlertStore(self.client, self.names)
        open_alerts = store.list(include_members=False)
        by_asset: dict[str, int] = {}
        for r in store.list():
            by_asset[r.asset_id] = by_asset.get(r.asset_id, 0) + 1
        table = Table(title="verdicts per asset (fused)", expand=True)
        for col in ("asset", "verdict", "state", "now", "confidence", "modalities", "open alerts"):
            table.add_column(col)
        for asset, v in sorted(latest.items()):
            colour = "green" if v.label == "normal" else "bold red"
            table.add_row(asset, f"[{colour}]{v.label}[/]", v.state, v.instant_label, f"{v.confidence:.2f}",
                          " ".join(f"{m}={lab}" for m, lab in sorted(v.modalities.items()))
                          + (f" (missing {','.join(v.missing)})" if v.missing else ""), str(by_asset.get(asset, 0)))
        alert_table = Table(title=f"open alerts: {len(open_alerts)}  (linewatch alerts list | ack | shelve | "
                                  "confirm | reject)", expand=True)
        for col in ("id", "priority", "state", "asset", "label", "message"):
            alert_table.add_column(col)
        now = store.now_ms()
        for r in open_alerts[:8]:
            alert_table.add_row(r.alert_id, r.priority, r.state(now), r.asset_id, r.label, r.message[:60])
        to_pred = [p.inferred_at_ms - p.ingest_time_ms for p in preds if p.ingest_time_ms]
        to_verdict = [v.decided_at_ms - v.ingest_time_ms for v in verdicts if v.ingest_time_ms]
        raised = [a.created_at_ms - t for a in alerts
                  if a.event == "raised" and (t := self._decided_ms(a)) is not None]
        lat = Table(title="stage latencies (recent entries)", expand=True)
        for col in ("stage", "p50", "p99", "n"):
            lat.add_column(col)
        lat.add_row("features in Redis -> prediction", _median(to_pred), _p99(to_pred), str(len(to_pred)))
        lat.add_row("features in Redis -> verdict", _median(to_verdict), _p99(to_verdict), str(len(to_verdict)))
        lat.add_row("verdict -> alert", _median(raised), _p99(raised), str(len(raised)))
        return [table, alert_table, lat]


def write_connection(path: Path, url: str, names: StreamNames) -> None:
    """Let ``linewatch alerts ...`` in another terminal find the running demo."""
    from linewatch.cli.serve_cmd import write_connection as write

    write(path, url, names)
