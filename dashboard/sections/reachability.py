"""Reachability: ask the store a question in NDlog, or pick two nodes; see the whole matrix on a
small network, or how many pairs are reachable over time on a large one.

The query box takes one atom, parsed by the real NDlog parser and answered by
:mod:`netrules.store.queries`, the module behind ``netrules query``: the same question gets the
same answer (and the same error) in both. It opens on a view the store's program has
(``reachable`` where it exists, else the route view), so a path-vector store does not open on
an error. An empty answer during an incident says "outage" and why, not just "no".
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dashboard import data
from dashboard.sections import routes
from netrules.errors import NdlogSyntaxError, NetrulesError
from netrules.facts import format_value
from netrules.lang import ast, parse_atom
from netrules.store import queries

__all__ = ["TITLE", "MATRIX_LIMIT", "PAIR_RELATIONS", "pair_relation", "counts_over_time",
           "render"]

TITLE = "Reachability"
#: Up to this many nodes the full reachability matrix is drawn (60² cells still read well).
MATRIX_LIMIT = 60
#: Views keyed by (source, destination) that answer "can S reach D?", best first.
PAIR_RELATIONS = (queries.REACH, queries.ROUTE, "bestCost", "minCost")
_REL = queries.REACH


def pair_relation(views: dict[str, int], program_relations: set[str]) -> str | None:
    """The view the page asks about: the first of :data:`PAIR_RELATIONS` the program has."""
    return next((r for r in PAIR_RELATIONS if r in views or r in program_relations), None)


def _default_query(rel: str, first: str, arity: int) -> str:
    rest = ",".join(["X", *("_" * (arity - 2))]) if arity > 1 else ""
    return f"{rel}(@{first},{rest})" if rest else f"{rel}(@{first})"


def _query_box(url: str, names: list[str], rel: str | None, arity: int) -> None:
    first = format_value(names[0]) if names else "a"
    default = _default_query(rel, first, arity) if rel else f"link(@{first},X,C)"
    text = st.text_input("Query (one NDlog atom; variables are capitalised)", value=default,
                         key="reach_query")
    if not text.strip():
        return
    try:
        names_at, facts = data.query(url, text.strip())
    except NdlogSyntaxError as err:
        st.error("That is not an NDlog atom:")
        st.code(err.render(), language=None)
        return
    except NetrulesError as err:
        st.error(str(err))
        return
    if not facts:
        _outage(url, text.strip())
    if not names_at:
        verdict = "yes" if facts else "no"
        st.markdown(f"**{verdict}**: `{text.strip()}` {'holds' if facts else 'does not hold'}.")
        return
    st.caption(f"{len(facts)} answer{'s' if len(facts) != 1 else ''}")
    rows = [{v: format_value(f.args[i]) for v, i in names_at.items()} for f in facts[:5_000]]
    st.dataframe(pd.DataFrame(rows, columns=list(names_at)), hide_index=True,
                 key="reach_result")


def _outage(url: str, text: str) -> None:
    """An empty answer naming a node an active incident cut off is an outage, not a "no"."""
    consts = {str(t.value) for t in parse_atom(text).args
              if isinstance(t, ast.Const) and isinstance(t.value, str)}
    inc = next((i for i in data.incidents(url, active_only=True) if consts & i.nodes), None)
    if inc is not None:
        st.error(f"Outage: the answer is empty while this incident is active: {inc.title()}",
                 icon=":material/report:")


def _pair(url: str, names: list[str], rel: str) -> None:
    c1, c2 = st.columns(2)
    for key in ("reach_src", "reach_dst"):  # a deep link may name a node that left
        if key in st.session_state and st.session_state[key] not in names:
            del st.session_state[key]
    src = c1.selectbox("Source", names, index=0, key="reach_src")
    dst = c2.selectbox("Destination", names, key="reach_dst",
                       index=None if "reach_dst" in st.session_state else len(names) - 1)
    if src is None or dst is None or src == dst:
        return
    if data.read_view(url, rel, ((0, src), (1, dst)), limit=1):
        st.success(f"{src} can reach {dst} ({rel}).")
        return
    answer = data.why_not(url, rel, src, dst)
    if answer.incident is not None:
        st.error(f"Outage: {src} cannot reach {dst}: {answer.incident.title()}",
                 icon=":material/report:")
    else:
        st.error(f"{src} cannot reach {dst} ({rel} has no fact for the pair).")
    routes.why_not(url, rel, src, dst)


def _matrix(url: str, names: list[str]) -> None:
    idx = {n: i for i, n in enumerate(names)}
    z = [[0] * len(names) for _ in names]
    facts = data.read_view(url, _REL, limit=len(names) ** 2 + 1)
    for f in facts:
        s, d = str(f.args[0]), str(f.args[1])
        if s in idx and d in idx:
            z[idx[s]][idx[d]] = 1
    pairs = len(names) * (len(names) - 1)
    n = sum(map(sum, z)) - sum(z[i][i] for i in range(len(names)))
    st.caption(f"{n} of {pairs} ordered pairs reachable (row: source, column: destination).")
    fig = go.Figure(go.Heatmap(
        z=z, x=names, y=names, zmin=0, zmax=1, showscale=False, xgap=1, ygap=1,
        colorscale=[[0, "#eceff4"], [1, "#2ca02c"]],
        hovertemplate="%{y} → %{x}: %{z}<extra></extra>"))
    size = max(300, min(900, 22 * len(names) + 120))
    fig.update_layout(height=size, margin={"l": 5, "r": 5, "t": 5, "b": 5},
                      yaxis={"autorange": "reversed"}, xaxis={"side": "top"})
    st.plotly_chart(fig, key="reach_matrix")


def counts_over_time(url: str, current: int, last: int = 200) -> pd.DataFrame:
    """Reachable pairs after each of the last ``last`` batches, walked back from today's
    count, so only the recent change log is read (never the whole view)."""
    batches = data.batches(url, limit=last)
    if not batches:
        return pd.DataFrame(columns=["batch", "reachable pairs"])
    delta: dict[int, int] = {}
    for ch in data.changes(url, since_batch=batches[0].batch_id - 1, relation=_REL,
                           limit=200_000):
        delta[ch.batch_id] = delta.get(ch.batch_id, 0) + (1 if ch.op == "+" else -1)
    counts, n = [], current
    for b in reversed(batches):
        counts.append({"batch": b.batch_id, "reachable pairs": n})
        n -= delta.get(b.batch_id, 0)
    return pd.DataFrame(list(reversed(counts)))


def _over_time(url: str, current: int) -> None:
    df = counts_over_time(url, current)
    st.caption(f"{current} reachable pairs now; after each of the last {len(df)} batches:")
    if len(df):
        st.line_chart(df, x="batch", y="reachable pairs")


def render(url: str) -> None:
    nodes, links = data.topology(url)
    names = sorted({n.name for n in nodes} | {x for ln in links for x in (ln.src, ln.dst)})
    views = data.relations(url)
    plan_rels = set(data.program_arity(url))
    rel = pair_relation(views, plan_rels)
    arity = data.program_arity(url).get(rel or "", 2)
    _query_box(url, names, rel, arity)
    if rel is None:
        st.info("This store's program has no reachability or route view; the query box above "
                "can ask any view.")
        return
    if names:
        st.subheader(f"Can one node reach another? ({rel})")
        _pair(url, names, rel)
    if rel != _REL:
        return
    if names and len(names) <= MATRIX_LIMIT:  # read at call time: tests lower it
        st.subheader("Reachability matrix")
        _matrix(url, names)
    else:
        st.subheader("Reachable pairs over time")
        _over_time(url, views.get(_REL, 0))
