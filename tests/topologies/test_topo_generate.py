"""Generators: node/link counts match the closed forms, names are strings, seeds replay."""

from __future__ import annotations

import networkx as nx
import pytest

from netrules.facts import Fact
from topologies import generate, link_facts, load_topology


def _ok(g: nx.Graph) -> None:
    assert all(isinstance(n, str) for n in g.nodes)
    assert all(d["cost"] == 1 for _, _, d in g.edges(data=True))


@pytest.mark.parametrize("n", [3, 6, 10])
def test_ring(n: int) -> None:
    g = generate.ring(n)
    _ok(g)
    assert (g.number_of_nodes(), g.number_of_edges()) == (n, n)
    assert all(d == 2 for _, d in g.degree)


def test_line_has_diameter_n_minus_1() -> None:
    g = generate.line(74)
    _ok(g)
    assert (g.number_of_nodes(), g.number_of_edges()) == (74, 73)
    assert nx.diameter(g) == 73


@pytest.mark.parametrize("r,c", [(1, 1), (2, 3), (4, 4)])
def test_grid(r: int, c: int) -> None:
    g = generate.grid(r, c)
    _ok(g)
    assert g.number_of_nodes() == r * c
    assert g.number_of_edges() == 2 * r * c - r - c


@pytest.mark.parametrize("k,switches,links,hosts", [(4, 20, 32, 16), (6, 45, 108, 54)])
def test_fat_tree(k: int, switches: int, links: int, hosts: int) -> None:
    g = generate.fat_tree(k)
    _ok(g)
    assert (g.number_of_nodes(), g.number_of_edges()) == (switches, links)
    assert generate.fat_tree_counts(k) == (switches, links)
    # core: one port per pod; aggregation: k/2 down + k/2 up; edge: k/2 up (+ k/2 hosts)
    kinds = {"c": "core", "a": "agg", "e": "edge"}
    degrees = {(kinds[n[0]] if n[0] == "c" else kinds[n[2]], d) for n, d in g.degree}
    assert degrees == {("core", k), ("agg", k), ("edge", k // 2)}
    assert nx.is_connected(g)
    gh = generate.fat_tree(k, hosts=True)
    assert (gh.number_of_nodes(), gh.number_of_edges()) == (switches + hosts, links + hosts)
    assert generate.fat_tree_counts(k, hosts=True) == (switches + hosts, links + hosts)
    assert all(d == k for n, d in gh.degree if "e" in n and "h" not in n)


def test_fat_tree_rejects_odd_k() -> None:
    with pytest.raises(ValueError):
        generate.fat_tree(3)


def test_waxman_deterministic_by_seed() -> None:
    a, b = generate.waxman(50, seed=1), generate.waxman(50, seed=1)
    _ok(a)
    assert a.number_of_nodes() == 50
    assert sorted(a.edges) == sorted(b.edges)
    assert sorted(generate.waxman(50, seed=2).edges) != sorted(a.edges)


def test_barabasi_albert_counts_and_seed() -> None:
    a, b = generate.barabasi_albert(100, 2, seed=1), generate.barabasi_albert(100, 2, seed=1)
    _ok(a)
    assert (a.number_of_nodes(), a.number_of_edges()) == (100, 2 * (100 - 2))
    assert sorted(a.edges) == sorted(b.edges)
    assert sorted(generate.barabasi_albert(100, 2, seed=3).edges) != sorted(a.edges)


@pytest.mark.parametrize(
    "spec,nodes,links",
    [("ring:6", 6, 6), ("line:74", 74, 73), ("grid:4x4", 16, 24), ("fattree:4", 20, 32),
     ("fattree:4:hosts", 36, 48), ("ba:100:2:seed=1", 100, 196), ("grid:2:3", 6, 7)],
)
def test_generator_specs(spec: str, nodes: int, links: int) -> None:
    g = load_topology(spec)
    assert (g.number_of_nodes(), g.number_of_edges()) == (nodes, links)


def test_waxman_spec_matches_function() -> None:
    g = load_topology("waxman:50:seed=1")
    assert sorted(g.edges) == sorted(generate.waxman(50, seed=1).edges)
    g2 = load_topology("waxman:30:alpha=0.2:beta=0.5:seed=4")
    assert sorted(g2.edges) == sorted(generate.waxman(30, alpha=0.2, beta=0.5, seed=4).edges)


def test_link_facts_both_directions() -> None:
    facts = link_facts(generate.ring(6))
    assert len(facts) == 12
    assert Fact("link", ("n0", "n1", 1)) in facts and Fact("link", ("n1", "n0", 1)) in facts
    assert str(facts[0]) == "link(@n0,n1,1)"
    dg = nx.DiGraph()
    dg.add_edge("a", "b", cost=3)
    assert link_facts(dg) == [Fact("link", ("a", "b", 3))]
