"""Domain rule engine: YAML rules on the model-input features, each with a cause and an action.

See :mod:`governance.rules.engine` and the shipped rules in ``governance/rules/default.yaml``.
"""

from governance.rules.engine import (
    DEFAULT_RULES,
    Condition,
    Rule,
    RuleSet,
    RulesError,
    feature_catalogue,
    load_rules,
    parse_rules,
)

__all__ = ["DEFAULT_RULES", "Condition", "Rule", "RuleSet", "RulesError", "feature_catalogue", "load_rules",
           "parse_rules"]
