"""Recursive Counting (paper 003 §5) on the paper's own examples, with exact traces and instance
counts (shared/notes/counting-dred-fbf.md §2, §3, §12 TC-1/3/4/5/9 and §14 AT-01..05, 10, 12,
15), plus the trace checked against an independent SEMINAIVECOUNTING after every batch."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netrules import programs
from netrules.engine.firing import body_facts
from netrules.engine.reference import Database, evaluate_stratum, head_fact, solve_body
from netrules.engine.strategies import counting
from netrules.facts import Fact
from netrules.lang import parse_program
from netrules.plan import plan_program
from tests.engine.test_differential import Present, random_program, update_stream


@pytest.fixture(autouse=True)
def _non_repetition_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(counting, "DEBUG", True)


def F(rel: str, *args) -> Fact:  # noqa: N802
    return Fact(rel, tuple(args), None)


def plan_of(text: str):
    return plan_program(parse_program(text), localized=False)


def stratum_of(plan, relation: str) -> int:
    return next(s.index for s in plan.strata if relation in s.relations)


def levels(state, relation: str) -> list[dict[tuple, int]]:
    """The trace of ``relation``'s stratum as [{args: count}] per iteration."""
    return [{row: n for (rel, row), n in level.items() if rel == relation}
            for level in counting.trace_of(state, stratum_of(state.plan, relation))]


def instances(state) -> int:
    return sum(state.extra["instances"].values())


def rows(state, rel: str) -> set[tuple]:
    return {f.args for f in state.views().get(rel, [])}


# --- Example 9 / Example 5 (TC-5, AT-04): the symmetric rule ---------------------------------

SYM = plan_of("r(X,Y) :- e(X,Y).\nr(Y,X) :- r(X,Y).")


def test_example_9_trace_and_delete() -> None:
    s = counting.materialize(SYM, [F("e", "a", "b")])
    assert levels(s, "r") == [{("a", "b"): 1}, {("b", "a"): 1}, {("a", "b"): 1}]
    assert s.stored_records() == 3
    delta = counting.apply(s, [("-", F("e", "a", "b"))])
    assert not any(s.views().values())
    assert delta.removed["r"] == {("a", "b"), ("b", "a")}
    assert levels(s, "r") == [] and s.stored_records() == 0
    assert s.extra["instances"] == {"undone": 3, "applied": 0}


def _single_counter_mutant(edges: set[tuple]) -> tuple[Counter, set[tuple]]:
    """Nicolas & Yazdanian: seminaive with ONE count per fact, R(x,y) -> R(y,x), explicit R."""
    count: Counter = Counter()
    delta = set(edges)
    for e in edges:
        count[e] += 1
    while delta:
        new = set()
        for x, y in delta:
            count[(y, x)] += 1
            if count[(y, x)] == 1:
                new.add((y, x))
        delta = new
    return count, edges


def test_example_5_wrong_answer_does_not_happen() -> None:
    # the known-bad mutant: R(a,b) gets count 2 and survives its own deletion
    count, _ = _single_counter_mutant({("a", "b")})
    assert count[("a", "b")] == 2 and count[("b", "a")] == 1
    count[("a", "b")] -= 1  # delete the explicit R(a,b): still > 0, so nothing propagates
    assert count[("a", "b")] == 1  # the wrong answer: R(a,b) supports itself via R(b,a)
    # counting with the trace: both go
    s = counting.materialize(SYM, [F("e", "a", "b")])
    counting.apply(s, [("-", F("e", "a", "b"))])
    assert rows(s, "r") == set()
    # and the round trip restores the trace exactly (AT-15 d)
    counting.apply(s, [("+", F("e", "a", "b"))])
    assert levels(s, "r") == [{("a", "b"): 1}, {("b", "a"): 1}, {("a", "b"): 1}]


# --- Examples 3 and 4 (TC-3, TC-4, AT-05): non-recursive counting -----------------------------

TWO = plan_of("s(X,Z) :- r(X,Y), r(Y,Z).")


def test_example_3_counts_two_one_zero() -> None:
    s = counting.materialize(TWO, [F("r", *e) for e in [("a", "b"), ("b", "d"), ("a", "c"),
                                                          ("c", "d")]])
    assert levels(s, "s") == [{("a", "d"): 2}]
    counting.apply(s, [("-", F("r", "a", "b"))])
    assert levels(s, "s") == [{("a", "d"): 1}] and rows(s, "s") == {("a", "d")}
    assert instances(s) == 1
    counting.apply(s, [("-", F("r", "a", "c"))])
    assert levels(s, "s") == [] and rows(s, "s") == set()


