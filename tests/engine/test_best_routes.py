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
from netrules.facts import Fact
from netrules.lang import parse_program
from netrules.plan import plan_program
from tests.engine.test_differential import check_stream, link_stream
from tests.meaning import evaluate_program

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


@pytest.mark.spark
def test_best_routes_on_the_spark_engine(spark) -> None:
    """The Spark engine maintains recursion through a_MIN (Soufflé and DDlog refuse the
    program): each batch incrementally on the hot path, no Spark job per batch, the mirror and
    a from-scratch Spark run agreeing with the reference after failures, repairs and a tie."""
    from netrules.engine.spark.engine import SparkEngine

    rng = random.Random(5)
    g = nx.connected_watts_strogatz_graph(12, 4, 0.4, seed=5).to_directed()
    links = sorted({Fact("link", (f"n{u}", f"n{v}", rng.randint(1, 3))) for u, v in g.edges},
                   key=Fact.key)
    engine = SparkEngine(PLAN, spark=spark, checkpoint_every=50)
    engine.load(links)
    present = set(links)
    for step in range(5):
        down = rng.sample(sorted(present, key=Fact.key), 2)
        batch = [("-", f) for f in down]
        present -= set(down)
        if step % 2:  # repair an earlier failure
            up = rng.choice(sorted(set(links) - present, key=Fact.key))
            batch.append(("+", up))
            present.add(up)
        delta = engine.apply(batch)
        assert delta.stats.spark_jobs == 0
        want = evaluate_program(PLAN, sorted(present, key=Fact.key))
        assert {r: set(v) for r, v in engine.views().items()} == \
            {r: set(want.get(r, [])) for r in engine.views()}
    assert engine.audit() == []


def test_a_lost_detour_does_not_overdelete_the_best_route() -> None:
    """Overdeletion drops a min group's row only when a binding giving its minimum goes:
    losing a's direct 5-cost link to c leaves a's best route to c (a-b-c, cost 2) standing,
    so it is not rebuilt; losing b-c takes it down."""
    from netrules.engine.iterated import _overdelete, new_aggregates
    from netrules.engine.reference import Database, Overlay

    links = [Fact("link", x) for x in [("a", "b", 1), ("b", "c", 1), ("a", "c", 5),
                                       ("c", "a", 5), ("b", "a", 1), ("c", "b", 1)]]
    views = evaluate_program(PLAN, links)
    db = Database()
    for facts in views.values():
        for f in facts:
            db.add(f.relation, f.args)
    stratum = next(s for s in PLAN.strata if "bestPath" in s.relations)
    old = Overlay(db, db, stratum.relations)

    def over_after_losing(link: tuple) -> set:
        lost = Database()
        lost.add("link", link)
        aggs = new_aggregates(stratum, old)
        over = _overdelete(stratum, old, lost, Database(), aggs)
        return {(rel, row[:2]) for rel, rows in over.rel.items() for row in rows}

    detour = over_after_losing(("a", "c", 5))
    assert ("route", ("a", "c")) in detour  # the lost route itself
    assert ("bestPath", ("a", "c")) not in detour
    best = over_after_losing(("b", "c", 1))
    assert ("bestPath", ("a", "c")) in best


def test_the_first_link_event_after_load_builds_no_index_over_the_view(monkeypatch) -> None:
    """psn's load builds the lookup indexes maintaining the best routes' iteration probes
    (``joins.probe_patterns``): on americas the first link down otherwise spent 12-15 s
    building them. The batch must still give the from-scratch answer."""
    from netrules.engine.joins import probe_patterns
    from netrules.engine.reference import Database
    from netrules.engine.strategies import get

    links = [Fact("link", (a, b, c)) for a, b, c in
             [("a", "b", 1), ("b", "c", 1), ("c", "d", 2), ("a", "d", 5), ("b", "d", 3)]]
    links += [Fact("link", (b, a, c)) for a, b, c in (f.args for f in list(links))]
    psn = get("psn")
    state = psn.materialize(PLAN, links)
    built: list = []
    real = Database._index
    monkeypatch.setattr(Database, "_index", lambda self, rel, pos: (
        built.append((rel, pos)) if self is state.db else None, real(self, rel, pos))[1])
    psn.apply(state, [("-", links[1])])
    iterated = next(s for s in PLAN.strata if s.iterated)
    assert probe_patterns(list(iterated.rules)) and not set(built) & probe_patterns(
        list(iterated.rules))
    want = evaluate_program(PLAN, [f for f in links if f != links[1]])
    assert {r: set(fs) for r, fs in state.views().items() if fs} == \
        {r: set(fs) for r, fs in want.items() if fs}


