"""``linewatch serve drift``: the drift workers on the Redis streams.

* ``drift.<modality>`` (group ``drift``): reads every shard of the modality's features (and
  predictions) streams as one lease unit, so one worker sees the whole fleet; feeds the ``vector`` of
  each features entry to :class:`~governance.drift.monitor.FeatureDriftMonitor` and each predicted
  label to a chi-squared test of the label mix.
* ``drift.feedback`` (group ``drift``): operator feedback (``rejected`` = 1, ``confirmed`` = 0) into
  river's EDDM / ADWIN / Page–Hinkley, per model and overall.
* ``shadow.<modality>`` (group ``shadow``): a sampled fraction of the student's predictions is scored
  again by the student's own teacher; teacher ``Prediction`` entries go to
  ``names.shadow_predictions(m)`` and the disagreement stream feeds
  :class:`~governance.drift.shadow.ShadowMonitor`.

Every window with a finding or a state change is a ``DriftReport`` on ``names.drift()``; raise and
clear go to the alert router as ``AlertRequest`` (source ``drift``) on ``names.alert_requests()``,
naming the features, statistics, corrected p-values, effect sizes and the window. Window contents
live in memory: after a restart or a takeover the windows (and asset baselines) fill again.
"""

from __future__ import annotations

import logging
import time
from collections import Counter as Tally
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

import numpy as np
from numpy.typing import NDArray
import redis
from prometheus_client import Counter, Histogram

from governance.drift.cause import CauseRules
from governance.drift.chi2 import chi2_counts
from governance.drift.error_detectors import ErrorStreamMonitor
from governance.drift.faults import FaultEpisode, FaultEpisodes, prediction_fault_share
from governance.drift.monitor import DriftBoard, DriftParams, FeatureDriftMonitor, WindowDecision
from governance.drift.shadow import (
    TEACHER_ROLE,
    ShadowMonitor,
    ShadowSampler,
    ShadowWindow,
    expected_disagreement,
    load_teacher,
)
from governance.drift.window import AlarmEvent, Hysteresis
from linewatch.contract import (
    AlertRequest,
    AudioFeatures,
    ConsumerGroup,
    DeadLetterReason,
    DriftFeature,
    DriftReport,
    DriftSkipped,
    Feedback,
    ModelRef,
    PlcFeatures,
    Prediction,
    StreamNames,
    ThermalFeatures,
    Verdict,
    decode_message,
    encode_message,
)
from linewatch.governance_settings import DriftSettings
from linewatch.streaming import LATENCY_BUCKETS, Batch, Entry, StreamWorker, WorkerConfig, WorkerMetrics
from models.registry import ModelRegistry
from models.registry.card import ModelCard
from models.registry.store import DEFAULT_ROOT
from models.runtime import Runtime, RuntimeSettings

log = logging.getLogger("governance.drift")
SOURCE = "governance.drift"
FEATURE_TYPES = (PlcFeatures, ThermalFeatures, AudioFeatures)
#: Modalities whose whole feature vector comes from one device (cause "sensor" when only it drifts).
SINGLE_DEVICE = {"thermal": "thermal camera", "audio": "microphone"}
#: Features that exist only when an availability flag is 1 (tested where it is; the flag itself is not).
GATES: dict[str, tuple[tuple[str, str], ...]] = {"thermal": (("baseline.", "baseline.baseline_available"),)}
SEVERITY = {"feature": 0.4, "prediction": 0.5, "error": 0.6, "shadow": 0.7}


class DriftMetrics:
    """The drift workers' own Prometheus metrics, in the worker registry (one /metrics)."""

    def __init__(self, metrics: WorkerMetrics) -> None:
        r = metrics.registry
        self.windows = Counter("linewatch_drift_windows", "Drift windows evaluated.", ["role", "kind", "scope"],
                               registry=r)
        self.drifted = Counter("linewatch_drift_windows_drifted", "Windows whose test found drift.",
                               ["role", "kind", "scope"], registry=r)
        self.raised = Counter("linewatch_drift_raised", "Drift alarms raised (after hysteresis).",
                              ["role", "kind", "scope"], registry=r)
        self.seconds = Histogram("linewatch_drift_evaluation_seconds", "Time to evaluate one drift window.",
                                 ["role", "kind"], buckets=LATENCY_BUCKETS, registry=r)
        self.skipped = Counter("linewatch_drift_features_skipped", "Features not tested in a drift window, by "
                               "reason (n_eff: fewer effective draws than min_n_eff).",
                               ["role", "scope", "reason"], registry=r)
        self.shadow_scored = Counter("linewatch_shadow_scored", "Predictions scored again by the teacher.",
                                     ["role"], registry=r)
        self.shadow_disagreements = Counter("linewatch_shadow_disagreements", "Teacher and student disagree.",
                                            ["role"], registry=r)
        self.shadow_skipped = Counter("linewatch_shadow_skipped", "Sampled predictions not scored, by reason.",
                                      ["role", "reason"], registry=r)

    def count(self, role: str, kind: str, scope: str, drifted: bool, event: str) -> None:
        self.windows.labels(role=role, kind=kind, scope=scope).inc()
        if drifted:
            self.drifted.labels(role=role, kind=kind, scope=scope).inc()
        if event == "raised":
            self.raised.labels(role=role, kind=kind, scope=scope).inc()


