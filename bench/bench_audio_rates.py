"""What the audio model says about recordings made below 16 kHz or driven into clipping (the foreign fleet).

    .venv/bin/python bench/bench_foreign_fleet.py --healthy-audio none --data /tmp/ffa --out /tmp/ff_base.json
    .venv/bin/python bench/bench_audio_rates.py --foreign /tmp/ff_base.json --foreign-data /tmp/ffa \\
        --out bench/results/audio_rates.json

Handheld recorders, data loggers and telephony-grade sensors record at 8-12 kHz. Such a clip holds
nothing above half its rate; the audio model reads envelope bands up to 7.8 kHz, where bearing
defects and cavitation ring. Every healthy, bearing-wear and cavitation recording of the foreign
fleet (``bench_foreign_fleet.py``, its ``--data`` folder; piston compressors left out, bearing wear
and cavitation past moderate severity) is resampled to each rate of ``--rates`` (PCM16) and read as
``linewatch inspect`` reads it, at the recording's true speed (``--speed-rpm``, so that the rate and
not the speed is measured), alone. Per rate: what the model names (its label before any class is
withheld: recall of bearing wear and cavitation, healthy false alarms), the share it flags as
extrapolating, and the classes served records withhold (since this bench's commit: bearing wear and
cavitation below 16 kHz).

``--codecs``: every such recording encoded at its own rate with a lossy codec as a phone or a
handheld recorder stores it (``mp3:LEVEL``, ``ogg:LEVEL`` (Vorbis), ``opus:LEVEL``; LEVEL is
libsndfile's compression level, 0 = best quality; ``flac`` lossless as the check), decoded by
libsndfile as ``inspect`` reads such a file, then read as above: what the model names, and the mean
bit rate of the encoded files.

``--overdrive-db``: the healthy recordings peak-normalised to 0.9 of full scale and amplified by
each gain into clipping (PCM16): the model's false alarms, and how many
:func:`pipeline.features.audio_clipping.is_clipped` flags (``inspect`` warns on those). With
``--simulator-clipping`` also the share of our own fleets' clips (``bench_generalisation.py``'s
seeds, 200 per class) that the detector flags, and how many of the flagged healthy ones the model
calls faulty (read alone, without a speed).
"""

from __future__ import annotations

