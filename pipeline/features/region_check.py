"""How often the live job checks that an asset's thermal region boxes still fit its frames:
:class:`RegionCheck`.

Region fitting (:mod:`pipeline.features.thermal_fit`) first runs a pre-check that the boxes from
``assets.json`` sit on the machine (about 2.8 of a 4.0 ms plant-frame message, ``docs/benchmarks.md``). A
fixed camera does not move between two frames half a second apart, so the ingestion job keeps,
per asset, when the boxes last passed that check and skips it for the next ``every - 1`` frames
of the same size. Boxes that did not fit as given (registered onto the frame, or proposed without
regions) are fitted again on every frame, so a wrong fit is never carried forward; a camera that
moves is registered at the next check, at most ``every - 1`` frames later (4.5 s at the plant's
2 frames/s with the default 10). Memory only: after a restore the first frame is checked.
``linewatch inspect`` and the training data check every frame.

>>> check = RegionCheck(every=3)
>>> check.skip((120, 160))                                # nothing checked yet
False
>>> check.record("given", (120, 160))                     # the boxes fit as given
>>> [check.skip((120, 160)) for _ in range(3)]           # two frames skip, the third is checked
[True, True, False]
>>> check.record("registered", (120, 160)); check.skip((120, 160))   # moved boxes: every frame
False
>>> check.record("given", (120, 160)); check.skip((240, 320))        # another frame size: checked
False
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class RegionCheck:
    """Per-asset memory of the last region check (see the module docstring)."""

    every: int = 10
    shape: tuple[int, ...] | None = None
    left: int = 0  # frames that may still skip the check

    def skip(self, shape: tuple[int, ...]) -> bool:
        """May this frame (of ``shape``) be read with the boxes as given, without the check?"""
        if self.left > 0 and shape == self.shape:
            self.left -= 1
            return True
        return False

    def record(self, status: str, shape: tuple[int, ...]) -> None:
        """The fit of a checked frame (``RegionFit.status``)."""
        self.shape = tuple(shape)
        self.left = self.every - 1 if status == "given" else 0
