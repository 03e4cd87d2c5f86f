"""The columnar strategy's batch path: its fast validation refuses what ``check_batch``
refuses, with the same message, and base facts encoded once read back the same."""

from __future__ import annotations

import pytest

from netrules import programs
from netrules.engine.strategies import columnar
from netrules.engine.strategies.base import check_batch
from netrules.errors import EngineError
from netrules.facts import Fact
from netrules.plan import plan_program
from tests.engine.streams import fact_ranks, keyed_batches

PLAN = plan_program(programs.load("reachability"))


def link(a: str, b: str, c: int = 1) -> Fact:
    return Fact("link", (a, b, c), 0)


@pytest.mark.parametrize("bad", [
    ("*", link("a", "b")),
    ("+", Fact("reachable", ("a", "b"), 0)),
    ("+", Fact("link", ("a", "b"), 0)),
])
def test_a_bad_update_is_refused_as_check_batch_refuses_it(bad: tuple) -> None:
    batch = [("+", link("a", "b")), bad]
    with pytest.raises(EngineError) as want:
        check_batch(PLAN, batch)
    state = columnar.materialize(PLAN, [link("b", "c")])
    with pytest.raises(EngineError) as got:
        columnar.apply(state, batch)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("bad,says", [
    (("*", link("a", "b")), "sign must be '+' or '-', not '*'"),
    ((["+"], link("a", "b")), "sign must be '+' or '-', not ['+']"),
    (("+", Fact("reachable", ("a", "b"), 0)), "changes derived relation reachable"),
    (("+", Fact("link", ("a", "b"), 0)), "has 2 arguments, link takes 3"),
])
def test_check_batch_names_the_first_bad_update(bad: tuple, says: str) -> None:
    """Kinds of update are checked once a batch; a bad one is still named by its place."""
    good = [("+", link("a", "b")), ("-", link("b", "c"))]
    with pytest.raises(EngineError) as err:
        check_batch(PLAN, [*good, bad, ("*", link("c", "d"))])
    assert str(err.value).startswith("update 2: ") and says in str(err.value)
    assert check_batch(PLAN, iter(good)) == good


def test_base_facts_encoded_once_give_the_same_views() -> None:
    facts = [link("a", "b"), link("b", "c"), link("c", "a", 2)]
    state = columnar.materialize(PLAN, facts)
    want = state.views()
    for _ in range(3):  # the second time round, every fact's ids come from the memo
        columnar.apply(state, [("-", f) for f in facts])
        assert not state.views().get("reachable")
        columnar.apply(state, [("+", f) for f in facts])
        assert state.views() == want


def test_a_relation_given_two_widths_in_one_batch_is_refused_and_nothing_is_lost() -> None:
    """Base facts of a relation the program does not read reach the columns unchecked by
    arity; a batch giving one two widths is an error naming the relation, and the engine
    keeps what it held (the rows are packed flat: a ragged batch must not be misread)."""
    from netrules.engine.engine import Engine
    from netrules.lang.parse import parse_program

    plan = plan_program(parse_program("r(@X,Y) :- l(@X,Y)."))
    eng = Engine(plan, "columnar")
    eng.apply([("+", Fact("l", ("a", "b")))])
    before = eng.views()
    with pytest.raises(EngineError, match="z with different numbers of arguments"):
        eng.apply([("+", Fact("l", ("c", "d"))), ("+", Fact("z", (1, 2))),
                   ("+", Fact("z", (1, 2, 3)))])
    assert eng.views() == before
    eng.apply([("+", Fact("l", ("c", "d")))])
    assert {f.args for f in eng.views()["r"]} == {("a", "b"), ("c", "d")}


_EVENTS_AFTER_WARM = """
import sys
import numba
from netrules import programs
from netrules.engine.columnar import kernels
from netrules.engine.strategies import columnar
from netrules.plan import plan_program
from topologies import link_facts, load_topology

facts = link_facts(load_topology("fattree:4"))
state = columnar.materialize(plan_program(programs.load(sys.argv[1])), facts)

def loaded():
    return {n: len(k.signatures) for n in dir(kernels)
            if isinstance(k := getattr(kernels, n), numba.core.registry.CPUDispatcher)}

before = loaded()
pairs = {}
for f in facts:
    pairs.setdefault(tuple(sorted(f.args[:2])), []).append(f)
links = sorted(pairs)
for chosen in (links[:1], links[3:5], links[::2]):  # one link, two, half: derived afresh
    batch = [f for lk in chosen for f in pairs[lk]]
    columnar.apply(state, [("-", f) for f in batch])
    columnar.apply(state, [("+", f) for f in batch])
print({n: c - before.get(n, 0) for n, c in loaded().items() if c != before.get(n, 0)})
"""


