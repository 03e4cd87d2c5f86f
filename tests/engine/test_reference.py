"""The reference evaluator against the notes' worked examples, networkx and an SCC oracle.

Cites shared/notes/psn-derivation-sets.md §3 (E1-E10) and §7, and
shared/notes/wolfson-regular-datalog-lftj.md acceptance tests 10, 11 and 17.
"""

from __future__ import annotations

import itertools
import random

import networkx as nx
import pytest

from netrules import programs
from netrules.engine.reference import derivation_counts, evaluate_program
from netrules.errors import EvalError
from netrules.facts import Fact, sort_key
from netrules.lang import parse_facts, parse_program
from netrules.plan import plan_program


def pairs(views: dict[str, list[Fact]], rel: str) -> set[tuple]:
    return {f.args for f in views.get(rel, [])}


def links(edges, cost: bool = False) -> list[Fact]:
    return [Fact("link", (a, b, 1) if cost else (a, b)) for a, b in edges]


HOP = parse_program("""
hop(@X,Y) :- link(@X,Z), link(@Z,Y).
tri_hop(@X,Y) :- hop(@X,Z), link(@Z,Y).
""")
HOP_LINKS = [("a", "b"), ("a", "d"), ("d", "c"), ("b", "c"), ("c", "h"), ("f", "g")]


def test_e4_hop_initial_view_with_multiplicities() -> None:
    counts = derivation_counts(HOP, links(HOP_LINKS))
    hop = {f.args: n for f, n in counts.items() if f.relation == "hop"}
    tri = {f.args: n for f, n in counts.items() if f.relation == "tri_hop"}
    assert hop == {("a", "c"): 2, ("d", "h"): 1, ("b", "h"): 1}
    assert tri == {("a", "h"): 2}


def test_e4_hop_final_view_corrected_example() -> None:
    final = set(HOP_LINKS) - {("a", "b")} | {("d", "f"), ("a", "f")}
    counts = derivation_counts(HOP, links(final))
    by = {}
    for f, n in counts.items():
        by.setdefault(f.relation, {})[f.args] = n
    assert by["link"] == {e: 1 for e in [("a", "d"), ("a", "f"), ("b", "c"), ("c", "h"),
                                         ("d", "c"), ("d", "f"), ("f", "g")]}
    assert by["hop"] == {e: 1 for e in [("a", "c"), ("a", "f"), ("a", "g"), ("b", "h"),
                                        ("d", "g"), ("d", "h")]}
    assert by["tri_hop"] == {("a", "g"): 1, ("a", "h"): 1}
    # erratum: link(d,f) alone adds hop(d,g) *and* hop(a,f), not a single update
    before = derivation_counts(HOP, links(HOP_LINKS))
    after = derivation_counts(HOP, links(HOP_LINKS + [("d", "f")]))
    new_hops = {f.args for f in after if f.relation == "hop"} - \
        {f.args for f in before if f.relation == "hop"}
    assert new_hops == {("d", "g"), ("a", "f")}


def test_e4_self_join_unique_derivation() -> None:
    counts = derivation_counts(HOP, links([("a", "a")]))
    assert counts[Fact("hop", ("a", "a"))] == 1
    assert counts[Fact("tri_hop", ("a", "a"))] == 1
    counts = derivation_counts(HOP, links([("a", "b"), ("b", "c")]))
    assert counts[Fact("hop", ("a", "c"))] == 1


def test_e1_e2_multiset_counts() -> None:
    prog = parse_program("p() :- s(), t(), r(). s() :- q(). s() :- u(). t() :- u().")
    counts = derivation_counts(prog, [Fact("q", ()), Fact("u", ())])
    assert {f.relation: n for f, n in counts.items()} == {"q": 1, "u": 1, "s": 2, "t": 1}
    counts = derivation_counts(prog, [Fact("q", ())])
    assert {f.relation: n for f, n in counts.items()} == {"q": 1, "s": 1}


def test_e5_conflicting_updates_final_view() -> None:
    prog = parse_program("p() :- q(), r(). q() :- s().")
    assert set(evaluate_program(prog, [Fact("r", ())])) == {"r"}
    assert set(evaluate_program(prog, [Fact("s", ())])) == {"s", "q"}


REACH = programs.load("reachability")


def test_e10_lost_route_reachability() -> None:
    """§7 test 12: links a<->b, b->c; deleting link(b,c) loses exactly (a,c) and (b,c)."""
    before = pairs(evaluate_program(REACH, links([("a", "b"), ("b", "a"), ("b", "c")], True)),
                   "reachable")
    assert before == {("a", "a"), ("a", "b"), ("a", "c"), ("b", "a"), ("b", "b"), ("b", "c")}
    after = pairs(evaluate_program(REACH, links([("a", "b"), ("b", "a")], True)), "reachable")
    assert after == {("a", "a"), ("a", "b"), ("b", "a"), ("b", "b")}
    assert before - after == {("a", "c"), ("b", "c")}