def _now_ms(clock: Callable[[], float]) -> int:
    return int(clock() * 1000)


def _alert(report: DriftReport, event: AlarmEvent, message: str, details: dict[str, Any]) -> AlertRequest:
    return AlertRequest(
        source="drift", episode_key=f"drift:{report.kind}:{report.modality}:{report.asset_id}",
        asset_id=report.asset_id, label=f"{report.kind}_drift", severity=SEVERITY[report.kind],
        state="raise" if event == "raised" else "clear", message=message, details=details,
        event_time_ms=report.window_end_ms)


def _feature_details(report: DriftReport, limit: int = 12) -> dict[str, Any]:
    return {
        "kind": report.kind, "scope": report.scope, "modality": report.modality, "cause": report.cause,
        "cause_detail": report.cause_detail, "correction": report.correction, "alpha": report.alpha,
        "window": {"start_ms": report.window_start_ms, "end_ms": report.window_end_ms, "n_live": report.n_live,
                   "n_reference": report.n_reference},
        "features": [{"name": f.name, "test": f.test, "statistic": round(f.statistic, 4), "p_value": f.p_value,
                      "p_adjusted": f.p_adjusted, "effect_size": round(f.effect_size, 3), "drifted": f.drifted}
                     for f in report.features[:limit]],
        "skipped": [f.model_dump(exclude_none=True) for f in report.skipped],
        "detector": report.detector, "error_rate": report.error_rate,
        "model": report.model.model_dump() if report.model else None,
    }


def _window_text(report: DriftReport) -> str:
    start = time.strftime("%H:%M:%S", time.gmtime(report.window_start_ms / 1000))
    end = time.strftime("%H:%M:%S", time.gmtime(report.window_end_ms / 1000))
    return f"window {report.n_live} live vs {report.n_reference} reference, {start}-{end} UTC"


def feature_message(report: DriftReport, event: AlarmEvent) -> str:
    where = "the fleet" if report.scope == "fleet" else report.asset_id
    if event == "cleared":
        return f"{report.modality} {report.kind} drift on {where} cleared ({_window_text(report)})"
    top = "; ".join([f"{f.name} {f.test.upper()} {f.statistic:.2f} p_adj {f.p_adjusted:.1e} effect "
                     f"{f.effect_size:+.2f}" for f in report.features if f.drifted][:3])
    cause = f"suspected cause: {report.cause}" + (f": {report.cause_detail}" if report.cause == "fault" else "")
    return (f"{report.modality} {report.kind} drift on {where} ({cause}): {top} "
            f"[{report.correction} alpha {report.alpha}; {_window_text(report)}]{skipped_text(report.skipped)}")


def skipped_text(skipped: list[DriftSkipped], limit: int = 4) -> str:
    """``; not tested: ...`` for the features a window left out (the availability flags are not news)."""
    shown = [f for f in skipped if f.reason != "availability_flag"]
    if not shown:
        return ""
    by: dict[str, list[str]] = {}
    for f in shown:
        by.setdefault(f.reason, []).append(f.name)
    what = {"n_eff": "too few effective draws", "no_live_values": "no live values", "no_reference": "no reference"}
    parts = [f"{len(v)} ({what[r]}: {', '.join(v[:limit])}{', ...' if len(v) > limit else ''})" for r, v in by.items()]
    return f"; not tested: {'; '.join(parts)}"


@dataclass(frozen=True)
class DeployedModel:
    """The registry version the drift checks refer to (the one inference serves)."""

    modality: str
    directory: Path
    card: ModelCard
    ref: ModelRef

    @classmethod
    def load(cls, settings: DriftSettings, modality: str) -> DeployedModel:
        registry = ModelRegistry(settings.registry or DEFAULT_ROOT)
        reg = registry.get(modality, settings.model_version)
        role = reg.card.serving_role
        return cls(modality, reg.directory, reg.card,
                   ModelRef(name=reg.card.name, version=reg.card.version, sha256=reg.card.files[role].sha256))

    def reference(self) -> tuple[list[str], NDArray[Any], NDArray[Any] | None]:
        """(feature names, reference vectors, reference labels) of the card's reference sample."""
        info = self.card.reference
        with np.load(self.directory / info["path"], allow_pickle=False) as z:
            names = [str(n) for n in z["names"]]
            labels = z["labels"] if "labels" in z.files else None
            return names, np.asarray(z["features"], np.float64), labels


