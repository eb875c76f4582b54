"""The governance half of ``linewatch demo``: audit, drift and explain workers as threads, a drift
injected into the simulated line part-way, and the live view of drift alerts and explanations.

Each governance service is imported lazily and guarded: a tree without ``governance.drift`` or
``governance.explain`` (or without their settings section) runs the demo anyway and shows
"drift: not installed". Their factories are called with the keyword arguments they declare among
``maxlen``, ``data_dir``, ``landing`` / ``landing_dir`` and ``consumer`` (see :func:`_call`).
"""

from __future__ import annotations

import importlib
import inspect
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import redis
from rich.table import Table

from linewatch.contract import Alert, DriftReport, Explanation, StreamNames, Verdict, decode_message
from linewatch.settings import Settings
from linewatch.streaming import StreamWorker

if TYPE_CHECKING:
    from linewatch.simulator import Factory

# component -> (module, factory, settings section); factories return a worker or a list of workers
COMPONENTS: dict[str, tuple[str, str, str]] = {
    "audit": ("governance.audit.service", "audit_workers", "audit"),
    "drift": ("governance.drift.service", "drift_workers", "drift"),
    "explain": ("governance.explain.service", "explain_worker", "explain"),
}
FLEET_DRIFT_KINDS = ("ambient_shift",)
#: Practical-significance threshold of the demo's drift worker: a feature drifts only when its median also
#: moved a quarter of the training fleet's standard deviation (the card's reference sample). Measured on the
#: demo line (docs/drift.md "Demo drift"): with the audio windows of 60 clips, a healthy conveyor's 0.3 %
#: speed wander (audio speed estimate moved 0.01-0.09 card sd, p_adj 7.7e-3) raised a false drift at 254 s on
#: seed 2 at 0; the microphone drift moves its band shares 0.66-1.79 card sd.
DEMO_MIN_EFFECT = 0.25


@dataclass(frozen=True)
class DemoDrift:
    """The drift ``linewatch demo`` injects by default: the last asset's microphone loses high-frequency
    sensitivity (dust or condensate on the membrane, a clogged protective mesh: ``mic_degradation``). At
    ``magnitude`` 1 its response rolls off above 2 kHz (second order), with 6 dB less gain and twice the noise
    floor: the 2.5-7.2 kHz bands where bearing defects ring are then mostly gone, so the audio model goes deaf
    to them while the machine is fine. It starts at ``onset_s`` (when the audio asset baselines are complete:
    15 s warm-up + 120 clips at 1/s; never later than 40 % of a shorter run) and ramps over ``ramp_s``."""

    kind: str = "mic_degradation"
    magnitude: float = 1.0
    onset_s: float = 135.0
    ramp_s: float = 20.0

    def onset_ramp(self, seconds: float) -> tuple[float, float]:
        """(onset, ramp) in simulated seconds of a run of ``seconds``."""
        return min(self.onset_s, 0.4 * seconds), min(self.ramp_s, 0.1 * seconds)


DEMO_DRIFT = DemoDrift()
#: Audio windows of the demo line: clips arrive at 1/s per asset and their model-input vectors are nearly
#: independent (per-clip noise; docs/drift.md "Demo drift"), so 120 clips of baseline and windows of 60 give
#: the KS test effective sizes above ``min_n_eff``. PLC keeps the configured sizes. Thermal: fleet windows
#: only, from thermal steady state (warm-up 300 s, five of the simulator's 60-s thermal time constants).
#: Measured on the demo line: thermal asset windows drift against their own baselines on healthy machines
#: whether the baseline starts at 15 s (6 of 6 at 264 s) or at 300 s (4 of 5 healthy raised by 850 s on a
#: 900-s line): the thermal features wander with load and stops over minutes; and a thermal fleet baseline
#: taken during the warm-up (15-57 s) raised a false fleet alarm at 306 s on seed 1.
DEMO_AUDIO_WINDOWS = {"window": 60, "baseline_size": 120}
DEMO_THERMAL_WARMUP_S = 300.0


