"""What the feature code needs to know about one machine, parsed once from an ``assets.json`` entry.

The physics-normalised model inputs (:mod:`pipeline.features.audio_physics`,
:mod:`pipeline.features.thermal_regions`, :mod:`pipeline.features.plc_physics`) are relative to
the machine itself: shaft orders instead of hertz, current over rated current, region
temperatures over the frame's ambient. :class:`AssetProfile` gathers those parameters from an
asset entry and tolerates the variants other tools write (documented for users in
``docs/simulator.md``, "assets.json"):

* speed: ``nominal_shaft_hz`` | ``nominal_rpm`` / ``rated_rpm`` / ``speed_rpm`` / ``rpm`` |
  ``sync_rpm`` | ``poles`` + ``line_frequency_hz`` (entry or file level); a variable-speed
  drive is ``"vfd": true`` or ``"drive": "vfd"``, optionally with ``speed_range_hz`` /
  ``speed_range_rpm`` ``[min, max]``;
* bearing: ``bearing_orders`` (multiples of shaft speed), else the geometry in ``bearing``
  (``n_elements`` | ``n_balls`` | ``balls``, ``ball_d_mm`` | ``ball_diameter_mm``,
  ``pitch_d_mm`` | ``pitch_diameter_mm``, ``contact_angle_deg``), else a known
  ``designation`` (6205 ...), else ``bearing_frequencies_hz`` divided by the nominal speed;
* rated current: ``rated_current_a`` (or ``nominal_current_a`` ...), else estimated from the
  rated power (``rated_power_kw`` | ``power_kw`` | ``rated_power_hp``) and the voltage
  (``rated_voltage_v``, else 400 V at 50 Hz / 460 V at 60 Hz) with a typical power factor x
  efficiency of :data:`TYPICAL_PF_EFFICIENCY` (``rated_current_estimated`` says so);
* everything else is optional: ``resonance_band_hz``,
  ``pressure_nominal_bar``, ``vibration_normal_mm_s`` (the machine's normal vibration velocity RMS
  when healthy, e.g. from its acceptance test or condition-monitoring history; alias
  ``normal_vibration_mm_s``, or ``vibration_normal_in_s`` in in/s), ``load_profile``, ``regions`` (``{name: [x0, y0, x1, y1]}``, x1/y1
  exclusive, in the pixels of the frame size given by the file's ``frame`` section),
  ``fan_side`` (``left`` / ``right``; ``top`` / ``bottom`` for an upright machine), ``asset_type``, ``region_fit`` (entry or file level; ``false`` keeps the
  regions exactly as given: no registration or proposal, :mod:`pipeline.features.thermal_fit`);
* ``reciprocating``: a machine whose normal running knocks in step with the shaft (valves, a
  crank: piston compressors, plunger pumps, piston engines): ``true`` / ``false``, else inferred
  from an ``asset_type`` that names one (:data:`RECIPROCATING_WORDS`). Its audio withholds bearing
  wear (:mod:`models.withheld_classes`).

>>> p = AssetProfile.from_entry({"asset_id": "M-1", "poles": 4, "line_frequency_hz": 60,
...                              "bearing": {"designation": "6205"}})
>>> round(p.nominal_shaft_hz, 2), round(p.bearing_orders["bpfo"], 3), p.vfd
(29.1, 3.585, False)
>>> [round(f, 1) for f in AssetProfile.from_entry({"id": "X", "nominal_rpm": 1480, "vfd": True}).speed_search_hz()]
[11.1, 29.6]
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pipeline.features.region_boxes import parse_regions

#: Approximate geometry of common motor bearings: designation -> (n, ball d, pitch D mm, contact angle).
#: The larger 63xx (since 2026-12-06): eight balls growing by 1/16 inch a size, the pitch circle
#: midway between bore and outside diameter (ISO 15); 6312, 6314 and 6316 as both independent bench
#: generators give them (``bench/bench_foreign_fleet.py``, ``bench/bench_blind_fleet.py``).
KNOWN_BEARINGS: dict[str, tuple[int, float, float, float]] = {
    "6202": (8, 5.95, 25.0, 0.0), "6203": (8, 6.75, 28.5, 0.0), "6204": (8, 7.94, 33.5, 0.0),
    "6205": (9, 7.94, 39.04, 0.0), "6206": (9, 9.53, 46.0, 0.0), "6207": (9, 11.11, 53.5, 0.0),
    "6208": (9, 11.91, 60.0, 0.0), "6209": (10, 11.91, 65.0, 0.0), "6210": (10, 12.7, 70.0, 0.0),
    "6305": (8, 10.32, 44.5, 0.0), "6306": (8, 11.51, 53.0, 0.0), "6307": (8, 13.49, 58.5, 0.0),
    "6308": (8, 15.08, 65.0, 0.0), "6309": (8, 17.46, 72.5, 0.0), "6310": (8, 19.05, 80.0, 0.0),
    "6311": (8, 20.64, 87.5, 0.0), "6312": (8, 22.23, 95.0, 0.0), "6313": (8, 23.81, 102.5, 0.0),
    "6314": (8, 25.4, 110.0, 0.0), "6315": (8, 26.99, 117.5, 0.0), "6316": (8, 28.58, 125.0, 0.0),
    "7306B": (10, 15.88, 52.5, 40.0),
}
ORDER_KEYS: tuple[str, ...] = ("bpfo", "bpfi", "bsf", "ftf")
#: Assumed full-load slip when only the synchronous speed is known.
DEFAULT_SLIP = 0.03
DEFAULT_LINE_HZ = 50.0
#: Without a drive range, a VFD-run machine is searched between these fractions of nameplate speed.
VFD_SPEED_FRACTIONS = (0.45, 1.2)
#: A direct-on-line machine is searched between these fractions of nameplate speed (the speed estimate's
#: confidence is read over them); where its synchronous speed is known, the speed is picked inside its
#: slip window (:meth:`AssetProfile.slip_window_hz`).
FIXED_SPEED_FRACTIONS = (0.9, 1.06)
#: The most a nameplate's full-load speed lies below its synchronous speed (small motors slip most): a
#: nameplate speed more than this below every synchronous speed of its supply gives no synchronous speed.
MAX_NAMEPLATE_SLIP = 0.08
#: A direct-on-line induction motor slips in proportion to its load: at most this many times its rated
#: slip (an overload of up to 1.5x rated torque).
OVERLOAD_SLIP_FACTOR = 1.5
#: The most a direct-on-line motor slips where its rated slip is not known (no nameplate speed).
UNKNOWN_MAX_SLIP = 0.06
#: How far the mains frequency strays from its nominal value (EN 50160: +-1 % for 99.5 % of a year).
MAINS_TOLERANCE = 0.01
SPEED_LIMITS_HZ = (4.0, 80.0)
#: The audio message's ``stats`` key that carries :attr:`AssetProfile.reciprocating` (1.0 / 0.0).
RECIPROCATING_STAT = "reciprocating"
#: The PLC message's ``stats`` key: 1.0 for a reciprocating machine whose normal vibration level is not
#: known (neither ``vibration_normal_mm_s`` nor learnt): its healthy level (4-8 mm/s, ISO 10816-6) reads
#: as imbalance on the scale the PLC model learnt, so its readers withhold imbalance.
RECIPROCATING_LEVEL_UNKNOWN_STAT = "reciprocating_level_unknown"
#: Words of an ``asset_type`` that name a reciprocating machine (lower case; "piston" alone would
#: take in axial-piston hydraulic pumps, which do not knock, so it needs a compressor or engine).
RECIPROCATING_WORDS: tuple[str, ...] = ("reciprocating", "plunger", "triplex", "piston compressor",
                                        "piston air compressor", "piston engine", "diesel engine", "gas engine")


def bearing_orders_from_geometry(n: int, ball_d: float, pitch_d: float, contact_deg: float = 0.0) -> dict[str, float]:
    """Defect frequencies as multiples of shaft speed (stationary outer race).

    >>> {k: round(v, 3) for k, v in bearing_orders_from_geometry(9, 7.94, 39.04).items()}
    {'bpfo': 3.585, 'bpfi': 5.415, 'bsf': 2.357, 'ftf': 0.398}
    """
    r = ball_d / pitch_d * math.cos(math.radians(contact_deg))
    return {"bpfo": n / 2.0 * (1.0 - r), "bpfi": n / 2.0 * (1.0 + r),
            "bsf": pitch_d / (2.0 * ball_d) * (1.0 - r * r), "ftf": 0.5 * (1.0 - r)}


_LEADING_NUMBER = re.compile(r"^\s*([-+]?(?:\d[\d,.]*|\.\d+)(?:[eE][-+]?\d+)?)")


def _number(value: Any) -> float | None:
    """A number, or the number a string starts with as users write it: ``"1480 rpm"``, ``"1,480"``
    (a comma before exactly three digits groups thousands), ``"7,5 kW"`` (else a decimal comma),
    ``"1.480,5"`` (dots grouping thousands before a decimal comma, as German nameplates write it).
    A lone ``"1.480"`` stays 1.48: the dot is a decimal point there as everywhere else.

    >>> [_number(v) for v in (1480, "1480 rpm", "1,480", "7,5 kW", "0.25 in/s", "n/a", True)]
    [1480.0, 1480.0, 1480.0, 7.5, 0.25, None, None]
    >>> [_number(v) for v in ("1.480,5 U/min", "2.950,0", "1.480", "1.2.3,4")]
    [1480.5, 2950.0, 1.48, None]
    """
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str):
        match = _LEADING_NUMBER.match(value)
        if match is None:
            return None
        text = match.group(1)
        if re.fullmatch(r"[-+]?\d{1,3}(\.\d{3})+,\d*", text):  # 1.480,5: dots group thousands
            text = text.replace(".", "").replace(",", ".")
        elif "," in text:
            text = text.replace(",", "") if re.fullmatch(r"[-+]?\d{1,3}(,\d{3})+(\.\d*)?", text) else \
                text.replace(",", ".", 1) if text.count(",") == 1 and "." not in text else ""
        value = text
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def _num(entry: Mapping[str, Any], *keys: str) -> float | None:
    for key in keys:
        out = _number(entry.get(key))
        if out is not None:
            return out
    return None


def _positive(value: float | None) -> float | None:
    return value if value is not None and value > 0 else None


def known_bearing(designation: str) -> tuple[int, float, float, float] | None:
    """The :data:`KNOWN_BEARINGS` geometry named in a designation as catalogues and nameplates
    write it: a maker before it, suffixes after it (``SKF 6205-2RS1``, ``6308 2Z C3``, ``FAG 7306-B``).

    >>> known_bearing("SKF 6205-2RS1") == KNOWN_BEARINGS["6205"], known_bearing("16205"), known_bearing("FAG 7306-B")[0]
    (True, None, 10)
    >>> known_bearing("7306 C3 bearing"), known_bearing("6308 2Z C3") == KNOWN_BEARINGS["6308"]
    (None, True)
    >>> round(bearing_orders_from_geometry(*known_bearing("SKF 6312-2Z/C3"))["bpfo"], 2)  # 8 balls, d / D 0.234
    3.06
    """
    text = designation.strip().upper()
    for name, geometry in KNOWN_BEARINGS.items():
        # a contact-angle letter may stand apart (7306B, 7306-B, 7306 B); a plain 7306 is another bearing
        tail = rf"[\s-]?{name[-1]}(?![A-Z])" if name[-1].isalpha() else r"(?![0-9])"
        core = name[:-1] if name[-1].isalpha() else name
        if re.search(rf"(?<![0-9A-Z]){core}{tail}", text):
            return geometry
    return None


def _vibration_normal(entry: Mapping[str, Any]) -> float | None:
    """``vibration_normal_mm_s`` (or ``normal_vibration_mm_s``), else ``vibration_normal_in_s`` in inches per
    second (US condition-monitoring reports) converted to mm/s.

    >>> _vibration_normal({"vibration_normal_mm_s": 6.0}), _vibration_normal({"vibration_normal_in_s": 0.25})
    (6.0, 6.35)
    """
    mm_s = _positive(_num(entry, "vibration_normal_mm_s", "normal_vibration_mm_s"))
    in_s = _positive(_num(entry, "vibration_normal_in_s", "normal_vibration_in_s"))
    return mm_s if mm_s is not None else (round(in_s * 25.4, 4) if in_s is not None else None)


def _pair(value: Any) -> tuple[float, float] | None:
    try:
        lo, hi = float(value[0]), float(value[1])
    except (TypeError, ValueError, IndexError, KeyError):
        return None
    return (min(lo, hi), max(lo, hi)) if math.isfinite(lo) and math.isfinite(hi) and hi > 0 else None


def _orders(entry: Mapping[str, Any], nominal_hz: float | None) -> dict[str, float]:
    raw = entry.get("bearing_orders")
    if isinstance(raw, Mapping):
        out = {k: float(raw[k]) for k in ORDER_KEYS if isinstance(raw.get(k), (int, float)) and raw[k] > 0}
        if out:
            return out
    bearing = entry.get("bearing")
    if bearing is None:  # per end: the drive end's (the one nearer the load) first
        ends = entry.get("bearings")
        if isinstance(ends, Mapping):
            bearing = next((ends[k] for k in ("de", "drive_end", "de_bearing", "nde", "non_drive_end", "nde_bearing")
                            if ends.get(k)), None)
        bearing = bearing or entry.get("de_bearing") or entry.get("bearing_de") or entry.get("nde_bearing")
    if isinstance(bearing, Mapping):
        n = _num(bearing, "n_elements", "n_balls", "balls", "rolling_elements", "z")
        d = _num(bearing, "ball_d_mm", "ball_diameter_mm", "ball_diameter", "d_mm")
        pitch = _num(bearing, "pitch_d_mm", "pitch_diameter_mm", "pitch_diameter", "D_mm")
        angle = _num(bearing, "contact_angle_deg", "contact_angle") or 0.0
        if n and d and pitch and pitch > d > 0:
            return bearing_orders_from_geometry(round(n), d, pitch, angle)
        designation = str(next((bearing[k] for k in ("designation", "type", "model", "part_number", "name", "code")
                                if bearing.get(k)), "")).strip().upper()
    else:
        designation = str(bearing or entry.get("bearing_designation") or "").strip().upper()
    if (geometry := known_bearing(designation)) is not None:
        return bearing_orders_from_geometry(*geometry)
    freqs = entry.get("bearing_frequencies_hz")
    if isinstance(freqs, Mapping) and nominal_hz:
        return {k: float(freqs[k]) / nominal_hz for k in ORDER_KEYS
                if isinstance(freqs.get(k), (int, float)) and freqs[k] > 0}
    return {}


#: Keys under which an ``assets.json`` entry describes its bearing (:func:`_orders` reads them).
BEARING_KEYS: tuple[str, ...] = ("bearing_orders", "bearing", "bearings", "bearing_designation", "de_bearing",
                                 "bearing_de", "nde_bearing", "bearing_frequencies_hz")


def _bearing_note(entry: Mapping[str, Any], nominal_hz: float | None, orders: Mapping[str, float]) -> str | None:
    """What to tell a user whose entry describes a bearing that gave no fault orders (None when it gave
    them, or when it describes none): audio then reads the machine with a blind comb.

    >>> _bearing_note({"bearing": {"designation": "NU214"}}, 25.0, {})[:60]
    'the bearing of assets.json ({"bearing": {"designation": "NU2'
    >>> _bearing_note({"bearing_frequencies_hz": {"bpfo": 90.0}}, None, {})[:58]
    'bearing_frequencies_hz of assets.json need the nameplate s'
    >>> _bearing_note({"bearing": "6205"}, 25.0, {"bpfo": 3.6}) is None, _bearing_note({}, 25.0, {}) is None
    (True, True)
    """
    if orders:
        return None
    described = {k: entry[k] for k in BEARING_KEYS if entry.get(k)}
    if not described:
        return None
    if entry.get("bearing_frequencies_hz") and not nominal_hz:
        return ("bearing_frequencies_hz of assets.json need the nameplate speed (nominal_rpm, or poles and "
                "line_frequency_hz) to become fault orders; without them audio reads the machine with a blind comb")
    text = json.dumps(described, default=str)
    return (f"the bearing of assets.json ({text[:160]}{' ...' if len(text) > 160 else ''}) gave no fault orders: "
            f"the designations linewatch knows are {', '.join(KNOWN_BEARINGS)}; give the bearing's geometry "
            "(n_balls, ball_d_mm, pitch_d_mm, contact_angle_deg) or the maker's fault frequencies (bearing_orders, "
            "or bearing_frequencies_hz with the nameplate speed). Until then audio reads it with a blind comb, "
            "which finds a fault less surely than the bearing's own orders")


#: The machine parts the thermal vector reads (``pipeline.features.thermal_regions.REGIONS``).
REGION_NAMES: tuple[str, ...] = ("motor_body", "de_bearing", "nde_bearing", "terminal_box", "coupling", "driven",
                                 "pump_inlet")
#: Region names as users write them (lower case, words joined by ``_``) → :data:`REGION_NAMES`.
#: ``fan`` is left out on purpose: on a pump it is the motor's cooling fan, on a fan the driven machine.
REGION_ALIASES: dict[str, str] = {
    **{a: "motor_body" for a in ("motor", "body", "motor_frame", "motor_housing", "motor_casing", "stator",
                                 "motor_shell")},
    **{a: "de_bearing" for a in ("de", "de_brg", "brg_de", "bearing_de", "de_housing", "de_bearing_housing",
                                 "drive_end", "drive_end_bearing", "motor_de_bearing", "de_end_bearing")},
    **{a: "nde_bearing" for a in ("nde", "nde_brg", "brg_nde", "bearing_nde", "nde_housing", "nde_bearing_housing",
                                  "non_drive_end", "non_drive_end_bearing", "nondrive_end_bearing", "ode",
                                  "ode_bearing", "opposite_drive_end_bearing", "fan_end_bearing", "fe_bearing",
                                  "motor_nde_bearing")},
    **{a: "terminal_box" for a in ("terminal", "terminals", "tb", "junction_box", "jb", "conduit_box",
                                   "connection_box", "terminal_housing", "motor_terminal_box")},
    **{a: "coupling" for a in ("coupling_guard", "coupler", "shaft_coupling")},
    **{a: "driven" for a in ("driven_machine", "driven_equipment", "driven_end", "load", "pump", "pump_casing",
                             "pump_body", "compressor", "gearbox", "gear_box", "blower")},
    **{a: "pump_inlet" for a in ("inlet", "suction", "pump_suction", "suction_flange", "inlet_flange",
                                 "suction_pipe", "suction_nozzle")},
}


def region_name(name: str) -> str | None:
    """The thermal vector's name of a region as a user wrote it, None for a part it does not read.

    >>> region_name("Motor Body"), region_name("DE-Bearing"), region_name("junction box"), region_name("lamp")
    ('motor_body', 'de_bearing', 'terminal_box', None)
    """
    key = "_".join("".join(c if c.isalnum() else " " for c in str(name).lower()).split())
    return key if key in REGION_NAMES else REGION_ALIASES.get(key)


def unknown_regions_note(names: tuple[str, ...]) -> str:
    """What to tell a user whose ``regions`` hold names that are no part the thermal vector reads.

    >>> unknown_regions_note(("lamp",))[:40]
    'regions lamp of assets.json are no part '
    """
    return (f"regions {', '.join(names)} of assets.json are no part the thermal model reads (it reads "
            f"{', '.join(REGION_NAMES)}; other names for them are accepted, e.g. motor, drive_end_bearing, "
            "junction_box): they only mask the background; rename them if they are one of those parts")


def _camera(entry: Mapping[str, Any]) -> Mapping[str, Any]:
    """The entry's camera section, where a tool nests what concerns the thermal camera (``camera``,
    ``thermal`` or ``thermal_camera``: ``regions``, ``frame``, ``region_fit``), else ``{}``.

    >>> _camera({"camera": {"regions": {"motor": [1, 2, 3, 4]}}})["regions"], _camera({"thermal": "FLIR A50"})
    ({'motor': [1, 2, 3, 4]}, {})
    """
    for key in ("camera", "thermal", "thermal_camera"):
        if isinstance(entry.get(key), Mapping):
            return entry[key]
    return {}


def _regions(entry: Mapping[str, Any]) -> tuple[dict[str, tuple[float, float, float, float]], tuple[str, ...], bool,
                                                tuple[str, ...]]:
    """``(boxes, unknown names, relative, unreadable)`` of an entry's ``regions``: each box under its
    :func:`region_name` (a part the thermal vector does not read keeps its own name: it still
    masks the background), the names that are not parts, whether every coordinate lies in 0..1
    (fractions of the frame's width and height, not pixels), and the boxes not read with why
    (:mod:`pipeline.features.region_boxes`: the forms other tools write are read).

    >>> _regions({"regions": {"Motor": [10, 20, 50, 40], "lamp": {"x": 0, "y": 0, "w": 5, "h": 5}}})
    ({'motor_body': (10.0, 20.0, 50.0, 40.0), 'lamp': (0.0, 0.0, 5.0, 5.0)}, ('lamp',), False, ())
    >>> _regions({"regions": {"motor_body": [0.25, 0.3, 0.75, 0.7]}})[2]
    True
    """
    camera = _camera(entry)
    boxes, unreadable = parse_regions(entry.get("regions") or entry.get("thermal_regions") or camera.get("regions")
                                      or {})
    out: dict[str, tuple[float, float, float, float]] = {}
    unknown: list[str] = []
    for name, box in boxes.items():
        part = region_name(name)
        if part is None:
            unknown.append(name)
            part = name
        if part in out and name != part:  # "motor" beside "motor_body": the exact name wins
            continue
        out[part] = box
    relative = bool(out) and all(0.0 <= v <= 1.0 for b in out.values() for v in b)
    return out, tuple(unknown), relative, unreadable


@dataclass(frozen=True)
class FrameMeta:
    """The thermal frame format of a site (``assets.json`` ``frame``); every field optional.

    ``unit``: ``centikelvin`` (default of this project), ``kelvin``, ``celsius``, ``deci_kelvin``;
    ``scale``/``offset``: value × scale + offset = the unit's value (e.g. FLIR's 0.04 K counts:
    ``{"unit": "kelvin", "scale": 0.04}``).
    """

    width: int | None = None
    height: int | None = None
    unit: str | None = None
    scale: float | None = None
    offset: float | None = None

    @classmethod
    def from_json(cls, raw: Any) -> FrameMeta:
        if not isinstance(raw, Mapping):
            return cls()
        width = _num(raw, "width", "w", "cols")
        height = _num(raw, "height", "h", "rows")
        unit = raw.get("unit") or raw.get("units")
        return cls(int(width) if width else None, int(height) if height else None,
                   str(unit).lower() if unit else None, _num(raw, "scale"), _num(raw, "offset"))


#: Power factor x efficiency of an induction motor at rated load (typically 0.8-0.9 x 0.85-0.95).
TYPICAL_PF_EFFICIENCY = 0.76


def _rated_kw(entry: Mapping[str, Any]) -> float | None:
    """Rated mechanical power in kW (``rated_power_kw`` / ``power_kw`` / ``kw``, or horsepower)."""
    kw = _num(entry, "rated_power_kw", "power_kw", "kw", "motor_kw")
    if kw is None and (hp := _num(entry, "rated_power_hp", "power_hp", "hp")) is not None:
        kw = hp * 0.7457
    return kw if kw is not None and kw > 0 else None


@dataclass(frozen=True)
class AssetProfile:
    """Per-machine parameters of the feature code (all optional but the id)."""

    asset_id: str = ""
    asset_type: str = "unknown"
    nominal_shaft_hz: float | None = None
    speed_range_hz: tuple[float, float] | None = None
    vfd: bool = False
    line_frequency_hz: float | None = None
    poles: int | None = None
    #: The motor's synchronous speed in shaft Hz (``sync_rpm``, else its supply over pole pairs, else the
    #: synchronous speed just above the nameplate speed: :func:`synchronous_shaft_hz`).
    sync_shaft_hz: float | None = None
    #: The nameplate's full-load slip (1 - nameplate speed / synchronous speed), where both are known.
    rated_slip: float | None = None
    bearing_orders: Mapping[str, float] = field(default_factory=dict)
    resonance_band_hz: tuple[float, float] | None = None
    rated_current_a: float | None = None
    rated_current_estimated: bool = False
    nominal_rpm: float | None = None
    pressure_nominal_bar: float | None = None
    #: True when ``pressure_nominal_bar`` was learned by the job (:mod:`pipeline.features.plc_baseline`),
    #: not read from ``assets.json``.
    pressure_nominal_learned: bool = False
    #: The machine's normal vibration velocity RMS (mm/s) when healthy: ``vibration_normal_mm_s`` in
    #: assets.json, else learned from its own healthy windows (:mod:`pipeline.features.plc_baseline`,
    #: ``linewatch inspect --healthy-plc``); the PLC model reads vibration relative to it where it is above
    #: the training fleet's or below a typical machine's (:func:`pipeline.features.plc_physics.vibration_scale`).
    vibration_normal_mm_s: float | None = None
    #: True when ``vibration_normal_mm_s`` was learned, not read from ``assets.json``.
    vibration_normal_learned: bool = False
    #: How warm the winding runs when the machine is healthy: its winding-over-bearing temperature per unit
    #: of load heat, in K at rated current (:func:`pipeline.features.plc_baseline.winding_ratio`), learned
    #: from its own healthy windows by the job or from ``linewatch inspect --healthy-plc``; the PLC model reads
    #: the winding relative to it (:func:`pipeline.features.plc_physics.winding_scale`). Never in assets.json.
    winding_normal_k: float | None = None
    load_profile: str | None = None
    regions: Mapping[str, tuple[float, float, float, float]] = field(default_factory=dict)
    #: ``regions`` are fractions of the frame's width and height (every coordinate in 0..1), not pixels.
    regions_relative: bool = False
    #: Names in ``regions`` that are no part the thermal vector reads (:func:`region_name`).
    unknown_regions: tuple[str, ...] = ()
    #: Boxes in ``regions`` that could not be read, each with why (:mod:`pipeline.features.region_boxes`).
    unreadable_regions: tuple[str, ...] = ()
    #: A bearing described but giving no fault orders (an unknown designation, half a geometry): what to give.
    bearing_note: str | None = None
    fan_side: str | None = None
    frame: FrameMeta = field(default_factory=FrameMeta)
    region_fit: bool = True
    #: The machine knocks in step with the shaft when healthy (``reciprocating`` in assets.json,
    #: else :func:`reciprocating_type`).
    reciprocating: bool = False
    #: The motor is cooled by a fan on its own shaft (IEC 60034-6 IC411, "TEFC"), as most motors are: on a
    #: drive its cooling falls with its speed (:func:`pipeline.features.plc_physics.ventilation_share`).
    #: False where ``cooling`` in assets.json names forced or liquid cooling (:func:`self_ventilated`), or
    #: the type is a motor spindle (liquid-cooled).
    self_ventilated: bool = True

    @classmethod
    def from_entry(cls, entry: Mapping[str, Any], top: Mapping[str, Any] | None = None) -> AssetProfile:
        """From one asset entry; ``top`` is the whole ``assets.json`` (file-level defaults)."""
        top = top or {}
        line = _num(entry, "line_frequency_hz", "supply_hz", "mains_hz") or _num(top, "line_frequency_hz")
        poles_f = _num(entry, "poles", "pole_count")
        poles = round(poles_f) if poles_f and poles_f >= 2 else None
        shaft = _num(entry, "nominal_shaft_hz", "shaft_hz", "rated_shaft_hz", "shaft_speed_hz", "running_speed_hz",
                     "rotational_speed_hz")
        rpm = _num(entry, "nominal_rpm", "rated_rpm", "speed_rpm", "rpm", "nameplate_rpm", "rated_speed_rpm",
                   "nominal_speed_rpm", "shaft_speed_rpm", "motor_rpm", "full_load_rpm", "nameplate_speed_rpm")
        if shaft is None and rpm:
            shaft = rpm / 60.0
        nameplate_hz = shaft  # a running speed the entry states (None: derived below from a synchronous speed)
        sync = _num(entry, "sync_rpm", "synchronous_rpm")
        sync_hz = sync / 60.0 if sync else synchronous_shaft_hz(shaft, line, poles)
        if shaft is None and sync:
            shaft = sync / 60.0 * (1.0 - DEFAULT_SLIP)
        if shaft is None and poles:
            shaft = 2.0 * (line or DEFAULT_LINE_HZ) / poles * (1.0 - DEFAULT_SLIP)
        drive = str(entry.get("drive") or entry.get("drive_type") or "").lower()
        vfd = bool(entry.get("vfd") or entry.get("variable_speed") or drive in ("vfd", "inverter", "variable"))
        rng = _pair(entry.get("speed_range_hz")) or _pair(entry.get("shaft_range_hz"))
        if rng is None and (r := _pair(entry.get("speed_range_rpm"))) is not None:
            rng = (r[0] / 60.0, r[1] / 60.0)
        if rng is not None:
            vfd = vfd or rng[1] / max(rng[0], 1e-6) > 1.15
        band = _pair(entry.get("resonance_band_hz"))
        current = _num(entry, "rated_current_a", "nominal_current_a", "current_rated_a", "fla_a")
        estimated = False
        if current is None and (kw := _rated_kw(entry)) is not None:
            volts = _num(entry, "rated_voltage_v", "voltage_v", "voltage") or (460.0 if line == 60.0 else 400.0)
            current, estimated = kw * 1000.0 / (math.sqrt(3.0) * volts * TYPICAL_PF_EFFICIENCY), True
        load = entry.get("load_profile")
        fan = entry.get("fan_side")
        camera = _camera(entry)
        frame = FrameMeta.from_json(entry.get("frame") or camera.get("frame") or top.get("frame"))
        fit = entry.get("region_fit", camera.get("region_fit", top.get("region_fit", True)))
        orders = _orders(entry, shaft)
        regions, unknown_regions, relative, unreadable_regions = _regions(entry)
        if relative and frame.width and frame.height:  # fractions of a declared frame size: its pixels
            regions = {k: (x0 * frame.width, y0 * frame.height, x1 * frame.width, y1 * frame.height)
                       for k, (x0, y0, x1, y1) in regions.items()}
            relative = False
        return cls(
            asset_id=str(entry.get("asset_id") or entry.get("id") or entry.get("name") or ""),
            asset_type=str(entry.get("asset_type") or entry.get("type") or "unknown").lower(),
            nominal_shaft_hz=shaft if shaft and shaft > 0 else None,
            speed_range_hz=rng, vfd=vfd, line_frequency_hz=line, poles=poles,
            sync_shaft_hz=sync_hz, rated_slip=_rated_slip(nameplate_hz, sync_hz),
            bearing_orders=orders, bearing_note=_bearing_note(entry, shaft, orders), resonance_band_hz=band,
            rated_current_a=current, rated_current_estimated=estimated,
            nominal_rpm=rpm or (shaft * 60.0 if shaft else None),
            pressure_nominal_bar=_num(entry, "pressure_nominal_bar", "nominal_pressure_bar", "pressure_bar"),
            vibration_normal_mm_s=_vibration_normal(entry),
            load_profile=str(load).lower() if load else None,
            regions=regions, regions_relative=relative, unknown_regions=unknown_regions,
            unreadable_regions=unreadable_regions,
            fan_side=str(fan).lower() if fan else None, frame=frame,
            region_fit=str(fit).lower() not in ("false", "off", "no", "0", "none"),
            reciprocating=_flag(entry.get("reciprocating"), reciprocating_type(str(entry.get("asset_type")
                                                                                   or entry.get("type") or ""))),
            self_ventilated=self_ventilated(entry.get("cooling") or entry.get("cooling_method")
                                            or entry.get("ic_code"), str(entry.get("asset_type") or entry.get("type") or "")),
        )

    def with_learned_pressure(self, bar: float | None) -> AssetProfile:
        """This profile with a learned running pressure as its nominal pressure, where the nameplate has
        none (a nameplate value always wins; ``None`` changes nothing).

        >>> p = AssetProfile(asset_id="P").with_learned_pressure(4.1)
        >>> p.pressure_nominal_bar, p.pressure_nominal_learned
        (4.1, True)
        >>> AssetProfile(pressure_nominal_bar=5.0).with_learned_pressure(4.1).pressure_nominal_bar
        5.0
        """
        if bar is None or self.pressure_nominal_bar is not None:
            return self
        return replace(self, pressure_nominal_bar=float(bar), pressure_nominal_learned=True)

    def with_normal_vibration(self, mm_s: float | None) -> AssetProfile:
        """This profile with a learned normal vibration level, where ``assets.json`` gives none (a declared
        value always wins; ``None`` changes nothing).

        >>> p = AssetProfile(asset_id="C").with_normal_vibration(6.2)
        >>> p.vibration_normal_mm_s, p.vibration_normal_learned
        (6.2, True)
        >>> AssetProfile(vibration_normal_mm_s=5.0).with_normal_vibration(6.2).vibration_normal_mm_s
        5.0
        """
        if mm_s is None or self.vibration_normal_mm_s is not None:
            return self
        return replace(self, vibration_normal_mm_s=float(mm_s), vibration_normal_learned=True)

    def with_normal_winding(self, k: float | None) -> AssetProfile:
        """This profile with the machine's learned healthy winding level (``None`` changes nothing).

        >>> AssetProfile(asset_id="M").with_normal_winding(31.5).winding_normal_k
        31.5
        """
        return self if k is None else replace(self, winding_normal_k=float(k))

    def speed_search_hz(self) -> tuple[float, float] | None:
        """Where to look for the running speed: the drive's range, else around nameplate speed."""
        if self.speed_range_hz is not None:
            lo, hi = self.speed_range_hz
            return max(lo * 0.95, SPEED_LIMITS_HZ[0]), min(hi * 1.05, SPEED_LIMITS_HZ[1])
        if self.nominal_shaft_hz is None:
            return None
        lo, hi = VFD_SPEED_FRACTIONS if self.vfd else FIXED_SPEED_FRACTIONS
        return (max(self.nominal_shaft_hz * lo, SPEED_LIMITS_HZ[0]),
                min(self.nominal_shaft_hz * hi, SPEED_LIMITS_HZ[1]))

    def slip_window_hz(self) -> tuple[float, float] | None:
        """Where a direct-on-line machine whose synchronous speed is known can turn: from
        :data:`OVERLOAD_SLIP_FACTOR` x its rated slip (:data:`UNKNOWN_MAX_SLIP` without a nameplate
        speed) below synchronous speed up to synchronous speed, each end widened by
        :data:`MAINS_TOLERANCE`; ``None`` on a drive or where the synchronous speed is not known.

        An induction motor on the mains turns between synchronous speed (no load) and a little below its
        nameplate speed (overload), so a tone train outside that window (a screw compressor's lobe pass,
        a neighbour) is not taken for the shaft: :func:`pipeline.features.audio_physics.estimate_speed`
        picks its speed inside it (the other generator's fixed-speed machines read more than 3 % off in
        19 and 34 of their 648 and 556 recordings without it, 2026-12-05).

        >>> [round(f, 2) for f in AssetProfile.from_entry({"id": "K", "rpm": 3520, "poles": 2}).slip_window_hz()]
        [57.42, 60.6]
        >>> [round(f, 2) for f in AssetProfile.from_entry({"id": "P", "sync_rpm": 1500}).slip_window_hz()]
        [23.27, 25.25]
        >>> AssetProfile.from_entry({"id": "D", "rpm": 1480, "vfd": True}).slip_window_hz() is None
        True
        """
        if self.vfd or self.speed_range_hz is not None or self.sync_shaft_hz is None:
            return None
        slip = OVERLOAD_SLIP_FACTOR * self.rated_slip if self.rated_slip is not None else UNKNOWN_MAX_SLIP
        return (self.sync_shaft_hz * (1.0 - slip) * (1.0 - MAINS_TOLERANCE),
                self.sync_shaft_hz * (1.0 + MAINS_TOLERANCE))


