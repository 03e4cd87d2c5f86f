"""Drawing the topology: one layout per topology (cached), then a cheap SVG over it.

The layout is the expensive part (seconds at 1,000 nodes), so it is keyed by the topology's
*structure* only (node names, links, coordinates) and never by link state: a link going down
recolours an edge but never moves a node, which is what lets an operator keep their bearings
while the page refreshes. Everything else (filtering to a neighbourhood, highlighting a route)
is a subset of that one layout. The SVG is built here and shown by a few lines of script
(:func:`show`): wheel zoom and drag pan that survive refreshes until the view changes, and a
click on a node sent back to Python; no charting library has to load before the map shows.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path

import networkx as nx
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
    "svg",
    "show",
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


def _fit(pos: Mapping[str, tuple[float, float]], names: Iterable[str], width: int,
         height: int, pad_x: float, pad_y: float) -> tuple[dict[str, tuple[float, float]], int]:
    """Screen coordinates for ``names`` and the height they need: one scale on both axes (a map
    must not stretch), y pointing up as in the layout, centred across, and no blank band above
    or below a map wider than it is tall."""
    pts = {n: pos[n] for n in names if n in pos}
    if not pts:
        return {}, height
    xs = [p[0] for p in pts.values()]
    ys = [p[1] for p in pts.values()]
    span_x, span_y = max(xs) - min(xs), max(ys) - min(ys)
    fits = [(width - 2 * pad_x) / span_x if span_x else None,
            (height - 2 * pad_y) / span_y if span_y else None]
    scale = min((f for f in fits if f is not None), default=1.0)
    used = min(height, max(160, round(span_y * scale + 2 * pad_y)))
    cx, cy = (max(xs) + min(xs)) / 2, (max(ys) + min(ys)) / 2
    return {n: (width / 2 + (x - cx) * scale, used / 2 - (y - cy) * scale)
            for n, (x, y) in pts.items()}, used


def svg(
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
) -> str:
    """The topology as one SVG document, built here so the browser needs no charting library.

    Plotly's bundle (4.7 MB of script) was most of the dashboard's first paint; an SVG costs
    the page nothing to load. ``visible`` restricts the drawing to those nodes (a k-hop
    neighbourhood or a name filter); ``route`` is a path drawn thick blue; ``broken`` are paths
    a failed link broke, drawn dashed orange; ``focus`` nodes are drawn larger; ``status``
    ('isolated', 'degraded', 'up' per node) colours an isolated node red and a degraded one
    orange, so a cut-off node does not look like its neighbours. Hovering a node or link shows
    its ``<title>``; each node group carries its name in ``data-node`` for clicks.
    """
    shown = [n for n in nodes if visible is None or n in visible]
    shown_set = set(shown)
    vis_edges = [e for e in edges if e.u in shown_set and e.v in shown_set]
    small = len(shown) <= LABEL_LIMIT
    labels = small if labels is None else labels
    width, height = 1000, height or (620 if small else 820)
    # room for the names: half a long name beside an edge node, a line above the top one
    xy, height = _fit(pos, shown, width, height, 60 if labels else 12, 30 if labels else 12)
    out = [f'<svg class="netmap" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} '
           f'{height}" width="100%" style="max-height:{height}px;display:block" '
           'font-family="sans-serif">']
    legend: list[tuple[str, str, float, str]] = []

    def lines(name: str, pairs: Sequence[tuple[str, str]], color: str, width_: float,
              dash: str = "", titles: Mapping[tuple[str, str], str] | None = None) -> None:
        segs = [(a, b) for a, b in pairs if a in xy and b in xy]
        if not segs:
            return
        legend.append((name, color, width_, dash))
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<g class="trace" data-name="{escape(name)}" stroke="{color}" '
                   f'stroke-width="{width_:g}" stroke-linecap="round"{dash_attr}>')
        for a, b in segs:
            (x1, y1), (x2, y2) = xy[a], xy[b]
            title = (titles or {}).get((a, b))
            body = f"<title>{escape(title)}</title>" if title else ""
            out.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}">'
                       f"{body}</line>")
        out.append("</g>")

    # A title per link on small maps; on big ones only the down links carry one, to keep the
    # page light (the same rule plotly's hover targets followed).
    titled = vis_edges if len(vis_edges) <= 600 else [e for e in vis_edges if e.state == "down"]
    titles = {(e.u, e.v): f"{e.u} – {e.v}\n{e.detail.replace('<br>', chr(10))}"
              for e in titled}
    up = [(e.u, e.v) for e in vis_edges if e.state == "up"]
    down = [(e.u, e.v) for e in vis_edges if e.state == "down"]
    # On a big map the up links are a texture: fade them so the red ones stand out.
    lines(f"link up ({len(up)})", up, UP if small else _UP_FADED, 1.5 if small else 0.7,
          titles=titles)
    broken_pairs = [(p[i], p[i + 1]) for p in broken for i in range(len(p) - 1)
                    if p[i] in shown_set and p[i + 1] in shown_set]
    lines(f"route lost ({len(broken)})", broken_pairs, BROKEN, 2.5, "6 4")
    lines(f"link down ({len(down)})", down, DOWN, 4, titles=titles)
    lines("best path", [(route[i], route[i + 1]) for i in range(len(route) - 1)], ROUTE, 6)

    down_nodes = {x for e in vis_edges if e.state == "down" for x in (e.u, e.v)}
    on_route = set(route)
    focus_set = set(focus)
    status = status or {}
    out.append('<g class="nodes" stroke="white" stroke-width="1">')
    for n in shown:
        if n not in xy:
            continue
        x, y = xy[n]
        color = (ROUTE if n in on_route else DOWN if status.get(n) == "isolated"
                 else BROKEN if status.get(n) == "degraded" or n in down_nodes else _NODE)
        r = ((18 if small else 11) if n in focus_set else (12 if small else 6)) / 2
        hover = f"{n} ({status[n]})" if n in status else n
        label = (f'<text x="{x:.1f}" y="{y - r - 4:.1f}" text-anchor="middle" stroke="none" '
                 f'fill="#262730" font-size="{13 if small else 9}">{escape(n)}</text>'
                 if labels else "")
        out.append(f'<g class="node" data-node="{escape(n)}" style="cursor:pointer">'
                   f"<title>{escape(hover)}</title>"
                   f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r:g}" fill="{color}"/>{label}</g>')
    out.append("</g></svg>")
    # The legend sits outside the map, so zooming the map leaves it in place.
    keys = "".join(
        f'<span style="margin-right:1.4em;white-space:nowrap"><svg width="28" height="10">'
        f'<line x1="0" y1="5" x2="28" y2="5" stroke="{color}" stroke-width="{min(w, 4):g}"'
        + (f' stroke-dasharray="{dash}"' if dash else "") + "/></svg> "
        f'<span class="legendtext">{escape(name)}</span></span>'
        for name, color, w, dash in legend)
    return f'<div class="netmap-legend" style="font-size:0.85rem">{keys}</div>' + "".join(out)


# Mounted in the page itself (no iframe, no shadow root): the map is part of the page's text
# and DOM like any Streamlit element. Zoom is kept per ``view`` in a module-level map that
# lives as long as the page, as plotly's ``uirevision`` kept it.
_JS = """
const zooms = new Map();
let preloading = false;
function preload(urls) {
  if (preloading || !urls.length) return;
  preloading = true;
  const load = () => urls.forEach((url) => {
    import(new URL(url, document.baseURI).href).catch(() => {});
  });
  const idle = window.requestIdleCallback || ((f) => setTimeout(f, 200));
  setTimeout(() => idle(load, { timeout: 3000 }), 500);
}
export default function (component) {
  const { parentElement, data, setTriggerValue } = component;
  let host = parentElement.querySelector(".netmap-host");
  if (!host) {
    host = document.createElement("div");
    host.className = "netmap-host";
    host.style.touchAction = "none";
    parentElement.appendChild(host);
  }
  if (host._markup !== data.markup) {
    host.innerHTML = data.markup;
    host._markup = data.markup;
    const fresh = host.querySelector("svg.netmap");
    host._home = fresh ? fresh.getAttribute("viewBox") : null;
  }
  const svg = host.querySelector("svg.netmap");
  if (!svg) return;
  host._svg = svg;
  host._view = data.view;
  svg.setAttribute("viewBox", zooms.get(data.view) || host._home);
  host._pick = (name) => setTriggerValue("node", name);
  preload(data.preload || []);
  if (host._wired) return;
  host._wired = true;
  const box = () => host._svg.viewBox.baseVal;
  const set = (x, y, w, h) => {
    const v = `${x} ${y} ${w} ${h}`;
    host._svg.setAttribute("viewBox", v);
    zooms.set(host._view, v);
  };
  host.addEventListener("wheel", (e) => {
    e.preventDefault();
    const b = box(), r = host._svg.getBoundingClientRect();
    const px = b.x + (e.clientX - r.left) / r.width * b.width;
    const py = b.y + (e.clientY - r.top) / r.height * b.height;
    const f = e.deltaY > 0 ? 1.15 : 1 / 1.15;
    set(px - (px - b.x) * f, py - (py - b.y) * f, b.width * f, b.height * f);
  }, { passive: false });
  let drag = null;
  host.addEventListener("pointerdown", (e) => {
    if (e.button === 0) drag = { x: e.clientX, y: e.clientY, moved: false };
  });
  host.addEventListener("pointermove", (e) => {
    if (!drag) return;
    if (Math.abs(e.clientX - drag.x) + Math.abs(e.clientY - drag.y) > 3) drag.moved = true;
    if (!drag.moved) return;
    const b = box(), r = host._svg.getBoundingClientRect();
    set(b.x - (e.clientX - drag.x) * b.width / r.width,
        b.y - (e.clientY - drag.y) * b.height / r.height, b.width, b.height);
    drag.x = e.clientX;
    drag.y = e.clientY;
  });
  const end = () => { host._moved = !!(drag && drag.moved); drag = null; };
  host.addEventListener("pointerup", end);
  host.addEventListener("pointerleave", end);
  host.addEventListener("click", (e) => {
    const g = e.target.closest("g.node");
    if (g && !host._moved) host._pick(g.dataset.node);
  });
  host.addEventListener("dblclick", () => {
    host._svg.setAttribute("viewBox", host._home);
    zooms.delete(host._view);
  });
}
"""
def _chart_chunks() -> list[str]:
    """Streamlit's script chunk for plotly charts, as a page-relative URL (none if this
    Streamlit names it otherwise). The map imports it once the page is idle after the map is
    drawn: the first paint no longer waits for its 4.7 MB, and neither does the first section
    with a plotly chart nor the click after it (evaluating it is a 0.7 s long task)."""
    js = Path(st.__file__).resolve().parent / "static" / "static" / "js"
    return [f"static/js/{p.name}" for p in sorted(js.glob("PlotlyChart.*.js"))]


_CHART_CHUNKS = _chart_chunks()
_map = st.components.v2.component("netrules_map", js=_JS, isolate_styles=False)


def show(markup: str, *, key: str, view: str = "",
         on_click: Callable[[], None] | None = None) -> None:
    """Put :func:`svg`'s markup on the page: wheel zoom, drag pan, double-click resets.

    ``view`` names the current filter: zoom and pan survive refreshes until it changes. A click
    on a node reruns with the node's name in ``st.session_state[key]["node"]`` and calls
    ``on_click`` first (the moment a callback may still set a widget's value)."""
    _map(key=key, data={"markup": markup, "view": view or "all", "preload": _CHART_CHUNKS},
         on_node_change=on_click or (lambda: None))
