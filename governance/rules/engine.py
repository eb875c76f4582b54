"""YAML rules on features → cause and recommended action, validated at load with line numbers.

A rules file is a mapping with ``rules:``, a list of rules::

    rules:
      - id: bearing-defect-de
        label: bearing_wear                 # the fault class the rule points at
        all:                                # every condition must hold ...
          - audio.comb.max >= 1.6
          - thermal.rel.de_minus_body >= 5
        any: []                             # ... and at least ``min_any`` of these (when given)
        cause: rolling-element bearing defect at the drive end
        action: plan a bearing change at the next stop

A condition is ``<modality>.<feature> <op> <threshold>`` with ``op`` one of ``>= > <= < == !=``;
``<feature>`` is a name of the modality's model-input vector (``pipeline.features``:
``PLC_VECTOR_NAMES``, ``THERMAL_VECTOR_NAMES``, ``AUDIO_VECTOR_NAMES``) or a physics-derived
``derived.<name>`` (:mod:`governance.rules.derived`). A condition on a modality
that is not available for the verdict does not hold.

A malformed file is refused with :class:`RulesError` naming the file, the line and the reason:

>>> parse_rules("rules:\\n  - id: x\\n    label: bearing_wear\\n    all: [audio.comb.maxx >= 2]\\n"
...             "    cause: c\\n    action: a\\n", "r.yaml")
Traceback (most recent call last):
...
governance.rules.engine.RulesError: r.yaml:4: rule 'x': unknown feature 'audio.comb.maxx' (did you mean 'audio.comb.max'?)
>>> rs = parse_rules("rules:\\n  - id: x\\n    label: bearing_wear\\n    all: [audio.comb.max >= 2]\\n"
...                  "    cause: a bearing defect\\n    action: change it\\n")
>>> [h.rule_id for h in rs.evaluate({"audio": {"comb.max": 2.5}})], rs.evaluate({"audio": {"comb.max": 1.0}})
(['x'], [])
"""

from __future__ import annotations

import difflib
import math
import operator
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from governance.rules.derived import DERIVED_FEATURES, derived_features
from linewatch.contract import RuleHit
from pipeline.features.audio_physics import AUDIO_VECTOR_NAMES
from pipeline.features.plc_physics import PLC_VECTOR_NAMES
from pipeline.features.thermal_regions import THERMAL_VECTOR_NAMES

DEFAULT_RULES = Path(__file__).resolve().parent / "default.yaml"
Op = Literal[">=", ">", "<=", "<", "==", "!="]
_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt, "==": operator.eq, "!=": operator.ne}
_CONDITION = re.compile(r"^\s*(?P<feature>[A-Za-z_][\w.]*)\s*(?P<op>>=|<=|==|!=|>|<)\s*(?P<value>\S+)\s*$")
_RULE_KEYS = ("id", "label", "all", "any", "min_any", "cause", "action", "description")


def feature_catalogue() -> dict[str, tuple[str, ...]]:
    """Feature names a rule may use, per modality (the model-input vectors of ``pipeline.features``),
    plus the physics-derived ``derived.*`` (:mod:`governance.rules.derived`)."""
    return {"plc": tuple(PLC_VECTOR_NAMES), "thermal": tuple(THERMAL_VECTOR_NAMES), "audio": tuple(AUDIO_VECTOR_NAMES),
            "derived": tuple(DERIVED_FEATURES)}


class RulesError(ValueError):
    """A rules file that cannot be used; the message names the file, the line and the reason."""


