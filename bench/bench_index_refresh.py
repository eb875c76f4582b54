"""Cost of one ``ManifestIndex.refresh()`` after one new manifest, against the manifests already in
``manifests/`` (a job that fell behind keeps every unfinished manifest there).

    PYTHONPATH=. .venv/bin/python bench/bench_index_refresh.py --out /tmp/index_refresh.json
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_report import emit

from pipeline.landing import LandingZone
from pipeline.landing.gateway import ManifestWriter
from pipeline.landing.index import ManifestIndex, _build


def refresh_ms(present: int, repeats: int, lines: int = 3) -> tuple[float, float]:
    """Median ms of one refresh after one new ``lines``-line manifest, with ``present`` manifests
    listed, and of indexing the same listing from scratch (what every refresh did before it became
    incremental: ``_build`` over the already-parsed manifests)."""
    with tempfile.TemporaryDirectory() as tmp:
        writer = ManifestWriter(Path(tmp), epoch=1)
        index = ManifestIndex(LandingZone(Path(tmp)))
        clock = [1_000]

        def publish_one() -> None:
            entries = [writer.write_blob(f"thermal/frames/A{i}/A{i}-{clock[0]}.tiff", b"xx", f"A{i}", clock[0])
                       for i in range(lines)]
            clock[0] += 1
            writer.publish(entries)

        for _ in range(present):
            publish_one()
        index.refresh()
        times, rebuilds = [], []
        for _ in range(repeats):
            publish_one()
            t0 = time.perf_counter()
            index.refresh()
            times.append((time.perf_counter() - t0) * 1000)
            files = dict(index._snap.files)
            t0 = time.perf_counter()
            _build(files)
            rebuilds.append((time.perf_counter() - t0) * 1000)
        return statistics.median(times), statistics.median(rebuilds)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--present", type=int, nargs="+", default=[10, 100, 400, 1000])
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    measured = {n: refresh_ms(n, args.repeats) for n in args.present}
    result = {"command": " ".join(sys.argv), "load_avg_1m": os.getloadavg()[0],
              "refresh_ms_median_by_manifests_present": {str(n): round(v[0], 2) for n, v in measured.items()},
              "from_scratch_index_ms_median_by_manifests_present": {str(n): round(v[1], 2)
                                                                    for n, v in measured.items()}}
    emit(result, args.out)


if __name__ == "__main__":
    main()
