"""Manifest line in, Redis entries out: the work of the ingestion job, without Flink.

:class:`AssetIngestor` handles the lines of one asset (whose :class:`~pipeline.asset_state.AssetState`
the caller passes in). A line is parsed once, by the landing-zone contract's one parser, into a
typed :class:`~pipeline.landing.contract.ManifestEntry`; that value goes through the gateway order
(``pipeline.ordering``), the landing zone's path policy and blob read (``pipeline.landing.zone``)
and the handler of its kind (``pipeline.handlers``: decode, validate, features). The result is a
:class:`~pipeline.step.StepOutput` (entries, dead letters, blobs to archive) that
``pipeline.effects`` performs.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from pathlib import Path

from linewatch.contract import DeadLetter, DeadLetterReason
from pipeline.asset_state import AssetState
from pipeline.decoders.errors import RejectedInput
from pipeline.handlers import HANDLERS, Blob, HandlerContext
from pipeline.job_spec import JobSpec
from pipeline.landing.contract import ManifestEntry, ManifestError, Probe, parse_manifest_line
from pipeline.landing.index import ManifestIndex
from pipeline.landing.zone import read_blob
from pipeline.ordering import Admission, GatewayOrder
from pipeline.redis_sink import PendingEntry, dedup_key_for
from pipeline.sensor_refusals import SENDER, accepted, refused
from pipeline.stage_times import BlobTimes
from pipeline.step import StepOutput

log = logging.getLogger(__name__)

SOURCE = "pipeline.manifest"


class AssetIngestor:
    """Turns manifest lines of one asset (state passed in) into Redis entries. No Flink here.

    ``index`` is the job's :class:`~pipeline.landing.index.ManifestIndex` (refreshed on the
    housekeeping thread); by default a synchronous one (tests, tools).
    """

    def __init__(self, spec: JobSpec, index: ManifestIndex | None = None) -> None:
        self.spec = spec
        self.zone = spec.zone()
        self.index = index if index is not None else ManifestIndex(self.zone)
        self.order = GatewayOrder(self.index, self.zone)
        self.ctx = HandlerContext.from_spec(spec)
        self._archive_root = self.zone.archive.resolve()
        self._stamp = spec.flink.stage_times_file is not None
        self._seen_ms = 0.0  # when the element being handled (line or timer) reached the job
        self._seen_text = ""  # ... and its line ("" for a timer)

    # ---- one manifest line
    def on_line(self, text: str, state: AssetState, key: str) -> StepOutput:
        """Handle one line for asset ``key`` (``""``: the line named no asset)."""
        out = StepOutput()
        self._seen_ms, self._seen_text = time.time() * 1000, text
        self.index.saw(text)
        try:
            entry = parse_manifest_line(text)
        except ManifestError as exc:
            out.count("manifest_lines")
            self._bad_line(out, text, exc, key)
            return out
        if entry is None:  # blank or whitespace-only (a CRLF file's trailing empty lines): nothing announced
            return out
        if isinstance(entry, Probe):
            out.probe = entry.token
            return out
        out.count("manifest_lines")
        if entry.seq is None:  # no order fields: arrival order
            out.extend(self.process(entry, state))
            return out
        adm = self.order.offer(entry, state, key)
        self._admitted(out, adm, state)
        if adm.held:
            out.count("reorder_held")
        return out

    def on_timeout(self, state: AssetState, key: str, waited_ms: int) -> StepOutput:
        """A timer fired ``waited_ms`` after the held lines last made progress: look again (acting on
        the index after ``reorder_timeout_ms``); after ``reorder_give_up_ms`` read what the source
        never delivered from the directory."""
        out = StepOutput()
        self._seen_ms, self._seen_text = time.time() * 1000, ""
        flink = self.spec.flink
        if waited_ms >= flink.reorder_give_up_ms:
            adm = self.order.give_up(state, key)
            if adm.from_index:
                log.warning("%s: %d lines listed in %s/ were never delivered by the source in %.0f s (a reused "
                            "manifest name?); read them from the directory", key, adm.from_index, flink.manifest_dir,
                            waited_ms / 1000)
        else:
            adm = self.order.recheck(state, key, trust_index=waited_ms >= flink.reorder_timeout_ms)
        self._admitted(out, adm, state)
        return out

    def _admitted(self, out: StepOutput, adm: Admission, state: AssetState) -> None:
        for name in ("already_handled", "reused_seq", "late_after_gap", "seq_gaps", "from_index"):
            out.count(name, getattr(adm, name))
        out.recheck = adm.recheck
        if adm.ready:
            out.progressed = True
        for entry in adm.ready:
            out.extend(self.process(entry, state))

    def _manifest_ref(self, text: str) -> str | None:
        where = self.index.location(text)
        return None if where is None else where.ref(self.spec.flink.manifest_dir)

    def _bad_line(self, out: StepOutput, text: str, exc: ManifestError, key: str) -> None:
        """A line the parser rejects: one dead letter naming ``manifests/<file>:<line>``; only the
        last line of a file without a line break after it is ``truncated`` (half-written)."""
        where = self.index.location(text)
        if where is None:  # the error path may list the directory itself (bad input is rare)
            self.index.refresh()
            where = self.index.location(text)
        reason, detail, ref = exc.reason, exc.detail, exc.raw_ref
        if where is not None:
            ref = where.ref(self.spec.flink.manifest_dir)
            if reason == DeadLetterReason.DECODE_ERROR and where.last_unterminated:
                reason = DeadLetterReason.TRUNCATED
                detail = (f"the last line of {ref.rsplit(':', 1)[0]} ends without a line break and is not JSON "
                          f"(half-written manifest?): {detail}; gateways must write manifests under a hidden name "
                          "and rename them when complete")
            else:
                detail = f"line {where.lineno} of {ref.rsplit(':', 1)[0]}: {detail}"
        self.ctx.dead.add(out, SOURCE, reason, detail, ref, text, asset_id=key or None)

    # ---- one blob
    def process(self, entry: ManifestEntry, state: AssetState) -> StepOutput:
        """Read the blob a line names, run its kind's handler, archive the blob. Every path ends
        in entries or a dead letter, and the blob (if it is in the landing zone) in the archive."""
        out = StepOutput()
        source = f"pipeline.{entry.kind}"
        try:
            path = self.zone.resolve(entry.path)
        except ManifestError as exc:
            self.ctx.dead.add(out, SOURCE, exc.reason, exc.detail, self._manifest_ref(entry.text) or exc.raw_ref,
                              entry.text, entry.asset_id, entry.event_time_ms)
            return out
        info = self.ctx.registry.get(entry.asset_id)
        if info is None:
            self.ctx.dead.add(out, source, DeadLetterReason.UNKNOWN_ASSET,
                              f"asset {entry.asset_id!r} is not in {self.ctx.registry.path}; register it before "
                              "sending data", entry.path, entry.text, entry.asset_id, entry.event_time_ms)
            self._archive(out, path)
            return out
        if not path.exists():  # a replay after a restart: the blob was archived already
            with contextlib.suppress(ManifestError):  # neither there nor archived: read_blob reports missing_file
                path = self.zone.locate(entry.path)
        try:
            closed_ms: int | None = int(os.stat(path).st_mtime * 1000)
        except OSError:
            closed_ms = None
        try:
            data = read_blob(entry, path, self.spec.validation.blob_cap(entry.kind))
            read_ms = time.time() * 1000
            HANDLERS[entry.kind](self.ctx, Blob(entry, data, info), state, out)
            if self._stamp:  # flink.stage_times_file set: per-stage latency of each blob (bench_e2e)
                out.times.append(BlobTimes(entry.path, entry.kind, self._seen_ms, read_ms, time.time() * 1000,
                                           held=entry.text != self._seen_text))
        except RejectedInput as exc:
            self.ctx.dead.rejection(out, source, exc, asset_id=entry.asset_id)
            out.accepted = False
        except Exception as exc:  # bad input must never kill the job
            log.exception("processing %s failed", entry.path)
            self.ctx.dead.add(out, source, DeadLetterReason.PROCESSING_ERROR,
                              f"{type(exc).__name__}: {exc}; report this with the file attached", entry.path,
                              "", entry.asset_id, entry.event_time_ms)
            out.accepted = False
        self._watch_sensor(entry, state, out)
        out.count(f"blobs.{entry.kind}")
        if closed_ms is not None:
            out.closed_ms += [(i, closed_ms) for i, e in enumerate(out.entries) if e.hwm_key is not None]
        self._archive(out, path)
        return out

    def _watch_sensor(self, entry: ManifestEntry, state: AssetState, out: StepOutput) -> None:
        """Count a sensor's input refused (its last dead letter) or end its run of refusals at an
        accepted one; the alert request that asks for, written once (``pipeline.sensor_refusals``)."""
        if entry.kind not in SENDER:
            return
        if out.accepted:
            request = accepted(state.refusals, entry.kind, entry.asset_id, entry.event_time_ms)
        else:
            letters = [e.message for e in out.entries if isinstance(e.message, DeadLetter)]
            last_ms = state.last_ms.get(entry.kind)
            if not letters or letters[-1].reason is DeadLetterReason.LATE or (
                    last_ms is not None and entry.event_time_ms <= last_ms):
                return  # a late or replayed input says nothing about the sensor now
            request = refused(state.refusals, entry.kind, entry.asset_id, letters[-1],
                              self.spec.flink.sensor_alert_after)
        if request is None:
            return
        names = self.spec.names
        key = dedup_key_for(names, request.episode_key, request.state, entry.path, str(entry.event_time_ms),
                            key=names.ingest_request_dedup)
        out.entries.append(PendingEntry(stream=names.alert_requests(), message=request, dedup_key=key))
        out.count(f"sensor_alerts.{request.state}")

    def _archive(self, out: StepOutput, path: Path) -> None:
        if self._archive_root not in path.parents:
            out.archive.append(path)
