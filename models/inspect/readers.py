"""Tolerant readers for recorded files: what a handheld device or a historian export really holds.

* WAV: PCM 8/16/24/32-bit or float, mono or multi-channel (averaged), any sample rate and length
  (the feature code resamples to 16 kHz and reads up to eight 1 s segments); also mu-law, A-law,
  ADPCM and RF64 WAVs, and FLAC, Ogg (Vorbis, Opus) and MP3 files, through libsndfile;
* thermal frames (TIFF, 16-bit PNG, ``.npy``, temperature-matrix CSV): :mod:`.frame_files`;
* PLC: the historian long format (``timestamp,tag,value,quality,unit``, CSV or JSON lines) of
  ``docs/simulator.md``, or a *wide* CSV with a ``timestamp`` column and one column per tag
  (``motor_current_a`` or ``<ASSET>.motor_current_a``; the asset comes from ``--asset`` or the
  file name then); tags may carry a historian's own names and units (``Motor Current (A)``,
  ``DE_BRG_TEMP_F``, ``Discharge Pressure [psi]``, run states as words: :mod:`.historian_tags`),
  each mapping reported in ``notes``.

Each reader raises :class:`InspectInputError` with a message that says what is wrong.

>>> import io, wave
>>> buf = io.BytesIO(); w = wave.open(buf, "wb"); w.setnchannels(2); w.setsampwidth(2); w.setframerate(8000)
>>> w.writeframes(np.zeros((800, 2), np.int16).tobytes()); w.close()
>>> x, rate = wav_from_bytes(buf.getvalue(), "a.wav"); x.shape, rate
((800,), 8000)
"""

from __future__ import annotations

import csv
import io
import json
import warnings
from datetime import UTC
from pathlib import Path

import numpy as np

from models.inspect.historian_tags import (
    TagReading,
    is_read_as,
    parse_value,
    resolve_tag,
    speed_setpoint_scale,
    unsupported_reason,
)
from pipeline.features.plc_window import PLC_TAGS


class InspectInputError(ValueError):
    """A file that cannot be scored, with what to do about it."""


def mono(y: np.ndarray, notes: list[str] | None = None) -> np.ndarray:
    """One channel of ``(samples, channels)``: their mean, unless averaging cancels the sound (channels
    in opposite phase, a differential pair: the mean's RMS under half the channels' mean RMS), then
    the loudest channel, with a line in ``notes``.

    >>> t = np.sin(np.linspace(0, 100, 800)).astype(np.float32)
    >>> float(np.abs(mono(np.stack([t, t], 1)) - t).max()), float(np.abs(mono(np.stack([t, -0.9 * t], 1)) - t).max())
    (0.0, 0.0)
    """
    if y.ndim == 1 or y.shape[1] == 1:
        return y.reshape(-1)
    mixed = y.mean(axis=1)
    rms = np.sqrt(np.mean(np.square(y - y.mean(axis=0)), axis=0))
    if float(np.sqrt(np.mean(np.square(mixed - mixed.mean())))) >= 0.5 * float(rms.mean()):
        return mixed
    loudest = int(np.argmax(rms))
    if notes is not None:
        notes.append(f"the {y.shape[1]} channels cancel when averaged (opposite phase): channel {loudest + 1}, the "
                     "loudest, was read")
    return y[:, loudest]


