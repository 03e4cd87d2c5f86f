"""The oracle of meaning on answers worked out by hand or by networkx, never by the engine:
if the oracle is wrong, the differential tests would blame a correct engine (or excuse a wrong
one), so it is pinned down here on its own."""

from __future__ import annotations

import subprocess
import sys

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netrules import programs
from netrules.facts import Fact, sort_key
from netrules.lang import ast, parse_program
from netrules.plan import plan_program
from netrules.testing.oracle import OracleError, assert_agrees, evaluate


def F(rel: str, *args) -> Fact:  # noqa: N802
    return Fact(rel, args, None)


def test_imports_nothing_from_the_engine() -> None:
    code = ("import sys, netrules.testing.oracle; "
            "print(sorted(m for m in sys.modules if m.startswith(('netrules.engine', "
            "'netrules.lang.builtins', 'netrules.plan'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"


def test_matching_constants_repeated_variables_and_anonymous() -> None:
    prog = parse_program("""
        loop(X) :- e(X,X).
        from1(Y) :- e(1,Y).
        src(X) :- e(X,_).
        pair(X,Y) :- e(X,Z), e(Z,Y).
    """)
    v = evaluate(prog, [F("e", 1, 1), F("e", 1, 2), F("e", 2, 3)])
    assert v["loop"] == {(1,)}
    assert v["from1"] == {(1,), (2,)}
    assert v["src"] == {(1,), (2,)}
    assert v["pair"] == {(1, 1), (1, 2), (1, 3)}


def test_assignments_arithmetic_comparisons_and_lists() -> None:
    prog = parse_program("""
        h(X,Y,P) :- e(X,Y), Y > X, S := X + Y * 2, S != 7, P := f_concat(X, [Y, S]).
        m(X) :- l(L), f_member(L, X) == 1, n(X).
        d(Q) :- e(X,Y), Q := (Y - X) / 2.
    """)
    v = evaluate(prog, [F("e", 1, 3), F("e", 3, 2), F("e", 1, 2), F("l", (1, 2)),
                        F("n", 2), F("n", 5)])
    assert v["h"] == {(1, 2, (1, 2, 5))}  # (1,3) has S = 7; (3,2) has Y < X
    assert v["m"] == {(2,)}
    assert v["d"] == {(1,), (-1,), (0,)}


def test_negation_reads_the_completed_lower_stratum() -> None:
    prog = parse_program("""
        r(X,Y) :- e(X,Y).
        r(X,Y) :- e(X,Z), r(Z,Y).
        unreached(X,Y) :- n(X), n(Y), not r(X,Y).
        sink(X) :- n(X), not e(X,_).
    """)
    nodes = [F("n", i) for i in (1, 2, 3)]
    v = evaluate(prog, [*nodes, F("e", 1, 2), F("e", 2, 3)])
    assert v["unreached"] == {(a, b) for a in (1, 2, 3) for b in (1, 2, 3)} - {
        (1, 2), (2, 3), (1, 3)}
    assert v["sink"] == {(3,)}


def test_aggregates_over_distinct_bindings() -> None:
    prog = parse_program("""
        c(X, a_COUNT<*>) :- e(X,Y,W).
        s(X, a_SUM<W>) :- e(X,Y,W).
        lo(X, a_MIN<W>) :- e(X,Y,W).
        hi(X, a_MAX<W>) :- e(X,_,W).
    """)
    v = evaluate(prog, [F("e", 1, 2, 5), F("e", 1, 3, 5), F("e", 1, 4, 1), F("e", 2, 2, 7)])
    assert v["c"] == {(1, 3), (2, 1)}
    assert v["s"] == {(1, 11), (2, 7)}  # the 5 counted twice: two bindings (Y differs)
    assert v["lo"] == {(1, 1), (2, 7)}
    assert v["hi"] == {(1, 5), (2, 7)}


def test_a_declared_key_makes_an_arg_min() -> None:
    """With ``keys(1)`` the group is X alone: W is the least value, Y (the payload) comes
    from the binding reaching it, the smallest Y among ties; without the key, (X, Y) groups."""
    prog = parse_program("""
        materialize(e, infinity, infinity, keys(1,2,3)).
        materialize(best, infinity, infinity, keys(1)).
        best(X, Y, a_MIN<W>) :- e(X,Y,W).
        worst(X, Y, a_MAX<W>) :- e(X,Y,W).
    """)
    v = evaluate(prog, [F("e", 1, 9, 2), F("e", 1, 4, 2), F("e", 1, 3, 5), F("e", 2, 7, 1)])
    assert v["best"] == {(1, 4, 2), (2, 7, 1)}
    assert v["worst"] == {(1, 9, 2), (1, 4, 2), (1, 3, 5), (2, 7, 1)}


def test_recursion_through_negation_has_no_meaning() -> None:
    x = ast.Var("X")
    rules = (ast.Rule(ast.Atom("p", (x,)), (ast.Atom("n", (x,)),
                                            ast.Negation(ast.Atom("q", (x,))))),
             ast.Rule(ast.Atom("q", (x,)), (ast.Atom("n", (x,)), ast.Atom("p", (x,)))))
    with pytest.raises(OracleError, match="negation"):
        evaluate(ast.Program(rules), [F("n", 1)])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), max_size=14))