def test_example_4_mixed_update_fires_nothing() -> None:
    s = counting.materialize(TWO, [F("r", "b", "c")])
    delta = counting.apply(s, [("+", F("r", "a", "b")), ("-", F("r", "b", "c"))])
    assert s.extra["instances"] == {"undone": 0, "applied": 0}  # Gupta et al. would fire 2
    assert rows(s, "s") == set() and "s" not in delta.added and "s" not in delta.removed
    assert rows(s, "r") == {("a", "b")}


# --- The running example (§2, TC-1, AT-02, AT-03) ---------------------------------------------
# The engine takes updates on base relations only, so the paper's explicit T and B facts come
# in through copy rules t_e -> t and b_e -> b (the note's Example 13 renaming); the copies never
# change in the update, so the instance counts are the paper's.

RUNNING = plan_of("""
t(X,Y) :- r(X,Y), not a(X).
t(X,Y) :- s(X,Y), a(X).
t(X,Y) :- t_e(X,Y).
b(Y) :- t(X,Y), b(X).
b(X) :- b_e(X).
""")
RUNNING_E = [F("r", "b", "e"), F("s", "b", "f"), F("b_e", "a")] + [
    F("t_e", x, y) for x, y in [("a", "b"), ("b", "c"), ("c", "d"), ("d", "c"), ("e", "c"),
                                ("f", "g"), ("g", "c")]]


def test_running_example_traces_and_seven_instances() -> None:
    s = counting.materialize(RUNNING, RUNNING_E)
    assert rows(s, "t") == {("a", "b"), ("b", "c"), ("c", "d"), ("d", "c"), ("e", "c"),
                            ("f", "g"), ("g", "c"), ("b", "e")}
    assert levels(s, "b") == [{("a",): 1}, {("b",): 1}, {("c",): 1, ("e",): 1},
                              {("c",): 1, ("d",): 1}, {("c",): 1}]
    assert len(levels(s, "t")) == 1 and set(levels(s, "t")[0]) == rows(s, "t")  # non-recursive

    delta = counting.apply(s, [("+", F("a", "b"))])
    assert s.extra["instances"] == {"undone": 3, "applied": 4}  # optimal: (15)-(17), (11)-(14)
    assert levels(s, "b") == [{("a",): 1}, {("b",): 1}, {("c",): 1, ("f",): 1},
                              {("d",): 1, ("g",): 1}, {("c",): 2}]
    assert {r: v for r, v in delta.added.items() if v} == {
        "a": {("b",)}, "t": {("b", "f")}, "b": {("f",), ("g",)}}
    assert {r: v for r, v in delta.removed.items() if v} == {"t": {("b", "e")}, "b": {("e",)}}
    assert rows(s, "b") == {("a",), ("b",), ("c",), ("d",), ("f",), ("g",)}

    counting.apply(s, [("-", F("a", "b"))])  # and back: the old trace again
    assert levels(s, "b") == [{("a",): 1}, {("b",): 1}, {("c",): 1, ("e",): 1},
                              {("c",): 1, ("d",): 1}, {("c",): 1}]


# --- TC-9 insertion (AT-10, counting part): counters move with hop distances ------------------

CHAIN = plan_of("b(Y) :- t(X,Y), b(X).\nb(X) :- b_e(X).")


@pytest.mark.parametrize("i", [5, 50, 95])
def test_chain_insertion_moves_two_counters_per_later_fact(i: int) -> None:
    n = 100
    facts = [F("b_e", "a1")] + [F("t", f"a{k}", f"a{k + 1}") for k in range(1, n)]
    s = counting.materialize(CHAIN, facts)
    delta = counting.apply(s, [("+", F("b_e", f"a{i}"))])
    assert not delta.added.get("b") and not delta.removed.get("b")  # I' = I
    # the paper's 2(n-i) (each later B moves one iteration down: undone + applied), plus the
    # copy rule's one new instance b_e(a_i) -> b(a_i)
    assert s.extra["instances"] == {"undone": n - i, "applied": n - i + 1}
    assert levels(s, "b")[0] == {("a1",): 1, (f"a{i}",): 1}


# --- Early exit (line 31): a change that dies out stops the replay -----------------------------

def test_runs_converge_and_stop_early() -> None:
    plan = plan_of("b(Y) :- t(X,Y), b(X).\nb(X) :- b_e(X).\nb(X) :- c(X).")
    facts = [F("b_e", "a0"), F("b_e", "a1")] + [F("t", f"a{k}", f"a{k + 1}")
                                                 for k in range(60)]
    s = counting.materialize(plan, facts)
    delta = counting.apply(s, [("+", F("c", "a1"))])
    # b(a1) gains one counter in N1; nothing else moves, and the replay stops at iteration 1
    assert s.extra["instances"] == {"undone": 0, "applied": 1}
    assert delta.stats.rounds == 1
    assert levels(s, "b")[0][("a1",)] == 2


# --- Stored state ------------------------------------------------------------------------------

