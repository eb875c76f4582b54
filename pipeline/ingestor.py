"""Manifest line in, Redis entries out: the work of the ingestion job, without Flink.

:class:`AssetIngestor` handles the lines of one asset (whose :class:`~pipeline.asset_state.AssetState`
the caller passes in): it restores gateway order (``pipeline.ordering``), reads the blob the line
names (claim-check), decodes and validates it (``pipeline.decoders``, ``pipeline.validation``),
computes features (``pipeline.features``, the code training uses too) and returns the entries
to write and the blobs to archive as a :class:`StepOutput`; ``pipeline.effects`` performs them.
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any

from linewatch.contract import (
    DeadLetter,
    DeadLetterReason,
    Message,
    Modality,
)
from pipeline.asset_state import AssetState
from pipeline.ingest_config import IngestConfig
from pipeline.landing import LandingZone
from pipeline.ordering import Admission, GatewayOrder, ManifestIndex, order_fields
from pipeline.redis_sink import PendingEntry, dedup_key_for

log = logging.getLogger(__name__)

MAX_DEAD_LETTERS_PER_FILE = 50
"""A garbage file yields at most this many line-level dead letters (plus one summary)."""


@dataclass
class StepOutput:
    """What handling one input produced; the caller writes ``entries`` then archives ``archive``."""

    entries: list[PendingEntry] = field(default_factory=list)
    archive: list[Path] = field(default_factory=list)
    counters: dict[str, int] = field(default_factory=dict)
    closed_ms: list[tuple[int, int]] = field(default_factory=list)  # (entry index, file-closed ms)
    progressed: bool = False  # a held-back or ordered line was processed (the reorder wait restarts)
    probe: str | None = None

    def count(self, name: str, n: int = 1) -> None:
        self.counters[name] = self.counters.get(name, 0) + n

    def extend(self, other: StepOutput) -> None:
        base = len(self.entries)
        self.entries += other.entries
        self.archive += other.archive
        for name, n in other.counters.items():
            self.count(name, n)
        self.closed_ms += [(base + i, ms) for i, ms in other.closed_ms]


class RegistryCache:
    """``assets.json`` of the landing zone as a ``pipeline.validation.AssetRegistry``, reloaded
    (at most every ``reload_every_s``) when an unknown asset shows up."""

    def __init__(self, landing: Path, reload_every_s: float = 5.0) -> None:
        self.path = landing / "assets.json"
        self.reload_every_s = reload_every_s
        self.registry: Any = None
        self._loaded_at = -1e18
        self.sample_rate = 16_000

    def _load(self) -> None:
        from pipeline.validation import AssetRegistry

        self._loaded_at = time.monotonic()
        try:
            self.registry = AssetRegistry.from_file(self.path)
            data = json.loads(self.path.read_text())
            self.sample_rate = int(data.get("audio", {}).get("sample_rate_hz", 16_000))
        except (FileNotFoundError, json.JSONDecodeError, OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("asset registry %s not loaded: %s", self.path, exc)

    def get(self, asset_id: str) -> Any:
        """``AssetInfo`` of the asset, None if unknown; reloads the file when it may have changed."""
        if self.registry is None or asset_id not in self.registry:
            if time.monotonic() - self._loaded_at >= self.reload_every_s:
                self._load()
        return None if self.registry is None else self.registry.get(asset_id)


class AssetIngestor:
    """Turns manifest lines of one asset (state passed in) into Redis entries. No Flink here."""

    def __init__(self, config: IngestConfig) -> None:
        self.config = config
        self.zone = LandingZone(Path(config.landing), config.manifest_dir, config.archive_dir)
        self.names = config.names
        self.registry = RegistryCache(Path(config.landing))
        self.index = ManifestIndex(self.zone)
        self.order = GatewayOrder(self.index)
        self._archive_root = self.zone.archive.resolve()

    # ---- dead letters
    def dead_letter(
        self, out: StepOutput, source: str, reason: DeadLetterReason, detail: str, raw_ref: str,
        excerpt: str = "", asset_id: str | None = None, event_time_ms: int | None = None,
    ) -> None:
        from pipeline.decoders.errors import printable_excerpt

        msg = DeadLetter(
            source=source, reason=reason, detail=detail[:2000], raw_ref=raw_ref, excerpt=printable_excerpt(excerpt),
            asset_id=asset_id, event_time_ms=event_time_ms, failed_at_ms=int(time.time() * 1000),
        )
        out.entries.append(PendingEntry(
            stream=self.names.deadletter, message=msg,
            dedup_key=dedup_key_for(self.config.prefix, raw_ref, reason.value, detail),
        ))
        out.count("deadletters")
        out.count(f"deadletters.{reason.value}")

    def rejection(self, out: StepOutput, source: str, exc: Any, asset_id: str | None = None) -> None:
        """A ``pipeline.decoders.RejectedInput`` -> dead letter."""
        self.dead_letter(out, source, exc.reason, exc.detail, exc.raw_ref, exc.excerpt,
                         asset_id or exc.asset_id, exc.event_time_ms)

    # ---- ordering
    def on_line(self, line: str, state: AssetState, key: str) -> StepOutput:
        """Handle one manifest line for asset ``key`` (``""``: the line named no asset)."""
        out = StepOutput()
        if not key and line.startswith('{"probe":'):
            probe = _probe_token(line)
            if probe is not None:
                out.probe = probe
                return out
        out.count("manifest_lines")
        fields = order_fields(line)
        if not key or fields.seq is None or fields.kind is None:
            out.extend(self.process_line(line, state, key))
            return out
        adm = self.order.offer(line, fields, state, key)
        if adm.already_handled:
            out.count("already_handled")
        elif adm.late_after_gap:
            out.count("late_after_gap")
        elif adm.listed_twice:
            self.dead_letter(
                out, "pipeline.manifest", DeadLetterReason.DUPLICATE,
                f"{fields.kind} seq {fields.seq} (epoch {fields.epoch}) of {key} is listed twice",
                _line_ref(line), line, asset_id=key,
            )
        self._process_admitted(out, adm, state, key)
        if adm.held:
            out.count("reorder_held")
        return out

    def _process_admitted(self, out: StepOutput, adm: Admission, state: AssetState, key: str) -> None:
        if adm.seq_gaps:
            out.count("seq_gaps", adm.seq_gaps)
        for sequence, epoch, start, end in adm.abandoned:
            self.dead_letter(
                out, "pipeline.manifest", DeadLetterReason.MISSING_FILE,
                f"{sequence} seq {start}..{end - 1} (epoch {epoch}) of {key} stayed listed in "
                f"{self.config.manifest_dir}/ for {self.config.reorder_give_up_ms / 1000:.0f} s but the source never "
                "delivered it; later lines are processed without it. A reused manifest name does this (Flink "
                "skips names it has read before): give every manifest a unique name",
                f"manifest-seq:{key}/{sequence}/{epoch}/{start}-{end}", asset_id=key,
            )
        if adm.ready:
            out.progressed = True
        for ready in adm.ready:
            out.extend(self.process_line(ready, state, key))

    def on_timeout(self, state: AssetState, key: str, waited_ms: int) -> StepOutput:
        """The reorder timer fired after ``waited_ms`` without progress: release what waits for seqs
        that no manifest lists any more; after ``reorder_give_up_ms``, release everything."""
        out = StepOutput()
        if waited_ms >= self.config.reorder_give_up_ms:
            adm = self.order.give_up(state)
        else:
            adm = self.order.recheck(state, key)
        self._process_admitted(out, adm, state, key)
        return out

    # ---- one blob
    def process_line(self, line: str, state: AssetState, key: str) -> StepOutput:
        from pipeline.decoders import DecodeError, decode_manifest_line

        out = StepOutput()
        ref = _line_ref(line)
        try:
            blob = decode_manifest_line(line, self.zone.root, ref)
        except DecodeError as exc:
            stripped = line.strip()
            if exc.reason == DeadLetterReason.DECODE_ERROR and stripped.startswith("{") and not stripped.endswith("}"):
                exc = DecodeError(DeadLetterReason.TRUNCATED,
                                  f"manifest line ends mid-JSON (half-written manifest?): {exc.detail}; gateways must "
                                  "write manifests under a hidden name and rename them when complete", exc.raw_ref, line)
            self.rejection(out, "pipeline.manifest", exc, asset_id=key or None)
            return out
        first = PurePosixPath(blob.rel_path).parts[0] if PurePosixPath(blob.rel_path).parts else ""
        if first in (self.config.manifest_dir, self.config.archive_dir):
            self.dead_letter(out, "pipeline.manifest", DeadLetterReason.PATH_OUTSIDE_LANDING,
                             f"manifest path {blob.rel_path!r} points into {first}/, not at a blob", ref, line, blob.asset_id)
            return out
        fields = order_fields(line)
        kind = fields.kind
        if kind is None:
            self.dead_letter(out, "pipeline.manifest", DeadLetterReason.SCHEMA_ERROR,
                             f"cannot tell the kind of {blob.rel_path!r}: put it under plc/, alarms/, thermal/ or "
                             "audio/ or add a \"kind\" field", ref, line, blob.asset_id)
            return out
        source = f"pipeline.{kind}"
        info = self.registry.get(blob.asset_id)
        if info is None:
            self.dead_letter(out, source, DeadLetterReason.UNKNOWN_ASSET,
                             f"asset {blob.asset_id!r} is not in {self.registry.path}; register it before sending data",
                             blob.rel_path, line, blob.asset_id, blob.timestamp_ms)
            self._archive_if_present(out, blob.path)
            return out
        if not blob.path.exists():  # a replay after a restart: the blob was archived already
            try:
                located = self.zone.locate(blob.rel_path)
                blob = replace(blob, path=located)
            except Exception:  # noqa: BLE001 - read_blob below reports MISSING_FILE
                pass
        try:
            closed_ms = int(os.stat(blob.path).st_mtime * 1000)
        except OSError:
            closed_ms = None
        try:
            from pipeline.decoders import read_blob

            data = read_blob(blob)
            if kind == "thermal":
                self._thermal(out, blob, data, state, info)
            elif kind == "audio":
                self._audio(out, blob, data, state, info)
            elif kind == "plc":
                self._plc(out, blob, data, state, fields.end_ms, info)
            else:
                self._alarms(out, blob, data, state, info)
        except DecodeError as exc:
            self.rejection(out, source, exc, asset_id=blob.asset_id)
        except Exception as exc:  # noqa: BLE001 - bad input must never kill the job
            log.exception("processing %s failed", blob.rel_path)
            self.dead_letter(out, source, DeadLetterReason.PROCESSING_ERROR,
                             f"{type(exc).__name__}: {exc}; report this with the file attached", blob.rel_path,
                             "", blob.asset_id, blob.timestamp_ms)
        out.count(f"blobs.{kind}")
        if closed_ms is not None:
            out.closed_ms += [(i, closed_ms) for i, e in enumerate(out.entries) if e.hwm_key is not None]
        self._archive_if_present(out, blob.path)
        return out

    def _archive_if_present(self, out: StepOutput, path: Path) -> None:
        if self.config.archive_processed and self._archive_root not in path.parents:
            out.archive.append(path)

    def _features_entry(self, modality: str, asset_id: str, event_ms: int, msg: Message) -> PendingEntry:
        return PendingEntry(
            stream=self.names.features(modality, asset_id), message=msg,
            hwm_key=self.config.hwm_key(modality), hwm_field=asset_id, hwm_value=event_ms,
        )

    def _in_order(self, out: StepOutput, state: AssetState, modality: str, blob: Any) -> bool:
        """Frames/clips must be newer than the last accepted one of the asset (and not future)."""
        from pipeline.validation import EventTimeGuard

        last = state.last_ms.get(modality)
        if last is not None and blob.timestamp_ms <= last:
            reason = DeadLetterReason.DUPLICATE if blob.timestamp_ms == last else DeadLetterReason.LATE
            self.dead_letter(out, f"pipeline.{modality}", reason,
                             f"event time {blob.timestamp_ms} is not after the last accepted {modality} record "
                             f"{last} of {blob.asset_id}", blob.rel_path, asset_id=blob.asset_id,
                             event_time_ms=blob.timestamp_ms)
            return False
        problem = EventTimeGuard(blob.asset_id).check_time(blob.timestamp_ms, int(time.time() * 1000), blob.rel_path)
        if problem is not None:
            self.rejection(out, f"pipeline.{modality}", problem, blob.asset_id)
            return False
        return True

    def _thermal(self, out: StepOutput, blob: Any, data: bytes, state: AssetState, info: Any) -> None:
        from pipeline.decoders import decode_thermal_tiff
        from pipeline.features.messages import thermal_features_message
        from pipeline.features.thermal_features import ThermalBaseline
        from pipeline.validation import check_frame

        frame = decode_thermal_tiff(data, blob.rel_path)
        problem = check_frame(frame, blob.rel_path, asset_id=blob.asset_id, event_time_ms=blob.timestamp_ms)
        if problem is not None:
            self.rejection(out, "pipeline.thermal", problem, blob.asset_id)
            return
        if not self._in_order(out, state, "thermal", blob):
            return
        state.last_ms["thermal"] = blob.timestamp_ms
        if state.baseline is None:
            state.baseline = ThermalBaseline()
        regions = dict(info.regions) if info is not None and info.regions else None
        # features (stats, normalized frame, model-input vector): pipeline.features.messages
        msg = thermal_features_message(blob.asset_id, _asset_type(info), blob.timestamp_ms, frame,
                                       state.baseline.baseline_ck, regions, source=blob.rel_path,
                                       ingest_time_ms=int(time.time() * 1000), asset=info)
        state.baseline.update(frame)
        out.entries.append(self._features_entry(Modality.THERMAL, blob.asset_id, blob.timestamp_ms, msg))
        out.count("entries.thermal")

    def _audio(self, out: StepOutput, blob: Any, data: bytes, state: AssetState, info: Any) -> None:
        from pipeline.decoders import decode_wav
        from pipeline.features.messages import audio_features_message
        from pipeline.validation import check_clip

        samples = decode_wav(data, blob.rel_path)
        rate = self.registry.sample_rate
        problem = check_clip(samples, rate, blob.rel_path, asset_id=blob.asset_id, event_time_ms=blob.timestamp_ms)
        if problem is not None:
            self.rejection(out, "pipeline.audio", problem, blob.asset_id)
            return
        if not self._in_order(out, state, "audio", blob):
            return
        state.last_ms["audio"] = blob.timestamp_ms
        msg = audio_features_message(blob.asset_id, _asset_type(info), blob.timestamp_ms, samples, rate, asset=info,
                                     source=blob.rel_path, ingest_time_ms=int(time.time() * 1000))
        out.entries.append(self._features_entry(Modality.AUDIO, blob.asset_id, blob.timestamp_ms, msg))
        out.count("entries.audio")

    def _line_errors(self, out: StepOutput, source: str, errors: list[Any], asset_id: str, ref: str) -> None:
        for exc in errors[:MAX_DEAD_LETTERS_PER_FILE]:
            self.rejection(out, source, exc, asset_id=asset_id)
        if len(errors) > MAX_DEAD_LETTERS_PER_FILE:
            self.dead_letter(out, source, errors[-1].reason,
                             f"{len(errors) - MAX_DEAD_LETTERS_PER_FILE} more rejected lines not listed", ref,
                             asset_id=asset_id)

    def _plc_buffer(self, state: AssetState, asset_id: str) -> Any:
        from pipeline.features.plc_window import PlcWindowBuffer

        if state.plc is None:
            state.plc = PlcWindowBuffer(asset_id)
        return state.plc

    def _plc(self, out: StepOutput, blob: Any, data: bytes, state: AssetState, end_ms: int | None, info: Any) -> None:
        from pipeline.decoders import decode_plc_file
        from pipeline.features.messages import plc_features_message

        fmt = "jsonl" if blob.rel_path.endswith(".jsonl") else "csv"
        result = decode_plc_file(data, blob.rel_path, fmt)
        errors = list(result.errors)
        buf = self._plc_buffer(state, blob.asset_id)
        foreign = late = 0
        newest = None
        for sample in result.samples:
            if sample.asset_id != blob.asset_id:
                foreign += 1
                continue
            problem = self.registry.registry.check_tag_sample(sample, blob.rel_path) if self.registry.registry else None
            if problem is not None:
                errors.append(problem)
                continue
            if not buf.add_sample(sample):
                late += 1
            newest = sample.timestamp_ms if newest is None else max(newest, sample.timestamp_ms)
        self._line_errors(out, "pipeline.plc", errors, blob.asset_id, blob.rel_path)
        if foreign:
            self.dead_letter(out, "pipeline.plc", DeadLetterReason.SCHEMA_ERROR,
                             f"{foreign} rows name another asset than the manifest's {blob.asset_id!r}",
                             blob.rel_path, asset_id=blob.asset_id)
        if late:
            out.count("plc_late_samples", late)
            self.dead_letter(out, "pipeline.plc", DeadLetterReason.LATE,
                             f"{late} samples are older than windows already emitted for {blob.asset_id}",
                             blob.rel_path, asset_id=blob.asset_id)
        out.count("plc_samples", len(result.samples) - foreign)
        watermark = end_ms - 1 if end_ms is not None else newest
        if watermark is None:
            return
        for window in buf.advance(watermark):
            msg = plc_features_message(window, _asset_type(info), source=blob.rel_path,
                                       ingest_time_ms=int(time.time() * 1000), asset=info)
            out.entries.append(self._features_entry(Modality.PLC, blob.asset_id, window.end_ms, msg))
            out.count("entries.plc")

    def _alarms(self, out: StepOutput, blob: Any, data: bytes, state: AssetState, info: Any) -> None:
        from pipeline.decoders import decode_alarm_file

        result = decode_alarm_file(data, blob.rel_path)
        self._line_errors(out, "pipeline.alarms", result.errors, blob.asset_id, blob.rel_path)
        buf = self._plc_buffer(state, blob.asset_id)
        late = 0
        for event in result.events:
            if event.asset_id != blob.asset_id:
                continue
            if not buf.add_alarm_event(event) and event.state.upper() == "ACTIVE":
                late += 1
        out.count("alarm_events", len(result.events))
        if late:
            out.count("alarm_late", late)


def _probe_token(line: str) -> str | None:
    """Token of a readiness probe line ``{"probe": "<token>"}`` (see ``IngestJob.wait_ready``)."""
    try:
        data = json.loads(line)
    except (json.JSONDecodeError, ValueError):
        return None
    if isinstance(data, dict) and set(data) == {"probe"} and isinstance(data["probe"], str):
        return data["probe"]
    return None


def _asset_type(info: Any) -> str:
    return str(info.asset_type) if info is not None else "unknown"


def _line_ref(line: str) -> str:
    """Dead-letter reference of a manifest line: its blob path if readable, else the line's hash."""
    try:
        data = json.loads(line)
        if isinstance(data, dict) and isinstance(data.get("path"), str):
            return data["path"]
    except (json.JSONDecodeError, ValueError):
        pass
    import hashlib

    return "manifest-line:sha1:" + hashlib.sha1(line.encode("utf-8", "replace")).hexdigest()[:16]


