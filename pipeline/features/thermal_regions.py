"""Physics-normalised thermal model input: each region of the machine relative to the frame's
ambient, to the machine's own motor body and (when there is one) to a running baseline.

Where a fault heats is known: bearing wear the drive-end bearing housing, a loose lug a small
spot in the terminal box, a failed fan the whole motor (most at the drive end, and the non-drive
end bearing under the fan cowl), misalignment the coupling, cavitation cools the pump inlet. The
``regions`` of ``assets.json`` say where those parts are in *this* camera's frame, so the same
vector comes out for any frame size, camera distance, position, mirror image or quarter turn (a
vertical machine, a camera mounted in portrait):

* the frame is converted to °C (:func:`frame_to_celsius`: centikelvin, kelvin, °C, FLIR 0.04 K
  counts ..., from the ``frame`` section of ``assets.json`` or from the value range);
* region boxes given for another frame size (``frame.width``/``height``) are scaled to this one;
* boxes that do not sit on the machine (drawn imprecisely, camera moved) are registered onto it,
  and boxes are proposed when ``assets.json`` has none (:func:`pipeline.features.thermal_fit.fit_regions`;
  ``region_fit: false`` in ``assets.json`` or ``fit=False`` turns this off);
* ambient = median of the pixels outside every region, around the machine (:func:`machine_roi`:
  a second machine in the frame stays out; the 10th percentile there when the regions cover
  almost everything or are unknown); the frame-wide values are read in the same part of the frame;
* per region: mean, 90th percentile and maximum rise over ambient, the hotspot excess
  (maximum − median inside the region: a lug a few pixels wide) and the spread, in kelvin;
* relations: drive end − non-drive end, each part − the motor body, the motor body's axial
  gradient (drive-end third − fan-end third), inlet − pump casing, and the same rises divided by
  the motor body's (emissivity and load scale both);
* a running baseline (``ThermalBaseline``'s frame) gives region changes since then.

:data:`THERMAL_VECTOR_NAMES` names the float32 values (all finite; missing parts are 0 with their
``present`` flag 0).

>>> frame = np.full((60, 80), 295.15, np.float32)           # kelvin, 22 °C
>>> frame[20:40, 20:50] = 305.15                              # motor body +10 K
>>> frame[25:35, 50:56] = 325.15                              # drive-end bearing +30 K
>>> regions = {"motor_body": [20, 20, 50, 40], "de_bearing": [50, 25, 56, 35], "nde_bearing": [14, 25, 20, 35]}
>>> v = thermal_vector(frame, {"asset_id": "M", "regions": regions, "frame": {"unit": "kelvin"}})
>>> v.shape, round(float(v[THERMAL_VECTOR_NAMES.index("de_bearing.max_rise")]), 1)
((69,), 30.0)
>>> big = np.kron(frame, np.ones((4, 4), np.float32))        # the same scene at 240 x 320
>>> meta = {"width": 80, "height": 60, "unit": "kelvin"}
>>> w = thermal_vector(big, {"asset_id": "M", "regions": regions, "frame": meta})
>>> bool(np.allclose(v, w, atol=0.05))
True
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from pipeline.features.asset_profile import REGION_NAMES, AssetProfile, FrameMeta, as_profile
from pipeline.features.dead_pixels import fill_pixels
from pipeline.features.frame_contrast import no_contrast_detail
from pipeline.features.thermal_fit import RegionFit, fit_regions

KELVIN = 273.15
REGIONS: tuple[str, ...] = REGION_NAMES  #: the parts read, in the vector's order (names users write: ``region_name``)
REGION_STATS: tuple[str, ...] = ("present", "mean_rise", "p90_rise", "max_rise", "hotspot_excess", "spread")
RELATIONS: tuple[str, ...] = (
    "de_minus_nde", "de_minus_body", "nde_minus_body", "coupling_minus_body", "terminal_minus_body",
    "body_axial_gradient", "inlet_minus_driven", "driven_minus_body")
RATIOS: tuple[str, ...] = ("de_over_body", "nde_over_body", "terminal_excess_over_body", "coupling_over_body",
                           "axial_over_body")
GLOBAL: tuple[str, ...] = ("ambient_c_over_40", "frame_max_rise", "frame_p99_rise", "hot_area_frac",
                           "hot_outside_regions_frac", "regions_available", "orientation_known")
BASELINE: tuple[str, ...] = ("baseline_available", "delta_body_mean", "delta_de_max", "delta_nde_max",
                             "delta_terminal_max", "delta_coupling_mean", "delta_inlet_mean")
THERMAL_VECTOR_NAMES: tuple[str, ...] = (
    *(f"{r}.{s}" for r in REGIONS for s in REGION_STATS),
    *(f"rel.{n}" for n in RELATIONS), *(f"ratio.{n}" for n in RATIOS),
    *(f"global.{n}" for n in GLOBAL), *(f"baseline.{n}" for n in BASELINE),
)
HOT_DELTA_K = 15.0
#: The parts whose baseline is read at the frame's operating point (``baseline_rise_ratio`` of
#: :func:`thermal_vector_fit`): the motor body and its terminal box warm with the motor's losses; the bearing
#: housings, the coupling and the driven machine with friction and the process.
LOAD_SCALED_REGIONS: tuple[str, ...] = ("motor_body", "terminal_box")
AMBIENT_FALLBACK_PERCENTILE = 10.0
MIN_BACKGROUND_FRAC = 0.08


class ThermalInputError(ValueError):
    """A frame that cannot be turned into a model input (unknown unit, not 2-D, ...)."""


PLAUSIBLE_C = (-50.0, 200.0)
#: A frame read as °C whose coolest tenth is warmer than this (°C) gets a note: °F values (a US
#: camera's export: 70 °F halls) look like °C ones but for their warm background.
WARM_AMBIENT_C = 45.0
#: No thermal camera reads a surface outside this (°C): a pixel there is a sensor fault or an
#: exporter's fill value (NaN, 0 K, 1e6), not a temperature.
SENSOR_RANGE_C = (-100.0, 2000.0)


def frame_to_celsius(frame: np.ndarray, meta: FrameMeta | Mapping | None = None,
                     notes: list[str] | None = None) -> np.ndarray:
    """``float32`` °C from a radiometric frame in any common unit.

    With ``meta`` (``assets.json`` ``frame``: ``unit`` centikelvin | decikelvin | millikelvin |
    kelvin | celsius | fahrenheit, optional ``scale``/``offset`` turning raw counts into the unit,
    e.g. FLIR's ``{"unit": "kelvin", "scale": 0.04}``) the conversion is explicit; without, it is
    inferred from the dtype and the median value (uint16 ~29 000 → centikelvin, ~7 300 → FLIR
    0.04 K counts, ~2 950 → decikelvin; floats ~295 → kelvin, ~22 → °C). With a centi/deci/milli-
    kelvin unit the ``scale`` only restates it (this project's assets.json writes ``0.01``). A
    declared unit that gives an implausible median (outside -50...200 °C: a file written in
    another unit than the site declares) falls back to the inferred one. Pixels that are no
    temperature (NaN, infinite, outside :data:`SENSOR_RANGE_C`: dead pixels, fill values) are read as
    the median of their valid neighbours (:func:`~pipeline.features.dead_pixels.fill_pixels`), and
    ``notes`` gets a line saying how many; a frame without one valid pixel is a
    :class:`ThermalInputError`.

    >>> float(frame_to_celsius(np.full((8, 8), 29515, np.uint16))[0, 0])
    22.0
    >>> float(frame_to_celsius(np.full((8, 8), 22.5, np.float32))[0, 0])
    22.5
    >>> round(float(frame_to_celsius(np.full((8, 8), 7379, np.uint16), {"unit": "kelvin", "scale": 0.04})[0, 0]), 2)
    22.01
    >>> float(frame_to_celsius(np.full((8, 8), 22.5, np.float32), {"unit": "centikelvin"})[0, 0])  # mislabelled
    22.5
    >>> spiked = np.full((8, 8), 22.5, np.float32); spiked[2, 3] = 1e6; notes = []
    >>> float(frame_to_celsius(spiked, notes=notes).max()), notes[0][:40]
    (22.5, '1 of 64 pixels are no temperature (NaN, ')
    """
    meta = meta if isinstance(meta, FrameMeta) else FrameMeta.from_json(meta)
    raw = np.asarray(frame)
    if raw.dtype.kind == "f" and raw.size and not np.isfinite(raw).any():
        raise ThermalInputError("the frame holds no temperature: every pixel is NaN or infinite (check the export)")
    out, inferred = None, False
    if meta.unit or meta.scale is not None or meta.offset is not None:
        out = _to_celsius(frame, meta)
        if not PLAUSIBLE_C[0] <= float(np.nanmedian(out)) <= PLAUSIBLE_C[1]:
            try:
                out, inferred = _to_celsius(frame, FrameMeta()), True
            except ThermalInputError:
                pass
    if out is None:
        out, inferred = _to_celsius(frame, meta), True
    if inferred and notes is not None and raw.dtype.kind == "f" and -60 <= float(np.nanmedian(raw)) <= 180:
        coolest = float(np.nanpercentile(out, 10))
        if coolest > WARM_AMBIENT_C:  # read as °C, but no plant hall is that warm: °F?
            notes.append(f"the frame's values were read as °C (no unit in assets.json); its coolest tenth is "
                         f"{coolest:.0f} °C, warmer than a plant hall: if the camera exported °F, declare "
                         '"frame": {"unit": "fahrenheit"} in assets.json')
    bad = ~np.isfinite(out) | (out < SENSOR_RANGE_C[0]) | (out > SENSOR_RANGE_C[1])
    if bad.any():
        if bad.all():
            raise ThermalInputError("the frame holds no temperature: every pixel is NaN or outside "
                                    f"{SENSOR_RANGE_C[0]:g}...{SENSOR_RANGE_C[1]:g} °C (check the export and its unit)")
        out = fill_pixels(out, bad)
        if notes is not None:
            notes.append(f"{int(bad.sum())} of {bad.size} pixels are no temperature (NaN, or outside "
                         f"{SENSOR_RANGE_C[0]:g}...{SENSOR_RANGE_C[1]:g} °C: dead pixels, fill values): read as "
                         "the median of their neighbours")
    return out


def _to_celsius(frame: np.ndarray, meta: FrameMeta) -> np.ndarray:
    """The conversion of :func:`frame_to_celsius` for one (declared or empty) unit."""
    f = np.asarray(frame)
    if f.ndim == 3 and f.shape[-1] in (1, 3, 4) and f.shape[0] > 4:
        f = f[..., 0]  # single-channel data stored as (H, W, C)
    if f.ndim == 3 and f.shape[0] == 1:
        f = f[0]
    if f.ndim != 2 or min(f.shape) < 8:
        raise ThermalInputError(f"a thermal frame must be 2-D and at least 8x8 pixels, got shape {f.shape}")
    x = f.astype(np.float32)  # NaN pixels stay NaN here: frame_to_celsius counts and fills them
    unit = (meta.unit or "").replace("°", "").replace("degrees_", "").lower()
    counts = unit in ("centikelvin", "ck", "k*100", "kelvin_x100", "decikelvin", "deci_kelvin", "dk",
                      "millikelvin", "mk")
    if not counts and (meta.scale is not None or meta.offset is not None):
        # raw counts: value * scale + offset is in ``unit`` (kelvin or °C; inferred below when absent).
        # For centi/deci/milli-kelvin units the scale only restates the unit (our schema writes 0.01).
        x = x * np.float32(meta.scale if meta.scale is not None else 1.0) + np.float32(meta.offset or 0.0)
    if unit in ("centikelvin", "ck", "k*100", "kelvin_x100"):
        return x * np.float32(0.01) - np.float32(KELVIN)
    if unit in ("decikelvin", "deci_kelvin", "dk"):
        return x * np.float32(0.1) - np.float32(KELVIN)
    if unit in ("millikelvin", "mk"):
        return x * np.float32(0.001) - np.float32(KELVIN)
    if unit in ("kelvin", "k"):
        return x - np.float32(KELVIN)
    if unit in ("celsius", "c", "degc"):
        return x
    if unit in ("fahrenheit", "f", "degf"):
        return (x - np.float32(32.0)) * np.float32(5.0 / 9.0)
    if unit:
        raise ThermalInputError(f"unknown frame unit {meta.unit!r}: use centikelvin, kelvin, celsius, decikelvin")
    med = float(np.nanmedian(x))
    if 18_000 <= med <= 50_000:
        return x * np.float32(0.01) - np.float32(KELVIN)
    if 5_000 <= med <= 12_000 and f.dtype.kind in "ui":
        return x * np.float32(0.04) - np.float32(KELVIN)
    if 1_800 <= med <= 5_000:
        return x * np.float32(0.1) - np.float32(KELVIN)
    if 180 <= med <= 500:
        return x - np.float32(KELVIN)
    if -60 <= med <= 180:
        return x
    raise ThermalInputError(
        f"cannot tell the unit of a frame with median value {med:g} ({f.dtype}): give it in assets.json "
        '("frame": {"unit": "centikelvin" | "kelvin" | "celsius", "scale": ..., "offset": ...})')


def scaled_regions(profile: AssetProfile, shape: tuple[int, int]) -> dict[str, tuple[int, int, int, int]]:
    """Region boxes in the pixels of a frame of ``shape`` (height, width), clipped to it: scaled
    from the declared frame size, or from fractions of the frame (``regions_relative``).

    >>> scaled_regions(AssetProfile(regions={"motor_body": (0.25, 0.3, 0.75, 0.7)}, regions_relative=True), (120, 160))
    {'motor_body': (40, 36, 120, 84)}
    """
    h, w = shape
    sx = w / profile.frame.width if profile.frame.width else 1.0
    sy = h / profile.frame.height if profile.frame.height else 1.0
    if profile.regions_relative:
        sx, sy = float(w), float(h)
    out = {}
    for name, (x0, y0, x1, y1) in profile.regions.items():
        bx0, bx1 = int(np.clip(np.floor(x0 * sx), 0, w - 1)), int(np.clip(np.ceil(x1 * sx), 1, w))
        by0, by1 = int(np.clip(np.floor(y0 * sy), 0, h - 1)), int(np.clip(np.ceil(y1 * sy), 1, h))
        if bx1 > bx0 and by1 > by0:
            out[name] = (bx0, by0, bx1, by1)
    return out


#: The part of the frame the ambient and the frame-wide values are read in: the machine's boxes and
#: this much of their extent again on every side (a second machine beside it stays outside).
ROI_MARGIN = 0.5


def machine_roi(boxes: Mapping[str, tuple[int, int, int, int]], shape: tuple[int, int],
                margin: float = ROI_MARGIN) -> tuple[int, int, int, int]:
    """``(x0, y0, x1, y1)`` around every box, ``margin`` × their extent wider on each side, clipped
    to the frame (the whole frame without boxes).

    >>> machine_roi({"motor_body": (40, 40, 60, 50)}, (120, 160))
    (30, 35, 70, 55)
    """
    h, w = shape
    if not boxes:
        return 0, 0, w, h
    x0, y0 = min(b[0] for b in boxes.values()), min(b[1] for b in boxes.values())
    x1, y1 = max(b[2] for b in boxes.values()), max(b[3] for b in boxes.values())
    mx, my = round(margin * (x1 - x0)), round(margin * (y1 - y0))
    return max(x0 - mx, 0), max(y0 - my, 0), min(x1 + mx, w), min(y1 + my, h)


def ambient_estimate(frame_c: np.ndarray, boxes: Mapping[str, tuple[int, int, int, int]]) -> float:
    """Median of the background (outside every region, with a margin); the 10th percentile of the
    frame when the background is too small or no regions are known."""
    h, w = frame_c.shape
    if boxes:
        mask = np.ones((h, w), bool)
        margin = max(1, round(0.02 * max(h, w)))
        for x0, y0, x1, y1 in boxes.values():
            mask[max(y0 - margin, 0):y1 + margin, max(x0 - margin, 0):x1 + margin] = False
        if mask.mean() >= MIN_BACKGROUND_FRAC:
            return float(np.median(frame_c[mask]))
    return float(np.percentile(frame_c, AMBIENT_FALLBACK_PERCENTILE))


def _region_stats(patch: np.ndarray, ambient: float) -> list[float]:
    p50, p90 = np.percentile(patch, (50.0, 90.0))
    top = float(patch.max())
    return [1.0, float(patch.mean()) - ambient, float(p90) - ambient, top - ambient, top - float(p50),
            float(patch.std())]


def body_axis(boxes: Mapping[str, tuple[int, int, int, int]], profile: AssetProfile) -> tuple[bool, bool] | None:
    """``(vertical, drive end at the far end)`` of the motor body's axis, or ``None`` when the ends are
    unknown: the axis runs from the NDE to the DE housing, or from the body to the DE housing; without
    housings ``fan_side`` says which way round. The far end is the right (horizontal) or the bottom
    (vertical) one.

    >>> body_axis({"motor_body": (0, 0, 30, 10), "de_bearing": (30, 2, 34, 8)}, AssetProfile("M"))
    (False, True)
    >>> body_axis({"motor_body": (0, 0, 30, 10)}, AssetProfile("M", fan_side="right")), body_axis({}, AssetProfile("M"))
    ((False, False), None)
    """
    body = boxes.get("motor_body")
    if body is None:
        return None

    def centre(box: tuple[int, int, int, int]) -> tuple[float, float]:
        return (box[0] + box[2]) / 2.0, (box[1] + box[3]) / 2.0

    de, nde = boxes.get("de_bearing"), boxes.get("nde_bearing")
    if de is not None:
        (ex, ey), (fx, fy) = centre(de), centre(nde) if nde is not None else centre(body)
        vertical = abs(ey - fy) > abs(ex - fx)
        return vertical, (ey > fy) if vertical else (ex > fx)  # the drive end lies down / right of the fan end
    if profile.fan_side in ("left", "right", "top", "bottom"):
        return profile.fan_side in ("top", "bottom"), profile.fan_side in ("left", "top")
    return None


def _axial_gradient(frame_c: np.ndarray, boxes: Mapping[str, tuple[int, int, int, int]],
                    profile: AssetProfile) -> tuple[float, bool]:
    """Drive-end third minus fan-end third of the motor body along the machine's axis (0, False when
    the ends are unknown). The axis runs from the NDE to the DE housing, or from the body to the DE
    housing: across the frame for a horizontal machine, up or down it for a vertical one (or a camera
    mounted in portrait); without housings ``fan_side`` (``left`` / ``right``, ``top`` / ``bottom``)
    says which way round.

    >>> frame = np.zeros((40, 40), np.float32); frame[5:35, 15:25] = np.linspace(30, 40, 30)[:, None]
    >>> body, de = (15, 5, 25, 35), (16, 35, 24, 39)           # a vertical motor, drive end down
    >>> round(_axial_gradient(frame, {"motor_body": body, "de_bearing": de}, AssetProfile("M"))[0], 2)
    6.9
    >>> round(_axial_gradient(np.rot90(frame).copy(), {"motor_body": (5, 15, 35, 25)}, AssetProfile("M", fan_side="left"))[0], 2)
    6.9
    """
    body = boxes.get("motor_body")
    axis = body_axis(boxes, profile)
    if body is None or axis is None:
        return 0.0, False
    x0, y0, x1, y1 = body
    vertical, de_far = axis
    if vertical:
        third = max((y1 - y0) // 3, 1)
        near, far = frame_c[y0:y0 + third, x0:x1].mean(), frame_c[y1 - third:y1, x0:x1].mean()
    else:
        third = max((x1 - x0) // 3, 1)
        near, far = frame_c[y0:y1, x0:x0 + third].mean(), frame_c[y0:y1, x1 - third:x1].mean()
    return float(far - near if de_far else near - far), True


def thermal_vector(frame: np.ndarray, asset: object = None, baseline: np.ndarray | None = None,
                   frame_meta: FrameMeta | Mapping | None = None, fit: bool | None = None) -> np.ndarray:
    """``float32`` model input of one frame (names :data:`THERMAL_VECTOR_NAMES`).

    ``frame``: any radiometric frame (see :func:`frame_to_celsius`; ``frame_meta`` defaults to the
    asset profile's ``frame``); ``asset``: profile / ``assets.json`` entry / ``AssetInfo`` giving
    ``regions``; ``baseline``: the asset's running baseline frame in the same unit (or None);
    ``fit``: register / propose region boxes (default: the profile's ``region_fit``, on).
    """
    return thermal_vector_fit(frame, asset, baseline, frame_meta, fit)[0]


def thermal_vector_fit(frame: np.ndarray, asset: object = None, baseline: np.ndarray | None = None,
                       frame_meta: FrameMeta | Mapping | None = None, fit: bool | None = None,
                       baseline_boxes: Mapping[str, tuple[int, int, int, int]] | None = None,
                       baseline_rise_ratio: float | None = None) -> tuple[np.ndarray, RegionFit]:
    """:func:`thermal_vector` and the :class:`~pipeline.features.thermal_fit.RegionFit` it read
    the frame with (``status`` ``registered`` / ``proposed`` deserve a warning to the user).

    ``baseline_boxes``: the region boxes of ``baseline`` when it was not taken by the same fixed
    camera (a reference frame of a handheld camera: its own fitted boxes, any frame size); by
    default the baseline is read in the frame's boxes and must have the frame's shape.
    ``baseline_rise_ratio``: a baseline taken at another operating point of the motor (a healthy reference
    at another load): the rise of its :data:`LOAD_SCALED_REGIONS` over its own ambient is read times this
    ratio (:func:`pipeline.features.thermal_load.body_rise_ratio`), as it would have been at this frame's.

    Raises :class:`ThermalInputError` for a frame that cannot be read (an unknown unit ...) or
    shows nothing (no contrast: :mod:`pipeline.features.frame_contrast`)."""
    profile = as_profile(asset)
    meta = frame_meta if frame_meta is not None else profile.frame
    frame_c = frame_to_celsius(frame, meta)
    blank = no_contrast_detail(frame_c)
    if blank is not None:  # scored, it would read as a healthy machine
        raise ThermalInputError(blank)
    region_fit = fit_regions(frame_c, scaled_regions(profile, frame_c.shape), profile.asset_type, profile.fan_side,
                             enabled=profile.region_fit if fit is None else fit)
    boxes = region_fit.boxes
    rx0, ry0, rx1, ry1 = machine_roi(boxes, frame_c.shape)
    around = frame_c[ry0:ry1, rx0:rx1]  # the machine and its surroundings: not a neighbour in the same frame
    local = {k: (x0 - rx0, y0 - ry0, x1 - rx0, y1 - ry0) for k, (x0, y0, x1, y1) in boxes.items()}
    ambient = ambient_estimate(around, local)
    stats: dict[str, list[float]] = {}
    for name in REGIONS:
        box = boxes.get(name)
        if box is None:
            stats[name] = [0.0] * len(REGION_STATS)
            continue
        x0, y0, x1, y1 = box
        stats[name] = _region_stats(frame_c[y0:y1, x0:x1], ambient)
    out: list[float] = [v for name in REGIONS for v in stats[name]]

    def mean(r: str) -> float:
        return stats[r][1]

    def top(r: str) -> float:
        return stats[r][3]

    def has(*rs: str) -> bool:
        return all(stats[r][0] > 0 for r in rs)

    axial, oriented = _axial_gradient(frame_c, boxes, profile)
    rel = [
        top("de_bearing") - top("nde_bearing") if has("de_bearing", "nde_bearing") else 0.0,
        top("de_bearing") - mean("motor_body") if has("de_bearing", "motor_body") else 0.0,
        top("nde_bearing") - mean("motor_body") if has("nde_bearing", "motor_body") else 0.0,
        mean("coupling") - mean("motor_body") if has("coupling", "motor_body") else 0.0,
        top("terminal_box") - mean("motor_body") if has("terminal_box", "motor_body") else 0.0,
        axial,
        mean("pump_inlet") - mean("driven") if has("pump_inlet", "driven") else 0.0,
        mean("driven") - mean("motor_body") if has("driven", "motor_body") else 0.0,
    ]
    body = abs(mean("motor_body")) + 2.0 if has("motor_body") else 0.0
    ratios = [0.0] * len(RATIOS)
    if body:
        ratios = [rel[1] / body, rel[2] / body, stats["terminal_box"][4] / body, rel[3] / body, axial / body]
    flat = around.ravel()
    p99 = float(np.percentile(flat, 99.0))
    hot = around > ambient + HOT_DELTA_K
    inside = np.zeros(around.shape, bool)
    for x0, y0, x1, y1 in local.values():  # inside the ROI by construction: no negative coordinates
        inside[y0:y1, x0:x1] = True
    glob = [ambient / 40.0, float(flat.max()) - ambient, p99 - ambient, float(hot.mean()),
            float((hot & ~inside).mean()), float(bool(boxes)), float(oriented)]
    base = [0.0] * len(BASELINE)
    if baseline is not None and (baseline_boxes is not None or np.shape(baseline) == np.shape(frame)):
        base_c = frame_to_celsius(baseline, meta)
        then_boxes = boxes if baseline_boxes is None else baseline_boxes
        then_ambient = ambient_estimate(base_c, then_boxes) if baseline_rise_ratio is not None else 0.0
        base = [1.0]
        for name, how in (("motor_body", "mean"), ("de_bearing", "max"), ("nde_bearing", "max"),
                          ("terminal_box", "max"), ("coupling", "mean"), ("pump_inlet", "mean")):
            box, then_box = boxes.get(name), then_boxes.get(name)
            if box is None or then_box is None:
                base.append(0.0)
                continue
            x0, y0, x1, y1 = box
            u0, v0, u1, v1 = then_box
            now, then = frame_c[y0:y1, x0:x1], base_c[v0:v1, u0:u1]
            if now.size == 0 or then.size == 0:
                base.append(0.0)
                continue
            then_level = float(then.max() if how == "max" else then.mean())
            delta = float(now.max() if how == "max" else now.mean()) - then_level
            if baseline_rise_ratio is not None and name in LOAD_SCALED_REGIONS:
                delta += (1.0 - baseline_rise_ratio) * max(0.0, then_level - then_ambient)
            base.append(delta)
    vec = np.asarray(out + rel + ratios + glob + base, dtype=np.float64)
    return np.nan_to_num(vec, nan=0.0, posinf=0.0, neginf=0.0).astype(np.float32), region_fit
