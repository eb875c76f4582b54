"""Gateway order: release an asset's manifest lines in ``seq`` order (docs/ingestion.md, "Order").

The FileSource hands out the files found in one scan in directory order, i.e. in no particular
order; after a restart or any backlog an asset's seq N+1 regularly arrives before seq N. Per
asset and sequence (a modality; alarm logs share the PLC sequence) lines are held back until
the missing seq arrives. Whether to wait is decided by looking, not by guessing with a timeout:
:class:`ManifestIndex` knows which lines the manifests still in the directory hold; a missing
seq that none of them holds can never arrive (gateways publish in order), so that gap is
skipped. A processing-time timer (``reorder_timeout_ms``) looks again while lines wait; only a
seq that stays listed without ever being delivered is given up, after ``reorder_give_up_ms``.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field

from pipeline.asset_state import AssetState, KindOrder
from pipeline.landing import MODALITY_OF_KIND, LandingZone, kind_of_path


@dataclass(frozen=True)
class OrderFields:
    """The contract's ordering fields of a manifest line (all optional)."""

    kind: str | None
    seq: int | None
    epoch: int
    end_ms: int | None
    asset_id: str | None = None


def order_fields(line: str) -> OrderFields:
    """``kind``/``seq``/``epoch``/``end``/``asset_id`` of a manifest line; missing or malformed ones are None.

    >>> order_fields('{"path":"plc/p.csv","seq":4,"epoch":9,"end":"2026-11-29T14:00:01.000Z"}')
    OrderFields(kind='plc', seq=4, epoch=9, end_ms=1795960801000, asset_id=None)
    >>> order_fields('garbage')
    OrderFields(kind=None, seq=None, epoch=0, end_ms=None, asset_id=None)
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
    asset = data.get("asset_id") if isinstance(data.get("asset_id"), str) else None
    return OrderFields(kind, seq, epoch, end_ms, asset)


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
        self._lowest: dict[tuple[str, str, int], int] | None = None  # per (asset, sequence, epoch)

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
        if names.symmetric_difference(self._files):
            self._lowest = None
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
                if f.seq is None or f.kind is None or f.asset_id is None:
                    continue
                k = (f.asset_id, MODALITY_OF_KIND.get(f.kind, f.kind), f.epoch, f.seq)
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
        """Lowest seq of that asset's sequence listed in the directory (None: none listed)."""
        self.refresh(force=True)
        if self._lowest is None:
            lowest: dict[tuple[str, str, int], int] = {}
            for a, q, e, n in self._keys:
                if lowest.get((a, q, e), n + 1) > n:
                    lowest[(a, q, e)] = n
            self._lowest = lowest
        return self._lowest.get((asset, sequence, epoch))


@dataclass
class Admission:
    """What offering one line to :class:`GatewayOrder` (or a timer) decided."""

    ready: list[str] = field(default_factory=list)  # lines to process now, in this order
    already_handled: bool = False  # a replay or resend of a seq that was processed before
    listed_twice: bool = False  # the same seq is held already: a gateway bug (dead letter)
    late_after_gap: bool = False  # a seq given up on turned up after all: processed late
    seq_gaps: int = 0  # seqs given up on
    abandoned: list[tuple[str, int, int, int]] = field(default_factory=list)  # (sequence, epoch, start, end)
    held: bool = False  # some lines of this asset stay held after this step


