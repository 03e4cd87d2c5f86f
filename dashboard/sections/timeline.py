"""Timeline: facts added and removed per batch, and what one batch changed.

The chart shows the rhythm of the network (a failure is a spike of removals, a recovery a spike
of additions); picking a batch lists its changes, so the spike can be read fact by fact.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dashboard import data

__all__ = ["TITLE", "render"]

TITLE = "Timeline"


def render(url: str) -> None:
    limit = st.select_slider("Batches", [50, 200, 500, 2_000], value=200, key="timeline_n")
    batches = data.batches(url, limit=limit)
    if not batches:
        st.info("No batch has been written yet.")
        return
    ids = [b.batch_id for b in batches]
    fig = go.Figure([
        go.Bar(x=ids, y=[b.added for b in batches], name="added", marker_color="#2ca02c",
               customdata=[data.format_time(b.time) for b in batches],
               hovertemplate="batch %{x} (%{customdata}): +%{y}<extra></extra>"),
        go.Bar(x=ids, y=[-b.removed for b in batches], name="removed", marker_color="#d62728",
               customdata=[data.format_time(b.time) for b in batches],
               hovertemplate="batch %{x} (%{customdata}): %{y}<extra></extra>"),
    ])
    fig.update_layout(barmode="relative", height=320, margin={"l": 5, "r": 5, "t": 30, "b": 5},
                      xaxis_title="batch", yaxis_title="facts",
                      legend={"orientation": "h", "y": 1.02, "yanchor": "bottom"})
    st.plotly_chart(fig, key="timeline_chart")
    st.caption(f"{len(batches)} batches, {sum(b.added for b in batches)} facts added, "
               f"{sum(b.removed for b in batches)} removed.")

    pick = st.selectbox("Changes of batch", list(reversed(ids)), key="timeline_batch")
    if pick is None:
        return
    b = next(x for x in batches if x.batch_id == pick)
    st.markdown(f"**Batch {b.batch_id}** at {data.format_time(b.time)}: {b.n_events} events, "
                f"+{b.added} / −{b.removed} facts.")
    rows = data.changes(url, since_batch=pick - 1, limit=min(b.added + b.removed, 2_000) or 1)
    rows = [c for c in rows if c.batch_id == pick]
    if rows:
        if len(rows) < b.added + b.removed:
            st.caption(f"First {len(rows)} of {b.added + b.removed} changes.")
        st.dataframe(pd.DataFrame([{"op": c.op, "fact": str(c.fact)} for c in rows]),
                     hide_index=True, key="timeline_changes",
                     column_config={"op": st.column_config.TextColumn(width="small")})
