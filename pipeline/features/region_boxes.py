"""Region boxes as users write them in ``assets.json``, read into ``(x0, y0, x1, y1)``.

The thermal model reads each part of the machine inside its box; a machine whose boxes are not
read has its boxes proposed from the frame, and thermal then names no fault but an unmistakable hot
connection (docs/models.md, "Thermal: no fault named on proposed boxes"). So a box written the way another tool writes it must
either be read or be reported, never dropped without a word. Read:

* ``[x0, y0, x1, y1]`` (this project's form; x1 / y1 exclusive) or the same four numbers in a
  string (``"10, 20, 50, 40"``);
* an object with corners: ``x0 y0 x1 y1``, ``xmin ymin xmax ymax`` (Pascal VOC), ``left top right
  bottom``, ``x1 y1 x2 y2``, ``xtl ytl xbr ybr`` (CVAT);
* an object with a corner and a size: ``x y w h``, ``x y width height``, ``left top width height``;
* an outline: a list of ``[x, y]`` points (two opposite corners, as LabelMe writes a rectangle, or
  a polygon), or an object with ``points`` / ``polygon`` / ``vertices`` holding them: its bounding
  box;
* any of these under ``box`` / ``rect`` / ``bounds`` / ``bndbox`` (``bbox`` only as an object:
  COCO's ``bbox`` list is ``[x, y, width, height]``, others' corners);
* ``regions`` as a list of objects that name their part (``name`` / ``label`` / ``part`` /
  ``region``) beside their box in any of the forms above.

Not read, and reported with what to write instead: a four-number list whose second corner is not
below and right of the first (often a COCO ``[x, y, width, height]``, which cannot be told from
corners when it is), anything else.

>>> boxes, unreadable = parse_regions({"Motor": {"x": 10, "y": 20, "width": 40, "height": 20},
...                                    "de": [[52, 24], [58, 24], [58, 36], [52, 36]],
...                                    "nde": {"xmin": 2, "ymin": 24, "xmax": 8, "ymax": 36},
...                                    "coupling": [100, 50, 40, 20]})
>>> boxes
{'Motor': (10.0, 20.0, 50.0, 40.0), 'de': (52.0, 24.0, 58.0, 36.0), 'nde': (2.0, 24.0, 8.0, 36.0)}
>>> print(unreadable[0])
coupling: [100, 50, 40, 20] is not [x0, y0, x1, y1] (x1 must exceed x0 and y1 y0; a COCO [x, y, width, height]? write {"x": .., "y": .., "w": .., "h": ..})
>>> parse_regions([{"label": "motor_body", "points": [[10, 20], [50, 20], [50, 40]]}, {"name": "lamp", "box": [0, 0, 5, 5]}])[0]
{'motor_body': (10.0, 20.0, 50.0, 40.0), 'lamp': (0.0, 0.0, 5.0, 5.0)}
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

Box = tuple[float, float, float, float]

#: Key sets of an object box: (keys, True: two corners / False: a corner and a width and height).
BOX_KEYS: tuple[tuple[tuple[str, str, str, str], bool], ...] = (
    (("x0", "y0", "x1", "y1"), True),
    (("xmin", "ymin", "xmax", "ymax"), True),
    (("left", "top", "right", "bottom"), True),
    (("x1", "y1", "x2", "y2"), True),
    (("x", "y", "w", "h"), False),
    (("x", "y", "width", "height"), False),
    (("left", "top", "width", "height"), False),
    (("xtl", "ytl", "xbr", "ybr"), True),
)
NAME_KEYS: tuple[str, ...] = ("name", "label", "part", "region")
POINT_KEYS: tuple[str, ...] = ("points", "polygon", "vertices")
WRAP_KEYS: tuple[str, ...] = ("box", "rect", "bounds", "bndbox")
WRITE_AS = 'give [x0, y0, x1, y1] in pixels, or {"x": .., "y": .., "w": .., "h": ..}'


class BoxError(ValueError):
    """A box that cannot be read; the message says what to write instead."""


def parse_box(value: Any) -> Box:
    """One box in any of the forms of the module docstring; :class:`BoxError` otherwise.

    >>> parse_box("10 20 50 40"), parse_box({"left": 1, "top": 2, "width": 3, "height": 4})
    ((10.0, 20.0, 50.0, 40.0), (1.0, 2.0, 4.0, 6.0))
    >>> parse_box({"shape_type": "rectangle", "points": [[50, 40], [10, 20]]})   # LabelMe: two corners
    (10.0, 20.0, 50.0, 40.0)
    >>> parse_box({"centre": [3, 4]})
    Traceback (most recent call last):
    ...
    pipeline.features.region_boxes.BoxError: {'centre': [3, 4]}: not a box; give [x0, y0, x1, y1] in pixels, or {"x": .., "y": .., "w": .., "h": ..}
    """
    if isinstance(value, str):
        numbers = re.split(r"[\s,;]+", value.strip().strip("[]()"))
        try:
            return _corners([float(v) for v in numbers], value)
        except ValueError:
            raise BoxError(f"{value!r}: not four numbers; {WRITE_AS}") from None
    if isinstance(value, Mapping):
        for keys, corners in BOX_KEYS:
            if all(k in value for k in keys):
                a, b, c, d = (_number(value[k], value) for k in keys)
                return _corners([a, b, c, d] if corners else [a, b, a + c, b + d], value)
        for key in POINT_KEYS:
            if key in value:
                return _outline(value[key], value)
        for key in WRAP_KEYS:
            if key in value:
                return parse_box(value[key])
        if isinstance(value.get("bbox"), Mapping):
            return parse_box(value["bbox"])
        if "bbox" in value:
            raise BoxError(f"{value}: a bbox list is ambiguous (COCO writes [x, y, width, height], others corners); "
                           'write "box": [x0, y0, x1, y1] or {"x": .., "y": .., "w": .., "h": ..}')
        raise BoxError(f"{value}: not a box; {WRITE_AS}")
    if isinstance(value, Sequence) and value and all(isinstance(p, Sequence) and not isinstance(p, str) for p in value):
        return _outline(value, value)
    if isinstance(value, Sequence) and len(value) == 4:
        return _corners([_number(v, value) for v in value], value)
    raise BoxError(f"{value}: not a box; {WRITE_AS}")


def parse_regions(raw: Any) -> tuple[dict[str, Box], tuple[str, ...]]:
    """``({name as written: box}, unreadable)`` of an ``assets.json`` ``regions`` value (an object
    ``{name: box}`` or a list of named boxes); ``unreadable``: one line per box not read, saying why."""
    if not raw:
        return {}, ()
    items: list[tuple[str, Any]] = []
    unreadable: list[str] = []
    if isinstance(raw, Mapping):
        items = [(str(k), v) for k, v in raw.items()]
    elif isinstance(raw, Sequence) and not isinstance(raw, str):
        for k, item in enumerate(raw):
            name = next((str(item[n]) for n in NAME_KEYS if isinstance(item, Mapping) and item.get(n)), None)
            if name is None:
                unreadable.append(f"regions[{k}]: {item} names no part (give it a \"name\": motor_body, de_bearing ...)")
                continue
            items.append((name, {k2: v for k2, v in item.items() if k2 not in NAME_KEYS}))
    else:
        return {}, (f"regions: {raw!r} is neither {{name: box}} nor a list of named boxes",)
    out: dict[str, Box] = {}
    for name, value in items:
        try:
            out[name] = parse_box(value)
        except BoxError as exc:
            unreadable.append(f"{name}: {exc}")
    return out, tuple(unreadable)


def unreadable_regions_note(lines: tuple[str, ...]) -> str:
    """What to tell a user some of whose ``regions`` could not be read.

    >>> unreadable_regions_note(("motor_body: not four numbers",))[:60]
    'regions of assets.json not read (motor_body: not four number'
    """
    return (f"regions of assets.json not read ({'; '.join(lines)}): the thermal model reads the parts it has "
            "boxes for; a machine with none has boxes proposed from the frame and thermal names no fault there but "
            "an unmistakable hot connection")


def _number(v: Any, box: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        raise BoxError(f"{box}: {v!r} is not a number; {WRITE_AS}") from None


def _corners(v: list[float], box: Any) -> Box:
    if len(v) != 4:
        raise BoxError(f"{box}: not four numbers; {WRITE_AS}")
    x0, y0, x1, y1 = v
    if not (x1 > x0 and y1 > y0):
        raise BoxError(f"{box} is not [x0, y0, x1, y1] (x1 must exceed x0 and y1 y0; a COCO [x, y, width, height]? "
                       'write {"x": .., "y": .., "w": .., "h": ..})')
    return x0, y0, x1, y1


def _outline(points: Any, box: Any) -> Box:
    try:
        xy = [(float(p[0]), float(p[1])) for p in points if len(p) == 2]
    except (TypeError, ValueError, IndexError):
        xy = []
    if len(xy) < 2 or len(xy) != len(points):
        raise BoxError(f"{box}: an outline needs two (opposite corners) or more [x, y] points; {WRITE_AS}")
    xs, ys = [p[0] for p in xy], [p[1] for p in xy]
    return _corners([min(xs), min(ys), max(xs), max(ys)], box)