class _CountMix:
    """Chi-squared drift of a category mix (predicted labels, PLC alarm families) against a reference:
    the counts of the first ``baseline`` entries (or given counts), then windows of ``window`` entries."""

    def __init__(self, baseline: int, window: int, hysteresis: Hysteresis,
                 reference: dict[str, int] | None = None) -> None:
        self.baseline_entries, self.window_entries = baseline, window
        self.reference = reference
        self.hysteresis = hysteresis
        self.baseline: Tally[str] = Tally()
        self.n_baseline = 0
        self.window: Tally[str] = Tally()
        self.n_window = 0
        self.start_ms: int | None = None
        self.baseline_by_key: dict[str, Tally[str]] = {}  #: per asset: which asset's entries moved
        self.window_by_key: dict[str, Tally[str]] = {}
        self.last_by_key: tuple[dict[str, dict[str, int]], dict[str, dict[str, int]]] = ({}, {})

    def add(self, counts: Mapping[str, int], time_ms: int,
            key: str = "") -> tuple[dict[str, int], dict[str, int], int, int] | None:
        if self.reference is None:
            self.baseline.update(counts)
            self.baseline_by_key.setdefault(key, Tally()).update(counts)
            self.n_baseline += 1
            if self.n_baseline >= self.baseline_entries:
                self.reference = dict(self.baseline)
            return None
        self.window.update(counts)
        self.window_by_key.setdefault(key, Tally()).update(counts)
        self.n_window += 1
        self.start_ms = time_ms if self.start_ms is None else self.start_ms
        if self.n_window < self.window_entries:
            return None
        out = (self.reference, dict(self.window), self.start_ms, time_ms)
        self.last_by_key = ({k: dict(v) for k, v in self.baseline_by_key.items()},
                            {k: dict(v) for k, v in self.window_by_key.items()})
        self.window, self.n_window, self.start_ms, self.window_by_key = Tally(), 0, None, {}
        return out


def alarm_mix(alarm_counts: Mapping[str, int]) -> dict[str, int]:
    """A PLC window's alarm activations per family, plus ``quiet`` = 1 for a window without any (so a
    line that starts or stops alarming changes the mix too)."""
    counts = {f: int(n) for f, n in alarm_counts.items() if n > 0}
    return counts or {"quiet": 1}


def fault_episodes(client: redis.Redis, names: StreamNames, start_ms: int, end_ms: int, page: int = 2000,
                   max_entries: int = 50_000, slack_ms: int = 60_000) -> FaultEpisodes:
    """The fault episodes fusion held open during [start_ms, end_ms] (event time), from the verdict shards
    read newest first (fusion writes a verdict per evaluation, ``state`` raised while it holds a fault)
    until entries older than the window (less ``slack_ms`` for late arrivals) or ``max_entries`` per shard."""
    verdicts: list[Verdict] = []
    for shard in range(names.shards):
        stream, upper, seen = names.verdicts_shard(shard), "+", 0
        while seen < max_entries:
            got: Any = client.xrevrange(stream, max=upper, count=page)
            if not got:
                break
            oldest = end_ms
            for _, fields in got:
                try:
                    v = decode_message(fields)
                except ValueError:
                    continue
                if isinstance(v, Verdict):
                    oldest = min(oldest, v.event_time_ms)
                    if start_ms <= v.event_time_ms <= end_ms:
                        verdicts.append(v)
            seen += len(got)
            last = got[-1][0]
            upper = "(" + (last.decode() if isinstance(last, bytes) else str(last))
            if oldest < start_ms - slack_ms or len(got) < page:
                break
    episodes = FaultEpisodes()
    for v in sorted(verdicts, key=lambda v: v.event_time_ms):
        episodes.update(v.asset_id, v.label, v.state, v.event_time_ms)
    return episodes


def _episodes_text(episodes: list[FaultEpisode]) -> str:
    return ", ".join(f"{e.label} on {e.asset_id} (fusion verdict raised, seen from "
                     f"{time.strftime('%H:%M:%S', time.gmtime(e.start_ms / 1000))} UTC in this window)"
                     for e in episodes)


