"""Drawing the topology: one layout per topology (cached), then cheap plotly figures over it.

The layout is the expensive part (seconds at 1,000 nodes), so it is keyed by the topology's
*structure* only (node names, links, coordinates) and never by link state: a link going down
recolours an edge but never moves a node, which is what lets an operator keep their bearings
while the page refreshes. Everything else (filtering to a neighbourhood, highlighting a route)
is a subset of that one layout, and plotly's ``uirevision`` keeps the user's zoom across
refreshes.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import networkx as nx
import plotly.graph_objects as go
import streamlit as st

from netrules.store import TopoLink, TopoNode

__all__ = [
    "UP",
    "DOWN",
    "BROKEN",
    "ROUTE",
    "Edge",
    "Signature",
    "merge_links",
    "signature",
    "compute_layout",
    "layout",
    "neighbourhood",
    "figure",
]

UP = "#2ca02c"
DOWN = "#d62728"
BROKEN = "#ff7f0e"
ROUTE = "#1f77b4"
_UP_FADED = "rgba(44, 160, 44, 0.35)"
_NODE = "#4c566a"
#: Above this many visible nodes names are shown on hover only (labels would be a grey smear).
LABEL_LIMIT = 80


@dataclass(frozen=True)
class Edge:
    """One undirected edge of the drawing; ``state`` is 'down' if either direction is down."""

    u: str
    v: str
    state: str
    detail: str


#: (node names, undirected node pairs, coordinates or ()) -- hashable, for the layout cache.
Signature = tuple[tuple[str, ...], tuple[tuple[str, str], ...], tuple[tuple[float, float], ...]]


def merge_links(links: Iterable[TopoLink]) -> list[Edge]:
    """Fold the store's directed links into undirected edges.

    Links are stored per direction (``link(@S,D,C)`` lives at S), but two lines on top of each
    other are unreadable; the hover text keeps each direction's state and cost.
    """
    by_pair: dict[tuple[str, str], list[TopoLink]] = {}
    for ln in links:
        by_pair.setdefault(tuple(sorted((ln.src, ln.dst))), []).append(ln)  # type: ignore[arg-type]
    out = []
    for (u, v), dirs in sorted(by_pair.items()):
        state = "down" if any(d.state == "down" for d in dirs) else "up"
        detail = "<br>".join(
            f"{d.src}→{d.dst}: {d.state}" + ("" if d.cost is None else f", cost {d.cost:g}")
            for d in sorted(dirs, key=lambda d: (d.src, d.dst)))
        out.append(Edge(u, v, state, detail))
    return out


def _coords(nodes: Sequence[TopoNode]) -> tuple[tuple[float, float], ...]:
    """Use the topology's own coordinates when every node has them (geography reads best)."""
    for kx, ky in (("x", "y"), ("lon", "lat")):
        if nodes and all(isinstance(n.attrs.get(kx), int | float)
                         and isinstance(n.attrs.get(ky), int | float) for n in nodes):
            return tuple((float(n.attrs[kx]), float(n.attrs[ky])) for n in nodes)
    return ()


def signature(nodes: Sequence[TopoNode], links: Iterable[TopoLink]) -> Signature:
    """The part of a topology the layout depends on (never link state)."""
    names = tuple(n.name for n in nodes)
    known = set(names)
    pairs = sorted({tuple(sorted((ln.src, ln.dst))) for ln in links})
    extra = sorted({x for p in pairs for x in p} - known)
    coords = _coords(nodes) if not extra else ()
    return names + tuple(extra), tuple(pairs), coords  # type: ignore[return-value]


def compute_layout(sig: Signature) -> dict[str, tuple[float, float]]:
    """Node positions: the stored coordinates, else a seeded spring layout (stable across
    processes, so two operators looking at one topology see the same picture)."""
    names, pairs, coords = sig
    if coords:
        return dict(zip(names, coords, strict=True))
    g = nx.Graph()
    g.add_nodes_from(names)
    g.add_edges_from(pairs)
    if g.number_of_nodes() == 0:
        return {}
    # Fewer iterations for big graphs: 20 keeps 1,000 nodes to a few seconds, once.
    iterations = 50 if g.number_of_nodes() <= 400 else 20
    pos = nx.spring_layout(g, seed=7, iterations=iterations)
    return {n: (float(p[0]), float(p[1])) for n, p in pos.items()}


@st.cache_data(max_entries=8, show_spinner="Laying out the topology (once per topology)…")
def layout(sig: Signature) -> dict[str, tuple[float, float]]:
    """:func:`compute_layout`, cached across reruns and sessions."""
    return compute_layout(sig)


def neighbourhood(edges: Iterable[Edge], centers: Iterable[str], k: int) -> set[str]:
    """Nodes within ``k`` hops of any of ``centers`` (links in either state count: a down link
    is exactly what the operator wants to see around a node)."""
    adj: dict[str, set[str]] = {}
    for e in edges:
        adj.setdefault(e.u, set()).add(e.v)
        adj.setdefault(e.v, set()).add(e.u)
    seen = set(centers)
    frontier = deque((c, 0) for c in seen)
    while frontier:
        node, d = frontier.popleft()
        if d >= k:
            continue
        for nb in adj.get(node, ()):
            if nb not in seen:
                seen.add(nb)
                frontier.append((nb, d + 1))
    return seen