import argparse
import io
import json
import platform
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
#: ``--codecs`` name: (libsndfile format, subtype).
CODECS = {"mp3": ("MP3", "MPEG_LAYER_III"), "ogg": ("OGG", "VORBIS"), "opus": ("OGG", "OPUS"), "flac": ("FLAC", "PCM_16")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--foreign", type=Path, required=True, help="a bench_foreign_fleet.py report")
    ap.add_argument("--foreign-data", type=Path, required=True, help="its --data folder")
    ap.add_argument("--rates", type=int, nargs="*", default=[8000, 11025, 16000])
    ap.add_argument("--codecs", nargs="*", default=[], help="mp3:LEVEL, ogg:LEVEL, opus:LEVEL or flac")
    ap.add_argument("--overdrive-db", type=float, nargs="*", default=[], help="gains into clipping (dB over 0.9 FS)")
    ap.add_argument("--simulator-clipping", action="store_true", help="also count clipped clips of our own fleets")
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/audio_rates.json")
    args = ap.parse_args()
    import soundfile as sf
    from scipy.signal import resample_poly

    from models.inputs import input_array
    from models.inspect import Inspector
    from models.inspect.readers import load_assets
    from models.withheld_classes import withheld_classes
    from pipeline.features.messages import audio_features_message

    from pipeline.features.audio_clipping import is_clipped

    t0 = time.time()
    report = json.loads(args.foreign.read_text())
    profiles = load_assets(args.foreign_data / "assets.json")
    inspector = Inspector(assets=profiles)

    def read(y: np.ndarray, rate: int, asset_id: str, profile, shaft_hz: float | None):  # type: ignore[no-untyped-def]
        """The clip's model input, its message and the model's label before anything is withheld."""
        msg = audio_features_message(asset_id, profile.asset_type, 0, y.astype(np.float32), rate, profile,
                                     shaft_hz=shaft_hz)
        x_in = input_array("audio", msg)
        probs, classes, _ = inspector._predict("audio", [x_in], profile.asset_type)
        return x_in, msg, classes[int(np.argmax(probs))]

    files = {p.name: p for p in args.foreign_data.rglob("*.wav")}

    def recording(r: dict[str, Any]) -> tuple[np.ndarray, int]:
        """A record's recording as recorded: mono (channel mean), float64, its own rate."""
        x, rate = sf.read(files[r["wav"]], always_2d=True, dtype="float64")
        return x.mean(axis=1), int(rate)

    def tally(c: Counter[str], cls: str, label: str) -> None:
        """One more clip of ``cls``: named when the model names the fault (a healthy clip: any fault)."""
        c["n"] += 1
        c["named"] += (label != "normal") if cls == "normal" else (label == cls)
    rows = [r for r in report["records"] if r["cls"] in ("normal", "bearing_wear", "cavitation")
            and (r["cls"] == "normal" or r["severity"] >= 0.5)
            and report["machines"][r["asset_id"]]["subkind"] != "piston"]
    counts: dict[int, dict[str, Counter]] = {rate: {c: Counter() for c in ("normal", "bearing_wear", "cavitation")}
                                             for rate in args.rates}
    for r in rows:
        x, rate = recording(r)
        profile = profiles[r["asset_id"]]
        for target in args.rates:
            y = resample_poly(x, target, rate) if target != rate else x
            y = np.round(np.clip(y, -1.0, 1.0) * 32767.0) / 32768.0  # PCM16, as such a recorder writes it
            x_in, msg, label = read(y, target, r["asset_id"], profile, float(r["shaft_hz"]))
            c = counts[target][r["cls"]]
            tally(c, r["cls"], label)
            c["extrapolating"] += len(inspector.outside_training("audio", x_in)) >= 3
            for w in withheld_classes("audio", x_in, msg.stats):
                c[f"withheld:{w}"] += 1

    codecs: dict[str, dict[str, Any]] = {}
    for spec in args.codecs:
        name, _, level = spec.partition(":")
        fmt, subtype = CODECS[name]
        per = {c: Counter() for c in ("normal", "bearing_wear", "cavitation")}
        kbps: list[float] = []
        for r in rows:
            x, rate = recording(r)
            x = np.clip(x, -1.0, 1.0)
            buf = io.BytesIO()
            try:
                sf.write(buf, x, rate, format=fmt, subtype=subtype, compression_level=float(level) if level else None)
            except Exception:  # noqa: BLE001 - Opus takes 8/12/16/24/48 kHz only
                per[r["cls"]]["unencodable"] += 1
                continue
            kbps.append(len(buf.getvalue()) * 8 / (len(x) / rate) / 1000)
            y, _ = sf.read(io.BytesIO(buf.getvalue()), always_2d=True, dtype="float32")
            label = read(y.mean(axis=1), rate, r["asset_id"], profiles[r["asset_id"]], float(r["shaft_hz"]))[2]
            tally(per[r["cls"]], r["cls"], label)
        codecs[spec] = {"kbps_mean": round(float(np.mean(kbps)), 1) if kbps else None,
                        **{cls: dict(c) for cls, c in per.items()}}
    overdrive: dict[str, dict[str, int]] = {}
    for gain_db in [0.0, *args.overdrive_db] if args.overdrive_db else []:
        c = Counter()
        for r in rows:
            if r["cls"] != "normal":
                continue
            x, rate = recording(r)
            y = np.clip(x * 0.9 / max(float(np.max(np.abs(x))), 1e-12) * 10.0 ** (gain_db / 20.0), -1.0, 1.0)
            y = (np.round(y * 32767.0) / 32768.0).astype(np.float32)
            label = read(y, rate, r["asset_id"], profiles[r["asset_id"]], float(r["shaft_hz"]))[2]
            c["healthy"] += 1
            c["false_alarms"] += label != "normal"
            c["flagged_clipped"] += is_clipped(y)
        overdrive[f"{gain_db:g} dB"] = dict(c)
    simulator: dict[str, dict[str, int]] = {}
    if args.simulator_clipping:
        from linewatch.simulator.domain import DomainRenderer
        from models.data.domain_data import domain_world

        for domain, n_assets, seed in (("train", 150, 1001), ("unseen", 60, 1002)):
            fleet, fleet_profiles, specs = domain_world(domain, n_assets, seed, 200)
            renderer = DomainRenderer(fleet, seed)
            c = Counter()
            for spec in specs:
                clip = renderer.render(spec, modalities=("audio",)).clip.astype(np.float32) / 32768.0
                key = "healthy" if spec.fault == "normal" else "faulty"
                c[key] += 1
                if is_clipped(clip):
                    c[f"{key}_clipped"] += 1
                    if key == "healthy":  # does the model call our own clipped healthy clips faulty?
                        label = read(clip, 16_000, spec.asset_id, fleet_profiles[spec.asset_id], None)[2]
                        c["healthy_clipped_false_alarms"] += label != "normal"
            simulator[domain] = dict(c)
    result: dict[str, Any] = {
        "command": " ".join([".venv/bin/python", "bench/bench_audio_rates.py", *sys.argv[1:]]),
        "machine": {"platform": platform.platform(), "processor": platform.processor()},
        "rates": {str(rate): {cls: dict(c) for cls, c in per.items()} for rate, per in counts.items()},
        "codecs": codecs, "overdrive": overdrive, "simulator_clipping": simulator,
        "seconds": round(time.time() - t0, 1)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    for rate, per in counts.items():
        b, cav, h = per["bearing_wear"], per["cavitation"], per["normal"]
        print(f"{rate:6d} Hz: model names bearing {b['named']}/{b['n']}, cavitation {cav['named']}/{cav['n']}, "
              f"healthy false alarms {h['named']}/{h['n']}; extrapolating {b['extrapolating'] + cav['extrapolating'] + h['extrapolating']}"
              f"/{b['n'] + cav['n'] + h['n']}; bearing wear withheld on {h['withheld:bearing_wear']}/{h['n']} healthy")
    for spec, per in codecs.items():
        b, cav, h = per["bearing_wear"], per["cavitation"], per["normal"]
        print(f"{spec:>9s} ({per['kbps_mean']} kbit/s): model names bearing {b.get('named', 0)}/{b.get('n', 0)}, cavitation "
              f"{cav.get('named', 0)}/{cav.get('n', 0)}, healthy false alarms {h.get('named', 0)}/{h.get('n', 0)}; "
              f"not encodable {b.get('unencodable', 0) + cav.get('unencodable', 0) + h.get('unencodable', 0)}")
    for gain, c in overdrive.items():
        print(f"healthy overdriven {gain}: false alarms {c['false_alarms']}/{c['healthy']}, flagged clipped "
              f"{c['flagged_clipped']}/{c['healthy']}")
    for domain, c in simulator.items():
        print(f"our fleet ({domain} types): clipped healthy {c.get('healthy_clipped', 0)}/{c['healthy']} "
              f"({c.get('healthy_clipped_false_alarms', 0)} called faulty), faulty {c.get('faulty_clipped', 0)}/{c['faulty']}")
    print(f"{result['seconds']:.0f} s; {args.out}")


if __name__ == "__main__":
    main()
