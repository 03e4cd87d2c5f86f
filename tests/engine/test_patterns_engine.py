"""Path patterns evaluated and maintained: paper 002's acceptance tests 10, 12, 16 and 17
(shared/notes/wolfson-regular-datalog-lftj.md), random patterns against an independent oracle
(BFS over the product of the graph and a Thompson automaton of the pattern), and every
maintenance strategy under random insert/delete streams.
"""

from __future__ import annotations

import itertools
import random
from collections import deque

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netrules import programs
from netrules.facts import Fact
from netrules.lang import ast, parse_program
from netrules.plan import plan_program
from tests.engine.test_differential import check_stream, signed_stream, update_stream
from tests.lang.test_patterns import DECL, path_exprs
from tests.meaning import evaluate_program

Pair = tuple[object, object]


# ------------------------------------------------------------------------------ oracle
def _nfa(e: ast.PathExpr) -> tuple[int, int, list[tuple[int, tuple[str, bool] | None, int]]]:
    """Thompson automaton: (start, accept, transitions); a label is (relation, forward) or
    None for an empty move. Inverse flips the direction of every edge below it."""
    trans: list[tuple[int, tuple[str, bool] | None, int]] = []
    count = itertools.count()

    def build(e: ast.PathExpr, inv: bool) -> tuple[int, int]:
        s, f = next(count), next(count)
        if isinstance(e, ast.PathRel):
            trans.append((s, (e.relation, not inv), f))
        elif isinstance(e, ast.PathInverse):
            a, b = build(e.inner, not inv)
            trans.extend([(s, None, a), (b, None, f)])
        elif isinstance(e, ast.PathPlus | ast.PathStar):
            a, b = build(e.inner, inv)
            trans.extend([(s, None, a), (b, None, f), (b, None, a)])
            if isinstance(e, ast.PathStar):
                trans.append((s, None, f))
        elif isinstance(e, ast.PathUnion):
            for p in e.parts:
                a, b = build(p, inv)
                trans.extend([(s, None, a), (b, None, f)])
        else:
            parts = list(reversed(e.parts)) if inv else list(e.parts)
            prev = s
            for p in parts:
                a, b = build(p, inv)
                trans.append((prev, None, a))
                prev = b
            trans.append((prev, None, f))
        return s, f

    start, accept = build(e, False)
    return start, accept, trans


def _relations(e: ast.PathExpr) -> set[str]:
    if isinstance(e, ast.PathRel):
        return {e.relation}
    if isinstance(e, ast.PathConcat | ast.PathUnion):
        return set().union(*map(_relations, e.parts))
    return _relations(e.inner)


def oracle(e: ast.PathExpr, edges: dict[str, set[Pair]]) -> set[Pair]:
    """Pairs (x, y) joined by a path spelling a word of ``e``; the empty word relates every
    node of the pattern's relations to itself (the documented domain)."""
    start, accept, trans = _nfa(e)
    out_of: dict[int, list] = {}
    for a, lab, b in trans:
        out_of.setdefault(a, []).append((lab, b))
    succ: dict[tuple[str, bool], dict[object, set]] = {}
    for rel in _relations(e):
        for x, y in edges.get(rel, ()):
            succ.setdefault((rel, True), {}).setdefault(x, set()).add(y)
            succ.setdefault((rel, False), {}).setdefault(y, set()).add(x)
    domain = {n for rel in _relations(e) for pair in edges.get(rel, ()) for n in pair}
    result: set[Pair] = set()
    for x in domain:
        seen = {(x, start)}
        todo = deque(seen)
        while todo:
            node, q = todo.popleft()
            if q == accept:
                result.add((x, node))
            for lab, q2 in out_of.get(q, ()):
                nexts = [node] if lab is None else succ.get(lab, {}).get(node, ())
                for n2 in nexts:
                    if (n2, q2) not in seen:
                        seen.add((n2, q2))
                        todo.append((n2, q2))
    return result


def pairs(views: dict, rel: str) -> set[Pair]:
    return {f.args[:2] for f in views.get(rel, [])}