def drift_params(settings: DriftSettings, modality: str) -> DriftParams:
    """The feature-drift parameters of ``modality`` (its window sizes, gates and single device)."""
    s = settings
    window, baseline, fleet_window, warmup_s = s.windows(modality)
    return DriftParams(window=window, fleet_window=fleet_window, baseline_size=baseline,
                       asset_reference=s.asset_reference, fleet_reference=s.fleet_reference, alpha=s.alpha,
                       correction=s.correction, raise_after=s.raise_after, clear_after=s.clear_after,
                       cooldown=s.cooldown, fleet_horizon_ms=s.fleet_horizon_ms,
                       rules=CauseRules(s.fleet_fraction, s.min_fleet_assets, s.sensor_max_groups),
                       single_device=SINGLE_DEVICE.get(modality), warmup_ms=int(warmup_s * 1000),
                       asset_windows=s.asset_windows(modality),
                       min_effect=s.min_effect, gates=GATES.get(modality, ()), serial=s.serial_dependence,
                       min_n_eff=s.min_n_eff)


class FeatureDriftHandler:
    """Handler of ``drift.<modality>``: feature windows (asset + fleet) and the predicted-label mix."""

    def __init__(self, modality: str, names: StreamNames, settings: DriftSettings, model: DeployedModel,
                 metrics: WorkerMetrics, drift_metrics: DriftMetrics, maxlen: int,
                 clock: Callable[[], float] = time.time, board: DriftBoard | None = None,
                 client: redis.Redis | None = None) -> None:
        self.modality = modality
        self.client = client  #: reads the verdicts (open fault episodes) when a window drifts; None: never
        self.names = names
        self.settings = settings
        self.model = model
        self.maxlen = maxlen
        self.clock = clock
        self.role = f"drift.{modality}"
        self.metrics = drift_metrics
        feature_names, reference, labels = model.reference()
        s = settings
        params = drift_params(settings, modality)
        self.monitor = FeatureDriftMonitor(feature_names, reference, params, modality, board)
        card_counts = None
        if labels is not None and s.prediction_reference == "card":
            classes = model.card.classes
            card_counts = dict(Tally(classes[int(i)] for i in labels))
        self.labels = _CountMix(s.prediction_baseline, s.prediction_window,
                                Hysteresis(s.raise_after, s.clear_after, s.cooldown), card_counts)
        self.alarms = _CountMix(params.baseline_size, params.fleet_window,
                                Hysteresis(s.raise_after, s.clear_after, s.cooldown))

    def inputs(self, unit: int) -> list[str]:
        streams = [self.names.features_shard(self.modality, s) for s in range(self.names.shards)]
        if self.settings.prediction_drift:
            streams += [self.names.predictions_shard(self.modality, s) for s in range(self.names.shards)]
        return streams

    def handle(self, batch: Batch) -> None:
        for entry in batch.entries:
            msg = batch.decode(entry, *FEATURE_TYPES, Prediction)
            if msg is None:
                continue
            commit = batch.commit(batch.shard(entry))
            if isinstance(msg, Prediction):
                self._prediction(commit, msg)
                batch.ack(entry)
                continue
            feat = cast(PlcFeatures | ThermalFeatures | AudioFeatures, msg)
            vec = np.asarray(feat.vector)
            if vec.size == 0:
                batch.dead_letter(entry, DeadLetterReason.SCHEMA_ERROR,
                                  f"{feat.SCHEMA} entry has no model-input vector (features v1 writer); drift "
                                  "needs features v2+: upgrade the pipeline", feat.asset_id, feat.event_time_ms)
                continue
            if vec.size != len(self.monitor.names):
                batch.dead_letter(entry, DeadLetterReason.BAD_SHAPE,
                                  f"vector of {vec.size} values, the deployed {self.model.card.name} "
                                  f"{self.model.card.version} reads {len(self.monitor.names)}: features "
                                  "version mismatch", feat.asset_id, feat.event_time_ms)
                continue
            t0 = time.perf_counter()
            decisions = self.monitor.add(feat.asset_id, vec, feat.event_time_ms)
            if decisions:
                self.metrics.seconds.labels(role=self.role, kind="feature").observe(time.perf_counter() - t0)
            for d in decisions:
                self._emit_feature(commit, d)
            if isinstance(feat, PlcFeatures):
                self._alarms(commit, feat)
            batch.ack(entry)

    def _fault_cause(self, d: WindowDecision) -> tuple[str, str] | None:
        """(cause, detail) "fault" when fusion held a fault open on the drifted asset during the window."""
        if self.client is None or d.scope != "asset" or not self.settings.fault_verdicts:
            return None
        eps = fault_episodes(self.client, self.names, d.start_ms, d.end_ms).open_during(d.start_ms, d.end_ms,
                                                                                         d.asset_id)
        if not eps:
            return None
        return "fault", (f"{d.asset_id}'s features moved with an open fault episode, {_episodes_text(eps)}: the "
                         "machine is faulting, not a sensor ageing or a stale model")

    def _report(self, d: WindowDecision) -> DriftReport:
        s = self.settings
        feats = [DriftFeature(name=f.name, test="ks", statistic=f.statistic, p_value=f.p_value,
                              p_adjusted=f.p_adjusted, effect_size=_finite(f.effect_size), drifted=f.drifted)
                 for f in d.features]
        state: Literal["normal", "raised", "cleared"] = (
            d.event if d.event != "normal" else ("raised" if d.raised else "normal"))
        cause, detail = (d.cause.cause, d.cause.detail) if d.cause else ("", "")
        if cause:
            cause, detail = self._fault_cause(d) or (cause, detail)
        skipped = [DriftSkipped(name=f.name, reason=f.reason, n_eff_live=f.n_eff_live,
                                n_eff_reference=f.n_eff_reference) for f in d.skipped]
        return DriftReport(kind="feature", scope=d.scope, asset_id=d.asset_id, modality=self.modality,
                           window_start_ms=d.start_ms, window_end_ms=d.end_ms, n_live=d.n_live,
                           n_reference=d.n_reference, drifted=d.drifted, state=state, cause=cause,
                           cause_detail=detail, correction=s.correction, alpha=s.alpha, features=feats,
                           skipped=skipped, detector="ks", model=self.model.ref, decided_at_ms=_now_ms(self.clock))

    def _emit_feature(self, commit: Any, d: WindowDecision) -> None:
        self.metrics.count(self.role, "feature", d.scope, d.drifted, d.event)
        for reason, n in Tally(f.reason for f in d.skipped).items():
            self.metrics.skipped.labels(role=self.role, scope=d.scope, reason=reason).inc(n)
        if not d.drifted and d.event == "normal" and not d.raised:
            return
        report = self._report(d)
        commit.xadd(self.names.drift(), encode_message(report), maxlen=self.maxlen)
        if d.event != "normal":
            details = _feature_details(report)
            commit.xadd(self.names.alert_requests(), encode_message(
                _alert(report, d.event, feature_message(report, d.event), details)), maxlen=self.maxlen)
            log.info("feature drift %s", d.event, extra={"asset": d.asset_id, "scope": d.scope,
                                                          "features": d.drifted_names[:5]})

    def _prediction(self, commit: Any, pred: Prediction) -> None:
        got = self.labels.add({pred.label: 1}, pred.event_time_ms, pred.asset_id)
        if got is not None:
            self._emit_counts(commit, self.labels, got, "prediction", "label", "predicted-label mix")

    def _alarms(self, commit: Any, feat: PlcFeatures) -> None:
        got = self.alarms.add(alarm_mix(feat.alarm_counts), feat.event_time_ms)
        if got is not None:
            self._emit_counts(commit, self.alarms, got, "feature", "alarm_counts", "PLC alarm-family mix")

    def _prediction_cause(self, mix: _CountMix, start_ms: int, end_ms: int, shares: str) -> tuple[str, str]:
        """("fault", which assets and verdicts) when assets with an open fault episode account for at least
        ``fault_share`` of the predicted-label shift; else ("model", the shares)."""
        if self.client is None or not self.settings.fault_verdicts:
            return "model", shares
        open_eps = fault_episodes(self.client, self.names, start_ms, end_ms).open_during(start_ms, end_ms)
        faulted = {e.asset_id for e in open_eps}
        share, parts = prediction_fault_share(*mix.last_by_key, faulted)
        if not faulted or share < self.settings.fault_share:
            extra = f"; open fault episodes account for {share:.0%} of the shift" if faulted else ""
            return "model", shares + extra
        eps = [e for e in open_eps if e.asset_id in parts]
        return "fault", (f"{share:.0%} of the shift comes from assets with an open fault episode: "
                         f"{_episodes_text(eps)}; the predictions follow a real fault, the model is not stale "
                         f"({shares})")

    def _emit_counts(self, commit: Any, mix: _CountMix, got: tuple[dict[str, int], dict[str, int], int, int],
                     kind: Literal["prediction", "feature"], name: str, what: str) -> None:
        reference, live, start, end = got
        t0 = time.perf_counter()
        r = chi2_counts(reference, live)
        self.metrics.seconds.labels(role=self.role, kind=kind).observe(time.perf_counter() - t0)
        s = self.settings
        drifted = r.p_value <= s.alpha
        event = mix.hysteresis.update(drifted)
        self.metrics.count(self.role, kind, "fleet", drifted, event)
        if not drifted and event == "normal" and not mix.hysteresis.raised:
            return
        shares = ", ".join(f"{c} {a:.0%}->{b:.0%}" for c, a, b in zip(r.categories, r.reference_share, r.live_share))
        state: Literal["normal", "raised", "cleared"] = (
            event if event != "normal" else ("raised" if mix.hysteresis.raised else "normal"))
        cause, detail = ("model" if kind == "prediction" else "fleet") if drifted else "", f"{what}: {shares}"
        if kind == "prediction" and drifted:
            cause, detail = self._prediction_cause(mix, start, end, detail)
        report = DriftReport(
            kind=kind, scope="fleet", asset_id="fleet", modality=self.modality, window_start_ms=start,
            window_end_ms=end, n_live=sum(live.values()), n_reference=sum(reference.values()), drifted=drifted,
            state=state, cause=cause, cause_detail=detail, correction="", alpha=s.alpha,
            features=[DriftFeature(name=name, test="chi2", statistic=r.statistic, p_value=r.p_value,
                                   p_adjusted=r.p_value, effect_size=r.effect_size, drifted=drifted)],
            detector="chi2", model=self.model.ref, decided_at_ms=_now_ms(self.clock))
        commit.xadd(self.names.drift(), encode_message(report), maxlen=self.maxlen)
        if event != "normal":
            msg = (f"{self.modality} {what} {'drifted' if event == 'raised' else 'back to normal'}: "
                   f"chi2 {r.statistic:.1f}, p {r.p_value:.1e}, Cramer's V {r.effect_size:.2f} ({shares}); "
                   f"{_window_text(report)}")
            if event == "raised" and report.cause == "fault":
                msg += f". Suspected cause: fault, not the model: {report.cause_detail}"
            elif event == "raised" and report.cause == "model":
                msg += ". Suspected cause: the model (no open fault episode accounts for the shift)"
            req = _alert(report, event, msg, _feature_details(report))
            if name != "label":
                req = req.model_copy(update={"episode_key": f"drift:{name}:{self.modality}:fleet"})
            commit.xadd(self.names.alert_requests(), encode_message(req), maxlen=self.maxlen)