class Condition(BaseModel):
    """``<modality>.<feature> <op> <threshold>``."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    modality: str
    feature: str
    op: Op
    threshold: float
    line: int = 0

    @property
    def qualified(self) -> str:
        return f"{self.modality}.{self.feature}"

    def text(self) -> str:
        return f"{self.qualified} {self.op} {self.threshold:g}"

    def holds(self, features: Mapping[str, Mapping[str, float]]) -> bool | None:
        """True/False, or None when the modality or feature is not available."""
        value = features.get(self.modality, {}).get(self.feature)
        if value is None or not math.isfinite(value):
            return None
        return _OPS[self.op](float(value), self.threshold)


class Rule(BaseModel):
    """One rule: conditions (all of ``all``, at least ``min_any`` of ``any``) → label, cause, action."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    label: str = Field(min_length=1)
    all: list[Condition] = Field(default_factory=list)
    any: list[Condition] = Field(default_factory=list)
    min_any: int = Field(1, ge=1)
    cause: str = Field(min_length=3)
    action: str = Field(min_length=3)
    description: str = ""
    line: int = 0

    def conditions(self) -> list[Condition]:
        return [*self.all, *self.any]

    def evaluate(self, features: Mapping[str, Mapping[str, float]]) -> RuleHit | None:
        """The hit when the rule fires on ``features`` (modality → feature name → value)."""
        held: list[str] = []
        for cond in self.all:
            if not cond.holds(features):
                return None
            held.append(_observed(cond, features))
        if self.any:
            hits = [c for c in self.any if c.holds(features)]
            if len(hits) < self.min_any:
                return None
            held += [_observed(c, features) for c in hits]
        return RuleHit(rule_id=self.id, label=self.label, cause=self.cause, action=self.action, conditions=held)


def _observed(cond: Condition, features: Mapping[str, Mapping[str, float]]) -> str:
    return f"{cond.text()} (observed {features[cond.modality][cond.feature]:.3g})"


@dataclass(frozen=True)
class RuleSet:
    """The rules of one file, evaluated in file order."""

    rules: tuple[Rule, ...]
    source: str = ""

    def evaluate(self, features: Mapping[str, Mapping[str, float]]) -> list[RuleHit]:
        """Hits of the rules on ``features`` (modality -> name -> value; ``derived.*`` are computed here)."""
        full = {**features, "derived": derived_features(features)}
        return [hit for rule in self.rules if (hit := rule.evaluate(full)) is not None]

    def by_id(self, rule_id: str) -> Rule:
        for rule in self.rules:
            if rule.id == rule_id:
                return rule
        raise KeyError(rule_id)

    def labels(self) -> set[str]:
        return {r.label for r in self.rules}


def load_rules(path: Path | str | None = None, labels: Iterable[str] | None = None) -> RuleSet:
    """Read and validate a rules file (default: the shipped ``default.yaml``)."""
    path = Path(path) if path is not None else DEFAULT_RULES
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RulesError(f"{path}: cannot read the rules file ({exc}); fix LINEWATCH_EXPLAIN__RULES") from exc
    return parse_rules(text, str(path), labels)


def parse_rules(text: str, source: str = "<rules>", labels: Iterable[str] | None = None) -> RuleSet:
    """Validate YAML rules text; ``labels`` (e.g. the model cards' classes) restricts ``label``."""
    known_labels = set(labels) if labels is not None else None
    try:
        loader = yaml.SafeLoader(text)
        try:
            root = loader.get_single_node()
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 0
        raise RulesError(f"{source}:{line}: not valid YAML: {exc.problem or exc}") from exc
    except yaml.YAMLError as exc:
        raise RulesError(f"{source}: not valid YAML: {exc}") from exc
    if root is None:
        raise RulesError(f"{source}:1: the file is empty; it needs a 'rules:' list")
    if not isinstance(root, yaml.MappingNode):
        raise RulesError(f"{source}:{_line(root)}: the top level must be a mapping with a 'rules:' list")
    top = {_scalar(k): v for k, v in root.value}
    unknown = [(k, n) for (k, n) in ((_scalar(k), k) for k, _ in root.value) if k != "rules"]
    if unknown:
        raise RulesError(f"{source}:{_line(unknown[0][1])}: unknown top-level key {unknown[0][0]!r}; only 'rules:'")
    seq = top.get("rules")
    if not isinstance(seq, yaml.SequenceNode):
        where = _line(seq) if seq is not None else _line(root)
        raise RulesError(f"{source}:{where}: 'rules:' must be a list of rules")
    rules: list[Rule] = []
    seen: dict[str, int] = {}
    for node in seq.value:
        rule = _rule(node, source, known_labels)
        if rule.id in seen:
            raise RulesError(f"{source}:{rule.line}: duplicate rule id {rule.id!r} (first on line {seen[rule.id]})")
        seen[rule.id] = rule.line
        rules.append(rule)
    return RuleSet(tuple(rules), source)


