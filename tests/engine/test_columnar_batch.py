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


def test_base_facts_encoded_once_give_the_same_views() -> None:
    facts = [link("a", "b"), link("b", "c"), link("c", "a", 2)]
    state = columnar.materialize(PLAN, facts)
    want = state.views()
    for _ in range(3):  # the second time round, every fact's ids come from the memo
        columnar.apply(state, [("-", f) for f in facts])
        assert not state.views().get("reachable")
        columnar.apply(state, [("+", f) for f in facts])
        assert state.views() == want
