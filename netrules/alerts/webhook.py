"""Optional webhook: POST each batch's raised/cleared alerts as JSON to a URL.

Delivery is best effort by design: an unreachable receiver must never stall or crash the
engine, so the timeout is short and every failure is logged, not raised. The store stays the
record of truth; a receiver that missed a post can read ``alerts`` from it.
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any

from netrules.store.incidents import group_incidents
from netrules.store.records import Alert

__all__ = ["post_alerts", "WebhookNotifier", "payload"]

log = logging.getLogger(__name__)


def payload(raised: Sequence[Alert], cleared: Sequence[str],
            batch_id: int | None = None) -> dict[str, Any]:
    """The JSON body: ``{"batch_id", "incidents": [incident...], "raised": [alert...],
    "cleared": [dedup_key...]}``.

    Incidents come first: a receiver paging a human wants "Seattle–Sunnyvale down, 20 routes
    lost", not twenty pages. Each incident groups the batch's raised alerts sharing a cause and
    carries their dedup keys; ``raised`` keeps every alert whole for receivers that predate
    incidents.
    """
    return {"batch_id": batch_id,
            "incidents": [i.to_json(with_alerts=False) for i in group_incidents(raised)],
            "raised": [a.to_json() for a in raised], "cleared": list(cleared)}


def post_alerts(url: str, raised: Sequence[Alert], cleared: Sequence[str],
                batch_id: int | None = None, timeout: float = 2.0) -> bool:
    """POST one batch's alerts; True on a 2xx answer. Nothing is sent when both are empty."""
    if not raised and not cleared:
        return True
    body = json.dumps(payload(raised, cleared, batch_id)).encode()
    try:
        req = urllib.request.Request(url, data=body, method="POST",
                                     headers={"Content-Type": "application/json",
                                              "User-Agent": "netrules-alerts"})
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            ok = 200 <= resp.status < 300
            if not ok:
                log.warning("alert webhook %s answered HTTP %s", url, resp.status)
            return ok
    except (urllib.error.URLError, OSError, ValueError) as err:
        log.warning("alert webhook %s failed: %s", url, err)
        return False


class WebhookNotifier:
    """A callable bound to one URL, for the engine's per-batch hook."""

    def __init__(self, url: str, timeout: float = 2.0) -> None:
        self.url = url
        self.timeout = timeout

    def __call__(self, raised: Sequence[Alert], cleared: Sequence[str],
                 batch_id: int | None = None) -> bool:
        return post_alerts(self.url, raised, cleared, batch_id, self.timeout)