def wav_from_bytes(data: bytes, name: str, notes: list[str] | None = None) -> tuple[np.ndarray, int]:
    """``(float32 mono samples in [-1, 1], sample rate)`` of an audio file's bytes: a PCM or float
    WAV (``scipy.io.wavfile``), else what libsndfile reads (``soundfile``: mu-law and A-law WAVs of
    loggers and telephony recorders, IMA ADPCM, RF64; FLAC, Ogg Vorbis / Opus and MP3 files); several
    channels are made one by :func:`mono`."""
    from scipy.io import wavfile

    try:
        with warnings.catch_warnings():  # metadata chunks (PEAK, LIST, bext) scipy does not parse: harmless
            warnings.simplefilter("ignore", wavfile.WavFileWarning)
            rate, x = wavfile.read(io.BytesIO(data))
    except Exception as exc:
        try:
            import soundfile

            y, rate = soundfile.read(io.BytesIO(data), dtype="float32", always_2d=True)
        except Exception:
            raise InspectInputError(f"{name}: not a readable WAV file ({type(exc).__name__}: {exc}); expected "
                                    "RIFF/WAVE PCM, float, mu-law or A-law, or FLAC, Ogg or MP3") from exc
        if y.size == 0:
            raise InspectInputError(f"{name}: the audio file holds no samples") from None
        return mono(y, notes), int(rate)
    x = np.asarray(x)
    if x.dtype.kind == "u":
        y = (x.astype(np.float32) - 2 ** (8 * x.dtype.itemsize - 1)) / 2 ** (8 * x.dtype.itemsize - 1)
    elif x.dtype.kind == "i":
        y = x.astype(np.float32) / float(2 ** (8 * x.dtype.itemsize - 1))
    else:
        y = x.astype(np.float32)
    if y.size == 0:
        raise InspectInputError(f"{name}: the WAV file holds no samples")
    return mono(y, notes), int(rate)


def read_wav(path: Path, notes: list[str] | None = None) -> tuple[np.ndarray, int]:
    return wav_from_bytes(Path(path).read_bytes(), str(path), notes)


#: libsndfile subtypes of lossy codecs (MP3, Ogg Vorbis, Opus).
LOSSY_SUBTYPES = ("MPEG_LAYER_I", "MPEG_LAYER_II", "MPEG_LAYER_III", "VORBIS", "OPUS")


def lossy_bitrate_kbps(path: Path) -> float | None:
    """The mean bit rate (kbit/s: file size over duration) of a lossy audio file, None for a
    lossless one (WAV, FLAC) or one libsndfile cannot describe.

    >>> import soundfile, tempfile
    >>> d = Path(tempfile.mkdtemp()); soundfile.write(d / "a.flac", np.zeros(16_000), 16_000)
    >>> lossy_bitrate_kbps(d / "a.flac") is None
    True
    """
    import soundfile

    try:
        info = soundfile.info(str(path))
    except Exception:  # noqa: BLE001 - a plain WAV scipy reads, or a file read_wav reports on
        return None
    if info.subtype not in LOSSY_SUBTYPES or info.frames <= 0:
        return None
    return Path(path).stat().st_size * 8.0 / (info.frames / info.samplerate) / 1000.0


TIME_COLUMNS = ("timestamp", "time", "ts", "datetime", "date time", "date/time", "time stamp", "t_stamp")
TIME_WORDS = ("time", "zeit", "date", "datum", "fecha", "horodatage", "tiempo", "stamp")


def _split_asset(name: str, unit: str | None = None) -> tuple[str, TagReading] | None:
    """``(asset prefix or '', reading)`` of a column / tag name: ``<ASSET>.<tag>`` when the part
    after the last dot names a tag, else the whole name (``DE Bearing Temp. (°F)``). A dotted
    hierarchy (OSIsoft PI: ``P-146.SUCT.PRESS``) is not read where the parts after its first dot make
    it something else (a suction pressure, an alarm).

    >>> _split_asset("P-146.DISCH.PRESS")[0], _split_asset("P-146.SUCT.PRESS"), _split_asset("P-146.VIB.ALM")
    ('P-146.DISCH', None, None)
    """
    asset, dot, tail = name.rpartition(".")
    if dot and (reading := resolve_tag(tail, unit)) is not None:
        if "." in asset and not is_read_as(asset.partition(".")[2] + "." + tail, reading.tag):
            return None
        return asset.strip(), reading
    reading = resolve_tag(name, unit)
    return ("", reading) if reading is not None else None


def _delimiter(first_line: str) -> str:
    """A CSV's delimiter: the commonest of ``,`` ``;`` and tab in its first line."""
    return max((",", ";", "\t"), key=first_line.count)