def test_oracle_on_a_known_graph() -> None:
    e = ast.PathRel("e")
    edges = {"e": {(1, 2), (2, 3)}}
    assert oracle(ast.PathPlus(e), edges) == {(1, 2), (2, 3), (1, 3)}
    assert oracle(ast.PathStar(e), edges) == {(1, 2), (2, 3), (1, 3), (1, 1), (2, 2), (3, 3)}
    assert oracle(ast.PathInverse(ast.PathConcat((e, e))), edges) == {(3, 1)}


# ------------------------------------------------------- acceptance 10: fraud, Example 1
T1 = [(1, 2), (2, 3), (3, 1), (3, 4)]
C1 = [(1, 5), (5, 6), (6, 2)]
M1 = [(9, 5), (9, 6), (8, 1), (8, 2)]
A1 = [(9, 5), (2, 1)]


def facts_of(**rels: list[Pair]) -> list[Fact]:
    return [Fact(r, e, None) for r, es in rels.items() for e in es]


def test_fraud_example_1_maintained(strategy) -> None:
    plan = plan_program(programs.load("fraud"))
    state = strategy.materialize(plan, facts_of(transfer=T1, connected=C1, monitors=M1,
                                                accredited=A1))
    v = state.views()
    assert pairs(v, "cmonitored") == {(5, 6)}
    assert pairs(v, "secures") == {(1, 2)}
    assert pairs(v, "stransfer") == {(1, 2)}
    assert pairs(v, "pstransfer") == set(T1)
    assert pairs(v, "suspect") == set(itertools.product([1, 2, 3], repeat=2))
    assert pairs(v, "detectable") == {(1, 1), (1, 2), (2, 1), (2, 2)}
    delta = strategy.apply(state, [("+", Fact("monitors", (8, 3), None))])
    assert delta.added.get("detectable") == {(1, 3), (2, 3), (3, 1), (3, 2), (3, 3)}
    assert not delta.removed.get("detectable")
    delta = strategy.apply(state, [("-", Fact("transfer", (3, 1), None))])
    v = state.views()
    assert pairs(v, "suspect") == set() and pairs(v, "detectable") == set()
    assert len(delta.removed["detectable"]) == 9


OLD_FRAUD = """
pstransfer(X,Y) :- transfer(X,Y).
pstransfer(X,Y) :- stransfer(X,Y).
pstransferPlus(X,Y) :- pstransfer(X,Y).
pstransferPlus(X,Y) :- pstransfer(X,Z), pstransferPlus(Z,Y).
suspect(X,Y) :- pstransferPlus(X,Y), pstransferPlus(Y,X).
stransfer(X,Y) :- accredited(Y,X), secures(X,Y), transfer(X,Y).
secures(X,Y) :- connected(X,Z1), cmonitoredPlus(Z1,Z2), connected(Z2,Y).
cmonitoredPlus(X,Y) :- cmonitored(X,Y).
cmonitoredPlus(X,Y) :- cmonitored(X,Z), cmonitoredPlus(Z,Y).
cmonitored(X,Y) :- connected(X,Y), monitorsPlus(Z,X), monitorsPlus(Z,Y), accredited(Z,X).
monitorsPlus(X,Y) :- monitors(X,Y).
monitorsPlus(X,Y) :- monitors(X,Z), monitorsPlus(Z,Y).
detectable(X,Y) :- suspect(X,Y), monitors(Z,X), monitors(Z,Y).
"""


@pytest.mark.parametrize("seed", range(25))
def test_fraud_patterns_equal_hand_written_rules(seed: int) -> None:
    rng = random.Random(seed)
    nodes = range(rng.randint(2, 7))
    rnd = lambda p: [(x, y) for x in nodes for y in nodes if rng.random() < p]  # noqa: E731
    facts = facts_of(transfer=rnd(0.25), connected=rnd(0.25), monitors=rnd(0.2),
                     accredited=rnd(0.3))
    new = evaluate_program(programs.load("fraud"), facts)
    old = evaluate_program(parse_program(OLD_FRAUD), facts)
    for rel in ("suspect", "detectable", "pstransfer", "stransfer", "secures", "cmonitored"):
        assert pairs(new, rel) == pairs(old, rel), rel
    g = nx.DiGraph(e.args for e in facts if e.relation == "transfer")  # test 17
    want = set()
    for comp in nx.strongly_connected_components(g):
        if len(comp) > 1 or any(g.has_edge(x, x) for x in comp):
            want |= set(itertools.product(comp, repeat=2))
    assert pairs(new, "suspect") == want


