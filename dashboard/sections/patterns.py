"""Fraud and anomaly patterns matched right now: the suspect/detectable pairs of the fraud
programs and the routing loops, straight from their views.

A pattern view is a lead, not an outage, so it gets its own page instead of the alert banner;
the pattern and loop alerts still appear in the feed.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import data
from netrules.facts import format_value

__all__ = ["TITLE", "PATTERNS", "render"]

TITLE = "Patterns"
#: View -> (what a match means, column names).
PATTERNS: dict[str, tuple[str, list[str]]] = {
    "loop": ("Routing loops: packets for D entering at S come back to S.", ["S", "D"]),
    "suspect": ("Suspect pairs: X and Y lie on a cycle of potentially secured transfers.",
                ["X", "Y"]),
    "detectable": ("Detectable frauds: a suspect pair that one entity monitors.", ["X", "Y"]),
}


def render(url: str) -> None:
    views = data.relations(url)
    present = [r for r in PATTERNS if r in views]
    st.caption("Views: " + ", ".join(f"{r} ({views.get(r, 0)})" for r in PATTERNS))
    if not present:
        st.success("No pattern matched right now (no loop, suspect or detectable facts).")
    for rel in present:
        what, cols = PATTERNS[rel]
        facts = data.read_view(url, rel, limit=5_000)
        st.subheader(f"{rel} ({views[rel]})")
        st.caption(what)
        rows = [[format_value(a) for a in f.args] for f in facts]
        width = max((len(r) for r in rows), default=len(cols))
        names = cols + [f"arg{i + 1}" for i in range(len(cols), width)]
        df = pd.DataFrame([r + [""] * (width - len(r)) for r in rows], columns=names[:width])
        # A static table reads best for a handful of matches; a grid scrolls for thousands.
        if len(df) <= 50:
            st.table(df, hide_index=True)
        else:
            st.dataframe(df, hide_index=True, key=f"pattern_{rel}")
    related = [a for a in data.alerts(url, active_only=True, limit=500)
               if a.kind in ("pattern_matched", "routing_loop")]
    if related:
        st.subheader("Active pattern alerts")
        for a in related:
            st.warning(f"{a.severity}: {a.message}")
