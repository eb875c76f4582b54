"""A historian's tag names and units read as this project's PLC tags (``linewatch.contract.plc_tags``).

A plant historian exports its own names (``Motor Current (A)``, ``DE_BRG_TEMP_F``,
``VibVelocity [in/s]``, ``Discharge Pressure psi``, ``Running``) in the plant's units. ``linewatch
inspect`` reads such files as they are: :func:`resolve_tag` maps a column or tag name (and a unit,
from the long format's ``unit`` column, the name's brackets or its last word) onto one of
``PLC_TAGS`` with the conversion to that tag's unit, or says why not. The live line does not use
this: its gateway writes the contract's names (``docs/simulator.md``).

>>> resolve_tag("Motor Current (A)")
TagReading(tag='motor_current_a', unit='A', scale=1.0, offset=0.0)
>>> r = resolve_tag("DE_BRG_TEMP_F"); r.tag, round(r.convert(212.0), 2)
('bearing_temp_c', 100.0)
>>> r = resolve_tag("VibVelocity", unit="in/s"); r.tag, round(r.convert(0.1), 2)
('vibration_rms_mm_s', 2.54)
>>> r = resolve_tag("Discharge Pressure psi"); r.tag, round(r.convert(100.0), 3)
('pressure_bar', 6.895)
>>> resolve_tag("Shaft Speed [Hz]").convert(24.5)
1470.0
>>> resolve_tag("Running").tag, parse_value("RUNNING"), parse_value("Stopped"), parse_value("12.5")
('run_state', 1.0, 0.0, 12.5)
>>> resolve_tag("Vibration (g)") is None, unsupported_reason("Vibration (g)")
(True, "'Vibration (g)' is vibration_rms_mm_s in 'g', which cannot be converted to mm/s")
>>> resolve_tag("Static Pressure (Pa)") is None, resolve_tag("Speed (%)") is None, resolve_tag("Suction Pressure (bar)") is None
(True, True, True)
>>> resolve_tag("SHAFT_SPD_HZ").convert(25.0), resolve_tag("Motor Current (Phase A)").tag, resolve_tag("Bearing Temp (DE)").tag
(1500.0, 'motor_current_a', 'bearing_temp_c')
>>> resolve_tag("Oil Level") is None, resolve_tag("Bearing Temp High Alarm") is None, resolve_tag("Run Hours") is None
(True, True, True)

PLC tag names as control engineers abbreviate them, and tag paths as SCADA historians (Ignition)
write them, read by their last part:

>>> resolve_tag("AHU305_MTR_CUR_A").tag, resolve_tag("[default]Site/Line2/P-509/Motor/DEBearingTemp").tag
('motor_current_a', 'bearing_temp_c')
>>> resolve_tag("[default]Site/Line2/P-509/Motor/VibAlarm") is None, resolve_tag("Line1/Area/AmbientTemp") is None
(True, True)
>>> resolve_tag("[default]Line1/P-509/Vibration [in/s]").unit, resolve_tag("Vib mm/s").unit
('in/s', 'mm/s')

German column names, compounds included, and a US PLC's ``INS`` / ``IPS`` for in/s:

>>> [resolve_tag(n).tag for n in ("Motorstrom [A]", "Wicklungstemperatur [°C]", "Lagertemperatur AS [°C]",
...                                "Schwinggeschwindigkeit [mm/s]", "Förderdruck [bar]", "Betrieb")]
['motor_current_a', 'winding_temp_c', 'bearing_temp_c', 'vibration_rms_mm_s', 'pressure_bar', 'run_state']
>>> resolve_tag("Saugdruck [bar]") is None, resolve_tag("Betriebsstunden") is None, resolve_tag("Drehzahl [U/min]").unit
(True, True, 'rpm')
>>> r = resolve_tag("BFP929_VIB_INS_PK"); r.unit, round(r.convert(0.1), 3)
('in/s peak', 1.796)

A vibration given as a peak (``pk``, ``0-pk``) or peak-to-peak (``pk-pk``, ``p-p``) velocity is read
as the RMS a sinusoid of that peak has (peak / √2, peak-to-peak / 2√2), as vibration meters convert:

>>> r = resolve_tag("Vib Velocity (in/s pk)"); r.tag, round(r.convert(0.1), 3), r.unit
('vibration_rms_mm_s', 1.796, 'in/s peak')
>>> round(resolve_tag("Vibration pk-pk [mm/s]").convert(5.66), 2)
2.0
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from linewatch.contract.plc_tags import PLC_TAGS, TAG_UNITS

TEMPERATURE = {"temp", "temperature", "tmp", "temps"}
#: German words of column names (Siemens WinCC and other German exports write compounds:
#: ``Motorstrom``, ``Wicklungstemperatur``, ``Lagertemperatur AS``, ``Schwinggeschwindigkeit``,
#: ``Betriebsstunden``) → the English words :data:`RULES` and the exclusions know; a compound is read
#: by its parts (:func:`_german_parts`).
GERMAN: dict[str, str] = {
    "strom": "current", "motor": "motor", "temperatur": "temperature", "wicklung": "winding", "lager": "bearing",
    "schwingung": "vibration", "schwing": "vibration", "geschwindigkeit": "velocity", "druck": "pressure",
    "drehzahl": "speed", "betrieb": "running", "läuft": "running", "laeuft": "running", "saug": "suction",
    "differenz": "differential", "sollwert": "setpoint", "soll": "setpoint", "grenzwert": "limit",
    "stunden": "hours", "störung": "alarm", "stoerung": "alarm", "warnung": "alarm", "alarm": "alarm",
    "zähler": "counter", "zaehler": "counter", "umgebung": "ambient", "öl": "oil", "oel": "oil",
}
#: Words that name each tag, tried in this order (a "bearing temperature" is not a "bearing"
#: vibration; a "shaft speed" is not a "shaft vibration"). A name matches when it holds one word of
#: each group of a rule.
RULES: tuple[tuple[str, tuple[frozenset[str], ...]], ...] = (
    ("bearing_temp_c", (frozenset({"bearing", "bearings", "brg", "brng"}), frozenset(TEMPERATURE))),
    ("winding_temp_c", (frozenset({"winding", "windings", "wdg", "stator", "coil"}), frozenset(TEMPERATURE))),
    ("vibration_rms_mm_s", (frozenset({"vibration", "vib", "vibr", "velocity", "vel", "vibrations"}),)),
    ("motor_current_a", (frozenset({"current", "amps", "amp", "amperage", "curr", "cur", "ampere", "amperes"}),)),
    ("pressure_bar", (frozenset({"pressure", "press", "pres"}),)),
    ("speed_rpm", (frozenset({"speed", "spd", "rpm", "rotation", "rotational", "revolutions"}),)),
    ("run_state", (frozenset({"run", "running", "runstate", "runstatus", "state", "status", "on", "runsig"}),)),
)

#: Words that make a name something else than the measured value (a limit, an alarm, a command, a
#: counter): such columns are not read.
NOT_A_MEASUREMENT = frozenset({"alarm", "alm", "setpoint", "sp", "limit", "trip", "hh", "ll", "ref", "reference",
                               "cmd", "command", "target", "hours", "hrs", "time", "count", "counter", "starts"})

#: Words that make a name another quantity of the same kind: the contract's ``pressure_bar`` is the
#: machine's working (discharge / line) pressure, not its suction or a differential.
NOT_THIS_TAG: dict[str, frozenset[str]] = {
    "pressure_bar": frozenset({"suction", "suct", "inlet", "intake", "differential", "diff", "dp", "vacuum", "filter"}),
}

#: Unit spellings → (tag it suits, scale, offset) onto the tag's own unit; ``None``: a quantity
#: that is not the tag's (vibration in g is an acceleration) and cannot be converted.
UNITS: dict[str, dict[str, tuple[float, float] | None]] = {
    "temp": {"c": (1.0, 0.0), "degc": (1.0, 0.0), "°c": (1.0, 0.0), "celsius": (1.0, 0.0), "f": (5 / 9, -160 / 9),
             "degf": (5 / 9, -160 / 9), "°f": (5 / 9, -160 / 9), "fahrenheit": (5 / 9, -160 / 9),
             "k": (1.0, -273.15), "kelvin": (1.0, -273.15)},
    "vibration_rms_mm_s": {"mm/s": (1.0, 0.0), "mms": (1.0, 0.0), "mmps": (1.0, 0.0), "in/s": (25.4, 0.0),
                           "ips": (25.4, 0.0), "inps": (25.4, 0.0), "ins": (25.4, 0.0), "g": None, "m/s2": None, "m/s²": None,
                           "um": None, "µm": None, "mil": None, "mils": None},
    "pressure_bar": {"bar": (1.0, 0.0), "barg": (1.0, 0.0), "psi": (0.0689476, 0.0), "psig": (0.0689476, 0.0),
                     "kpa": (0.01, 0.0), "mpa": (10.0, 0.0), "kg/cm2": (0.980665, 0.0), "mbar": (0.001, 0.0)},
    "speed_rpm": {"rpm": (1.0, 0.0), "1/min": (1.0, 0.0), "u/min": (1.0, 0.0), "min-1": (1.0, 0.0), "hz": (60.0, 0.0),
                  "rps": (60.0, 0.0)},
    "motor_current_a": {"a": (1.0, 0.0), "amps": (1.0, 0.0), "amp": (1.0, 0.0), "ma": (0.001, 0.0)},
    "run_state": {"bool": (1.0, 0.0)},
}
#: How a unit spelling is reported.
LABELS = {"c": "°C", "degc": "°C", "°c": "°C", "celsius": "°C", "f": "°F", "degf": "°F", "°f": "°F",
          "fahrenheit": "°F", "k": "K", "kelvin": "K", "mms": "mm/s", "mmps": "mm/s", "ips": "in/s", "inps": "in/s", "ins": "in/s", "u/min": "rpm",
          "psig": "psi", "kpa": "kPa", "mpa": "MPa", "hz": "Hz", "a": "A", "amps": "A", "amp": "A", "ma": "mA"}
#: Words that say a vibration velocity is a peak or a peak-to-peak value (→ the RMS of a sinusoid of
#: that peak: × 1/√2, × 1/(2√2)); "rms" says it is the contract's own.
PEAK_WORDS: dict[str, float] = {"pk": 1 / math.sqrt(2), "peak": 1 / math.sqrt(2), "0-pk": 1 / math.sqrt(2),
                                "0pk": 1 / math.sqrt(2), "pk-pk": 1 / (2 * math.sqrt(2)),
                                "pkpk": 1 / (2 * math.sqrt(2)), "p-p": 1 / (2 * math.sqrt(2)),
                                "pp": 1 / (2 * math.sqrt(2)), "peak-to-peak": 1 / (2 * math.sqrt(2))}
#: Units of other quantities (or relative values): a name in one of them is refused, never read as
#: the tag's own unit (a pressure in Pa read as bar would be 10^5 off).
OTHER_UNITS = frozenset({"pa", "%", "pct", "percent", "hp", "kw", "w", "v", "mv", "ma", "bara", "inh2o", "mh2o", "m",
                         "mm", "ft", "s", "min", "h", "rad/s", "m/s", "cfm"})
#: Every unit spelling: a word of a name that is one of these is a unit, known or not.
UNIT_WORDS = frozenset({k for table in UNITS.values() for k in table} | OTHER_UNITS)
TRUE_WORDS = {"run", "running", "on", "true", "start", "started", "yes", "active"}
FALSE_WORDS = {"stop", "stopped", "off", "false", "idle", "no", "inactive", "tripped"}


@dataclass(frozen=True)
class TagReading:
    """How a historian's column is read: which PLC tag, from which unit (canonical = value ×
    ``scale`` + ``offset``)."""

    tag: str
    unit: str
    scale: float = 1.0
    offset: float = 0.0

    def convert(self, value: float) -> float:
        return value * self.scale + self.offset

    def describe(self, name: str) -> str:
        """``'DE Temp (F)' → bearing_temp_c (°F → degC)``."""
        conv = "" if self.scale == 1.0 and self.offset == 0.0 else f" ({self.unit} → {TAG_UNITS[self.tag]})"
        return f"{name!r} → {self.tag}{conv}"


#: A SCADA tag path (Ignition: ``[default]Site/Line2/P-509/Motor/Current``): an optional ``[provider]``
#: and ``/``-separated folders without spaces; its last part names the tag.
_TAG_PATH = re.compile(r"(?:\[[^\]\s]*\])?(?P<path>[^\s/\[\]()]+(?:/[^\s/\[\]()]+)+)(?P<unit>\s*[\(\[][^\)\]]*[\)\]])?")


def _words(name: str) -> tuple[list[str], str | None]:
    """Lower-case words of ``name`` (camelCase and acronyms split: ``DEBearingTemp`` → de bearing
    temp) and the unit in its brackets, if any; of a tag path, its last part."""
    path = _TAG_PATH.fullmatch(name)
    if path and path["path"].rpartition("/")[2].lower() not in UNIT_WORDS:
        name = path["path"].rpartition("/")[2] + (path["unit"] or "")
    name = re.sub(r"(?i)(?<![a-z0-9])(?:pk-pk|p-p|peak-to-peak|peak-peak)(?![a-z0-9])", "pkpk", name)
    name = re.sub(r"(?i)(?<![a-z0-9])0-pk(?![a-z0-9])", "pk", name)
    unit = None
    m = re.search(r"[\(\[]\s*([^\)\]]+?)\s*[\)\]]", name)
    if m:
        unit = m.group(1).strip()
        name = name[: m.start()] + " " + name[m.end():]
    name = re.sub(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", " ", name)
    words = [w for w in re.split(r"[^a-z0-9äöüß°/²µ%]+", name.lower()) if w]
    return [part for w in words for part in _german_parts(w)], unit


def _german_parts(word: str) -> list[str]:
    """A German word of a column name as the English words of its parts (:data:`GERMAN`; a linking
    ``s`` between parts, and a first part it does not know, allowed), else the word itself.

    >>> [_german_parts(w) for w in ("motorstrom", "wicklungstemperatur", "förderdruck", "betriebsstunden", "pump")]
    [['motor', 'current'], ['winding', 'temperature'], ['förder', 'pressure'], ['running', 'hours'], ['pump']]
    """
    if word in GERMAN:
        return [GERMAN[word]]
    if len(word) < 5 or not word.isalpha():
        return [word]
    for start in range(len(word) - 3):  # an unknown first part (förder-, end-) only before known ones
        parts = _known_parts(word[start:])
        if parts is not None:
            return ([word[:start]] if start else []) + parts
    return [word]


def _known_parts(rest: str) -> list[str] | None:
    """``rest`` split wholly into :data:`GERMAN` words (longest first), or None."""
    if not rest:
        return []
    for end in range(len(rest), 2, -1):
        head = rest[:end]
        if head in GERMAN:
            for tail in (rest[end:], rest[end + 1:] if rest[end:end + 1] == "s" else None):
                if tail is not None and (parts := _known_parts(tail)) is not None:
                    return [GERMAN[head], *parts]
    return None


def _peak_factor(words: list[str], unit: str | None) -> tuple[float, str | None, str]:
    """``(factor to RMS, the unit without its peak word, "peak" / "peak-to-peak" / "")`` of a
    vibration name's words and unit."""
    factor, kind = 1.0, ""
    if unit:
        parts = unit.split()
        kept = [w for w in parts if w.lower() not in PEAK_WORDS and w.lower() != "rms"]
        for w in parts:
            if w.lower() in PEAK_WORDS:
                factor = PEAK_WORDS[w.lower()]
        unit = " ".join(kept) or None
    for w in words:
        if w in PEAK_WORDS:
            factor = PEAK_WORDS[w]
    if factor != 1.0:
        kind = "peak" if factor > 0.5 else "peak-to-peak"
    return factor, unit, kind