MIN_RECURSION = [plan_program(programs.load("min_cost")), plan_program(parse_program("""
e(@S,D,C) :- link(@S,D,C).
e(@S,D,C) :- link(@S,Z,C1), d(@Z,D,C2), C := C1 + C2.
d(@S,D,a_MIN<C>) :- e(@S,D,C).
g(@S,D,N) :- link(@S,D,C), N := 1.
g(@S,D,N) :- link(@S,Z,C1), h(@Z,D,N0), N := N0 + 1.
h(@S,D,a_MIN<N>) :- g(@S,D,N).
w(@S,D,a_COUNT<*>) :- link(@S,D,C), h(@D,S,N), N < 3.
""")), plan_program(parse_program("""
materialize(link, infinity, infinity, keys(1,2)).
r1 route(@S,D,P,C) :- link(@S,D,C), P := f_concat(S, D).
r2 route(@S,D,P,C) :- link(@S,Z,C1), bestPath(@Z,D,P2,C2), f_member(P2, S) == 0,
                      C := C1 + C2, P := f_concat(S, P2).
b1 bestCost(@S,D,a_MIN<C>) :- route(@S,D,P,C).
b2 bestPath(@S,D,a_MIN<P>,C) :- bestCost(@S,D,C), route(@S,D,P,C).
"""))]


@settings(max_examples=60)
@given(st.sampled_from(range(len(MIN_RECURSION))), link_stream(n_nodes=6),
       st.integers(0, 2**16))
def test_recursion_through_min_maintained_exactly(strategy, i: int, stream, seed: int) -> None:
    """Bellman-Ford distances and hop counts through a_MIN (no path to stop a walk), and a
    count over a shipped body above them; and best routes written as the papers write them,
    two aggregates in the recursion (least cost, then least path at it), under random link
    streams."""
    check_stream(strategy, MIN_RECURSION[i], *stream, seed)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000))
def test_compacted_relations_stay_exact_and_past_deltas_still_read(seed: int) -> None:
    """With dead rows dropped before every batch that follows one leaving any
    (``COMPACT_AT`` and ``COMPACT_SHARE`` 0), flaps renumber the rows of ``route`` again
    and again: the views must still equal the meaning after every batch, and a delta read
    after later compactions must say what it said when it was new. A run in which a route
    went before the last batch must have compacted."""
    from netrules.engine.columnar import compaction
    from netrules.engine.engine import Engine

    rng = random.Random(seed)
    n = rng.randint(3, 7)
    nodes = [f"n{i}" for i in range(n)]
    links = sorted({Fact("link", (a, b, rng.randint(1, 3)))
                    for a in nodes for b in nodes if a != b and rng.random() < 0.5},
                   key=Fact.key) or [Fact("link", ("n0", "n1", 1))]
    old = compaction.COMPACT_AT, compaction.COMPACT_SHARE
    compaction.COMPACT_AT, compaction.COMPACT_SHARE = 0, 0.0
    try:
        eng = Engine(PLAN, "columnar")
        eng.apply([("+", f) for f in links])
        present, kept = set(links), []
        for _ in range(12):
            f = rng.choice(links)
            delta = eng.apply([("-" if f in present else "+", f)])
            (present.discard if f in present else present.add)(f)
            kept.append((delta, {r: (delta.ids(r, 0).tolist(), delta.ids(r, 1).tolist())
                                 for r in delta.columns},
                         {r: set(v) for r, v in delta.removed.items()}))
            want = evaluate_program(PLAN, sorted(present, key=Fact.key))
            got = eng.state.views() if hasattr(eng.state, "views") else eng.views()
            for rel in ("route", "bestPath", "bestCost"):
                assert {x.args for x in got.get(rel, [])} == {x.args for x in want.get(rel, [])}
        for delta, ids, _ in kept:  # decoded afresh: the sets above are cached
            assert {r: (delta.ids(r, 0).tolist(), delta.ids(r, 1).tolist())
                    for r in delta.columns} == ids
        if any(removed.get("route") for _, _, removed in kept[:-1]):
            assert eng.state.extra["program"].stats["compactions"] > 0
    finally:
        compaction.COMPACT_AT, compaction.COMPACT_SHARE = old


@settings(max_examples=8, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from([0, 2]))
def test_routes_derived_cheapest_first_stay_exact(seed: int, i: int) -> None:
    """A batch feeds an arg-min relation its input cheapest first (``IteratedStage.
    _cheapest``), holding the dearer rows back: on graphs large enough for a link event to
    bring routes of several costs at once (best routes, and the two-aggregate form whose
    ``bestCost`` is fed so), the views must equal the meaning after every batch, and the run
    must have held rows back at least once, or it tested nothing."""
    from netrules.engine.engine import Engine

    plan = PLAN if i == 0 else MIN_RECURSION[i]
    rng = random.Random(seed)
    g = nx.connected_watts_strogatz_graph(rng.randint(9, 12), 4, 0.3, seed=seed)
    links = sorted({Fact("link", (f"n{a}", f"n{b}", c))
                    for u, v in g.edges for c in [rng.randint(1, 3)]
                    for a, b in ((u, v), (v, u))}, key=Fact.key)
    eng = Engine(plan, "columnar")
    eng.apply([("+", f) for f in links])
    present = set(links)
    for _ in range(6):
        picked = rng.sample(links, rng.randint(1, 3))
        eng.apply([("-" if f in present else "+", f) for f in picked])
        for f in picked:
            (present.discard if f in present else present.add)(f)
        want = evaluate_program(plan, sorted(present, key=Fact.key))
        got = eng.views()
        for rel in plan.derived:
            assert {x.args for x in got.get(rel, [])} == {x.args for x in want.get(rel, [])}
    stages = eng.state.extra["program"].stages.values()
    assert sum(s.held for s in stages) > 0
