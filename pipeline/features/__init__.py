"""Feature code shared by the Flink job (serving) and model training, so they never disagree.

Bump :data:`FEATURES_VERSION` whenever an output changes meaning, order or scale; messages
carry it and models record the version they were trained on.
"""

FEATURES_VERSION: int = 4
"""2: the messages carry ``vector``, the physics-normalised model input (see docs/features.md).
3: audio vector 79 values (fast-kurtogram demodulation bands, fault combs with a shared slip, blind
comb for unknown bearings); PLC vector 45 values (rated current estimated from rated power, VFD
flag, affinity-law pressure).
4: audio vector 86 values: the 79 of v3, then the six shaft-harmonic levels against the machine's
learned healthy levels and a ``baseline.available`` flag (``pipeline.features.audio_baseline``);
PLC and thermal vectors unchanged from v3."""