def synchronous_shaft_hz(nameplate_hz: float | None, line_hz: float | None, poles: int | None) -> float | None:
    """A motor's synchronous speed in shaft Hz: its supply over its pole pairs; where the pole count or
    the supply is not given, the lowest synchronous speed (50 or 60 Hz supply, 2 to 12 poles) at or
    above the nameplate speed within :data:`MAX_NAMEPLATE_SLIP` of it (without a nameplate speed, a
    pole count alone is read on a 50 Hz supply, as the nominal speed is); else ``None``.

    >>> synchronous_shaft_hz(None, 60.0, 4), synchronous_shaft_hz(1449 / 60, None, None)
    (30.0, 25.0)
    >>> synchronous_shaft_hz(1750 / 60, None, 4), synchronous_shaft_hz(40.0, 50.0, None) is None
    (30.0, True)
    """
    if nameplate_hz is None or nameplate_hz <= 0:
        return (line_hz or DEFAULT_LINE_HZ) / (poles // 2) if poles and poles >= 2 else None
    lines = (line_hz,) if line_hz else (50.0, 60.0)
    pairs = (poles // 2,) if poles and poles >= 2 else tuple(range(1, 7))
    candidates = sorted(f / p for f in lines for p in pairs)
    fit = [s for s in candidates if s >= nameplate_hz and 1.0 - nameplate_hz / s <= MAX_NAMEPLATE_SLIP]
    return fit[0] if fit else None


def _rated_slip(nameplate_hz: float | None, sync_hz: float | None) -> float | None:
    """The full-load slip a nameplate speed and a synchronous speed give, where it is one a motor has."""
    if nameplate_hz is None or sync_hz is None:
        return None
    slip = 1.0 - nameplate_hz / sync_hz
    return slip if 0.0 < slip <= MAX_NAMEPLATE_SLIP else None


def reciprocating_type(asset_type: str) -> bool:
    """Whether an ``asset_type`` names a reciprocating machine (:data:`RECIPROCATING_WORDS`).

    >>> [reciprocating_type(t) for t in ("Reciprocating compressor", "piston air compressor", "screw compressor",
    ...                                  "axial piston pump", "triplex plunger pump", "pump")]
    [True, True, False, False, True, False]
    """
    text = " ".join(asset_type.lower().replace("-", " ").replace("_", " ").split())
    return any(word in text for word in RECIPROCATING_WORDS)


#: Words of an assets.json ``cooling`` value that name a motor not cooled by its own shaft fan: a separately
#: driven blower (IEC 60034-6 IC416, "TEBC", "force ventilated") or a liquid (a water jacket, IC7x / IC8x,
#: TEWAC). An air-to-air cooler (TEAAC, IC611) has its fans on the shaft: self-ventilated.
NOT_SELF_VENTILATED_WORDS: tuple[str, ...] = (
    "ic416", "ic 416", "tebc", "blower", "forced", "force ventilated", "separately", "external fan",
    "liquid", "water", "coolant", "jacket", "ic7", "ic 7", "ic8", "ic 8", "icw", "tewac",
)


def self_ventilated(cooling: object, asset_type: str = "") -> bool:
    """Whether a motor is cooled by a fan on its own shaft (IC411 / TEFC, the common case): False where its
    ``cooling`` names a blower or a liquid (:data:`NOT_SELF_VENTILATED_WORDS`), or, without a ``cooling``,
    where the type is a motor spindle (they are water-cooled).

    >>> [self_ventilated(c) for c in (None, "IC411", "TEFC", "TEAAC", "IC416 (blower)", "water jacket", "TEBC")]
    [True, True, True, True, False, False, False]
    >>> self_ventilated(None, "Motor spindle (HSK-A63)"), self_ventilated("IC411", "CNC spindle")
    (False, True)
    """
    text = " ".join(str(cooling).lower().replace("-", " ").replace("_", " ").split()) if cooling else ""
    if text:
        return not any(word in text for word in NOT_SELF_VENTILATED_WORDS)
    return "spindle" not in asset_type.lower()


def _flag(value: object, default: bool) -> bool:
    """An assets.json yes/no (bool, 1/0, "true"/"no" ...); ``default`` when absent or unreadable."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower() if value is not None else ""
    if text in ("true", "yes", "on", "1"):
        return True
    if text in ("false", "no", "off", "0"):
        return False
    return default


def as_profile(asset: object) -> AssetProfile:
    """Accept None, an :class:`AssetProfile`, an ``assets.json`` entry, or an object carrying one
    (``pipeline.validation.AssetInfo``: its ``acoustics.profile``, else its fields)."""
    if asset is None:
        return AssetProfile()
    if isinstance(asset, AssetProfile):
        return asset
    if isinstance(asset, Mapping):
        return AssetProfile.from_entry(asset)
    acoustics = getattr(asset, "acoustics", None)
    profile = getattr(asset, "profile", None) or getattr(acoustics, "profile", None)
    if isinstance(profile, AssetProfile):
        return profile
    if hasattr(asset, "bearing_orders") and hasattr(asset, "resonance_band_hz"):  # a bare AssetAcoustics
        band = getattr(asset, "resonance_band_hz", None)
        return AssetProfile(bearing_orders=dict(getattr(asset, "bearing_orders", {}) or {}),
                            resonance_band_hz=tuple(band) if band else None)  # type: ignore[arg-type]
    if acoustics is not None or hasattr(asset, "regions"):
        band = getattr(acoustics, "resonance_band_hz", None)
        return AssetProfile(
            asset_id=str(getattr(asset, "asset_id", "")), asset_type=str(getattr(asset, "asset_type", "unknown")),
            nominal_shaft_hz=getattr(asset, "nominal_shaft_hz", None),
            bearing_orders=dict(getattr(acoustics, "bearing_orders", {}) or {}),
            resonance_band_hz=tuple(band) if band else None,  # type: ignore[arg-type]
            regions={k: tuple(float(v) for v in box) for k, box in (getattr(asset, "regions", {}) or {}).items()},
        )
    raise TypeError(f"asset must be an AssetProfile, an assets.json entry or AssetInfo; got {type(asset).__name__}")


def asset_entries(data: Mapping[str, Any] | list[Any]) -> list[Mapping[str, Any]]:
    """The asset entries of an ``assets.json`` document: ``{"assets": [...]}``, ``{"machines": [...]}``,
    ``{"assets": {id: {...}}}`` (the key is the id) or a bare list.

    >>> [e["asset_id"] for e in asset_entries({"assets": {"P-1": {"type": "pump"}}})]
    ['P-1']
    """
    entries: Any = data.get("assets", data.get("machines", [])) if isinstance(data, Mapping) else data
    if isinstance(entries, Mapping):
        entries = [{"asset_id": k, **v} for k, v in entries.items() if isinstance(v, Mapping)]
    return [e for e in entries or [] if isinstance(e, Mapping)]


def load_profiles(data: Mapping[str, Any] | list[Any]) -> dict[str, AssetProfile]:
    """All profiles of an ``assets.json`` document (:func:`asset_entries`), by asset id."""
    top: Mapping[str, Any] = data if isinstance(data, Mapping) else {}
    out: dict[str, AssetProfile] = {}
    for entry in asset_entries(data):
        profile = AssetProfile.from_entry(entry, top)
        if profile.asset_id:
            out[profile.asset_id] = profile
    return out