def _finite(x: float) -> float:
    return float(x) if np.isfinite(x) else float(np.sign(x) * 1e9)


class FeedbackDriftHandler:
    """Handler of ``drift.feedback``: river detectors on the operators' confirm/reject stream. Only
    feedback on alerts raised by a verdict counts: confirming or rejecting a drift, backpressure or
    sensor alert (``Feedback.source``) says nothing about the models' error rate."""

    def __init__(self, names: StreamNames, settings: DriftSettings, drift_metrics: DriftMetrics, maxlen: int,
                 clock: Callable[[], float] = time.time) -> None:
        self.names = names
        self.settings = settings
        self.metrics = drift_metrics
        self.maxlen = maxlen
        self.clock = clock
        self.role = "drift.feedback"
        self.monitors: dict[str, ErrorStreamMonitor] = {}
        self.raised: dict[str, int] = {}  # key -> outcomes since the last detection while raised
        self.start_ms: dict[str, int] = {}

    def inputs(self, unit: int) -> list[str]:
        return [self.names.feedback()]

    def handle(self, batch: Batch) -> None:
        for entry in batch.entries:
            msg = batch.decode(entry, Feedback)
            if msg is None:
                continue
            assert isinstance(msg, Feedback)
            if msg.source != "verdict":  # an outcome on a drift, backpressure or sensor alert: no model's error
                batch.ack(entry)
                continue
            commit = batch.commit(batch.shard(entry))
            error = msg.outcome == "rejected"
            keys: list[tuple[str, str, ModelRef | None]] = [("all", "fused", None)]
            keys += [(f"{m}:{ref.name}:{ref.version}", m, ref) for m, ref in sorted(msg.models.items())]
            for key, modality, ref in keys:
                self._update(commit, key, modality, ref, error, msg)
            batch.ack(entry)

    def _update(self, commit: Any, key: str, modality: str, ref: ModelRef | None, error: bool, fb: Feedback) -> None:
        mon = self.monitors.get(key)
        if mon is None:
            mon = self.monitors[key] = ErrorStreamMonitor(self.settings.error_detectors)
            self.start_ms[key] = fb.time_ms
        hits = mon.update(error)
        event: AlarmEvent = "normal"
        if hits:
            if key not in self.raised:
                event = "raised"
            self.raised[key] = 0
        elif key in self.raised:
            self.raised[key] += 1
            if self.raised[key] >= self.settings.error_clear_after:
                del self.raised[key]
                event = "cleared"
        if not hits and event == "normal":
            return
        self.metrics.count(self.role, "error", "fleet", bool(hits), event)
        report = DriftReport(
            kind="error", scope="fleet", asset_id="fleet", modality=modality, window_start_ms=self.start_ms[key],
            window_end_ms=fb.time_ms, n_live=mon.n, n_reference=0, drifted=bool(hits),
            state="raised" if key in self.raised else ("cleared" if event == "cleared" else "normal"),
            cause="model" if hits else "", cause_detail=f"operator feedback on {key}: error rate "
            f"{mon.error_rate:.1%} over the last {len(mon.recent)} outcomes", detector=",".join(hits),
            error_rate=mon.error_rate, model=ref, decided_at_ms=_now_ms(self.clock))
        commit.xadd(self.names.drift(), encode_message(report), maxlen=self.maxlen)
        if event != "normal":
            text = (f"operator-feedback error rate of {key} changed ({','.join(hits)}): {mon.error_rate:.1%} rejected "
                    f"over the last {len(mon.recent)} alerts" if event == "raised" else
                    f"operator-feedback error drift of {key} cleared ({mon.error_rate:.1%} rejected)")
            req = _alert(report, event, text, _feature_details(report))
            req = req.model_copy(update={"episode_key": f"drift:error:{key}"})
            commit.xadd(self.names.alert_requests(), encode_message(req), maxlen=self.maxlen)