def demo_simulator_config(config: Any) -> Any:
    """The demo's simulator: no random drift or fault episodes (``drift_fraction``, ``fault_fraction`` 0), so
    the line shows what ``--drift`` and ``--fault`` inject, at known times. (The scenario's own faults start
    from ~80 s of a run; on a 6-min line they move their assets' sound too: measured, seed 1's cooling
    failure and imbalance drifted two assets' audio windows, docs/drift.md "Demo drift".)"""
    return config.model_copy(update={"drift_fraction": 0.0, "fault_fraction": 0.0})


def demo_drift_settings(section: Any, seconds: float) -> tuple[Any, str]:
    """The drift section for the demo line: PLC window sizes as configured (shorter PLC windows drift on a
    machine's natural wander, docs/drift.md "Live lines"), audio windows for clips at 1/s, thermal on fleet
    windows from thermal steady state (:data:`DEMO_AUDIO_WINDOWS` and below), the fleet tested against the
    line's own first fleet window (``fleet_reference="baseline"``: six demo machines are not the training
    fleet of the card; measured, every fleet window of them differs from the card), and at least
    :data:`DEMO_MIN_EFFECT`. Configured values win. Returns (section, note for the view)."""
    fields = getattr(type(section), "model_fields", {})
    if "fleet_reference" in fields and section.fleet_reference != "baseline":
        section = section.model_copy(update={"fleet_reference": "baseline"})
    if "min_effect" in fields and section.min_effect < DEMO_MIN_EFFECT:
        section = section.model_copy(update={"min_effect": DEMO_MIN_EFFECT})
    if "modality_windows" in fields:
        from linewatch.governance_settings import ModalityWindows

        demo = {"audio": ModalityWindows(**DEMO_AUDIO_WINDOWS),  # type: ignore[arg-type]
                "thermal": ModalityWindows(warmup_s=DEMO_THERMAL_WARMUP_S, asset_windows=False)}
        section = section.model_copy(update={"modality_windows": {**demo, **section.modality_windows}})
    if not {"baseline_size", "window", "warmup_s"} <= set(fields):
        return section, ""
    windows = section.windows if callable(getattr(section, "windows", None)) else (
        lambda m: (section.window, section.baseline_size, section.fleet_window, section.warmup_s))
    effect = float(getattr(section, "min_effect", 0.0))
    note = (f"drift counts a feature when it also moved >= {effect:g} card sd; " if effect > 0 else
            "drift tests each feature with its effective sample size (serially dependent vectors); ")
    firsts = {}
    parts = []
    for m, rate in (("audio", 1.0), ("thermal", 2.0), ("plc", 1.0)):  # vectors per second per asset
        w, b, fw, warm = windows(m)
        if callable(getattr(section, "asset_windows", None)) and not section.asset_windows(m):
            parts.append(f"{m} fleet windows only, {warm:.0f} s warm-up + 2 x {fw} (~{6 * rate:g}/s for 6 "
                         f"assets): first decision ~{warm + 2 * fw / (6 * rate):.0f} s")
            continue
        firsts[m] = float(warm) + (b + w) / rate
        parts.append(f"{m} {warm:.0f} s + {b} + {w} at {rate:g}/s: first decision ~{firsts[m]:.0f} s")
    note += "asset windows (warm-up + baseline + window vectors): " + "; ".join(parts)
    first = min(firsts.values())
    if first > seconds:
        w, *_ = windows("audio")
        note += f"; later than this {seconds:.0f} s run (use --seconds {int(first + 3 * w)})"
    return section, note


def _call(factory: Callable[..., Any], client: redis.Redis, names: StreamNames, section: object,
          settings: Settings, data_dir: Path) -> list[StreamWorker]:
    """``factory(client, names, section, **known)`` with the keywords it declares; always a list."""
    known = {"maxlen": settings.streams.maxlen, "data_dir": data_dir, "landing": settings.landing,
             "landing_dir": settings.landing}
    params = inspect.signature(factory).parameters
    got = factory(client, names, section, **{k: v for k, v in known.items() if k in params})
    return list(got) if isinstance(got, list | tuple) else [got]


