"""Per-view strategy overrides (issue 4: "a default chosen per batch ... overridable per
view"): ``auto,reachable=dred`` keeps PSN's supports for every other view and maintains the
named one with DRed (or FBF); the views stay exact."""

from __future__ import annotations

import random

import pytest

from netrules import programs
from netrules.engine.engine import Engine
from netrules.engine.strategies import parse_spec
from netrules.errors import EngineError
from netrules.facts import Fact
from netrules.plan import plan_program
from tests.meaning import evaluate_program


def test_parse_spec() -> None:
    assert parse_spec("auto") == ("auto", {})
    assert parse_spec("auto, bestPath=dred ,reachable=fbf") == (
        "auto", {"bestPath": "dred", "reachable": "fbf"})
    for bad, why in [("auto,reachable", "VIEW=STRATEGY"), ("auto,reachable=remat", "one of"),
                     ("dred,reachable=psn", "need psn or auto"), ("nope", "unknown strategy")]:
        with pytest.raises(EngineError, match=why):
            parse_spec(bad)


def test_unknown_view_is_named() -> None:
    plan = plan_program(programs.load("reachability"))
    with pytest.raises(EngineError, match="reachble"):
        Engine(plan, "auto,reachble=dred")


@pytest.mark.parametrize("spec", ["auto,reachable=dred", "psn,reachable=fbf",
                                  "auto,reachable=psn"])
def test_overridden_view_stays_exact(spec: str) -> None:
    plan = plan_program(programs.load("reachability"))
    rng = random.Random(4)
    nodes = [f"n{i}" for i in range(7)]
    links = {Fact("link", (a, b, 1)) for a in nodes for b in nodes
             if a != b and rng.random() < 0.3}
    engine = Engine(plan, spec)
    engine.load(sorted(links, key=Fact.key))
    overridden = spec.split(",")[1].split("=")[1] != "psn"
    # the overridden view keeps no supports; psn keeps them for the rest (linkD) regardless
    kept = {h[0] for h in engine.state.extra["supports"].of}
    assert ("reachable" not in kept) == overridden and "linkD" in kept
    present = set(links)
    for _ in range(8):
        f = rng.choice(sorted(links, key=Fact.key))
        sign = "-" if f in present else "+"
        (present.discard if sign == "-" else present.add)(f)
        engine.apply([(sign, f)])
        want = evaluate_program(plan, sorted(present, key=Fact.key))
        assert set(engine.view("reachable")) == set(want.get("reachable", []))


@pytest.mark.parametrize("spec", ["psn", "dred", "auto", "counting", "auto,p=dred"])
def test_failed_batch_loses_no_state(spec: str) -> None:
    """A batch whose new facts make a rule fail (division by zero) raises an error naming
    the rule, and leaves views and ledger as they were: the next batch is exact."""
    from netrules.errors import EvalError
    from netrules.lang import parse_program

    plan = plan_program(parse_program("p(X, Y) :- q(X), Y := 10 / X.\nr(X) :- p(X, _)."))
    engine = Engine(plan, spec)
    engine.load([Fact("q", (1,), None), Fact("q", (5,), None)])
    before, present = engine.views(), engine.state.ledger.present()
    with pytest.raises(EvalError, match=r"<program>:1:1: division by zero"):
        engine.apply([("-", Fact("q", (5,), None)), ("+", Fact("q", (0,), None))])
    assert engine.views() == before
    assert engine.state.ledger.present() == present
    assert engine.pending_deletions() == {}
    engine.apply([("-", Fact("q", (1,), None)), ("+", Fact("q", (2,), None))])
    want = evaluate_program(plan, [Fact("q", (5,), None), Fact("q", (2,), None)])
    assert {r: set(v) for r, v in engine.views().items() if v} == \
        {r: set(v) for r, v in want.items() if v}
