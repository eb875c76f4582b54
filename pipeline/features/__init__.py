"""Feature code shared by the Flink job (serving) and model training, so they never disagree.

Bump :data:`FEATURES_VERSION` whenever an output changes meaning, order or scale; messages
carry it and models record the version they were trained on.
"""

FEATURES_VERSION: int = 2
"""2: the messages carry ``vector``, the physics-normalised model input (see docs/features.md)."""
