"""The ingestion job: manifest lines in, contract entries in Redis out (docs/ingestion.md).

Flink wiring is thin (:func:`build_job`)::

    FileSource(text lines of <landing>/manifests, scan every 10 ms)
      -> key_by(asset id of the line)
      -> IngestFunction (KeyedProcessFunction): per asset, restore gateway order (seq),
         read the blob the line names (claim-check), decode, validate, compute features,
         XADD idempotently to Redis, archive the blob.

Everything that does the work is plain Python (:class:`AssetIngestor`, :class:`AssetState`)
and is importable and testable without a JVM; PyFlink itself is only imported by
:func:`build_job` and the function class (whose import needs no JVM either).
"""

from __future__ import annotations

import base64
import json
import logging
import os
import time
from collections import deque
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from linewatch.contract import (
    AudioFeatures,
    DeadLetter,
    DeadLetterReason,
    Message,
    Modality,
    PlcFeatures,
    StreamNames,
    ThermalFeatures,
)
from pipeline.landing import MODALITY_OF_KIND, Janitor, LandingZone, kind_of_path
from pipeline.redis_sink import PendingEntry, RedisStreamWriter, dedup_key_for

log = logging.getLogger(__name__)

MAX_DEAD_LETTERS_PER_FILE = 50
"""A garbage file yields at most this many line-level dead letters (plus one summary)."""


@dataclass(frozen=True)
class IngestConfig:
    """What the job's Python functions need; plain values, so it pickles into the job graph."""

    landing: str
    redis_url: str
    prefix: str = "lw"
    shards: int = 4
    maxlen: int = 100_000
    manifest_dir: str = "manifests"
    archive_dir: str = "archive"
    archive_processed: bool = True
    archive_retention_s: float = 3600.0
    janitor_interval_ms: int = 1000
    janitor_settle_s: float = 11.0
    reorder_timeout_ms: int = 30_000
    dedup_ttl_s: int = 86_400
    metrics_interval_ms: int = 1000
    checkpoint_dir: str | None = None  # the janitor archives a manifest only after a later checkpoint

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> IngestConfig:
        return cls(**json.loads(text))

    @property
    def names(self) -> StreamNames:
        return StreamNames(prefix=self.prefix, shards=self.shards)

    @property
    def stats_key(self) -> str:
        """Hash of the job's counters and latency (read by ``linewatch demo``)."""
        return f"{self.prefix}:ingest:stats"

    @property
    def probe_key(self) -> str:
        """Hash where the job acknowledges readiness probes (token -> ms)."""
        return f"{self.prefix}:ingest:probe"

    def hwm_key(self, modality: str) -> str:
        return f"{self.prefix}:ingest:hwm:{modality}"


# --------------------------------------------------------------------------- per-asset state


@dataclass
class KindOrder:
    """Gateway order of one kind of blob of one asset: expected next ``seq`` and lines held back."""

    epoch: int = 0
    next_seq: int = 0
    pending: dict[int, str] = field(default_factory=dict)
    started: bool = False