def _line(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


def _scalar(node: yaml.Node) -> str:
    return str(node.value) if isinstance(node, yaml.ScalarNode) else ""


def _rule(node: yaml.Node, source: str, labels: set[str] | None) -> Rule:
    line = _line(node)
    if not isinstance(node, yaml.MappingNode):
        raise RulesError(f"{source}:{line}: a rule must be a mapping (id, label, all/any, cause, action)")
    fields: dict[str, Any] = {}
    lines: dict[str, int] = {}
    for key_node, value_node in node.value:
        key = _scalar(key_node)
        if key not in _RULE_KEYS:
            raise RulesError(f"{source}:{_line(key_node)}: unknown rule key {key!r}; allowed: {', '.join(_RULE_KEYS)}")
        lines[key] = _line(key_node)
        fields[key] = value_node
    rid = _scalar(fields["id"]) if "id" in fields else "?"
    where = f"{source}:{{line}}: rule {rid!r}: "
    values: dict[str, Any] = {"line": line}
    for key, value_node in fields.items():
        if key in ("all", "any"):
            if not isinstance(value_node, yaml.SequenceNode):
                raise RulesError(where.format(line=_line(value_node)) + f"'{key}' must be a list of conditions")
            values[key] = [_condition(c, where) for c in value_node.value]
        else:
            if not isinstance(value_node, yaml.ScalarNode):
                raise RulesError(where.format(line=_line(value_node)) + f"'{key}' must be a single value")
            values[key] = yaml.safe_load(value_node.value) if key == "min_any" else value_node.value
    if not values.get("all") and not values.get("any"):
        raise RulesError(where.format(line=line) + "needs at least one condition under 'all' or 'any'")
    try:
        rule = Rule.model_validate(values)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = str(err["loc"][0]) if err["loc"] else ""
        raise RulesError(where.format(line=lines.get(field, line)) + f"{field}: {err['msg']}") from exc
    if labels is not None and rule.label not in labels:
        raise RulesError(where.format(line=lines.get("label", line)) +
                         f"label {rule.label!r} is not a class of the models ({', '.join(sorted(labels))})")
    if rule.any and rule.min_any > len(rule.any):
        raise RulesError(where.format(line=lines.get("min_any", line)) +
                         f"min_any {rule.min_any} exceeds the {len(rule.any)} conditions under 'any'")
    return rule


def _condition(node: yaml.Node, where: str) -> Condition:
    line = _line(node)
    if not isinstance(node, yaml.ScalarNode):
        raise RulesError(where.format(line=line) + "a condition is one string: '<modality>.<feature> <op> <number>'")
    m = _CONDITION.match(str(node.value))
    if m is None:
        raise RulesError(where.format(line=line) + f"cannot read condition {node.value!r}: write "
                         "'<modality>.<feature> <op> <number>' with op one of >= > <= < == !=")
    qualified, op, raw = m.group("feature"), m.group("op"), m.group("value")
    try:
        threshold = float(raw)
    except ValueError:
        raise RulesError(where.format(line=line) + f"threshold {raw!r} of {qualified!r} is not a number") from None
    if not math.isfinite(threshold):
        raise RulesError(where.format(line=line) + f"threshold of {qualified!r} must be finite")
    modality, _, feature = qualified.partition(".")
    catalogue = feature_catalogue()
    if modality not in catalogue:
        raise RulesError(where.format(line=line) + f"condition {qualified!r} must start with a modality "
                         f"({', '.join(catalogue)})")
    if feature not in catalogue[modality]:
        close = difflib.get_close_matches(feature, catalogue[modality], n=1)
        hint = f" (did you mean '{modality}.{close[0]}'?)" if close else ""
        raise RulesError(where.format(line=line) + f"unknown feature {qualified!r}{hint}")
    return Condition(modality=modality, feature=feature, op=op, threshold=threshold, line=line)  # type: ignore[arg-type]