def test_reachability_is_networkx_closure(edges) -> None:
    facts = [Fact("link", (f"n{a}", f"n{b}", 1)) for a, b in edges]
    g = nx.DiGraph((f"n{a}", f"n{b}") for a, b in edges)
    want = {(u, v) for u in g for v in g  # a path of one link or more
            if any(nx.has_path(g, w, v) for w in g.successors(u))}
    got = evaluate(programs.load("reachability"), facts).get("reachable", set())
    assert got == want


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4), st.integers(1, 4)),
                max_size=10))
def test_best_routes_iterated_stratum_is_shortest_paths(links) -> None:
    """Recursion through a_MIN: the iterated meaning is networkx's least costs."""
    seen: dict[tuple, int] = {}
    for a, b, c in links:
        if a != b:
            seen.setdefault((a, b), c)  # one cost per directed link (keys(1,2))
    facts = [Fact("link", (f"n{a}", f"n{b}", c)) for (a, b), c in seen.items()]
    g = nx.DiGraph()
    g.add_weighted_edges_from((f"n{a}", f"n{b}", c) for (a, b), c in seen.items())
    want = {(s, d, c) for s, dist in nx.all_pairs_dijkstra_path_length(g)
            for d, c in dist.items() if d != s}
    views = evaluate(plan_program(programs.load("best_routes")), facts)
    assert views.get("bestCost", set()) == want
    # the arg-min's path: the smallest (sort_key) of the cheapest paths
    paths = {(s, d, min((tuple(p) for p in nx.all_shortest_paths(g, s, d, weight="weight")),
                        key=sort_key), c)
             for s, d, c in want}
    assert views.get("bestPath", set()) == paths


def test_assert_agrees_names_who_and_the_relation() -> None:
    plan = plan_program(programs.load("reachability"))
    facts = [Fact("link", ("a", "b", 1)), Fact("link", ("b", "c", 1))]
    good = {"link": facts, "reachable": [Fact("reachable", r) for r in
                                         (("a", "b"), ("b", "c"), ("a", "c"))],
            "linkD": [Fact("linkD", ("zz",))]}  # a localization auxiliary: not compared
    assert_agrees(good, plan, facts, who="x")
    bad = {**good, "reachable": good["reachable"][:2]}
    with pytest.raises(AssertionError, match=r"the engine under test disagrees .* reachable"):
        assert_agrees(bad, plan, facts, who="the engine under test")


def test_unsafe_rules_are_refused_not_guessed() -> None:
    rule = ast.Rule(ast.Atom("h", (ast.Var("X"),)),
                    (ast.Atom("e", (ast.Var("Y"),)), ast.Comparison("<", ast.Var("X"),
                                                                    ast.Var("Y"))))
    with pytest.raises(OracleError):
        evaluate(ast.Program((rule,)), [F("e", 1)])
