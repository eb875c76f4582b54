"""governance/: drift detection, explanations and the audit trail (issue 11). Each part is its own package."""