# ------------------------------------------------- acceptance 12: brand reach, Example 2
LIKES = [("u1", "b"), ("u5", "b")]
ADVERTISES = [("u1", "x"), ("x", "b"), ("u5", "y")]
FOLLOWS = [("u2", "u1"), ("u3", "u2"), ("u4", "u6")]


def test_brand_reach_example_2(strategy) -> None:
    plan = plan_program(programs.load("brand_reach"))
    state = strategy.materialize(plan, facts_of(likes=LIKES, advertises=ADVERTISES,
                                                follows=FOLLOWS))
    v = state.views()
    users = set(itertools.product(["u1", "u2", "u3"], repeat=2))
    assert pairs(v, "endorses") == {("u1", "b")}
    assert pairs(v, "exposed") == {("u1", "b"), ("u2", "b"), ("u3", "b")}
    assert pairs(v, "pclients") == users and pairs(v, "reach") == users
    strategy.apply(state, [("+", Fact("advertises", ("y", "b"), None)),
                           ("-", Fact("follows", ("u3", "u2"), None))])
    v = state.views()  # u5 now endorses b; u3 no longer reaches an endorser
    assert pairs(v, "exposed") == {("u1", "b"), ("u2", "b"), ("u5", "b")}
    assert pairs(v, "reach") == set(itertools.product(["u1", "u2", "u5"], repeat=2))


# ------------------------------------------------------ acceptance 16: inverse and star
def test_inverse_swaps_and_star_includes_x_equals_y(strategy) -> None:
    plan = plan_program(parse_program(DECL + "inv(X,Y) :- <e->(X,Y).\n"
                                             "star(X,Y) :- <e*>(X,Y).\n"
                                             "both(X,Y) :- <(e | f-)*>(X,Y)."))
    state = strategy.materialize(plan, facts_of(e=[(1, 2), (2, 3)], f=[(4, 1)]))
    v = state.views()
    assert pairs(v, "inv") == {(2, 1), (3, 2)}
    assert pairs(v, "star") == {(1, 1), (2, 2), (3, 3), (1, 2), (2, 3), (1, 3)}
    assert pairs(v, "both") == {(n, n) for n in range(1, 5)} | {(1, 2), (2, 3), (1, 3), (1, 4)}
    strategy.apply(state, [("-", Fact("e", (2, 3), None))])
    assert pairs(state.views(), "star") == {(1, 1), (2, 2), (1, 2)}  # 3 left the domain


# ------------------------------------------------------- acceptance 17: loops are SCCs
def scc_pairs(edges: list[Pair]) -> set[Pair]:
    g = nx.DiGraph(edges)
    out = set()
    for comp in nx.strongly_connected_components(g):
        if len(comp) > 1 or any(g.has_edge(x, x) for x in comp):
            out |= set(itertools.product(comp, repeat=2))
    return out