def _wide_csv(text: str, name: str, asset_id: str | None, notes: list[str] | None = None) -> list:
    """Samples of a wide CSV (a time column and one column per tag)."""
    first = text.split("\n", 1)[0]
    delimiter = _delimiter(first)
    rows = list(csv.reader(io.StringIO(text), delimiter=delimiter))
    return _wide_table([h.strip() for h in rows[0]], rows[1:], name, asset_id, notes, decimal_comma=delimiter != ",")


#: Keys of a wide JSON-lines record that name its machine rather than a tag.
ASSET_KEYS = ("asset", "asset_id", "assetid", "machine", "equipment")


def _json_objects(text: str) -> list[dict]:
    """The JSON objects of a JSON-lines text, one per line (lines that are not one are skipped)."""
    objects = []
    for line in text.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            objects.append(value)
    return objects


def _is_wide(record: dict) -> bool:
    """A JSON-lines record with no tag key (long records name one tag per line)."""
    return not any(LONG_COLUMNS.get(str(k).strip().lower()) == "tag" for k in record)


def _wide_jsonl(objects: list[dict], name: str, asset_id: str | None, notes: list[str] | None = None) -> list:
    """Samples of JSON lines that each hold one time and one key per tag (``{"timestamp": ...,
    "asset": "P-1", "Motor Current (A)": 61.4, ...}``), read as a wide CSV is; an ``asset`` key names
    the machine where ``asset_id`` does not."""
    header = list(dict.fromkeys(str(k) for o in objects for k in o))
    asset_key = next((k for k in header if k.strip().lower() in ASSET_KEYS), None)
    if asset_key is not None:
        header.remove(asset_key)
        asset_id = asset_id or next((str(o[asset_key]) for o in objects if o.get(asset_key)), None)
    rows = [["" if o.get(k) is None else str(o[k]) for k in header] for o in objects]
    return _wide_table(header, rows, name, asset_id, notes, decimal_comma=False) if header else []


def _wide_table(header: list[str], rows: list[list[str]], name: str, asset_id: str | None,
                notes: list[str] | None, decimal_comma: bool) -> list:
    """Samples of a wide table: ``header`` names a time column and one column per tag."""
    from pipeline.decoders.plc import TagSample
    from pipeline.decoders.timestamps import TimestampError, parse_timestamp_ms

    time_col = next((i for i, h in enumerate(header) if h.lower() in TIME_COLUMNS), None)
    if time_col is None:  # "Zeit", "Date/Time (UTC)", "Datum Uhrzeit" ...
        time_col = next((i for i, h in enumerate(header) if any(w in h.lower() for w in TIME_WORDS)), None)
    if time_col is None:
        raise InspectInputError(f"{name}: a PLC CSV needs a 'timestamp' column (long format "
                                "timestamp,tag,value,quality,unit or one column per tag)")
    cols: dict[int, tuple[str, TagReading]] = {}
    taken: dict[tuple[str, str], str] = {}
    mapped, skipped, refused, unknown = [], [], [], []
    for i, h in enumerate(header):
        if i == time_col:
            continue
        found = _split_asset(h)
        if found is None:
            if (why := unsupported_reason(h)) is not None:
                refused.append(why)
            elif h:
                unknown.append(repr(h))
            continue
        asset, reading = found
        a = asset or asset_id
        if not a:
            raise InspectInputError(f"{name}: column {h!r} names no asset: pass --asset or name columns "
                                    "<ASSET>.<tag>")
        if (a, reading.tag) in taken:
            skipped.append(f"{h!r} (also {reading.tag}; {taken[(a, reading.tag)]!r} is read)")
            continue
        taken[(a, reading.tag)] = h
        cols[i] = (a, reading)
        if h.rpartition(".")[2] != reading.tag:
            mapped.append(reading.describe(h))
    if not cols:
        raise InspectInputError(
            f"{name}: no column names a PLC tag ({', '.join(PLC_TAGS)}, or a historian's name of one such as "
            "'Motor Current (A)', 'DE Bearing Temp (°F)', 'Vibration [in/s]', 'Discharge Pressure psi', 'Running')"
            + (f"; {'; '.join(refused)}" if refused else "") + ": rename the columns")
    if notes is not None:
        notes += [f"columns read as PLC tags: {', '.join(mapped)}"] if mapped else []
        notes += [f"columns not read: {', '.join(skipped)}"] if skipped else []
        notes += refused
        notes += [f"columns that name no PLC tag (not read): {', '.join(unknown)}"] if unknown else []
    samples = []
    for row in rows:
        if not row:
            continue
        try:
            ts = parse_timestamp_ms(row[time_col].strip())
        except (TimestampError, IndexError):
            try:
                ts = _lenient_time_ms(row[time_col])
            except (ValueError, IndexError):
                continue
        for i, (asset, reading) in cols.items():
            try:
                cell = row[i].replace(",", ".") if decimal_comma else row[i]  # 1207,5: a decimal comma
                value = parse_value(cell)
            except IndexError:
                continue
            if value is not None:
                samples.append(TagSample(asset, reading.tag, ts, reading.convert(value), "Good", ""))
    return samples