def test_records_are_the_trace_counters_and_aggregate_strata_keep_none() -> None:
    plan = plan_program(programs.load("min_cost"))
    ring = [F("link", f"n{k}", f"n{(k + 1) % 5}", 1) for k in range(5)]
    s = counting.materialize(plan, ring)
    total = sum(len(level) for st_ in plan.strata for level in counting.trace_of(s, st_.index))
    assert s.stored_records() == total > 0
    for st_ in plan.strata:
        if st_.aggregates or st_.iterated:
            assert counting.trace_of(s, st_.index) == []


# --- AT-01: the maintained trace equals an independent SEMINAIVECOUNTING -----------------------

def seminaive_counting(plan, facts) -> dict[int, list[dict]]:
    """Algorithm 2 written plainly: per stratum, N_1 from the non-recursive rules, then
    N_{i+1} = recursive instances over I with some positive atom in Δ_i (aggregate and
    iterated strata evaluated by the reference and left without a trace)."""
    db = Database(facts)
    out: dict[int, list[dict]] = {}
    for stratum in plan.strata:
        if stratum.aggregates or stratum.iterated:
            evaluate_stratum(stratum, db)
            continue
        rels = stratum.relations
        rec = [r for r in stratum.rules if any(a.relation in rels for a in r.atoms())]
        n: Counter = Counter()
        for rule in stratum.rules:
            if rule not in rec:
                for b in solve_body(rule, db):
                    n[(rule.head.relation, head_fact(rule, b))] += 1
        trace = []
        while n:
            trace.append(dict(n))
            delta = {f for f in n if f not in db}
            if not delta:
                break
            for f in delta:
                db.add(*f)
            n = Counter()
            for rule in rec:
                for b in solve_body(rule, db):
                    if any(x in delta for x in body_facts(rule, b)):
                        n[(rule.head.relation, head_fact(rule, b))] += 1
        out[stratum.index] = trace
    return out


def assert_trace(state, facts: set) -> None:
    want = seminaive_counting(state.plan, sorted(facts, key=lambda f: f.key()))
    for index, trace in want.items():
        assert counting.trace_of(state, index) == trace, f"stratum {index}"
    assert state.stored_records() == sum(len(level) for t in want.values() for level in t)


# recursion with anonymous negation and a two-atom recursive body, on top of the shared ones
EXTRA = [
    "t(X) :- f(X,X).",
    "t(X) :- e(X,Y), t(Y), not f(Y,_).",
    "t(X) :- t(Y), p(Y,X), t(X), not q(X,_).",
]


@settings(max_examples=150)
@given(random_program(), st.lists(st.sampled_from(EXTRA), max_size=3, unique=True),
       update_stream())
def test_trace_equals_recomputed_trace(text: str, extra: list[str], stream) -> None:
    if extra and EXTRA[0] not in extra:
        extra = [EXTRA[0], *extra]
    plan = plan_of("\n".join([text, *extra]))
    initial, batches = stream
    s = counting.materialize(plan, initial)
    present = Present(plan, initial)
    assert_trace(s, present.facts())
    for batch in batches:
        counting.apply(s, batch)
        present.apply(batch)
        assert_trace(s, present.facts())


# --- AT-12: on non-recursive programs counting considers exactly inst[I] Δ inst[I'] ------------

NONREC = [
    "p(X,Y) :- e(X,Y).",
    "p(X,X) :- f(X,Y).",
    "q(X,Y) :- p(X,Y), f(Y,X).",
    "q(X,Y) :- p(Y,X), not f(X,Y).",
    "q(X,Y) :- f(X,Y), not p(X,X).",
    "s(X,Y) :- q(X,Z), q(Z,Y), not p(Y,X).",
    "s(X,Y) :- e(X,Y), not q(X,Y), not f(Y,Y).",
    "u(X) :- e(X,Y), not f(X,_), not p(Y,_).",
]


def all_instances(plan, facts) -> set:
    db = Database(facts)
    for stratum in plan.strata:
        evaluate_stratum(stratum, db)
    return {(k, body_facts(rule, b)) for k, rule in enumerate(plan.rules)
            for b in solve_body(rule, db)}


@settings(max_examples=150)
@given(st.lists(st.sampled_from(NONREC), min_size=1, max_size=5, unique=True), update_stream())
def test_non_recursive_counting_is_optimal(chosen: list[str], stream) -> None:
    plan = plan_of("\n".join(chosen))
    initial, batches = stream
    s = counting.materialize(plan, initial)
    present = Present(plan, initial)
    for batch in batches:
        before = all_instances(plan, present.facts())
        counting.apply(s, batch)
        present.apply(batch)
        after = all_instances(plan, present.facts())
        assert s.extra["instances"] == {"undone": len(before - after),
                                        "applied": len(after - before)}
        assert s.stored_records() == sum(  # one counter per derived fact
            len(rows(s, r)) for r in plan.derived)
