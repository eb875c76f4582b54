"""Thermal frames as cameras and their software export them: TIFF, 16-bit PNG, NumPy arrays and
temperature-matrix CSV.

* **TIFF**: any size and numeric dtype, uncompressed or compressed (Deflate, LZW, PackBits:
  tifffile with imagecodecs), first page (a warning says how many more there were);
* **PNG** of 16-bit grey values (radiometric cores such as a Lepton on a PureThermal board write
  centikelvin so): read through imagecodecs; an 8-bit or colour PNG is a picture of the palette,
  not temperatures, and is refused with what to export instead;
* **NumPy** ``.npy`` (a 2-D numeric array; no pickled objects are loaded);
* **temperature-matrix CSV**, the export of camera software (FLIR Tools / Thermal Studio, Testo
  IRSoft and others): one row of temperatures per image row, ``,`` ``;`` or tab separated, decimal
  commas with ``;`` or tabs, header or metadata lines above the matrix; a ``°F`` / ``Fahrenheit``
  or ``Kelvin`` in those lines gives the unit (converted to °C, with a note), else the values' range
  does (``pipeline.features.thermal_regions.frame_to_celsius``). :func:`is_temperature_matrix`
  tells such a file from a PLC export (which has a time column or a header naming its tags).

The unit of a TIFF, PNG or array comes from ``assets.json`` ``frame`` or the value range, later.

>>> text = "File:,IR_0042.jpg\\n\\n" + "\\n".join(",".join(f"{20 + r + c / 10:.1f}" for c in range(32)) for r in range(24))
>>> is_temperature_matrix(text)
True
>>> m, notes = temperature_matrix(text); m.shape, float(m[1, 10]), notes
((24, 32), 22.0, [])
>>> numbered = ",".join(map(str, range(33))) + "\\n" + "\\n".join(
...     f"{r + 1}," + ",".join(f"{20 + c / 10:.1f}" for c in range(32)) for r in range(24))
>>> temperature_matrix(numbered)[0].shape  # row and column numbers dropped
(24, 32)
>>> is_temperature_matrix("timestamp,motor_current_a\\n2026-11-29T14:00:00.000Z,12.5\\n")
False
>>> wide = "\\n".join(f"2026-11-29 14:00:{s:02d}," + ",".join(["12.5"] * 20) for s in range(30))
>>> is_temperature_matrix(wide)  # a wide export of 20 tags without its header row
False
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from models.inspect.readers import InspectInputError

FRAME_SUFFIXES = (".tif", ".tiff", ".png", ".npy")
#: The smallest matrix read as a frame (a 32 × 24 MLX90640 array fits).
MIN_MATRIX = (16, 16)
#: How much of a CSV is read to decide what it holds.
SNIFF_BYTES = 1 << 20
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def read_frame(path: Path, notes: list[str] | None = None) -> np.ndarray:
    """A thermal frame file as a 2-D array (dtype kept, except a CSV matrix: float32 in °C or its
    values' own unit); see the module docstring for the formats."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".png":
        arr = _read_png(path)
    elif suffix == ".npy":
        try:
            arr = np.load(path, allow_pickle=False)
        except Exception as exc:
            raise InspectInputError(f"{path}: not a readable NumPy array ({type(exc).__name__}: {exc})") from exc
        if arr.dtype.kind not in "uif":
            raise InspectInputError(f"{path}: a {arr.dtype} array holds no temperatures; save the frame as numbers")
    elif suffix == ".csv":
        text = path.read_text(encoding="utf-8-sig", errors="replace")
        arr, found = temperature_matrix(text)
        if notes is not None:
            notes.extend(found)
    else:
        arr = _read_tiff(path, notes)
    arr = np.squeeze(np.asarray(arr))
    if arr.ndim != 2:
        raise InspectInputError(f"{path}: expected a 2-D thermal frame, got shape {arr.shape}")
    return arr


def _read_tiff(path: Path, notes: list[str] | None) -> np.ndarray:
    import tifffile

    try:
        with tifffile.TiffFile(str(path)) as tif:
            arr = tif.pages[0].asarray()
            pages = len(tif.pages)
    except Exception as exc:
        raise InspectInputError(f"{path}: not a readable TIFF ({type(exc).__name__}: {exc})") from exc
    if pages > 1 and notes is not None:
        notes.append(f"the TIFF holds {pages} frames: the first was scored; to score each, save them as "
                     "separate files")
    arr = np.asarray(arr)
    if arr.ndim == 3 and arr.shape[-1] in (3, 4):
        raise InspectInputError(f"{path}: an RGB image ({arr.shape}) is a colour picture, not radiometric data; "
                                "export the camera's temperature (radiometric) TIFF")
    return arr


def _read_png(path: Path) -> np.ndarray:
    import imagecodecs

    try:
        arr = np.asarray(imagecodecs.imread(str(path)))
    except Exception as exc:
        raise InspectInputError(f"{path}: not a readable PNG ({type(exc).__name__}: {exc})") from exc
    if arr.ndim == 3 or arr.dtype.itemsize < 2:
        raise InspectInputError(
            f"{path}: an {'colour' if arr.ndim == 3 else '8-bit'} PNG ({arr.dtype}, shape {arr.shape}) is a picture "
            "of the camera's palette, not temperatures; export a 16-bit radiometric PNG or TIFF, or the "
            "temperature matrix as CSV")
    return arr


def _cells(line: str, sep: str) -> list[str]:
    return [c.strip().strip('"') for c in line.split(sep)]


def _number(cell: str, decimal_comma: bool) -> float | None:
    c = cell.replace(",", ".") if decimal_comma else cell
    return float(c) if _NUMBER.match(c) else None


def _separator(lines: list[str]) -> str:
    """The separator that splits the most lines into a matrix's width: ``;`` and tab before ``,``
    (whose lines also hold decimal commas)."""
    return max((";", "\t", ","), key=lambda s: sum(ln.count(s) >= MIN_MATRIX[1] - 1 for ln in lines))


def _matrix_block(lines: list[str]) -> tuple[int, int, str, bool] | None:
    """``(first line, line count, separator, decimal comma)`` of the longest run of lines that are all
    numbers, of one width at least :data:`MIN_MATRIX` (a leading or trailing empty or label cell
    allowed), else None."""
    if not lines:
        return None
    sep = _separator(lines)
    decimal_comma = sep in (";", "\t")
    best: tuple[int, int] | None = None
    start, width = -1, 0
    for i, line in enumerate([*lines, ""]):
        cells = [c for c in _cells(line, sep) if c != ""]
        numbers = [_number(c, decimal_comma) for c in cells]
        ok = len(cells) >= MIN_MATRIX[1] and sum(v is not None for v in numbers) >= len(cells) - 1
        n = len(cells)
        if ok and start >= 0 and n == width:
            continue
        if start >= 0 and i - start >= MIN_MATRIX[0] and (best is None or i - start > best[1]):
            best = (start, i - start)
        start, width = (i, n) if ok else (-1, 0)
    return None if best is None else (best[0], best[1], sep, decimal_comma)


def _is_index(values: np.ndarray) -> bool:
    """Whether ``values`` count 0, 1, 2 ... or 1, 2, 3 ... (row or column numbers, not temperatures)."""
    return bool(values[0] in (0.0, 1.0) and np.array_equal(values, values[0] + np.arange(len(values))))


def is_temperature_matrix(text: str) -> bool:
    """Whether a CSV holds a thermal frame (a block of at least 16 × 16 numbers whose first column
    is no running time and which no header row of names tops) rather than a PLC export."""
    lines = text[:SNIFF_BYTES].splitlines()
    block = _matrix_block(lines)
    if block is None:
        return False
    first, count, sep, decimal_comma = block
    rows = [_cells(ln, sep) for ln in lines[first:first + count]]
    width = len([c for c in rows[0] if c != ""])
    if first > 0:
        above = [c for c in _cells(lines[first - 1], sep) if c != ""]
        if len(above) >= width - 1 and sum(_number(c, decimal_comma) is None for c in above) >= len(above) // 2:
            return False  # a header naming each column: a wide PLC export
    if any(":" in r[0] for r in rows):
        return False  # times of day down the first column: a wide PLC export without a header
    lead = [_number(r[0], decimal_comma) for r in rows]
    if all(v is not None for v in lead):
        times = np.asarray(lead, float)
        if times[0] > 1e5 and np.all(np.diff(times) > 0):
            return False  # epoch times down the first column
    return True


def temperature_matrix(text: str) -> tuple[np.ndarray, list[str]]:
    """The float32 matrix of a temperature-matrix CSV and notes (a unit found in its header lines and
    converted); :class:`InspectInputError` when there is none."""
    lines = text.splitlines()
    block = _matrix_block(lines)
    if block is None:
        raise InspectInputError("the CSV holds no temperature matrix (at least 16 rows of at least 16 numbers) "
                                "and no PLC data it could read")
    first, count, sep, decimal_comma = block
    rows = []
    for line in lines[first:first + count]:
        values = [_number(c, decimal_comma) for c in _cells(line, sep) if c != ""]
        rows.append([v for v in values if v is not None])
    width = min(len(r) for r in rows)
    matrix = np.asarray([r[-width:] for r in rows], np.float64)  # a leading row label is dropped
    if _is_index(matrix[0]):  # a header row of column numbers (0 or 1, 2, 3 ...)
        matrix = matrix[1:]
    if _is_index(matrix[:, 0]):  # a column of row numbers
        matrix = matrix[:, 1:]
    header = " ".join(lines[:first]).lower()
    notes: list[str] = []
    if "°f" in header or "fahrenheit" in header or "degf" in header:
        matrix = (matrix - 32.0) * (5.0 / 9.0)
        notes.append("the CSV's header says °F: its temperatures were converted to °C")
    elif "kelvin" in header or "[k]" in header:
        matrix = matrix - 273.15
        notes.append("the CSV's header says kelvin: its temperatures were converted to °C")
    return matrix.astype(np.float32), notes