class ShadowHandler:
    """Handler of ``shadow.<modality>``: the teacher scores a sampled fraction of the student's inputs."""

    def __init__(self, modality: str, client: redis.Redis, names: StreamNames, settings: DriftSettings,
                 model: DeployedModel, teacher: Runtime, drift_metrics: DriftMetrics, maxlen: int,
                 clock: Callable[[], float] = time.time) -> None:
        self.modality = modality
        self.client = client
        self.names = names
        self.settings = settings
        self.model = model
        self.teacher = teacher
        self.metrics = drift_metrics
        self.maxlen = maxlen
        self.clock = clock
        self.role = f"shadow.{modality}"
        self.sampler = ShadowSampler(settings.shadow_fraction)
        card = model.card
        self.teacher_ref = ModelRef(name=f"{card.name}:teacher", version=card.version,
                                    sha256=card.files[TEACHER_ROLE].sha256)
        self.monitor = ShadowMonitor(expected_disagreement(card), settings.shadow_window, settings.shadow_alpha,
                                     settings.shadow_detectors, raise_after=1, clear_after=settings.clear_after,
                                     cooldown=settings.cooldown)
        self.window_start_ms: int | None = None

    def inputs(self, unit: int) -> list[str]:
        return [self.names.predictions_shard(self.modality, s) for s in range(self.names.shards)]

    def _features(self, pred: Prediction) -> NDArray[Any] | None:
        stream = self.names.features(self.modality, pred.asset_id)
        got: Any = self.client.xrange(stream, min=pred.features_entry_id, max=pred.features_entry_id, count=1)
        if not got:
            return None
        msg = decode_message(got[0][1])
        vec = np.asarray(getattr(msg, "vector", np.zeros(0)), np.float32)
        return vec if vec.size else None

    def handle(self, batch: Batch) -> None:
        todo: list[tuple[Entry, Prediction, NDArray[Any]]] = []
        for entry in batch.entries:
            msg = batch.decode(entry, Prediction)
            if msg is None:
                continue
            assert isinstance(msg, Prediction)
            if not self.sampler.sampled(msg.features_entry_id):
                batch.ack(entry)
                continue
            if msg.model_version != self.model.card.version or msg.model_name != self.model.card.name:
                self.metrics.shadow_skipped.labels(role=self.role, reason="other_model").inc()
                batch.ack(entry)
                continue
            vec = self._features(msg)
            if vec is None:
                self.metrics.shadow_skipped.labels(role=self.role, reason="features_gone").inc()
                batch.ack(entry)
                continue
            todo.append((entry, msg, vec))
        if not todo:
            return
        probs = self.teacher.predict(np.stack([v for _, _, v in todo]))  # a failure raises: the batch is retried
        classes = list(self.model.card.classes)
        now = _now_ms(self.clock)
        for (entry, pred, _), p in zip(todo, probs):
            commit: Any = batch.commit(batch.shard(entry))
            label = classes[int(np.argmax(p))]
            teacher_pred = Prediction(
                asset_id=pred.asset_id, modality=self.modality, event_time_ms=pred.event_time_ms,
                model_name=self.teacher_ref.name, model_version=self.teacher_ref.version,
                model_sha256=self.teacher_ref.sha256, classes=classes, probabilities=[float(v) for v in p],
                label=label, features_entry_id=pred.features_entry_id, inferred_at_ms=now,
                asset_type=pred.asset_type, source=pred.source, ingest_time_ms=pred.ingest_time_ms)
            commit.xadd(self.names.shadow_predictions(self.modality), encode_message(teacher_pred),
                        maxlen=self.maxlen)
            disagree = label != pred.label
            self.metrics.shadow_scored.labels(role=self.role).inc()
            if disagree:
                self.metrics.shadow_disagreements.labels(role=self.role).inc()
            self.window_start_ms = pred.event_time_ms if self.window_start_ms is None else self.window_start_ms
            t0 = time.perf_counter()
            w = self.monitor.update(disagree)
            if w is not None:
                self.metrics.seconds.labels(role=self.role, kind="shadow").observe(time.perf_counter() - t0)
                self._emit(commit, w, pred.event_time_ms)
                self.window_start_ms = None
            batch.ack(entry)

    def _emit(self, commit: Any, w: ShadowWindow, end_ms: int) -> None:
        self.metrics.count(self.role, "shadow", "fleet", w.drifted, w.event)
        raised = self.monitor.hysteresis.raised
        if not w.drifted and w.event == "normal" and not raised:
            return
        detector = ",".join(("binomial", *w.detectors)) if w.p_value <= self.settings.shadow_alpha else \
            ",".join(w.detectors) or "binomial"
        detail = (f"student {self.model.card.name} {self.model.card.version} disagrees with its own teacher on "
                  f"{w.disagreements} of {w.n} sampled inputs ({w.rate:.1%}; expected {w.expected:.1%} from the "
                  f"card's test split; one-sided binomial p {w.p_value:.1e}"
                  + (f"; change detected by {', '.join(w.detectors)}" if w.detectors else "") + ")")
        state: Literal["normal", "raised", "cleared"] = (
            w.event if w.event != "normal" else ("raised" if raised else "normal"))
        report = DriftReport(
            kind="shadow", scope="fleet", asset_id="fleet", modality=self.modality,
            window_start_ms=self.window_start_ms or end_ms, window_end_ms=end_ms, n_live=w.n, n_reference=0,
            drifted=w.drifted, state=state, cause="model" if w.drifted else "", cause_detail=detail,
            alpha=self.settings.shadow_alpha, detector=detector, error_rate=w.rate, model=self.model.ref,
            decided_at_ms=_now_ms(self.clock))
        commit.xadd(self.names.drift(), encode_message(report), maxlen=self.maxlen)
        if w.event != "normal":
            details = _feature_details(report) | {"teacher": self.teacher_ref.model_dump(),
                                                  "disagreements": w.disagreements, "p_value": w.p_value,
                                                  "expected": w.expected}
            text = (f"{self.modality} student no longer agrees with its teacher: {detail}" if w.event == "raised"
                    else f"{self.modality} student agrees with its teacher again ({w.rate:.1%} disagreement)")
            commit.xadd(self.names.alert_requests(), encode_message(_alert(report, w.event, text, details)),
                        maxlen=self.maxlen)


