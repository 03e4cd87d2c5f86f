"""The acceptance tests of shared/notes/psn-derivation-sets.md §7, run against every strategy
under FIFO order, shuffled order and random batching (set semantics; multiplicities are checked
on the reference in test_reference.py)."""

from __future__ import annotations

import itertools
import random

import pytest

from netrules import programs
from netrules.facts import Fact
from netrules.lang import parse_program
from netrules.plan import plan_program
from tests.meaning import evaluate_program


def rows(state, rel: str) -> set[tuple]:
    return {f.args for f in state.views().get(rel, [])}


def L(a, b, c=None) -> Fact:  # noqa: N802
    return Fact("link", (a, b) if c is None else (a, b, c))


def schedules(updates, seed: int = 0):
    """FIFO one at a time, every order of small sets, one batch, and random splits."""
    yield [[u] for u in updates]
    if len(updates) <= 4:
        for perm in itertools.permutations(updates):
            yield [[u] for u in perm]
    yield [list(updates)]
    rng = random.Random(seed)
    for _ in range(5):
        u = list(updates)
        rng.shuffle(u)
        cut = sorted(rng.sample(range(1, len(u)), k=min(2, len(u) - 1))) if len(u) > 1 else []
        parts, prev = [], 0
        for c in [*cut, len(u)]:
            parts.append(u[prev:c])
            prev = c
        yield [p for p in parts if p]


HOP = plan_program(parse_program("""
hop(@X,Y) :- link(@X,Z), link(@Z,Y).
tri_hop(@X,Y) :- hop(@X,Z), link(@Z,Y).
"""), localized=False)


def test_1_self_join(strategy) -> None:
    s = strategy.materialize(HOP, [])
    strategy.apply(s, [("+", L("a", "a"))])
    assert rows(s, "hop") == {("a", "a")} and rows(s, "tri_hop") == {("a", "a")}
    s = strategy.materialize(HOP, [])
    strategy.apply(s, [("+", L("a", "b")), ("+", L("b", "c"))])
    assert rows(s, "hop") == {("a", "c")}


def test_5_hop_example_final_state(strategy) -> None:
    initial = [L(*e) for e in [("a", "b"), ("a", "d"), ("d", "c"), ("b", "c"), ("c", "h"),
                                ("f", "g")]]
    updates = [("+", L("d", "f")), ("+", L("a", "f")), ("-", L("a", "b"))]
    for sched in schedules(updates):
        s = strategy.materialize(HOP, initial)
        for batch in sched:
            strategy.apply(s, batch)
        assert rows(s, "hop") == {("a", "c"), ("a", "f"), ("a", "g"), ("b", "h"), ("d", "g"),
                                  ("d", "h")}
        assert rows(s, "tri_hop") == {("a", "g"), ("a", "h")}
        assert rows(s, "link") == {("a", "d"), ("a", "f"), ("b", "c"), ("c", "h"), ("d", "c"),
                                   ("d", "f"), ("f", "g")}


@pytest.mark.parametrize("text,initial,updates,final", [
    ("p() :- q(), r(). q() :- s().", ["s"], [("+", "r"), ("-", "s")], {"r"}),   # test 6 (E5)
    ("p() :- r1(), r2().", ["r2"], [("+", "r1"), ("-", "r2")], {"r1"}),        # test 7 (E6)
    ("p() :- r(), q().", ["q"], [("+", "r"), ("-", "q")], {"r"}),              # E7
])
def test_6_7_conflicting_updates_cancel(strategy, text, initial, updates, final) -> None:
    plan = plan_program(parse_program(text))
    for sched in schedules([(sg, Fact(n, ())) for sg, n in updates]):
        s = strategy.materialize(plan, [Fact(n, ()) for n in initial])
        for batch in sched:
            strategy.apply(s, batch)
        assert {r for r, fs in s.views().items() if fs} == final


CYCLE = plan_program(parse_program("""
p(@1) :- a(@0).
q(@2) :- p(@1).
p(@1) :- q(@2).
"""))


def test_8_deferred_deletion(strategy) -> None:
    """Paper 000's deferred DEL, as last-writer-wins state (issue 21): a deletion stamped
    after an insertion that arrives late keeps the fact out; it is pending until then."""
    s = strategy.materialize(CYCLE, [])
    strategy.apply(s, [("-", Fact("a", (0,)), 2.0, 0)])
    assert s.ledger.pending_deletions() == {Fact("a", (0,)): 1}
    assert not any(s.views().values())
    strategy.apply(s, [("+", Fact("a", (0,)), 1.0, 0)])
    assert not any(s.views().values()) and not s.ledger.pending_deletions()
    strategy.apply(s, [("+", Fact("a", (0,)))])  # no time: it arrived last, so it wins
    assert rows(s, "q") == {(2,)}


