"""A sensor whose inputs the line keeps refusing: an alert for the operators, cleared by its next
accepted input.

A refused frame, clip or PLC file is a dead letter with its reason (docs/ingestion.md), listed on
the asset's page. One of them is an incident; a sensor that sends nothing usable for a while (a
covered lens, a frozen camera, a dead microphone, a gateway that cuts every file short) leaves its
machine unwatched by that modality while the fused verdict goes on with the others at a lower
coverage, and nobody is told. Alarm systems report such a sensor as a fault of its own (the
diagnostic alarms of ISA-18.2 / IEC 62682; a bad quality status in OPC UA).

:func:`refused` counts, per asset and modality, the inputs refused in a row
(:class:`RefusalRun`, kept in the asset's ``asset-order`` state and restored with it after a
restart). When the count reaches ``flink.sensor_alert_after`` (default 5; 0 turns it off) it asks
the alerts service for an alert, once per run: an ``AlertRequest`` with source ``sensor``, label
``sensor_fault`` and episode ``sensor:<asset>:<modality>``, whose message names the last reason and
its dead letter's advice. The modality's next accepted input (:func:`accepted`) ends the run and,
if an alert was asked for, asks to clear it. A few refusals between accepted inputs (one corrupt
frame) raise nothing, and the job does not count an input older than the modality's last accepted
one (a late file, a gateway sending again what was read): it says nothing about the sensor now.

>>> from linewatch.contract import DeadLetter, DeadLetterReason
>>> runs: dict[str, RefusalRun] = {}
>>> def covered(k):
...     return DeadLetter(source="pipeline.thermal", reason=DeadLetterReason.NO_SIGNAL, asset_id="P-1",
...                       detail="the frame has no contrast (covered lens?): check the camera",
...                       raw_ref=f"thermal/frames/P-1/{k}.tiff", event_time_ms=1000 * k, failed_at_ms=0)
>>> [refused(runs, "thermal", "P-1", covered(k), after=3) for k in range(2)]
[None, None]
>>> req = refused(runs, "thermal", "P-1", covered(2), after=3)
>>> (req.source, req.label, req.state, req.episode_key, req.details["refused"])
('sensor', 'sensor_fault', 'raise', 'sensor:P-1:thermal', 3)
>>> print(req.message)
P-1: thermal camera: 3 inputs in a row refused (no_signal: the frame has no contrast (covered lens?): check the camera); its thermal data is not judged until one is accepted
>>> refused(runs, "thermal", "P-1", covered(3), after=3) is None   # asked once per run
True
>>> accepted(runs, "thermal", "P-1", 5000).state, runs
('clear', {})
>>> refused(runs, "thermal", "P-1", covered(6), after=3), accepted(runs, "thermal", "P-1", 7000)
(None, None)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from linewatch.contract import AlertRequest, DeadLetter

SOURCE = "sensor"
LABEL = "sensor_fault"
#: The request's severity: with the default criticalities (``alerts.criticality``: 0.5-0.9) a
#: ``medium`` or ``high`` alert, below a machine fault of the same asset past moderate severity (an
#: unwatched machine is not yet a failing one).
SEVERITY = 0.4
#: What sends each modality, for the message.
SENDER: dict[str, str] = {"thermal": "camera", "audio": "microphone", "plc": "PLC export"}
_DETAIL_CHARS = 300


@dataclass
class RefusalRun:
    """The inputs of one asset's modality refused in a row (only kept while there are some)."""

    refused: int = 0
    raised: bool = False  # an alert was asked for in this run
    since_ms: int | None = None  # event time of the run's first refused input
    reason: str = ""  # the last refused input's reason and detail
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"n": self.refused, "raised": self.raised, "since": self.since_ms, "reason": self.reason,
                "detail": self.detail}

    @classmethod
    def from_json(cls, o: dict[str, Any]) -> RefusalRun:
        since = o.get("since")
        return cls(refused=int(o.get("n", 0)), raised=bool(o.get("raised", False)),
                   since_ms=None if since is None else int(since), reason=str(o.get("reason", "")),
                   detail=str(o.get("detail", "")))


def episode_key(asset_id: str, modality: str) -> str:
    """``sensor:<asset>:<modality>``: one alert per sensor while it is raised."""
    return f"{SOURCE}:{asset_id}:{modality}"


def refused(runs: dict[str, RefusalRun], modality: str, asset_id: str, letter: DeadLetter,
            after: int) -> AlertRequest | None:
    """Count ``letter`` (a refused input of ``modality``) in the asset's ``runs``; the raise request
    when the run reaches ``after`` refusals (0: never, and nothing is counted)."""
    if after <= 0:
        return None
    run = runs.setdefault(modality, RefusalRun())
    run.refused += 1
    if run.since_ms is None:
        run.since_ms = letter.event_time_ms if letter.event_time_ms is not None else letter.failed_at_ms
    run.reason, run.detail = letter.reason.value, letter.detail[:_DETAIL_CHARS]
    if run.raised or run.refused < after:
        return None
    run.raised = True
    sender = SENDER.get(modality, "sensor")
    return AlertRequest(
        source=SOURCE, episode_key=episode_key(asset_id, modality), asset_id=asset_id, label=LABEL,
        severity=SEVERITY, state="raise",
        message=(f"{asset_id}: {modality} {sender}: {run.refused} inputs in a row refused ({run.reason}: "
                 f"{run.detail}); its {modality} data is not judged until one is accepted"),
        details={"modality": modality, "refused": run.refused, "reason": run.reason, "since_ms": run.since_ms,
                 "raw_ref": letter.raw_ref},
        event_time_ms=letter.event_time_ms if letter.event_time_ms is not None else letter.failed_at_ms)


def accepted(runs: dict[str, RefusalRun], modality: str, asset_id: str, event_time_ms: int) -> AlertRequest | None:
    """An accepted input of ``modality`` ends its run of refusals; the clear request if the run had
    asked for an alert."""
    run = runs.pop(modality, None)
    if run is None or not run.raised:
        return None
    sender = SENDER.get(modality, "sensor")
    return AlertRequest(
        source=SOURCE, episode_key=episode_key(asset_id, modality), asset_id=asset_id, label=LABEL, severity=0.0,
        state="clear",
        message=f"{asset_id}: {modality} {sender}: accepted again after {run.refused} refused inputs ({run.reason})",
        details={"modality": modality, "refused": run.refused, "reason": run.reason, "since_ms": run.since_ms},
        event_time_ms=event_time_ms)
