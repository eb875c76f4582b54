"""Governance stage: drift detection, explanations of fault verdicts (LIME + rule engine), audit trail."""
