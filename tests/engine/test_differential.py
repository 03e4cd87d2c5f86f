"""Every maintenance strategy against the reference evaluator on random programs, topologies
and update streams (flaps, deletions before insertions, duplicates): after every batch the
maintained views equal from-scratch evaluation; batched equals one-at-a-time; shuffled
delivery equals ordered. Cites shared/notes/psn-derivation-sets.md §7 tests 14, 17, 18 and
counting-dred-fbf.md §11.2.
"""

from __future__ import annotations

import random
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from netrules import programs
from netrules.facts import Fact
from netrules.lang import parse_program
from netrules.plan import plan_program
from tests.meaning import evaluate_program

# Rule templates over base e, f and derived p < q < r, s: negation and aggregation only look
# at lower relations, so every subset is stratifiable.
TEMPLATES = [
    "p(X,Y) :- e(X,Y).",
    "p(X,Y) :- e(X,Z), p(Z,Y).",
    "p(X,Y) :- p(X,Z), p(Z,Y).",
    "p(X,Y) :- p(X,Z), e(Z,Y).",
    "p(X,X) :- f(X,Y).",
    "q(X,Y) :- p(X,Y), f(Y,X).",
    "q(X,Y) :- p(Y,X), not f(X,Y).",
    "q(X,Y) :- e(X,Y), q(Y,X).",
    "q(X,Y) :- q(X,Z), p(Z,Y).",
    "q(X,Y) :- f(X,Y), not p(X,X).",
    "r(X,a_COUNT<*>) :- p(X,Y).",
    "r(X,a_MIN<Y>) :- q(X,Y).",
    "s(X,Y) :- q(X,Z), q(Z,Y), not p(Y,X).",
    "s(X,Y) :- e(X,Y), not q(X,Y), not f(Y,Y).",
]
NODES = [0, 1, 2, 3]


def base_fact(rel: str, a: int, b: int) -> Fact:
    return Fact(rel, (a, b), None)


@st.composite
def random_program(draw: st.DrawFn) -> str:
    chosen = draw(st.lists(st.sampled_from(TEMPLATES), min_size=1, max_size=6, unique=True))
    if not any(t.startswith("p(") for t in chosen):
        chosen.insert(0, TEMPLATES[0])
    return "\n".join(chosen)


@st.composite
def update_stream(draw: st.DrawFn, rels: tuple[str, ...] = ("e", "f"), nodes=NODES):
    """Initial facts and batches of signed updates; deletions may precede insertions."""
    facts = st.builds(base_fact, st.sampled_from(rels), st.sampled_from(nodes),
                      st.sampled_from(nodes))
    initial = draw(st.lists(facts, max_size=8, unique=True))
    batches = []
    present = Counter({f: 1 for f in initial})
    for _ in range(draw(st.integers(1, 5))):
        batch = []
        for _ in range(draw(st.integers(1, 4))):
            f = draw(facts)
            if draw(st.booleans()) and present[f] > 0:
                batch.append(("-", f))
                present[f] -= 1
            elif draw(st.integers(0, 9)) == 0:
                batch.append(("-", f))  # an early deletion: waits for its insertion
                present[f] -= 1
            else:
                batch.append(("+", f))
                present[f] += 1
        if draw(st.booleans()):  # a flap: down and up again in the same batch
            f = draw(facts)
            if present[f] > 0:
                batch += [("-", f), ("+", f)]
        batches.append(batch)
    return initial, batches


def expected_views(plan, balance: Counter) -> dict:
    return evaluate_program(plan, {f for f, n in balance.items() if n > 0})


def assert_views_equal(actual: dict, expected: dict, relations, context: str) -> None:
    for rel in sorted(relations):
        a = {f.args for f in actual.get(rel, [])}
        e = {f.args for f in expected.get(rel, [])}
        if a != e:
            raise AssertionError(f"{context}: {rel} differs\n  - missing: {sorted(e - a)}\n"
                                 f"  + extra:   {sorted(a - e)}")