def test_9_10_cycle_detection_insert_then_delete(strategy) -> None:
    s = strategy.materialize(CYCLE, [])
    strategy.apply(s, [("+", Fact("a", (0,)))])
    assert rows(s, "p") == {(1,)} and rows(s, "q") == {(2,)}
    strategy.apply(s, [("-", Fact("a", (0,)))])
    assert not any(s.views().values())


REACH = plan_program(programs.load("reachability"))


def test_12_lost_route_count_to_infinity_guard(strategy) -> None:
    links = [L("a", "b", 1), L("b", "a", 1), L("b", "c", 1)]
    for sched in schedules([("-", L("b", "c", 1))]):
        s = strategy.materialize(REACH, links)
        before = rows(s, "reachable")
        assert before == {("a", "a"), ("a", "b"), ("a", "c"), ("b", "a"), ("b", "b"), ("b", "c")}
        lost: set = set()
        for batch in sched:
            lost |= strategy.apply(s, batch).removed.get("reachable", set())
        assert rows(s, "reachable") == {("a", "a"), ("a", "b"), ("b", "a"), ("b", "b")}
        assert lost == {("a", "c"), ("b", "c")}


def test_15_directed_localization(strategy) -> None:
    s = strategy.materialize(REACH, [L("a", "b", 1), L("b", "c", 1)])
    assert rows(s, "reachable") == {("a", "b"), ("b", "c"), ("a", "c")}


def test_17_orphan_deletion_is_pending_not_applied(strategy) -> None:
    s = strategy.materialize(REACH, [L("a", "b", 1)])
    delta = strategy.apply(s, [("-", L("x", "y", 1))])
    assert not delta.removed and rows(s, "reachable") == {("a", "b")}
    assert s.ledger.pending_deletions() == {L("x", "y", 1): 1}
    assert delta.stats.pending_deletions == 1


def test_19_non_linear_recursion(strategy) -> None:
    plan = plan_program(parse_program("r(S,D) :- link(S,D). r(S,D) :- r(S,Z), r(Z,D)."))
    s = strategy.materialize(plan, [Fact("link", e, None) for e in
                                    [("a", "b"), ("b", "c"), ("c", "d")]])
    assert len(rows(s, "r")) == 6
    s = strategy.materialize(plan, [Fact("link", ("a", "b"), None),
                                    Fact("link", ("b", "a"), None)])
    assert len(rows(s, "r")) == 4
    strategy.apply(s, [("-", Fact("link", ("a", "b"), None))])
    assert rows(s, "r") == {("b", "a")}


def test_20_six_ring_single_link_changes(strategy) -> None:
    ring = [f"n{i}" for i in range(6)]
    links = [L(ring[i], ring[(i + 1) % 6], 1) for i in range(6)]
    links += [L(ring[(i + 1) % 6], ring[i], 1) for i in range(6)]
    s = strategy.materialize(REACH, links)
    assert len(rows(s, "reachable")) == 36
    for link in links:
        strategy.apply(s, [("-", link)])
        want = {f.args for f in evaluate_program(REACH, set(links) - {link})["reachable"]}
        assert rows(s, "reachable") == want
        strategy.apply(s, [("+", link)])
        assert len(rows(s, "reachable")) == 36


def test_bounded_state_on_six_ring() -> None:
    """The design brief's blow-up case: 36 facts, 3,540 naive derivations; we keep <= K each."""
    from netrules.engine.strategies import psn

    ring = [f"n{i}" for i in range(6)]
    links = [L(ring[i], ring[(i + 1) % 6], 1) for i in range(6)]
    links += [L(ring[(i + 1) % 6], ring[i], 1) for i in range(6)]
    s = psn.materialize(REACH, links)
    assert s.stored_records() <= psn.DEFAULT_K * s.fact_count()
    assert s.stored_records() / s.fact_count() <= 3


def test_explain_leaves_are_base_links(strategy) -> None:
    line = [L(f"n{i}", f"n{i + 1}", 1) for i in range(5)]
    s = strategy.materialize(REACH, line)
    tree = strategy.explain(s, Fact("reachable", ("n0", "n5")))
    assert tree is not None and tree.depth() >= 5
    assert {f.relation for f in tree.leaves()} == {"link"}
    assert strategy.explain(s, Fact("reachable", ("n5", "n0"))) is None
