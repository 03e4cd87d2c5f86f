"""Every maintenance strategy against the reference evaluator on random programs, topologies
and update streams (flaps, deletions before insertions, duplicates): after every batch the
maintained views equal from-scratch evaluation; batched equals one-at-a-time; shuffled
delivery equals ordered. Cites shared/notes/psn-derivation-sets.md §7 tests 14, 17, 18 and
counting-dred-fbf.md §11.2.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

import networkx as nx
from hypothesis import event, given, settings, target
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


def stamp(batches: list[list[tuple[str, Fact]]]) -> list[list[tuple]]:
    """Give every update an event time, its place in the stream (issue 21: base facts are
    last-writer-wins state, so with times any split and order of a batch agree)."""
    t = iter(range(1, 10**6))
    return [[(s, f, float(next(t)), 0) for s, f in batch] for batch in batches]


class Present:
    """The oracle for base facts: per fact (per declared key), the latest update wins."""

    def __init__(self, plan, initial) -> None:
        self.keys = {r: tuple(sorted({k - 1 for k in ks} | {plan.locspec.get(r) or 0}))
                     for r, ks in plan.keys.items() if r not in plan.derived}
        self.regs: dict[tuple, tuple[str, Fact]] = {}
        self.apply([("+", f) for f in initial])

    def apply(self, batch) -> None:
        for u in sorted(batch, key=lambda u: u[2] if len(u) > 2 else 0):
            f = u[1]
            pos = self.keys.get(f.relation)
            reg = (f.relation, tuple(f.args[p] for p in pos) if pos else f.args)
            self.regs[reg] = (u[0], f)

    def facts(self) -> set[Fact]:
        return {f for s, f in self.regs.values() if s == "+"}


def base_fact(rel: str, a: int, b: int) -> Fact:
    return Fact(rel, (a, b), None)


@st.composite
def random_program(draw: st.DrawFn) -> str:
    chosen = draw(st.lists(st.sampled_from(TEMPLATES), min_size=1, max_size=6, unique=True))
    if not set(chosen) & {TEMPLATES[0], TEMPLATES[4]}:  # p grounded in a base relation,
        chosen.insert(0, TEMPLATES[0])  # or nothing is ever derived
    return "\n".join(chosen)


@st.composite
def update_stream(draw: st.DrawFn, rels: tuple[str, ...] = ("e", "f"), nodes=NODES,
                  planted: st.SearchStrategy | None = None):
    """Initial facts (``planted`` ones first: a witness that makes deep rules fire) and 1-5
    batches of signed updates. Batches may be empty; a deletion usually takes a present fact
    (so views change), sometimes an absent one (an early deletion, waiting for its
    insertion); flaps go down and up in one batch."""
    facts = st.builds(base_fact, st.sampled_from(rels), st.sampled_from(nodes),
                      st.sampled_from(nodes))
    initial = list(dict.fromkeys([*(draw(planted) if planted is not None else []),
                                  *draw(st.lists(facts, min_size=2, max_size=8, unique=True))]))
    batches = []
    present = Counter({f: 1 for f in initial})
    for _ in range(draw(st.integers(1, 5))):
        batch = []
        for _ in range(draw(st.sampled_from([2, 1, 3, 4, 0, 1, 2, 3]))):
            live = sorted((f for f, n in present.items() if n > 0), key=Fact.key)
            if live and draw(st.booleans()):
                f = draw(st.sampled_from(live))
                batch.append(("-", f))
                present[f] -= 1
            elif draw(st.integers(0, 9)) == 9:
                f = draw(facts)
                batch.append(("-", f))  # an early deletion: waits for its insertion
                present[f] -= 1
            else:
                f = draw(facts)
                batch.append(("+", f))
                present[f] += 1
        if draw(st.booleans()):  # a flap: down and up again in the same batch
            f = draw(facts)
            if present[f] > 0:
                batch += [("-", f), ("+", f)]
        batches.append(batch)
    return initial, stamp(batches)


def expected_views(plan, present: Present) -> dict:
    """The reference's views, which ``tests.meaning`` has checked against the oracle."""
    return evaluate_program(plan, present.facts())


def assert_views_equal(actual: dict, expected: dict, relations, context: str) -> None:
    for rel in sorted(relations):
        a = {f.args for f in actual.get(rel, [])}
        e = {f.args for f in expected.get(rel, [])}
        if a != e:
            raise AssertionError(
                f"{context}: {rel} differs from the reference and the oracle (which agree)\n"
                f"  - missing: {sorted(e - a)}\n  + extra:   {sorted(a - e)}")