def _config(role: str, group: str, settings: DriftSettings, maxlen: int, consumer: str | None) -> WorkerConfig:
    return WorkerConfig(role=role, group=group, units=1, max_batch=settings.max_batch, block_ms=settings.block_ms,
                        lease_ttl_ms=settings.lease_ttl_ms, max_deliveries=settings.max_deliveries, maxlen=maxlen,
                        consumer=consumer, dead_letter_source=SOURCE)


def drift_workers(client: redis.Redis, names: StreamNames, settings: DriftSettings, maxlen: int = 100_000,
                  consumer: str | None = None, metrics: WorkerMetrics | None = None,
                  clock: Callable[[], float] = time.time) -> list[StreamWorker]:
    """The drift workers of ``settings``: ``drift.<m>`` per modality, ``drift.feedback``, and ``shadow.<m>``
    per modality when ``settings.shadow`` (all sharing one metrics registry: one /metrics)."""
    metrics = metrics or WorkerMetrics("drift")
    dm = DriftMetrics(metrics)
    workers: list[StreamWorker] = []
    models = {m: DeployedModel.load(settings, m) for m in settings.modalities}
    board = DriftBoard()  # the modalities' workers run in one process: a machine change shows in several
    for m, model in models.items():
        handler = FeatureDriftHandler(m, names, settings, model, metrics, dm, maxlen, clock, board, client)
        workers.append(StreamWorker(client, names, _config(handler.role, ConsumerGroup.DRIFT.value, settings, maxlen,
                                                           consumer), handler.inputs, handler, metrics=metrics))
    fb = FeedbackDriftHandler(names, settings, dm, maxlen, clock)
    workers.append(StreamWorker(client, names, _config(fb.role, ConsumerGroup.DRIFT.value, settings, maxlen, consumer),
                                fb.inputs, fb, metrics=metrics))
    if settings.shadow and settings.shadow_fraction > 0:
        rt = RuntimeSettings(kind=settings.shadow_backend, flavour=None, triton_url=settings.triton_url)
        for m, model in models.items():
            teacher = load_teacher(model.directory, model.card, rt)
            sh = ShadowHandler(m, client, names, settings, model, teacher, dm, maxlen, clock)
            workers.append(StreamWorker(client, names, _config(sh.role, ConsumerGroup.SHADOW.value, settings, maxlen,
                                                               consumer), sh.inputs, sh, metrics=metrics))
    return workers
