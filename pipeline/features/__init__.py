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
PLC and thermal vectors unchanged from v3. Since 2026-12-05 (same names, order and scale, so the
version stays): on a drive whose PWM carrier the clip shows, the audio speed is read off the
carrier where no measured speed is given, and the carrier's lines are notched out of the envelope
spectra of its bands (``audio_physics.drive_supply_hz``); other clips give the same bits."""
