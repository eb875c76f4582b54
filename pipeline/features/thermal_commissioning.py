"""A machine's healthy frames, learned from its own first frames and then frozen: what a slowly
developing thermal fault is read against in the live line.

The job's running baseline (:class:`~pipeline.features.thermal_features.ThermalBaseline`, an
EWMA with a memory of about 50 frames: 25 s at 2 frames/s) measures *recent* change: a fault that
grows over minutes or days is absorbed into it at that pace, so the thermal model reads such a
frame much as it reads one frame alone. One frame cannot tell a cooling failure from a machine
that runs hot anyway; against a healthy frame of the same machine near the same load it can
(``bench/bench_thermal_limits.py``: cooling failure past moderate 0.71 → 1.00 for the shipped
model, healthy false alarms 0.17 → 0.83 %; a healthy frame at *another* load raised them to
4.2 %). :class:`ThermalCommissioning` learns such frames per asset, the way the job learns a
machine's healthy sound (:mod:`pipeline.features.audio_baseline`): ``frames`` accepted frames,
at most one per ``min_gap_ms`` (so that they span the machine's operating points), each with the
motor current the asset's PLC reported around it. Once learned it is **frozen**: a fault that
develops later is read against it, not absorbed into it. It must be learnt while the machine is
healthy (at commissioning, or after a repair: the job relearns an asset whose entry in
``flink.thermal_reference_relearn`` differs from the generation it learnt under).

**A reference holds at the loads it was learnt at.** A frame is read against the mean of the
learned frames whose motor current lies within ``current_tolerance`` (relative) of the frame's
own. Where none does (a load the machine did not run at while learning), the job reads it against the
learned frames nearest its current (:meth:`ThermalCommissioning.closest`) at its own load, their motor body
and terminal box scaled by the motor's heat at the two currents
(:func:`pipeline.features.thermal_load.body_rise_ratio`, ``flink.thermal_reference_at_load``), where that
ratio lies in :data:`~pipeline.features.thermal_load.RISE_RATIO_RANGE`; else, and without a recent current,
against its running baseline as before. Frames learnt without a current (an
asset without a PLC feed) hold for frames read without one. The reference is brought to the
frame's ambient (each frame's own estimate, the median outside its regions), so a warmer hall is
not read as a hotter machine, and the job reads it with the dead band of
:func:`pipeline.features.thermal_reference.dead_band` (changes within 3 K are none: a healthy machine
differs by a few kelvin from day to day; measured in docs/models.md, "Thermal: the live line's
learned healthy reference").

>>> rules = ThermalReferenceRules(frames=3, min_gap_ms=1_000, current_tolerance=0.15)
>>> learner = ThermalCommissioning(rules)
>>> frame = np.full((4, 4), 30_000, np.uint16)
>>> [learner.observe(frame + 100 * k, event_ms=1_000 * k, current_a=10.0 + k) for k in range(3)]
[False, False, True]
>>> float(learner.reference(current_a=11.0)[0, 0])     # the three frames within 15 % of 11 A
30100.0
>>> float(learner.reference(current_a=9.0)[0, 0])      # 10 A only (11 A is 22 % off)
30000.0
>>> learner.reference(current_a=20.0) is None, learner.reference(current_a=None) is None
(True, True)
>>> float(ThermalCommissioning.from_bytes(learner.to_bytes()).reference(current_a=11.0)[0, 0])
30100.0
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from pipeline.features.thermal_regions import ambient_estimate

_MAGIC = b"LWTR1\n"  # thermal reference snapshot, format 1


@dataclass(frozen=True)
class ThermalReferenceRules:
    """How a thermal reference is learnt: ``frames`` frames, at least ``min_gap_ms`` apart; read at
    motor currents within ``current_tolerance`` (relative) of a learned frame's."""

    frames: int = 8
    min_gap_ms: int = 60_000
    current_tolerance: float = 0.15

    def __post_init__(self) -> None:
        if self.frames < 1:
            raise ValueError("a thermal reference needs at least one frame (frames >= 1)")
        if self.min_gap_ms < 0 or not 0.0 < self.current_tolerance < 1.0:
            raise ValueError("min_gap_ms must be >= 0 and current_tolerance in (0, 1)")


def _near(a: float | None, b: float | None, tolerance: float) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= tolerance * max(abs(a), abs(b), 1e-6)


