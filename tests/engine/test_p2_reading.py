"""Programs of our own in P2's reading (``netrules.lang.events.reading``): each construct it
adds, on the ``Reactive`` driver: an external event, a table insertion or refresh firing a
rule, ``a_COUNT`` over one occurrence (0 when nothing matches), ``@Broadcast``; and the
per-program choice of reading."""

from __future__ import annotations

from pathlib import Path

import pytest

from netrules.engine.reactive import Reactive
from netrules.errors import EngineError, ProgramError
from netrules.facts import Fact
from netrules.lang.events import reading
from netrules.lang.parse import parse_program
from netrules.plan import plan_program
from tests.lang.test_dialect import assert_refused

GOSSIP = """
// peers announced by an external event; each new or refreshed peer is told to the
// neighbours, who remember who told them; a 'down' event deletes the peer
materialize(peer, infinity, infinity, keys(1,2)).
materialize(seen, infinity, infinity, keys(1,2)).
materialize(heard, infinity, infinity, keys(1,2,3)).
materialize(told, infinity, infinity, keys(1,2)).
g1 eNew(@X,Y,C,a_COUNT<*>) :- up(@X,Y,C), peer(@X,Y,D).
g2 peer(@X,Y,C) :- eNew(@X,Y,C,N), N == 0.
g3 peer(@X,Y,C) :- up(@X,Y,C), peer(@X,Y,D).
g4 seen(@X,Y,N) :- eNew(@X,Y,C,N).
g5 eTell(@X,Y) :- peer(@X,Y,C).
g6 eHeard(@Broadcast,X,Y) :- eTell(@X,Y).
g7 heard(@Z,X,Y) :- eHeard(@Z,X,Y).
g8 delete peer(@X,Y,C) :- down(@X,Y), peer(@X,Y,C).
v1 told(@Z,Y) :- heard(@Z,X,Y).
"""
LINE = {"a": ["b"], "b": ["a", "c"], "c": ["b"]}


def make(strategy: str = "auto") -> Reactive:
    plan = plan_program(parse_program(GOSSIP, "gossip.olg"))
    return Reactive(plan, strategy, nodes=list(LINE), neighbours=LINE.__getitem__)


def rows(r: Reactive, rel: str) -> set[tuple]:
    return {f.args for f in r.views().get(rel, [])}


def up(x: str, y: str, c: int) -> tuple[str, Fact]:
    return ("+", Fact("up", (x, y, c)))


def test_the_reading_is_chosen_per_program() -> None:
    """GOSSIP deletes, so it is read as P2 does: eTell is an event a table insertion fires,
    up an event fed from outside. Without g8 the same rules are read as views, where an
    undeclared relation fed from outside is refused by name."""
    rd = reading(parse_program(GOSSIP, "gossip.olg"))
    assert rd.p2 and {"up", "down", "eTell", "eNew"} <= rd.fired
    plan = plan_program(parse_program(GOSSIP, "gossip.olg"))
    assert [r.label for r in plan.triggered] == ["g5"]
    assert [r.label for r in plan.rules] == ["v1"]
    without = GOSSIP.replace("g8 delete peer(@X,Y,C) :- down(@X,Y), peer(@X,Y,C).\n", "")
    with pytest.raises(ProgramError) as e:
        parse_program(without, "views.olg")
    got = [(d.loc.line, d.message[:40]) for d in e.value.diagnostics]
    assert got == [(8, "a_COUNT over event relation up (a count "),
                   (8, "up is an event relation (never materiali"),
                   (13, "@Broadcast (every node with a link from ")], got


def test_shipped_programs_keep_the_view_reading() -> None:
    shipped = Path(__file__).resolve().parents[2] / "netrules" / "programs"
    for p in sorted(shipped.glob("*.ndlog")):
        program = parse_program(p.read_text(encoding="utf-8"), str(p))
        assert not reading(program).p2, p.name
        assert plan_program(program).reactive == (), p.name


@pytest.mark.parametrize("strategy_name", ["auto", "dred", "counting"])
def test_external_event_count_trigger_and_broadcast(strategy_name: str) -> None:
    r = make(strategy_name)
    r.apply([up("a", "b", 1)], 1.0)
    # a_COUNT: no peer matched, so the count is 0 and g2 inserts the peer
    assert rows(r, "seen") == {("a", "b", 0)} and rows(r, "peer") == {("a", "b", 1)}
    # the insertion fired g5; the broadcast reached a's neighbour b only
    assert rows(r, "heard") == {("b", "a", "b")} and rows(r, "told") == {("b", "b")}
    r.apply([up("b", "c", 2)], 2.0)
    assert rows(r, "heard") == {("b", "a", "b"), ("a", "b", "c"), ("c", "b", "c")}
    assert r.fired["eTell"] == 2 and r.fired["up"] == 2


def test_a_refresh_fires_and_the_count_sees_the_match() -> None:
    """The same announcement again: one match (count 1), no new peer, but g3 writes the peer
    unchanged, which is a refresh and fires g5 once more (RapidNet's ``...Ref`` handler)."""
    r = make()
    r.apply([up("a", "b", 1)], 1.0)
    r.apply([up("a", "b", 1)], 2.0)
    assert rows(r, "seen") == {("a", "b", 1)}
    assert rows(r, "peer") == {("a", "b", 1)}
    assert r.fired["eTell"] == 2 and r.fired["eHeard"] == 2


def test_a_change_by_key_is_an_insertion() -> None:
    r = make()
    r.apply([up("a", "b", 1)], 1.0)
    r.apply([up("a", "b", 5)], 2.0)  # g3 replaces the cost under keys(1,2)
    assert rows(r, "peer") == {("a", "b", 5)} and r.fired["eTell"] == 2


def test_an_external_event_deletes_and_cannot_be_retracted() -> None:
    r = make()
    r.apply([up("a", "b", 1)], 1.0)
    r.apply([("+", Fact("down", ("a", "b")))], 2.0)
    assert rows(r, "peer") == set() and rows(r, "heard") == {("b", "a", "b")}
    assert r.fired["eTell"] == 1  # a deletion fires no trigger rule
    with pytest.raises(EngineError, match="is an event: it occurs"):
        r.apply([("-", Fact("up", ("a", "b", 1)))], 3.0)


def test_broadcast_defaults_to_every_other_node() -> None:
    plan = plan_program(parse_program(GOSSIP, "gossip.olg"))
    r = Reactive(plan, nodes=["a", "b", "c"])
    r.apply([up("a", "b", 1)], 1.0)
    assert rows(r, "heard") == {("b", "a", "b"), ("c", "a", "b")}


REFUSED = [
    ("count_group", "materialize(t, infinity, infinity, keys(1,2)).\n"
     "d1 delete t(@X,Y) :- eGo(@X,Y), t(@X,Y).\n"
     "c1 eN(@X,Z,a_COUNT<*>) :- eGo(@X,Y), t(@X,Z).", "a_COUNT in an event rule needs one "
     "event", (3, 12)),
    ("broadcast_view", "materialize(t, infinity, infinity, keys(1,2)).\n"
     "materialize(u, infinity, infinity, keys(1,2)).\n"
     "d1 delete t(@X,Y) :- eGo(@X,Y), t(@X,Y).\n"
     "u(@Broadcast,Y) :- t(@Y,Z).", "@Broadcast", (4, 4)),
]


@pytest.mark.parametrize(("what", "text", "message", "where"), REFUSED,
                         ids=[r[0] for r in REFUSED])
def test_what_p2s_reading_still_refuses(what, text, message, where) -> None:
    assert_refused(text, f"{what}.olg", message, where)
