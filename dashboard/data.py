"""Every store read the dashboard makes, each cached for a couple of seconds.

Streamlit reruns the script on every click and on every live refresh; without a cache each rerun
would query the store again, once per element. A short TTL keeps the page live while the
pipeline writes and bounds the load to about one query of each kind per TTL, however many
browser tabs are open. The store is opened once per URL, read-only, and shared between sessions
(it is thread-safe). Nothing here imports Spark or the engine: the dashboard reads the store only.

All arguments are passed to the store's read API, which binds them as SQL parameters; nothing a
user typed is ever part of SQL text.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import UTC, datetime

import streamlit as st

from netrules import settings
from netrules.facts import Fact, Value
from netrules.lang import ast, parse_atom
from netrules.store import (
    BatchSummary,
    Change,
    Store,
    TopoLink,
    TopoNode,
    history,
    open_store,
    queries,
    whynot,
)
from netrules.store.history import Point, pair_key
from netrules.store.incidents import Incident, read_incidents
from netrules.store.records import Alert

__all__ = [
    "TTL",
    "DEFAULT_STORE",
    "default_store_url",
    "store",
    "clear",
    "meta",
    "last_batch",
    "relations",
    "topology",
    "alerts",
    "batches",
    "changes",
    "read_view",
    "contains",
    "derivations",
    "broken_routes",
    "incidents",
    "link_history",
    "program_arity",
    "series",
    "node_status",
    "query",
    "why_not",
    "format_time",
    "where_items",
]

#: Seconds a read stays cached; below the default refresh period so each refresh sees new data.
TTL = 2.0
#: The store the dashboard opens unless told otherwise: the CLI's default, from one table.
DEFAULT_STORE: str = settings.get("store").default


def default_store_url() -> str:
    """The store named by ``NETRULES_STORE`` (set by ``netrules dashboard``), else the default."""
    return os.environ.get(settings.envvar("store")) or DEFAULT_STORE


@st.cache_resource(show_spinner=False, max_entries=4)
def store(url: str) -> Store:
    """The store at ``url``, opened read-only once per process (a failure is not cached, so a
    store that does not exist yet is retried on the next refresh)."""
    return open_store(url, read_only=True)


def clear() -> None:
    """Drop every cached read (the "refresh now" button)."""
    for fn in (meta, last_batch, relations, topology, alerts, batches, changes, read_view,
               contains, derivations, broken_routes, incidents, series, query, why_not,
               program_arity, link_history):
        fn.clear()


@st.cache_data(ttl=TTL, show_spinner=False)
def meta(url: str) -> dict[str, str]:
    return store(url).meta()


@st.cache_data(ttl=TTL, show_spinner=False)
def last_batch(url: str) -> int | None:
    return store(url).last_batch_id()


@st.cache_data(ttl=5 * TTL, show_spinner=False)
def relations(url: str) -> dict[str, int]:
    """Fact count per view; a GROUP BY over every view, so cached a little longer."""
    return store(url).relations()


@st.cache_data(ttl=TTL, show_spinner=False)
def topology(url: str) -> tuple[list[TopoNode], list[TopoLink]]:
    return store(url).topology()


@st.cache_data(ttl=TTL, show_spinner=False)
def alerts(url: str, active_only: bool = False, limit: int | None = 200) -> list[Alert]:
    return store(url).alerts(active_only=active_only, limit=limit)


@st.cache_data(ttl=TTL, show_spinner=False)
def batches(url: str, limit: int | None = 500) -> list[BatchSummary]:
    return store(url).batches(limit=limit)


@st.cache_data(ttl=TTL, show_spinner=False)
def changes(url: str, since_batch: int = -1, relation: str | None = None,
            limit: int | None = 10_000) -> list[Change]:
    return store(url).changes(since_batch=since_batch, relation=relation, limit=limit)


@st.cache_data(ttl=TTL, show_spinner=False)
def read_view(url: str, relation: str, where: tuple[tuple[int, Value], ...] = (),
              limit: int | None = 5_000) -> list[Fact]:
    """Facts of ``relation`` matching ``where`` (``(position, value)`` pairs, hashable so the
    call can be cached)."""
    return store(url).read_view(relation, where=dict(where) or None, limit=limit)


@st.cache_data(ttl=TTL, show_spinner=False)
def contains(url: str, fact: Fact) -> bool:
    return store(url).contains(fact)


@st.cache_data(ttl=TTL, show_spinner=False)
def derivations(url: str, fact: Fact) -> list[tuple[str, list[Fact]]]:
    return store(url).derivations(fact)


def _path_edges(path: tuple[Value, ...]) -> set[tuple[str, str]]:
    """A path's links as undirected pairs: a route *to* a node crosses its links the other
    way round from a route *from* it, and both are lost when the cable is cut."""
    nodes = [str(n) for n in path]
    return {pair_key(a, b) for a, b in zip(nodes, nodes[1:], strict=False)}


@st.cache_data(ttl=TTL, show_spinner=False)
def broken_routes(url: str, relation: str = queries.ROUTE, recent_batches: int = 50,
                  limit: int = 200) -> list[dict[str, object]]:
    """Routes that a currently-down link broke: ``relation`` facts removed in the last
    ``recent_batches`` batches whose path crosses a down link and that do not hold now.

    Why from the change log rather than the alerts: a route that was re-routed raises no alert
    but is still something the operator wants to see on the map. Each result has ``src``,
    ``dst``, ``path`` (node names), ``cost``, ``links`` (the down links it crossed) and
    ``status`` ('lost' when the pair has no route now, else 'rerouted').
    """
    s = store(url)
    down = {pair_key(ln.src, ln.dst) for ln in topology(url)[1] if ln.state == "down"}
    if not down or not s.changes(relation=relation, limit=1):
        return []
    last = s.last_batch_id() or 0
    out: dict[tuple[str, str], dict[str, object]] = {}
    for ch in reversed(s.changes(since_batch=last - recent_batches, relation=relation,
                                 limit=50_000)):
        f = ch.fact
        if ch.op != "-" or len(f.args) < 3 or not isinstance(f.args[2], tuple):
            continue
        key = (str(f.args[0]), str(f.args[1]))
        if key in out:
            continue
        crossed = sorted(_path_edges(f.args[2]) & down)
        if not crossed or s.contains(f):
            continue
        now = s.read_view(relation, where={0: f.args[0], 1: f.args[1]}, limit=1)
        out[key] = {"src": key[0], "dst": key[1], "path": [str(n) for n in f.args[2]],
                    "cost": f.args[3] if len(f.args) > 3 else None,
                    "links": crossed, "status": "rerouted" if now else "lost",
                    "batch": ch.batch_id}
        if len(out) >= limit:
            break
    return sorted(out.values(), key=lambda r: (r["status"] != "lost", r["src"], r["dst"]))


@st.cache_data(ttl=60, show_spinner=False)
def program_arity(url: str) -> dict[str, int]:
    """Arity of every relation of the store's program (empty for an unknown program)."""
    plan = queries.stored_plan(store(url))
    return {} if plan is None else {r: n for r, n in plan.arity.items() if r not in plan.aux}