#: Historian date-time layouts besides ISO-8601 (fractions of a second with ``.`` or ``,``), tried in
#: this order: with slashes and a 24-hour clock the day comes first (``09/04/2027`` is 9 April) unless
#: that is no date (``04/29/2027``); with AM/PM the month comes first (``04/09/2027 05:54 PM``); an
#: English month name as OSIsoft PI writes it (``03-Nov-2026 09:04:40``, ``03-Nov-26``).
TIME_FORMATS = ("%d.%m.%Y %H:%M:%S.%f", "%d.%m.%Y %H:%M:%S", "%d.%m.%Y %H:%M", "%Y/%m/%d %H:%M:%S.%f",
                "%Y/%m/%d %H:%M:%S", "%m/%d/%Y %I:%M:%S.%f %p", "%m/%d/%Y %I:%M:%S %p", "%d/%m/%Y %H:%M:%S.%f",
                "%d/%m/%Y %H:%M:%S", "%m/%d/%Y %H:%M:%S.%f", "%m/%d/%Y %H:%M:%S", "%d-%m-%Y %H:%M:%S.%f",
                "%d-%m-%Y %H:%M:%S", "%Y%m%d %H%M%S", "%d-%b-%Y %H:%M:%S.%f", "%d-%b-%Y %H:%M:%S",
                "%d-%b-%y %H:%M:%S.%f", "%d-%b-%y %H:%M:%S", "%d %b %Y %H:%M:%S.%f", "%d %b %Y %H:%M:%S")


def _lenient_time_ms(text: str) -> int:
    """ISO-8601, a historian's local layout (:data:`TIME_FORMATS`: ``09.04.2027 17:54:00,800``,
    ``04/09/2027 05:54:00.800 PM``, ``2027/04/09 17:54:00``; a naive time is taken as UTC) or epoch
    seconds / milliseconds.

    >>> _lenient_time_ms("09.04.2027 17:54:00,800") == _lenient_time_ms("2027-04-09T17:54:00.800Z")
    True
    >>> _lenient_time_ms("04/09/2027 05:54:00.800 PM") == _lenient_time_ms("2027/04/09 17:54:00.800")
    True
    >>> _lenient_time_ms("03-Nov-2026 09:04:40") == _lenient_time_ms("2026-11-03T09:04:40Z")
    True
    """
    import re
    from datetime import datetime

    text = text.strip()
    try:
        v = float(text)
        return int(v if v > 1e11 else v * 1000.0)
    except ValueError:
        pass
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        local = re.sub(r"(\d{2}:\d{2}:\d{2}),(\d+)", r"\1.\2", text)
        for fmt in TIME_FORMATS:
            try:
                t = datetime.strptime(local, fmt)
                break
            except ValueError:
                continue
        else:
            raise ValueError(f"not a date and time this reader knows: {text!r} (use ISO-8601, e.g. "
                             "2026-11-29T14:00:00.100Z)") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    return round(t.timestamp() * 1000)


