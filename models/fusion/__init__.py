"""Fusing per-modality class probabilities into one per-asset distribution.

The rule lives here (not in ``services/``) so that the fusion service, ``linewatch inspect`` and
the offline evaluation in ``models/`` all fuse exactly the same way.
"""

from models.fusion.log_linear import FusionResult, FusionWeights, fuse, temper

__all__ = ["FusionResult", "FusionWeights", "fuse", "temper"]