@st.cache_data(ttl=TTL, show_spinner=False)
def incidents(url: str, active_only: bool = False) -> list[Incident]:
    """Alerts grouped by root cause (:mod:`netrules.store.incidents`), newest first."""
    return read_incidents(store(url), active_only=active_only)


@st.cache_data(ttl=TTL, show_spinner=False)
def link_history(url: str, a: str, b: str) -> list[Change]:
    """Both directions of link a–b going up ('+') and down ('-'), newest first."""
    rows = [c for s, d in ((a, b), (b, a))
            for c in store(url).changes_matching(queries.LINK, {0: s, 1: d}, limit=500)]
    return sorted(rows, key=lambda c: (c.batch_id, c.seq), reverse=True)


@st.cache_data(ttl=TTL, show_spinner=False)
def series(url: str) -> list[Point]:
    """Links down, active incidents and changed facts after each batch."""
    return history.series(store(url), incidents(url))


def node_status(url: str) -> dict[str, str]:
    """'isolated', 'degraded' or 'up' per node, from the cached topology."""
    return history.node_status(topology(url)[1])


@st.cache_data(ttl=TTL, show_spinner=False)
def query(url: str, text: str) -> tuple[dict[str, int], list[Fact]]:
    """Facts matching one NDlog atom typed by the user, and each named variable's first
    position: parsed by the NDlog parser and answered by :func:`netrules.store.queries.query`,
    exactly as ``netrules query`` answers it."""
    atom = parse_atom(text)
    names: dict[str, int] = {}
    for i, t in enumerate(atom.args):
        if isinstance(t, ast.Var) and not t.name.startswith("_"):
            names.setdefault(t.name, i)
    return names, queries.query(store(url), atom)


@st.cache_data(ttl=TTL, show_spinner=False)
def why_not(url: str, relation: str, src: str, dst: str) -> whynot.WhyNot:
    """Why ``relation(src, dst, ...)`` does not hold (:mod:`netrules.store.whynot`)."""
    atom = ast.Atom(relation, (ast.Const(src), ast.Const(dst)))
    return whynot.why_not(store(url), atom)


def format_time(t: float | None) -> str:
    """Wall-clock times as UTC timestamps; small numbers are simulated seconds, shown as such."""
    if t is None:
        return ""
    if t > 1e9:
        return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return f"t={t:g}s"


def where_items(where: Mapping[int, Value]) -> tuple[tuple[int, Value], ...]:
    """A ``where`` mapping in the hashable form :func:`read_view` takes."""
    return tuple(sorted(where.items()))
