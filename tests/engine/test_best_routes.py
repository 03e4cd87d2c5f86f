"""Recursion through a_MIN (issue 4): path-vector routing over neighbours' best routes, which
Soufflé ("cyclic aggregation") and DDlog refuse. Checked against networkx on random weighted
graphs, and maintained exactly by every strategy under link failures, flaps and ties."""

from __future__ import annotations

import random

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netrules import programs
from netrules.engine.reference import evaluate_program
from netrules.errors import EngineError
from netrules.facts import Fact
from netrules.plan import plan_program
from tests.engine.test_differential import check_stream, link_stream

PLAN = plan_program(programs.load("best_routes"))


@pytest.mark.parametrize("seed", range(60))
def test_best_routes_equal_shortest_paths(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(2, 9)
    g = nx.gnp_random_graph(n, rng.uniform(0.2, 0.6), seed=seed, directed=rng.random() < 0.5)
    g = g if g.is_directed() else g.to_directed()
    for u, v in g.edges:
        g.edges[u, v]["w"] = rng.randint(1, 4)
    facts = [Fact("link", (f"n{u}", f"n{v}", g.edges[u, v]["w"])) for u, v in g.edges]
    views = evaluate_program(PLAN, facts)
    best = {(s, d): (p, c) for s, d, p, c in (f.args for f in views.get("bestPath", []))}
    want = {}
    for s in g:
        for d, c in nx.single_source_dijkstra_path_length(g, s, weight="w").items():
            if d != s:
                want[(f"n{s}", f"n{d}")] = c
    assert {k: c for k, (_, c) in best.items()} == want
    for (s, d), (path, c) in best.items():
        assert path[0] == s and path[-1] == d and len(set(path)) == len(path)
        hops = list(zip(path, path[1:], strict=False))
        assert sum(g.edges[int(a[1:]), int(b[1:])]["w"] for a, b in hops) == c
        if len(path) > 2:  # a best route extends the next hop's own best route
            assert best[(path[1], d)][0] == path[1:]


def test_next_best_takes_over_when_the_best_breaks(strategy) -> None:
    links = [Fact("link", x) for x in [("a", "b", 1), ("b", "c", 1), ("a", "c", 5),
                                       ("c", "a", 5), ("b", "a", 1), ("c", "b", 1)]]
    s = strategy.materialize(PLAN, links)

    def route(a, b):
        return {f.args[2:] for f in s.views()["bestPath"] if f.args[:2] == (a, b)}

    assert route("a", "c") == {(("a", "b", "c"), 2)}
    strategy.apply(s, [("-", links[1])])
    assert route("a", "c") == {(("a", "c"), 5)}
    strategy.apply(s, [("+", links[1])])
    assert route("a", "c") == {(("a", "b", "c"), 2)}
    strategy.apply(s, [("-", links[0]), ("-", links[2])])
    assert route("a", "c") == set()  # no count-to-infinity: the route is simply gone


@settings(max_examples=60)
@given(link_stream(n_nodes=5), st.integers(0, 2**16))
def test_best_routes_maintained_exactly(strategy, stream, seed: int) -> None:
    check_stream(strategy, PLAN, *stream, seed)


def test_spark_engine_refuses_iterated_strata() -> None:
    from netrules.engine.spark.fixpoint import check_spark_plan

    with pytest.raises(EngineError, match="recurse through an aggregate"):
        check_spark_plan(PLAN)