#: A long-format export's columns as historians name them (lower case) → the contract's: AVEVA
#: (Wonderware) Historian ``DateTime,TagName,Value,Quality``, OSIsoft PI ``Tag,Timestamp,Value``,
#: Ignition ``tagpath,value,quality,t_stamp``, OPC ``ItemID``.
LONG_COLUMNS: dict[str, str] = {
    **{k: "tag" for k in ("tag", "tagname", "tag name", "tag_name", "tagpath", "tag path", "tag_path", "tagid",
                          "pointname", "point name", "point", "itemid", "item id", "item")},
    **{k: "value" for k in ("value", "val", "vvalue", "pv", "wert")},
    **{k: "timestamp" for k in TIME_COLUMNS}, **{k: "quality" for k in ("quality", "qualitydetail", "status")},
    **{k: "unit" for k in ("unit", "units", "eu", "engunits", "engineering units", "uom")},
}


def long_columns(header: list[str]) -> dict[str, int] | None:
    """Where the contract's long-format columns (``timestamp``, ``tag``, ``value``, and ``quality``
    and ``unit`` where present) are in a CSV ``header`` as historians name them
    (:data:`LONG_COLUMNS`); None when it is not a long format (no tag or value column: one column
    per tag).

    >>> long_columns(["DateTime", "TagName", "Value", "Quality"])
    {'timestamp': 0, 'tag': 1, 'value': 2, 'quality': 3}
    >>> long_columns(["Timestamp", "Motor Current (A)", "Running"]) is None
    True
    """
    found: dict[str, int] = {}
    for i, h in enumerate(header):
        key = LONG_COLUMNS.get(h.strip().lower())
        if key is not None and key not in found:
            found[key] = i
    return found if {"tag", "value"} <= found.keys() else None


def _quality(text: object) -> str:
    """A long export's quality as the contract spells it: ``Bad`` / ``Uncertain`` where the word
    says so (``BAD``, ``Bad_NotConnected``), else ``Good`` (numeric codes differ between historians
    and are not read)."""
    low = str(text or "").strip().lower()
    return "Bad" if low.startswith("bad") else "Uncertain" if low.startswith("uncertain") else "Good"


def _long_rows(text: str, fmt: str) -> list[dict]:
    """A long export's rows as dicts under the contract's column names (:func:`long_columns`)."""
    if fmt == "jsonl":
        rows = [json.loads(line) for line in text.splitlines() if line.strip().startswith("{")]
        return [{LONG_COLUMNS.get(str(k).strip().lower(), k): v for k, v in row.items()} for row in rows]
    first = text.split("\n", 1)[0]
    table = list(csv.reader(io.StringIO(text), delimiter=_delimiter(first)))
    columns = long_columns(table[0]) if table else None
    if not columns:
        return []
    return [{key: row[i] for key, i in columns.items() if i < len(row)} for row in table[1:] if row]


