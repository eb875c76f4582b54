"""Explanations of fault verdicts: LIME on the deployed models + the domain rule engine + agreement.

``linewatch serve explain`` runs :func:`governance.explain.service.explain_worker`; see docs/explanations.md.
"""