class ThermalCommissioning:
    """One asset's learned healthy frames (``uint16`` centikelvin), their motor currents (A, or None)
    and ambients (centikelvin); frozen once ``rules.frames`` were learnt."""

    def __init__(self, rules: ThermalReferenceRules | None = None, generation: int = 0) -> None:
        self.rules = rules or ThermalReferenceRules()
        self.generation = generation
        self.frames: list[np.ndarray] = []
        self.currents: list[float | None] = []
        self.ambients: list[float] = []
        self.last_ms: int | None = None

    @property
    def learned(self) -> bool:
        return len(self.frames) >= self.rules.frames

    def reset(self) -> None:
        """Forget what was learnt (after a repair, or a change to the machine or its camera)."""
        self.frames, self.currents, self.ambients, self.last_ms = [], [], [], None

    def observe(self, frame_ck: np.ndarray, event_ms: int, current_a: float | None,
                boxes: Mapping[str, tuple[int, int, int, int]] | None = None) -> bool:
        """Learn from an accepted frame (``boxes``: the regions its ambient is read around); True
        when this frame completed the reference. Frames closer than ``min_gap_ms`` to the last one
        learnt, frames of another size than the first and frames after the reference is complete
        are not learnt."""
        if self.learned:
            return False
        if self.last_ms is not None and abs(event_ms - self.last_ms) < self.rules.min_gap_ms:
            return False
        frame = np.asarray(frame_ck)
        if self.frames and frame.shape != self.frames[0].shape:
            return False
        self.frames.append(np.clip(np.rint(frame), 0, 65_535).astype(np.uint16))
        self.currents.append(None if current_a is None or not np.isfinite(current_a) else float(current_a))
        self.ambients.append(ambient_estimate(frame.astype(np.float32), boxes or {}))
        self.last_ms = event_ms
        return self.learned

    def reference(self, current_a: float | None, frame_ck: np.ndarray | None = None,
                  boxes: Mapping[str, tuple[int, int, int, int]] | None = None) -> np.ndarray | None:
        """The healthy frame (``float32`` centikelvin) a frame at ``current_a`` is read against: the
        mean of the learned frames near that current, brought to ``frame_ck``'s ambient when given;
        None before the reference is learnt, where no learned frame is near, or for a frame of
        another size."""
        if not self.learned:
            return None
        near = [i for i, c in enumerate(self.currents) if _near(c, current_a, self.rules.current_tolerance)]
        return self._mean(near, frame_ck, boxes)

    def closest(self, current_a: float, frame_ck: np.ndarray | None = None,
                boxes: Mapping[str, tuple[int, int, int, int]] | None = None) -> tuple[np.ndarray, float] | None:
        """For a frame at a current no learned frame is near (:meth:`reference` None): the mean of the
        learned frames nearest that current (those within ``current_tolerance`` of the nearest one's), as
        :meth:`reference` gives it, and their mean current, which the job reads it at
        (:func:`pipeline.features.thermal_load.body_rise_ratio`); None before the reference is learnt, without
        a learned current, or for a frame of another size.

        >>> learner = ThermalCommissioning(ThermalReferenceRules(frames=2, min_gap_ms=0))
        >>> frame = np.full((4, 4), 30_000, np.uint16)
        >>> _ = [learner.observe(frame + 100 * k, event_ms=k, current_a=c) for k, c in enumerate((10.0, 20.0))]
        >>> ref, amps = learner.closest(27.0); float(ref[0, 0]), amps
        (30100.0, 20.0)
        """
        if not self.learned or not np.isfinite(current_a):
            return None
        known = [(abs(c - current_a), c) for c in self.currents if c is not None]
        if not known:
            return None
        nearest = min(known)[1]
        near = [i for i, c in enumerate(self.currents) if _near(c, nearest, self.rules.current_tolerance)]
        ref = self._mean(near, frame_ck, boxes)
        return None if ref is None else (ref, float(np.mean([self.currents[i] for i in near])))

    def _mean(self, rows: list[int], frame_ck: np.ndarray | None,
              boxes: Mapping[str, tuple[int, int, int, int]] | None) -> np.ndarray | None:
        """The mean of learned frames ``rows`` (``float32`` centikelvin), brought to ``frame_ck``'s ambient
        when given; None without rows or for a frame of another size."""
        if not rows:
            return None
        if frame_ck is not None and np.shape(frame_ck) != self.frames[0].shape:
            return None
        ref = np.mean(np.stack([self.frames[i] for i in rows]).astype(np.float32), axis=0)
        if frame_ck is not None:
            ambient = ambient_estimate(np.asarray(frame_ck, np.float32), boxes or {})
            ref += np.float32(ambient - float(np.mean([self.ambients[i] for i in rows])))
        return ref

    def to_bytes(self) -> bytes:
        """Snapshot for Flink state, binary as the running baseline's (no JSON to parse on every
        restore, no pickle): magic, int64 ``(frames, min_gap_ms, generation, has_last, last_ms, n,
        h, w)``, float64 ``current_tolerance``, n float64 currents (NaN: none), n float64 ambients,
        then the n frames as ``uint16`` (little-endian, C order)."""
        n = len(self.frames)
        h, w = self.frames[0].shape if self.frames else (0, 0)
        ints = [self.rules.frames, self.rules.min_gap_ms, self.generation, self.last_ms is not None,
                self.last_ms or 0, n, h, w]
        floats = [self.rules.current_tolerance, *(np.nan if c is None else c for c in self.currents), *self.ambients]
        body = b"".join(np.ascontiguousarray(f, dtype="<u2").tobytes() for f in self.frames)
        return _MAGIC + np.array(ints, dtype="<i8").tobytes() + np.array(floats, dtype="<f8").tobytes() + body

    @classmethod
    def from_bytes(cls, raw: bytes) -> ThermalCommissioning:
        """Inverse of :meth:`to_bytes`."""
        if not raw.startswith(_MAGIC):
            raise ValueError("not a thermal reference snapshot")
        at = len(_MAGIC)
        frames, min_gap_ms, generation, has_last, last_ms, n, h, w = (
            int(x) for x in np.frombuffer(raw, dtype="<i8", count=8, offset=at))
        at += 8 * 8
        floats = np.frombuffer(raw, dtype="<f8", count=1 + 2 * n, offset=at)
        at += 8 * (1 + 2 * n)
        rules = ThermalReferenceRules(frames=frames, min_gap_ms=min_gap_ms, current_tolerance=float(floats[0]))
        out = cls(rules, generation=generation)
        out.currents = [None if np.isnan(c) else float(c) for c in floats[1:1 + n]]
        out.ambients = [float(a) for a in floats[1 + n:]]
        out.last_ms = last_ms if has_last else None
        if n:
            flat = np.frombuffer(raw, dtype="<u2", count=n * h * w, offset=at).reshape(n, h, w)
            out.frames = [f.astype(np.uint16) for f in flat]
        return out
