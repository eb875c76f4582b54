"""Parts too small in the frame for a thermal camera to measure: the measurement spot.

A camera pixel sees a patch of the scene (its instantaneous field of view), but optics blur and
detector sampling spread each point over its neighbours, so a part's temperature is measured only
where it covers several pixels: camera makers give the smallest measurable object as 3 x 3 pixels
(Testo: "IFOVmeas ~ 3 x IFOVgeo"; Optris and Micro-Epsilon: "MFOV: smallest measured object size of
3 x 3 pixel", 2 x 2 for one Optris camera). A bearing housing whose box is narrower than that is read
as a blend of the housing and what lies next to it: the motor body on one side, the wall or the
coupling on the other. On an 80 x 60 camera a bearing hub is 1-2 pixels wide, its two ends read
unlike each other, and a healthy machine's drive end and non-drive end differ by as much as a worn
bearing makes them (docs/models.md, "Thermal: bearing housings below the measurement spot").

:func:`parts_below_spot` names the parts whose box (in the frame's own pixels) is narrower than
:data:`MIN_SPOT_PX` on either side; the thermal features message flags bearing housings so
(:data:`BEARING_BELOW_SPOT_STAT`) and the model's readers withhold bearing wear there
(:mod:`models.withheld_classes`).

>>> boxes = {"motor_body": (19, 27, 33, 39), "de_bearing": (33, 29, 35, 36), "nde_bearing": (16, 29, 19, 36)}
>>> parts_below_spot(boxes)
('de_bearing',)
>>> parts_below_spot({"de_bearing": (50, 24, 56, 36)}), parts_below_spot({})
((), ())
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

#: The smallest box side, in the frame's pixels, in which a part's temperature is measured: the 3 x 3
#: pixels camera makers give as the smallest measurable object. Taken from them, not fitted.
MIN_SPOT_PX = 3
#: The parts a bearing-wear reading needs: both housings (the model reads the drive end against the
#: non-drive end and the motor body).
BEARING_PARTS: tuple[str, ...] = ("de_bearing", "nde_bearing")
#: Message statistic: 1.0 where a bearing housing's box is narrower than the measurement spot.
BEARING_BELOW_SPOT_STAT = "bearing_below_spot"


def parts_below_spot(boxes: Mapping[str, tuple[int, int, int, int]],
                     parts: Collection[str] = BEARING_PARTS) -> tuple[str, ...]:
    """The ``parts`` whose box ``(x0, y0, x1, y1)`` is narrower or lower than :data:`MIN_SPOT_PX`
    pixels, in ``parts`` order (a part without a box is not named)."""
    out = []
    for name in parts:
        box = boxes.get(name)
        if box is not None and min(box[2] - box[0], box[3] - box[1]) < MIN_SPOT_PX:
            out.append(name)
    return tuple(out)


def below_spot_note(boxes: Mapping[str, tuple[int, int, int, int]]) -> str | None:
    """What ``linewatch inspect`` tells a user whose bearing boxes are below the measurement spot
    (None where none is).

    >>> print(below_spot_note({"de_bearing": (33, 29, 35, 36), "nde_bearing": (16, 29, 18, 36)}))
    the bearing housings are 2 x 7 px (de_bearing), 2 x 7 px (nde_bearing) in this frame, narrower than \
the 3 x 3 pixels a thermal camera needs to measure a part's temperature: each reads a blend of the \
housing and its surroundings, so thermal withholds bearing wear (audio and the PLC still judge it); a \
camera closer to the machine, or a lens with a narrower field of view, resolves them (a box drawn inside a \
larger housing: draw it around the whole housing in assets.json)
    """
    small = parts_below_spot(boxes)
    if not small:
        return None
    sizes = ", ".join(f"{boxes[p][2] - boxes[p][0]} x {boxes[p][3] - boxes[p][1]} px ({p})" for p in small)
    what, reads = ("the bearing housings are", "each reads") if len(small) > 1 else ("a bearing housing is", "it reads")
    return (f"{what} {sizes} in this frame, narrower than the {MIN_SPOT_PX} x {MIN_SPOT_PX} pixels a thermal camera "
            f"needs to measure a part's temperature: {reads} a blend of the housing and its surroundings, so "
            "thermal withholds bearing wear (audio and the PLC still judge it); a camera closer to the machine, or a "
            "lens with a narrower field of view, resolves them (a box drawn inside a larger housing: draw it around the "
            "whole housing in assets.json)")
