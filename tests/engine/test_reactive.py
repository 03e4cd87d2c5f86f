"""Event rules (issue 21): ``periodic`` timers, one-step events, ``delete`` heads and soft state
on the tables event rules write, on an event-time clock, with the views over them kept exact."""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import pytest
from click.testing import CliRunner

from netrules.cli import main
from netrules.engine.engine import Engine
from netrules.engine.reactive import Reactive
from netrules.engine.reference import evaluate_program
from netrules.engine.timers import Timer
from netrules.errors import EngineError, EvalError
from netrules.facts import Fact
from netrules.lang.parse import parse_program
from netrules.plan import plan_program

HEARTBEAT = """
// neighbour liveness by heartbeats: soft state refreshed by a periodic event
#define HELLO 5
#define DEAD 12
materialize(link, infinity, infinity, keys(1,2)).
materialize(down, infinity, infinity, keys(1,2)).
materialize(neighbour, DEAD, infinity, keys(1,2)).
materialize(reach, infinity, infinity, keys(1,2)).
h1 eHello(@Y, X) :- periodic(@X, E, HELLO), link(@X, Y).
h2 neighbour(@Y, X, T) :- eHello(@Y, X), T := f_now().
d0 eDown(@X, Y) :- down(@X, Y).
d1 delete neighbour(@X, Y, T) :- eDown(@X, Y), neighbour(@X, Y, T).
r1 reach(@X, Y) :- neighbour(@X, Y, T).
r2 reach(@X, Z) :- neighbour(@X, Y, T), reach(@Y, Z), X != Z.
"""
PLAN = plan_program(parse_program(HEARTBEAT, "heartbeat.olg"))
STRATEGIES = ["auto", "dred", "counting"]


def both(u: str, v: str) -> list[Fact]:
    return [Fact("link", (u, v)), Fact("link", (v, u))]


def table(r: Reactive, rel: str) -> set[tuple]:
    return {f.args for f in r.views().get(rel, [])}


def closure(neighbour: set[tuple]) -> set[tuple]:
    """reach as networkx sees the neighbour table: every node reachable in >= 1 hop."""
    g = nx.DiGraph([(x, y) for x, y, _ in neighbour])
    return {(x, y) for x in g for y in nx.descendants(g, x) | set(g[x]) if x != y} | {
        (x, y) for x, y, _ in neighbour}


@pytest.mark.parametrize("strategy_name", STRATEGIES)
def test_refreshes_stop_and_the_fact_expires_with_what_rested_on_it(strategy_name: str) -> None:
    """Hellos every 5 s, lifetime 12 s: when a-b goes down at 20 the last hello was at 15,
    so the neighbour facts over it expire at exactly 27 and reach follows, by networkx."""
    r = Reactive(PLAN, strategy_name, nodes=["a", "b", "c"])
    r.apply([("+", f) for f in both("a", "b") + both("b", "c")], 0.0)
    assert table(r, "neighbour") == set()  # the first hello is one period in
    r.advance(5)
    assert table(r, "neighbour") == {("a", "b", 5), ("b", "a", 5), ("b", "c", 5),
                                     ("c", "b", 5)}
    r.apply([("-", f) for f in both("a", "b")], 20.0)
    for t, ab in [(21, True), (26.9, True), (27, False), (40, False)]:
        r.advance(t)
        n = table(r, "neighbour")
        assert (("a", "b", 15) in n) is ab and (("b", "a", 15) in n) is ab
        assert table(r, "reach") == closure(n), t
    assert ("c", "a") not in table(r, "reach") and ("c", "b") in table(r, "reach")


@pytest.mark.parametrize("strategy_name", STRATEGIES)
def test_delete_head_removes_the_stored_fact(strategy_name: str) -> None:
    """A ``down`` fact derives the event eDown, on which d1 deletes the neighbour fact; the
    next hello inserts it again (a deletion is not a ban)."""
    r = Reactive(PLAN, strategy_name, nodes=["a", "b"])
    r.apply([("+", f) for f in both("a", "b")], 0.0)
    r.advance(6)
    r.apply([("+", Fact("down", ("b", "a")))], 7.0)
    assert table(r, "neighbour") == {("a", "b", 5)}
    assert table(r, "reach") == {("a", "b")}
    assert r.fired["eDown"] == 1
    r.advance(10)
    assert table(r, "neighbour") == {("a", "b", 10), ("b", "a", 10)}