def _lenient_long(text: str, fmt: str, default_asset: str | None, historian_names_only: bool = False,
                  notes: list[str] | None = None) -> list:
    """Long-format rows the strict historian decoder refused (naive or epoch timestamps, missing
    quality/unit columns, a historian's own column and tag names and units): best effort for
    recorded files. ``historian_names_only``: only the rows whose tag is not one of ``PLC_TAGS``
    (the strict decoder read the others)."""
    from pipeline.decoders.plc import TagSample

    rows = _long_rows(text, fmt)
    samples = []
    mapped: dict[str, str] = {}
    unread_time: str | None = None  # the first time text of a tag row that could not be read
    for row in rows:
        name = str(row.get("tag", ""))
        tail = name.rpartition(".")[2]
        unit = str(row.get("unit") or "") or None
        found = _split_asset(name, unit)
        if found is None or (historian_names_only and tail in PLC_TAGS):
            continue
        asset, reading = found
        cell = row.get("value")
        value = parse_value(cell.replace(",", ".") if isinstance(cell, str) and "." not in cell else cell)
        try:
            ts = _lenient_time_ms(str(row.get("timestamp") or row.get("time")))
        except (TypeError, ValueError):
            unread_time = unread_time or str(row.get("timestamp") or row.get("time"))
            continue
        if value is not None and (asset or default_asset):
            samples.append(TagSample(asset or default_asset, reading.tag, ts, reading.convert(value),  # type: ignore[arg-type]
                                     _quality(row.get("quality")), str(row.get("unit") or "")))
            shown = name.partition(".")[2] if asset else name  # PI's CMP-7.DISCH.PRESS: DISCH.PRESS
            if shown != reading.tag:
                mapped.setdefault(shown, reading.describe(shown))
    if notes is not None and mapped:
        notes.append(f"tags read as PLC tags: {', '.join(mapped.values())}")
    if not samples and unread_time is not None and not historian_names_only:
        raise InspectInputError(f"the file's tag rows have times this reader does not know ({unread_time!r}): "
                                "write them as ISO-8601 (2026-11-29T14:00:00.100Z) or epoch milliseconds")
    return samples


def read_plc(path: Path, asset_id: str | None = None, default_asset: str | None = None,
             notes: list[str] | None = None) -> list:
    """Tag samples (``pipeline.decoders.TagSample``) of a PLC CSV / JSON-lines file; bad lines are
    skipped (a file without one good line is an error). ``asset_id`` overrides the tags' machine;
    ``default_asset`` names it where the columns/tags do not. ``notes`` receives how a historian's
    own names and units were read (:mod:`.historian_tags`)."""
    from pipeline.decoders import decode_plc_file

    data = Path(path).read_bytes()
    fmt = "jsonl" if Path(path).suffix.lower() in (".jsonl", ".json", ".ndjson") else "csv"
    text = data.decode("utf-8", "replace")
    if fmt == "csv":
        first = text.split("\n", 1)[0]
        if long_columns(next(csv.reader([first], delimiter=_delimiter(first)), [])) is None:
            samples = _wide_csv(text, str(path), asset_id or default_asset, notes)
            if not samples:
                raise InspectInputError(f"{path}: no PLC value could be read")
            return samples
    result = decode_plc_file(data, str(path), fmt)
    objects = _json_objects(text) if not result.samples and fmt == "jsonl" else []
    if objects and _is_wide(objects[0]):
        samples = _wide_jsonl(objects, str(path), asset_id or default_asset, notes)
    elif result.samples:
        samples = result.samples + _lenient_long(text, fmt, asset_id or default_asset, True, notes)
    else:
        try:
            samples = _lenient_long(text, fmt, asset_id or default_asset, False, notes)
        except InspectInputError as exc:
            raise InspectInputError(f"{path}: no decodable PLC row ({exc})") from None
    if not samples:
        detail = result.errors[0].detail if result.errors else "empty file"
        raise InspectInputError(f"{path}: no decodable PLC row ({detail})")
    if asset_id:
        from dataclasses import replace

        return [replace(s, asset_id=asset_id) if s.asset_id != asset_id else s for s in samples]
    return samples


