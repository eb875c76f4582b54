"""Governance stage: drift detection, explanations with a rule engine, and the audit trail (issue 11)."""