def _match(name: str, unit: str | None) -> tuple[str, str, tuple[float, float] | None] | None:
    """``(tag, unit, conversion or None when not convertible)`` or None when no tag is named."""
    words, bracket = _words(name)
    tokens = set(words)
    for tag, groups in RULES:
        if all(tokens & g for g in groups):
            break
    else:
        return None
    if _excluded(tokens, tag):
        return None
    table = UNITS["temp"] if tag.endswith("_temp_c") else UNITS[tag]
    peak, kind = 1.0, ""
    if tag == "vibration_rms_mm_s":
        peak, unit, kind = _peak_factor(words, unit)
        in_bracket, bracket, bracket_kind = _peak_factor([], bracket)
        peak, kind = min(peak, in_bracket), kind or bracket_kind
        words = [w for w in words if w not in PEAK_WORDS and w != "rms"]
    suffix = f" {kind}" if kind else ""
    for candidate, strict in ((unit, True), (bracket, True), (words[-1] if words else None, False)):
        if not candidate:
            continue
        key = candidate.strip().lower().replace(" ", "")
        if key in table:
            conv = table[key]
            return (tag, LABELS.get(key, candidate) + suffix,
                    None if conv is None else (conv[0] * peak, conv[1]))
        if key in UNIT_WORDS or (strict and re.search(r"[%/°²]", key)):
            return tag, candidate, None  # a unit, but not one this tag can be read in
    return tag, TAG_UNITS[tag] + suffix, (peak, 0.0)  # no unit given or recognised: the tag's own