@dataclass
class Seen:
    """What a stream exercised: relations ever non-empty, and whether a batch changed a
    derived view (the generators' density is measured on these)."""

    nonempty: set[str] = field(default_factory=set)
    changed: int = 0  # batches that changed a derived view

    def dense(self, *relations: str) -> bool:
        return all(r in self.nonempty for r in relations)


#: random cases checked by ``check_stream`` in this session (printed at the end of the run)
CASES = [0]


def check_stream(strategy, plan, initial, batches, seed: int) -> Seen:
    """Batched, one-update-at-a-time and shuffled runs side by side, each compared with the
    reference (and so the oracle) after every batch; the batched run's delta must be the net
    change exactly."""
    CASES[0] += 1
    relations = plan.derived | plan.base
    seen = Seen()
    rng = random.Random(seed)  # shuffled delivery, shuffled internal order
    state = strategy.materialize(plan, initial)
    one = strategy.materialize(plan, initial)
    shuffled = strategy.materialize(plan, initial, rng=rng)
    present = Present(plan, initial)
    want = expected_views(plan, present)
    for run, name in ((state, "initial"), (one, "initial, one-at-a-time"),
                      (shuffled, "initial, shuffled")):
        assert_views_equal(run.views(), want, relations, name)
    seen.nonempty |= set(want)
    for i, batch in enumerate(batches):
        before = {r: {f.args for f in fs} for r, fs in state.views().items()}
        delta = strategy.apply(state, batch)
        for u in batch:
            strategy.apply(one, [u])
        b = list(batch)
        rng.shuffle(b)
        strategy.apply(shuffled, b)
        present.apply(batch)
        want = expected_views(plan, present)
        after = state.views()
        assert_views_equal(after, want, relations, f"batch {i}")
        assert_views_equal(one.views(), want, relations, f"batch {i}, one-at-a-time")
        assert_views_equal(shuffled.views(), want, relations, f"batch {i}, shuffled")
        for rel in relations:  # the delta is the net change, exactly
            now = {f.args for f in after.get(rel, [])}
            assert delta.added.get(rel, set()) == now - before.get(rel, set()), rel
            assert delta.removed.get(rel, set()) == before.get(rel, set()) - now, rel
        seen.changed += any(delta.added.get(r) or delta.removed.get(r) for r in plan.derived)
        seen.nonempty |= set(want)
    return seen


def assert_dense(tally: Counter, floor: float, what: str) -> None:
    """Over a run, at least ``floor`` of the examples exercised ``what``: a generator that
    stops making the rules fire fails here instead of passing on empty views."""
    share = tally[True] / max(1, tally[True] + tally[False])
    print(f"density: {tally[True]}/{tally[True] + tally[False]} examples had {what}")  # -s
    assert share >= floor, f"only {share:.0%} of the examples had {what} (floor {floor:.0%})"


@settings(max_examples=600)
@given(random_program(), update_stream(), st.integers(0, 2**16))
def _random_programs(strategy, tally, text: str, stream, seed: int) -> None:
    plan = plan_program(parse_program(text))
    changed = check_stream(strategy, plan, *stream, seed).changed
    target(changed, label="batches that changed a view")
    event("a batch changed a view" if changed else "no batch changed a view")
    tally[changed > 0] += 1


def test_random_programs(strategy) -> None:
    tally: Counter = Counter()
    _random_programs(strategy, tally)
    assert_dense(tally, 0.6, "a batch that changed a derived view")


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
        for _ in range(draw(st.integers(0, 3))):
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
    return initial, stamp(batches)


@st.composite
def cyclic_link_stream(draw: st.DrawFn, n_nodes: int = 5):
    """``link_stream`` over a directed ring of 3-5 links laid first, one of which a batch
    deletes: every stream cuts a cycle, the deletion that rederivation-free strategies get
    wrong (the ring's facts support each other)."""
    initial, batches = draw(link_stream(n_nodes=n_nodes))
    k = draw(st.integers(3, n_nodes))
    cost = draw(st.integers(1, 3))
    ring = [Fact("link", (f"n{i}", f"n{(i + 1) % k}", cost)) for i in range(k)]
    initial = sorted(set(initial) | set(ring), key=Fact.key)
    cut = draw(st.sampled_from(ring))
    at = draw(st.integers(0, len(batches) - 1))
    batches = [[u[:2] for u in b] for b in batches]  # restamped below, the cut included
    if not any(u[1] == cut for b in batches[:at + 1] for u in b):
        batches[at].insert(0, ("-", cut))
    return initial, stamp(batches)