@dataclass
class AssetState:
    """Everything the job keeps per asset (Flink keyed state, checkpointed).

    ``to_json``/``from_json`` cover the order and PLC window buffer; the thermal baseline
    (a float32 frame) travels separately as raw bytes (:meth:`baseline_bytes`).
    """

    order: dict[str, KindOrder] = field(default_factory=dict)
    plc: Any = None  # pipeline.features.plc_window.PlcWindowBuffer | None
    baseline: Any = None  # pipeline.features.thermal_features.ThermalBaseline | None
    last_ms: dict[str, int] = field(default_factory=dict)  # newest accepted frame/clip per modality
    held_since_ms: int | None = None  # processing time the oldest held line has waited since

    def to_json(self) -> str:
        return json.dumps(
            {
                "order": {
                    k: {"epoch": o.epoch, "next": o.next_seq, "started": o.started,
                        "pending": {str(s): line for s, line in o.pending.items()}}
                    for k, o in self.order.items()
                },
                "plc": self.plc.to_state() if self.plc is not None else None,
                "last_ms": self.last_ms,
                "held_since_ms": self.held_since_ms,
                "has_baseline": self.baseline is not None,
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str | None, baseline: bytes | None = None) -> AssetState:
        state = cls()
        if text:
            data = json.loads(text)
            for kind, o in data.get("order", {}).items():
                state.order[kind] = KindOrder(
                    epoch=int(o["epoch"]), next_seq=int(o["next"]), started=bool(o.get("started", True)),
                    pending={int(s): line for s, line in o.get("pending", {}).items()},
                )
            state.last_ms = {k: int(v) for k, v in data.get("last_ms", {}).items()}
            state.held_since_ms = data.get("held_since_ms")
            if data.get("plc") is not None:
                from pipeline.features.plc_window import PlcWindowBuffer

                state.plc = PlcWindowBuffer.from_state(data["plc"])
        if baseline:
            state.baseline = baseline_from_bytes(baseline)
        return state

    def baseline_bytes(self) -> bytes | None:
        return baseline_to_bytes(self.baseline) if self.baseline is not None else None

    @property
    def has_pending(self) -> bool:
        return any(o.pending for o in self.order.values())


def baseline_to_bytes(baseline: Any) -> bytes:
    """``ThermalBaseline`` -> header (n_frames, alpha, min_frames, h, w) + float32 mean."""
    mean = baseline._mean  # noqa: SLF001 - the class offers no public snapshot yet
    h, w = (0, 0) if mean is None else mean.shape
    header = np.array([baseline.n_frames, baseline.min_frames, h, w], dtype=np.int64).tobytes()
    alpha = np.array([baseline.alpha], dtype=np.float64).tobytes()
    body = b"" if mean is None else np.ascontiguousarray(mean, dtype="<f4").tobytes()
    return header + alpha + body


def baseline_from_bytes(raw: bytes) -> Any:
    from pipeline.features.thermal_features import ThermalBaseline

    n_frames, min_frames, h, w = (int(x) for x in np.frombuffer(raw[:32], dtype=np.int64))
    alpha = float(np.frombuffer(raw[32:40], dtype=np.float64)[0])
    baseline = ThermalBaseline(alpha=alpha, min_frames=min_frames)
    baseline.n_frames = n_frames
    if h and w:
        baseline._mean = np.frombuffer(raw[40:], dtype="<f4").reshape(h, w).copy()  # noqa: SLF001
    return baseline


# --------------------------------------------------------------------------- the work


@dataclass
class StepOutput:
    """What handling one input produced; the caller writes ``entries`` then archives ``archive``."""

    entries: list[PendingEntry] = field(default_factory=list)
    archive: list[Path] = field(default_factory=list)
    counters: dict[str, int] = field(default_factory=dict)
    closed_ms: list[tuple[int, int]] = field(default_factory=list)  # (entry index, file-closed ms)
    needs_timer: bool = False
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


@dataclass(frozen=True)
class OrderFields:
    """The contract's ordering fields of a manifest line (all optional)."""

    kind: str | None
    seq: int | None
    epoch: int
    end_ms: int | None


def order_fields(line: str) -> OrderFields:
    """``kind``/``seq``/``epoch``/``end`` of a manifest line; missing or malformed ones are None.

    >>> order_fields('{"path":"plc/p.csv","seq":4,"epoch":9,"end":"2026-11-29T14:00:01.000Z"}')
    OrderFields(kind='plc', seq=4, epoch=9, end_ms=1795960801000)
    >>> order_fields('garbage')
    OrderFields(kind=None, seq=None, epoch=0, end_ms=None)
    """
    from pipeline.decoders.timestamps import TimestampError, parse_timestamp_ms

    try:
        data = json.loads(line)
    except (json.JSONDecodeError, ValueError):
        return OrderFields(None, None, 0, None)
    if not isinstance(data, dict):
        return OrderFields(None, None, 0, None)
    path = data.get("path")
    kind = data.get("kind") if isinstance(data.get("kind"), str) else (kind_of_path(path) if isinstance(path, str) else None)
    seq = data.get("seq") if isinstance(data.get("seq"), int) and data.get("seq") >= 0 else None
    epoch = data.get("epoch") if isinstance(data.get("epoch"), int) else 0
    end_ms = None
    if isinstance(data.get("end"), str):
        try:
            end_ms = parse_timestamp_ms(data["end"])
        except TimestampError:
            end_ms = None
    return OrderFields(kind, seq, epoch, end_ms)


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


class ManifestIndex:
    """Which (asset, sequence, epoch, seq) lines the manifests still in the directory hold.

    The FileSource hands out the files of one scan in no particular order (directory order),
    so after a restart or any backlog an asset's seq N+1 can arrive long before seq N. The
    index tells whether a missing seq is still on its way (wait) or lost (skip the gap), and
    where an asset's sequence starts. Manifests are immutable once visible, so each file is
    parsed once; entries of files that left the directory are dropped on refresh.
    """

    def __init__(self, zone: LandingZone, min_refresh_s: float = 0.05) -> None:
        self.zone = zone
        self.min_refresh_s = min_refresh_s
        self._files: dict[str, list[tuple[str, str, int, int]]] = {}
        self._keys: dict[tuple[str, str, int, int], str] = {}
        self._refreshed = -1e18
        self._dir_mtime_ns = -1
        self._listed_wall = 0.0

    def refresh(self, force: bool = False) -> None:
        """Re-list the directory if it changed (a rename in or out updates its mtime)."""
        now = time.monotonic()
        if not force and now - self._refreshed < self.min_refresh_s:
            return
        try:
            mtime_ns = os.stat(self.zone.manifests).st_mtime_ns
        except FileNotFoundError:
            mtime_ns = -2
        # unchanged since a listing made well after that mtime (timestamps are coarse: a rename
        # in the same clock tick as the last listing would not change it): nothing new to parse
        if mtime_ns == self._dir_mtime_ns and self._listed_wall - mtime_ns / 1e9 > 0.05 and now - self._refreshed < 1.0:
            return
        self._dir_mtime_ns = mtime_ns
        self._listed_wall = time.time()
        self._refreshed = now
        try:
            names = {n for n in os.listdir(self.zone.manifests) if not n.startswith((".", "_"))}
        except FileNotFoundError:
            names = set()
        for gone in set(self._files) - names:
            for k in self._files.pop(gone):
                if self._keys.get(k) == gone:
                    del self._keys[k]
        for name in names - set(self._files):
            keys: list[tuple[str, str, int, int]] = []
            try:
                text = (self.zone.manifests / name).read_text(errors="replace")
            except OSError:
                continue
            for line in text.splitlines():
                f = order_fields(line)
                if f.seq is None or f.kind is None:
                    continue
                try:
                    asset = json.loads(line).get("asset_id")
                except (json.JSONDecodeError, AttributeError):
                    continue
                if isinstance(asset, str):
                    k = (asset, MODALITY_OF_KIND.get(f.kind, f.kind), f.epoch, f.seq)
                    keys.append(k)
                    self._keys[k] = name
            self._files[name] = keys

    def present(self, asset: str, sequence: str, epoch: int, seq: int) -> bool:
        """Is that line in a manifest still in the directory? (re-lists the directory on a miss:
        the manifest holding it may have been renamed in after the last listing)"""
        k = (asset, sequence, epoch, seq)
        if k not in self._keys:
            self.refresh(force=True)
        return k in self._keys

    def lowest(self, asset: str, sequence: str, epoch: int) -> int | None:
        self.refresh(force=True)
        seqs = [k[3] for k in self._keys if k[0] == asset and k[1] == sequence and k[2] == epoch]
        return min(seqs) if seqs else None


class AssetIngestor:
    """Turns manifest lines of one asset (state passed in) into Redis entries. No Flink here."""

    def __init__(self, config: IngestConfig) -> None:
        self.config = config
        self.zone = LandingZone(Path(config.landing), config.manifest_dir, config.archive_dir)
        self.names = config.names
        self.registry = RegistryCache(Path(config.landing))
        self.index = ManifestIndex(self.zone)
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
        sequence = MODALITY_OF_KIND.get(fields.kind, fields.kind)  # alarm logs share the PLC sequence
        order = state.order.get(sequence)
        if order is None:
            order = state.order[sequence] = KindOrder(epoch=fields.epoch)
        if fields.epoch > order.epoch:  # a new gateway epoch: what the old one left is released as is
            out.extend(self.release_all(order, state, key))
            order.epoch, order.next_seq, order.started = fields.epoch, 0, True
        elif fields.epoch < order.epoch or (order.started and fields.seq < order.next_seq):
            # already handled: a replay after a restore (at-least-once source) or a gateway resend;
            # its entries are in Redis already (the high-water marks would drop them anyway)
            out.count("already_handled")
            return out
        elif fields.seq in order.pending:
            self.dead_letter(
                out, "pipeline.manifest", DeadLetterReason.DUPLICATE,
                f"{fields.kind} seq {fields.seq} (epoch {fields.epoch}) of {key} is listed twice",
                _line_ref(line), line, asset_id=key,
            )
            return out
        order.pending[fields.seq] = line
        if not order.started:
            # first line of this asset since the job's state began: start at the lowest seq that is
            # still waiting in the manifest directory (0 on a fresh gateway, later after a state loss)
            lowest = self.index.lowest(key, sequence, order.epoch)
            if lowest is None or min(order.pending) <= lowest:
                order.started, order.next_seq = True, min(order.pending)
        if order.started:
            self._drain(order, state, key, sequence, out)
        if order.pending:
            out.count("reorder_held")
            out.needs_timer = True
        return out

    def _drain(self, order: KindOrder, state: AssetState, key: str, sequence: str, out: StepOutput) -> None:
        """Process held lines in seq order; skip a gap only when the missing seq is in no manifest
        of the directory (gateways publish in seq order, so it can never arrive: it was lost)."""
        while order.pending:
            if order.next_seq in order.pending:
                out.extend(self.process_line(order.pending.pop(order.next_seq), state, key))
                order.next_seq += 1
            elif self.index.present(key, sequence, order.epoch, order.next_seq):
                return  # it is on its way (read later by the source): wait for it
            else:
                nxt = min(order.pending)
                out.count("seq_gaps", nxt - order.next_seq)
                order.next_seq = nxt

    def release_all(self, order: KindOrder, state: AssetState, key: str) -> StepOutput:
        """Give up waiting for missing seqs: process what is held, in seq order."""
        out = StepOutput()
        order.started = True
        for seq in sorted(order.pending):
            if seq > order.next_seq and order.next_seq > 0:
                out.count("seq_gaps", seq - order.next_seq)
            out.extend(self.process_line(order.pending.pop(seq), state, key))
            order.next_seq = seq + 1
        return out

    def on_timeout(self, state: AssetState, key: str) -> StepOutput:
        out = StepOutput()
        for order in state.order.values():
            if order.pending:
                out.extend(self.release_all(order, state, key))
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
        kind = order_fields(line).kind
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
                self._plc(out, blob, data, state, order_fields(line).end_ms, info)
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
        from pipeline.features import FEATURES_VERSION
        from pipeline.features.thermal_features import ThermalBaseline, thermal_features
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
        stats, normalized = thermal_features(frame, state.baseline.baseline_ck, regions)
        state.baseline.update(frame)
        msg = ThermalFeatures(
            asset_id=blob.asset_id, asset_type=_asset_type(info), event_time_ms=blob.timestamp_ms,
            features_version=FEATURES_VERSION, stats=stats, frame=normalized, source=blob.rel_path,
            ingest_time_ms=int(time.time() * 1000),
        )
        out.entries.append(self._features_entry(Modality.THERMAL, blob.asset_id, blob.timestamp_ms, msg))
        out.count("entries.thermal")

    def _audio(self, out: StepOutput, blob: Any, data: bytes, state: AssetState, info: Any) -> None:
        from pipeline.decoders import decode_wav
        from pipeline.features import FEATURES_VERSION
        from pipeline.features.audio_features import audio_features
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
        logmel, stats = audio_features(samples, rate, asset=info)
        msg = AudioFeatures(
            asset_id=blob.asset_id, asset_type=_asset_type(info), event_time_ms=blob.timestamp_ms,
            features_version=FEATURES_VERSION, stats=stats, logmel=logmel, source=blob.rel_path,
            ingest_time_ms=int(time.time() * 1000),
        )
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
        from pipeline.features import FEATURES_VERSION
        from pipeline.features.plc_window import plc_feature_names

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
        names = plc_feature_names()
        for window in buf.advance(watermark):
            msg = PlcFeatures(
                asset_id=blob.asset_id, asset_type=_asset_type(info), window_start_ms=window.start_ms,
                window_end_ms=window.end_ms, event_time_ms=window.end_ms, features_version=FEATURES_VERSION,
                feature_names=names, values=window.values.astype(np.float32), n_samples=window.n_samples,
                alarm_counts=window.alarm_counts, source=blob.rel_path, ingest_time_ms=int(time.time() * 1000),
            )
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


# --------------------------------------------------------------------------- side effects


class IngestEffects:
    """Redis writes, archiving, janitor and metrics of one task (one per Flink subtask)."""

    def __init__(self, config: IngestConfig, subtask: int = 0) -> None:
        self.config = config
        self.subtask = subtask
        self.writer = RedisStreamWriter(config.redis_url, config.maxlen, config.dedup_ttl_s)
        self.zone = LandingZone(Path(config.landing), config.manifest_dir, config.archive_dir)
        self.janitor = Janitor(self.zone, config.janitor_settle_s, config.archive_retention_s,
                               Path(config.checkpoint_dir) if config.checkpoint_dir else None)
        self._next_janitor = 0.0
        self._next_metrics = 0.0
        self._latencies: deque[float] = deque(maxlen=2000)

    def commit(self, out: StepOutput) -> None:
        """Write the entries (one round trip), then archive the handled blobs; then housekeeping."""
        if out.probe is not None:
            self.writer.client.hset(self.config.probe_key, out.probe, str(int(time.time() * 1000)))
        result = self.writer.write(out.entries, {**out.counters}, self.config.stats_key)
        if result.duplicates:
            self.writer.client.hincrby(self.config.stats_key, "duplicates_skipped", result.duplicates)
        if out.closed_ms and result.entry_ids:
            now_ms = time.time() * 1000
            for _, closed in out.closed_ms:
                self._latencies.append(now_ms - closed)
        for path in out.archive:
            self.zone.archive_file(path)
        self.housekeeping()

    def housekeeping(self, force: bool = False) -> int:
        """Janitor pass (archive finished manifests, prune the archive) and metrics, rate-limited.

        Returns how many manifests are still in the directory (0: no more work for the janitor).
        """
        now = time.monotonic()
        left = -1
        if force or now >= self._next_janitor:
            self._next_janitor = now + self.config.janitor_interval_ms / 1000
            try:
                self.janitor.run_once()
                left = len(self.janitor._done_since) + self.janitor.waiting
            except OSError as exc:  # a racing janitor of another subtask; try again next time
                log.warning("janitor pass failed: %s", exc)
        if now >= self._next_metrics and self._latencies:
            self._next_metrics = now + self.config.metrics_interval_ms / 1000
            values = np.fromiter(self._latencies, dtype=np.float64)
            self.writer.client.hset(self.config.stats_key, mapping={
                f"latency_p50_ms.{self.subtask}": f"{np.percentile(values, 50):.1f}",
                f"latency_p99_ms.{self.subtask}": f"{np.percentile(values, 99):.1f}",
                f"latency_n.{self.subtask}": str(values.size),
                f"updated_ms.{self.subtask}": str(int(time.time() * 1000)),
            })
        return left

    def close(self) -> None:
        self.writer.close()


# --------------------------------------------------------------------------- Flink wiring

try:  # importing pyflink needs no JVM; keep the module importable without it installed too
    from pyflink.datastream.functions import KeyedProcessFunction as _KeyedProcessFunction
except ImportError:  # pragma: no cover
    _KeyedProcessFunction = object  # type: ignore[assignment,misc]


class IngestFunction(_KeyedProcessFunction):  # type: ignore[misc,valid-type]
    """Keyed by asset: state load -> :class:`AssetIngestor` -> :class:`IngestEffects`."""

    def __init__(self, config_json: str) -> None:
        self.config_json = config_json

    def open(self, runtime_context: Any) -> None:
        from pyflink.common.typeinfo import Types
        from pyflink.datastream.state import ValueStateDescriptor

        config = IngestConfig.from_json(self.config_json)
        self.reorder_timeout_ms = config.reorder_timeout_ms
        self.janitor_interval_ms = config.janitor_interval_ms
        self._housekeeping_armed = False
        self.core = AssetIngestor(config)
        try:
            subtask = runtime_context.get_task_info().get_index_of_this_subtask()
        except Exception:  # noqa: BLE001
            subtask = 0
        self.effects = IngestEffects(config, subtask)
        self.state = runtime_context.get_state(ValueStateDescriptor("asset-state", Types.STRING()))
        # base64 text: byte[] state does not survive thread mode's converters (Object[] vs byte[])
        self.baseline = runtime_context.get_state(ValueStateDescriptor("thermal-baseline", Types.STRING()))

    def _load(self) -> AssetState:
        text = self.state.value()
        raw = None
        if text and '"has_baseline":true' in text[-40:]:  # skip the state read when there is none
            value = self.baseline.value()
            raw = base64.b64decode(value) if value else None
        return AssetState.from_json(text, raw)

    def _save(self, state: AssetState) -> None:
        self.state.update(state.to_json())
        raw = state.baseline_bytes()
        if raw is not None:
            self.baseline.update(base64.b64encode(raw).decode("ascii"))

    def process_element(self, value: str, ctx: Any):  # type: ignore[no-untyped-def]
        key = ctx.get_current_key() or ""
        state = self._load()
        out = self.core.on_line(value, state, key)
        now = ctx.timer_service().current_processing_time()
        self.effects.commit(out)
        if not state.has_pending:
            state.held_since_ms = None
        elif state.held_since_ms is None:
            state.held_since_ms = now
            ctx.timer_service().register_processing_time_timer(now + self.reorder_timeout_ms)
        self._save(state)
        if not self._housekeeping_armed:  # archive manifests and publish metrics even when input stops
            ctx.timer_service().register_processing_time_timer(now + self.janitor_interval_ms)
            self._housekeeping_armed = True
        yield from ()

    def on_timer(self, timestamp: int, ctx: Any):  # type: ignore[no-untyped-def]
        key = ctx.get_current_key() or ""
        state = self._load()
        if state.has_pending and state.held_since_ms is not None:
            if timestamp >= state.held_since_ms + self.reorder_timeout_ms:  # the safety net, not housekeeping
                out = self.core.on_timeout(state, key)
                self.effects.commit(out)
                state.held_since_ms = None
                self._save(state)
        self._housekeeping_armed = False
        if self.effects.housekeeping(force=True) != 0:
            ctx.timer_service().register_processing_time_timer(timestamp + self.janitor_interval_ms)
            self._housekeeping_armed = True
        yield from ()

    def close(self) -> None:
        effects = getattr(self, "effects", None)
        if effects is not None:
            effects.close()


def build_job(env: Any, config: IngestConfig, scan_interval_ms: int) -> None:
    """Add the ingestion pipeline to a PyFlink ``StreamExecutionEnvironment``."""
    from pyflink.common import Duration, WatermarkStrategy
    from pyflink.common.typeinfo import Types
    from pyflink.datastream.connectors.file_system import FileSource, StreamFormat

    from pipeline.landing import manifest_asset

    manifests = Path(config.landing) / config.manifest_dir
    manifests.mkdir(parents=True, exist_ok=True)
    source = (
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(manifests))
        .monitor_continuously(Duration.of_millis(scan_interval_ms))
        .build()
    )
    lines = env.from_source(source, WatermarkStrategy.no_watermarks(), "manifests").uid("manifest-source")
    (
        lines.key_by(manifest_asset, key_type=Types.STRING())
        .process(IngestFunction(config.to_json()), output_type=Types.STRING())
        .uid("ingest")
        .name("ingest: decode, features, XADD")
    )
