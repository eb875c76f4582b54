"""Gateway order: release an asset's manifest lines in ``(epoch, seq)`` order (docs/ingestion.md, "Order").

The FileSource hands out the files found in one scan in directory order, i.e. in no particular
order; after a restart or any backlog an asset's seq N+1 regularly arrives before seq N, and an
old gateway epoch's manifests may be read after the new epoch's first line. Per asset, sequence
(a modality; alarm logs share the PLC sequence) and epoch, lines are held back until the missing
seq arrives, and an epoch's lines wait while an older epoch still has lines on their way.
Whether to wait is decided by looking, not by guessing with a timeout:
:class:`~pipeline.landing.index.ManifestIndex` knows which lines the manifests still in the
directory announce. A missing seq that no manifest lists, in a listing that already shows a
later line, can never arrive (gateways publish in order), so that gap is skipped. A line the
source never delivers (a reused manifest name, which Flink skips) is read from the directory
after ``reorder_give_up_ms``.

Nothing is dropped silently: a line whose ``(epoch, seq)`` was handled before is a replay only if
its blob has left the landing zone (the job archives every blob it handles before its state
records the line); a line naming a blob still there is a new blob under a reused seq and is
processed (``reused_seq``). A line of a seq given up on that turns up after all is processed
late (``late_after_gap``). Every line ends as entries or a dead letter, and its blob in the archive.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pipeline.asset_state import MAX_EPOCHS, AssetState, EpochOrder
from pipeline.landing.contract import ManifestEntry, parse_manifest_line
from pipeline.landing.index import ManifestIndex
from pipeline.landing.zone import LandingZone


@dataclass
class Admission:
    """What offering one line to :class:`GatewayOrder` (or a timer) decided."""

    ready: list[ManifestEntry] = field(default_factory=list)  # lines to process now, in this order
    already_handled: int = 0  # replays: the seq was handled and its blob archived
    reused_seq: int = 0  # a handled or held seq announced again with a blob still in the landing zone
    late_after_gap: int = 0  # a seq given up on turned up after all: processed late
    seq_gaps: int = 0  # seqs given up on (no manifest lists them)
    from_index: int = 0  # lines read from the directory because the source never delivered them
    held: bool = False  # some lines of this asset stay held after this step
    recheck: bool = False  # the index has not listed what a decision needs yet: look again soon


def _entry(text: str) -> ManifestEntry:
    parsed = parse_manifest_line(text)
    assert isinstance(parsed, ManifestEntry), "only blob lines are held"
    return parsed


class GatewayOrder:
    """Per asset, sequence and epoch: which held lines may be processed now (module docstring).

    >>> import tempfile
    >>> from pathlib import Path
    >>> from pipeline.landing.gateway import ManifestWriter
    >>> with tempfile.TemporaryDirectory() as d:
    ...     zone, writer = LandingZone(Path(d)), ManifestWriter(Path(d), epoch=1)
    ...     lines = [writer.write_blob(f"audio/clips/A/{n}.wav", b"x", "A", 1000 + n) for n in range(3)]
    ...     _ = writer.publish([lines[0]]), writer.publish([lines[2]])  # seq 1 was never announced
    ...     order, state = GatewayOrder(ManifestIndex(zone), zone), AssetState()
    ...     first = order.offer(lines[0], state, "A").ready    # seq 0 starts the asset
    ...     held = order.offer(lines[2], state, "A")           # 1 missing and not listed: a gap
    ...     late = order.offer(lines[1], state, "A")           # ... and there it is after all
    ...     (len(first), len(held.ready), held.seq_gaps, late.late_after_gap, len(late.ready))
    (1, 1, 1, 1, 1)
    """

    def __init__(self, index: ManifestIndex, zone: LandingZone) -> None:
        self.index = index
        self.zone = zone

    def offer(self, entry: ManifestEntry, state: AssetState, key: str) -> Admission:
        """Offer a line that has a ``seq`` (lines without one bypass the order)."""
        assert entry.seq is not None
        adm = Admission()
        sequence, epoch, seq = entry.sequence, entry.epoch, entry.seq
        epochs = state.epochs(sequence)
        order = epochs.get(epoch)
        if order is None:
            order = epochs[epoch] = EpochOrder()
            self._forget_old_epochs(epochs, key, sequence)
        if order.started and seq < order.next_seq:
            if order.was_skipped(seq):
                order.unskip(seq)
                adm.late_after_gap += 1
                adm.ready.append(entry)
            else:
                self._seen_before(entry, adm)
        elif (held := state.peek(sequence, epoch, seq)) is not None:
            if held == entry.text:
                adm.already_handled += 1  # the same line again: a restored job's fresh source re-reads
            else:
                self._seen_before(entry, adm)
        else:
            state.hold(sequence, epoch, seq, entry.text, entry)
            self._drain_sequence(state, key, sequence, adm, trust_index=False)
        adm.held = state.has_pending
        return adm

    def recheck(self, state: AssetState, key: str, trust_index: bool = False) -> Admission:
        """Look again (the reorder timer, or the index was refreshed). ``trust_index``: after
        ``reorder_timeout_ms`` without progress, act on the index even if it does not list the
        held lines themselves (their manifest left the directory, say an operator removed it)."""
        adm = Admission()
        self.index.request_refresh()  # a listing it remembers may be gone by now
        for sequence in list(state.order):
            self._drain_sequence(state, key, sequence, adm, trust_index)
        adm.held = state.has_pending
        return adm

    def give_up(self, state: AssetState, key: str) -> Admission:
        """The source has not delivered a listed line for ``reorder_give_up_ms``: read what the
        directory lists from the index, skip what it does not, release everything held."""
        adm = Admission()
        for sequence, epochs in state.order.items():
            listed = self.index.epochs(key, sequence)
            for epoch in sorted(set(epochs) | set(listed)):
                order = epochs.setdefault(epoch, EpochOrder())
                held = state.held_seqs(sequence, epoch)
                high = max([*held, listed.get(epoch, (0, -1))[1]], default=-1)
                if not order.started:
                    low = listed.get(epoch, (high, high))[0]
                    order.next_seq, order.started = min([low, *held]), True
                for seq in range(order.next_seq, high + 1):
                    text = state.take(sequence, epoch, seq)
                    if text is None and (text := self.index.line((key, sequence, epoch, seq))) is not None:
                        adm.from_index += 1
                    if text is None:
                        adm.seq_gaps += 1
                        order.skip(seq, seq + 1)
                    else:
                        adm.ready.append(state.take_value(sequence, epoch, seq) or _entry(text))
                order.next_seq = max(order.next_seq, high + 1)
                order.held = 0
        adm.held = state.has_pending
        return adm

    # ---- internals
    def _seen_before(self, entry: ManifestEntry, adm: Admission) -> None:
        """A seq that was handled (or is held) is announced again by another line, or again after
        its line was processed: a replay if the blob has left the landing zone, else a new blob."""
        if self.zone.pending(entry):
            adm.reused_seq += 1
            adm.ready.append(entry)
        else:
            adm.already_handled += 1

    def _fresh(self, key: str, sequence: str, epoch: int, seq: int) -> bool:
        """Does the index's listing already show the manifest of held line ``seq``? Then it shows
        every manifest published before it, and "not listed" means "never coming"."""
        k = (key, sequence, epoch, seq)
        if self.index.present(k):
            return True
        self.index.request_refresh()  # synchronous index: refreshed now; the job's: soon
        return self.index.present(k)

    def _drain_sequence(self, state: AssetState, key: str, sequence: str, adm: Admission, trust_index: bool) -> None:
        """Release held lines epoch by epoch (oldest first); an epoch with lines still on their
        way (listed at or above its next seq) holds back every later epoch."""
        epochs = state.order.get(sequence, {})
        listed = self.index.epochs(key, sequence)
        for epoch in sorted(set(epochs) | set(listed)):
            order = epochs.get(epoch)
            if order is not None and order.held and not self._drain_epoch(state, key, sequence, epoch, order, adm,
                                                                         trust_index):
                return
            span = listed.get(epoch)
            if span is not None and (order is None or not order.started or span[1] >= order.next_seq):
                return  # lines of this epoch are on their way: later epochs wait

    def _drain_epoch(self, state: AssetState, key: str, sequence: str, epoch: int, order: EpochOrder,
                     adm: Admission, trust_index: bool) -> bool:
        """Release this epoch's held lines in seq order; True when none is left held."""
        if not order.started:
            seqs = state.held_seqs(sequence, epoch)
            if not seqs:
                order.held = 0
                return True
            if not self._fresh(key, sequence, epoch, seqs[0]) and not trust_index:
                adm.recheck = True
                return False
            # first lines of this epoch since the state began: start at the lowest seq still listed
            # (0 on a fresh gateway, later after a state loss)
            lowest = self.index.lowest(key, sequence, epoch)
            order.started, order.next_seq = True, seqs[0] if lowest is None else min(lowest, seqs[0])
        while order.held:
            text = state.take(sequence, epoch, order.next_seq)
            if text is not None:
                adm.ready.append(state.take_value(sequence, epoch, order.next_seq) or _entry(text))
                order.next_seq += 1
                continue
            if self.index.present((key, sequence, epoch, order.next_seq)):
                return False  # listed: on its way (read later by the source)
            seqs = state.held_seqs(sequence, epoch)
            if not seqs:  # the count disagrees with the store: trust the store
                order.held = 0
                return True
            if not self._fresh(key, sequence, epoch, seqs[0]) and not trust_index:
                adm.recheck = True
                return False
            if self.index.present((key, sequence, epoch, order.next_seq)):
                return False  # the fresh listing shows it: on its way
            adm.seq_gaps += seqs[0] - order.next_seq
            order.skip(order.next_seq, seqs[0])
            order.next_seq = seqs[0]
        return True

    def _forget_old_epochs(self, epochs: dict[int, EpochOrder], key: str, sequence: str) -> None:
        listed = self.index.epochs(key, sequence)
        for epoch in sorted(epochs):
            if len(epochs) <= MAX_EPOCHS:
                return
            if not epochs[epoch].held and epoch not in listed:
                del epochs[epoch]
