"""What the ingestion job keeps per asset, split so that each input touches only its part.

Flink keyed state, per asset (see ``pipeline.job.IngestFunction``):

========================  =======================================  =========================
state                     content                                   read / written
========================  =======================================  =========================
``asset-order`` (value)   gateway order per sequence, last accepted  every line (≈ 250 bytes)
                          frame/clip time and digest, reorder
                          timer start, a sensor's inputs refused
                          in a row (only while there are some)
``held-lines`` (map)      lines held back until a missing ``seq``    only while lines are held
                          arrives, one map entry per line
``plc-buffer`` (value)    the PLC window buffer (JSON)               PLC and alarm files only
``thermal-baseline``      per-pixel baseline (float32, base64)       thermal frames only
``plc-pressure-baseline`` learned running pressure, normal           PLC files of assets whose
                          vibration and healthy winding level        assets.json lacks either or
                          (JSON, < 5 KB;                             gives a rated current,
                          ``pipeline.features.plc_baseline``)       written while they learn
``audio-baseline``        learned healthy shaft-harmonic levels     read by audio clips, written
                          (JSON, < 1 KB;                            only while the asset learns
                          ``pipeline.features.audio_baseline``)
``thermal-reference``     learned healthy frames (uint16 and a      read by thermal frames,
                          binary header, base64; 8 frames of        written only while the
                          160x120 ≈ 410 KB;                         asset learns
                          ``pipeline.features.thermal_commissioning``)
========================  =======================================  =========================

Before, one JSON value held everything, so a backlog that arrived out of order (thousands of
held lines) was decoded and re-encoded on *every* line, and every audio clip re-encoded the
77 KB thermal baseline: the cost of a line grew with the backlog (docs/benchmarks.md,
"Backlog").

``AssetState`` is plain Python: ``plc``, ``baseline``, ``pressure``, ``audio_baseline`` and ``thermal_reference``
load on first use through loaders the Flink function supplies, and record that they were touched so only those
are saved (``pressure``, ``audio_baseline`` and ``thermal_reference`` when assigned, i.e. while they learn). ``motor_current`` (the asset's newest accepted motor current, which a thermal frame's reference is
chosen by) is memory only: after a restore it is unknown until the asset's next PLC file.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from pipeline.features.region_check import RegionCheck
from pipeline.sensor_refusals import RefusalRun

MAX_SKIPPED_RANGES = 32
"""Gaps remembered per sequence, so that a line of a skipped seq that turns up after all is
still processed (late) instead of being taken for a replay."""


MAX_EPOCHS = 8
"""Gateway epochs remembered per sequence; the oldest finished one is forgotten beyond that
(only when no manifest in the directory lists it any more: then no replay of it can come)."""


@dataclass
class EpochOrder:
    """Gateway order of one epoch of one sequence (a modality) of one asset.

    >>> o = EpochOrder(next_seq=10)
    >>> o.skip(3, 6); o.was_skipped(4), o.was_skipped(6)
    (True, False)
    >>> o.unskip(4); o.skipped
    [[3, 4], [5, 6]]
    """

    next_seq: int = 0
    held: int = 0  # lines of this epoch held back (in the held-lines store)
    started: bool = False
    skipped: list[list[int]] = field(default_factory=list)  # gaps given up on, [start, end)

    def skip(self, start: int, end: int) -> None:
        if end > start:
            self.skipped.append([start, end])
            del self.skipped[:-MAX_SKIPPED_RANGES]

    def was_skipped(self, seq: int) -> bool:
        return any(a <= seq < b for a, b in self.skipped)

    def unskip(self, seq: int) -> None:
        out: list[list[int]] = []
        for a, b in self.skipped:
            if a <= seq < b:
                out += [r for r in ([a, seq], [seq + 1, b]) if r[1] > r[0]]
            else:
                out.append([a, b])
        self.skipped = out

    def to_json(self) -> dict[str, object]:
        return {"next": self.next_seq, "held": self.held, "started": self.started,
                **({"skipped": self.skipped} if self.skipped else {})}

    @classmethod
    def from_json(cls, o: dict[str, Any]) -> EpochOrder:
        return cls(next_seq=int(o["next"]), held=int(o.get("held", 0)), started=bool(o.get("started", True)),
                   skipped=[[int(a), int(b)] for a, b in o.get("skipped", [])])


class HeldLines(Protocol):
    """Where lines wait for a missing ``seq``: a dict here, Flink ``MapState`` in the job."""

    def get(self, key: str) -> str | None: ...
    def put(self, key: str, line: str) -> None: ...
    def remove(self, key: str) -> None: ...
    def keys(self) -> Iterable[str]: ...


class MemoryHeldLines:
    """In-memory :class:`HeldLines` (tests, and anything running without Flink)."""

    def __init__(self, lines: dict[str, str] | None = None) -> None:
        self.lines: dict[str, str] = dict(lines or {})

    def get(self, key: str) -> str | None:
        return self.lines.get(key)

    def put(self, key: str, line: str) -> None:
        self.lines[key] = line

    def remove(self, key: str) -> None:
        self.lines.pop(key, None)

    def keys(self) -> Iterator[str]:
        return iter(list(self.lines))


def held_key(sequence: str, epoch: int, seq: int) -> str:
    """Key of a held line: ``"<sequence>:<epoch>:<seq>"``.

    >>> held_key("audio", 7, 12)
    'audio:7:12'
    """
    return f"{sequence}:{epoch}:{seq}"


@dataclass
class AssetState:
    """Per-asset state of the ingestion job; see the module docstring for how it is stored.

    ``order[sequence][epoch]`` is the gateway order of each epoch a gateway has used.

    >>> s = AssetState()
    >>> s.hold("thermal", 1, 3, '{"seq":3}'); s.hold("thermal", 1, 5, '{"seq":5}')
    >>> (s.held_seqs("thermal", 1), s.has_pending, s.take("thermal", 1, 3), s.held_seqs("thermal", 1))
    ([3, 5], True, '{"seq":3}', [5])
    """

    order: dict[str, dict[int, EpochOrder]] = field(default_factory=dict)
    last_ms: dict[str, int] = field(default_factory=dict)  # newest accepted frame/clip per modality
    last_digest: dict[str, str] = field(default_factory=dict)  # its content digest (pipeline.validation.repeats)
    refusals: dict[str, RefusalRun] = field(default_factory=dict)  # inputs refused in a row (pipeline.sensor_refusals)
    held_since_ms: int | None = None  # processing time since which lines are held without progress
    held_lines: HeldLines = field(default_factory=MemoryHeldLines)
    plc_loader: Callable[[], str | None] | None = None
    baseline_loader: Callable[[], bytes | None] | None = None
    pressure_loader: Callable[[], str | None] | None = None
    audio_baseline_loader: Callable[[], str | None] | None = None
    thermal_reference_loader: Callable[[], bytes | None] | None = None
    _plc: Any = None
    _plc_loaded: bool = False
    _baseline: Any = None
    _baseline_loaded: bool = False
    _pressure: Any = None
    _pressure_loaded: bool = False
    _audio_baseline: Any = None
    _audio_baseline_loaded: bool = False
    _thermal_reference: Any = None
    _thermal_reference_loaded: bool = False
    plc_touched: bool = False
    baseline_touched: bool = False
    pressure_touched: bool = False
    audio_baseline_touched: bool = False
    thermal_reference_touched: bool = False
    held_values: dict[str, Any] = field(default_factory=dict)  # parsed held lines (memory only; text is stored)
    regions_moved: bool = False  # its last thermal frame was read through registered / proposed boxes (memory only)
    dead_pixels: bool = False  # its last thermal frame had dead pixels, read from their neighbours (memory only)
    plc_standstill_ms: int | None = None  # start of its newest PLC window with a standstill (memory only)
    region_check: RegionCheck | None = None  # when its thermal region boxes were last checked (memory only)
    motor_current: tuple[int, float] | None = None  # (event ms, A) of its newest accepted motor current (memory only)

    def epochs(self, sequence: str) -> dict[int, EpochOrder]:
        return self.order.setdefault(sequence, {})

    # ---- the PLC window buffer and thermal baseline, loaded on first use
    @property
    def plc(self) -> Any:
        """``pipeline.features.plc_window.PlcWindowBuffer`` of the asset, or None before its first PLC file."""
        if not self._plc_loaded:
            text = self.plc_loader() if self.plc_loader is not None else None
            if text:
                from pipeline.features.plc_window import PlcWindowBuffer

                self._plc = PlcWindowBuffer.from_state(json.loads(text))
            self._plc_loaded = True
        self.plc_touched = True
        return self._plc

    @plc.setter
    def plc(self, value: Any) -> None:
        self._plc, self._plc_loaded, self.plc_touched = value, True, True

    @property
    def baseline(self) -> Any:
        """``pipeline.features.thermal_features.ThermalBaseline``, or None before the first frame."""
        if not self._baseline_loaded:
            raw = self.baseline_loader() if self.baseline_loader is not None else None
            if raw:
                self._baseline = baseline_from_bytes(raw)
            self._baseline_loaded = True
        self.baseline_touched = True
        return self._baseline

    @baseline.setter
    def baseline(self, value: Any) -> None:
        self._baseline, self._baseline_loaded, self.baseline_touched = value, True, True

    @property
    def pressure(self) -> Any:
        """``pipeline.features.plc_baseline.PlcBaseline`` (pressure and vibration) of the asset, or None before it
        is needed. Like ``audio_baseline``, reading it does not mark it for saving: once learnt it never changes,
        so the PLC handler assigns it only while it learns."""
        if not self._pressure_loaded:
            text = self.pressure_loader() if self.pressure_loader is not None else None
            if text:
                from pipeline.features.plc_baseline import PlcBaseline

                self._pressure = PlcBaseline.from_state(json.loads(text))
            self._pressure_loaded = True
        return self._pressure

    @pressure.setter
    def pressure(self, value: Any) -> None:
        self._pressure, self._pressure_loaded, self.pressure_touched = value, True, True

    @property
    def audio_baseline(self) -> Any:
        """``pipeline.features.audio_baseline.AudioBaseline`` of the asset, or None before its first clip.

        Unlike the parts above, reading it does not mark it for saving: a learned baseline is read by
        every clip and never changes, so it is written only when assigned (after a change)."""
        if not self._audio_baseline_loaded:
            text = self.audio_baseline_loader() if self.audio_baseline_loader is not None else None
            if text:
                from pipeline.features.audio_baseline import AudioBaseline

                self._audio_baseline = AudioBaseline.from_state(json.loads(text))
            self._audio_baseline_loaded = True
        return self._audio_baseline

    @audio_baseline.setter
    def audio_baseline(self, value: Any) -> None:
        self._audio_baseline, self._audio_baseline_loaded, self.audio_baseline_touched = value, True, True

    @property
    def thermal_reference(self) -> Any:
        """``pipeline.features.thermal_commissioning.ThermalCommissioning`` of the asset, or None before
        its first frame. Like ``audio_baseline``, written only when assigned (while it learns)."""
        if not self._thermal_reference_loaded:
            raw = self.thermal_reference_loader() if self.thermal_reference_loader is not None else None
            if raw:
                from pipeline.features.thermal_commissioning import ThermalCommissioning

                self._thermal_reference = ThermalCommissioning.from_bytes(raw)
            self._thermal_reference_loaded = True
        return self._thermal_reference

    @thermal_reference.setter
    def thermal_reference(self, value: Any) -> None:
        self._thermal_reference, self._thermal_reference_loaded, self.thermal_reference_touched = value, True, True

    def thermal_reference_bytes(self) -> bytes | None:
        return self._thermal_reference.to_bytes() if self._thermal_reference is not None else None

    def audio_baseline_json(self) -> str | None:
        if self._audio_baseline is None:
            return None
        return json.dumps(self._audio_baseline.to_state(), separators=(",", ":"))

    def pressure_json(self) -> str | None:
        return json.dumps(self._pressure.to_state(), separators=(",", ":")) if self._pressure is not None else None

    def plc_json(self) -> str | None:
        return json.dumps(self._plc.to_state(), separators=(",", ":")) if self._plc is not None else None

    def baseline_bytes(self) -> bytes | None:
        return baseline_to_bytes(self._baseline) if self._baseline is not None else None

    def clear_touched(self) -> None:
        self.plc_touched = self.baseline_touched = self.pressure_touched = self.audio_baseline_touched = False
        self.thermal_reference_touched = False

    # ---- held lines
    def hold(self, sequence: str, epoch: int, seq: int, line: str, value: Any = None) -> None:
        """Hold ``line`` (stored as text); ``value``, its parsed form, is kept in memory so that the
        line is not parsed again when released (after a restore it is parsed from the text)."""
        key = held_key(sequence, epoch, seq)
        self.held_lines.put(key, line)
        if value is not None:
            self.held_values[key] = value
        self.epochs(sequence).setdefault(epoch, EpochOrder()).held += 1

    def take_value(self, sequence: str, epoch: int, seq: int) -> Any:
        """The parsed form given to :meth:`hold` of a line :meth:`take` just released, if still in memory."""
        return self.held_values.pop(held_key(sequence, epoch, seq), None)

    def peek(self, sequence: str, epoch: int, seq: int) -> str | None:
        """The held line of that seq, if any (it stays held)."""
        return self.held_lines.get(held_key(sequence, epoch, seq))

    def take(self, sequence: str, epoch: int, seq: int) -> str | None:
        """Remove and return a held line (None if that seq is not held)."""
        key = held_key(sequence, epoch, seq)
        line = self.held_lines.get(key)
        if line is not None:
            self.held_lines.remove(key)
            order = self.order.get(sequence, {}).get(epoch)
            if order is not None:
                order.held -= 1
        return line

    def held_seqs(self, sequence: str, epoch: int) -> list[int]:
        """Sorted seqs held for that sequence and epoch (walks the store: only when the order needs it)."""
        order = self.order.get(sequence, {}).get(epoch)
        if order is not None and order.held == 0:
            return []
        prefix = f"{sequence}:{epoch}:"
        return sorted(int(k[len(prefix):]) for k in self.held_lines.keys() if k.startswith(prefix))

    @property
    def has_pending(self) -> bool:
        return any(o.held for epochs in self.order.values() for o in epochs.values())

    # ---- the small part, written after every line
    def order_json(self) -> str:
        return json.dumps(
            {
                "order": {k: {str(e): o.to_json() for e, o in epochs.items()} for k, epochs in self.order.items()},
                "last_ms": self.last_ms,
                "last_digest": self.last_digest,
                "held_since_ms": self.held_since_ms,
                **({"refusals": {k: r.to_json() for k, r in self.refusals.items()}} if self.refusals else {}),
            },
            separators=(",", ":"),
        )

    @classmethod
    def load(
        cls,
        order_json: str | None,
        held_lines: HeldLines | None = None,
        plc_loader: Callable[[], str | None] | None = None,
        baseline_loader: Callable[[], bytes | None] | None = None,
        pressure_loader: Callable[[], str | None] | None = None,
        audio_baseline_loader: Callable[[], str | None] | None = None,
        thermal_reference_loader: Callable[[], bytes | None] | None = None,
    ) -> AssetState:
        state = cls(plc_loader=plc_loader, baseline_loader=baseline_loader, pressure_loader=pressure_loader,
                    audio_baseline_loader=audio_baseline_loader, thermal_reference_loader=thermal_reference_loader)
        if held_lines is not None:
            state.held_lines = held_lines
        if order_json:
            data = json.loads(order_json)
            for kind, epochs in data.get("order", {}).items():
                if "next" in epochs:  # state written before epochs were kept apart (one epoch per sequence)
                    epoch = int(epochs["epoch"])
                    state.order[kind] = {epoch: EpochOrder.from_json(epochs)}
                    for key in [k for k in state.held_lines.keys() if k.count(":") == 1 and k.startswith(kind + ":")]:
                        line = state.held_lines.get(key)
                        state.held_lines.remove(key)
                        if line is not None:
                            state.held_lines.put(held_key(kind, epoch, int(key.split(":")[1])), line)
                else:
                    state.order[kind] = {int(e): EpochOrder.from_json(o) for e, o in epochs.items()}
            state.last_ms = {k: int(v) for k, v in data.get("last_ms", {}).items()}
            state.last_digest = {k: str(v) for k, v in data.get("last_digest", {}).items()}  # none before
            state.held_since_ms = data.get("held_since_ms")
            state.refusals = {k: RefusalRun.from_json(v) for k, v in data.get("refusals", {}).items()}  # none before
        return state

    def copy_through_storage(self) -> AssetState:
        """A fresh state read back from what this one would store (tests: what Flink would restore)."""
        lines = MemoryHeldLines({k: self.held_lines.get(k) or "" for k in self.held_lines.keys()})
        plc, raw, pressure, audio = self.plc_json(), self.baseline_bytes(), self.pressure_json(), self.audio_baseline_json()
        reference = self.thermal_reference_bytes()
        return AssetState.load(self.order_json(), lines, lambda: plc, lambda: raw, lambda: pressure, lambda: audio,
                               lambda: reference)


def baseline_to_bytes(baseline: Any) -> bytes:
    """``ThermalBaseline`` -> header (n_frames, min_frames, h, w, alpha) + float32 mean."""
    mean = baseline._mean  # the class offers no public snapshot yet
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
        baseline._mean = np.frombuffer(raw[40:], dtype="<f4").reshape(h, w).copy()
    return baseline
