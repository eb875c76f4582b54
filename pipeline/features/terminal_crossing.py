"""A hot line through the terminal box: a pipe or a cable run, not a loose lug.

A loose or corroded lug heats a spot inside the motor's terminal box; the box reads it as a hot spot
far above its own level (``terminal_box.hotspot_excess``), and that reading is what the thermal model
and the proposed-box rule (:mod:`models.withheld_classes`) name electrical overheating from. Something
hot that only *passes through* the box's part of the frame reads the same inside the box: a steam or
hot-water pipe running behind the machine, a cable tray, another machine's exhaust. A lug's spot is
smaller than its box; such a line runs on past the box on two opposite sides.

:func:`hot_line_through` says whether the box's hot pixels (at least halfway from the box's median to its
maximum, :data:`HOT_SHARE`: the half-maximum contour) reach both its left and its right edge, or both its
top and its bottom edge, and on each of those two edges run on outward as a line of hot pixels (each step
straight on or one pixel to the side) for as far as the box is large (its width or height, whichever is
larger), at least :data:`CONTINUE_PX` pixels. The line's pixels must be at least as warm as the motor body's
median and belong to no other part of the machine nor lie within :data:`BLUR_MARGIN_PX` of one: the terminal
box sits on the warmer motor body, whose pixels and blurred rim do not count (a body box drawn inside the body
leaves its rim, cooler than the body, as a warm band along the terminal box). A spot inside the box, also one
at an edge whose blur reaches past that edge or one a little larger than the box, and a hot cable leaving the
box through its gland, do not make a line. Where the box holds no spot (its maximum less than
:data:`MIN_SPOT_EXCESS_K` over its median) nothing is read. The thermal features message flags such a frame
(:data:`TERMINAL_CROSSED_STAT`) and the model's readers withhold electrical overheating there
(:mod:`models.withheld_classes`): the frame cannot tell a loose lug from the line.

>>> frame = np.full((40, 60), 20.0)
>>> frame[10:20, 20:40] = 35.0                      # motor body
>>> frame[6:10, 26:32] = 32.0                       # terminal box on top of it
>>> box = (26, 6, 32, 10)
>>> hot_line_through(frame, box)
False
>>> lug = frame.copy(); lug[7:9, 28:30] = 70.0     # a loose lug: a spot inside the box
>>> hot_line_through(lug, box)
False
>>> pipe = frame.copy(); pipe[7:9, :] = 70.0       # a pipe across the whole frame, through the box
>>> hot_line_through(pipe, box)
True
>>> edge = frame.copy(); edge[7:9, 30:34] = 70.0   # a spot at the box's right edge, blurred past it
>>> hot_line_through(edge, box)
False
>>> big = frame.copy(); big[6:10, 24:34] = 70.0   # a spot two pixels larger than the box on each side
>>> hot_line_through(big, box)
False
>>> body = (20, 14, 40, 24)                          # a body at 60 °C, its box drawn inside it
>>> warm = np.full((40, 60), 20.0); warm[12:26, 18:42] = 60.0; warm[6:10, 26:32] = 25.0
>>> warm[8:10, :] = 40.0                            # a band warmer than the box, cooler than the body
>>> hot_line_through(warm, box, [body]), hot_line_through(warm, box, [body], body=body)
(True, False)
>>> seated = frame.copy(); seated[9, 26:32] = 45.0  # the box's lowest row on a hotter body: no line
>>> hot_line_through(seated, box, others=[(20, 9, 40, 20)])
False
>>> hot_line_through(pipe, (0, 6, 6, 10))          # a box at the frame's edge: no pixel beside it
False
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

#: Message statistic: 1.0 where a hot line runs through the terminal box (:func:`hot_line_through`).
TERMINAL_CROSSED_STAT = "terminal_box_crossed"
#: The share of the way from the box's median to its maximum above which a pixel belongs to its hot
#: spot: the half-maximum contour, as a spot's size is read (full width at half maximum).
HOT_SHARE = 0.5
#: The least rise of the box's hottest pixel over its median (K) at which the box holds a spot to read:
#: below it the box is read as it is (a spot of the pixel noise, or the box's edge on the warmer body). Healthy
#: terminal boxes of a fleet of ours read 2.5 K at the median (99th percentile 7.6 K; ``bench_thermal_layouts.py
#: --seed 5151``, exact boxes), loose lugs past moderate severity 11.6 K (10th percentile 5.9 K).
MIN_SPOT_EXCESS_K = 3.0
#: How far (pixels) around the machine's other region boxes a pixel still counts as theirs: the blur of a
#: thermal camera's optics spreads a warm part's edge over a pixel or two (the blind fleet's proposed motor
#: body, one pixel below a terminal box, read its blurred top edge as a line along the box).
BLUR_MARGIN_PX = 2
#: The least run, in pixels, of a line past each of the box's two edges; it must also run on for the box's larger
#: side: a lug's spot is smaller than its terminal box, and its blur reaches a pixel or two past a box drawn tight
#: around it.
CONTINUE_PX = 2


def _median_in(frame_c: np.ndarray, box: tuple[int, int, int, int] | None) -> float:
    """The median of ``frame_c`` in ``box`` (``-inf`` without a box or a finite pixel in it)."""
    if box is None:
        return -np.inf
    x0, y0, x1, y1 = (max(int(round(v)), 0) for v in box)
    patch = np.asarray(frame_c[y0:y1, x0:x1], np.float64)
    patch = patch[np.isfinite(patch)]
    return float(np.median(patch)) if patch.size else -np.inf


def hot_line_through(frame_c: np.ndarray, box: tuple[int, int, int, int],
                     others: Sequence[tuple[int, int, int, int]] = (),
                     body: tuple[int, int, int, int] | None = None) -> bool:
    """Whether the hot spot in ``box`` (``x0, y0, x1, y1``, pixels of ``frame_c``, °C) runs through the box
    and on past it on two opposite sides (see the module docstring); ``others``: the machine's other region
    boxes, whose pixels do not count as the line's continuation (the terminal box sits on the warmer motor
    body); ``body``: the motor body's box, whose median the line outside the box must reach. A box at the
    frame's edge cannot show a line across that edge."""
    h, w = frame_c.shape[:2]
    x0, y0, x1, y1 = (int(round(v)) for v in box)
    x0, y0, x1, y1 = max(x0, 0), max(y0, 0), min(x1, w), min(y1, h)
    if x1 - x0 < 1 or y1 - y0 < 1:
        return False
    inner = np.nan_to_num(np.asarray(frame_c[y0:y1, x0:x1], np.float64), nan=-np.inf)
    if not np.isfinite(inner).any():
        return False
    finite = inner[np.isfinite(inner)]
    med, top = float(np.median(finite)), float(finite.max())
    if top - med < MIN_SPOT_EXCESS_K:
        return False
    thr = med + HOT_SHARE * (top - med)
    hot = inner >= thr
    if not ((hot[:, 0].any() and hot[:, -1].any()) or (hot[0].any() and hot[-1].any())):
        return False  # the spot reaches no two opposite edges: a spot inside the box (the common case)
    line_min = max(thr, _median_in(frame_c, body))  # a line hotter than the body: not the body's blurred rim
    covered = np.zeros((h, w), bool)
    for bx in others:  # with the optics' blur around them: a warm part's edge bleeds a pixel or two out of its box
        ox0, oy0, ox1, oy1 = (int(round(v)) for v in bx)
        m = BLUR_MARGIN_PX
        covered[max(oy0 - m, 0):max(oy1 + m, 0), max(ox0 - m, 0):max(ox1 + m, 0)] = True

    def continues(ys: np.ndarray, xs: np.ndarray, dy: int, dx: int, length: int) -> bool:
        """Whether, from one of the pixels beside the box at (ys, xs), a line of hot pixels runs on outward
        (``dy, dx``) for ``length`` pixels, each step straight on or one pixel to the side (it may tilt)."""
        def hot(y: int, x: int) -> bool:
            return (0 <= y < h and 0 <= x < w and not covered[y, x]
                    and float(np.nan_to_num(frame_c[y, x], nan=-np.inf)) >= line_min)

        for y, x in zip(ys.tolist(), xs.tolist(), strict=True):
            lateral = 0
            for k in range(length):
                steps = [lateral + s for s in (0, -1, 1)]
                nxt = next((s for s in steps if hot(y + k * dy + s * abs(dx), x + k * dx + s * abs(dy))), None)
                if nxt is None:
                    break
                lateral = nxt
            else:
                return True
        return False

    def through(first: np.ndarray, last: np.ndarray, before: int, after: int, rows: bool) -> bool:
        """The hot pixels on the box's first and last row (``rows``) or column both continue outside it."""
        a, b = np.flatnonzero(first), np.flatnonzero(last)
        if a.size == 0 or b.size == 0 or before < 0 or after >= (h if rows else w):
            return False
        run = max(CONTINUE_PX, x1 - x0, y1 - y0)  # on past the box for at least the box's own size
        if rows:
            return (continues(np.full(a.size, before), x0 + a, -1, 0, run)
                    and continues(np.full(b.size, after), x0 + b, 1, 0, run))
        return (continues(y0 + a, np.full(a.size, before), 0, -1, run)
                and continues(y0 + b, np.full(b.size, after), 0, 1, run))

    return (through(hot[:, 0], hot[:, -1], x0 - 1, x1, rows=False)
            or through(hot[0, :], hot[-1, :], y0 - 1, y1, rows=True))


