"""Incidents first, then the alerts inside them: severity, raising time, the triggering events
and whether (and when) each cleared.

One cut raises one alert per lost route; the operator reads one incident line per cause
(:mod:`netrules.store.incidents`) and opens it for the routes. The full feed below is a data
grid, so any column sorts with a click.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import data
from netrules.store.incidents import Incident
from netrules.store.records import SEVERITIES, Alert

__all__ = ["TITLE", "ICONS", "render", "banner", "alert_rows", "incident_rows"]

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


def _box(severity: str, text: str) -> None:
    if severity in ("critical", "major"):
        st.error(text, icon=ICONS[severity])
    elif severity == "minor":
        st.warning(text, icon=ICONS[severity])
    else:
        st.info(text, icon=ICONS["info"])


def banner(url: str, limit: int = 3) -> None:
    """Active incidents above every section, one line each: an outage should never hide
    behind a tab, nor push the page down with one banner per lost route."""
    active = data.incidents(url, active_only=True)
    for inc in active[:limit]:
        _box(inc.severity, f"**Incident** · {inc.title()}")
    if len(active) > limit:
        st.caption(f"+{len(active) - limit} more active incidents: see the Alerts section.")


def incident_rows(incidents: list[Incident]) -> pd.DataFrame:
    """One display row per incident."""
    return pd.DataFrame([{
        "severity": i.severity,
        "state": "active" if i.active else "ended",
        "cause": ", ".join(i.links),
        "affected": len(i.affected),
        "flaps": i.flaps,
        "start": f"{data.format_time(i.start_time)} (batch {i.start_batch})",
        "end": "" if i.end_time is None else f"{data.format_time(i.end_time)} "
                                             f"(batch {i.end_batch})",
    } for i in incidents], columns=["severity", "state", "cause", "affected", "flaps", "start",
                                    "end"])


def _incidents(url: str, active_only: bool, severities: list[str]) -> None:
    incs = [i for i in data.incidents(url, active_only=active_only) if i.severity in severities]
    st.subheader("Incidents")
    n_active = sum(i.active for i in incs)
    st.caption(f"{len(incs)} incidents, {n_active} active: alerts that share a cause (the "
               "same batch's failed links), newest first.")
    if not incs:
        st.success("No incidents.")
        return
    st.dataframe(incident_rows(incs), hide_index=True, key="incidents_table")
    for n, inc in enumerate(incs[:20]):
        with st.expander(inc.title(), expanded=n == 0 and inc.active):
            st.markdown("**Affected:** " + ", ".join(inc.affected))
            st.dataframe(alert_rows(list(inc.alerts)), hide_index=True, key=f"inc_{n}")


def render(url: str) -> None:
    c1, c2, c3 = st.columns([1, 2, 1])
    active_only = c1.toggle("Active only", key="alerts_active_only")
    severities = c2.multiselect("Severity", list(SEVERITIES), default=list(SEVERITIES),
                                key="alerts_severity")
    limit = c3.number_input("Show at most", 10, 5_000, 200, step=50, key="alerts_limit")
    _incidents(url, active_only, severities)
    alerts = [a for a in data.alerts(url, active_only=active_only, limit=int(limit))
              if a.severity in severities]
    st.subheader("Every alert")
    n_active = sum(a.state == "active" for a in alerts)
    st.caption(f"{len(alerts)} alerts shown, {n_active} active, newest first; click a column "
               "header to sort.")
    if not alerts:
        st.success("No alerts." if not active_only else "No active alerts.")
        return
    styled = alert_rows(alerts).style.map(
        lambda v: f"color: {_COLOURS[v]}; font-weight: 600" if v in _COLOURS else "",
        subset=["severity"]).map(
        lambda v: "color: #2e7d32" if v == "cleared" else "font-weight: 600", subset=["state"])
    st.dataframe(styled, hide_index=True, key="alerts_table")
