"""Timeline: links down, active incidents and changed facts after each batch, over a range of
event time the operator picks; one link's history; then what one batch changed, fact by fact.

A failure shows as the links-down line stepping up and an incident opening; the recovery as
both stepping back down. The series are replayed from the change log
(:mod:`netrules.store.history`), so they exist for every store, however it was written.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

from dashboard import data

__all__ = ["TITLE", "render", "frame", "chart"]

TITLE = "Timeline"


def frame(url: str) -> pd.DataFrame:
    """One row per batch: batch, time, links down, active incidents, changed facts."""
    return pd.DataFrame([{"batch": p.batch_id, "time": p.time, "links down": p.links_down,
                          "active incidents": p.incidents, "changed facts": p.changed}
                         for p in data.series(url)],
                        columns=["batch", "time", "links down", "active incidents",
                                 "changed facts"])


def chart(df: pd.DataFrame) -> go.Figure:
    """The three series of :func:`frame` stacked on one event-time axis."""
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.06,
                        subplot_titles=("links down", "active incidents", "changed facts"))
    when = [data.format_time(t) for t in df["time"]]
    for row, col, colour in ((1, "links down", "#d62728"), (2, "active incidents", "#ff7f0e"),
                             (3, "changed facts", "#1f77b4")):
        kind = go.Bar if col == "changed facts" else go.Scatter
        extra = {} if kind is go.Bar else {"line": {"shape": "hv", "color": colour},
                                           "mode": "lines+markers"}
        # plain lists: plotly would ship numpy columns base64-encoded, opaque to the page
        fig.add_trace(kind(x=df["time"].tolist(), y=df[col].tolist(), name=col, customdata=when,
                           hovertemplate="%{customdata}: %{y}<extra>" + col + "</extra>",
                           **({"marker_color": colour} if kind is go.Bar else extra)),
                      row=row, col=1)
    fig.update_layout(height=520, showlegend=False, margin={"l": 5, "r": 5, "t": 30, "b": 5})
    fig.update_xaxes(title_text="event time (s)", row=3, col=1)
    return fig


def _link_history(url: str) -> None:
    """One link's ups and downs: is this the link that keeps flapping?"""
    _, links = data.topology(url)
    pairs = sorted({tuple(sorted((ln.src, ln.dst))) for ln in links})
    if not pairs:
        return
    down_first = sorted(pairs, key=lambda p: all(
        ln.state == "up" for ln in links if tuple(sorted((ln.src, ln.dst))) == p))
    pick = st.selectbox("History of link", down_first, key="timeline_link",
                        format_func=lambda p: f"{p[0]} – {p[1]}")
    if pick is None:
        return
    rows = data.link_history(url, pick[0], pick[1])
    downs = sum(1 for c in rows if c.op == "-" and str(c.fact.args[0]) == pick[0])
    st.caption(f"{pick[0]} – {pick[1]}: went down {downs} time{'s' if downs != 1 else ''}.")
    if rows:
        st.dataframe(pd.DataFrame([{
            "batch": c.batch_id, "time": data.format_time(c.time),
            "change": "up" if c.op == "+" else "down", "fact": str(c.fact)} for c in rows]),
            hide_index=True, key="timeline_link_rows")


def render(url: str) -> None:
    df = frame(url)
    if df.empty:
        st.info("No batch has been written yet.")
        return
    lo, hi = float(df["time"].min()), float(df["time"].max())
    if hi > lo:
        start, end = st.slider("Event time", lo, hi, (lo, hi), key="timeline_range",
                               format="%g")
        df = df[(df["time"] >= start) & (df["time"] <= end)]
    if df.empty:
        st.info("No batch in that range.")
        return
    st.plotly_chart(chart(df), key="timeline_chart")
    st.caption(f"{len(df)} batches; links down after the last {int(df['links down'].iloc[-1])},"
               f" at most {int(df['links down'].max())}; "
               f"{int(df['changed facts'].sum())} facts changed.")
    st.dataframe(df.assign(time=[data.format_time(t) for t in df["time"]]), hide_index=True,
                 key="timeline_series")

    _link_history(url)

    ids = [int(b) for b in df["batch"]]
    pick = st.selectbox("Changes of batch", list(reversed(ids)), key="timeline_batch")
    if pick is None:
        return
    b = next((x for x in data.batches(url, limit=None) if x.batch_id == pick), None)
    if b is None:
        return
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
