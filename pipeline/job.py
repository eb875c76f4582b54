"""Flink wiring of the ingestion job (docs/ingestion.md)::

    FileSource(text lines of <landing>/manifests, scan every 10 ms)
      -> key_by(asset id of the line)
      -> IngestFunction (KeyedProcessFunction): per asset, restore gateway order (seq),
         read the blob the line names (claim-check), decode, validate, compute features,
         XADD idempotently to Redis, archive the blob.

The work itself is plain Python and testable without a JVM: ``pipeline.ordering`` (gateway
order), ``pipeline.ingestor`` (parse once, dispatch to ``pipeline.handlers``), ``pipeline.effects``
(Redis, archive; housekeeping thread), ``pipeline.asset_state`` (what is kept per asset). PyFlink is
only imported by :func:`build_job` and the function class (whose import needs no JVM either).
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

from pipeline.job_spec import JobSpec

if TYPE_CHECKING:  # imported in open(): the job's gateway process needs none of it (faster restarts)
    from pipeline.asset_state import AssetState
    from pipeline.step import StepOutput

__all__ = ["FlinkHeldLines", "IngestFunction", "build_job", "source_uid"]


try:  # importing pyflink needs no JVM; keep the module importable without it installed too
    from pyflink.datastream.functions import KeyedProcessFunction as _KeyedProcessFunction
except ImportError:  # pragma: no cover
    _KeyedProcessFunction = object


def subtask_index(runtime_context: Any) -> int:
    """Index of this parallel subtask. PyFlink 2.3's thread-mode context forwards
    ``get_index_of_this_subtask`` to a Java method Flink 2 removed (it is ``getTaskInfo()`` now),
    so ask the Java context directly there; process mode answers the Python call."""
    java = getattr(runtime_context, "_runtime_context", None)
    if java is not None and hasattr(java, "getTaskInfo"):
        return int(java.getTaskInfo().getIndexOfThisSubtask())
    return int(runtime_context.get_index_of_this_subtask())


class FlinkHeldLines:
    """:class:`~pipeline.asset_state.HeldLines` on a Flink ``MapState`` (scoped to the current key)."""

    def __init__(self, map_state: Any) -> None:
        self.map_state = map_state

    def get(self, key: str) -> str | None:
        value: str | None = self.map_state.get(key)
        return value

    def put(self, key: str, line: str) -> None:
        self.map_state.put(key, line)

    def remove(self, key: str) -> None:
        self.map_state.remove(key)

    def keys(self) -> list[str]:
        return list(self.map_state.keys())


class IngestFunction(_KeyedProcessFunction):  # type: ignore[misc]
    """Keyed by asset: state -> :class:`~pipeline.ingestor.AssetIngestor` -> :class:`~pipeline.effects.IngestEffects`.

    State layout: ``pipeline.asset_state``. Decoded states are cached per asset inside this
    function instance (Flink state is only ever changed through it, and a failover builds a new
    instance, whose ``open`` starts with an empty cache), so a line costs the decode of nothing
    and the encode of what it touched: the small order record always, the PLC buffer for PLC and
    alarm files (and the pressure and vibration baseline of an asset whose assets.json lacks either, while it learns), the
    thermal baseline for frames, the learned healthy audio levels for clips. File-system housekeeping (manifest index,
    janitor, archive pruning) runs on a thread started in ``open``, never here.
    """

    def __init__(self, spec_json: str) -> None:
        self.spec_json = spec_json

    def open(self, runtime_context: Any) -> None:
        import time

        print(f"PHASE operator_open {time.time():.3f}", flush=True)  # bench/bench_restart.py
        from pyflink.common.typeinfo import Types
        from pyflink.datastream.state import MapStateDescriptor, ValueStateDescriptor

        from pipeline.asset_state import AssetState
        from pipeline.effects import IngestEffects
        from pipeline.ingestor import AssetIngestor
        from pipeline.landing.index import ManifestIndex

        self._asset_state = AssetState
        spec = JobSpec.model_validate_json(self.spec_json)
        self.flink = spec.flink
        index = ManifestIndex(spec.zone(), synchronous=False)
        self.core = AssetIngestor(spec, index)
        self.effects = IngestEffects(spec, subtask_index(runtime_context), index)
        self.effects.start()
        self.order_state = runtime_context.get_state(ValueStateDescriptor("asset-order", Types.STRING()))
        self.held_state = runtime_context.get_map_state(
            MapStateDescriptor("held-lines", Types.STRING(), Types.STRING()))
        self.plc_state = runtime_context.get_state(ValueStateDescriptor("plc-buffer", Types.STRING()))
        # base64 text: byte[] state does not survive thread mode's converters (Object[] vs byte[])
        self.baseline_state = runtime_context.get_state(ValueStateDescriptor("thermal-baseline", Types.STRING()))
        self.pressure_state = runtime_context.get_state(ValueStateDescriptor("plc-pressure-baseline", Types.STRING()))
        self.audio_baseline_state = runtime_context.get_state(ValueStateDescriptor("audio-baseline", Types.STRING()))
        self.thermal_reference_state = runtime_context.get_state(
            ValueStateDescriptor("thermal-reference", Types.STRING()))  # base64, as thermal-baseline
        self._cache: dict[str, AssetState] = {}
        self._timer_at: dict[str, int] = {}  # the earliest pending reorder timer per asset
        print(f"PHASE operator_ready {time.time():.3f}", flush=True)

    def _baseline_raw(self) -> bytes | None:
        value = self.baseline_state.value()
        return base64.b64decode(value) if value else None

    def _thermal_reference_raw(self) -> bytes | None:
        value = self.thermal_reference_state.value()
        return base64.b64decode(value) if value else None

    def _load(self, key: str) -> AssetState:
        state = self._cache.get(key)
        if state is None:
            state = self._asset_state.load(self.order_state.value(), FlinkHeldLines(self.held_state),
                                    self.plc_state.value, self._baseline_raw, self.pressure_state.value,
                                    self.audio_baseline_state.value, self._thermal_reference_raw)
            self._cache[key] = state
        return state

    def _save(self, state: AssetState) -> None:
        self.order_state.update(state.order_json())
        if state.plc_touched:
            self.plc_state.update(state.plc_json())
        if state.baseline_touched:
            raw = state.baseline_bytes()
            self.baseline_state.update(base64.b64encode(raw).decode("ascii") if raw is not None else None)
        if state.pressure_touched:
            self.pressure_state.update(state.pressure_json())
        if state.audio_baseline_touched:
            self.audio_baseline_state.update(state.audio_baseline_json())
        if state.thermal_reference_touched:
            raw = state.thermal_reference_bytes()
            self.thermal_reference_state.update(base64.b64encode(raw).decode("ascii") if raw is not None else None)
        state.clear_touched()

    def process_element(self, value: str, ctx: Any):  # type: ignore[no-untyped-def]
        key = ctx.get_current_key() or ""
        state = self._load(key)
        out = self.core.on_line(value, state, key)
        self.effects.commit(out)
        self._schedule(key, state, out, ctx.timer_service().current_processing_time(), ctx)
        self._save(state)
        yield from ()

    def _schedule(self, key: str, state: AssetState, out: StepOutput, now: int, ctx: Any) -> None:
        """``held_since_ms``: since when lines are held *without progress*; one timer per asset at
        the earliest of: a quick look when the index has not listed a held line yet
        (``index_recheck_ms``), else the next reorder check (``reorder_timeout_ms`` after progress)."""
        if not state.has_pending:
            state.held_since_ms = None
            return
        if state.held_since_ms is None or out.progressed:
            state.held_since_ms = now
        due = now + self.flink.index_recheck_ms if out.recheck else max(
            now + 1, state.held_since_ms + self.flink.reorder_timeout_ms)
        armed = self._timer_at.get(key)
        if armed is None or armed <= now or due < armed:
            ctx.timer_service().register_processing_time_timer(due)
            self._timer_at[key] = due

    def on_timer(self, timestamp: int, ctx: Any):  # type: ignore[no-untyped-def]
        key = ctx.get_current_key() or ""
        if self._timer_at.get(key) == timestamp:
            del self._timer_at[key]
        state = self._load(key)
        if state.has_pending and state.held_since_ms is not None:
            out = self.core.on_timeout(state, key, timestamp - state.held_since_ms)
            self.effects.commit(out)
            self._schedule(key, state, out, timestamp, ctx)
            self._save(state)
        yield from ()

    def close(self) -> None:
        effects = getattr(self, "effects", None)
        if effects is not None:
            effects.close()


def source_uid(generation: int) -> str:
    """Operator uid of the manifest source in ``generation`` (``JobSpec.source_generation``).

    A new uid makes a restore leave the old source's state behind: Flink's FileSource keeps
    the path of every file it ever processed in memory and in every checkpoint (its
    documentation says so), so a long-running job rolls over to a fresh source now and then
    while the per-asset state of the ``ingest`` operator is restored as is.

    >>> source_uid(0), source_uid(3)
    ('manifest-source', 'manifest-source-g3')
    """
    return "manifest-source" if generation == 0 else f"manifest-source-g{generation}"


def build_job(env: Any, spec: JobSpec) -> None:
    """Add the ingestion pipeline to a PyFlink ``StreamExecutionEnvironment``."""
    from pyflink.common import Duration, WatermarkStrategy
    from pyflink.common.typeinfo import Types
    from pyflink.datastream.connectors.file_system import FileSource, StreamFormat

    from pipeline.landing.contract import manifest_asset

    manifests = spec.zone().manifests
    manifests.mkdir(parents=True, exist_ok=True)
    source = (
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(manifests))
        .monitor_continuously(Duration.of_millis(spec.flink.scan_interval_ms))
        .build()
    )
    lines = env.from_source(source, WatermarkStrategy.no_watermarks(), "manifests").uid(source_uid(spec.source_generation))
    (
        lines.key_by(manifest_asset, key_type=Types.STRING())
        .process(IngestFunction(spec.to_json()), output_type=Types.STRING())
        .uid("ingest")
        .name("ingest: decode, features, XADD")
    )