def resolve_tag(name: str, unit: str | None = None) -> TagReading | None:
    """How to read column / tag ``name`` (``unit``: a unit column's value): the contract's own
    names as they are, else by the words it holds (:data:`RULES`) and its unit (:data:`UNITS`);
    None when it names no PLC tag or its unit cannot be converted (:func:`unsupported_reason`)."""
    name = name.strip()
    if name in PLC_TAGS:
        return TagReading(name, TAG_UNITS[name])
    found = _match(name, unit)
    if found is None or found[2] is None:
        return None
    tag, u, (scale, offset) = found
    return TagReading(tag, u, scale, offset)


def is_read_as(name: str, tag: str) -> bool:
    """Whether ``name``'s words leave it ``tag``: none makes it a limit, an alarm, a command or
    another quantity of the same kind (:data:`NOT_A_MEASUREMENT`, :data:`NOT_THIS_TAG`).

    >>> is_read_as("DISCH.PRESS", "pressure_bar"), is_read_as("SUCT.PRESS", "pressure_bar")
    (True, False)
    """
    return not _excluded(set(_words(name)[0]), tag)


def _excluded(tokens: set[str], tag: str) -> bool:
    """Words that make a name of ``tag`` something else (:data:`NOT_A_MEASUREMENT`, :data:`NOT_THIS_TAG`)."""
    return bool(tokens & NOT_A_MEASUREMENT or tokens & NOT_THIS_TAG.get(tag, frozenset()))


