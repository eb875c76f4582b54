"""``ManifestIndex.refresh`` indexes only the manifests that arrived and drops those that left; the
result must be exactly the from-scratch index of the listing in name order, whatever arrives,
leaves or repeats a line."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

from pipeline.landing import LandingZone
from pipeline.landing.gateway import ManifestWriter
from pipeline.landing.index import ManifestIndex, _build


def _assert_same_as_rebuild(index: ManifestIndex) -> None:
    snap = index._snap
    fresh = _build({name: snap.files[name] for name in sorted(snap.files)})
    assert snap.keys == fresh.keys
    assert snap.where == fresh.where
    assert snap.epochs == fresh.epochs
    assert snap.seqs == fresh.seqs


def test_incremental_refresh_equals_a_rebuild(tmp_path: Path) -> None:
    rng = random.Random(5)
    writer = ManifestWriter(tmp_path, epoch=1)
    zone = LandingZone(tmp_path)
    index = ManifestIndex(zone)
    zone.manifests.mkdir(parents=True, exist_ok=True)
    clock = 1_000
    for step in range(300):
        listed = sorted(p for p in zone.manifests.iterdir() if not p.name.startswith("."))
        action = rng.random()
        if action < 0.55 or not listed:  # a gateway publishes 1-4 lines for 1-3 assets
            entries = []
            for _ in range(rng.randint(1, 4)):
                asset = f"A{rng.randint(0, 2)}"
                entries.append(writer.write_blob(f"thermal/frames/{asset}/{asset}-{clock}.tiff", b"xx", asset, clock))
                clock += 1
            writer.publish(entries)
        elif action < 0.9:  # the janitor archives one (not always the oldest)
            rng.choice(listed).unlink()
        else:  # a re-announced manifest: the same lines under another name
            src = rng.choice(listed)
            shutil.copy(src, src.with_name(f"zz-{step}-{src.name}"))
        index.refresh()
        _assert_same_as_rebuild(index)
        # every listed line is answered for, every archived one is gone
        for name in index._snap.files:
            for line in index.lines_of(name) or []:
                assert index.location(line.text) is not None
    assert index.listings == 300


def test_a_manifest_leaving_takes_its_sequence_bounds_with_it(tmp_path: Path) -> None:
    writer = ManifestWriter(tmp_path, epoch=1)
    zone = LandingZone(tmp_path)
    index = ManifestIndex(zone)
    first = writer.publish([writer.write_blob("thermal/frames/A/A-1.tiff", b"x", "A", 1)])
    writer.publish([writer.write_blob("thermal/frames/A/A-2.tiff", b"x", "A", 2)])
    index.refresh()
    (epoch_bounds,) = next(iter(index._snap.epochs.values())).values()
    assert epoch_bounds[1] == epoch_bounds[0] + 1
    first.unlink()
    index.refresh()
    (bounds,) = next(iter(index._snap.epochs.values())).values()
    assert bounds == (epoch_bounds[1], epoch_bounds[1])
    _assert_same_as_rebuild(index)