def check_stream(strategy, plan, initial, batches, seed: int) -> None:
    relations = plan.derived | plan.base
    state = strategy.materialize(plan, initial)
    balance = Counter({f: 1 for f in initial})
    assert_views_equal(state.views(), expected_views(plan, balance), relations, "initial")
    for i, batch in enumerate(batches):
        before = {r: {f.args for f in fs} for r, fs in state.views().items()}
        delta = strategy.apply(state, batch)
        for sign, f in batch:
            balance[f] += 1 if sign == "+" else -1
        after = state.views()
        assert_views_equal(after, expected_views(plan, balance), relations, f"batch {i}")
        for rel in relations:  # the delta is the net change, exactly
            now = {f.args for f in after.get(rel, [])}
            assert delta.added.get(rel, set()) == now - before.get(rel, set()), rel
            assert delta.removed.get(rel, set()) == before.get(rel, set()) - now, rel
    final = state.views()

    one = strategy.materialize(plan, initial)  # one update per batch
    for batch in batches:
        for u in batch:
            strategy.apply(one, [u])
    assert_views_equal(one.views(), final, relations, "one-at-a-time")

    rng = random.Random(seed)  # shuffled delivery, shuffled internal order
    shuffled = strategy.materialize(plan, initial, rng=rng)
    for batch in batches:
        b = list(batch)
        rng.shuffle(b)
        strategy.apply(shuffled, b)
    assert_views_equal(shuffled.views(), final, relations, "shuffled")


@settings(max_examples=350)
@given(random_program(), update_stream(), st.integers(0, 2**16))
def test_random_programs(strategy, text: str, stream, seed: int) -> None:
    plan = plan_program(parse_program(text))
    check_stream(strategy, plan, *stream, seed)


@st.composite
def link_stream(draw: st.DrawFn, n_nodes: int = 5, bidirectional: bool | None = None):
    nodes = [f"n{i}" for i in range(draw(st.integers(2, n_nodes)))]
    bidi = draw(st.booleans()) if bidirectional is None else bidirectional
    cost = st.integers(1, 3) if draw(st.booleans()) else st.just(1)

    def link_pair(a, b, c):
        return [Fact("link", (a, b, c))] + ([Fact("link", (b, a, c))] if bidi else [])

    edges = st.builds(link_pair, st.sampled_from(nodes), st.sampled_from(nodes), cost)
    initial = sorted({f for pair in draw(st.lists(edges, max_size=7)) for f in pair},
                     key=Fact.key)
    present = set(initial)
    batches = []
    for _ in range(draw(st.integers(1, 4))):
        batch = []
        for _ in range(draw(st.integers(1, 3))):
            if present and draw(st.booleans()):
                f = draw(st.sampled_from(sorted(present, key=Fact.key)))
                batch.append(("-", f))
                present.discard(f)
                if draw(st.integers(0, 3)) == 0:  # flap back up
                    batch.append(("+", f))
                    present.add(f)
            else:
                for f in draw(edges):
                    if f not in present:
                        batch.append(("+", f))
                        present.add(f)
        batches.append(batch)
    return initial, batches


NETWORK_PROGRAMS = ["reachability", "min_cost", "path_vector"]


@settings(max_examples=250)
@given(st.sampled_from(NETWORK_PROGRAMS), link_stream(), st.integers(0, 2**16))
def test_network_programs(strategy, name: str, stream, seed: int) -> None:
    check_stream(strategy, plan_program(programs.load(name)), *stream, seed)


def signed_stream(draw: st.DrawFn, fact: st.SearchStrategy, max_initial: int = 6):
    """Initial facts drawn from ``fact``, then 1-4 batches of 1-3 signed updates of it
    (duplicates, deletions of absent facts and flaps included)."""
    initial = draw(st.lists(fact, max_size=max_initial, unique=True))
    batches = [[(draw(st.sampled_from("+-")), draw(fact)) for _ in range(draw(st.integers(1, 3)))]
               for _ in range(draw(st.integers(1, 4)))]
    return initial, batches


@st.composite
def nexthop_stream(draw: st.DrawFn):
    nodes = list(range(draw(st.integers(2, 5))))
    hop = st.builds(lambda s, d, n: Fact("nexthop", (s, d, n)), st.sampled_from(nodes),
                    st.sampled_from(nodes[:2]), st.sampled_from(nodes))
    return signed_stream(draw, hop)


@settings(max_examples=100)
@given(nexthop_stream(), st.integers(0, 2**16))
def test_routing_loops(strategy, stream, seed: int) -> None:
    check_stream(strategy, plan_program(programs.load("routing_loop")), *stream, seed)


@settings(max_examples=100)
@given(update_stream(rels=("transfer", "connected", "monitors", "accredited"),
                     nodes=[1, 2, 3, 4, 5]), st.integers(0, 2**16))
def test_fraud_program(strategy, stream, seed: int) -> None:
    check_stream(strategy, plan_program(programs.load("fraud")), *stream, seed)
