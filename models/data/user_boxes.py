"""Region boxes as users' ``assets.json`` files hold them: exact, drawn roughly, left out, or for a
camera that has since moved.

The thermal model reads each part of a machine inside its ``regions`` box
(:mod:`pipeline.features.thermal_regions`); serving registers boxes that do not sit on the machine
and proposes boxes where there are none (:mod:`pipeline.features.thermal_fit`). A model trained on
exact boxes only has never seen what those fitted boxes read (``docs/models.md``, "Thermal: frame
layouts and region boxes": a proposed box half on the body makes a healthy relation look like a
fault). :func:`degrade_regions` turns a machine's exact boxes into one of the ways they go wrong,
so that training data can carry them and be featurised through the same fitting as serving.

>>> rng = np.random.default_rng(0)
>>> exact = {"motor_body": (20.0, 20.0, 50.0, 40.0), "de_bearing": (50.0, 25.0, 56.0, 35.0)}
>>> mode, boxes = degrade_regions(exact, rng, frame_size=(80, 60))
>>> mode in MODES, set(boxes) <= set(exact)
(True, True)
>>> degrade_regions(exact, rng, frame_size=(80, 60), mode="none")
('none', {})
>>> _, moved = degrade_regions(exact, rng, frame_size=(80, 60), mode="moved")
>>> [round(b[2] - b[0], 6) for b in moved.values()]                   # a moved camera keeps sizes
[30.0, 6.0]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

Box = tuple[float, float, float, float]

#: How a user's boxes go wrong, and how often among the machines whose boxes do.
MODES: tuple[str, ...] = ("none", "rough", "moved")
MODE_WEIGHTS: tuple[float, ...] = (0.4, 0.3, 0.3)
#: Rough boxes: the whole set off by this share of each box's size (either way) and scaled.
ROUGH_OFFSET = (0.05, 0.25)
ROUGH_SCALE = (0.8, 1.25)
#: A moved camera: the scene off by this share of the frame (either way), boxes unchanged.
MOVED_OFFSET = (0.04, 0.15)


def degrade_regions(regions: Mapping[str, Box], rng: np.random.Generator, frame_size: tuple[float, float],
                    mode: str | None = None, modes: Sequence[str] = MODES) -> tuple[str, dict[str, Box]]:
    """``(mode, boxes)``: ``regions`` (x0, y0, x1, y1 in a frame of ``frame_size`` = (width,
    height)) as one of ``modes`` (drawn with their :data:`MODE_WEIGHTS` unless ``mode`` is given): ``none`` (no
    boxes: serving proposes them), ``rough`` (offset by 5–25 % of each box's size and scaled
    0.8–1.25 around its own centre, the same for every box, as one hand draws them), ``moved``
    (every box shifted by 4–15 % of the frame: the camera moved after the boxes were drawn)."""
    if mode is None:
        if any(m not in MODES for m in modes) or not modes:
            raise ValueError(f"unknown box modes {tuple(modes)}: use some of {MODES}")
        w = np.array([MODE_WEIGHTS[MODES.index(m)] for m in modes])
        mode = modes[int(rng.choice(len(modes), p=w / w.sum()))]
    if mode not in MODES:
        raise ValueError(f"unknown box mode {mode!r}: use one of {MODES}")
    if mode == "none" or not regions:
        return "none", {}

    def signed(span: tuple[float, float]) -> float:
        return float(rng.uniform(*span)) * float(rng.choice([-1.0, 1.0]))

    out: dict[str, Box] = {}
    if mode == "rough":
        fx, fy, s = signed(ROUGH_OFFSET), signed(ROUGH_OFFSET), float(rng.uniform(*ROUGH_SCALE))
        for name, (x0, y0, x1, y1) in regions.items():
            w, h = x1 - x0, y1 - y0
            cx, cy = (x0 + x1) / 2 + fx * w, (y0 + y1) / 2 + fy * h
            out[name] = (cx - s * w / 2, cy - s * h / 2, cx + s * w / 2, cy + s * h / 2)
        return mode, out
    dx, dy = signed(MOVED_OFFSET) * frame_size[0], signed(MOVED_OFFSET) * frame_size[1]
    for name, (x0, y0, x1, y1) in regions.items():
        out[name] = (x0 + dx, y0 + dy, x1 + dx, y1 + dy)
    return mode, out