def speed_setpoint_rpm(path: Path, asset_id: str | None = None) -> float | None:
    r"""The median of a PLC export's speed setpoint in rpm (a column or tag :func:`.historian_tags.
    speed_setpoint_scale` reads: ``Speed Setpoint (rpm)``, ``AHU-136.Speed_Setpoint`` with unit rpm), of
    machine ``asset_id`` where the name carries a machine prefix; None where the file has none, gives it
    in another unit or cannot be read (a speed hint never stops a file from being scored).

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     wide, long = Path(d) / "w.csv", Path(d) / "l.csv"
    ...     _ = wide.write_text("Timestamp,Motor Current (A),Speed Setpoint (rpm)\n2027-03-01T07:12:14Z,13.3,1759\n")
    ...     _ = long.write_text("timestamp,tag,value,unit\n2027-03-10 12:10:33,AHU-136.Speed_Setpoint,1248,rpm\n"
    ...                         "2027-03-10 12:10:33,AHU-9.Speed_Setpoint,900,rpm\n")
    ...     speed_setpoint_rpm(wide), speed_setpoint_rpm(long, "AHU-136"), speed_setpoint_rpm(long, "P-1")
    (1759.0, 1248.0, None)
    """
    try:
        return _speed_setpoint_rpm(Path(path).read_bytes().decode("utf-8", "replace"), Path(path).suffix.lower(),
                                   asset_id)
    except (OSError, ValueError, csv.Error):
        return None


def _speed_setpoint_rpm(text: str, suffix: str, asset_id: str | None) -> float | None:
    fmt = "jsonl" if suffix in (".jsonl", ".json", ".ndjson") else "csv"

    def ours(name: str) -> bool:
        prefix = name.rpartition(".")[0].strip()
        return not prefix or asset_id is None or prefix == asset_id

    def scale(name: str, unit: str | None) -> float | None:
        tail = name.rpartition(".")[2]
        return speed_setpoint_scale(tail, unit) or speed_setpoint_scale(name, unit)

    values: list[float] = []
    first = text.split("\n", 1)[0]
    header = next(csv.reader([first], delimiter=_delimiter(first)), []) if fmt == "csv" else []
    if fmt == "csv" and long_columns(header) is None:
        delimiter = _delimiter(first)
        rows = list(csv.reader(io.StringIO(text), delimiter=delimiter)) or [[]]
        cols = {i: f for i, h in enumerate(rows[0]) if ours(h) and (f := scale(h.strip(), None))}
        for row in rows[1:]:
            for i, f in cols.items():
                if i < len(row) and (v := parse_value(row[i].replace(",", ".") if delimiter != "," else row[i])) is not None:
                    values.append(v * f)
    else:
        for row in _long_rows(text, fmt):
            name = str(row.get("tag", ""))
            if ours(name) and (f := scale(name, str(row.get("unit") or "") or None)):
                cell = row.get("value")
                if (v := parse_value(cell.replace(",", ".") if isinstance(cell, str) and "." not in cell else cell)) is not None:
                    values.append(v * f)
    values = [v for v in values if v > 0]
    return float(np.median(values)) if values else None


#: A tag whose samples are further apart than this many of the file's ticks (the median interval
#: between the times any tag of the machine reported) is held through the gap by
#: :func:`hold_between_changes`: one empty cell (a Bad value left out) is not a gap.
HOLD_AFTER_TICKS = 2