@pytest.mark.parametrize("seed", range(25))
def test_loop_view_equals_scc_pairs(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(2, 8)
    hops = [(s, rng.randrange(n)) for s in range(n) if rng.random() < 0.8]
    v = evaluate_program(plan_program(programs.load("loops")),
                         [Fact("hop", h) for h in hops])  # localized plan
    assert pairs(v, "onLoop") == scc_pairs(hops)
    assert {f.args[0] for f in v.get("looping", [])} == {x for x, _ in scc_pairs(hops)}


@st.composite
def hop_stream(draw: st.DrawFn):
    nodes = list(range(draw(st.integers(2, 5))))
    hop = st.builds(lambda s, n: Fact("hop", (s, n)), st.sampled_from(nodes),
                    st.sampled_from(nodes))
    return signed_stream(draw, hop)


@settings(max_examples=25)
@given(hop_stream(), st.integers(0, 2**16))
def test_loops_maintained(strategy, stream, seed: int) -> None:
    check_stream(strategy, plan_program(programs.load("loops")), *stream, seed)


# ----------------------------------------------------- constrained reachability (network)
@st.composite
def link_maintenance_stream(draw: st.DrawFn):
    nodes = [f"n{i}" for i in range(draw(st.integers(2, 4)))]
    fact = st.one_of(
        st.builds(lambda a, b: Fact("link", (a, b, 1)), st.sampled_from(nodes),
                  st.sampled_from(nodes)),
        st.builds(lambda a, b: Fact("maintenance", (a, b)), st.sampled_from(nodes),
                  st.sampled_from(nodes)))
    return signed_stream(draw, fact, max_initial=7)


@settings(max_examples=25)
@given(link_maintenance_stream(), st.integers(0, 2**16))
def test_constrained_reach_maintained(strategy, stream, seed: int) -> None:
    plan = plan_program(programs.load("constrained_reach"))
    check_stream(strategy, plan, *stream, seed)
    initial, _ = stream
    links = {f.args[:2] for f in initial if f.relation == "link"}
    down = {f.args for f in initial if f.relation == "maintenance"}
    v = evaluate_program(plan, initial)
    g = nx.DiGraph(links - down)
    want = {(s, d) for s in g for d in nx.descendants(g, s)}
    want |= {(s, s) for s in g if any(nx.has_path(g, n, s) for n in g.successors(s))}
    assert pairs(v, "reach") == want


# ----------------------------------------------- random patterns: oracle and strategies
def pattern_program(p1: ast.PathExpr, p2: ast.PathExpr, p3: ast.PathExpr) -> str:
    return (DECL + f"v1(X,Y) :- <{p1}>(X,Y).\n"
            f"v2(X,Y) :- <{p2}>(X,Y), not <{p3}>(Y,X).\n")


def graph_facts(edges: dict[str, set[Pair]]) -> list[Fact]:
    return [Fact(r, e, None) for r, es in edges.items() for e in es]


edge_sets = st.fixed_dictionaries({r: st.sets(st.tuples(st.integers(0, 3), st.integers(0, 3)),
                                              max_size=5) for r in "efg"})


@settings(max_examples=150)
@given(path_exprs(), path_exprs(max_leaves=4), path_exprs(max_leaves=4), edge_sets)
def test_random_patterns_equal_the_automaton_oracle(p1, p2, p3, edges) -> None:
    v = evaluate_program(parse_program(pattern_program(p1, p2, p3)), graph_facts(edges))
    assert pairs(v, "v1") == oracle(p1, edges)
    neg = oracle(p3, edges)
    assert pairs(v, "v2") == {(x, y) for x, y in oracle(p2, edges) if (y, x) not in neg}


LOCATED_DECL = "node(@S) :- e(@S,D,C).\nnode(@S) :- f(@S,D,C).\nnode(@S) :- g(@S,D,C).\n"


@settings(max_examples=60)
@given(path_exprs(), edge_sets)
def test_random_located_patterns_localize_and_equal_the_oracle(p1, edges) -> None:
    plan = plan_program(parse_program(LOCATED_DECL + f"v(@X,Y) :- <{p1}>(@X,Y)."))
    facts = [Fact(r, (a, b, 1)) for r, es in edges.items() for a, b in es]
    assert pairs(evaluate_program(plan, facts), "v") == oracle(p1, edges)


@settings(max_examples=30)
@given(path_exprs(max_leaves=5), path_exprs(max_leaves=3), path_exprs(max_leaves=3),
       update_stream(rels=("e", "f", "g"), nodes=[0, 1, 2, 3]), st.integers(0, 2**16))
def test_random_pattern_views_maintained(strategy, p1, p2, p3, stream, seed: int) -> None:
    plan = plan_program(parse_program(pattern_program(p1, p2, p3)))
    check_stream(strategy, plan, *stream, seed)
