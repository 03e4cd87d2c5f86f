"""Alerts: rules that turn a batch's view changes into raised/cleared alerts, and a webhook.

The engine evaluates :class:`AlertRules` per batch and writes the result with the batch
(``netrules.store.BatchRecord.alerts_raised``/``alerts_cleared``), so an alert and the view
change that caused it commit together.
"""

from netrules.alerts.rules import (
    ALERT_KINDS,
    SEVERITIES,
    Alert,
    AlertConfig,
    AlertRules,
    ViewHas,
    view_has_from_store,
)
from netrules.alerts.webhook import WebhookNotifier, post_alerts

__all__ = [
    "ALERT_KINDS",
    "SEVERITIES",
    "Alert",
    "AlertConfig",
    "AlertRules",
    "ViewHas",
    "WebhookNotifier",
    "post_alerts",
    "view_has_from_store",
]
