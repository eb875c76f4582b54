"""governance/: drift detection, explanations of fault verdicts (LIME + rule engine) and the audit trail (issue 11).

Each part is its own package: governance.drift, governance.explain, governance.audit."""
