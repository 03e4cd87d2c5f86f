"""The netrules dashboard: ``streamlit run dashboard/app.py`` (or ``netrules dashboard``).

It reads the store only (URL from ``NETRULES_STORE`` or the sidebar) and never talks to Spark,
so it can run anywhere the store is reachable. The section body runs in a fragment that reruns
every few seconds: the page follows the pipeline live, and because every choice lives in a keyed
widget, a refresh never resets what the user picked.
"""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

# `streamlit run dashboard/app.py` puts dashboard/ on sys.path, not the project root.
_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from dashboard import data  # noqa: E402
from dashboard.sections import (  # noqa: E402
    alerts,
    patterns,
    reachability,
    routes,
    timeline,
    topology,
)
from netrules.errors import StoreError  # noqa: E402

SECTIONS = {m.TITLE: m for m in (topology, alerts, reachability, routes, patterns, timeline)}


def _deep_link() -> None:
    """``?section=Routes&src=New York&dst=Seattle`` opens on that answer, once per session: an
    operator pastes a link to what they see into the incident channel."""
    if st.session_state.get("_linked"):
        return
    st.session_state["_linked"] = True
    q = st.query_params
    if q.get("section") in SECTIONS:
        st.session_state["section"] = q["section"]
    for param, key in (("src", "route_src"), ("dst", "route_dst")):
        if q.get(param):
            st.session_state[key] = q[param]
            st.session_state[key.replace("route", "reach")] = q[param]


def _sidebar() -> tuple[str, float | None]:
    """Store URL, section and refresh period; outside the fragment because a fragment may not
    write to the sidebar."""
    _deep_link()
    sb = st.sidebar
    sb.title("netrules")
    url = sb.text_input("Store", value=data.default_store_url(), key="store_url",
                        help="A SQLite path, sqlite:///path or postgresql://…")
    sb.radio("Section", list(SECTIONS), key="section")
    period = sb.number_input("Refresh every (s, 0 = paused)", 0.0, 600.0, 3.0, step=1.0,
                             key="refresh")
    if sb.button("Refresh now"):
        data.clear()
    return url.strip(), (float(period) if period else None)


def _header(url: str) -> None:
    meta = data.meta(url)
    last = data.last_batch(url)
    _, links = data.topology(url)
    status = data.node_status(url)
    active = data.incidents(url, active_only=True)
    st.caption(f"Program **{meta.get('program_name', 'unknown')}** · store `{url}`")
    c = st.columns(5)
    c[0].metric("Last batch", "—" if last is None else last)
    c[1].metric("Nodes up", sum(v == "up" for v in status.values()))
    c[2].metric("Degraded · isolated", f"{sum(v == 'degraded' for v in status.values())} · "
                f"{sum(v == 'isolated' for v in status.values())}")
    c[3].metric("Links down", sum(ln.state == "down" for ln in links))
    c[4].metric("Active incidents", len(active))
    alerts.banner(url)


def _live(url: str, section: str) -> None:
    """Everything that changes as the pipeline writes: rerun on the refresh period."""
    try:
        data.store(url)
    except StoreError as err:
        st.warning(f"Cannot open the store yet: {err}. Retrying on the next refresh.")
        return
    try:
        _header(url)
        st.header(section)
        SECTIONS[section].render(url)
    except StoreError as err:
        st.error(f"Reading the store failed: {err}")


def main() -> None:
    st.set_page_config(page_title="netrules", page_icon="🕸️", layout="wide")
    url, period = _sidebar()
    if not url:
        st.info("Enter a store URL in the sidebar.")
        return
    section = st.session_state.get("section") or next(iter(SECTIONS))
    st.fragment(run_every=period)(_live)(url, section)


main()
