"""Alerts operators can live with: records and states, routing, destinations, operator actions.

The Python API for alert state and operator actions is :class:`AlertStore` (``services.alerts.store``).
"""

from services.alerts.records import PRIORITY_ORDER, AlertRecord, priority_of
from services.alerts.store import AlertNotFound, AlertStore, InvalidAction

__all__ = ["PRIORITY_ORDER", "AlertNotFound", "AlertRecord", "AlertStore", "InvalidAction", "priority_of"]
