"""bench/overdeletion.py's simulation of ranks as a total order: what docs/engine.md quotes of
it ("would spare a median ...") rests on its counts, so they are held to networkx here."""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netrules.facts import Fact

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "overdeletion.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_overdeletion", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_overdeletion"] = mod
    spec.loader.exec_module(mod)
    yield mod
    del sys.modules["bench_overdeletion"]


def _links(edges: list[tuple[int, int]]) -> list[Fact]:
    return [Fact("link", (f"n{a}", f"n{b}", 1)) for a, b in edges]


@settings(max_examples=60, deadline=None)
@given(st.integers(3, 9), st.data())
def test_the_simulation_kills_every_lost_pair_and_only_pairs_that_held(bench, n: int,
                                                                      data) -> None:
    """Every pair that stops holding is among the facts the simulation kills (a rescue never
    keeps a fact with no path left), every fact it kills held before, and its count of lost
    pairs is networkx's."""
    edges = data.draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1))
                               .filter(lambda e: e[0] != e[1]), min_size=1, max_size=3 * n,
                               unique=True))
    facts = _links(edges)
    down = [("-", f) for f in random.Random(n).sample(facts, max(1, len(facts) // 3))]
    killed, lost = bench.simulate(facts, down)
    old, new = nx.DiGraph(), nx.DiGraph()
    old.add_edges_from((f.args[0], f.args[1]) for f in facts)
    gone = {f for _, f in down}
    new.add_nodes_from(old)
    new.add_edges_from((f.args[0], f.args[1]) for f in facts if f not in gone)
    before = {(s, d) for s in old for d in nx.descendants(old, s) if s != d}
    after = {(s, d) for s in new for d in nx.descendants(new, s) if s != d}
    assert lost == len(before - after)
    assert len(before - after) <= killed <= len(before)


def test_a_ring_loses_no_pair_and_kills_what_its_order_cannot_hold(bench) -> None:
    """A six-node ring, both ways, link n0-n1 down: no pair stops holding. Toward n1 the
    breadth-first order is n0, n2, n5, n3, n4: n0 has no live link to an earlier node, n5 only
    to n0 (killed), n4 to n3 (held); so two facts are killed, two toward n0 likewise, and
    toward n2 and n5 one each (n0, n1: their one earlier neighbour is across the cut); toward
    n3 and n4 none. Six."""
    ring = [(i, (i + 1) % 6) for i in range(6)] + [((i + 1) % 6, i) for i in range(6)]
    facts = _links(ring)
    down = [("-", f) for f in facts if {f.args[0], f.args[1]} == {"n0", "n1"}]
    assert bench.simulate(facts, down) == (6, 0)