def test_directed_localization_linkD_rewrite() -> None:
    """§7 test 15: on a->b->c the localized program gives all three facts; the paper's printed
    rewrite (join with the reverse link) gives two."""
    facts = links([("a", "b"), ("b", "c")], True)
    localized = plan_program(REACH)
    assert "linkD" in localized.aux
    assert pairs(evaluate_program(localized, facts), "reachable") == \
        {("a", "b"), ("b", "c"), ("a", "c")}
    printed = parse_program("""
    r1 reachable(@S,D) :- link(@S,D,C).
    r21 reachable(@S,D) :- link(@S,Z,C), aux(@S,Z,D).
    r22 aux(@S,Z,D) :- reachable(@Z,D), link(@Z,S,C).
    """)
    assert len(pairs(evaluate_program(printed, facts), "reachable")) == 2


def test_localized_equals_unlocalized_on_random_graphs() -> None:
    prog_names = ["reachability", "path_vector", "routing_loop"]
    for seed in range(30):
        rng = random.Random(seed)
        g = nx.gnp_random_graph(6, 0.35, seed=seed, directed=True)
        for name in prog_names:
            prog = programs.load(name)
            if name == "routing_loop":
                facts = [Fact("nexthop", (u, rng.randrange(3), v)) for u, v in g.edges]
            else:
                facts = [Fact("link", (u, v, rng.randint(1, 5))) for u, v in g.edges]
            a = evaluate_program(plan_program(prog), facts)
            b = evaluate_program(plan_program(prog, localized=False), facts)
            for rel in plan_program(prog).visible:
                assert a.get(rel) == b.get(rel), (seed, name, rel)


@pytest.mark.parametrize("seed", range(200))
def test_agrees_with_networkx(seed: int) -> None:
    """Reachability, least costs and best paths against networkx on a random weighted graph."""
    rng = random.Random(seed)
    n = rng.randint(2, 7)
    g = nx.gnp_random_graph(n, rng.uniform(0.15, 0.5), seed=seed, directed=True)
    for u, v in g.edges:
        g.edges[u, v]["w"] = rng.randint(1, 9)
    name = {i: f"n{i}" for i in g.nodes}
    facts = [Fact("link", (name[u], name[v], g.edges[u, v]["w"])) for u, v in g.edges]

    reach = pairs(evaluate_program(REACH, facts), "reachable")
    expected = {(name[s], name[d]) for s in g for d in g
                if (s != d and nx.has_path(g, s, d))
                or (s == d and any(nx.has_path(g, x, s) for x in g.successors(s)))}
    assert reach == expected

    views = evaluate_program(programs.load("path_vector"), facts)
    best = {(s, d): (p, c) for s, d, p, c in pairs(views, "bestPath")}
    costs = {(s, d): c for s, d, c in pairs(views, "bestCost")}
    want_cost = {}
    for s in g:
        for d, c in nx.single_source_dijkstra_path_length(g, s, weight="w").items():
            if d != s:
                want_cost[(name[s], name[d])] = c
    assert {k: v for k, v in costs.items() if k[0] != k[1]} == want_cost
    for (s, d), (path, c) in best.items():
        if s == d:
            continue
        hops = list(zip(path, path[1:], strict=False))
        assert c == sum(g.edges[int(a[1:]), int(b[1:])]["w"] for a, b in hops)
        shortest = [tuple(name[x] for x in p) for p in
                    nx.all_shortest_paths(g, int(s[1:]), int(d[1:]), weight="w")]
        assert path == min(shortest, key=sort_key)
    mins = {(s, d): c for s, d, c in pairs(evaluate_program(programs.load("min_cost"), facts),
                                              "minCost")}
    assert {k: v for k, v in mins.items() if k[0] != k[1]} == want_cost


FRAUD = programs.load("fraud")


def fraud_facts(t, c, m, a) -> list[Fact]:
    out = [Fact("transfer", e, None) for e in t] + [Fact("connected", e, None) for e in c]
    out += [Fact("monitors", e, None) for e in m] + [Fact("accredited", e, None) for e in a]
    return out


T1 = [(1, 2), (2, 3), (3, 1), (3, 4)]
C1 = [(1, 5), (5, 6), (6, 2)]
M1 = [(9, 5), (9, 6), (8, 1), (8, 2)]
A1 = [(9, 5), (2, 1)]


def test_fraud_example_1_instance() -> None:
    v = evaluate_program(FRAUD, fraud_facts(T1, C1, M1, A1))
    assert pairs(v, "cmonitored") == {(5, 6)}
    assert pairs(v, "secures") == {(1, 2)}
    assert pairs(v, "stransfer") == {(1, 2)}
    assert pairs(v, "pstransfer") == set(T1)
    assert pairs(v, "suspect") == set(itertools.product([1, 2, 3], repeat=2))
    assert pairs(v, "detectable") == {(1, 1), (1, 2), (2, 1), (2, 2)}
    v2 = evaluate_program(FRAUD, fraud_facts(T1, C1, M1 + [(8, 3)], A1))
    assert pairs(v2, "detectable") - pairs(v, "detectable") == \
        {(1, 3), (2, 3), (3, 1), (3, 2), (3, 3)}
    v3 = evaluate_program(FRAUD, fraud_facts([e for e in T1 if e != (3, 1)], C1,
                                             M1 + [(8, 3)], A1))
    assert pairs(v3, "suspect") == set() and pairs(v3, "detectable") == set()


