"""Synthetic topologies for tests and benchmarks, in the same model the loaders return.

Every generator returns an undirected ``nx.Graph`` whose nodes are NDlog-bare strings (``n0``,
``r1c2``, ``p0e1`` ...) and whose edges carry ``cost`` (int, 1). Names are strings, not ints,
because node names end up as NDlog symbols in ``link(@S,D,Cost)`` facts; and every random
generator takes an explicit ``seed`` so that a benchmark or failing test can be replayed.
"""

from __future__ import annotations

import random

import networkx as nx

__all__ = ["ring", "line", "grid", "fat_tree", "fat_tree_counts", "waxman", "barabasi_albert"]


def _finish(g: nx.Graph, name: str) -> nx.Graph:
    """Give every edge a default ``cost`` and the graph a name (shown by the CLI)."""
    for _, _, data in g.edges(data=True):
        data.setdefault("cost", 1)
    g.graph["name"] = name
    return g


def _need(cond: bool, msg: str) -> None:
    if not cond:
        raise ValueError(msg)


def ring(n: int) -> nx.Graph:
    """Bidirectional ring ``n0 - n1 - ... - n{n-1} - n0``: n nodes, n links (n >= 3)."""
    _need(n >= 3, f"ring needs at least 3 nodes, not {n}")
    g = nx.Graph()
    g.add_nodes_from(f"n{i}" for i in range(n))
    g.add_edges_from((f"n{i}", f"n{(i + 1) % n}") for i in range(n))
    return _finish(g, f"ring{n}")


def line(n: int) -> nx.Graph:
    """A chain of n nodes (n-1 links): the worst case for hop-by-hop fixpoints (diameter n-1)."""
    _need(n >= 1, f"line needs at least 1 node, not {n}")
    g = nx.Graph()
    g.add_nodes_from(f"n{i}" for i in range(n))
    g.add_edges_from((f"n{i}", f"n{i + 1}") for i in range(n - 1))
    return _finish(g, f"line{n}")


def grid(rows: int, cols: int) -> nx.Graph:
    """rows x cols mesh, nodes ``r{i}c{j}``: rows*cols nodes, 2*rows*cols - rows - cols links."""
    _need(rows >= 1 and cols >= 1, f"grid needs positive dimensions, not {rows}x{cols}")
    g = nx.Graph()
    for i in range(rows):
        for j in range(cols):
            g.add_node(f"r{i}c{j}")
            if i + 1 < rows:
                g.add_edge(f"r{i}c{j}", f"r{i + 1}c{j}")
            if j + 1 < cols:
                g.add_edge(f"r{i}c{j}", f"r{i}c{j + 1}")
    return _finish(g, f"grid{rows}x{cols}")


def fat_tree_counts(k: int, hosts: bool = False) -> tuple[int, int]:
    """(nodes, links) of :func:`fat_tree`: the closed forms the tests check against.

    Switches: (k/2)^2 core + k pods x (k/2 agg + k/2 edge) = 5k^2/4. Switch links: k^3/4
    edge-agg + k^3/4 agg-core = k^3/2. Hosts (optional): k^3/4, one link each.
    """
    nodes, links = 5 * k * k // 4, k**3 // 2
    if hosts:
        nodes, links = nodes + k**3 // 4, links + k**3 // 4
    return nodes, links


def fat_tree(k: int, hosts: bool = False) -> nx.Graph:
    """k-ary fat tree (Al-Fares et al. 2008), k even.

    Names: core ``c{i}``; pod p aggregation ``p{p}a{i}`` and edge ``p{p}e{i}``; hosts
    ``p{p}e{i}h{j}``. Aggregation switch i of every pod connects to core switches
    i*k/2 ... i*k/2 + k/2 - 1, so each core switch reaches every pod once. k=4: 20 switches,
    32 links (+16 hosts); k=6: 45 switches, 108 links (+54 hosts). See :func:`fat_tree_counts`.
    """
    _need(k >= 2 and k % 2 == 0, f"fat tree needs an even k >= 2, not {k}")
    h = k // 2
    g = nx.Graph()
    g.add_nodes_from(f"c{i}" for i in range(h * h))
    for p in range(k):
        for i in range(h):
            agg = f"p{p}a{i}"
            g.add_node(agg, pod=p)
            for j in range(h):
                g.add_edge(agg, f"c{i * h + j}")
        for i in range(h):
            edge = f"p{p}e{i}"
            g.add_node(edge, pod=p)
            for j in range(h):
                g.add_edge(edge, f"p{p}a{j}")
            if hosts:
                for j in range(h):
                    g.add_edge(edge, f"{edge}h{j}")
    return _finish(g, f"fattree{k}")


def _relabel(g: nx.Graph) -> nx.Graph:
    """Integer nodes -> ``n{i}`` strings, keeping node and edge attributes."""
    return nx.relabel_nodes(g, {v: f"n{v}" for v in g.nodes}, copy=True)


def waxman(n: int, alpha: float = 0.4, beta: float = 0.4, seed: int = 0) -> nx.Graph:
    """Waxman random geometric graph on the unit square (networkx's parameterisation:
    P(u,v) = beta * exp(-d(u,v) / (alpha * L))). Node positions are kept as ``pos``.

    Not forced connected: with small alpha the graph can fall apart, which is itself a
    useful test input for reachability rules.
    """
    _need(n >= 1, f"waxman needs at least 1 node, not {n}")
    g = nx.waxman_graph(n, beta=beta, alpha=alpha, seed=random.Random(seed))
    out = _relabel(nx.Graph(g))
    return _finish(out, f"waxman{n}")


def barabasi_albert(n: int, m: int, seed: int = 0) -> nx.Graph:
    """Preferential-attachment graph: n nodes, m*(n-m) links, connected, heavy-tailed degrees
    (hubs stress the per-node partitioning of the engine)."""
    _need(1 <= m < n, f"barabasi_albert needs 1 <= m < n, not n={n} m={m}")
    g = nx.barabasi_albert_graph(n, m, seed=random.Random(seed))
    return _finish(_relabel(g), f"ba{n}_{m}")