@pytest.mark.parametrize("program", ["reachability", "best_routes"])
def test_link_events_load_no_compiled_kernel_a_program_did_not_warm(program: str) -> None:
    """Every kernel a link event calls is loaded when the program is made (``kernels.warm``
    or the load): a first link down that loaded its own paid 18-20 ms once per process.
    A kernel's signatures only grow, so none may be added by the events; in a fresh
    interpreter, since other tests of this process load kernels too."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", _EVENTS_AFTER_WARM, program], cwd=root,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "{}"


# -- strata whose facts have one derivation each ----------------------------------------

ONE_DERIVATION = {
    # a localised copy: the head carries every body variable, so it fixes the body fact
    "copy": ("c(@D,S,C) :- link(@S,D,C).", "1,2,3", True),
    # a projection: many links give one head; a link down must not take the head with it
    "projection": ("c(@S) :- link(@S,D,C).", "1,2,3", False),
    # an anonymous body variable: the head does not fix the link's cost
    "anonymous": ("c(@S,D) :- link(@S,D,_).", "1,2,3", False),
    # ... unless the link's key does: the ledger holds one link a (source, destination)
    "keyed": ("c(@D,S) :- link(@S,D,C).", "1,2", True),
    # a key the head does not carry fixes nothing
    "keyed projection": ("c(@S) :- link(@S,D,C).", "1,2", False),
    # a derived body: m(a,b) killed by a link's key replacement is rederived in the same
    # batch, and c(a,b) must be rederived with it
    "derived body": ("m(@S,D) :- link(@S,D,C).\nc(@S,D) :- m(@S,D).", "1,2", False),
    # two rules for one head: either keeps it
    "two rules": ("c(@S,D) :- link(@S,D,C).\nc(@D,S) :- link(@S,D,C).", "1,2,3", False),
}


@pytest.mark.parametrize("copy_path", [True, False], ids=["row map", "general"])
@pytest.mark.parametrize("name", sorted(ONE_DERIVATION))
def test_a_fact_of_one_derivation_dies_with_it_and_no_other_does(name: str,
                                                                  copy_path: bool) -> None:
    """A stratum whose every fact has one derivation skips rederivation (``final_kill``);
    the near-misses keep it, and every view equals the oracle's after each batch. With the
    shortcut taken for a near-miss, its link-down batches lose heads that still hold. The
    copies among them (``copy``, ``keyed``) go through their row map (copies.py), or, as
    a reference, the general path."""
    import random

    from netrules.lang import parse_program
    from tests.meaning import evaluate_program

    rules, keys, final = ONE_DERIVATION[name]
    # keyed by all three arguments, two costs of one link are two facts
    text = f"materialize(link, infinity, infinity, keys({keys})).\n{rules}\n"
    plan = plan_program(parse_program(text))
    state = columnar.materialize(plan, [])
    prog = state.extra["program"]
    prog.copy_path = copy_path
    assert any(srels == {"c"} for srels in prog.final_kill) is final
    assert (frozenset({"c"}) in prog._copies()) is (final and name != "derived body")
    rng = random.Random(7)
    nodes = "abcde"
    up: set[Fact] = set()
    for _ in range(40):
        batch = []
        for _ in range(rng.randint(1, 6)):
            f = link(rng.choice(nodes), rng.choice(nodes), rng.randint(1, 2))
            if f in up and rng.random() < 0.6:
                batch.append(("-", f))
                up.discard(f)
            elif f not in up:  # a keyed link replaces the one of its key
                if keys == "1,2":
                    up -= {g for g in up if g.args[:2] == f.args[:2]}
                batch.append(("+", f))
                up.add(f)
        columnar.apply(state, batch)
        want = evaluate_program(plan.program, sorted(up, key=Fact.key))
        assert state.views().get("c", []) == want.get("c", [])


@pytest.mark.parametrize("program", ["reachability", "loops", "routing_loop"])
def test_a_copy_stratum_by_its_row_map_keeps_what_the_general_path_keeps(program: str
                                                                         ) -> None:
    """Random link batches, costs changing under a key among them: the copy strata kept
    through their row map (copies.py) end every batch with the facts, ranks, supports and
    explanations the general path gives, and so do the strata above them."""
    plan = plan_program(programs.load(program))
    states = [columnar.materialize(plan, []) for _ in range(2)]
    states[1].extra["program"].copy_path = False
    assert states[0].extra["program"]._copies()
    for batch in keyed_batches(plan, 11, 60):
        for st in states:
            columnar.apply(st, batch)
        row_map, general = (st.extra["program"] for st in states)
        assert states[0].views() == states[1].views()
        assert row_map.supports.count == general.supports.count
        for name in row_map.plan.derived:
            ranks = [fact_ranks(prog, name) for prog in (row_map, general)]
            assert ranks[0] == ranks[1]
            for args in sorted(ranks[0])[:5]:
                assert row_map.support_of(name, args) == general.support_of(name, args)
