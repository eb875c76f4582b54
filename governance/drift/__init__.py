"""Drift detection (issue 11 §1–§2): feature drift (KS per feature against a presorted reference,
Bonferroni / Benjamini–Hochberg, windows, hysteresis, suspected cause), prediction drift (chi-squared),
error-stream drift (river EDDM / ADWIN / Page–Hinkley) and the label-free shadow teacher. One
algorithm a module; :mod:`governance.drift.service` runs them on the streams (``linewatch serve drift``).
See docs/drift.md."""
