"""``linewatch inspect``: score recorded files (WAV clips, TIFF frames, PLC CSV/JSONL) with the deployed models.

An engineer with a recording from a handheld device or a plant historian runs the same feature
code and models as the live line, per file, and for several modalities of one machine gets the
fused verdict (:mod:`models.fusion`).
"""

from models.inspect.frame_files import read_frame
from models.inspect.readers import InspectInputError, read_plc, read_wav
from models.inspect.scoring import AssetVerdict, FileResult, Inspector

__all__ = ["AssetVerdict", "FileResult", "InspectInputError", "Inspector", "read_frame", "read_plc", "read_wav"]