@pytest.mark.parametrize("seed", range(40))
def test_fraud_suspect_equals_scc_pairs(seed: int) -> None:
    rng = random.Random(seed)
    nodes = range(rng.randint(2, 8))
    rand_edges = lambda p: [(x, y) for x in nodes for y in nodes if rng.random() < p]  # noqa: E731
    t, c, m, a = rand_edges(0.2), rand_edges(0.15), rand_edges(0.15), rand_edges(0.15)
    v = evaluate_program(FRAUD, fraud_facts(t, c, m, a))
    g = nx.DiGraph(t)
    want = set()
    for comp in nx.strongly_connected_components(g):
        if len(comp) > 1 or any(g.has_edge(x, x) for x in comp):
            want |= set(itertools.product(comp, repeat=2))
    assert pairs(v, "suspect") == want


def test_detectable_example_3() -> None:
    prog = programs.load("detectable")
    m0 = [("V1", "V6"), ("V1", "V0"), ("V4", "V3"), ("V4", "V0")]
    s0 = [("V6", "V0"), ("V3", "V0"), ("V0", "V2"), ("V2", "V0"), ("V2", "V5"), ("V5", "V6")]
    dm, ds = [("V1", "V2"), ("V4", "V5")], [("V0", "V5")]

    def run(m, s):
        facts = [Fact("monitors", e, None) for e in m] + [Fact("suspect", e, None) for e in s]
        return pairs(evaluate_program(prog, facts), "detectable")

    before = run(m0, s0)
    assert before == {("V6", "V0"), ("V3", "V0")}
    assert run(m0 + dm, s0 + ds) == {("V6", "V0"), ("V3", "V0"), ("V0", "V2"), ("V2", "V0"),
                                     ("V0", "V5")}
    assert run(m0, s0) == before


@pytest.mark.parametrize("seed", range(30))
def test_routing_loops_equal_cycles(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(2, 7)
    hops = [(s, d, rng.choice([x for x in range(n) if x != s]))
            for s in range(n) for d in range(2) if s != d and rng.random() < 0.8]
    v = evaluate_program(programs.load("routing_loop"),
                         [Fact("nexthop", h) for h in hops])
    want = set()
    for d in range(2):
        g = nx.DiGraph([(s, nh) for s, dd, nh in hops if dd == d])
        for cyc in nx.simple_cycles(g):
            want |= {(s, d) for s in cyc}
    assert pairs(v, "loop") == want


def test_aggregates_and_negation() -> None:
    prog = parse_program("""
    cnt(@S, a_COUNT<*>) :- link(@S,D,C).
    total(@S, a_SUM<C>) :- link(@S,D,C).
    hi(@S, a_MAX<C>) :- link(@S,D,C).
    lo(@S, a_MIN<C>) :- link(@S,D,C).
    node(@S) :- link(@S,D,C).
    node(@D) :- link(@S,D,C).
    sink(@S) :- node(@S), not link(@S,_,_).
    """)
    facts = [Fact("link", x) for x in [("a", "b", 2), ("a", "c", 2), ("b", "c", 5)]]
    v = evaluate_program(prog, facts)
    assert pairs(v, "cnt") == {("a", 2), ("b", 1)}
    assert pairs(v, "total") == {("a", 4), ("b", 5)}
    assert pairs(v, "hi") == {("a", 2), ("b", 5)}
    assert pairs(v, "lo") == {("a", 2), ("b", 5)}
    assert pairs(v, "sink") == {("c",)}


def test_unbounded_recursion_is_stopped_with_a_clear_error() -> None:
    prog = parse_program("""
    walk(@S,D,P) :- link(@S,D,C), P := f_concat(S, D).
    walk(@S,D,P) :- link(@S,Z,C), walk(@Z,D,P2), P := f_concat(S, P2).
    """)
    with pytest.raises(EvalError, match="f_member"):
        evaluate_program(prog, links([("a", "b"), ("b", "a")], True), max_facts=2000)


def test_builtin_type_error_names_the_rule() -> None:
    prog = parse_program("p(@S, X) :- link(@S,D,C), X := f_size(C).", "prog.ndlog")
    with pytest.raises(EvalError, match=r"prog.ndlog:1:1.*f_size expects a list"):
        evaluate_program(prog, links([("a", "b")], True))


def test_program_facts_are_included() -> None:
    prog = parse_program("r(@S,D) :- link(@S,D,C).\nlink(@x,y,1).")
    assert pairs(evaluate_program(prog, parse_facts("link(@a,b,2).")), "r") == \
        {("x", "y"), ("a", "b")}
