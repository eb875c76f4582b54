"""One handler per kind of blob (``pipeline.handlers.<kind>.handle``); see :mod:`pipeline.handlers.base`."""

from pipeline.handlers import alarms, audio, plc, thermal
from pipeline.handlers.base import Blob, Handler, HandlerContext

HANDLERS: dict[str, Handler] = {"plc": plc.handle, "alarms": alarms.handle, "thermal": thermal.handle,
                                "audio": audio.handle}

__all__ = ["HANDLERS", "Blob", "Handler", "HandlerContext"]