def test_a_replay_is_deterministic_and_strategies_agree() -> None:
    """The same stream on the event-time clock gives the same views at every instant,
    whatever strategy keeps them and however the advances are cut."""
    stream = [(0.0, [("+", f) for f in both("a", "b") + both("b", "c") + both("c", "d")]),
              (12.0, [("-", f) for f in both("b", "c")]),
              (31.0, [("+", f) for f in both("b", "c")] + [("+", Fact("down", ("d", "c")))])]
    seen = []
    for strategy, step in [("auto", 1.0), ("dred", 7.0), ("counting", 0.5)]:
        r = Reactive(PLAN, strategy, nodes=["a", "b", "c", "d"])
        trace, t = [], 0.0
        for when, batch in stream:
            while t + step < when:
                t += step
                r.advance(t)
            r.apply(batch, when)
            t = when
            trace.append((when, table(r, "neighbour"), table(r, "reach")))
        r.advance(60)
        trace.append((60, table(r, "neighbour"), table(r, "reach")))
        seen.append(trace)
    assert seen[0] == seen[1] == seen[2]


def test_periodic_forms() -> None:
    """Repeats, delay and spacing, as P2/RapidNet write them."""
    t = Timer((10.0, 2.0, 3.0, 1.0))  # period 10, twice, from 3 s, node i 1 s later
    assert t.next_after(0, 0.0) == (3.0, 0) and t.next_after(2, 0.0) == (5.0, 0)
    assert t.next_after(0, 3.0) == (13.0, 1) and t.next_after(0, 13.0) is None
    assert t.next_after(0, 3.0, inclusive=True) == (3.0, 0)
    assert Timer((5.0,)).next_after(0, 0.0) == (5.0, 0)  # no delay: one period in
    text = ("materialize(link, infinity, infinity, keys(1,2)).\n"
            "materialize(tick, infinity, infinity, keys(1,2)).\n"
            "t1 tick(@X, T) :- periodic(@X, E, 10, 2, 3, 1), link(@X, Y), T := f_now().\n"
            "t2 tick(@X, T) :- periodic(@X, E, 4, 1), link(@X, Y), T := f_now() + 1000.\n")
    r = Reactive(plan_program(parse_program(text, "t.olg")))
    r.apply([("+", f) for f in both("a", "b")], 0.0)
    r.advance(100)
    assert table(r, "tick") == {("a", 3), ("a", 13), ("b", 4), ("b", 14), ("a", 1004),
                                ("b", 1004)}


def test_an_event_cascade_that_never_settles_is_an_error() -> None:
    text = ("materialize(link, infinity, infinity, keys(1,2)).\n"
            "p1 ePing(@Y, X) :- periodic(@X, E, 1, 1), link(@X, Y).\n"
            "p2 ePing(@Y, X) :- ePing(@X, Y).\n")
    r = Reactive(plan_program(parse_program(text, "loop.olg")))
    r.apply([("+", f) for f in both("a", "b")], 0.0)
    with pytest.raises(EngineError, match="do not settle"):
        r.advance(1)


def test_event_rules_never_run_as_views() -> None:
    with pytest.raises(EngineError, match="event rules .*h1, h2, d0, d1"):
        Engine(PLAN)
    with pytest.raises(EvalError, match="event rules"):
        evaluate_program(PLAN, [])
    r = Reactive(PLAN)
    with pytest.raises(EngineError, match="does not go back"):
        r.apply([], 5.0) or r.apply([], 4.0)


def test_check_prints_the_event_rules(tmp_path: Path) -> None:
    p = tmp_path / "heartbeat.olg"
    p.write_text(HEARTBEAT)
    out = CliRunner().invoke(main, ["check", str(p)])
    assert out.exit_code == 0, out.output
    assert "event rules" in out.output and "d1 delete neighbour(@X,Y,T)" in out.output
