"""Reachability: ask the store a question in NDlog, or pick two nodes; see the whole matrix on a
small network, or how many pairs are reachable over time on a large one.

The query box takes one atom (``reachable(@a,X)``), parsed by the real NDlog parser so errors
carry the same caret message as the CLI. Constants become ``where`` values handed to the store
as bound parameters; variables become result columns. Nothing typed is evaluated or spliced
into SQL.
"""

from __future__ import annotations

from typing import NamedTuple

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dashboard import data
from netrules.errors import NdlogSyntaxError
from netrules.facts import Fact, Value, format_value
from netrules.lang import parse_atom
from netrules.lang.ast import Atom, Const, ListExpr, Neg, Term, Var

__all__ = ["TITLE", "MATRIX_LIMIT", "QueryError", "Lookup", "lookup", "answer",
           "counts_over_time", "render"]

TITLE = "Reachability"
#: Up to this many nodes the full reachability matrix is drawn (60² cells still read well).
MATRIX_LIMIT = 60
_REL = "reachable"


class QueryError(ValueError):
    """The query parses but cannot be asked of the store (e.g. an expression argument)."""


class _NotConst(Exception):
    pass


def _const(t: Term) -> Value:
    if isinstance(t, Const):
        return t.value
    if isinstance(t, ListExpr):
        return tuple(_const(x) for x in t.items)
    if isinstance(t, Neg) and isinstance(t.operand, Const) and isinstance(
            t.operand.value, int | float):
        return -t.operand.value
    raise _NotConst


class Lookup(NamedTuple):
    """A query as a store lookup: ``where`` maps argument positions to constants, ``variables``
    maps each named variable to the positions it occupies."""

    relation: str
    where: dict[int, Value]
    variables: dict[str, list[int]]
    arity: int


def lookup(atom: Atom) -> Lookup:
    """Translate a parsed query atom into a store lookup; raise QueryError for arguments that
    are neither constants nor variables (the dashboard does not evaluate expressions)."""
    where: dict[int, Value] = {}
    variables: dict[str, list[int]] = {}
    for i, t in enumerate(atom.args):
        if isinstance(t, Var):
            if not t.name.startswith("_"):
                variables.setdefault(t.name, []).append(i)
            continue
        try:
            where[i] = _const(t)
        except _NotConst:
            raise QueryError(f"argument {i + 1} ({t}): a query argument must be a constant "
                             "or a variable") from None
    return Lookup(atom.relation, where, variables, len(atom.args))


def answer(url: str, q: Lookup, limit: int = 5_000) -> list[Fact]:
    """Facts matching the lookup: constants by the store, repeated variables (``link(@X,X,C)``)
    and arity here."""
    facts = data.read_view(url, q.relation, data.where_items(q.where), limit=limit)
    out = []
    for f in facts:
        if len(f.args) != q.arity:
            continue
        if all(len({f.args[p] for p in ps}) == 1 for ps in q.variables.values()):
            out.append(f)
    return out


def _query_box(url: str, names: list[str], views: dict[str, int]) -> None:
    first = format_value(names[0]) if names else "a"
    text = st.text_input("Query (one NDlog atom; variables are capitalised)",
                         value=f"{_REL}(@{first},X)", key="reach_query")
    if not text.strip():
        return
    try:
        q = lookup(parse_atom(text))
    except NdlogSyntaxError as err:
        st.error("That is not an NDlog atom:")
        st.code(err.render(), language=None)
        return
    except QueryError as err:
        st.error(str(err))
        return
    if q.relation not in views:
        st.error(f"No view named {q.relation!r} in this store (or it is empty). Views: "
                 + (", ".join(f"{r} ({n})" for r, n in views.items()) or "none yet") + ".")
        return
    facts = answer(url, q)
    if not q.variables:
        verdict = "yes" if facts else "no"
        st.markdown(f"**{verdict}**: `{text.strip()}` {'holds' if facts else 'does not hold'}.")
        return
    st.caption(f"{len(facts)} answer{'s' if len(facts) != 1 else ''}"
               + (" (first 5,000)" if len(facts) >= 5_000 else ""))
    rows = [{v: format_value(f.args[ps[0]]) for v, ps in q.variables.items()} for f in facts]
    st.dataframe(pd.DataFrame(rows, columns=list(q.variables)), hide_index=True,
                 key="reach_result")


def _pair(url: str, names: list[str]) -> None:
    c1, c2 = st.columns(2)
    src = c1.selectbox("Source", names, index=0, key="reach_src")
    dst = c2.selectbox("Destination", names, index=len(names) - 1, key="reach_dst")
    if src is None or dst is None:
        return
    if data.read_view(url, _REL, ((0, src), (1, dst)), limit=1):
        st.success(f"{src} can reach {dst}.")
    else:
        st.error(f"{src} cannot reach {dst}.")


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
    _query_box(url, names, views)
    if _REL not in views and not data.changes(url, relation=_REL, limit=1):
        st.info("This store's program has no `reachable` view; the query box above can ask "
                "any view.")
        return
    if names:
        st.subheader("Can one node reach another?")
        _pair(url, names)
    if names and len(names) <= MATRIX_LIMIT:  # read at call time: tests lower it
        st.subheader("Reachability matrix")
        _matrix(url, names)
    else:
        st.subheader("Reachable pairs over time")
        _over_time(url, views.get(_REL, 0))