def add_drift(factory: Factory, kind: str, onset_s: float, ramp_s: float, magnitude: float | None = None) -> str:
    """Add a drift event to the simulator's scenario (simulated seconds since the start): one asset's
    sensor (the fleet's last asset), or every asset for a fleet-wide kind (``ambient_shift``).
    ``magnitude`` defaults to 1.5 x the difficulty profile's drift magnitude. Returns what was added."""
    from linewatch.simulator.drift import DRIFT_KINDS, DriftEvent

    if kind not in DRIFT_KINDS:
        raise ValueError(f"unknown drift kind {kind!r}; choose one of {', '.join(DRIFT_KINDS)} or none")
    scenario = factory.scenario
    if scenario is None:
        raise RuntimeError("the simulator has not started its scenario yet")
    assets = [a.asset_id for a in factory.fleet] if kind in FLEET_DRIFT_KINDS else [factory.fleet[-1].asset_id]
    magnitude = 1.5 * factory.profile.drift_magnitude if magnitude is None else magnitude
    for aid in assets:
        scenario.drifts[aid].append(DriftEvent(asset_id=aid, kind=kind, onset_s=onset_s, ramp_s=ramp_s,
                                               end_s=float("inf"), magnitude=magnitude))
    where = "every asset" if len(assets) > 1 else assets[0]
    return f"{kind} on {where} from t={onset_s:.0f} s (ramp {ramp_s:.0f} s, magnitude {magnitude:.2g})"


def add_fault(factory: Factory, fault: str, onset_s: float, ramp_s: float) -> str:
    """Start a fault episode early in the run (simulated seconds), so that a short demo shows a fault
    verdict, its alert and its explanation: the realtime scenario deals faults over blocks of
    ``realtime_episode_s`` (600 s; onsets 5-45 % in, labels later still), too late for a short run.
    The episode starts at the label threshold and grows exponentially to severity 1 at
    ``onset_s + ramp_s``; it goes to an asset without a fault of its own in the run, not the
    drift-injected (last) one. Returns what was started."""
    import math

    from linewatch.simulator.health import FAULTS, LABEL_THRESHOLD, VARIANTS, FaultEpisode, faults_for

    if fault not in FAULTS:
        raise ValueError(f"unknown fault {fault!r}; choose one of {', '.join(FAULTS)} or none")
    scenario = factory.scenario
    if scenario is None:
        raise RuntimeError("the simulator has not started its scenario yet")
    horizon = onset_s + ramp_s
    candidates = [a for a in factory.fleet[:-1] or factory.fleet if fault in faults_for(a.asset_type)]
    if not candidates:
        raise ValueError(f"no simulated asset can develop {fault} (cavitation needs a pump: add assets)")
    quiet = [a for a in candidates if all(e.onset_s > 2 * horizon for e in scenario.episodes[a.asset_id])]
    asset = (quiet or candidates)[0]
    s0 = LABEL_THRESHOLD
    episode = FaultEpisode(asset_id=asset.asset_id, fault=fault, variant=VARIANTS[fault][0], onset_s=onset_s,
                           end_s=float("inf"), s0=s0, rate=math.log(1.0 / s0) / max(ramp_s, 1e-3),
                           warp_amp=(0.0,), warp_omega=(1.0,), warp_phase=(0.0,))
    scenario.episodes[asset.asset_id].append(episode)  # the last episode wins where they overlap
    return f"{fault} ({episode.variant}) on {asset.asset_id} from t={onset_s:.0f} s, severity 1 at t={horizon:.0f} s"


