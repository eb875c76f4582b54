"""Region boxes that fit the frame: registration of imprecise ``assets.json`` boxes, and proposal
when there are none.

The thermal vector (:mod:`pipeline.features.thermal_regions`) reads each part of the machine
inside its ``regions`` box. Boxes drawn by hand, for a camera that has since moved, or missing
altogether would read the wrong pixels. A thermal-imaging engineer lines the boxes up with the
machine as the camera sees it; this module does the same, on the frame itself:

* **edges**: the painted parts of a running machine (motor body, bearing housings, terminal box,
  coupling, driven machine) differ from the hall's ambient and from each other, so their outlines
  are temperature edges. The frame (°C) is reduced to at most :data:`WORK_MAX_SIDE` pixels a side,
  its gradient magnitude saturated well above the camera's noise (:func:`edge_map`: a hot lug,
  lamp or steam pipe weighs no more than any other edge).
* **pre-check** (boxes given): the same group search at half the work resolution with five
  scales and a lenient test (:data:`PRECHECK_GAIN`, :data:`PRECHECK_ABS`); boxes that clearly fit
  are returned as they are (the common case, and the cheap one). Where a box is narrower there than
  the measurement spot (3 pixels, :mod:`pipeline.features.measurement_spot`: a bearing of a machine
  seen small in a wide frame) the pre-check cannot see its part and does not vouch for the boxes;
  the registration decides (:func:`below_precheck_spot`);
* **registration** (boxes given): the outline of all boxes together, moved as one rigid group
  (shift + one scale about the group's centre, scale :data:`REGISTER_SCALES`, shift up to
  :data:`REGISTER_MAX_SHIFT` of the group's size), is correlated with the edges for every shift
  at once (FFT); then each box alone is refined the same way within
  :data:`REFINE_MAX_SHIFT` of its own size. A move is kept only when the outline's mean edge
  strength improves by :data:`ACCEPT_GAIN` (relative) *and* :data:`ACCEPT_ABS` (absolute) over
  the boxes as given, so boxes that already sit on the machine stay exactly as they are. Boxes as
  given are scored at their best growth about their own centres (:data:`GIVEN_GROWTH`): a region
  of interest drawn inside its part, as thermographers draw them to keep the background out, sits
  on the machine too.
* **proposal** (no boxes): the typical side view of a motor-driven machine (:data:`CANONICAL_LAYOUT`:
  fan-end bearing, motor body with the terminal box on top, drive-end bearing, coupling, driven
  machine; the layout ``docs/simulator.md`` describes) is fitted over a wide range of scales and
  positions, both ways round (or the way ``fan_side`` says); with the orientation still open,
  the warmer end of the motor body is taken as the drive end (the fan cools the other).

>>> import numpy as np
>>> frame = np.full((60, 80), 20.0, np.float32)
>>> frame[20:40, 20:50] = 35.0                                   # motor body
>>> frame[24:36, 50:56] = 45.0                                   # drive-end bearing
>>> given = {"motor_body": (20, 20, 50, 40), "de_bearing": (50, 24, 56, 36)}
>>> fit_regions(frame, given).status                             # right where they are: untouched
'given'
>>> moved = {k: (x0 + 7, y0 - 5, x1 + 7, y1 - 5) for k, (x0, y0, x1, y1) in given.items()}
>>> fit = fit_regions(frame, moved)
>>> fit.status, fit.boxes["motor_body"]
('registered', (20, 20, 50, 40))
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from scipy import ndimage
from scipy.fft import irfft2, next_fast_len, rfft2
from scipy.signal import fftconvolve

from pipeline.features.measurement_spot import MIN_SPOT_PX

Box = tuple[int, int, int, int]

#: Typical side view of a motor-driven machine in a 160 x 120 frame, drive end to the right
#: (x0, y0, x1, y1; ``pump_inlet`` only for pumps).
CANONICAL_LAYOUT: dict[str, tuple[float, float, float, float]] = {
    "nde_bearing": (17, 51, 28, 69), "motor_body": (22, 40, 84, 80), "terminal_box": (44, 27, 62, 40),
    "de_bearing": (82, 49, 94, 71), "coupling": (94, 54, 104, 66), "driven": (104, 36, 148, 86),
}
CANONICAL_PUMP_INLET = (136.0, 50.0, 150.0, 70.0)
CANONICAL_FRAME = (120, 160)
WORK_MAX_SIDE = 160
REGISTER_SCALES = tuple(float(s) for s in np.geomspace(0.75, 1.333, 9))
REGISTER_MAX_SHIFT = 0.45
REFINE_MAX_SHIFT = 0.35
REFINE_SCALES = (0.8, 0.9, 1.0, 1.11, 1.25)
PROPOSE_SCALES = tuple(float(s) for s in np.geomspace(0.3, 1.6, 19))
ACCEPT_GAIN = 0.3
ACCEPT_ABS = 0.07
REFINE_GAIN = 0.2
REFINE_ABS = 0.05
REFINE_SET_GAIN = 0.3
PRECHECK_GAIN = 0.1
PRECHECK_ABS = 0.02
PRECHECK_MIN_SIDE = 100
MIN_EDGE_CONTRAST_K = 1.5
#: :func:`edge_map` saturates the gradient at this many times its median (the noise of the flat
#: background): an edge counts fully once it stands this far above the camera's noise.
EDGE_NOISE_MULTIPLE = 32.0
#: ... and weighs each pixel by its gradient over the largest in this window (pixels a side) around it,
#: so that an edge is strongest at its middle and falls off across its blurred flanks.
EDGE_PEAK_WINDOW = 5
PROPOSE_ORIENTATION_MARGIN = 0.03
#: The features message's ``stats`` key that is 1.0 on a frame read through proposed boxes whose drive
#: end was not taken from the warmer end of the motor body (``fan_side`` declared it, or the machine's
#: shape did: :attr:`RegionFit.ends_known`), 0.0 otherwise.
PROPOSED_ENDS_KNOWN_STAT = "regions_proposed_ends_known"
#: How the proposal's drive end was read, as :meth:`RegionFit.describe` tells the user.
ENDS_READ = {"declared": "declared by fan_side", "shape": "read from the machine's shape",
             "warmth": "here it was taken to be the warmer end: give fan_side"}
PROPOSE_MIN_IOU = 0.2
#: Each given box grown about its own centre by these factors before its outline is scored: a box
#: drawn inside its part (a thermographer's region of interest keeps the background out) counts
#: as sitting on the part. With a thermal image's blurred outlines that left 1,782 of 1,800 frames
#: with boxes drawn 0-12 % of their size in from each side as drawn (``bench/bench_thermal_layouts.py``
#: case ``h_inset``); more growth also left boxes drawn off their parts unregistered (case
#: ``c_perturbed``).
GIVEN_GROWTH = (1.0, 1.04, 1.08)
#: The same growths (alike across and along) for the group search's candidates.
GROUP_GROWTH = (1.0, 1.08)
#: The most of a fitted terminal box's height (width) that :func:`off_the_body` trims off the body.
MAX_BODY_TRIM = 0.25


@dataclass(frozen=True)
class RegionFit:
    """Boxes to read (frame pixels) and how they were obtained.

    ``status``: ``given`` (as in assets.json, scaled to the frame), ``registered`` (moved onto the
    machine), ``proposed`` (none given; fitted from :data:`CANONICAL_LAYOUT`), ``none`` (none
    given and nothing to fit: a frame without a machine in it), ``off`` (fitting switched off).
    ``shift_px`` / ``scale``: the group move (registered) or placement (proposed); ``score`` /
    ``given_score``: mean edge strength (0..1) along the outlines after / before (:func:`drawn_score`).
    ``orientation`` (proposed boxes): what set which end of the motor is the drive end, ``declared``
    (``fan_side``), ``shape`` or ``warmth`` (:func:`propose_boxes`); empty otherwise.
    """

    boxes: dict[str, Box]
    status: str
    shift_px: tuple[float, float] = (0.0, 0.0)
    scale: float = 1.0
    score: float = 0.0
    given_score: float = 0.0
    moved: tuple[str, ...] = field(default_factory=tuple)
    orientation: str = ""

    @property
    def ends_known(self) -> bool:
        """Proposed boxes whose drive end was declared (``fan_side``) or read from the machine's shape,
        not taken from the warmer end of the motor body (which cannot then show a body warmer at its
        fan end)."""
        return self.status == "proposed" and self.orientation in ("declared", "shape")

    @property
    def changed(self) -> bool:
        return self.status in ("registered", "proposed")

    def describe(self) -> str:
        if self.status == "registered":
            return (f"thermal region boxes registered onto the frame (moved {', '.join(self.moved)}; group shift "
                    f"{self.shift_px[0]:+.0f},{self.shift_px[1]:+.0f} px, scale {self.scale:.2f}; edge fit "
                    f"{self.given_score:.2f} -> {self.score:.2f}): check assets.json regions for this camera")
        if self.status == "proposed":
            boxes = ", ".join(f'"{k}": [{", ".join(str(int(v)) for v in b)}]' for k, b in sorted(self.boxes.items()))
            return (f"no thermal regions in assets.json: boxes proposed from the warm machine in the frame "
                    f"(edge fit {self.score:.2f}), and thermal names no fault on proposed boxes but a connection "
                    f"in the terminal box far hotter than the box (electrical overheating) and, where the drive end "
                    f"is known ({ENDS_READ.get(self.orientation, ENDS_READ['warmth'])}), "
                    f"a motor body clearly warmer at its fan end (cooling failure); check them and give "
                    f"them as this machine's regions (pixels of this frame) to have it judged: {{{boxes}}}")
        if self.status == "none":
            return "no thermal regions in assets.json and no machine outline found: whole-frame statistics only"
        return ""


def _work_image(frame_c: np.ndarray) -> tuple[np.ndarray, int]:
    """Block-mean reduced frame (at most WORK_MAX_SIDE a side) and the reduction factor."""
    h, w = frame_c.shape
    k = max(1, int(np.ceil(max(h, w) / WORK_MAX_SIDE)))
    if k == 1:
        return frame_c.astype(np.float32), 1
    hh, ww = h // k, w // k
    return frame_c[: hh * k, : ww * k].reshape(hh, k, ww, k).mean(axis=(1, 3)).astype(np.float32), k


def _median3(x: np.ndarray, axis: int) -> np.ndarray:
    """3-tap median along ``axis`` (edges mirrored): removes a dead column (axis 1) or row (axis 0)."""
    p = np.pad(x, [(1, 1) if a == axis else (0, 0) for a in range(x.ndim)], mode="reflect")
    a, b, c = (np.take(p, np.arange(i, i + x.shape[axis]), axis=axis) for i in range(3))
    return np.maximum(np.minimum(a, b), np.minimum(np.maximum(a, b), c))


def gradient(frame_c: np.ndarray) -> tuple[np.ndarray, float]:
    """The frame's gradient magnitude (K per pixel; 3-tap medians along x then y, clipped to its
    1st-99.9th percentiles, smoothed) and its contrast (99.9th minus 10th percentile, K), as
    :func:`edge_map` reads them."""
    # dead pixels, rows and columns (a stuck 0 or 65535) would be the strongest edges otherwise
    clean = _median3(_median3(frame_c, 1), 0)
    lo, p10, hi = (float(v) for v in np.percentile(clean, (1.0, 10.0, 99.9)))
    sm = ndimage.gaussian_filter(np.clip(clean, lo, hi), 0.7, mode="nearest")
    return np.hypot(ndimage.sobel(sm, 0, mode="nearest"), ndimage.sobel(sm, 1, mode="nearest")) / 8.0, hi - p10


def edge_map(frame_c: np.ndarray) -> np.ndarray | None:
    """Temperature edges, 0..1: the gradient magnitude ``g`` of the frame (:func:`gradient`),
    saturated as ``1 - exp(-g / scale)`` with ``scale`` :data:`EDGE_NOISE_MULTIPLE` x the median of
    ``g`` (the background's noise; a noise-free frame: its 99th percentile), times ``g`` over the
    largest ``g`` within :data:`EDGE_PEAK_WINDOW` pixels; None without contrast.

    Saturated, an outline scores by how much of it lies on an edge, not by how hot the edge is: a
    steam pipe across the hall no longer outweighs a motor a few kelvin over ambient. With ``g``
    normalised to its 99th percentile (before 2026-12-06), which a pipe's edges set, the boxes of
    fixed cameras were pulled onto pipes on 78 of 312 frames of ``bench/bench_blind_fleet.py``'s
    fleet. Weighed by its local peak, an edge is strongest at its middle, so an outline a pixel or two
    off still gains by moving onto it (saturation alone left boxes 2-3 px off where they were).
    ``bench/bench_region_fit.py`` measures both.

    >>> frame = np.full((60, 80), 20.0, np.float32)
    >>> frame[20:40, 20:50] = 25.0                                   # a cool motor
    >>> frame[5:9, :] = 150.0                                        # a steam pipe across the frame
    >>> e = edge_map(frame + np.random.default_rng(0).normal(0, 0.05, frame.shape).astype(np.float32))
    >>> round(float(e[20, 35]), 2), round(float(e[8, 35]), 2)       # the motor's edge, the pipe's
    (0.99, 1.0)
    """
    g, spread = gradient(frame_c)
    noise, p99 = (float(v) for v in np.percentile(g, (50.0, 99.0)))
    scale = EDGE_NOISE_MULTIPLE * noise if noise > 1e-6 else p99  # noise-free: a synthetic frame
    if spread < MIN_EDGE_CONTRAST_K or scale <= 1e-6:
        return None
    peak = ndimage.maximum_filter(g, size=EDGE_PEAK_WINDOW, mode="nearest")
    return ((1.0 - np.exp(-g / scale)) * g / np.maximum(peak, 1e-12)).astype(np.float32)


def _outline(boxes: list[tuple[float, float, float, float]], ox: float, oy: float, shape: tuple[int, int]) -> np.ndarray:
    """1-px outlines (on both sides of each edge) of ``boxes`` translated by (-ox, -oy)."""
    t = np.zeros(shape, np.float32)
    h, w = shape
    for x0, y0, x1, y1 in boxes:
        a, b = int(round(x0 - ox)), int(round(x1 - ox))
        c, d = int(round(y0 - oy)), int(round(y1 - oy))
        a, b, c, d = max(a, 0), min(b, w), max(c, 0), min(d, h)
        if b - a < 2 or d - c < 2:
            continue
        for x in (a - 1, a, b - 1, b):
            if 0 <= x < w:
                t[c:d, x] = 1.0
        for y in (c - 1, c, d - 1, d):
            if 0 <= y < h:
                t[y, a:b] = 1.0
    return t


def _transform(boxes: Mapping[str, tuple[float, float, float, float]], s: float, cx: float, cy: float,
               dx: float, dy: float, mirror: bool = False) -> dict[str, tuple[float, float, float, float]]:
    out = {}
    for name, (x0, y0, x1, y1) in boxes.items():
        xs = sorted(((x - cx) * (-s if mirror else s) + cx + dx) for x in (x0, x1))
        ys = ((y0 - cy) * s + cy + dy, (y1 - cy) * s + cy + dy)
        out[name] = (xs[0], ys[0], xs[1], ys[1])
    return out


def _score(edges: np.ndarray, boxes: list[tuple[float, float, float, float]]) -> float:
    t = _outline(boxes, 0.0, 0.0, edges.shape)
    n = float(t.sum())
    return float((edges * t).sum() / n) if n else 0.0


def _fft_shape(n: int) -> int:
    """A fast FFT length >= n, rounded up to a multiple of 32 (so searches share one spectrum)."""
    return int(next_fast_len(-(-n // 32) * 32, real=True))


def _best_shift(edges: np.ndarray, boxes: list[tuple[float, float, float, float]], max_dx: float | None,
                max_dy: float | None, spectra: dict | None = None) -> tuple[float, float, float]:
    """(score, dx, dy) of the best translation of ``boxes``' outline over ``edges`` (whole pixels).
    ``spectra`` caches the edges' FFT per padded shape across calls on the same ``edges``."""
    h, w = edges.shape
    x0 = int(np.floor(min(b[0] for b in boxes))) - 2
    y0 = int(np.floor(min(b[1] for b in boxes))) - 2
    x1 = max(b[2] for b in boxes) + 2
    y1 = max(b[3] for b in boxes) + 2
    tw, th = int(np.ceil(x1 - x0)) + 1, int(np.ceil(y1 - y0)) + 1
    t = _outline(boxes, x0, y0, (th, tw))
    n = float(t.sum())
    if n == 0:
        return 0.0, 0.0, 0.0
    # corr[r, c] = sum edges[r - th + 1 + i, c - tw + 1 + j] * t[i, j]: template origin at (c - tw + 1, r - th + 1)
    shape = (_fft_shape(h + th - 1), _fft_shape(w + tw - 1))
    spectra = {} if spectra is None else spectra
    if shape not in spectra:
        spectra[shape] = rfft2(edges, shape)
    corr = irfft2(spectra[shape] * rfft2(t[::-1, ::-1], shape), shape)[: h + th - 1, : w + tw - 1]
    oy = np.arange(corr.shape[0])[:, None] - th + 1 - y0
    ox = np.arange(corr.shape[1])[None, :] - tw + 1 - x0
    ok = np.ones(corr.shape, bool)
    if max_dx is not None:
        ok &= np.abs(ox) <= max_dx
    if max_dy is not None:
        ok &= np.abs(oy) <= max_dy
    # the outline must stay (mostly) inside the frame: origin and far corner within bounds
    oy_abs = oy + y0
    ox_abs = ox + x0
    ok &= (oy_abs >= -0.15 * th) & (ox_abs >= -0.15 * tw) & (oy_abs + th <= h + 0.15 * th) & (ox_abs + tw <= w + 0.15 * tw)
    if not ok.any():
        return 0.0, 0.0, 0.0
    c = np.where(ok, corr, -np.inf)
    r, col = np.unravel_index(int(np.argmax(c)), c.shape)
    dx, dy = float(ox[0, col]), float(oy[r, 0])
    moved = [(b[0] + dx, b[1] + dy, b[2] + dx, b[3] + dy) for b in boxes]
    return _score(edges, moved), dx, dy


def _to_frame(boxes: Mapping[str, tuple[float, float, float, float]], k: int, shape: tuple[int, int]) -> dict[str, Box]:
    h, w = shape
    out: dict[str, Box] = {}
    for name, (x0, y0, x1, y1) in boxes.items():
        bx0 = int(np.clip(round(x0 * k), 0, w - 1))
        bx1 = int(np.clip(round(x1 * k), bx0 + 1, w))
        by0 = int(np.clip(round(y0 * k), 0, h - 1))
        by1 = int(np.clip(round(y1 * k), by0 + 1, h))
        out[name] = (bx0, by0, bx1, by1)
    return out


def _accept(new: float, old: float, gain: float = ACCEPT_GAIN, absolute: float = ACCEPT_ABS) -> bool:
    return new >= old * (1.0 + gain) and new - old >= absolute


def _grown(box: tuple[float, float, float, float], fx: float, fy: float) -> tuple[float, float, float, float]:
    cx, cy, hw, hh = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2, fx * (box[2] - box[0]) / 2, fy * (box[3] - box[1]) / 2
    return (cx - hw, cy - hh, cx + hw, cy + hh)


def drawn_score(edges: np.ndarray, boxes: list[tuple[float, float, float, float]]) -> float:
    """Outline edge strength of boxes as drawn: the best over :data:`GIVEN_GROWTH` across and along
    (every box grown alike about its own centre), so that boxes drawn just inside their parts score
    as their parts' outlines do.

    >>> edges = np.zeros((40, 60), np.float32)
    >>> edges[10, 10:50] = edges[30, 10:50] = edges[10:31, 10] = edges[10:31, 49] = 1.0   # a part's outline
    >>> round(_score(edges, [(10, 10, 50, 31)]), 2)                  # a box on the outline
    0.49
    >>> inside = [(11, 11, 48, 29)]                                  # the region drawn inside it
    >>> round(_score(edges, inside), 2), round(drawn_score(edges, inside), 2)
    (0.25, 0.5)
    """
    return max(_score(edges, [_grown(b, fx, fy) for b in boxes]) for fx in GIVEN_GROWTH for fy in GIVEN_GROWTH)


def _group_search(edges: np.ndarray, boxes: Mapping[str, tuple[float, float, float, float]],
                  scales: tuple[float, ...]) -> tuple[float, tuple[float, float, float, float, float]]:
    """(score of the boxes as given, (best score, scale, dx, dy, growth)) of the rigid group search.

    The candidates' outlines are those of the boxes grown alike about their own centres
    (:data:`GROUP_GROWTH`), as :func:`drawn_score` reads the boxes as given: a set drawn inside
    its parts is compared with itself moved, not with boxes of another size."""
    given = list(boxes.values())
    given_score = drawn_score(edges, given)
    gx0, gy0 = min(b[0] for b in given), min(b[1] for b in given)
    gx1, gy1 = max(b[2] for b in given), max(b[3] for b in given)
    cx, cy = (gx0 + gx1) / 2, (gy0 + gy1) / 2
    best = (given_score, 1.0, 0.0, 0.0, 1.0)
    spectra: dict = {}
    for g in GROUP_GROWTH:
        grown = {n: _grown(b, g, g) for n, b in boxes.items()}
        for s in scales:
            cand = list(_transform(grown, s, cx, cy, 0.0, 0.0).values())
            sc, dx, dy = _best_shift(edges, cand, REGISTER_MAX_SHIFT * (gx1 - gx0), REGISTER_MAX_SHIFT * (gy1 - gy0),
                                     spectra)
            if sc > best[0] + 1e-6:
                best = (sc, s, dx, dy, g)
    return given_score, best


def _clearly_given(work: np.ndarray, boxes: Mapping[str, tuple[float, float, float, float]]) -> bool:
    """Cheap pre-check at half the work resolution (5 scales): True when even a lenient test
    (:data:`PRECHECK_GAIN`, :data:`PRECHECK_ABS`) finds no better place for the boxes. It cannot vouch for
    a box it does not resolve: one narrower than the measurement spot (:data:`MIN_SPOT_PX`) at half the
    work resolution sends the boxes to the registration (:func:`below_precheck_spot`).

    >>> work = np.zeros((120, 160), np.float32)
    >>> _clearly_given(work, {"motor_body": (20, 20, 60, 50), "de_bearing": (60, 28, 64, 40)})  # 2 px at half
    False
    """
    if max(work.shape) < PRECHECK_MIN_SIDE or below_precheck_spot(boxes):
        return False
    h, w = (work.shape[0] // 2) * 2, (work.shape[1] // 2) * 2
    coarse = work[:h, :w].reshape(h // 2, 2, w // 2, 2).mean(axis=(1, 3))
    edges = edge_map(coarse)
    if edges is None:
        return False
    given_score, best = _group_search(edges, _scaled(boxes, 0.5), REGISTER_SCALES[::2])
    return not _accept(best[0], given_score, PRECHECK_GAIN, PRECHECK_ABS)


def below_precheck_spot(boxes: Mapping[str, tuple[float, float, float, float]]) -> bool:
    """Whether a box (work pixels) is narrower, at the pre-check's half resolution, than the measurement
    spot of :mod:`pipeline.features.measurement_spot`: the pre-check cannot see where such a part lies.

    >>> below_precheck_spot({"motor_body": (20, 20, 60, 50), "de_bearing": (60, 28, 66, 40)})  # 3 x 6 px at half
    False
    >>> below_precheck_spot({"motor_body": (20, 20, 60, 50), "de_bearing": (60, 28, 65, 40)})  # 2.5 px
    True
    """
    return any(min(b[2] - b[0], b[3] - b[1]) < 2 * MIN_SPOT_PX for b in boxes.values())


def register_boxes(edges: np.ndarray, boxes: Mapping[str, tuple[float, float, float, float]], refine: bool = True
                   ) -> tuple[dict[str, tuple[float, float, float, float]], float, float, tuple[float, float], float,
                              tuple[str, ...]]:
    """Group then per-box registration on ``edges`` (work pixels): (boxes, score, given score,
    group shift, group scale, names of the boxes that moved). Boxes that the group search put on
    the outlines grown (drawn inside their parts) come back at that size, on the parts' outlines."""
    names = list(boxes)
    given_score, (group_score, s, dx, dy, g) = _group_search(edges, boxes, REGISTER_SCALES)
    given = [boxes[n] for n in names]
    cx = (min(b[0] for b in given) + max(b[2] for b in given)) / 2
    cy = (min(b[1] for b in given) + max(b[3] for b in given)) / 2
    if not _accept(group_score, given_score):
        return dict(boxes), given_score, given_score, (0.0, 0.0), 1.0, ()
    current = _transform({n: _grown(b, g, g) for n, b in boxes.items()}, s, cx, cy, dx, dy)
    if refine:
        refine_boxes(edges, current, boxes)
    final = _score(edges, [current[n] for n in names])
    return current, final, given_score, (dx, dy), s, tuple(names)


def refine_boxes(edges: np.ndarray, current: dict[str, tuple[float, float, float, float]],
                 starts: Mapping[str, tuple[float, float, float, float]] | None = None) -> None:
    """Move each box alone, within :data:`REFINE_MAX_SHIFT` of its own size around where it is
    (and around ``starts[name]``, its position as given), where its outline fits the edges clearly
    better (boxes drawn one by one are off one by one, each by a part of its own size); in place."""
    for n in list(current):
        own = _score(edges, [current[n]])
        top = (own, current[n])
        origins = [current[n]] + ([starts[n]] if starts and n in starts and starts[n] != current[n] else [])
        for origin in origins:
            cand = _refine_one(edges, origin)
            if cand is not None and cand[0] > top[0] + 1e-6:
                top = cand
        if _accept(top[0], own, REFINE_GAIN, REFINE_ABS):
            current[n] = top[1]


def _refine_one(edges: np.ndarray, box: tuple[float, float, float, float]
                ) -> tuple[float, tuple[float, float, float, float]] | None:
    """Best (score, box) within :data:`REFINE_MAX_SHIFT` x :data:`REFINE_SCALES` of ``box``."""
    h, w = edges.shape
    x0, y0, x1, y1 = box
    bw, bh = x1 - x0, y1 - y0
    if bw < 3 or bh < 3:
        return None
    mx, my = REFINE_MAX_SHIFT * bw + 0.25 * bw + 4, REFINE_MAX_SHIFT * bh + 0.25 * bh + 4
    cx0, cy0 = int(max(np.floor(x0 - mx), 0)), int(max(np.floor(y0 - my), 0))
    cx1, cy1 = int(min(np.ceil(x1 + mx), w)), int(min(np.ceil(y1 + my), h))
    if cx1 - cx0 < 4 or cy1 - cy0 < 4:
        return None
    crop = edges[cy0:cy1, cx0:cx1]
    local = (x0 - cx0, y0 - cy0, x1 - cx0, y1 - cy0)
    top = (_score(crop, [local]), local)
    for f in REFINE_SCALES:
        cand = _transform({"b": local}, f, (local[0] + local[2]) / 2, (local[1] + local[3]) / 2, 0.0, 0.0)["b"]
        sc, ddx, ddy = _best_shift(crop, [cand], REFINE_MAX_SHIFT * bw, REFINE_MAX_SHIFT * bh)
        if sc > top[0] + 1e-6:
            top = (sc, (cand[0] + ddx, cand[1] + ddy, cand[2] + ddx, cand[3] + ddy))
    b = top[1]
    return _score(edges, [(b[0] + cx0, b[1] + cy0, b[2] + cx0, b[3] + cy0)]), (b[0] + cx0, b[1] + cy0, b[2] + cx0, b[3] + cy0)


def silhouette(frame_w: np.ndarray) -> np.ndarray:
    """Pixels clearly off the hall's ambient (the median of the frame's border): the machine."""
    border = np.concatenate([frame_w[:2].ravel(), frame_w[-2:].ravel(), frame_w[:, :2].ravel(), frame_w[:, -2:].ravel()])
    dev = np.abs(frame_w - float(np.median(border)))
    return dev > max(MIN_EDGE_CONTRAST_K, 0.25 * float(np.percentile(dev, 99.0)))


def _best_overlap(mask: np.ndarray, boxes: list[tuple[float, float, float, float]]) -> tuple[float, float, float]:
    """(IoU, dx, dy) of the best translation of the filled union of ``boxes`` over ``mask``."""
    x0 = int(np.floor(min(b[0] for b in boxes)))
    y0 = int(np.floor(min(b[1] for b in boxes)))
    tw = int(np.ceil(max(b[2] for b in boxes))) - x0 + 1
    th = int(np.ceil(max(b[3] for b in boxes))) - y0 + 1
    t = np.zeros((th, tw), np.float32)
    for bx0, by0, bx1, by1 in boxes:
        t[int(round(by0)) - y0:int(round(by1)) - y0, int(round(bx0)) - x0:int(round(bx1)) - x0] = 1.0
    m = mask.astype(np.float32)
    inter = fftconvolve(m, t[::-1, ::-1], mode="full")
    iou = inter / np.maximum(float(t.sum()) + float(m.sum()) - inter, 1.0)
    r, c = np.unravel_index(int(np.argmax(iou)), iou.shape)
    return float(iou[r, c]), float(c - tw + 1 - x0), float(r - th + 1 - y0)


def propose_boxes(edges: np.ndarray, frame_w: np.ndarray, asset_type: str = "", fan_side: str | None = None
                  ) -> tuple[dict[str, tuple[float, float, float, float]], float, tuple[float, float], float, str]:
    """Fit :data:`CANONICAL_LAYOUT` to the machine's silhouette, then each part to the edges
    (work pixels): (boxes, silhouette IoU, shift, scale, what set the drive end: ``declared``
    (``fan_side``), ``shape`` (one way round fits the silhouette clearly better) or ``warmth``
    (the warmer end of the motor body))."""
    h, w = edges.shape
    layout = dict(CANONICAL_LAYOUT)
    if "pump" in asset_type:
        layout["pump_inlet"] = CANONICAL_PUMP_INLET
    base = min(w / CANONICAL_FRAME[1], h / CANONICAL_FRAME[0])
    cx, cy = 83.5, 58.0  # centre of the machine in the canonical view
    mask = silhouette(frame_w)
    mirrors = {"right": [True], "left": [False]}.get(fan_side or "", [False, True])
    results: list[tuple[float, bool, float, float, float]] = []
    for mirror in mirrors:
        best = (-1.0, 1.0, 0.0, 0.0)
        for s in PROPOSE_SCALES:
            k = s * base
            cand = _transform(layout, k, cx, cy, w / 2 - cx, h / 2 - cy, mirror)
            sc, dx, dy = _best_overlap(mask, list(cand.values()))
            if sc > best[0]:
                best = (sc, k, dx, dy)
        results.append((best[0], mirror, best[1], best[2], best[3]))
    results.sort(key=lambda r: -r[0])
    score, mirror, k, dx, dy = results[0]
    orientation = "declared" if len(results) == 1 else "shape"
    if len(results) == 2 and results[0][0] - results[1][0] < PROPOSE_ORIENTATION_MARGIN:
        # both ways round fit the silhouette alike: the drive end is the warmer end of the motor body
        votes = []
        for _, m, kk, ddx, ddy in results:
            body = _transform(layout, kk, cx, cy, w / 2 - cx + ddx, h / 2 - cy + ddy, m)["motor_body"]
            x0, y0, x1, y1 = (int(round(v)) for v in body)
            x0, x1, y0, y1 = max(x0, 0), min(x1, w), max(y0, 0), min(y1, h)
            if x1 - x0 < 3 or y1 - y0 < 1:
                votes.append(-np.inf)
                continue
            third = max((x1 - x0) // 3, 1)
            left, right = frame_w[y0:y1, x0:x0 + third].mean(), frame_w[y0:y1, x1 - third:x1].mean()
            de_right = not m  # unmirrored canonical view: drive end on the right
            votes.append(float(right - left if de_right else left - right))
        score, mirror, k, dx, dy = results[int(np.argmax(votes))]
        orientation = "warmth"
    boxes = _transform(layout, k, cx, cy, w / 2 - cx + dx, h / 2 - cy + dy, mirror)
    return boxes, score, (dx, dy), k, orientation


def _box_mean(edges: np.ndarray, boxes: Mapping[str, tuple[float, float, float, float]]) -> float:
    """Mean over the boxes of each one's outline edge strength (small parts weigh as much as big)."""
    return float(np.mean([_score(edges, [b]) for b in boxes.values()])) if boxes else 0.0


def _scaled(boxes: Mapping[str, tuple[float, float, float, float]], k: float) -> dict[str, tuple[float, float, float, float]]:
    return {n: (b[0] * k, b[1] * k, b[2] * k, b[3] * k) for n, b in boxes.items()}


def off_the_body(boxes: dict[str, tuple[float, float, float, float]]) -> None:
    """In place: a ``terminal_box`` that a fit laid over the ``motor_body``'s outline is trimmed back to
    the body's edge, on the side it sits on (the box sits on the body; it does not reach into it). The
    terminal box is read for a hot lug (its maximum over its median), and a row of the body inside it
    reads as one: a healthy machine's box registered two pixels into the body read 10-14 K there and was
    called electrical overheating. Left as it is when the trim would take more than :data:`MAX_BODY_TRIM` of the
    box (a box that far onto the body was not placed on the terminal box).

    >>> b = {"motor_body": (20.0, 40.0, 80.0, 80.0), "terminal_box": (40.0, 26.0, 60.0, 42.5)}
    >>> off_the_body(b); b["terminal_box"]
    (40.0, 26.0, 60.0, 40.0)
    >>> b = {"motor_body": (20.0, 40.0, 80.0, 80.0), "terminal_box": (40.0, 30.0, 60.0, 44.0)}
    >>> off_the_body(b); b["terminal_box"]                          # mostly inside: not a trim
    (40.0, 30.0, 60.0, 44.0)
    """
    tb, body = boxes.get("terminal_box"), boxes.get("motor_body")
    if tb is None or body is None:
        return
    ox = min(tb[2], body[2]) - max(tb[0], body[0])
    oy = min(tb[3], body[3]) - max(tb[1], body[1])
    w, h = tb[2] - tb[0], tb[3] - tb[1]
    if ox <= 0 or oy <= 0 or w <= 0 or h <= 0:
        return
    if oy / h <= ox / w:  # above or below the body
        if oy > MAX_BODY_TRIM * h:
            return
        above = (tb[1] + tb[3]) < (body[1] + body[3])
        boxes["terminal_box"] = (tb[0], tb[1], tb[2], body[1]) if above else (tb[0], body[3], tb[2], tb[3])
    else:  # beside it (a machine turned a quarter)
        if ox > MAX_BODY_TRIM * w:
            return
        left = (tb[0] + tb[2]) < (body[0] + body[2])
        boxes["terminal_box"] = (tb[0], tb[1], body[0], tb[3]) if left else (body[2], tb[1], tb[2], tb[3])


def fit_regions(frame_c: np.ndarray, boxes: Mapping[str, Box] | None, asset_type: str = "",
                fan_side: str | None = None, enabled: bool = True) -> RegionFit:
    """Boxes to read in ``frame_c`` (°C, any size): ``boxes`` as given (already in this frame's
    pixels) when they sit on the machine, else registered onto it; proposed when none are given.

    The wide searches run on the reduced frame (:data:`WORK_MAX_SIDE`), the final group shift and
    the per-box refinement on the full-resolution edges."""
    given = {k: tuple(int(v) for v in b) for k, b in (boxes or {}).items()}
    if not enabled:
        return RegionFit(dict(given), "off")  # type: ignore[arg-type]
    work, k = _work_image(frame_c)
    edges = edge_map(work)
    if edges is None:
        return RegionFit(dict(given), "given" if given else "none")  # type: ignore[arg-type]
    if given and _clearly_given(work, _scaled(given, 1.0 / k)):
        return RegionFit(dict(given), "given")  # type: ignore[arg-type]
    if given:
        fitted, _, before, shift, scale, moved = register_boxes(edges, _scaled(given, 1.0 / k), refine=False)
        if not moved:
            return RegionFit(dict(given), "given", score=before, given_score=before)  # type: ignore[arg-type]
    full = (edge_map(frame_c) if k > 1 else edges)
    if full is None:
        full = np.zeros(frame_c.shape, np.float32)
    if given:
        current = _scaled(fitted, float(k))
        if k > 1:  # the last pixels of the group shift at full resolution
            _, fx, fy = _best_shift(full, list(current.values()), float(k), float(k))
            current = {n: (b[0] + fx, b[1] + fy, b[2] + fx, b[3] + fy) for n, b in current.items()}
            shift = (shift[0] * k + fx, shift[1] * k + fy)
        rigid = dict(current)
        refine_boxes(full, current, {n: tuple(float(v) for v in b) for n, b in given.items()})
        if _box_mean(full, current) < _box_mean(full, rigid) * (1.0 + REFINE_SET_GAIN):
            current = rigid  # the group move explains the frame (a camera that moved): keep the drawn layout
        off_the_body(current)
        out = _to_frame(current, 1, frame_c.shape)
        before_full = drawn_score(full, [tuple(float(v) for v in b) for b in given.values()])
        return RegionFit(out, "registered", shift, scale, _score(full, list(current.values())), before_full, moved)
    proposed, score, shift, scale, orientation = propose_boxes(edges, work, asset_type, fan_side)
    if score < PROPOSE_MIN_IOU:
        return RegionFit({}, "none", score=score)
    current = _scaled(proposed, float(k))
    refine_boxes(full, current)  # the parts of this machine are not quite where the typical layout has them
    off_the_body(current)
    return RegionFit(_to_frame(current, 1, frame_c.shape), "proposed", (shift[0] * k, shift[1] * k), scale * k, score,
                     orientation=orientation)
