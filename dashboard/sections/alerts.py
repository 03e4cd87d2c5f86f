"""The alerts feed: newest first, with severity, raising time, the triggering events and
whether (and when) the alert cleared.

Rendered as an HTML table rather than a data grid so the text is selectable, searchable with
the browser's find, and readable in a screenshot pasted into an incident channel.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import data
from netrules.store.records import SEVERITIES, Alert

__all__ = ["TITLE", "ICONS", "render", "banner", "alert_rows"]

TITLE = "Alerts"
#: Material icons ship with Streamlit, so they render even where no emoji font is installed.
ICONS = {"critical": ":material/error:", "major": ":material/report:",
         "minor": ":material/warning:", "info": ":material/info:"}
_COLOURS = {"critical": "#b71c1c", "major": "#d84315", "minor": "#9e7700", "info": "#1565c0"}


def _trigger(a: Alert) -> str:
    shown = ", ".join(f"{e.op}{e.fact}" for e in a.trigger_events[:3])
    total = int(a.subject.get("trigger_count", len(a.trigger_events)) or 0)
    more = total - min(len(a.trigger_events), 3)
    return shown + (f" (+{more} more)" if more > 0 else "") if shown else "—"


def alert_rows(alerts: list[Alert]) -> pd.DataFrame:
    """One display row per alert, in the order given (the store's newest-first)."""
    return pd.DataFrame([{
        "severity": a.severity,
        "state": a.state,
        "raised": f"{data.format_time(a.raised_time)} (batch {a.raised_batch})",
        "kind": a.kind,
        "message": a.message,
        "triggered by": _trigger(a),
        "cleared": ("" if a.cleared_time is None
                    else f"{data.format_time(a.cleared_time)} (batch {a.cleared_batch})"),
    } for a in alerts], columns=["severity", "state", "raised", "kind", "message",
                                 "triggered by", "cleared"])


def banner(url: str, limit: int = 4) -> None:
    """Active alerts above every section: an outage should never hide behind a tab."""
    active = data.alerts(url, active_only=True, limit=200)
    for a in active[:limit]:
        text = f"**{a.severity}** · {a.message}"
        if a.severity in ("critical", "major"):
            st.error(text, icon=ICONS[a.severity])
        elif a.severity == "minor":
            st.warning(text, icon=ICONS[a.severity])
        else:
            st.info(text, icon=ICONS["info"])
    if len(active) > limit:
        st.caption(f"+{len(active) - limit} more active alerts: see the Alerts section.")


def render(url: str) -> None:
    c1, c2, c3 = st.columns([1, 2, 1])
    active_only = c1.toggle("Active only", key="alerts_active_only")
    severities = c2.multiselect("Severity", list(SEVERITIES), default=list(SEVERITIES),
                                key="alerts_severity")
    limit = c3.number_input("Show at most", 10, 5_000, 200, step=50, key="alerts_limit")
    alerts = [a for a in data.alerts(url, active_only=active_only, limit=int(limit))
              if a.severity in severities]
    n_active = sum(a.state == "active" for a in alerts)
    st.caption(f"{len(alerts)} alerts shown, {n_active} active, newest first.")
    if not alerts:
        st.success("No alerts." if not active_only else "No active alerts.")
        return
    styled = alert_rows(alerts).style.map(
        lambda v: f"color: {_COLOURS[v]}; font-weight: 600" if v in _COLOURS else "",
        subset=["severity"]).map(
        lambda v: "color: #2e7d32" if v == "cleared" else "font-weight: 600", subset=["state"])
    st.table(styled, hide_index=True)
