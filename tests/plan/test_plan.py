"""Stratification, localization and delta rules."""

from __future__ import annotations

import pytest

from netrules import programs
from netrules.errors import PlanError
from netrules.lang import ast, parse_program
from netrules.plan import delta_rules, plan_program


def test_unstratifiable_negation_names_the_cycle_and_points_at_literals() -> None:
    text = "p(@X) :- q(@X), not r(@X).\nr(@X) :- q(@X), not p(@X).\n"
    with pytest.raises(PlanError) as ei:
        plan_program(parse_program(text, "neg.ndlog"))
    err = ei.value
    assert err.code == "UNSTRATIFIABLE"
    d = err.diagnostics[0]
    assert "{p, r}" in d.message and "negation" in d.message
    assert [(n[0].line, n[0].column) for n in d.notes] == [(1, 17), (2, 17)]
    assert "neg.ndlog:1:17" in err.render()


def test_recursion_through_aggregation_is_an_iterated_stratum() -> None:
    text = ("d(@S,D,a_MIN<C>) :- link(@S,D,C).\n"
            "d(@S,D,a_MIN<C>) :- link(@S,Z,C1), d(@Z,D,C2), C := C1+C2.")
    plan = plan_program(parse_program(text))
    (st,) = [s for s in plan.strata if "d" in s.relations]
    assert st.iterated and st.aggregates
    assert "iterated" in plan.describe()


def test_strata_order_and_flags() -> None:
    plan = plan_program(programs.load("path_vector"))
    order = [sorted(s.relations) for s in plan.strata]
    assert order.index(["path"]) < order.index(["bestCost"]) < order.index(["bestPath"])
    path = next(s for s in plan.strata if "path" in s.relations)
    assert path.recursive and not path.aggregates
    assert next(s for s in plan.strata if "bestCost" in s.relations).aggregates
    assert plan.base == {"link"} and plan.visible == {"path", "bestCost", "bestPath"}


def test_every_localized_body_sits_at_one_location() -> None:
    for name in programs.names():
        plan = plan_program(programs.load(name))
        for r in plan.rules:
            locs = {str(a.location_term) for a in r.atoms() if a.locspec is not None}
            assert len(locs) <= 1, (name, str(r))


def test_shipped_link_keeps_direction() -> None:
    plan = plan_program(programs.load("reachability"))
    ship = next(r for r in plan.rules if r.head.relation == "linkD")
    assert str(ship) == "r2_ship linkD(@Z,S) :- link(@S,Z,C)."


def test_not_link_restricted_rule_is_rejected() -> None:
    text = "far(@S,D) :- link(@S,Z,C), reachable(@W,D).\nreachable(@S,D) :- link(@S,D,C)."
    with pytest.raises(PlanError) as ei:
        plan_program(parse_program(text, "far.ndlog"))
    assert ei.value.code == "NOT_LOCALIZABLE"
    assert ei.value.diagnostics[0].loc.line == 1


def test_delta_rules_split_by_position() -> None:
    rule = parse_program("hop(@X,Y) :- link(@X,Z), link(@Z,Y).").rules[0]
    ds = delta_rules(rule)
    assert [d.views for d in ds] == [("delta", "old"), ("new", "delta")]
    assert str(ds[1]) == "Δhop(@X,Y) :- νlink(@X,Z), Δlink(@Z,Y)."


def test_unlocated_rules_are_left_alone() -> None:
    plan = plan_program(programs.load("fraud"))
    assert not plan.aux
    assert all(isinstance(r, ast.Rule) for r in plan.rules)


@pytest.mark.parametrize("func", ["COUNT<*>", "SUM<C>"])
def test_a_shipped_count_keeps_every_body_variable(func: str) -> None:
    """COUNT and SUM count distinct bindings of the whole body: shipping ``link`` to ``@D``
    without its cost would count two parallel links as one (the oracle counts two)."""
    from netrules.engine.engine import Engine
    from netrules.facts import Fact
    from netrules.testing import oracle

    plan = plan_program(parse_program(
        f"w(@S,D,a_{func}) :- link(@S,D,C), h(@D,S,N).\nh(@S,D,N) :- link(@S,D,N)."))
    ship = next(r for r in plan.rules if r.label and r.label.endswith("_ship"))
    assert "C" in {t.name for t in ship.head.args if isinstance(t, ast.Var)}
    facts = [Fact("link", ("a", "a", 1)), Fact("link", ("a", "a", 2))]
    want = oracle.evaluate(plan, facts)["w"]
    assert want == {("a", "a", 4 if func == "COUNT<*>" else 6)}
    for strategy in ("psn", "columnar"):
        eng = Engine(plan, strategy)
        eng.apply([("+", f) for f in facts])
        assert {f.args for f in eng.view("w")} == want, strategy