def _segments(pairs: Iterable[tuple[str, str]], pos: Mapping[str, tuple[float, float]]
              ) -> tuple[list[float | None], list[float | None]]:
    """x/y lists drawing every pair as one segment of a single trace (None breaks the line),
    so 5,000 links cost one SVG path, not 5,000."""
    xs: list[float | None] = []
    ys: list[float | None] = []
    for a, b in pairs:
        if a in pos and b in pos:
            xs += [pos[a][0], pos[b][0], None]
            ys += [pos[a][1], pos[b][1], None]
    return xs, ys


def figure(
    nodes: Sequence[str],
    edges: Sequence[Edge],
    pos: Mapping[str, tuple[float, float]],
    *,
    visible: set[str] | None = None,
    route: Sequence[str] = (),
    broken: Sequence[Sequence[str]] = (),
    focus: Iterable[str] = (),
    status: Mapping[str, str] | None = None,
    labels: bool | None = None,
    height: int | None = None,
    view: str = "",
) -> go.Figure:
    """The topology as a plotly figure.

    ``visible`` restricts the drawing to those nodes (a k-hop neighbourhood or a name filter);
    ``route`` is a path drawn thick blue; ``broken`` are paths a failed link broke, drawn
    dashed orange; ``focus`` nodes are drawn larger; ``status`` ('isolated', 'degraded', 'up'
    per node) colours an isolated node red and a degraded one orange, so a cut-off node does
    not look like its neighbours. ``view`` names the current filter: zoom and pan survive
    refreshes until it changes.
    """
    shown = [n for n in nodes if visible is None or n in visible]
    shown_set = set(shown)
    vis_edges = [e for e in edges if e.u in shown_set and e.v in shown_set]
    small = len(shown) <= LABEL_LIMIT
    labels = small if labels is None else labels
    fig = go.Figure()

    def lines(name: str, pairs: list[tuple[str, str]], color: str, width: float,
              dash: str = "solid") -> None:
        xs, ys = _segments(pairs, pos)
        if xs:
            fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name=name, hoverinfo="skip",
                                     line={"color": color, "width": width, "dash": dash}))

    up = [(e.u, e.v) for e in vis_edges if e.state == "up"]
    down = [(e.u, e.v) for e in vis_edges if e.state == "down"]
    # On a big map the up links are a texture: fade them so the red ones stand out.
    lines(f"link up ({len(up)})", up, UP if small else _UP_FADED, 1.5 if small else 0.7)
    broken_pairs = [(p[i], p[i + 1]) for p in broken for i in range(len(p) - 1)
                    if p[i] in shown_set and p[i + 1] in shown_set]
    lines(f"route lost ({len(broken)})", broken_pairs, BROKEN, 2.5, "dash")
    lines(f"link down ({len(down)})", down, DOWN, 4)
    route_pairs = [(route[i], route[i + 1]) for i in range(len(route) - 1)]
    lines("best path", route_pairs, ROUTE, 6)

    # Hover targets at link midpoints: a line itself gives no hover in plotly. Only for down
    # links on big graphs, to keep the page light.
    hover_edges = vis_edges if len(vis_edges) <= 600 else [e for e in vis_edges
                                                           if e.state == "down"]
    if hover_edges:
        fig.add_trace(go.Scatter(
            x=[(pos[e.u][0] + pos[e.v][0]) / 2 for e in hover_edges if e.u in pos and e.v in pos],
            y=[(pos[e.u][1] + pos[e.v][1]) / 2 for e in hover_edges if e.u in pos and e.v in pos],
            mode="markers", marker={"size": 8, "opacity": 0}, showlegend=False,
            hovertext=[f"{e.u} – {e.v}<br>{e.detail}" for e in hover_edges
                       if e.u in pos and e.v in pos],
            hoverinfo="text", name="links"))

    down_nodes = {x for e in vis_edges if e.state == "down" for x in (e.u, e.v)}
    on_route = set(route)
    focus_set = set(focus)
    placed = [n for n in shown if n in pos]
    status = status or {}
    colors = [ROUTE if n in on_route else DOWN if status.get(n) == "isolated"
              else BROKEN if status.get(n) == "degraded" or n in down_nodes else _NODE
              for n in placed]
    sizes = [(18 if small else 11) if n in focus_set else (12 if small else 6) for n in placed]
    fig.add_trace(go.Scatter(
        x=[pos[n][0] for n in placed], y=[pos[n][1] for n in placed],
        mode="markers+text" if labels else "markers", name="node", showlegend=False,
        text=placed if labels else None, textposition="top center",
        textfont={"size": 13 if small else 9},
        customdata=placed, hoverinfo="text",
        hovertext=[f"{n} ({status[n]})" if n in status else n for n in placed],
        marker={"color": colors, "size": sizes, "line": {"color": "white", "width": 1}}))
    fig.update_layout(
        height=height or (620 if small else 820), margin={"l": 5, "r": 5, "t": 30, "b": 5},
        plot_bgcolor="white", paper_bgcolor="white", uirevision=view or "all",
        legend={"orientation": "h", "y": 1.02, "x": 0, "yanchor": "bottom"},
        xaxis={"visible": False}, yaxis={"visible": False, "scaleanchor": "x"},
        hovermode="closest", clickmode="event+select", dragmode="pan")
    return fig