def terminal_box_crossed(frame_c: np.ndarray, boxes: Mapping[str, tuple[int, int, int, int]]) -> bool:
    """:func:`hot_line_through` for the ``terminal_box`` of a machine's region ``boxes`` (the ones read), its
    other boxes and its motor body; False without a terminal box.

    >>> frame = np.full((40, 60), 20.0); frame[10:20, 20:40] = 35.0; frame[7:9, :] = 70.0
    >>> terminal_box_crossed(frame, {"terminal_box": (26, 6, 32, 10), "motor_body": (20, 10, 40, 20)})
    True
    >>> terminal_box_crossed(frame, {"motor_body": (20, 10, 40, 20)})
    False
    """
    box = boxes.get("terminal_box")
    return box is not None and hot_line_through(frame_c, box, [b for n, b in boxes.items() if n != "terminal_box"],
                                                boxes.get("motor_body"))


def terminal_crossed_note() -> str:
    """What ``linewatch inspect`` tells a user whose frame has a hot line through the terminal box."""
    return ("something hot runs through the terminal box and on past it on both sides (a pipe, a cable run, "
            "another machine behind it): a loose lug is a spot inside the box, and this frame cannot tell one from "
            "the line, so thermal withholds electrical overheating (check the connections with the camera closer "
            "or from another side, or move the terminal box's region off the line in assets.json)")
