"""The rule engine: the shipped rules load against the models' classes; a malformed file is refused
naming the line and the reason; rules fire on the features they name."""

from __future__ import annotations

from pathlib import Path

import pytest

from governance.rules import RulesError, load_rules, parse_rules
from models.registry import default_registry

GOOD = """\
rules:
  - id: r1
    label: bearing_wear
    all:
      - audio.comb.max >= 1.6
      - thermal.rel.de_minus_body >= 5
    cause: bearing defect at the drive end
    action: plan a bearing change
"""


def test_shipped_rules_load_against_the_model_classes() -> None:
    classes = default_registry().load_card("thermal").classes
    rules = load_rules(labels=classes)
    faults = {c for c in classes if c != "normal"}
    assert rules.labels() == faults, "every fault class the models know has at least one rule"


@pytest.mark.parametrize(("text", "line", "reason"), [
    (GOOD.replace("audio.comb.max >= 1.6", "audio.comb.maxx >= 1.6"), 5, "unknown feature 'audio.comb.maxx'"),
    (GOOD.replace(">= 5", "=> 5"), 6, "cannot read condition"),
    (GOOD.replace(">= 5", ">= five"), 6, "is not a number"),
    (GOOD.replace("thermal.rel", "camera.rel"), 6, "must start with a modality"),
    (GOOD.replace("    cause:", "    cuase:"), 7, "unknown rule key 'cuase'"),
    (GOOD.replace("label: bearing_wear", "label: bearing_war"), 3, "not a class of the models"),
    (GOOD.replace("    action: plan a bearing change\n", ""), 2, "action: Field required"),
    (GOOD.replace("id: r1", "id: R 1"), 2, "id: String should match pattern"),
    (GOOD.replace("      - thermal.rel.de_minus_body >= 5\n", "      - thermal.rel.de_minus_body >= 5\n    all: x\n"),
     7, "'all' must be a list of conditions"),
    (GOOD + GOOD.replace("rules:\n", ""), 9, "duplicate rule id 'r1' (first on line 2)"),
    (GOOD.replace("    all:\n", "    all:\n   - broken: [\n"), 5, "not valid YAML"),
])
def test_a_malformed_rules_file_is_refused_naming_line_and_reason(tmp_path: Path, text: str, line: int,
                                                                   reason: str) -> None:
    path = tmp_path / "rules.yaml"
    path.write_text(text)
    classes = default_registry().load_card("audio").classes
    with pytest.raises(RulesError) as err:
        load_rules(path, labels=classes)
    msg = str(err.value)
    assert msg.startswith(f"{path}:{line}:"), msg
    assert reason in msg, msg


def test_rules_fire_on_the_features_they_name() -> None:
    rules = parse_rules(GOOD)
    hits = rules.evaluate({"audio": {"comb.max": 2.4}, "thermal": {"rel.de_minus_body": 9.0}})
    assert [h.rule_id for h in hits] == ["r1"]
    assert hits[0].conditions[0].startswith("audio.comb.max >= 1.6 (observed 2.4)")
    assert rules.evaluate({"audio": {"comb.max": 2.4}, "thermal": {"rel.de_minus_body": 4.0}}) == []
    assert rules.evaluate({"audio": {"comb.max": 2.4}}) == [], "a missing modality does not satisfy a condition"