def cycles_cut(before: set[Fact], after: set[Fact], relation: str = "link",
               ends: tuple[int, int] = (0, 1)) -> int:
    """Edges of ``relation`` (arguments ``ends``) that a batch removed while they lay on a
    cycle: the deletions whose consequences support themselves around the cycle."""
    u, v = ends
    g = nx.DiGraph((f.args[u], f.args[v]) for f in before if f.relation == relation)
    return sum(1 for f in before - after
               if f.relation == relation and nx.has_path(g, f.args[v], f.args[u]))


NETWORK_PROGRAMS = ["reachability", "min_cost", "path_vector"]


@settings(max_examples=400)
@given(st.sampled_from(NETWORK_PROGRAMS), link_stream(), st.integers(0, 2**16))
def test_network_programs(strategy, name: str, stream, seed: int) -> None:
    check_stream(strategy, plan_program(programs.load(name)), *stream, seed)


def signed_stream(draw: st.DrawFn, fact: st.SearchStrategy, max_initial: int = 6):
    """Initial facts drawn from ``fact``, then 1-4 batches of 0-3 signed updates of it
    (duplicates, deletions of absent facts and flaps included)."""
    initial = draw(st.lists(fact, max_size=max_initial, unique=True))
    batches = [[(draw(st.sampled_from("+-")), draw(fact)) for _ in range(draw(st.integers(0, 3)))]
               for _ in range(draw(st.integers(1, 4)))]
    return initial, stamp(batches)


@st.composite
def nexthop_stream(draw: st.DrawFn):
    nodes = list(range(draw(st.integers(2, 5))))
    hop = st.builds(lambda s, d, n: Fact("nexthop", (s, d, n)), st.sampled_from(nodes),
                    st.sampled_from(nodes[:2]), st.sampled_from(nodes))
    return signed_stream(draw, hop)


@settings(max_examples=150)
@given(nexthop_stream(), st.integers(0, 2**16))
def test_routing_loops(strategy, stream, seed: int) -> None:
    check_stream(strategy, plan_program(programs.load("routing_loop")), *stream, seed)


@st.composite
def fraud_witness(draw: st.DrawFn, nodes=(1, 2, 3, 4, 5)) -> list[Fact]:
    """Facts under which paper 002's deepest rules fire: Z monitors and accredits Z1 and
    monitors Z2, so cmonitored(Z1,Z2); X -connected-> Z1 ... Z2 -connected-> Y secures the
    transfer X -> Y that Y accredits, so stransfer(X,Y); a transfer back makes a suspect
    cycle, and Z monitoring both ends makes it detectable. Nodes may coincide."""
    x, y, z1, z2, z = (draw(st.sampled_from(nodes)) for _ in range(5))
    rows = [("connected", x, z1), ("connected", z1, z2), ("connected", z2, y),
            ("monitors", z, z1), ("monitors", z, z2), ("accredited", z, z1),
            ("accredited", y, x), ("transfer", x, y)]
    if draw(st.booleans()):
        rows += [("transfer", y, x), ("monitors", z, x), ("monitors", z, y)]
    return [base_fact(r, a, b) for r, a, b in rows]


FRAUD_RELS = ("transfer", "connected", "monitors", "accredited")


@settings(max_examples=100)
@given(update_stream(rels=FRAUD_RELS, nodes=[1, 2, 3, 4, 5], planted=fraud_witness()),
       st.integers(0, 2**16))
def _fraud_program(strategy, tally, stream, seed: int) -> None:
    seen = check_stream(strategy, plan_program(programs.load("fraud")), *stream, seed)
    dense = seen.dense("stransfer", "cmonitored")
    event("stransfer and cmonitored non-empty" if dense else "a deep relation stayed empty")
    tally[dense] += 1


def test_fraud_program(strategy) -> None:
    tally: Counter = Counter()
    _fraud_program(strategy, tally)
    assert_dense(tally, 0.6, "stransfer and cmonitored non-empty")
