"""The topology map: links coloured by state, failed links and the routes they broke.

At 1,000 nodes the whole map is a texture, not an answer, so the section is built around
narrowing it: search a node (or click one) and show its k-hop neighbourhood, filter by name, or
show only the failed links and their surroundings. The layout is computed once per topology
(:func:`dashboard.graph.layout`), so narrowing and refreshing never move a node.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import pandas as pd
import streamlit as st

from dashboard import data, graph

__all__ = ["TITLE", "render", "draw"]

TITLE = "Topology"
_WHOLE = "(whole network)"
_TABLE_ROWS = 30


def draw(url: str, *, key: str, visible: set[str] | None = None, route: Sequence[str] = (),
         focus: Iterable[str] = (), broken: bool = True, view: str = "",
         on_click: Callable[[], None] | None = None) -> int:
    """Draw the stored topology (optionally a subset, a highlighted route and the routes that
    failed links cut off) and return the number of nodes drawn."""
    nodes, links = data.topology(url)
    sig = graph.signature(nodes, links)
    pos = graph.layout(sig)
    edges = graph.merge_links(links)
    # Only lost routes go on the map: re-routed ones still have a route, and drawing every
    # one of them would paint the whole neighbourhood orange. The table below lists both.
    broken_paths = [r["path"] for r in data.broken_routes(url)
                    if r["status"] == "lost"][:200] if broken else []
    markup = graph.svg(sig[0], edges, pos, visible=visible, route=route, broken=broken_paths,
                       focus=focus, status=data.node_status(url))
    graph.show(markup, key=key, view=view, on_click=on_click)
    return len(sig[0]) if visible is None else len(visible)


def _take_click() -> None:
    """A node clicked on the map becomes the searched node (in the click's callback, before
    the search box is drawn: the only moment Streamlit lets the app set a widget's value)."""
    try:
        clicked = st.session_state["topo_chart"]["node"]
    except (KeyError, TypeError):
        return
    if isinstance(clicked, str) and clicked:
        st.session_state["topo_focus"] = clicked


def render(url: str) -> None:
    nodes, links = data.topology(url)
    if not nodes and not links:
        st.info("The store has no topology yet: start the pipeline (`netrules run`).")
        return
    edges = graph.merge_links(links)
    names = list(graph.signature(nodes, links)[0])
    down_links = [ln for ln in links if ln.state == "down"]

    if st.session_state.get("topo_focus") not in (None, _WHOLE, *names):
        st.session_state["topo_focus"] = _WHOLE  # the node left the topology
    c1, c2, c3 = st.columns([2, 1, 2])
    focus = c1.selectbox("Search a node (or click one on the map)", [_WHOLE, *names],
                         key="topo_focus")
    hops = c2.slider("Hops around it", 1, 6, 2, key="topo_hops")
    name_filter = c3.text_input("Filter nodes by name", key="topo_filter",
                                placeholder="substring, e.g. core")
    only_down = st.checkbox("Only failed links and their neighbours", key="topo_only_down")

    visible: set[str] | None = None
    if focus != _WHOLE:
        visible = graph.neighbourhood(edges, [focus], hops)
    elif only_down:
        visible = graph.neighbourhood(
            edges, {x for e in edges if e.state == "down" for x in (e.u, e.v)}, 1)
    if name_filter.strip():
        needle = name_filter.strip().lower()
        visible = {n for n in (visible if visible is not None else names)
                   if needle in n.lower()}

    broken = data.broken_routes(url)

    view = f"{focus}|{hops}|{name_filter}|{only_down}"
    shown = draw(url, key="topo_chart", visible=visible,
                 focus=[] if focus == _WHOLE else [focus], view=view, on_click=_take_click)
    if visible is not None:
        st.caption(f"Showing {shown} of {len(names)} nodes.")

    status = data.node_status(url)
    isolated = [n for n, v in status.items() if v == "isolated"]
    degraded = [n for n, v in status.items() if v == "degraded"]
    if isolated or degraded:
        st.markdown(" · ".join(
            [f":red[**{n}** isolated]" for n in isolated]
            + [f":orange[**{n}** degraded]" for n in degraded]))
    left, right = st.columns(2)
    with left:
        st.subheader("Failed links")
        if down_links:
            st.markdown("\n".join(
                f"- :red[**{ln.src} → {ln.dst}** down]"
                + ("" if ln.cost is None else f" (cost {ln.cost:g})")
                for ln in down_links[:_TABLE_ROWS]))
            if len(down_links) > _TABLE_ROWS:
                st.caption(f"+{len(down_links) - _TABLE_ROWS} more.")
        else:
            st.markdown(":green[All links are up.]")
    with right:
        st.subheader("Routes they broke")
        if broken:
            st.caption(f"{sum(r['status'] == 'lost' for r in broken)} lost, "
                       f"{sum(r['status'] == 'rerouted' for r in broken)} re-routed"
                       + (f"; first {_TABLE_ROWS} shown" if len(broken) > _TABLE_ROWS else "")
                       + ".")
            st.table(pd.DataFrame([{
                "route": f"{r['src']} → {r['dst']}",
                "was": " → ".join(r["path"]),
                "over": ", ".join(f"{a}→{b}" for a, b in r["links"]),
                "now": r["status"],
            } for r in broken[:_TABLE_ROWS]]), hide_index=True)
        else:
            st.caption("No recent route crossed a failed link.")
