"""What the demo shows an operator: arrivals per asset, feature streams, dead letters, latency."""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import redis
from rich.console import Group
from rich.panel import Panel
from rich.table import Table

from linewatch.contract import DeadLetter, Modality, StreamNames, decode_message

ARRIVAL_KINDS = ("plc", "alarms", "thermal", "audio")


class ArrivalCounter:
    """Thread-safe tally of the files the gateway (simulator) closed, per asset and kind."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[tuple[str, str]] = Counter()

    def on_file(self, path: Path, kind: str) -> None:
        if kind not in ARRIVAL_KINDS:
            return
        path = Path(path)
        if kind in ("thermal", "audio"):
            asset = path.parent.name
        else:  # plc-PMP-01-<stamp>.csv, alarms-PMP-01-<stamp>.log
            asset = "-".join(path.stem.split("-")[1:3])
        with self._lock:
            self._counts[(asset, kind)] += 1

    def snapshot(self) -> Counter[tuple[str, str]]:
        with self._lock:
            return Counter(self._counts)


@dataclass
class StreamSampler:
    """Reads stream lengths, ingest counters and the newest dead letters from Redis."""

    client: redis.Redis
    names: StreamNames
    stats_key: str
    _last: dict[Modality, tuple[float, int]] = field(default_factory=dict)

    def modality_counts(self) -> dict[Modality, tuple[int, float]]:
        """Entries per modality (all shards) and the rate since the previous call."""
        now = time.monotonic()
        pipe = self.client.pipeline(transaction=False)
        for modality in Modality:
            for shard in range(self.names.shards):
                pipe.xlen(self.names.features_shard(modality, shard))
        lengths = pipe.execute()
        out: dict[Modality, tuple[int, float]] = {}
        for i, modality in enumerate(Modality):
            total = int(sum(lengths[i * self.names.shards:(i + 1) * self.names.shards]))
            t0, n0 = self._last.get(modality, (now, total))
            rate = (total - n0) / (now - t0) if now > t0 else 0.0
            self._last[modality] = (now, total)
            out[modality] = (total, rate)
        return out

    def stats(self) -> dict[str, str]:
        return {k.decode(): v.decode() for k, v in self.client.hgetall(self.stats_key).items()}

    def recent_dead_letters(self, count: int = 4) -> list[DeadLetter]:
        letters: list[DeadLetter] = []
        for _, fields in self.client.xrevrange(self.names.deadletter, count=count):
            message = decode_message(fields)
            if isinstance(message, DeadLetter):
                letters.append(message)
        return letters


def render(arrivals: ArrivalCounter, sampler: StreamSampler | None, elapsed: float, status: str,
           services: object | None = None) -> Panel:
    counts = arrivals.snapshot()
    assets = Table(title="files closed by the gateway", expand=True)
    assets.add_column("asset", style="cyan")
    for kind in ARRIVAL_KINDS:
        assets.add_column(kind, justify="right")
    for asset in sorted({a for a, _ in counts}):
        assets.add_row(asset, *(str(counts.get((asset, k), 0)) for k in ARRIVAL_KINDS))
    parts: list[object] = [f"[bold]{status}[/bold]   elapsed {elapsed:5.1f} s", assets]
    if sampler is not None:
        stats = sampler.stats()
        streams = Table(title="feature streams (Redis)", expand=True)
        streams.add_column("modality", style="cyan")
        streams.add_column("entries", justify="right")
        streams.add_column("per second", justify="right")
        for modality, (total, rate) in sampler.modality_counts().items():
            streams.add_row(modality.value, str(total), f"{rate:6.1f}")
        p50 = [float(v) for k, v in stats.items() if k.startswith("latency_p50_ms")]
        p99 = [float(v) for k, v in stats.items() if k.startswith("latency_p99_ms")]
        latency = (
            f"ingest latency (file closed → entry in Redis): p50 {max(p50):.0f} ms, p99 {max(p99):.0f} ms"
            if p50 and p99 else "ingest latency: waiting for data"
        )
        reasons = {k.split(".", 1)[1]: v for k, v in stats.items() if k.startswith("deadletters.")}
        dead = Table(title=f"dead letters: {stats.get('deadletters', '0')}", expand=True)
        dead.add_column("reason", style="red")
        dead.add_column("detail")
        dead.add_column("raw data")
        for letter in sampler.recent_dead_letters():
            dead.add_row(letter.reason.value, letter.detail[:60], letter.raw_ref[-50:])
        summary = ", ".join(f"{r}: {n}" for r, n in sorted(reasons.items())) or "none"
        parts += [streams, latency, f"dead letters by reason: {summary}", dead]
    if services is not None:  # services (issue 9): verdicts, open alerts, stage latencies
        parts += services.tables()  # type: ignore[attr-defined]
    return Panel(Group(*parts), title="linewatch demo")