def unsupported_reason(name: str, unit: str | None = None) -> str | None:
    """Why ``name`` names a PLC tag that cannot be read (a unit of another quantity), else None."""
    found = _match(name.strip(), unit)
    if found is None or found[2] is not None:
        return None
    tag = found[0]
    return f"{name!r} is {tag} in {found[1]!r}, which cannot be converted to {TAG_UNITS[tag]}"


#: Words that make a speed the drive's command (its speed reference) rather than a measurement.
SETPOINT_WORDS = frozenset({"setpoint", "sp", "ref", "reference", "target", "cmd", "command", "demand"})
#: Units a speed setpoint is read in, to rpm: shaft revolutions per minute only. A setpoint in Hz may
#: be the drive's output frequency (the shaft's times half the poles) or the shaft's; one in % needs the
#: speed at 100 %.
SETPOINT_UNITS: dict[str, float] = {"rpm": 1.0, "1/min": 1.0, "r/min": 1.0, "min-1": 1.0, "u/min": 1.0}


def speed_setpoint_scale(name: str, unit: str | None = None) -> float | None:
    """The factor to rpm of column / tag ``name`` (``unit``: a unit column's value) where it names a
    drive's speed setpoint in shaft rpm (the speed it is told to run at, which a drive without a
    speed sensor holds within its slip); None for anything else, a measured speed included.

    >>> speed_setpoint_scale("Speed Setpoint (rpm)"), speed_setpoint_scale("Speed_Setpoint", "rpm")
    (1.0, 1.0)
    >>> speed_setpoint_scale("[default]Site/AHU/SpeedRef [1/min]")
    1.0
    >>> [speed_setpoint_scale(n) for n in ("Speed Setpoint [Hz]", "Motor Speed (rpm)", "Speed_SP", "Speed SP (%)")]
    [None, None, None, None]
    """
    words, bracket = _words(name.strip())
    tokens = set(words)
    speed_words = dict(RULES)["speed_rpm"][0]
    if not tokens & SETPOINT_WORDS or not tokens & speed_words or tokens & (NOT_A_MEASUREMENT - SETPOINT_WORDS):
        return None
    for candidate in (unit, bracket, words[-1] if words else None):
        key = (candidate or "").strip().lower().replace(" ", "")
        if key in SETPOINT_UNITS:
            return SETPOINT_UNITS[key]
    return None


def parse_value(text: object) -> float | None:
    """A number, or a run state written as a word (``RUNNING`` 1, ``Stopped`` 0); None otherwise."""
    if isinstance(text, bool):
        return float(text)
    if isinstance(text, int | float):
        return float(text) if math.isfinite(float(text)) else None
    s = str(text).strip()
    try:
        v = float(s)
    except ValueError:
        low = s.lower()
        return 1.0 if low in TRUE_WORDS else 0.0 if low in FALSE_WORDS else None
    return v if math.isfinite(v) else None
