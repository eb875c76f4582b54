"""Flink wiring of the ingestion job (docs/ingestion.md)::

    FileSource(text lines of <landing>/manifests, scan every 10 ms)
      -> key_by(asset id of the line)
      -> IngestFunction (KeyedProcessFunction): per asset, restore gateway order (seq),
         read the blob the line names (claim-check), decode, validate, compute features,
         XADD idempotently to Redis, archive the blob.

The work itself is plain Python and testable without a JVM: ``pipeline.ordering`` (gateway
order), ``pipeline.ingestor`` (decode, validate, features), ``pipeline.effects`` (Redis,
archive, janitor, metrics), ``pipeline.asset_state`` (what is kept per asset). PyFlink is
only imported by :func:`build_job` and the function class (whose import needs no JVM either).
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from pipeline.asset_state import AssetState
from pipeline.effects import IngestEffects
from pipeline.ingest_config import IngestConfig
from pipeline.ingestor import AssetIngestor

__all__ = ["FlinkHeldLines", "IngestFunction", "build_job", "source_uid"]


try:  # importing pyflink needs no JVM; keep the module importable without it installed too
    from pyflink.datastream.functions import KeyedProcessFunction as _KeyedProcessFunction
except ImportError:  # pragma: no cover
    _KeyedProcessFunction = object  # type: ignore[assignment,misc]


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
        return self.map_state.get(key)

    def put(self, key: str, line: str) -> None:
        self.map_state.put(key, line)

    def remove(self, key: str) -> None:
        self.map_state.remove(key)

    def keys(self) -> list[str]:
        return list(self.map_state.keys())


class IngestFunction(_KeyedProcessFunction):  # type: ignore[misc,valid-type]
    """Keyed by asset: state -> :class:`~pipeline.ingestor.AssetIngestor` -> :class:`~pipeline.effects.IngestEffects`.

    State layout: ``pipeline.asset_state``. Decoded states are cached per asset inside this
    function instance (Flink state is only ever changed through it, and a failover builds a new
    instance, whose ``open`` starts with an empty cache), so a line costs the decode of nothing
    and the encode of what it touched: the small order record always, the PLC buffer for PLC and
    alarm files, the thermal baseline for frames.
    """

    def __init__(self, config_json: str) -> None:
        self.config_json = config_json

    def open(self, runtime_context: Any) -> None:
        from pyflink.common.typeinfo import Types
        from pyflink.datastream.state import MapStateDescriptor, ValueStateDescriptor

        config = IngestConfig.from_json(self.config_json)
        self.reorder_timeout_ms = config.reorder_timeout_ms
        self.janitor_interval_ms = config.janitor_interval_ms
        self._housekeeping_at: int | None = None  # processing time of the pending housekeeping timer
        self.core = AssetIngestor(config)
        subtask = subtask_index(runtime_context)
        self.effects = IngestEffects(config, subtask)
        self.order_state = runtime_context.get_state(ValueStateDescriptor("asset-order", Types.STRING()))
        self.held_state = runtime_context.get_map_state(
            MapStateDescriptor("held-lines", Types.STRING(), Types.STRING()))
        self.plc_state = runtime_context.get_state(ValueStateDescriptor("plc-buffer", Types.STRING()))
        # base64 text: byte[] state does not survive thread mode's converters (Object[] vs byte[])
        self.baseline_state = runtime_context.get_state(ValueStateDescriptor("thermal-baseline", Types.STRING()))
        self._cache: dict[str, AssetState] = {}

    def _baseline_raw(self) -> bytes | None:
        value = self.baseline_state.value()
        return base64.b64decode(value) if value else None

    def _load(self, key: str) -> AssetState:
        state = self._cache.get(key)
        if state is None:
            state = AssetState.load(self.order_state.value(), FlinkHeldLines(self.held_state),
                                    self.plc_state.value, self._baseline_raw)
            self._cache[key] = state
        return state

    def _save(self, state: AssetState) -> None:
        self.order_state.update(state.order_json())
        if state.plc_touched:
            self.plc_state.update(state.plc_json())
        if state.baseline_touched:
            raw = state.baseline_bytes()
            self.baseline_state.update(base64.b64encode(raw).decode("ascii") if raw is not None else None)
        state.clear_touched()

    def process_element(self, value: str, ctx: Any):  # type: ignore[no-untyped-def]
        key = ctx.get_current_key() or ""
        state = self._load(key)
        out = self.core.on_line(value, state, key)
        now = ctx.timer_service().current_processing_time()
        self.effects.commit(out)
        self._track_wait(state, out.progressed, now, ctx)
        self._save(state)
        if self._housekeeping_at is None:  # archive manifests and publish metrics even when input stops
            self._housekeeping_at = now + self.janitor_interval_ms
            ctx.timer_service().register_processing_time_timer(self._housekeeping_at)
        yield from ()

    def _track_wait(self, state: AssetState, progressed: bool, now: int, ctx: Any) -> None:
        """``held_since_ms``: since when lines are held *without progress*. One reorder timer per
        wait: registered when holding starts; progress only moves ``held_since_ms`` (the timer,
        when it fires early, re-arms itself for the new deadline)."""
        if not state.has_pending:
            state.held_since_ms = None
        elif state.held_since_ms is None:
            state.held_since_ms = now
            ctx.timer_service().register_processing_time_timer(now + self.reorder_timeout_ms)
        elif progressed:
            state.held_since_ms = now

    def on_timer(self, timestamp: int, ctx: Any):  # type: ignore[no-untyped-def]
        key = ctx.get_current_key() or ""
        state = self._load(key)
        if state.has_pending and state.held_since_ms is not None:
            due = state.held_since_ms + self.reorder_timeout_ms
            if timestamp < due:  # progress since the timer was set: wait on
                ctx.timer_service().register_processing_time_timer(due)
            else:
                out = self.core.on_timeout(state, key, timestamp - state.held_since_ms)
                self.effects.commit(out)
                if out.progressed or not state.has_pending:
                    state.held_since_ms = None
                    self._track_wait(state, True, timestamp, ctx)
                else:  # still waiting for a listed seq: look again later
                    ctx.timer_service().register_processing_time_timer(timestamp + self.reorder_timeout_ms)
                self._save(state)
        if self._housekeeping_at is None or timestamp >= self._housekeeping_at:  # None: restored timers, none armed yet
            self._housekeeping_at = None
            if self.effects.housekeeping(force=True) != 0:
                self._housekeeping_at = timestamp + self.janitor_interval_ms
                ctx.timer_service().register_processing_time_timer(self._housekeeping_at)
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


def build_job(env: Any, config: IngestConfig, scan_interval_ms: int, source_generation: int = 0) -> None:
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
    lines = env.from_source(source, WatermarkStrategy.no_watermarks(), "manifests").uid(source_uid(source_generation))
    (
        lines.key_by(manifest_asset, key_type=Types.STRING())
        .process(IngestFunction(config.to_json()), output_type=Types.STRING())
        .uid("ingest")
        .name("ingest: decode, features, XADD")
    )