@dataclass
class DemoGovernance:
    """Audit, drift and explain workers of the demo (each that is installed), as threads."""

    client: redis.Redis
    names: StreamNames
    settings: Settings
    data_dir: Path  #: the demo's own state directory (audit store, heatmaps)
    status: dict[str, str] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    workers: list[StreamWorker] = field(default_factory=list)
    threads: list[threading.Thread] = field(default_factory=list)
    injected: str = ""
    fault: str = ""
    run_seconds: float | None = None  #: the demo's length (the view says when the first drift window can end)

    def start(self) -> DemoGovernance:
        for name, (module, attr, section_name) in COMPONENTS.items():
            section = getattr(self.settings, section_name, None)
            try:
                factory = getattr(importlib.import_module(module), attr)
            except ModuleNotFoundError as exc:
                if exc.name is not None and module.startswith(exc.name):
                    self.status[name] = "not installed"
                    continue
                self.status[name] = f"unavailable: {exc} (pip install 'linewatch[governance]')"
                continue
            except (ImportError, AttributeError) as exc:
                self.status[name] = f"unavailable: {exc}"
                continue
            if section is None:
                self.status[name] = f"not configured (no settings section '{section_name}')"
                continue
            scaled = ""
            if name == "drift" and self.run_seconds is not None:
                section, scaled = demo_drift_settings(section, self.run_seconds)
            try:
                workers = _call(factory, self.client, self.names, section, self.settings, self.data_dir)
            except Exception as exc:  # a governance service that cannot start must not stop the line
                self.status[name] = f"failed to start: {type(exc).__name__}: {exc}"
                continue
            self.workers += workers
            self.status[name] = "running"
            if scaled:
                self.notes[name] = scaled
        for w in self.workers:
            t = threading.Thread(target=w.run, name=w.config.role, daemon=True)
            t.start()
            self.threads.append(t)
        return self

    def stop(self) -> None:
        for w in self.workers:
            w.stop()
        for t in self.threads:
            t.join(timeout=30)

    def audit_path(self) -> Path:
        return self.settings.audit.store_path(self.data_dir)

    def inject_drift(self, factory: Factory, kind: str, onset_s: float, ramp_s: float,
                     magnitude: float | None = None) -> str:
        """Add a drift to the running simulator's scenario (see :func:`add_drift`); the view says what."""
        self.injected = add_drift(factory, kind, onset_s, ramp_s, magnitude)
        return self.injected

    def inject_fault(self, factory: Factory, fault: str, onset_s: float, ramp_s: float) -> str:
        """Start a fault episode early in the run (see :func:`add_fault`); the view says what."""
        self.fault = add_fault(factory, fault, onset_s, ramp_s)
        return self.fault

    # -- live view -------------------------------------------------------------------------------
    def _recent(self, stream: str, count: int) -> list[tuple[str, object]]:
        out: list[tuple[str, object]] = []
        entries: list[tuple[bytes, dict[bytes | str, bytes | str]]] = self.client.xrevrange(stream, count=count)  # type: ignore[assignment]
        for eid, fields in entries:
            try:
                out.append((eid.decode(), decode_message(fields)))
            except ValueError:
                continue
        return out

    def tables(self) -> list[object]:
        status = "   ".join(f"{k}: [{'green' if v == 'running' else 'yellow'}]{v}[/]" for k, v in self.status.items())
        parts: list[object] = [f"[bold]governance[/bold]   {status}"]
        if self.injected:
            parts.append(f"drift injected into the simulated line: {self.injected}")
        if self.fault:
            parts.append(f"fault started in the simulated line: {self.fault}")
        parts += [f"{k}: {v}" for k, v in self.notes.items()]
        if self.status.get("drift") == "running":
            parts += self._drift_table()
        else:
            parts.append(f"drift: {self.status.get('drift', 'off')}")
        parts.append(self._explanation_table() if self.status.get("explain") == "running"
                     else f"explain: {self.status.get('explain', 'off')}")
        parts.append(self._audit_table())
        return parts

    def summary(self) -> str:
        return ", ".join(f"{k}: {v}" for k, v in self.status.items())

    def _drift_table(self) -> list[object]:
        reports = [m for _, m in self._recent(self.names.drift(), 200) if isinstance(m, DriftReport)]
        alerts = [m for _, m in self._recent(self.names.alerts, 300) if isinstance(m, Alert) and m.source == "drift"]
        raised = [a for a in alerts if a.event == "raised"]
        table = Table(title=f"drift: {len(reports)} recent report(s), {len(raised)} drift alert(s) raised", expand=True)
        for col in ("window end", "scope", "asset", "modality", "kind", "state", "cause",
                    "drifted features (KS D, p adj., effect sd)", "not tested"):
            table.add_column(col)
        shown = [r for r in reports if r.drifted or r.state != "normal"][:6]
        for r in shown:
            feats = ", ".join(f"{f.name} {f.statistic:.2f} {f.p_adjusted:.1g} {f.effect_size:+.1f}"
                              for f in [f for f in r.features if f.drifted][:2])
            colour = "red" if r.state == "raised" else "yellow" if r.drifted else "green"
            untested = [f for f in r.skipped if f.reason != "availability_flag"]
            table.add_row(time.strftime("%H:%M:%S", time.localtime(r.window_end_ms / 1000)), r.scope, r.asset_id,
                          r.modality, r.kind, f"[{colour}]{r.state}[/]", r.cause or "-", feats[:90] or "-",
                          f"{len(untested)} (n_eff)" if untested else "-")
        parts: list[object] = [table]
        if raised:  # the newest drift alert as the operator gets it: features, statistics, window, cause
            newest = max(raised, key=lambda a: a.created_at_ms)
            parts.append(f"[bold]newest drift alert[/bold] ({newest.asset_id}): {newest.message[:600]}")
        return parts

    def _explanation_table(self) -> Table:
        verdicts = []
        for shard in range(self.names.shards):
            verdicts += [(eid, m) for eid, m in self._recent(self.names.verdicts_shard(shard), 200)
                         if isinstance(m, Verdict) and m.state == "raised"]
        explained = {m.verdict_entry_id: m for _, m in self._recent(self.names.explanations(), 100)
                     if isinstance(m, Explanation)}
        # every evaluation of a raised fault is a verdict entry; explain explains the episode (first verdict, then
        # throttled): count the faults (asset, label) raised lately that have no explanation at all
        have = {(e.asset_id, e.label) for e in explained.values()}
        waiting = {(m.asset_id, m.label) for _, m in verdicts} - have
        table = Table(title=f"explanations of fault verdicts: {len(explained)} recent; {len(waiting)} raised "
                      f"fault(s) not explained yet{': ' + ', '.join(sorted(a for a, _ in waiting)) if waiting else ''}",
                      expand=True)
        for col in ("asset", "fault", "top features (LIME)", "rule hit", "agree", "stability"):
            table.add_column(col)
        for e in sorted(explained.values(), key=lambda e: e.explained_at_ms, reverse=True)[:6]:
            feats = "; ".join(f"{m.modality}: " + ", ".join(f.name for f in m.top_features[:2]) for m in e.modalities)
            rule = f"{e.rule_hits[0].rule_id}: {e.rule_hits[0].cause}" if e.rule_hits else "none"
            stability = min((m.stability for m in e.modalities), default=0.0)
            table.add_row(e.asset_id, e.label, feats[:60] or "-", rule[:40],
                          "[green]yes[/]" if e.agreement else "[yellow]no[/]", f"{stability:.2f}")
        return table

    def _audit_table(self) -> Table | str:
        if self.status.get("audit") != "running":
            return f"audit: {self.status.get('audit', 'off')}"
        path = self.audit_path()
        if not path.is_file():
            return "audit trail: starting"
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)  # the view only reads
        try:
            n = int(conn.execute("SELECT COUNT(*) FROM audit_log").fetchone()[0])
            rows = conn.execute("SELECT kind, event, actor, summary FROM audit_log ORDER BY seq DESC LIMIT 4").fetchall()
        except sqlite3.Error as exc:
            return f"audit trail: {exc}"
        finally:
            conn.close()
        table = Table(title=f"audit trail: {n} row(s) in {path} (linewatch audit tail --path ...)", expand=True)
        for col in ("kind", "event", "who", "what"):
            table.add_column(col)
        for kind, event, actor, summary in reversed(rows):
            table.add_row(kind, event, actor, summary[:70])
        return table


@dataclass
class Views:
    """Several live-view sources as one (``render`` calls ``tables()``)."""

    views: list[Any]

    def tables(self) -> list[object]:
        return [t for v in self.views for t in v.tables()]
