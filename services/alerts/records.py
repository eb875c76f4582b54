"""One alert's record and its ISA-18.2 state, plus priority from severity x criticality.

States (ISA-18.2 / IEC 62682 alarm state model, as operators see them):

====================== ========== ======== ===================================================
state                  condition  acked    meaning
====================== ========== ======== ===================================================
``unacknowledged``     active     no       new: needs an operator
``acknowledged``       active     yes      an operator is on it; the fault persists
``rtn_unacknowledged`` cleared    no       returned to normal before anyone acknowledged it
``cleared``            cleared    yes      closed (history)
``shelved``            any        any      temporarily hidden by an operator until it expires
====================== ========== ======== ===================================================

>>> r = AlertRecord(alert_id="A-1", episode_key="verdict:PMP-01", source="verdict", asset_id="PMP-01",
...                 label="bearing_wear", severity=0.5, criticality=0.8, raised_at_ms=0)
>>> r.state(now_ms=1), priority_of(r.severity * r.criticality)
('unacknowledged', 'high')
>>> r.model_copy(update={"active": False, "acked": True}).state(now_ms=1)
'cleared'
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from linewatch.contract import AlertSeverity, ModelRef

State = Literal["unacknowledged", "acknowledged", "rtn_unacknowledged", "cleared", "shelved"]
Priority = Literal["low", "medium", "high", "urgent"]
PRIORITY_ORDER: tuple[Priority, ...] = ("low", "medium", "high", "urgent")

#: score = severity x criticality; the lowest score of each priority (ISA-18.2 asks for few
#: priorities, most alerts low: urgent should be rare).
PRIORITY_THRESHOLDS: dict[Priority, float] = {"urgent": 0.6, "high": 0.35, "medium": 0.15, "low": 0.0}


def priority_of(score: float) -> Priority:
    """Priority band of a score in 0..1.

    >>> [priority_of(s) for s in (0.05, 0.2, 0.4, 0.9)]
    ['low', 'medium', 'high', 'urgent']
    """
    for name in ("urgent", "high", "medium"):
        if score >= PRIORITY_THRESHOLDS[name]:  # type: ignore[index]
            return name  # type: ignore[return-value]
    return "low"


def severity_class(priority: str) -> AlertSeverity:
    """The contract's coarse severity of a priority (urgent/high -> critical)."""
    return {"urgent": AlertSeverity.CRITICAL, "high": AlertSeverity.CRITICAL,
            "medium": AlertSeverity.WARNING}.get(priority, AlertSeverity.INFO)


class AlertRecord(BaseModel):
    """Everything known about one alert (stored as JSON in ``StreamNames.alert_state("records")``)."""

    model_config = ConfigDict(extra="ignore")

    alert_id: str
    episode_key: str
    source: str
    asset_id: str
    asset_type: str = ""
    label: str
    message: str = ""
    severity: float = Field(0.0, ge=0.0, le=1.0, description="latest severity estimate")
    max_severity: float = Field(0.0, ge=0.0, le=1.0)
    criticality: float = Field(0.5, ge=0.0, le=1.0)
    priority: Priority = "low"
    active: bool = True
    acked: bool = False
    acked_by: str = ""
    acked_at_ms: int = 0
    shelved_until_ms: int = 0
    shelved_by: str = ""
    shelve_reason: str = ""
    outcome: Literal["", "confirmed", "rejected"] = ""
    outcome_by: str = ""
    true_label: str | None = None
    comment: str = ""
    raised_at_ms: int
    cleared_at_ms: int = 0
    updated_at_ms: int = 0
    event_time_ms: int = 0
    group_id: str = ""
    is_group: bool = False
    members: list[str] = Field(default_factory=list)
    notified_members: int = 0
    verdict_entry_id: str = ""
    source_ref: str = ""
    models: dict[str, ModelRef] = Field(default_factory=dict)
    details: dict = Field(default_factory=dict)

    @property
    def score(self) -> float:
        return round(self.severity * self.criticality, 4)

    def shelved(self, now_ms: int) -> bool:
        return self.shelved_until_ms > now_ms

    def state(self, now_ms: int) -> State:
        if self.shelved(now_ms):
            return "shelved"
        if self.active:
            return "acknowledged" if self.acked else "unacknowledged"
        return "cleared" if self.acked else "rtn_unacknowledged"

    @property
    def closed(self) -> bool:
        """Cleared and acknowledged: the episode is over and nobody needs to look at it."""
        return not self.active and self.acked

    def to_json(self) -> str:
        return self.model_dump_json()

    @classmethod
    def from_json(cls, raw: bytes | str) -> AlertRecord:
        return cls.model_validate_json(raw)
