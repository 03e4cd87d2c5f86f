"""The route explorer: the best path between two nodes, drawn on the map with its cost, and
*why* it holds: the store's derivations expanded down to base facts.

The why tree answers the operator's real question after an incident ("why does a still go
through b?") with the rules and link facts that produce the route, not with a guess. Trees can
share subtrees and even contain cycles (recursive rules), so each fact is expanded once and
later mentions point back to it; the output is capped so a pathological view cannot hang the
page.
"""

from __future__ import annotations

import streamlit as st

from dashboard import data, graph
from dashboard.sections import topology
from netrules.facts import Fact, format_value
from netrules.store import queries

__all__ = ["TITLE", "PATH_RELATION", "COST_RELATIONS", "why_lines", "why_not", "render"]

TITLE = "Routes"
PATH_RELATION = queries.ROUTE
#: Views that give a cost but no path, used when the program has no ``bestPath``.
COST_RELATIONS = ("bestCost", "minCost")


def why_lines(url: str, fact: Fact, max_lines: int = 400) -> list[str]:
    """The derivation tree of ``fact`` as box-drawn text lines.

    A fact with no stored derivation is a base fact (an event put it there). A fact with
    several derivations lists each one; a fact already expanded above says so instead of
    repeating its subtree.
    """
    lines: list[str] = []
    expanded: set[Fact] = set()

    def walk(f: Fact, prefix: str, branch: str, on_path: frozenset[Fact]) -> None:
        if len(lines) >= max_lines:
            return
        if f in on_path:
            lines.append(f"{prefix}{branch}{f}   (cycle)")
            return
        if f in expanded:
            lines.append(f"{prefix}{branch}{f}   (see above)")
            return
        supports = data.derivations(url, f)
        child_prefix = prefix + ("" if not branch else "    " if branch == "└── " else "│   ")
        if not supports:
            lines.append(f"{prefix}{branch}{f}   (base fact)")
            return
        expanded.add(f)
        path = on_path | {f}
        if len(supports) == 1:
            rule, body = supports[0]
            lines.append(f"{prefix}{branch}{f}   ⟸ rule {rule}")
            for i, b in enumerate(body):
                walk(b, child_prefix, "└── " if i == len(body) - 1 else "├── ", path)
            return
        lines.append(f"{prefix}{branch}{f}   ({len(supports)} derivations)")
        for j, (rule, body) in enumerate(supports):
            last = j == len(supports) - 1
            lines.append(f"{child_prefix}{'└── ' if last else '├── '}⟸ rule {rule}")
            sub = child_prefix + ("    " if last else "│   ")
            for i, b in enumerate(body):
                walk(b, sub, "└── " if i == len(body) - 1 else "├── ", path)

    walk(fact, "", "", frozenset())
    if len(lines) >= max_lines:
        lines.append(f"… cut at {max_lines} lines")
    return lines


def why_not(url: str, relation: str, src: str, dst: str) -> None:
    """The why-not answer for a missing pair (shared with the Reachability page): the route it
    had, the deletions that took it, and why no neighbour can offer another."""
    answer = data.why_not(url, relation, src, dst)
    if answer.holds:
        return
    if answer.incident is not None:
        st.error(f"Outage: {answer.incident.title()}", icon=":material/report:")
    st.subheader("Why not")
    st.code(answer.render(), language=None, wrap_lines=True)


def render(url: str) -> None:
    nodes, links = data.topology(url)
    names = sorted({n.name for n in nodes} | {x for ln in links for x in (ln.src, ln.dst)})
    if len(names) < 2:
        st.info("The store has fewer than two nodes yet.")
        return
    views = data.relations(url)
    c1, c2 = st.columns(2)
    for key in ("route_src", "route_dst"):  # a deep link may name a node that left
        if key in st.session_state and st.session_state[key] not in names:
            del st.session_state[key]
    src = c1.selectbox("From", names, index=0, key="route_src")
    dst = c2.selectbox("To", names, key="route_dst",
                       index=None if "route_dst" in st.session_state else len(names) - 1)
    if src is None or dst is None:
        return
    if src == dst:
        st.info("Pick two different nodes.")
        return
    where = ((0, src), (1, dst))
    rel = PATH_RELATION if PATH_RELATION in views else next(
        (r for r in COST_RELATIONS if r in views), None)
    if rel is None:
        st.info(f"This store's program has no route view ({PATH_RELATION}, "
                f"{', '.join(COST_RELATIONS)}).")
        return
    facts = data.read_view(url, rel, where, limit=5)
    fact = facts[0] if facts else None
    path: list[str] = []
    if fact is None:
        st.warning(f"No route from {src} to {dst} now ({rel}({format_value(src)},"
                   f"{format_value(dst)},…) does not hold).")
        why_not(url, rel, src, dst)
    else:
        if rel == PATH_RELATION and len(fact.args) >= 4 and isinstance(fact.args[2], tuple):
            path = [str(n) for n in fact.args[2]]
        cost = fact.args[-1]
        m1, m2 = st.columns([1, 3])
        m1.metric("Cost", format_value(cost))
        m2.markdown("**Best path**  \n" + (" → ".join(path) if path else f"`{fact}`"))
    focus_nodes = path or [src, dst]
    edges = graph.merge_links(links)
    topology.draw(url, key="route_chart", visible=graph.neighbourhood(edges, focus_nodes, 1),
                  route=path, focus=[src, dst], view=f"route|{src}|{dst}")
    if fact is not None:
        st.subheader("Why this route")
        st.code("\n".join(why_lines(url, fact)), language=None)