def hold_between_changes(samples: list, notes: list[str] | None = None, after_ticks: int = HOLD_AFTER_TICKS) -> list:
    """``samples`` with each tag's last good value repeated through its gaps longer than
    ``after_ticks`` of the file's ticks (to the end of the file too), at the file's own timestamps in the
    gap (the times any tag of the machine reported): a historian that stores a value only when it
    changes (AVEVA / Wonderware delta storage, PI's exception and compression) exports a steady tag once
    in minutes, and a window without a sample of it would read the tag as missing. The value holds until
    the next sample, as the historian's own stair-step retrieval reads it back at the file's resolution;
    Bad samples are not held, and a tag is not held before its first sample. A file whose tags report at
    every tick (every contract file) is returned unchanged. ``notes`` receives which tags were held.

    >>> from pipeline.decoders.plc import TagSample
    >>> rows = [TagSample("P", "speed_rpm", t, v, "Good", "") for t, v in ((0, 1480.0), (12_000, 1481.0))]
    >>> rows += [TagSample("P", "motor_current_a", t, 20.0 + t / 1e4, "Good", "") for t in range(0, 14_000, 2_000)]
    >>> [(s.timestamp_ms, s.value) for s in hold_between_changes(rows) if s.tag == "speed_rpm"]
    [(0, 1480.0), (2000, 1480.0), (4000, 1480.0), (6000, 1480.0), (8000, 1480.0), (10000, 1480.0), (12000, 1481.0)]
    """
    from dataclasses import replace

    by_tag: dict[tuple[str, str], list] = {}
    for s in samples:
        by_tag.setdefault((s.asset_id, s.tag), []).append(s)
    grids = {a: np.unique([s.timestamp_ms for s in samples if s.asset_id == a]) for a in {a for a, _ in by_tag}}
    held: dict[str, int] = {}
    out = list(samples)
    for (asset, tag), rows in by_tag.items():
        rows.sort(key=lambda s: s.timestamp_ms)
        grid = grids[asset]
        end = int(grid[-1]) + 1
        step_ms = after_ticks * float(np.median(np.diff(grid))) if len(grid) > 1 else float("inf")
        last = None
        for s, nxt in zip(rows, [*rows[1:], None], strict=True):
            if s.quality != "Bad":
                last = s
            until = end if nxt is None else nxt.timestamp_ms
            if last is None or until - s.timestamp_ms <= step_ms:
                continue
            for t in grid[(grid > s.timestamp_ms) & (grid < until)]:
                out.append(replace(last, timestamp_ms=int(t)))
                held[tag] = held.get(tag, 0) + 1
    if not held:
        return samples
    if notes is not None:
        notes.append("values held between the export's samples (a historian that logs a value when it changes): "
                     + ", ".join(f"{t} {n}x" for t, n in sorted(held.items())))
    return sorted(out, key=lambda s: s.timestamp_ms)


def load_assets(path: Path | None) -> dict:
    """``assets.json`` parsed into asset profiles by id (empty without a file)."""
    from pipeline.features.asset_profile import load_profiles

    if path is None:
        return {}
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise InspectInputError(f"{path}: not a readable assets.json ({exc})") from exc
    return load_profiles(doc)


def parse_speeds(values: list[str]) -> dict[str | None, float]:
    """``--speed-rpm`` values (``RPM`` for every machine, ``ASSET=RPM`` for one) as shaft speeds
    in Hz by machine id (None: every machine); a value that is not a number or lies outside the
    speeds the audio features search (4-80 Hz, 240-4,800 rpm) raises :class:`InspectInputError`.

    >>> parse_speeds(["1480", "P-101=2950"])
    {None: 24.666666666666668, 'P-101': 49.166666666666664}
    >>> parse_speeds(["P-101=29500"])
    Traceback (most recent call last):
    ...
    models.inspect.readers.InspectInputError: --speed-rpm P-101=29500: 29500 rpm is outside 240-4800 rpm (the shaft speeds audio can read, 4-80 Hz); give the shaft speed in rpm, e.g. P-101=1480
    """
    from pipeline.features.asset_profile import SPEED_LIMITS_HZ

    lo, hi = (60.0 * v for v in SPEED_LIMITS_HZ)
    out: dict[str | None, float] = {}
    for value in values:
        asset, sep, number = value.rpartition("=")
        example = f"{asset or 'P-101'}=1480"
        try:
            rpm = float(number)
        except ValueError:
            raise InspectInputError(f"--speed-rpm {value}: {number!r} is not a number; give the shaft speed in rpm, "
                                    f"for every machine (1480) or for one ({example})") from None
        if not lo <= rpm <= hi:
            raise InspectInputError(f"--speed-rpm {value}: {number} rpm is outside {lo:.0f}-{hi:.0f} rpm (the shaft "
                                    f"speeds audio can read, {SPEED_LIMITS_HZ[0]:.0f}-{SPEED_LIMITS_HZ[1]:.0f} Hz); "
                                    f"give the shaft speed in rpm, e.g. {example}")
        if sep and not asset.strip():
            raise InspectInputError(f"--speed-rpm {value}: no machine id before '='; give ASSET=RPM or RPM")
        out[asset.strip() if sep else None] = rpm / 60.0
    return out