class GatewayOrder:
    """Per asset and sequence: which held lines may be processed now.

    A missing seq is waited for as long as a manifest in the directory lists it (it is on its
    way, however long the source takes to reach it: a backlog of thousands of files takes
    minutes); a missing seq no manifest lists is skipped at once. A line of a skipped seq that
    turns up after all is processed late (frames and clips older than the last accepted one
    become ``late`` dead letters) instead of being dropped as a replay. Only a seq that stays
    listed without ever being delivered (``give_up_ms``; a reused manifest name, which Flink
    skips) is abandoned, with a dead letter.

    >>> import tempfile
    >>> from pathlib import Path
    >>> with tempfile.TemporaryDirectory() as d:
    ...     order = GatewayOrder(ManifestIndex(LandingZone(Path(d))))
    ...     state = AssetState()
    ...     line = lambda n: '{"asset_id":"A","path":"audio/a%d.wav","seq":%d,"epoch":1}' % (n, n)
    ...     first = order.offer(line(0), order_fields(line(0)), state, "A").ready    # seq 0 starts the asset
    ...     held = order.offer(line(2), order_fields(line(2)), state, "A")           # 1 missing, not listed: gap
    ...     late = order.offer(line(1), order_fields(line(1)), state, "A")           # ... and there it is after all
    ...     (len(first), len(held.ready), held.seq_gaps, late.late_after_gap, len(late.ready))
    (1, 1, 1, True, 1)
    """

    def __init__(self, index: ManifestIndex) -> None:
        self.index = index

    def offer(self, line: str, fields: OrderFields, state: AssetState, key: str) -> Admission:
        """Offer a line that has ``kind`` and ``seq`` (lines without them bypass the order)."""
        assert fields.kind is not None and fields.seq is not None
        adm = Admission()
        sequence = MODALITY_OF_KIND.get(fields.kind, fields.kind)  # alarm logs share the PLC sequence
        order = state.order.get(sequence)
        if order is None:
            order = state.order[sequence] = KindOrder(epoch=fields.epoch)
        if fields.epoch > order.epoch:  # a new gateway epoch: what the old one left is released as is
            self._release(order, state, sequence, adm)
            order.epoch, order.next_seq, order.started, order.skipped = fields.epoch, 0, True, []
        elif fields.epoch < order.epoch or (order.started and fields.seq < order.next_seq):
            if fields.epoch == order.epoch and order.was_skipped(fields.seq):
                order.unskip(fields.seq)
                adm.late_after_gap = True
                adm.ready.append(line)
            else:
                # a replay after a restore (at-least-once source) or a gateway resend: its entries
                # are in Redis already (the high-water marks would drop them anyway)
                adm.already_handled = True
            adm.held = state.has_pending
            return adm
        elif (held := state.peek(sequence, fields.seq)) is not None:
            # the same line again is a replay (a restored job's fresh source re-reads the directory);
            # another line with the same seq is a gateway bug
            if held == line:
                adm.already_handled = True
            else:
                adm.listed_twice = True
            adm.held = True
            return adm
        state.hold(sequence, fields.seq, line)
        if not order.started:
            # first lines of this sequence since the job's state began: start at the lowest seq still
            # waiting in the manifest directory (0 on a fresh gateway, later after a state loss).
            # Every line held so far is above that lowest seq (else it would have started), so the
            # one that starts it is this line.
            lowest = self.index.lowest(key, sequence, order.epoch)
            if lowest is None:
                order.started, order.next_seq = True, min(state.held_seqs(sequence))
            elif fields.seq <= lowest:
                order.started, order.next_seq = True, fields.seq
        if order.started:
            self._drain(order, state, key, sequence, adm)
        adm.held = state.has_pending
        return adm

    def _drain(self, order: KindOrder, state: AssetState, key: str, sequence: str, adm: Admission) -> None:
        """Release held lines in seq order; skip a gap only when the missing seq is in no manifest
        of the directory (gateways publish in seq order, so it can never arrive: it was lost)."""
        while order.held:
            line = state.take(sequence, order.next_seq)
            if line is not None:
                adm.ready.append(line)
                order.next_seq += 1
            elif self.index.present(key, sequence, order.epoch, order.next_seq):
                return  # it is on its way (read later by the source): wait for it
            else:
                seqs = state.held_seqs(sequence)
                if not seqs:  # the count disagrees with the store: trust the store
                    order.held = 0
                    return
                adm.seq_gaps += seqs[0] - order.next_seq
                order.skip(order.next_seq, seqs[0])
                order.next_seq = seqs[0]

    def _release(self, order: KindOrder, state: AssetState, sequence: str, adm: Admission,
                 abandon: bool = False) -> None:
        order.started = True
        for seq in state.held_seqs(sequence):
            if seq > order.next_seq and (order.next_seq > 0 or abandon):
                adm.seq_gaps += seq - order.next_seq
                order.skip(order.next_seq, seq)
                if abandon:
                    adm.abandoned.append((sequence, order.epoch, order.next_seq, seq))
            line = state.take(sequence, seq)
            if line is not None:
                adm.ready.append(line)
            order.next_seq = seq + 1

    def recheck(self, state: AssetState, key: str) -> Admission:
        """The reorder timer: release what waits for seqs no manifest lists any more."""
        adm = Admission()
        self.index.refresh(force=True)  # a listing it remembers may be gone by now
        for sequence, order in state.order.items():
            if order.held and order.started:
                self._drain(order, state, key, sequence, adm)
            elif order.held and self.index.lowest(key, sequence, order.epoch) is None:
                self._release(order, state, sequence, adm)  # the listed start is gone: start anyway
        adm.held = state.has_pending
        return adm

    def give_up(self, state: AssetState) -> Admission:
        """Stop waiting for listed seqs that were never delivered: release every held line."""
        adm = Admission()
        for sequence, order in state.order.items():
            if order.held:
                self._release(order, state, sequence, adm, abandon=True)
        adm.held = state.has_pending
        return adm
